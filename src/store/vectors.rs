//! The vectors' tables: `memory_vectors`, `memory_similar` and the model
//! lock in `memory_meta`, as the embedding worker and the handlers read and
//! write them.

use std::collections::HashMap;

use rusqlite::{Connection, OptionalExtension, params_from_iter};

use super::StoreError;
use crate::embed::rules::{ModelLock, Neighbor};
use crate::embed::vectors::{Index, Place, from_blob, to_blob};
use crate::store::kinds::synced_row;

/// A row to embed.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    /// Its id.
    pub id: i64,
    /// Its namespace.
    pub namespace: String,
    /// Its text as read.
    pub text: String,
    /// Its place in a thread, if it has one.
    pub thread: Option<Threaded>,
}

/// A row's place in its thread, as read.
#[derive(Debug, Clone, PartialEq)]
pub struct Threaded {
    /// The thread id.
    pub thread: String,
    /// The position in it.
    pub pos: i64,
    /// The row's text length in bytes.
    pub bytes: usize,
}

impl Threaded {
    /// From a row's `thread`, `thread_pos` and `octet_length(content)`:
    /// a place when it has both a thread and a position.
    fn read(thread: Option<String>, pos: Option<i64>, bytes: Option<i64>) -> Option<Threaded> {
        let (thread, pos) = thread.zip(pos)?;
        Some(Threaded {
            thread,
            pos,
            bytes: usize::try_from(bytes.unwrap_or(0)).unwrap_or(0),
        })
    }

    /// As the vector index takes it.
    pub fn place(&self) -> Place<'_> {
        Place {
            thread: &self.thread,
            pos: self.pos,
            bytes: self.bytes,
        }
    }
}

/// Reads the model lock from `memory_meta`.
///
/// # Errors
/// SQLite errors.
pub fn read_lock(conn: &Connection) -> Result<Option<ModelLock>, StoreError> {
    let get = |key: &str| super::meta::text(conn, key);
    Ok(match (get("embed_model")?, get("embed_dim")?) {
        (Some(model), Some(dim)) => dim.parse().ok().map(|dim| ModelLock { model, dim }),
        _ => None,
    })
}

/// Writes the model lock.
///
/// # Errors
/// SQLite errors.
pub fn write_lock(conn: &Connection, lock: &ModelLock) -> Result<(), StoreError> {
    super::meta::set(conn, "embed_model", &lock.model)?;
    super::meta::set_number(conn, "embed_dim", lock.dim as u64)
}

/// The newest row id (0 without rows).
///
/// # Errors
/// SQLite errors.
pub fn newest_id(conn: &Connection) -> Result<i64, StoreError> {
    Ok(
        conn.query_row("SELECT coalesce(max(id), 0) FROM memories", [], |r| {
            r.get(0)
        })?,
    )
}

/// Counts of rows with a vector and rows still to embed.
///
/// # Errors
/// SQLite errors.
pub fn counts(conn: &Connection) -> Result<(i64, i64), StoreError> {
    let embedded: i64 = conn
        .prepare_cached("SELECT count(*) FROM memory_vectors v WHERE EXISTS (SELECT 1 FROM memories m WHERE m.id = v.memory_id)")?
        .query_row([], |r| r.get(0))?;
    let pending: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM memories m WHERE NOT EXISTS \
             (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id)",
        )?
        .query_row([], |r| r.get(0))?;
    Ok((embedded, pending))
}

/// Every stored vector of `dim` dimensions, with its row's namespace, in a
/// new index (empty when the lock names another dimension).
///
/// # Errors
/// SQLite errors.
pub fn load_index(
    conn: &Connection,
    lock: Option<&ModelLock>,
    dim: usize,
) -> Result<Index, StoreError> {
    let mut index = Index::new(dim);
    if lock.is_none_or(|l| l.dim == dim) {
        // `octet_length` reads a text's size from its record, not the text.
        let mut stmt = conn.prepare(
            "SELECT v.memory_id, m.namespace, v.vector, m.thread, m.thread_pos, \
             octet_length(m.content) FROM memory_vectors v JOIN memories m ON m.id = v.memory_id",
        )?;
        let mut rows = stmt.query([])?;
        while let Some(r) = rows.next()? {
            let id: i64 = r.get(0)?;
            let ns: String = r.get(1)?;
            let blob: Vec<u8> = r.get(2)?;
            let thread = Threaded::read(r.get(3)?, r.get(4)?, r.get(5)?);
            if let Some(v) = from_blob(&blob, dim) {
                index.upsert(id, &ns, &v, thread.as_ref().map(Threaded::place));
            }
        }
    }
    Ok(index)
}

/// The rows that have a stored vector, with their place in a thread.
///
/// # Errors
/// SQLite errors.
pub fn stored_ids(conn: &Connection) -> Result<HashMap<i64, Option<Threaded>>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT v.memory_id, m.thread, m.thread_pos, octet_length(m.content) \
         FROM memory_vectors v JOIN memories m ON m.id = v.memory_id",
    )?;
    let ids = stmt
        .query_map([], |r| {
            Ok((r.get(0)?, Threaded::read(r.get(1)?, r.get(2)?, r.get(3)?)))
        })?
        .collect::<Result<_, _>>()?;
    Ok(ids)
}

/// Stores each vector whose row still holds the embedded text in the same
/// namespace; returns the ones stored.
///
/// # Errors
/// SQLite errors.
pub fn store(
    conn: &Connection,
    items: Vec<(i64, String, String, Vec<f32>)>,
) -> Result<Vec<(i64, String, Vec<f32>)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "INSERT OR REPLACE INTO memory_vectors (memory_id, vector) SELECT ?1, ?2 \
         WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?1 \
         AND CAST(content AS TEXT) IS ?3 AND namespace IS ?4)",
    )?;
    let mut written = Vec::new();
    for (id, ns, text, v) in items {
        if stmt.execute((id, to_blob(&v), &text, &ns))? > 0 {
            written.push((id, ns, v));
        }
    }
    Ok(written)
}

/// Records `newer` as a near duplicate of `older` (and supersedes `older`
/// when asked) if both are still active; `false` when one is not.
///
/// # Errors
/// SQLite errors.
pub fn record_similar(
    conn: &Connection,
    newer: i64,
    older: i64,
    cosine: f32,
    supersede: bool,
) -> Result<bool, StoreError> {
    let still = conn
        .prepare_cached(
            "SELECT count(*) FROM memories WHERE id IN (?1, ?2) \
             AND superseded_by IS NULL",
        )?
        .query_row((newer, older), |r| r.get::<_, i64>(0))?;
    if still != 2 {
        return Ok(false);
    }
    conn.prepare_cached(
        "INSERT OR REPLACE INTO memory_similar (memory_id, similar_to, cosine) \
         VALUES (?1, ?2, ?3)",
    )?
    .execute((newer, older, f64::from(cosine)))?;
    // Automatic supersession never writes a shared row (every machine
    // would apply it again): the note stays, the link is not made.
    let shared: i64 = conn
        .prepare_cached(concat!(
            "SELECT count(*) FROM memories WHERE id IN (?1, ?2) AND ",
            synced_row!()
        ))?
        .query_row((newer, older), |r| r.get(0))?;
    if supersede && shared == 0 {
        super::memories::supersede(conn, older, newer)?;
    }
    Ok(true)
}

/// Rows without a vector, oldest first.
///
/// # Errors
/// SQLite errors.
pub fn pending(conn: &Connection, limit: i64) -> Result<Vec<Pending>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT m.id, m.namespace, CAST(m.content AS TEXT), m.thread, m.thread_pos, \
         octet_length(m.content) FROM memories m WHERE NOT EXISTS \
         (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id) ORDER BY m.id LIMIT ?1",
    )?;
    let rows = stmt
        .query_map([limit], |r| {
            Ok(Pending {
                id: r.get(0)?,
                namespace: r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                text: r.get::<_, Option<String>>(2)?.unwrap_or_default(),
                thread: Threaded::read(r.get(3)?, r.get(4)?, r.get(5)?),
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// A freshly embedded row and its close neighbors.
pub struct Close {
    /// Its namespace.
    pub namespace: String,
    /// Its subject.
    pub subject: Option<String>,
    /// Its metadata (JSON text).
    pub metadata: String,
    /// The close rows that are active in its namespace, scope and owner,
    /// older and newer ones.
    pub neighbors: Vec<Neighbor>,
}

/// The row's namespace, subject and metadata (`None` when it is gone or
/// superseded), and which of the close rows are active in its namespace,
/// scope and owner.
///
/// # Errors
/// SQLite errors.
pub fn neighbors_of(
    conn: &Connection,
    id: i64,
    close: &[(i64, f32)],
) -> Result<Option<Close>, StoreError> {
    let me: Option<(String, Option<String>, String)> = conn
        .prepare_cached(
            "SELECT namespace, subject, CAST(metadata AS TEXT) FROM memories \
             WHERE id = ?1 AND superseded_by IS NULL",
        )?
        .query_row([id], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get::<_, Option<String>>(2)?.unwrap_or_default(),
            ))
        })
        .optional()?;
    let Some((namespace, subject, metadata)) = me else {
        return Ok(None);
    };
    let marks = vec!["?"; close.len()].join(", ");
    let sql = format!(
        "SELECT o.id, o.subject, CAST(o.metadata AS TEXT) FROM memories n JOIN memories o \
         ON o.namespace = n.namespace AND o.scope = n.scope AND o.scope_owner IS n.scope_owner \
         WHERE n.id = ? AND o.id IN ({marks}) AND o.superseded_by IS NULL \
         AND o.status <> 'archived' AND (o.expires_at IS NULL OR o.expires_at > ?)"
    );
    let mut params: Vec<rusqlite::types::Value> = vec![id.into()];
    params.extend(close.iter().map(|(i, _)| rusqlite::types::Value::from(*i)));
    params.push(crate::clock::now().into());
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt
        .query_map(params_from_iter(params), |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?.unwrap_or_default(),
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let neighbors = rows
        .into_iter()
        .filter_map(|(oid, subject, metadata)| {
            let cosine = close.iter().find(|(i, _)| *i == oid)?.1;
            Some(Neighbor {
                id: oid,
                cosine,
                subject,
                metadata,
            })
        })
        .collect();
    Ok(Some(Close {
        namespace,
        subject,
        metadata,
        neighbors,
    }))
}

/// Forgets every vector and near-duplicate finding (before `reembed`).
///
/// # Errors
/// SQLite errors.
pub fn clear(conn: &Connection) -> Result<(), StoreError> {
    conn.execute_batch("DELETE FROM memory_vectors; DELETE FROM memory_similar;")?;
    Ok(())
}
