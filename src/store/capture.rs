//! Captured conversations (schema v15): the turns a host's hooks send,
//! stored as memories of `source = 'capture'` whose `turn` names where they
//! came from, and `capture_state`, where the next capture of each host's
//! session starts. A stretch of a transcript is stored and its offset moved
//! in one transaction: the offset never passes a turn that is not stored.

use memd_proto::{CaptureReport, CaptureState};
use rusqlite::{Connection, OptionalExtension, params};

use super::StoreError;
use super::memories;
use crate::gate::NewMemory;
use crate::store::kinds::captured;

/// The capture state of a host's session, if it has one.
///
/// # Errors
/// SQLite errors.
pub fn state(
    conn: &Connection,
    host: &str,
    session: &str,
) -> Result<Option<CaptureState>, StoreError> {
    Ok(conn
        .prepare_cached(&format!("{SELECT} WHERE host = ?1 AND session = ?2"))?
        .query_row(params![host, session], state_row)
        .optional()?)
}

const SELECT: &str = "SELECT host, session, namespace, file, path, offset, turns, bytes, \
    redactions, marked, invalid_lines, last_at, last_error FROM capture_state";

fn state_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<CaptureState> {
    let n = |i| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
    Ok(CaptureState {
        host: r.get(0)?,
        session: r.get(1)?,
        namespace: r.get(2)?,
        file: r.get(3)?,
        path: r.get(4)?,
        offset: n(5)?,
        turns: n(6)?,
        bytes: n(7)?,
        redactions: n(8)?,
        marked: n(9)?,
        invalid_lines: n(10)?,
        last_at: r.get(11)?,
        last_error: r.get(12)?,
    })
}

/// Every capture state (of `host`, of `session`), by host and session.
///
/// # Errors
/// SQLite errors.
pub fn states(
    conn: &Connection,
    host: Option<&str>,
    session: Option<&str>,
) -> Result<Vec<CaptureState>, StoreError> {
    let mut stmt = conn.prepare_cached(&format!(
        "{SELECT} WHERE (?1 IS NULL OR host = ?1) AND (?2 IS NULL OR session = ?2) \
         ORDER BY host, session"
    ))?;
    let rows = stmt
        .query_map(params![host, session], state_row)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Whether a turn with this identity is stored.
///
/// # Errors
/// SQLite errors.
pub fn has_turn(conn: &Connection, turn: &str) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM memories WHERE turn = ?1)")?
        .query_row([turn], |r| r.get(0))?)
}

/// A stretch as the gate let it through: the turns to store (each with
/// its redactions and whether it is marked) and where the stretch ends.
#[derive(Debug)]
pub struct Stretch {
    /// The host.
    pub host: String,
    /// The host's session.
    pub session: String,
    /// The namespace the turns go to.
    pub namespace: String,
    /// The transcript's identity and path.
    pub file: String,
    /// Its path.
    pub path: String,
    /// Where the stretch starts and ends.
    pub from: u64,
    /// After its last complete line.
    pub to: u64,
    /// The turns: the row, the secrets replaced, whether marked.
    pub turns: Vec<(NewMemory, usize, bool)>,
    /// Lines that were not JSON.
    pub invalid_lines: u64,
    /// What the hook could not read.
    pub error: Option<String>,
}

/// Stores a stretch (inside the writer's transaction): each turn not
/// stored before, after the last of its thread, then the offset.
/// A stretch that does not start where the state says (another hook moved
/// it) stores nothing.
///
/// # Errors
/// SQLite errors.
pub fn store(
    conn: &Connection,
    s: Stretch,
    mut wrote: impl FnMut(i64),
) -> Result<CaptureReport, StoreError> {
    let before = state(conn, &s.host, &s.session)?;
    // From the start is always right (another file, a shortened one: the
    // turns' identity keeps what is stored once); else only from the
    // offset of the same file.
    let starts_right = s.from == 0
        || before
            .as_ref()
            .is_some_and(|st| st.file == s.file && st.offset == s.from);
    if !starts_right {
        return Ok(CaptureReport {
            stored: 0,
            existing: 0,
            redactions: 0,
            marked: 0,
            offset: before.map_or(0, |b| b.offset),
            stale: true,
        });
    }
    let mut report = CaptureReport {
        stored: 0,
        existing: 0,
        redactions: 0,
        marked: 0,
        offset: s.to,
        stale: false,
    };
    let mut bytes = 0u64;
    for (new, redactions, marked) in s.turns {
        let key = new.row.turn.clone().unwrap_or_default();
        if has_turn(conn, &key)? {
            report.existing += 1;
            continue;
        }
        bytes += new.row.content.len() as u64;
        let id = memories::insert(conn, &new)?;
        wrote(id);
        report.stored += 1;
        report.redactions += redactions as u64;
        report.marked += u64::from(marked);
    }
    conn.prepare_cached(
        "INSERT INTO capture_state (host, session, namespace, file, path, offset, turns, bytes, \
         redactions, marked, invalid_lines, last_at, last_error) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) \
         ON CONFLICT (host, session) DO UPDATE SET namespace = excluded.namespace, \
         file = excluded.file, path = excluded.path, offset = excluded.offset, \
         turns = turns + excluded.turns, bytes = bytes + excluded.bytes, \
         redactions = redactions + excluded.redactions, marked = marked + excluded.marked, \
         invalid_lines = invalid_lines + excluded.invalid_lines, last_at = excluded.last_at, \
         last_error = excluded.last_error",
    )?
    .execute(params![
        s.host,
        s.session,
        s.namespace,
        s.file,
        s.path,
        s.to as i64,
        report.stored as i64,
        bytes as i64,
        report.redactions as i64,
        report.marked as i64,
        s.invalid_lines as i64,
        crate::clock::now(),
        s.error,
    ])?;
    Ok(report)
}

/// Deletes a host session's captured turns and its state (every host's
/// session of that id when `host` is empty); how many turns.
///
/// # Errors
/// SQLite errors.
pub fn forget(conn: &Connection, host: &str, session: &str) -> Result<u64, StoreError> {
    let mut hosts: Vec<String> = if host.is_empty() {
        conn.prepare_cached("SELECT host FROM capture_state WHERE session = ?1")?
            .query_map([session], |r| r.get(0))?
            .collect::<Result<_, _>>()?
    } else {
        vec![host.to_string()]
    };
    if host.is_empty() {
        // Turns whose state is gone (a database restored without it).
        let known: Vec<String> = conn
            .prepare_cached(concat!(
                "SELECT DISTINCT substr(turn, 1, instr(turn, ':') - 1) FROM memories \
                 WHERE ",
                captured!(),
                " AND turn LIKE '%:' || ?1 || ':%'"
            ))?
            .query_map([session], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        hosts.extend(known);
        hosts.sort();
        hosts.dedup();
    }
    let mut n = 0;
    for host in hosts {
        // `;` follows `:`: every turn of `host:session:`.
        n += conn
            .prepare_cached(concat!(
                "DELETE FROM memories WHERE ",
                captured!(),
                " AND turn >= ?1 AND turn < ?2"
            ))?
            .execute(params![
                format!("{host}:{session}:"),
                format!("{host}:{session};")
            ])?;
        conn.prepare_cached("DELETE FROM capture_state WHERE host = ?1 AND session = ?2")?
            .execute(params![host, session])?;
    }
    Ok(n as u64)
}

/// How long captured turns are kept (`[capture]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Turns older than this many days go.
    pub keep_days: u32,
    /// Then the oldest of a namespace whose captured text is over this many
    /// bytes (0: no cap).
    pub max_bytes: u64,
}

/// Deletes at most `chunk` captured turns past their retention: created
/// before `cutoff`, else the oldest of a namespace over `max_bytes` of
/// captured text; returns how many. A pinned turn stays.
///
/// # Errors
/// SQLite errors.
pub fn retire(
    conn: &Connection,
    cutoff: Option<&str>,
    max_bytes: u64,
    chunk: i64,
) -> Result<u64, StoreError> {
    let old = match cutoff {
        Some(cutoff) => conn
            .prepare_cached(concat!(
                "DELETE FROM memories WHERE id IN (SELECT id FROM memories \
                 WHERE ",
                captured!(),
                " AND pinned = 0 AND created_at < ?1 LIMIT ?2)"
            ))?
            .execute(params![cutoff, chunk])?,
        None => 0,
    };
    if old > 0 || max_bytes == 0 {
        return Ok(old as u64);
    }
    let over: Vec<(String, i64)> = conn
        .prepare_cached(concat!(
            "SELECT namespace, sum(length(content)) FROM memories \
             WHERE ",
            captured!(),
            " AND pinned = 0 GROUP BY namespace HAVING sum(length(content)) > ?1"
        ))?
        .query_map([max_bytes as i64], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<_, _>>()?;
    let mut deleted = 0u64;
    for (namespace, bytes) in over {
        let mut excess = bytes - max_bytes as i64;
        let oldest: Vec<(i64, i64)> = conn
            .prepare_cached(concat!(
                "SELECT id, length(content) FROM memories WHERE ",
                captured!(),
                " \
                 AND pinned = 0 AND namespace = ?1 ORDER BY created_at, id LIMIT ?2"
            ))?
            .query_map(params![namespace, chunk], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        for (id, len) in oldest {
            if excess <= 0 {
                break;
            }
            conn.prepare_cached("DELETE FROM memories WHERE id = ?1")?
                .execute([id])?;
            excess -= len;
            deleted += 1;
        }
    }
    Ok(deleted)
}

/// What `status` shows of capture: sessions, what their hooks stored
/// (turns, bytes, redactions, marked, lines not JSON, sessions whose last
/// capture failed) and the captured turns kept now.
///
/// # Errors
/// SQLite errors.
pub fn summary(conn: &Connection) -> Result<serde_json::Value, StoreError> {
    let (sessions, turns, bytes, redactions, marked, invalid, errors): (
        i64,
        i64,
        i64,
        i64,
        i64,
        i64,
        i64,
    ) = conn
        .prepare_cached(
            "SELECT count(*), coalesce(sum(turns), 0), coalesce(sum(bytes), 0), \
             coalesce(sum(redactions), 0), coalesce(sum(marked), 0), \
             coalesce(sum(invalid_lines), 0), count(last_error) FROM capture_state",
        )?
        .query_row([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })?;
    let (kept, kept_bytes): (i64, i64) = conn
        .prepare_cached(concat!(
            "SELECT count(*), coalesce(sum(length(content)), 0) FROM memories \
             WHERE ",
            captured!()
        ))?
        .query_row([], |r| Ok((r.get(0)?, r.get(1)?)))?;
    Ok(serde_json::json!({
        "sessions": sessions,
        "turns": turns,
        "bytes": bytes,
        "redactions": redactions,
        "marked": marked,
        "invalid_lines": invalid,
        "sessions_with_error": errors,
        "kept_turns": kept,
        "kept_bytes": kept_bytes,
    }))
}

/// Moves the capture state of sessions captured into namespace `from` to
/// `to` (the project's namespace moved): their next turns go there.
///
/// # Errors
/// SQLite errors.
pub fn move_namespace(conn: &Connection, from: &str, to: &str) -> Result<usize, StoreError> {
    Ok(conn
        .prepare_cached("UPDATE capture_state SET namespace = ?2 WHERE namespace = ?1")?
        .execute(rusqlite::params![from, to])?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::{Limits, Rules, settings};
    use crate::session::ident::Who;

    fn stretch(session: &str, from: u64, to: u64, texts: &[(&str, &str)]) -> Stretch {
        let memory = settings::MemoryConfig::default();
        let gate = settings::GateConfig::default();
        let rules = Rules {
            memory: &memory,
            gate: &gate,
            limits: Limits::default(),
        };
        let who = Who {
            namespace: "ns".into(),
            agent: "claude-code".into(),
            session: format!("claude-code:{session}"),
            reach: crate::session::ident::Reach::default(),
        };
        let now = time::OffsetDateTime::now_utc();
        let turns = texts
            .iter()
            .filter_map(|(id, text)| {
                let turn = memd_proto::CapturedTurn {
                    id: (*id).into(),
                    speaker: "User".into(),
                    text: (*text).into(),
                    at: None,
                };
                crate::gate::check_capture(&turn, "claude-code", session, &who, &rules, now)
                    .unwrap()
                    .map(|(new, c)| (new, c.redactions, c.marked.is_some()))
            })
            .collect();
        Stretch {
            host: "claude-code".into(),
            session: session.into(),
            namespace: "ns".into(),
            file: "1:2".into(),
            path: "/t.jsonl".into(),
            from,
            to,
            turns,
            invalid_lines: 0,
            error: None,
        }
    }

    fn count(conn: &Connection) -> i64 {
        conn.query_row(
            concat!("SELECT count(*) FROM memories WHERE ", captured!()),
            [],
            |r| r.get(0),
        )
        .unwrap()
    }

    #[test]
    fn a_stretch_is_stored_once_from_its_offset_only() {
        let (_dir, conn) = crate::store::test_db();
        let r = store(
            &conn,
            stretch("s", 0, 100, &[("u1", "one"), ("u2", "two")]),
            |_| {},
        )
        .unwrap();
        assert_eq!((r.stored, r.offset, r.stale), (2, 100, false));
        // From an offset that is not the state's: stale, nothing stored.
        let r = store(&conn, stretch("s", 50, 150, &[("u3", "three")]), |_| {}).unwrap();
        assert!(r.stale);
        assert_eq!(count(&conn), 2);
        // From the start again (a rewritten file): only the new turn.
        let r = store(
            &conn,
            stretch("s", 0, 150, &[("u1", "one"), ("u3", "three")]),
            |_| {},
        )
        .unwrap();
        assert_eq!((r.stored, r.existing), (1, 1));
        let st = state(&conn, "claude-code", "s").unwrap().unwrap();
        assert_eq!((st.turns, st.offset), (3, 150));
        // Positions follow in the thread.
        let pos: Vec<i64> = conn
            .prepare("SELECT thread_pos FROM memories ORDER BY id")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(pos, [1, 2, 3]);
    }

    #[test]
    fn retention_deletes_the_old_then_the_oldest_over_the_cap_and_keeps_no_copy() {
        let (_dir, conn) = crate::store::test_db();
        let words = "word ".repeat(200);
        let texts: Vec<(String, String)> = (0..10)
            .map(|i| (format!("u{i}"), format!("turn {i} {words}")))
            .collect();
        let refs: Vec<(&str, &str)> = texts
            .iter()
            .map(|(a, b)| (a.as_str(), b.as_str()))
            .collect();
        store(&conn, stretch("s", 0, 10, &refs), |_| {}).unwrap();
        conn.execute(
            "UPDATE memories SET created_at = '2020-01-01T00:00:00.000Z' \
             WHERE content LIKE 'User: turn 0 %' OR content LIKE 'User: turn 1 %'",
            [],
        )
        .unwrap();
        conn.execute(
            "UPDATE memories SET pinned = 1 WHERE content LIKE 'User: turn 2 %'",
            [],
        )
        .unwrap();
        conn.execute(
            "UPDATE memories SET created_at = '2020-01-01T00:00:00.000Z' \
             WHERE content LIKE 'User: turn 2 %'",
            [],
        )
        .unwrap();
        // Past keep_days: the two old ones, not the pinned one.
        let n = retire(&conn, Some("2021-01-01T00:00:00.000Z"), 0, 100).unwrap();
        assert_eq!(n, 2);
        assert_eq!(count(&conn), 8);
        // Over the cap: the oldest go until the rest fits.
        let each: i64 = conn
            .query_row(
                concat!(
                    "SELECT max(length(content)) FROM memories WHERE ",
                    captured!()
                ),
                [],
                |r| r.get(0),
            )
            .unwrap();
        let n = retire(&conn, None, (each * 5) as u64, 100).unwrap();
        assert_eq!(n, 2, "7 unpinned of {each} bytes over a cap of 5");
        assert_eq!(count(&conn), 6);
        let pinned: i64 = conn
            .query_row("SELECT count(*) FROM memories WHERE pinned = 1", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(pinned, 1);
        // No copy of a deleted turn anywhere in the history.
        let copies: i64 = conn
            .query_row(
                "SELECT count(*) FROM memory_revisions WHERE content LIKE 'User: turn 0 %'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(copies, 0);
        // A session forgotten: its turns and state.
        assert_eq!(forget(&conn, "", "s").unwrap(), 6);
        assert!(state(&conn, "claude-code", "s").unwrap().is_none());
    }
}
