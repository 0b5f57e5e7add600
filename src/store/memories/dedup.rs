//! Duplicates: the dedup key, the sketch of an add's near-duplicate
//! candidates, a thread position already held, a merge into a duplicate.

use memd_proto::Memory;
use rusqlite::{Connection, OptionalExtension};

use super::sources::write_source;
use super::tags::{add_tags, tag_edit};
use crate::gate::NewMemory;
use crate::store::StoreError;
use crate::store::kinds::not_captured;

/// Stores the near-duplicate sketch of a row's content (see schema v4).
///
/// # Errors
/// SQLite errors.
pub fn set_sketch(conn: &Connection, id: i64, content: &str) -> Result<(), StoreError> {
    let sketch = crate::gate::similar::sketch(&crate::gate::similar::profile(content));
    store_sketch(conn, id, &sketch)
}

pub(super) fn store_sketch(conn: &Connection, id: i64, sketch: &[i64]) -> Result<(), StoreError> {
    let mut stmt = conn
        .prepare_cached("INSERT OR IGNORE INTO memory_sketch (hash, memory_id) VALUES (?1, ?2)")?;
    for h in sketch {
        stmt.execute((h, id))?;
    }
    Ok(())
}

/// Computes, for the rows `ids`, a near-duplicate sketch where there is none
/// and the dedup key where there is none (rows written by other tools, or
/// whose content another tool changed), from their content as it is now;
/// returns how many rows got either. Neither is an edit: no generation move.
///
/// # Errors
/// SQLite errors.
pub fn backfill(conn: &Connection, ids: &[i64]) -> Result<usize, StoreError> {
    let mut read = conn.prepare_cached(
        "SELECT content, dedupe_key IS NULL, \
         NOT EXISTS (SELECT 1 FROM memory_sketch s WHERE s.memory_id = m.id) \
         FROM memories m WHERE id = ?1",
    )?;
    let mut set_key = conn.prepare_cached("UPDATE memories SET dedupe_key = ?1 WHERE id = ?2")?;
    let mut n = 0;
    for id in ids {
        let Some((content, no_key, no_sketch)) = read
            .query_row([id], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                    r.get::<_, bool>(1)?,
                    r.get::<_, bool>(2)?,
                ))
            })
            .optional()?
        else {
            continue;
        };
        if no_key {
            set_key.execute((crate::gate::dedupe_key(&content), id))?;
        }
        if no_sketch {
            set_sketch(conn, *id, &content)?;
        }
        n += usize::from(no_key || no_sketch);
    }
    Ok(n)
}

/// The memory at a thread position, if one is there (any status): a
/// transcript turn added again is the same memory.
///
/// # Errors
/// SQLite errors.
pub fn at_thread_position(
    conn: &Connection,
    namespace: &str,
    thread: &str,
    pos: i64,
) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM memories WHERE namespace = ?1 AND thread = ?2 AND thread_pos = ?3 \
             ORDER BY id LIMIT 1",
        )?
        .query_row((namespace, thread, pos), |r| r.get(0))
        .optional()?)
}

/// Rows that count for dedup: active (not superseded, not archived, not
/// expired) in the same namespace, scope and owner. `?1` namespace, `?2`
/// scope, `?3` owner, `?4` now.
const SAME_PLACE: &str = concat!(
    "m.namespace = ?1 AND m.scope = ?2 AND m.scope_owner IS ?3 \
    AND m.superseded_by IS NULL AND m.status <> 'archived' AND ",
    not_captured!("m"),
    " \
    AND (m.expires_at IS NULL OR m.expires_at > ?4)"
);

/// The active row with the same dedup key in the same namespace, scope and
/// owner, if any. A stored key is only trusted when the row's content still
/// gives it (another tool may have changed the content).
///
/// # Errors
/// SQLite errors.
pub fn find_duplicate(
    conn: &Connection,
    m: &NewMemory,
    now: &str,
) -> Result<Option<i64>, StoreError> {
    let sql = format!(
        "SELECT m.id, m.content FROM memories m WHERE {SAME_PLACE} AND m.dedupe_key = ?5 \
         ORDER BY m.id LIMIT 8"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let m = &m.row;
    let mut rows = stmt.query((&m.namespace, &m.scope, &m.scope_owner, now, &m.dedupe_key))?;
    while let Some(row) = rows.next()? {
        let content: String = row.get(1)?;
        if m.dedupe_key.as_deref() == Some(crate::gate::dedupe_key(&content).as_str()) {
            return Ok(Some(row.get(0)?));
        }
    }
    Ok(None)
}

/// Rows sharing one sketch hash looked at per add, at most.
const SKETCH_WALK: u32 = 512;

/// Candidates for the near-duplicate check: active rows of the same
/// namespace, scope and owner sharing a sketch hash, at most `limit` per
/// hash — a few index lookups, never a scan of the namespace. Each hash has
/// its own limit, so a common shingle shared by thousands of rows cannot
/// crowd out a near duplicate found through the others.
///
/// # Errors
/// SQLite errors.
pub fn sketch_candidates(
    conn: &Connection,
    m: &NewMemory,
    sketch: &[i64],
    now: &str,
    limit: u32,
) -> Result<Vec<(i64, String)>, StoreError> {
    // Sketch-first, streaming: stops at `limit` rows for each hash, and
    // looks at no more than the newest SKETCH_WALK rows sharing it (rows of
    // other namespaces, scopes or owners included): a hash common across
    // the whole database costs a bounded walk, and a near duplicate it
    // leaves out is still found through the sketch's other hashes.
    let sql = format!(
        "SELECT m.id, m.content FROM \
         (SELECT memory_id FROM memory_sketch WHERE hash = ?6 \
          ORDER BY memory_id DESC LIMIT {SKETCH_WALK}) s \
         CROSS JOIN memories m ON m.id = s.memory_id WHERE {SAME_PLACE} LIMIT ?5"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut out: Vec<(i64, String)> = Vec::new();
    let m = &m.row;
    for h in sketch {
        let rows = stmt.query_map(
            (
                &m.namespace,
                &m.scope,
                &m.scope_owner,
                now,
                i64::from(limit),
                h,
            ),
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                ))
            },
        )?;
        for row in rows {
            let (id, content) = row?;
            if !out.iter().any(|(seen, _)| *seen == id) {
                out.push((id, content));
            }
        }
    }
    Ok(out)
}

/// Merges an add into an existing row: `observation_count + 1`, tags
/// united (new tags are one change of the row). The content never changes.
///
/// # Errors
/// SQLite errors.
pub fn merge_into(conn: &Connection, id: i64, new: &Memory) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE memories SET observation_count = observation_count + 1 WHERE id = ?1",
    )?
    .execute([id])?;
    // The merged add is one more source of the row (its trust is the
    // lowest of them).
    let origin = new
        .provenance
        .as_ref()
        .and_then(|p| p.sources.first().cloned())
        .unwrap_or_else(|| memd_proto::Origin {
            source: new.source.clone(),
            agent: new.created_by.clone(),
            at: new.created_at.clone(),
            ..memd_proto::Origin::default()
        });
    let n: i64 = conn
        .prepare_cached("SELECT coalesce(max(n) + 1, 0) FROM memory_sources WHERE memory_id = ?1")?
        .query_row([id], |r| r.get(0))?;
    write_source(conn, id, usize::try_from(n).unwrap_or(0), &origin)?;
    tag_edit(conn, id, true, |conn| add_tags(conn, id, &new.tags))
}
