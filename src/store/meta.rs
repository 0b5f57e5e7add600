//! `memory_meta`: the database's own facts, one value per key — the
//! generation counter (moved by the schema's triggers), the daemon's last
//! generation and the external epoch (ARCHITECTURE.md "Drift"), the
//! embedding model lock, the last decay, the database's identity. Every read
//! and write of the table from Rust goes through these functions.

use rusqlite::{Connection, OptionalExtension};

use super::StoreError;

/// Reads one value.
///
/// # Errors
/// SQLite errors.
pub fn text(conn: &Connection, key: &str) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT value FROM memory_meta WHERE key = ?1")?
        .query_row([key], |r| r.get(0))
        .optional()?)
}

/// Reads one value as a number (`None` when missing or not a number).
///
/// # Errors
/// SQLite errors.
pub fn number(conn: &Connection, key: &str) -> Result<Option<u64>, StoreError> {
    Ok(text(conn, key)?.and_then(|s| s.parse().ok()))
}

/// Sets one value. A key already there is updated in place: a replace
/// would delete the row and insert it again, writing the key's index page
/// too, and the daemon sets its generation in every commit.
///
/// # Errors
/// SQLite errors.
pub fn set(conn: &Connection, key: &str, value: &str) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO memory_meta (key, value) VALUES (?1, ?2) \
         ON CONFLICT (key) DO UPDATE SET value = excluded.value",
    )?
    .execute((key, value))?;
    Ok(())
}

/// Sets one value to a number.
///
/// # Errors
/// SQLite errors.
pub fn set_number(conn: &Connection, key: &str, value: u64) -> Result<(), StoreError> {
    set(conn, key, &value.to_string())
}

/// Reads the generation counter.
///
/// # Errors
/// SQLite errors (a missing row reads as 0).
pub fn read_generation(conn: &Connection) -> Result<u64, StoreError> {
    let v: Option<i64> = conn
        .prepare_cached("SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'")?
        .query_row([], |r| r.get(0))
        .optional()?;
    Ok(u64::try_from(v.unwrap_or(0)).unwrap_or(0))
}

/// Sets the generation counter (only to move it forward past a change the
/// triggers did not count: a repair, a file put back).
///
/// # Errors
/// SQLite errors.
pub fn set_generation(conn: &Connection, g: u64) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE memory_meta SET value = ?1 WHERE key = 'generation'")?
        .execute([g.to_string()])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_round_trip_and_the_generation_reads_as_a_number() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE memory_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             INSERT INTO memory_meta VALUES ('generation', '0');",
        )
        .unwrap();
        assert_eq!(text(&conn, "embed_model").unwrap(), None);
        set(&conn, "embed_model", "bag-16").unwrap();
        assert_eq!(
            text(&conn, "embed_model").unwrap().as_deref(),
            Some("bag-16")
        );
        assert_eq!(number(&conn, "embed_model").unwrap(), None);
        set_number(&conn, "external_epoch", 12).unwrap();
        assert_eq!(number(&conn, "external_epoch").unwrap(), Some(12));
        set_generation(&conn, 41).unwrap();
        assert_eq!(read_generation(&conn).unwrap(), 41);
        conn.execute("DELETE FROM memory_meta WHERE key = 'generation'", [])
            .unwrap();
        assert_eq!(read_generation(&conn).unwrap(), 0);
    }
}
