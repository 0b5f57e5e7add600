//! The SQLite side of team memory: shared rows as they are here (what a
//! write-through sends), and PostgreSQL's rows applied here (a pull, or the
//! local apply of a write PostgreSQL committed). Runs on the writer thread,
//! inside its transaction.
//!
//! memd's apply is the one writer of `rev` and `updated_at` besides the
//! triggers: a row takes PostgreSQL's, and only when PostgreSQL's rev is
//! newer than the `team_rev` it holds.

use std::sync::LazyLock;

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use super::row::{RemoteAuthor, TeamRow};
use crate::store::StoreError;
use crate::store::memories::{self, WRITTEN};

/// What a row was before a job changed it: the base of the write-through's
/// compare-and-set, and of its count deltas.
#[derive(Debug, Clone, PartialEq)]
pub struct Before {
    /// The row's identity.
    pub uid: String,
    /// Its namespace.
    pub namespace: String,
    /// PostgreSQL's rev it holds (`None`: never written through or pulled).
    pub team_rev: Option<i64>,
    /// Its local rev.
    pub rev: i64,
    /// Counts (shared, written as deltas).
    pub observation_count: i64,
    /// Confirmations.
    pub confirmed_count: i64,
    /// Local by rule (a session-scope row, a captured turn): never shared
    /// whatever its namespace.
    pub local: bool,
}

/// Row `id` as PostgreSQL would hold it (its supersession by uid), with its
/// local rev; `None` when it is gone.
///
/// # Errors
/// SQLite errors.
pub fn after(conn: &Connection, id: i64) -> Result<Option<TeamRow>, StoreError> {
    let Some(m) = memories::fetch(conn, id)? else {
        return Ok(None);
    };
    let superseded_by_uid = match m.superseded_by {
        Some(by) => uid_of(conn, by)?,
        None => None,
    };
    let mut memory = m;
    memory.tags.sort();
    memory.tags.dedup();
    // What only this machine keeps is not PostgreSQL's.
    let memory = memd_proto::Memory {
        id: 0,
        superseded_by: None,
        use_count: 0,
        last_used_at: None,
        access_score: 0.0,
        changed_generation: 0,
        turn: None,
        ..memory
    };
    Ok(Some(TeamRow {
        memory,
        superseded_by_uid,
        deleted: false,
        changed_seq: 0,
        author: RemoteAuthor::default(),
    }))
}

fn uid_of(conn: &Connection, id: i64) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT uid FROM memories WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?)
}

/// The local id of `uid`.
///
/// # Errors
/// SQLite errors.
pub fn id_of(conn: &Connection, uid: &str) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT id FROM memories WHERE uid = ?1")?
        .query_row([uid], |r| r.get(0))
        .optional()?)
}

/// A row as held here: id, PostgreSQL's rev, the counts, its own rev.
type Held = (i64, Option<i64>, i64, i64, Option<String>, i64);

/// What applying a row did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Inserted as this local id.
    Inserted(i64),
    /// This local row now holds PostgreSQL's version.
    Updated(i64),
    /// Only its counts changed (no edit: the generation does not move).
    Counts(i64),
    /// The local row was deleted (a tombstone).
    Deleted,
    /// Nothing to do: the local row is as new, or a tombstone of a row
    /// this machine never had.
    Unchanged(Option<i64>),
}

impl Outcome {
    /// The local row it left, if any.
    pub fn id(self) -> Option<i64> {
        match self {
            Outcome::Inserted(id) | Outcome::Updated(id) | Outcome::Counts(id) => Some(id),
            Outcome::Unchanged(id) => id,
            Outcome::Deleted => None,
        }
    }

    /// Whether the row's meaningful columns changed here.
    pub fn edited(self) -> bool {
        matches!(
            self,
            Outcome::Inserted(_) | Outcome::Updated(_) | Outcome::Deleted
        )
    }
}

/// Applies PostgreSQL's `row` here: inserted when new, replaced when
/// PostgreSQL's rev is newer than the one held, deleted for a tombstone;
/// counts follow PostgreSQL's whatever the rev. With `force`, a row whose
/// held rev is newer than PostgreSQL's is replaced too (a resync after
/// PostgreSQL's history went back). Its supersession link is resolved when
/// the row it names is here (see [`link`]).
///
/// # Errors
/// SQLite errors.
pub fn apply(conn: &Connection, row: &TeamRow, force: bool) -> Result<Outcome, StoreError> {
    apply_keeping(conn, row, force, &mut Vec::new())
}

/// Whether PostgreSQL's version `incoming` of a row replaces a local
/// version another tool made here: the row's rev moved past the
/// `team_rev` it held, and PostgreSQL's is newer (or `force`, a resync).
fn replaces(team_rev: Option<i64>, rev: i64, incoming: i64, force: bool) -> bool {
    team_rev.is_some_and(|t| rev != t && (force || incoming > t))
}

/// The local versions another tool made here that applying PostgreSQL's
/// `rows` (uid, rev) would replace, as [`apply_keeping`] would put them in
/// `lost`: read first, so they can be kept before the apply.
///
/// # Errors
/// SQLite errors.
pub fn to_be_replaced(
    conn: &Connection,
    rows: &[(String, i64)],
    force: bool,
) -> Result<Vec<memd_proto::Memory>, StoreError> {
    let mut out = Vec::new();
    for (uid, incoming) in rows {
        let local: Option<(i64, Option<i64>, i64)> = conn
            .prepare_cached("SELECT id, team_rev, rev FROM memories WHERE uid = ?1")?
            .query_row([uid], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .optional()?;
        if let Some((id, team_rev, rev)) = local
            && replaces(team_rev, rev, *incoming, force)
            && let Some(m) = memories::fetch(conn, id)?
        {
            out.push(m);
        }
    }
    Ok(out)
}

/// As [`apply`]; a local version another tool made here (its rev past the
/// `team_rev` it held) that PostgreSQL's row replaces goes into `lost`
/// (for a drift backup).
///
/// # Errors
/// SQLite errors.
pub fn apply_keeping(
    conn: &Connection,
    row: &TeamRow,
    force: bool,
    lost: &mut Vec<memd_proto::Memory>,
) -> Result<Outcome, StoreError> {
    let local: Option<Held> = conn
        .prepare_cached(
            "SELECT id, team_rev, observation_count, confirmed_count, last_confirmed_at, rev \
             FROM memories WHERE uid = ?1",
        )?
        .query_row([&row.uid], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .optional()?;
    if let Some((id, team_rev, .., rev)) = local
        && replaces(team_rev, rev, row.rev, force)
        && let Some(m) = memories::fetch(conn, id)?
    {
        lost.push(m);
    }
    if row.deleted {
        return match local {
            Some((id, team_rev, ..)) if force || team_rev.is_none_or(|t| t <= row.rev) => {
                memories::delete(conn, id)?;
                Ok(Outcome::Deleted)
            }
            Some((id, ..)) => Ok(Outcome::Unchanged(Some(id))),
            None => Ok(Outcome::Unchanged(None)),
        };
    }
    let superseded_by = match &row.superseded_by_uid {
        Some(uid) => id_of(conn, uid)?,
        None => None,
    };
    let Some((id, team_rev, observations, confirmations, confirmed_at, _)) = local else {
        return insert(conn, row, superseded_by).map(Outcome::Inserted);
    };
    if !force && team_rev.is_some_and(|t| t >= row.rev) {
        if (observations, confirmations, confirmed_at.as_deref())
            == (
                row.observation_count,
                row.confirmed_count,
                row.last_confirmed_at.as_deref(),
            )
        {
            return Ok(Outcome::Unchanged(Some(id)));
        }
        conn.prepare_cached(
            "UPDATE memories SET observation_count = ?2, confirmed_count = ?3, \
             last_confirmed_at = ?4 WHERE id = ?1",
        )?
        .execute(params![
            id,
            row.observation_count,
            row.confirmed_count,
            row.last_confirmed_at
        ])?;
        return Ok(Outcome::Counts(id));
    }
    let content_changed: bool = conn
        .prepare_cached("SELECT content IS NOT ?2 FROM memories WHERE id = ?1")?
        .query_row(params![id, row.content], |r| r.get(0))?;
    memories::tag_edit(conn, id, true, |conn| {
        update(conn, id, row, superseded_by)?;
        memories::set_tags(conn, id, &row.tags)
    })?;
    finish(conn, id, row)?;
    if content_changed {
        memories::set_sketch(conn, id, &row.content)?;
    }
    Ok(Outcome::Updated(id))
}

/// The columns of [`WRITTEN`] that are this machine's own: a team row
/// does not carry them (a captured turn's id, how it was used here).
const NOT_SHARED: [&str; 4] = ["turn", "use_count", "last_used_at", "access_score"];

/// Of the shared columns, those an update leaves: fixed when the row was
/// made (who, where from, when), or set by [`finish`] after the triggers
/// have moved them.
const NOT_UPDATED: [&str; 7] = [
    "uid",
    "source",
    "created_by",
    "created_at",
    "dedupe_key",
    "updated_at",
    "rev",
];

/// The shared columns of [`WRITTEN`] with their index.
fn shared() -> impl Iterator<Item = (usize, &'static str)> {
    WRITTEN
        .iter()
        .copied()
        .enumerate()
        .filter(|(_, c)| !NOT_SHARED.contains(c))
}

/// The shared columns an update sets, with their index in [`WRITTEN`].
fn updated() -> impl Iterator<Item = (usize, &'static str)> {
    shared().filter(|(_, c)| !NOT_UPDATED.contains(c))
}

/// `row`'s values of `columns` (as [`shared`] and [`updated`] give them).
fn values_of(row: &TeamRow, columns: impl Iterator<Item = (usize, &'static str)>) -> Vec<Value> {
    let mut all = memories::written(row).map(Some);
    columns.filter_map(|(i, _)| all[i].take()).collect()
}

/// The insert of a team row: every shared column, its supersession by id
/// and `team_rev` (PostgreSQL's rev, the row's own too).
static INSERT: LazyLock<String> = LazyLock::new(|| {
    let columns: Vec<&str> = shared().map(|(_, c)| c).collect();
    let n = columns.len();
    let marks: Vec<String> = (1..=n + 2).map(|i| format!("?{i}")).collect();
    format!(
        "INSERT INTO memories ({}, superseded_by, team_rev) VALUES ({})",
        columns.join(", "),
        marks.join(", ")
    )
});

/// The update of a local row to a team row's version: the shared columns
/// an update sets (`?1` the id), and its supersession (`?n`: by id, when
/// it is here; `?n+1`: the uid, when there is one).
static UPDATE: LazyLock<String> = LazyLock::new(|| {
    let set: Vec<String> = updated()
        .enumerate()
        .map(|(k, (_, c))| format!("{c} = ?{}", k + 2))
        .collect();
    let n = set.len() + 2;
    format!(
        "UPDATE memories SET {}, superseded_by = coalesce(?{n}, CASE WHEN ?{} IS NULL \
         THEN NULL ELSE superseded_by END) WHERE id = ?1",
        set.join(", "),
        n + 1
    )
});

fn update(
    conn: &Connection,
    id: i64,
    row: &TeamRow,
    superseded_by: Option<i64>,
) -> Result<(), StoreError> {
    let mut args = vec![Value::Integer(id)];
    args.extend(values_of(row, updated()));
    args.push(superseded_by.map_or(Value::Null, Value::Integer));
    args.push(
        row.superseded_by_uid
            .clone()
            .map_or(Value::Null, Value::Text),
    );
    conn.prepare_cached(&UPDATE)?
        .execute(params_from_iter(args))?;
    Ok(())
}

fn insert(conn: &Connection, row: &TeamRow, superseded_by: Option<i64>) -> Result<i64, StoreError> {
    // PostgreSQL's rev and time go in with the row: no trigger moves them
    // on an insert.
    let mut args = values_of(row, shared());
    args.push(superseded_by.map_or(Value::Null, Value::Integer));
    args.push(Value::Integer(row.rev));
    conn.prepare_cached(&INSERT)?
        .execute(params_from_iter(args))?;
    let id = conn.last_insert_rowid();
    memories::tags_of_new_row(conn, id, &row.tags)?;
    memories::set_sketch(conn, id, &row.content)?;
    Ok(id)
}

/// PostgreSQL's rev, time and dedup key: the triggers moved the local rev
/// and time by their own count.
fn finish(conn: &Connection, id: i64, row: &TeamRow) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE memories SET rev = ?2, updated_at = ?3, team_rev = ?2, dedupe_key = ?4 \
         WHERE id = ?1",
    )?
    .execute(params![id, row.rev, row.updated_at, row.dedupe_key])?;
    Ok(())
}

/// Links rows whose supersession names a row that arrived after them (in
/// the same page or a later one): `superseded_by` from the uid.
///
/// # Errors
/// SQLite errors.
pub fn link(conn: &Connection, row: &TeamRow) -> Result<(), StoreError> {
    let Some(target) = &row.superseded_by_uid else {
        return Ok(());
    };
    let Some(by) = id_of(conn, target)? else {
        return Ok(());
    };
    let changed = conn
        .prepare_cached(
            "UPDATE memories SET superseded_by = ?2 WHERE uid = ?1 AND superseded_by IS NOT ?2",
        )?
        .execute(params![row.uid, by])?;
    if changed > 0 {
        // The link is PostgreSQL's, not a new edit here: its rev stays.
        conn.prepare_cached("UPDATE memories SET rev = ?2, updated_at = ?3 WHERE uid = ?1")?
            .execute(params![row.uid, row.rev, row.updated_at])?;
    }
    Ok(())
}

/// Records who made the change of row `id` (at the generation it last
/// changed here) as PostgreSQL names them: a session of this machine
/// (`own` is its name) or of another, or a writer there that is not memd.
///
/// # Errors
/// SQLite errors.
/// Records where a row this machine just inserted from PostgreSQL came
/// from (its provenance's origin): the machine and role PostgreSQL names
/// (none for this machine's own), and `job`'s way in when this machine's
/// session wrote it.
///
/// # Errors
/// SQLite errors.
pub fn record_origin(
    conn: &Connection,
    id: i64,
    row: &TeamRow,
    own: &str,
    job: Option<&memd_proto::Origin>,
) -> Result<(), StoreError> {
    // PostgreSQL names who made the row's last change: the creator while
    // the row is at its first version.
    let first = row.rev <= 1;
    let machine = row.author.machine.clone().filter(|m| m != own && first);
    let via = match (job, &machine) {
        (Some(j), _) => j.via.clone(),
        (None, Some(_)) => Some("team".to_string()),
        (None, None) if !first => Some("team".to_string()),
        (None, None) => None,
    };
    let origin = memd_proto::Origin {
        source: row.source.clone(),
        via,
        agent: row
            .author
            .agent
            .clone()
            .filter(|_| first)
            .or_else(|| row.created_by.clone()),
        session: row.author.session.clone().filter(|_| first),
        machine,
        role: row.author.role.clone().filter(|_| first),
        at: row.created_at.clone(),
    };
    memories::write_source(conn, id, 0, &origin)
}

pub fn record_author(
    conn: &Connection,
    id: i64,
    author: &RemoteAuthor,
    own: &str,
) -> Result<(), StoreError> {
    let machine = author.machine.as_deref().filter(|m| *m != own);
    conn.prepare_cached(
        "INSERT OR REPLACE INTO memory_authors (memory_id, generation, session, agent, machine, \
         external, rev) SELECT id, changed_generation, ?2, ?3, ?4, ?5, rev FROM memories \
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        author.session.clone().unwrap_or_default(),
        author.agent.clone().unwrap_or_default(),
        machine,
        author.is_external(),
    ])?;
    Ok(())
}

/// Records that the PostgreSQL number `seq` is applied at local generation
/// `g` (a session's view, translated).
///
/// # Errors
/// SQLite errors.
pub fn record_seq(conn: &Connection, g: u64, seq: i64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO memory_team_seq (generation, seq) VALUES (?1, ?2)",
    )?
    .execute(params![g as i64, seq])?;
    Ok(())
}

/// The highest PostgreSQL number applied at or before local generation `g`
/// (0 when none).
///
/// # Errors
/// SQLite errors.
pub fn seq_at(conn: &Connection, g: u64) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached("SELECT coalesce(max(seq), 0) FROM memory_team_seq WHERE generation <= ?1")?
        .query_row([g as i64], |r| r.get(0))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add(conn: &Connection, content: &str) -> i64 {
        conn.execute(
            "INSERT INTO memories (namespace, content, subject, category, tier, importance, \
             metadata, thread, thread_pos, expires_at, created_by) VALUES ('shop', ?1, 'cache', \
             'fact', 2, 'high', '{\"k\":1}', 't1', 4, '2030-01-01T00:00:00Z', 'agent-a')",
            [content],
        )
        .unwrap();
        conn.last_insert_rowid()
    }

    #[test]
    fn the_team_sql_names_each_shared_column_once() {
        for c in WRITTEN {
            let set = format!("{c} = ?");
            assert_eq!(
                INSERT.matches(&format!(" {c},")).count()
                    + INSERT.matches(&format!("({c},")).count(),
                usize::from(!NOT_SHARED.contains(&c)),
                "{c} in {}",
                *INSERT
            );
            assert_eq!(
                UPDATE.matches(&set).count(),
                usize::from(!NOT_SHARED.contains(&c) && !NOT_UPDATED.contains(&c)),
                "{c} in {}",
                *UPDATE
            );
        }
    }

    #[test]
    fn a_team_row_arrives_whole_and_its_next_version_goes_over_it() {
        let (_a, here) = crate::store::test_db();
        let (_b, there) = crate::store::test_db();
        let id = add(&there, "the cache runs on 6379");
        let mut row = after(&there, id).unwrap().unwrap();
        row.tags = vec!["ops".into()];
        row.rev = 5;
        let Outcome::Inserted(local) = apply(&here, &row, false).unwrap() else {
            panic!("not inserted");
        };
        assert_eq!(after(&here, local).unwrap().unwrap(), row);
        let team_rev: i64 = here
            .query_row(
                "SELECT team_rev FROM memories WHERE id = ?1",
                [local],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(team_rev, 5);

        let mut next = row.clone();
        next.content = "the cache runs on 6380".into();
        next.tier = 3;
        next.thread_pos = Some(7);
        next.source = "user".into();
        next.rev = 6;
        next.updated_at = "2031-01-01T00:00:00.000Z".into();
        assert_eq!(apply(&here, &next, false).unwrap(), Outcome::Updated(local));
        let got = after(&here, local).unwrap().unwrap();
        assert_eq!(got.content, next.content);
        assert_eq!((got.tier, got.thread_pos), (3, Some(7)));
        assert_eq!(
            (got.rev, got.updated_at.as_str()),
            (6, next.updated_at.as_str())
        );
        assert_eq!(
            got.source, row.source,
            "the row's source is fixed when it is made"
        );
        // An older version changes nothing.
        assert_eq!(
            apply(&here, &row, false).unwrap(),
            Outcome::Unchanged(Some(local))
        );
    }

    #[test]
    fn another_tools_edit_is_named_before_a_newer_team_version_replaces_it() {
        let (_a, here) = crate::store::test_db();
        let (_b, there) = crate::store::test_db();
        let id = add(&there, "the cache runs on 6379");
        let mut row = after(&there, id).unwrap().unwrap();
        row.rev = 5;
        let Outcome::Inserted(local) = apply(&here, &row, false).unwrap() else {
            panic!("not inserted");
        };
        let theirs = [(row.uid.clone(), 7)];
        assert!(
            to_be_replaced(&here, &theirs, false).unwrap().is_empty(),
            "no edit here"
        );
        here.execute(
            "UPDATE memories SET content = 'the shell says 6380' WHERE id = ?1",
            [local],
        )
        .unwrap();
        let named = to_be_replaced(&here, &theirs, false).unwrap();
        assert_eq!(named.len(), 1);
        assert_eq!(named[0].content, "the shell says 6380");
        let same = [(row.uid.clone(), 5)];
        assert!(
            to_be_replaced(&here, &same, false).unwrap().is_empty(),
            "not newer"
        );
        assert_eq!(
            to_be_replaced(&here, &same, true).unwrap().len(),
            1,
            "a resync"
        );
        // The apply loses exactly what was named.
        let mut next = row.clone();
        next.rev = 7;
        let mut lost = Vec::new();
        apply_keeping(&here, &next, false, &mut lost).unwrap();
        assert_eq!(lost, named);
    }
}
