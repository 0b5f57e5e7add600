//! Code citations in SQLite: the memories that cite code (a memory's
//! citations are in its metadata, `cites`; the partial index
//! `memories_cited` finds them) and the last verdict a client reported on
//! each (`citation_checks`, local to this machine, gone with its memory).
//! The daemon never opens a cited path: verdicts come from clients.

use std::collections::HashMap;

use memd_proto::cite::{self, Checked, Cite, Cited, LastVerdict, Verdict};
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params, params_from_iter};

use crate::gate::View;
use crate::store::StoreError;

/// The term the partial index `memories_cited` is defined with (a query
/// uses the index only when it repeats it word for word).
pub const CITED: &str = "m.metadata LIKE '%\"cites\"%'";

/// Most cited memories one listing returns.
pub const MAX_CITED: u32 = 5000;

/// Characters of a memory's text a listing shows.
const PREVIEW: usize = 120;

/// The live memories `view` sees that cite code (`only` one of them),
/// oldest first, without their last verdicts; a row whose metadata another
/// tool left unreadable is skipped.
///
/// # Errors
/// SQLite errors.
pub fn cited(conn: &Connection, view: &View, only: Option<i64>) -> Result<Vec<Cited>, StoreError> {
    let mut sql =
        format!("SELECT m.id, m.namespace, m.content, m.metadata FROM memories m WHERE {CITED}");
    let mut params: Vec<Value> = Vec::new();
    view.push_conditions(&mut sql, &mut params);
    if let Some(id) = only {
        params.push(Value::Integer(id));
        sql.push_str(&format!(" AND m.id = ?{}", params.len()));
    }
    sql.push_str(&format!(" ORDER BY m.id LIMIT {MAX_CITED}"));
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(params), |r| {
        Ok((
            r.get::<_, i64>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            r.get::<_, String>(3)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (id, namespace, content, metadata) = row?;
        let Ok(cites) = cite::from_metadata(&metadata) else {
            continue;
        };
        if cites.is_empty() {
            continue;
        }
        out.push(Cited {
            id,
            namespace,
            preview: content.chars().take(PREVIEW).collect(),
            cites,
            last: Vec::new(),
        });
    }
    Ok(out)
}

/// Records `checked` as the last verdicts of their citations at `at`,
/// replacing earlier ones; a verdict on a memory that is gone, or on a
/// citation it does not hold (any more), is not recorded. Returns how many
/// were.
///
/// # Errors
/// SQLite errors.
pub fn record(conn: &Connection, checked: &[Checked], at: &str) -> Result<u32, StoreError> {
    let mut metadata = conn.prepare_cached("SELECT metadata FROM memories WHERE id = ?1")?;
    let mut put = conn.prepare_cached(
        "INSERT INTO citation_checks (memory_id, cite, verdict, now_path, now_start, now_end, \
         reason, checked_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
         ON CONFLICT (memory_id, cite) DO UPDATE SET verdict = excluded.verdict, \
         now_path = excluded.now_path, now_start = excluded.now_start, now_end = excluded.now_end, \
         reason = excluded.reason, checked_at = excluded.checked_at",
    )?;
    let mut held: HashMap<i64, Vec<Cite>> = HashMap::new();
    let mut n = 0;
    for c in checked {
        let cites = match held.entry(c.id) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let m: Option<String> = metadata.query_row([c.id], |r| r.get(0)).optional()?;
                e.insert(
                    m.and_then(|m| cite::from_metadata(&m).ok())
                        .unwrap_or_default(),
                )
            }
        };
        if !cites.contains(&c.cite) {
            continue;
        }
        let place = c.now.as_ref();
        put.execute(params![
            c.id,
            c.cite.key(),
            c.verdict.name(),
            place.map(|p| p.path.clone()),
            place.and_then(|p| p.start),
            place.and_then(|p| p.end),
            c.reason,
            at,
        ])?;
        n += 1;
    }
    Ok(n)
}

/// The last verdicts recorded on the citations `ids` hold now, by memory
/// (a citation never checked on this machine has none).
///
/// # Errors
/// SQLite errors.
pub fn last(conn: &Connection, ids: &[i64]) -> Result<HashMap<i64, Vec<LastVerdict>>, StoreError> {
    let mut out: HashMap<i64, Vec<LastVerdict>> = HashMap::new();
    let mut metadata = conn.prepare_cached("SELECT metadata FROM memories WHERE id = ?1")?;
    for &id in ids {
        let Some(m) = metadata
            .query_row([id], |r| r.get::<_, String>(0))
            .optional()?
        else {
            continue;
        };
        let cites = cite::from_metadata(&m).unwrap_or_default();
        let found = checks_of(conn, id, &cites)?;
        if !found.is_empty() {
            out.insert(id, found);
        }
    }
    Ok(out)
}

/// The last verdicts recorded on `cites`, the citations memory `id` holds.
///
/// # Errors
/// SQLite errors.
pub fn checks_of(
    conn: &Connection,
    id: i64,
    cites: &[Cite],
) -> Result<Vec<LastVerdict>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT cite, verdict, now_path, now_start, now_end, reason, checked_at \
         FROM citation_checks WHERE memory_id = ?1",
    )?;
    let rows = stmt.query_map([id], |r| {
        Ok((
            r.get::<_, String>(0)?,
            r.get::<_, String>(1)?,
            r.get::<_, Option<String>>(2)?,
            r.get::<_, Option<u32>>(3)?,
            r.get::<_, Option<u32>>(4)?,
            r.get::<_, Option<String>>(5)?,
            r.get::<_, String>(6)?,
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (key, verdict, now_path, now_start, now_end, reason, at) = row?;
        let (Some(cite), Some(verdict)) = (
            cites.iter().find(|c| c.key() == key),
            Verdict::from_name(&verdict),
        ) else {
            continue;
        };
        let now = now_path.map(|path| Cite {
            path,
            start: now_start,
            end: now_end,
            hash: cite.hash.clone(),
            commit: None,
        });
        out.push(LastVerdict {
            checked: Checked {
                id,
                cite: cite.clone(),
                verdict,
                now,
                reason,
            },
            at,
        });
    }
    Ok(out)
}

/// The mark a block shows after a memory's text: its citations that are
/// not `fresh` by their last verdict, and those never checked here, each
/// named (`None` when every citation is fresh, or it cites nothing).
pub fn block_mark(cites: &[Cite], last: &[LastVerdict]) -> Option<String> {
    let marks: Vec<String> = cites
        .iter()
        .filter_map(|c| match last.iter().find(|l| &l.checked.cite == c) {
            Some(l) => l.checked.mark(),
            None => Checked {
                id: 0,
                cite: c.clone(),
                verdict: Verdict::Unchecked,
                now: None,
                reason: None,
            }
            .mark(),
        })
        .collect();
    (!marks.is_empty()).then(|| format!("[{}]", marks.join("; ")))
}
