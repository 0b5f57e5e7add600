//! `add`: the write gate, then insert (and supersede, when asked).
//!
//! The gate's steps that need no database ran in `gate::check_add`.
//! Inside the write transaction come exact dedup, then the near-duplicate
//! check — candidates are the rows sharing a MinHash sketch hash (a few
//! index lookups, never a scan of the namespace), compared by shingle
//! similarity — then the insert.
//!
//! An add that creates a row cannot discard anything, so it goes through on
//! a stale view and says so in `drift` (`strict` excepted); an add merged
//! into an existing row changes that row and is checked by the row rule like
//! an update; an add that supersedes another memory changes that memory and
//! is guarded as destructive.

use memd_proto::{AddRequest, AddResult, Response};
use time::OffsetDateTime;

use crate::drift::policy::WriteKind;
use crate::gate;
use crate::gate::View;
use crate::gate::similar::{self, Verdict};
use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;
use crate::store::memories::{self};

/// Near-duplicate candidates taken per sketch hash: an add compares at most
/// [`similar::SKETCH`] times this many rows.
const CANDIDATES: u32 = 24;

pub(super) async fn handle(
    req: AddRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let now = OffsetDateTime::now_utc();
    let mut new = gate::check_add(&req, &session.who, &shared.config().gate_rules(), now)?;
    session.owns_session_rows |= new.scope == "session";
    let supersedes = req.supersedes;
    // The memory to supersede is looked up even when superseded or archived,
    // so a double supersession is a conflict, not a "not found".
    let mut view = View::namespace(session.namespace(), session.agent(), session.id());
    view.include_superseded = true;
    view.include_archived = true;
    let kind = match supersedes {
        Some(_) => WriteKind::Destructive,
        None => WriteKind::Append,
    };
    // A memory from a thread is an event at its place in the thread, not a
    // statement: it is never merged into another; the same thread position
    // added again is the same memory (a transcript imported twice).
    let dedup = shared.config().gate.dedup && supersedes.is_none() && new.thread.is_none();
    let threshold = shared.config().gate.near_duplicate_threshold;
    let now = crate::clock::format(now);
    // The shingles and the sketch are computed here, off the writer thread:
    // the writer only looks up and compares.
    let mine = similar::profile(&new.content);
    new.sketch = Some(similar::sketch(&mine));
    let mine = (dedup && threshold <= 1.0).then_some(mine);
    let result = super::support::guarded(shared, session, kind, move |ctx, drift| {
        let mut result = AddResult {
            accepted: true,
            id: None,
            deduped: false,
            merged_into: None,
            similar_to: None,
            reason: new.redacted.then(|| "redacted".to_string()),
            drift,
            generation: 0,
        };
        if let Some(old) = supersedes {
            let current =
                memories::get_visible(ctx.conn, old, &view)?.ok_or(StoreError::NotFound(old))?;
            if let Some(by) = current.superseded_by {
                return Err(StoreError::Conflict {
                    message: format!("memory {old} is already superseded by {by}"),
                    current_rev: Some(current.rev),
                });
            }
            ctx.check_row(old, None)?;
        }
        if let (Some(thread), Some(pos)) = (&new.thread, new.thread_pos)
            && let Some(id) = memories::at_thread_position(ctx.conn, &new.namespace, thread, pos)?
        {
            result.id = Some(id);
            result.deduped = true;
            result.reason = Some("duplicate".into());
            result.generation = ctx.generation()?;
            return Ok(result);
        }
        if dedup && let Some(id) = memories::find_duplicate(ctx.conn, &new, &now)? {
            // A merge changes that row: it is checked like an update.
            ctx.check_row(id, None)?;
            memories::merge_into(ctx.conn, id, &new.tags)?;
            result.id = Some(id);
            result.deduped = true;
            result.reason = Some("duplicate".into());
            result.generation = ctx.generation()?;
            return Ok(result);
        }
        if let Some(mine) = &mine {
            let score = |v: &Verdict| match v {
                Verdict::Merge(j) => 2.0 + j,
                Verdict::Similar(j) => 1.0 + j,
                Verdict::Different => 0.0,
            };
            let mut best: Option<(Verdict, i64)> = None;
            let sketch = new.sketch.as_deref().unwrap_or_default();
            for (id, content) in
                memories::sketch_candidates(ctx.conn, &new, sketch, &now, CANDIDATES)?
            {
                let verdict = similar::compare(mine, &similar::profile(&content), threshold);
                if score(&verdict) > best.as_ref().map_or(0.0, |(v, _)| score(v)) {
                    best = Some((verdict, id));
                }
            }
            match best {
                Some((Verdict::Merge(_), id)) => {
                    ctx.check_row(id, None)?;
                    memories::merge_into(ctx.conn, id, &new.tags)?;
                    result.id = Some(id);
                    result.merged_into = Some(id);
                    result.reason = Some("near_duplicate".into());
                    result.generation = ctx.generation()?;
                    return Ok(result);
                }
                Some((Verdict::Similar(_), id)) => {
                    result.similar_to = Some(id);
                    result.reason.get_or_insert_with(|| "similar".into());
                }
                _ => {}
            }
        }
        let id = memories::insert(ctx.conn, &new)?;
        ctx.wrote(id);
        if let Some(old) = supersedes {
            memories::supersede(ctx.conn, old, id)?;
        }
        result.id = Some(id);
        result.generation = ctx.generation()?;
        Ok(result)
    })
    .await?;
    Ok(Response::Added(result))
}
