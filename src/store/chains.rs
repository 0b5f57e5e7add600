//! Supersession chains: the rows reached from one row by `superseded_by`,
//! either way, and their revisions.

use std::collections::{HashMap, HashSet};

use memd_proto::{Memory, Revision, VersionAuthor};
use rusqlite::{Connection, OptionalExtension};

use super::StoreError;
use super::memories::{self};
use crate::gate::View;

/// Longest chain walked.
pub const MAX_CHAIN: usize = 1_000;

/// Ids reached by following `superseded_by` from `id` (cycle-safe).
///
/// # Errors
/// SQLite errors.
pub fn forward_chain(conn: &Connection, id: i64) -> Result<Vec<i64>, StoreError> {
    let mut stmt = conn.prepare_cached("SELECT superseded_by FROM memories WHERE id = ?1")?;
    let mut seen = vec![id];
    let mut at = id;
    while seen.len() < MAX_CHAIN {
        let next: Option<i64> = stmt.query_row([at], |r| r.get(0)).optional()?.flatten();
        match next {
            Some(n) if !seen.contains(&n) => {
                seen.push(n);
                at = n;
            }
            _ => break,
        }
    }
    Ok(seen)
}

/// The chain through `id`: every memory linked by supersession either way,
/// oldest first (the farthest from the active end first).
///
/// # Errors
/// [`StoreError::NotFound`] when `id` is not visible; SQLite errors.
pub fn walk(conn: &Connection, id: i64, view: &View) -> Result<Chain, StoreError> {
    let start = memories::get_visible(conn, id, view)?.ok_or(StoreError::NotFound(id))?;
    let mut members: HashMap<i64, Memory> = HashMap::new();
    let mut queue = vec![start.id];
    members.insert(start.id, start);
    let mut back = conn.prepare_cached("SELECT id FROM memories WHERE superseded_by = ?1")?;
    while let Some(at) = queue.pop() {
        if members.len() >= MAX_CHAIN {
            break;
        }
        let mut next: Vec<i64> = back
            .query_map([at], |r| r.get(0))?
            .collect::<Result<Vec<i64>, _>>()?;
        if let Some(by) = members.get(&at).and_then(|m| m.superseded_by) {
            next.push(by);
        }
        for n in next {
            if members.contains_key(&n) {
                continue;
            }
            // Only what the session may see joins the chain.
            if let Some(m) = memories::get_visible(conn, n, view)? {
                members.insert(n, m);
                queue.push(n);
            }
        }
    }
    let steps = |m: &Memory| {
        let mut seen = HashSet::new();
        let mut at = m;
        let mut n = 0;
        while let Some(next) = at.superseded_by.and_then(|b| members.get(&b)) {
            if !seen.insert(next.id) {
                break;
            }
            at = next;
            n += 1;
        }
        n
    };
    let mut chain: Vec<Memory> = members.values().cloned().collect();
    chain.sort_by_key(|m| (std::cmp::Reverse(steps(m)), m.id));
    let ids: Vec<i64> = chain.iter().map(|m| m.id).collect();
    let revisions = revisions_of(conn, &ids)?;
    let authors = memories::authors_of(conn, &ids)?;
    Ok(Chain {
        members: chain,
        revisions,
        authors,
    })
}

/// A supersession chain and what is kept of its memories' versions.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// Its memories, from the first superseded one to the active one.
    pub members: Vec<Memory>,
    /// Their earlier versions, oldest first.
    pub revisions: Vec<Revision>,
    /// Who made each version memd recorded.
    pub authors: Vec<VersionAuthor>,
}

fn revisions_of(conn: &Connection, ids: &[i64]) -> Result<Vec<Revision>, StoreError> {
    let marks = vec!["?"; ids.len()].join(", ");
    let sql = format!(
        "SELECT rev_id, memory_id, op, rev, content, subject, category, tier, status, metadata, \
         superseded_by, updated_at, recorded_at, generation, tags FROM memory_revisions \
         WHERE memory_id IN ({marks}) ORDER BY rev_id"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt
        .query_map(rusqlite::params_from_iter(ids), |r| {
            Ok(Revision {
                rev_id: r.get(0)?,
                memory_id: r.get(1)?,
                op: r.get(2)?,
                rev: r.get(3)?,
                content: r.get(4)?,
                subject: r.get(5)?,
                category: r.get(6)?,
                tier: r.get(7)?,
                status: r.get(8)?,
                metadata: r.get(9)?,
                superseded_by: r.get(10)?,
                updated_at: r.get(11)?,
                recorded_at: r.get(12)?,
                generation: r.get(13)?,
                tags: r
                    .get::<_, Option<String>>(14)?
                    .map(|t| t.lines().map(str::to_string).collect()),
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}
