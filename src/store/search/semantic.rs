//! Semantic candidates: cosine between the query's vector and the stored
//! vectors of the rows the view may see.
//!
//! Filters apply before ranking: the view's conditions select the visible
//! ids in SQL (the same read transaction as the rest of the search), and
//! only their vectors are scored — a filtered search returns the best
//! matches among the rows that pass, never fewer because better ones were
//! filtered out.

use std::sync::RwLock;

use rusqlite::types::Value;
use rusqlite::{Connection, params_from_iter};

use super::super::StoreError;
use super::super::memories::View;
use super::Candidate;
use crate::embed::vectors::{Index, Probe};

/// What semantic search needs: the query's vector and the index.
#[derive(Debug, Clone)]
pub struct Semantic<'a> {
    /// The query's unit vector.
    pub vector: &'a [f32],
    /// Every current vector.
    pub index: &'a RwLock<Index>,
}

/// Ids of the rows the view may see.
///
/// # Errors
/// SQLite errors.
pub fn visible_ids(conn: &Connection, view: &View) -> Result<Vec<i64>, StoreError> {
    let mut sql = String::from("SELECT m.id FROM memories m WHERE 1");
    let mut params = Vec::new();
    view.push_conditions(&mut sql, &mut params);
    let mut stmt = conn.prepare_cached(&sql)?;
    let ids = stmt
        .query_map(params_from_iter(params), |r| r.get(0))?
        .collect::<Result<Vec<i64>, _>>()?;
    Ok(ids)
}

/// The `fetch` visible rows closest to the query, best first, with their
/// cosine (floored at 0) as the raw score.
///
/// # Errors
/// SQLite errors.
pub fn candidates(
    conn: &Connection,
    view: &View,
    s: &Semantic<'_>,
    fetch: u32,
) -> Result<Vec<Candidate>, StoreError> {
    let ids = visible_ids(conn, view)?;
    let top = {
        let index = s.index.read().unwrap_or_else(|e| e.into_inner());
        index.top_among(&Probe::new(s.vector), &ids, fetch as usize)
    };
    let mut rows = details(conn, &top.iter().map(|(id, _)| *id).collect::<Vec<_>>())?;
    let mut out = Vec::with_capacity(top.len());
    for (id, cosine) in top {
        if let Some(mut c) = rows.remove(&id) {
            c.raw = f64::from(cosine.max(0.0));
            out.push(c);
        }
    }
    Ok(out)
}

/// Approximate cosine of one row with the query (`None`: no vector yet).
pub fn cosine(s: &Semantic<'_>, probe: &Probe, id: i64) -> Option<f64> {
    let index = s.index.read().unwrap_or_else(|e| e.into_inner());
    index.score(probe, id).map(|c| f64::from(c.max(0.0)))
}

/// What ranking needs of these rows.
fn details(
    conn: &Connection,
    ids: &[i64],
) -> Result<std::collections::HashMap<i64, Candidate>, StoreError> {
    let mut out = std::collections::HashMap::with_capacity(ids.len());
    if ids.is_empty() {
        return Ok(out);
    }
    let marks = vec!["?"; ids.len()].join(", ");
    let sql = format!(
        "SELECT m.id, m.content, m.subject, m.category, m.pinned, m.updated_at FROM memories m \
         WHERE m.id IN ({marks})"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let params: Vec<Value> = ids.iter().map(|i| Value::Integer(*i)).collect();
    let rows = stmt.query_map(params_from_iter(params), |row| {
        Ok(Candidate {
            id: row.get(0)?,
            content: row.get::<_, Option<String>>(1)?.unwrap_or_default(),
            subject: row.get(2)?,
            category: row.get(3)?,
            pinned: row.get::<_, i64>(4)? != 0,
            updated_at: row.get(5)?,
            raw: 0.0,
        })
    })?;
    for c in rows {
        let c = c?;
        out.insert(c.id, c);
    }
    Ok(out)
}
