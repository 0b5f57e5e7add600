//! What `check` and `status` read about the database itself: integrity,
//! the FTS index's sync, the database's identity.

use rusqlite::Connection;

use super::{StoreError, read_generation, schema};

/// The result of the integrity checks.
#[derive(Debug, Clone)]
pub struct Integrity {
    /// `PRAGMA integrity_check`'s lines (`ok` alone when sound).
    pub integrity: Vec<String>,
    /// Rows in `memories`.
    pub memories: i64,
    /// Rows in the FTS index.
    pub fts_rows: i64,
    /// Rows whose FTS entry is missing or differs.
    pub out_of_sync: i64,
    /// FTS entries without a row.
    pub orphans: i64,
    /// Required schema objects (triggers, indexes) that are missing.
    pub missing: Vec<String>,
    /// The schema version.
    pub version: i64,
    /// The generation read.
    pub generation: u64,
}

/// Runs SQLite's integrity check, the FTS sync counts and the schema's
/// object check.
///
/// # Errors
/// SQLite errors.
pub fn integrity(conn: &Connection) -> Result<Integrity, StoreError> {
    // FTS5's integrity method on a read-only connection checks the
    // index structure the connection cached at its last FTS query,
    // not the one committed since, and reports a checksum mismatch
    // that is not there (SQLite 3.54). Any scan of the table reloads
    // the structure first.
    conn.query_row(
        "SELECT count(*) FROM (SELECT rowid FROM memories_fts LIMIT 1)",
        [],
        |_| Ok(()),
    )?;
    let mut stmt = conn.prepare("PRAGMA integrity_check")?;
    let integrity = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    let (memories, fts_rows, out_of_sync, orphans): (i64, i64, i64, i64) = conn.query_row(
        "SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM memories_fts), \
         (SELECT count(*) FROM memories m LEFT JOIN memories_fts f ON f.rowid = m.id \
          WHERE f.rowid IS NULL OR f.content IS NOT m.content \
          OR f.subject IS NOT m.subject), \
         (SELECT count(*) FROM memories_fts f \
          WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = f.rowid))",
        [],
        |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
    )?;
    Ok(Integrity {
        integrity,
        memories,
        fts_rows,
        out_of_sync,
        orphans,
        missing: schema::missing_objects(conn)?,
        version: schema::current_version(conn)?,
        generation: read_generation(conn)?,
    })
}

/// The database's identity (`memory_meta` key `db_uuid`).
///
/// # Errors
/// SQLite errors.
pub fn db_uuid(conn: &Connection) -> Result<String, StoreError> {
    super::meta::text(conn, "db_uuid")?.ok_or_else(|| {
        StoreError::Sqlite(super::Cause::msg(
            "the database has no db_uuid in memory_meta",
        ))
    })
}

/// Copies the database `src` has open to a new file at `target` with the
/// backup API, all pages in one step (one consistent read while writes go
/// on); returns the copy's generation.
///
/// # Errors
/// SQLite and file errors.
pub fn copy_to(src: &Connection, target: &std::path::Path) -> Result<u64, StoreError> {
    let mut dst = Connection::open(target)?;
    {
        let backup = rusqlite::backup::Backup::new(src, &mut dst)?;
        backup.step(-1)?;
    }
    let g = read_generation(&dst)?;
    dst.close().map_err(|(_, e)| StoreError::from(e))?;
    Ok(g)
}
