//! Where a row came from: its provenance rows (`memory_sources`).

use rusqlite::Connection;

use crate::store::StoreError;

/// Makes `sources` (origin first) row `id`'s sources, replacing what it
/// held (an imported row).
///
/// # Errors
/// SQLite errors.
pub fn set_sources(
    conn: &Connection,
    id: i64,
    sources: &[memd_proto::Origin],
) -> Result<(), StoreError> {
    if sources.is_empty() {
        return Ok(());
    }
    conn.prepare_cached("DELETE FROM memory_sources WHERE memory_id = ?1")?
        .execute([id])?;
    for (n, o) in sources.iter().enumerate() {
        write_source(conn, id, n, o)?;
    }
    Ok(())
}

/// Records the sources of `sources` (origin first) that row `id` does not
/// hold yet (a merge's added one).
///
/// # Errors
/// SQLite errors.
pub fn add_sources(
    conn: &Connection,
    id: i64,
    sources: &[memd_proto::Origin],
) -> Result<(), StoreError> {
    let held: i64 = conn
        .prepare_cached("SELECT count(*) FROM memory_sources WHERE memory_id = ?1")?
        .query_row([id], |r| r.get(0))?;
    let held = usize::try_from(held).unwrap_or(0);
    for (n, o) in sources.iter().enumerate().skip(held.max(1)) {
        write_source(conn, id, n, o)?;
    }
    Ok(())
}

/// Records source `n` of row `id` (0: its origin).
///
/// # Errors
/// SQLite errors.
pub fn write_source(
    conn: &Connection,
    id: i64,
    n: usize,
    o: &memd_proto::Origin,
) -> Result<(), StoreError> {
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "INSERT OR REPLACE INTO memory_sources \
         (memory_id, n, source, via, agent, session, machine, role, at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, \
         coalesce(nullif(?9, ''), (SELECT created_at FROM memories WHERE id = ?1), \
             strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))",
    )?
    .execute(rusqlite::params![
        id, n, o.source, o.via, o.agent, o.session, o.machine, o.role, o.at
    ])?;
    Ok(())
}
