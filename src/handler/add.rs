//! `add`: the write gate, then insert (and supersede, when asked).
//!
//! An add cannot discard anything, so under the `external` policy it goes
//! through on a stale view and says so in `drift`; an add that supersedes
//! another memory changes that memory and is guarded as destructive.

use memd_proto::{AddRequest, AddResult, Response};
use time::OffsetDateTime;

use crate::daemon::Shared;
use crate::drift::policy::WriteKind;
use crate::session::Session;
use crate::store::memories::{self, View};
use crate::store::{StoreError, gate};

pub(super) async fn handle(
    req: AddRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let now = OffsetDateTime::now_utc();
    let new = gate::check_add(&req, &session.who(), &shared.config, now)?;
    let supersedes = req.supersedes;
    let view = View::namespace(&session.namespace, &session.agent, &session.id);
    let kind = match supersedes {
        Some(_) => WriteKind::Destructive,
        None => WriteKind::Append,
    };
    let (id, generation, drift) = super::guarded(shared, session, kind, move |ctx, drift| {
        if let Some(old) = supersedes {
            let current =
                memories::get_visible(ctx.conn, old, &view)?.ok_or(StoreError::NotFound(old))?;
            if let Some(by) = current.superseded_by {
                return Err(StoreError::Conflict {
                    message: format!("memory {old} is already superseded by {by}"),
                    current_rev: Some(current.rev),
                });
            }
        }
        let id = memories::insert(ctx.conn, &new)?;
        if let Some(old) = supersedes {
            ctx.conn.execute(
                "UPDATE memories SET superseded_by = ?1, superseded_at = ?2 WHERE id = ?3",
                (id, crate::clock::now(), old),
            )?;
        }
        Ok((id, ctx.generation()?, drift))
    })
    .await?;
    Ok(Response::Added(AddResult {
        accepted: true,
        id: Some(id),
        deduped: false,
        merged_into: None,
        similar_to: None,
        reason: None,
        drift,
        generation,
    }))
}
