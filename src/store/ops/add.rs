//! An add: exact dedup, then the near-duplicate check — candidates are the
//! rows sharing a MinHash sketch hash (a few index lookups, never a scan
//! of the namespace), placed by the gate's rule ([`similar::place`]) —
//! then the insert, and the supersession it asks for.
//!
//! An add that creates a row cannot discard anything, so it goes through
//! on a stale view and says so in `drift` (`strict` excepted); an add
//! merged into an existing row changes that row and is checked by the row
//! rule like an update; an add that supersedes another memory changes that
//! memory and is guarded as destructive.

use memd_proto::AddResult;

use super::Written;
use crate::gate::similar::{self, Placement, Profile};
use crate::gate::{NewMemory, View};
use crate::store::writer::Sharing;
use crate::store::{Guard, Store, StoreError, memories};
use crate::sync;

/// Near-duplicate candidates taken per sketch hash: an add compares at
/// most [`similar::SKETCH`] times this many rows.
const CANDIDATES: u32 = 24;

/// An add as the gate let it through.
#[derive(Debug)]
pub struct AddOp {
    /// The memory (its sketch computed already, off the writer thread).
    pub new: NewMemory,
    /// The memory it supersedes.
    pub supersedes: Option<i64>,
    /// What the session may see (to find the memory it supersedes,
    /// superseded and archived rows included, so a double supersession is
    /// a conflict, not a "not found").
    pub view: View,
    /// Merge an exact duplicate (same dedup key) into the existing row.
    pub dedup: bool,
    /// The new text's shingles and the Jaccard threshold, when near
    /// duplicates are looked for.
    pub near: Option<(Profile, f64)>,
    /// Now, in the stored time format (expiry of the candidates).
    pub now: String,
}

impl Store {
    /// Adds a memory for a session (see the module's rules).
    ///
    /// # Errors
    /// [`StoreError::Drift`] for a refused write, `NotFound` / `Conflict`
    /// for the memory it supersedes, SQLite errors.
    pub async fn add(&self, guard: Guard, op: AddOp) -> Result<Written<AddResult>, StoreError> {
        let profiles = self.profiles.clone();
        self.guarded(guard, Sharing::Proposable, move |ctx, drift| {
            let AddOp {
                new,
                supersedes,
                view,
                dedup,
                near,
                now,
            } = &op;
            let (supersedes, dedup) = (*supersedes, *dedup);
            let mut result = AddResult {
                accepted: true,
                id: None,
                deduped: false,
                merged_into: None,
                similar_to: None,
                reason: new.redacted.then(|| "redacted".to_string()),
                drift,
                generation: 0,
                proposal: None,
            };
            if let Some(old) = supersedes {
                let current =
                    memories::get_visible(ctx.conn, old, view)?.ok_or(StoreError::NotFound(old))?;
                if let Some(by) = current.superseded_by {
                    return Err(StoreError::Conflict {
                        message: format!("memory {old} is already superseded by {by}"),
                        current_rev: Some(current.rev),
                    });
                }
                ctx.check_row(old, None)?;
            }
            // A memory from a thread is an event at its place in the
            // thread: the same position added again is the same memory (a
            // transcript imported twice).
            if let (Some(thread), Some(pos)) = (&new.row.thread, new.row.thread_pos)
                && let Some(id) =
                    memories::at_thread_position(ctx.conn, &new.row.namespace, thread, pos)?
            {
                result.id = Some(id);
                result.deduped = true;
                result.reason = Some("duplicate".into());
                result.generation = ctx.generation()?;
                return Ok(result);
            }
            if dedup && let Some(id) = memories::find_duplicate(ctx.conn, new, now)? {
                // A merge changes that row: it is checked like an update.
                ctx.check_row(id, None)?;
                memories::merge_into(ctx.conn, id, &new.row)?;
                result.id = Some(id);
                result.deduped = true;
                result.reason = Some("duplicate".into());
                result.generation = ctx.generation()?;
                return Ok(result);
            }
            if let Some((mine, threshold)) = near {
                let sketch = new.sketch.as_deref().unwrap_or_default();
                let candidates =
                    memories::sketch_candidates(ctx.conn, new, sketch, now, CANDIDATES)?;
                let placement = {
                    let mut held = sync::lock(&profiles);
                    similar::place(
                        mine,
                        candidates.iter().map(|(id, c)| (*id, held.of(*id, c))),
                        *threshold,
                    )
                };
                match placement {
                    Placement::Merge(id) => {
                        ctx.check_row(id, None)?;
                        memories::merge_into(ctx.conn, id, &new.row)?;
                        result.id = Some(id);
                        result.merged_into = Some(id);
                        result.reason = Some("near_duplicate".into());
                        result.generation = ctx.generation()?;
                        return Ok(result);
                    }
                    Placement::New {
                        similar_to: Some(id),
                    } => {
                        result.similar_to = Some(id);
                        result.reason.get_or_insert_with(|| "similar".into());
                    }
                    Placement::New { similar_to: None } => {}
                }
            }
            let id = memories::insert(ctx.conn, new)?;
            ctx.wrote(id);
            if let Some(old) = supersedes {
                memories::supersede(ctx.conn, old, id)?;
            }
            result.id = Some(id);
            result.generation = ctx.generation()?;
            Ok(result)
        })
        .await
    }
}
