//! Lexical search over the FTS5 index.
//!
//! In the default (plain) syntax every word of the query is literal: the text
//! is cut into words the way the `unicode61` tokenizer cuts it, and each word
//! becomes a quoted FTS5 string, OR-ed with the others, so no character a
//! user types (`"`, `*`, `NEAR(`, `col:`, `-x`) is ever read as an operator.
//! BM25 ranks rows that match more (and rarer) words first. `--syntax fts`
//! passes the query to FTS5 as written, and its syntax errors come back as
//! invalid input.

use rusqlite::types::Value;
use rusqlite::{Connection, params_from_iter};

use memd_proto::{Hit, MatchKind};

use super::StoreError;
use super::memories::{COLUMN_COUNT, COLUMNS, View, row_to_memory};

/// Builds the FTS5 query for plain text: each word quoted, OR-ed. `None`
/// when the text has no word at all (nothing can match).
pub fn plain_query(text: &str) -> Option<String> {
    let words: Vec<String> = text
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| format!("\"{w}\""))
        .collect();
    if words.is_empty() {
        None
    } else {
        Some(words.join(" OR "))
    }
}

/// Runs an FTS5 query with the view's filters; best first.
///
/// # Errors
/// [`StoreError::InvalidInput`] when FTS5 refuses the query (only possible
/// with the FTS syntax), SQLite errors otherwise.
pub fn lexical(
    conn: &Connection,
    fts_query: &str,
    view: &View,
    limit: u32,
) -> Result<Vec<Hit>, StoreError> {
    let mut params = vec![Value::Text(fts_query.to_string())];
    // CROSS JOIN keeps the FTS index the outer loop: a plain JOIN lets the
    // planner walk the whole namespace and test MATCH per row.
    let mut sql = format!(
        "SELECT {COLUMNS}, bm25(memories_fts, 1.0, 2.0) AS rank \
         FROM memories_fts CROSS JOIN memories m ON m.id = memories_fts.rowid \
         WHERE memories_fts MATCH ?1"
    );
    view.push_conditions(&mut sql, &mut params);
    params.push(Value::Integer(i64::from(limit)));
    sql.push_str(&format!(
        " ORDER BY rank, m.id DESC LIMIT ?{}",
        params.len()
    ));
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(params), |row| {
        let memory = row_to_memory(row)?;
        let rank: f64 = row.get(COLUMN_COUNT)?;
        Ok(Hit {
            memory,
            // bm25() is lower-is-better and negative; report higher-is-better.
            score: -rank,
            matched: MatchKind::Lexical,
            explain: None,
        })
    });
    let hits = rows.and_then(|r| r.collect::<Result<Vec<_>, _>>());
    hits.map_err(|e| match fts_error(&e) {
        Some(msg) => StoreError::InvalidInput(format!("invalid FTS query: {msg}")),
        None => StoreError::from(e),
    })
}

/// The message of an error raised by FTS5 for a bad query.
fn fts_error(e: &rusqlite::Error) -> Option<String> {
    let rusqlite::Error::SqliteFailure(_, Some(msg)) = e else {
        return None;
    };
    let fts = msg.starts_with("fts5:")
        || msg.contains("no such column")
        || msg.contains("unknown special query")
        || msg.contains("malformed MATCH");
    fts.then(|| msg.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_words_are_quoted() {
        assert_eq!(
            plain_query("deploy script").as_deref(),
            Some("\"deploy\" OR \"script\"")
        );
        assert_eq!(
            plain_query("NEAR(a b) col:x -y \"z*").as_deref(),
            Some("\"NEAR\" OR \"a\" OR \"b\" OR \"col\" OR \"x\" OR \"y\" OR \"z\"")
        );
        assert_eq!(plain_query("\"* -- ()"), None);
        assert_eq!(plain_query("café").as_deref(), Some("\"café\""));
    }
}
