//! Lexical search: FTS5 BM25 over content and subject.

use rusqlite::types::Value;
use rusqlite::{Connection, params_from_iter};

use super::super::StoreError;
use super::super::memories::View;
use super::Candidate;

/// Up to `fetch` rows matching an FTS5 query under the view's filters, best
/// BM25 first, with their BM25 (higher is better). Only what ranking needs
/// is read; full rows are loaded for the hits that make the cut.
///
/// # Errors
/// [`StoreError::InvalidInput`] when FTS5 refuses the query (only possible
/// with the FTS syntax), SQLite errors otherwise.
pub fn candidates(
    conn: &Connection,
    fts_query: &str,
    view: &View,
    fetch: u32,
) -> Result<Vec<Candidate>, StoreError> {
    let mut params = vec![Value::Text(fts_query.to_string())];
    // CROSS JOIN keeps the FTS index the outer loop: a plain JOIN lets the
    // planner walk the whole namespace and test MATCH per row.
    let mut sql = String::from(
        "SELECT m.id, m.content, m.subject, m.category, m.pinned, m.updated_at, \
         bm25(memories_fts, 1.0, 2.0) AS rank \
         FROM memories_fts CROSS JOIN memories m ON m.id = memories_fts.rowid \
         WHERE memories_fts MATCH ?1",
    );
    view.push_conditions(&mut sql, &mut params);
    params.push(Value::Integer(i64::from(fetch)));
    sql.push_str(&format!(
        " ORDER BY rank, m.id DESC LIMIT ?{}",
        params.len()
    ));
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(params), |row| {
        let rank: f64 = row.get(6)?;
        Ok(Candidate {
            id: row.get(0)?,
            content: row.get::<_, Option<String>>(1)?.unwrap_or_default(),
            subject: row.get(2)?,
            category: row.get(3)?,
            pinned: row.get::<_, i64>(4)? != 0,
            updated_at: row.get(5)?,
            // bm25() is lower-is-better and negative; report higher-is-better.
            raw: -rank,
        })
    });
    let hits = rows.and_then(|r| r.collect::<Result<Vec<_>, _>>());
    hits.map_err(|e| match fts_error(&e) {
        Some(msg) => StoreError::InvalidInput(format!("invalid FTS query: {msg}")),
        None => StoreError::from(e),
    })
}

/// The message of an error raised by FTS5 for a bad query: a plain
/// `SQLITE_ERROR` while running the MATCH (syntax errors, unterminated
/// strings, unknown columns). I/O and corruption errors have their own codes
/// and stay internal errors.
fn fts_error(e: &rusqlite::Error) -> Option<String> {
    let rusqlite::Error::SqliteFailure(f, Some(msg)) = e else {
        return None;
    };
    (f.code == rusqlite::ErrorCode::Unknown).then(|| msg.clone())
}
