//! `forget`: delete a memory (its old values stay in `memory_revisions`).

use memd_proto::{Filter, ForgetRequest, ForgetResult, Response};
use time::OffsetDateTime;

use crate::drift::policy::WriteKind;
use crate::gate;
use crate::session::Session;
use crate::state::Shared;
use crate::store::{StoreError, memories};

pub(super) async fn handle(
    req: ForgetRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let filter = Filter {
        include_superseded: true,
        include_archived: true,
        ..Filter::default()
    };
    let view = gate::view(&filter, &session.who, OffsetDateTime::now_utc())?;
    let (id, expect_rev) = (req.id, req.expect_rev);
    let generation =
        super::support::guarded(shared, session, WriteKind::Destructive, move |ctx, _| {
            let current =
                memories::get_visible(ctx.conn, id, &view)?.ok_or(StoreError::NotFound(id))?;
            ctx.check_row(current.id, expect_rev)?;
            memories::delete(ctx.conn, id)?;
            ctx.generation()
        })
        .await?;
    Ok(Response::Forgotten(ForgetResult { id, generation }))
}
