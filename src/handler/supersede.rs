//! `supersede` and `history`: facts are not overwritten, they are
//! superseded, and the chain can be walked both ways from any member.

use std::collections::{HashMap, HashSet};

use memd_proto::{
    Filter, History, HistoryRequest, Memory, Response, Revision, SupersedeRequest, SupersedeResult,
};
use rusqlite::{Connection, OptionalExtension};
use time::OffsetDateTime;

use crate::drift::policy::WriteKind;
use crate::session::Session;
use crate::state::Shared;
use crate::store::memories::{self, View};
use crate::store::readers::ReadKind;
use crate::store::{StoreError, gate};

/// Longest chain walked.
const MAX_CHAIN: usize = 1_000;

fn everything(session: &Session) -> Result<View, StoreError> {
    let filter = Filter {
        include_superseded: true,
        include_archived: true,
        ..Filter::default()
    };
    gate::view(&filter, &session.who, OffsetDateTime::now_utc())
}

pub(super) async fn handle(
    req: SupersedeRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let view = everything(session)?;
    let SupersedeRequest { old, new } = req;
    if old == new {
        return Err(StoreError::InvalidInput(
            "a memory cannot supersede itself".into(),
        ));
    }
    let generation = super::guarded(shared, session, WriteKind::Destructive, move |ctx, _| {
        let o = memories::get_visible(ctx.conn, old, &view)?.ok_or(StoreError::NotFound(old))?;
        let n = memories::get_visible(ctx.conn, new, &view)?.ok_or(StoreError::NotFound(new))?;
        // Both rows are the request's: the one replaced, and the one it
        // points to instead.
        ctx.check_row(old, None)?;
        ctx.check_row(new, None)?;
        if let Some(by) = o.superseded_by {
            return Err(StoreError::Conflict {
                message: format!("memory {old} is already superseded by {by}"),
                current_rev: Some(o.rev),
            });
        }
        if let Some(by) = n.superseded_by {
            return Err(StoreError::Conflict {
                message: format!(
                    "memory {new} is itself superseded by {by}; supersede with the active one"
                ),
                current_rev: Some(n.rev),
            });
        }
        if forward_chain(ctx.conn, new)?.contains(&old) {
            return Err(StoreError::Conflict {
                message: format!("memory {old} supersedes {new} already: that would be a cycle"),
                current_rev: Some(o.rev),
            });
        }
        memories::supersede(ctx.conn, old, new)?;
        ctx.generation()
    })
    .await?;
    Ok(Response::Superseded(SupersedeResult {
        old,
        new,
        generation,
    }))
}

/// Ids reached by following `superseded_by` from `id` (cycle-safe).
fn forward_chain(conn: &Connection, id: i64) -> Result<Vec<i64>, StoreError> {
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

pub(super) async fn history(
    req: HistoryRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let view = everything(session)?;
    let id = req.id;
    let read = shared
        .store
        .readers
        .read(ReadKind::Client, move |conn| walk(conn, id, &view))
        .await?;
    let (chain, revisions) = read.value;
    session.saw(read.generation, chain.iter().map(|m| (m.id, m.rev)));
    Ok(Response::History(History {
        chain,
        revisions,
        generation: read.generation,
    }))
}

/// The chain through `id`: every memory linked by supersession either way,
/// oldest first (the farthest from the active end first).
fn walk(
    conn: &Connection,
    id: i64,
    view: &View,
) -> Result<(Vec<Memory>, Vec<Revision>), StoreError> {
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
    Ok((chain, revisions))
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
