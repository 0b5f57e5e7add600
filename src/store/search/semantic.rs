//! Semantic candidates: cosine between the query's vector and the stored
//! vectors of the rows the view may see.
//!
//! Filters apply before ranking — a filtered search returns the best
//! matches among the rows that pass, never fewer because better ones were
//! filtered out. The index scans the namespaces the view reads; the best
//! entries are then checked against the view's other conditions in SQL (the
//! same read transaction as the rest of the search), in score order, in
//! growing rounds until enough pass. When the filters are so selective that
//! a few thousand best entries do not yield enough, the visible ids are
//! selected in SQL and only their vectors are scored.

use std::sync::RwLock;

use rusqlite::types::Value;
use rusqlite::{Connection, params_from_iter};

use super::super::StoreError;
use super::Candidate;
use crate::embed::vectors::{Index, Mix, Probe, Spread};
use crate::gate::{Namespaces, View};
use crate::sync;

/// What semantic search needs: the query's vector and the index.
#[derive(Debug, Clone)]
pub struct Semantic<'a> {
    /// The query's unit vector.
    pub vector: &'a [f32],
    /// Every current vector.
    pub index: &'a RwLock<Index>,
    /// How a threaded memory's neighbours count with it.
    pub mix: Mix,
    /// The least relevance (cosine) of a hit returned
    /// and of the best match ([`super::rank::RankConfig::floors_for`]).
    pub floor: super::rank::Floor,
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
/// cosine (floored at 0) as the raw score; and the spread of the cosines of
/// every vector of the namespaces searched (how far the best stands out).
///
/// # Errors
/// SQLite errors.
pub fn candidates(
    conn: &Connection,
    view: &View,
    s: &Semantic<'_>,
    fetch: u32,
) -> Result<(Vec<Candidate>, Spread), StoreError> {
    let (top, spread) = best_visible(conn, view, s, fetch as usize)?;
    let mut rows = details(conn, &top.iter().map(|(id, _)| *id).collect::<Vec<_>>())?;
    let mut out = Vec::with_capacity(top.len());
    for (id, cosine) in top {
        if let Some(mut c) = rows.remove(&id) {
            c.raw = f64::from(cosine.max(0.0));
            out.push(c);
        }
    }
    Ok((out, spread))
}

/// Entries checked against the view per round, at first (× 8 each round).
const FIRST_ROUND: usize = 64;
/// Past this many checked entries, select the visible ids in SQL instead.
const MOST_CHECKED: usize = 4_096;

/// The `k` visible ids closest to the query, best first, and the spread of
/// the namespaces' cosines.
fn best_visible(
    conn: &Connection,
    view: &View,
    s: &Semantic<'_>,
    k: usize,
) -> Result<(Vec<(i64, f32)>, Spread), StoreError> {
    let probe = Probe::new(s.vector);
    let namespaces = match &view.namespaces {
        Namespaces::Only(list) => Some(list.as_slice()),
        Namespaces::All => None,
    };
    let mut round = FIRST_ROUND.max(k * 2);
    let mut spread = None;
    loop {
        let (top, scanned) = {
            let index = sync::read(s.index);
            index.top_with_spread(&probe, namespaces, round, s.mix)
        };
        let spread = *spread.get_or_insert(scanned);
        let exhausted = top.len() < round;
        let passing = check(conn, view, &top)?;
        let mut out: Vec<(i64, f32)> = top
            .into_iter()
            .filter(|(id, _)| passing.contains(id))
            .collect();
        if out.len() >= k || exhausted {
            out.truncate(k);
            return Ok((out, spread));
        }
        if round >= MOST_CHECKED {
            let ids = visible_ids(conn, view)?;
            let index = sync::read(s.index);
            return Ok((index.top_among(&probe, &ids, k, s.mix), spread));
        }
        round *= 8;
    }
}

/// Which of these ids the view may see.
fn check(
    conn: &Connection,
    view: &View,
    top: &[(i64, f32)],
) -> Result<std::collections::HashSet<i64>, StoreError> {
    if top.is_empty() {
        return Ok(Default::default());
    }
    let list: Vec<String> = top.iter().map(|(id, _)| id.to_string()).collect();
    let mut sql =
        String::from("SELECT m.id FROM memories m WHERE m.id IN (SELECT value FROM json_each(?1))");
    let mut params = vec![Value::Text(format!("[{}]", list.join(",")))];
    view.push_conditions(&mut sql, &mut params);
    let mut stmt = conn.prepare_cached(&sql)?;
    let ids = stmt
        .query_map(params_from_iter(params), |r| r.get(0))?
        .collect::<Result<std::collections::HashSet<i64>, _>>()?;
    Ok(ids)
}

/// Approximate cosine of one row with the query (`None`: no vector yet).
pub fn cosine(s: &Semantic<'_>, probe: &Probe, id: i64) -> Option<f64> {
    let index = sync::read(s.index);
    index.score(probe, id, s.mix).map(|c| f64::from(c.max(0.0)))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embed::vectors::Index;

    fn unit(i: usize, dim: usize) -> Vec<f32> {
        // At angle i × 90° / 6000 from the query: closer for smaller i.
        let a = i as f32 * std::f32::consts::FRAC_PI_2 / 6_000.0;
        let mut v = vec![0.0f32; dim];
        v[0] = a.cos();
        v[1] = a.sin();
        v
    }

    /// A filter that only 3 of 6,000 rows pass — far below the best few
    /// thousand entries — still gets exactly those 3, best first; an
    /// unfiltered search gets the global best; other namespaces never come
    /// back.
    #[test]
    fn selective_filters_fall_back_to_the_visible_ids() {
        let (_dir, mut conn) = crate::store::test_db();
        let dim = 8;
        let mut index = Index::new(dim);
        let tx = conn.transaction().unwrap();
        for i in 0..6_000usize {
            let ns = if i % 10 == 9 { "other" } else { "default" };
            tx.execute(
                "INSERT INTO memories (id, namespace, content) VALUES (?1, ?2, 'x')",
                (i as i64 + 1, ns),
            )
            .unwrap();
            index.upsert(i as i64 + 1, ns, &unit(i, dim), None);
        }
        for id in [5_001, 5_501, 5_991] {
            tx.execute(
                "INSERT INTO memory_tags (memory_id, tag) VALUES (?1, 'rare')",
                [id],
            )
            .unwrap();
        }
        tx.commit().unwrap();
        let index = std::sync::RwLock::new(index);
        let q = unit(0, dim);
        let s = Semantic {
            vector: &q,
            index: &index,
            mix: Mix::default(),
            floor: Default::default(),
        };
        let mut view = View::namespace("default", "a", "s");
        // (Neighbors a hundredth of a degree apart may swap under int8.)
        let mut all: Vec<i64> = best_visible(&conn, &view, &s, 5)
            .unwrap()
            .0
            .iter()
            .map(|x| x.0)
            .collect();
        all.sort_unstable();
        assert_eq!(all, vec![1, 2, 3, 4, 5]);
        view.tags = vec!["rare".into()];
        let rare = best_visible(&conn, &view, &s, 5).unwrap().0;
        assert_eq!(
            rare.iter().map(|x| x.0).collect::<Vec<_>>(),
            vec![5_001, 5_501, 5_991]
        );
        let other = View::namespace("other", "a", "s");
        let got = best_visible(&conn, &other, &s, 3).unwrap().0;
        assert_eq!(
            got.iter().map(|x| x.0).collect::<Vec<_>>(),
            vec![10, 20, 30]
        );
    }
}
