//! `supersede` and `history`: facts are not overwritten, they are
//! superseded, and the chain can be walked both ways from any member.

use memd_proto::{Response, SupersedeRequest, SupersedeResult};

use crate::drift::policy::WriteKind;
use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;
use crate::store::memories::{self};

pub(super) async fn handle(
    req: SupersedeRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let view = super::support::view::everything(session)?;
    let SupersedeRequest { old, new } = req;
    if old == new {
        return Err(StoreError::InvalidInput(
            "a memory cannot supersede itself".into(),
        ));
    }
    let generation =
        super::support::guarded(shared, session, WriteKind::Destructive, move |ctx, _| {
            let o =
                memories::get_visible(ctx.conn, old, &view)?.ok_or(StoreError::NotFound(old))?;
            let n =
                memories::get_visible(ctx.conn, new, &view)?.ok_or(StoreError::NotFound(new))?;
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
            if crate::store::chains::forward_chain(ctx.conn, new)?.contains(&old) {
                return Err(StoreError::Conflict {
                    message: format!(
                        "memory {old} supersedes {new} already: that would be a cycle"
                    ),
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
