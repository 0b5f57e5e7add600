//! Rows and team memory: the synced rows, what was not pushed yet, what
//! was edited or deleted here since.

use rusqlite::Connection;

use super::write::delete;
use crate::store::StoreError;
use crate::store::kinds::{local_row, not_captured, synced_row};

/// Rows that were written through or pulled (team memory): id, uid,
/// namespace.
///
/// # Errors
/// SQLite errors.
pub fn synced_rows(conn: &Connection) -> Result<Vec<(i64, String, String)>, StoreError> {
    let mut stmt = conn.prepare(concat!(
        "SELECT id, uid, namespace FROM memories WHERE ",
        synced_row!()
    ))?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The namespaces that hold rows written through or pulled.
///
/// # Errors
/// SQLite errors.
pub fn synced_namespaces(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare(concat!(
        "SELECT DISTINCT namespace FROM memories WHERE ",
        synced_row!(),
        " ORDER BY 1"
    ))?;
    let rows = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Drops the rows of `namespace` written through or pulled, with every
/// revision of them (the one their delete just wrote included): what this
/// machine may no longer read leaves no text here and is not taken for a
/// delete to write through. Rows never pushed stay. How many went.
///
/// # Errors
/// SQLite errors.
pub fn drop_synced(conn: &Connection, namespace: &str) -> Result<usize, StoreError> {
    let ids: Vec<i64> = conn
        .prepare(concat!(
            "SELECT id FROM memories WHERE namespace = ?1 AND ",
            synced_row!()
        ))?
        .query_map([namespace], |r| r.get(0))?
        .collect::<Result<Vec<_>, _>>()?;
    for id in &ids {
        delete(conn, *id)?;
        conn.prepare_cached("DELETE FROM memory_revisions WHERE memory_id = ?1")?
            .execute([id])?;
    }
    Ok(ids.len())
}

/// Whether `namespace` holds a row (not session-scope) that was never
/// written through or pulled, other than the rows `created` (those the
/// write being decided created).
///
/// # Errors
/// SQLite errors.
pub fn has_unpushed(
    conn: &Connection,
    namespace: &str,
    created: &[i64],
) -> Result<bool, StoreError> {
    let mut stmt = conn.prepare_cached(concat!(
        "SELECT id FROM memories WHERE namespace = ?1 AND ",
        local_row!(),
        " \
         AND scope != 'session' AND ",
        not_captured!(),
        " LIMIT ?2"
    ))?;
    let ids = stmt
        .query_map((namespace, created.len() as i64 + 1), |r| {
            r.get::<_, i64>(0)
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ids.iter().any(|id| !created.contains(id)))
}

/// The rows of `namespace` (not local by rule: session-scope, captured)
/// never written through or
/// pulled, by id.
///
/// # Errors
/// SQLite errors.
pub fn unpushed_ids(conn: &Connection, namespace: &str) -> Result<Vec<i64>, StoreError> {
    let mut stmt = conn.prepare(concat!(
        "SELECT id FROM memories WHERE namespace = ?1 AND ",
        local_row!(),
        " \
         AND scope != 'session' AND ",
        not_captured!(),
        " ORDER BY id"
    ))?;
    let ids = stmt
        .query_map([namespace], |r| r.get::<_, i64>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ids)
}

/// Records PostgreSQL's rev of a row pushed to it (team memory).
///
/// # Errors
/// SQLite errors.
pub fn set_team_rev(conn: &Connection, uid: &str, rev: i64) -> Result<(), StoreError> {
    conn.prepare_cached(concat!(
        "UPDATE memories SET team_rev = ?2 WHERE uid = ?1 AND ",
        local_row!()
    ))?
    .execute(rusqlite::params![uid, rev])?;
    Ok(())
}

/// Shared rows (team memory) whose rev moved past the `team_rev` they
/// hold: another tool changed them here. Id and `team_rev`.
///
/// # Errors
/// SQLite errors.
pub fn edited_here(conn: &Connection) -> Result<Vec<(i64, i64)>, StoreError> {
    let mut stmt = conn.prepare_cached(concat!(
        "SELECT id, team_rev FROM memories WHERE ",
        synced_row!(),
        " AND rev <> team_rev"
    ))?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// A row deleted here: uid, namespace, scope, rev at the delete.
pub type DeletedHere = (String, String, String, i64);

/// Rows deleted here after revision `since` whose uid is gone: uid,
/// namespace, scope, rev at the delete; and the newest revision id read.
///
/// # Errors
/// SQLite errors.
pub fn deleted_here_since(
    conn: &Connection,
    since: i64,
) -> Result<(Vec<DeletedHere>, i64), StoreError> {
    let through: i64 = conn
        .prepare_cached("SELECT coalesce(max(rev_id), 0) FROM memory_revisions")?
        .query_row([], |r| r.get(0))?;
    let mut stmt = conn.prepare_cached(
        "SELECT r.uid, r.namespace, r.scope, r.rev FROM memory_revisions r \
         WHERE r.rev_id > ?1 AND r.rev_id <= ?2 AND r.op = 'delete' AND r.uid IS NOT NULL \
         AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.uid = r.uid)",
    )?;
    let rows = stmt
        .query_map((since, through), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok((rows, through))
}
