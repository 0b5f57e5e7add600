//! `update`: change fields of a memory, optionally only at an expected rev.

use memd_proto::{Filter, MemoryReply, Response, UpdateRequest};
use time::OffsetDateTime;

use crate::drift::policy::WriteKind;
use crate::gate;
use crate::session::Session;
use crate::state::Shared;
use crate::store::{StoreError, memories};

pub(super) async fn handle(
    req: UpdateRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let now = OffsetDateTime::now_utc();
    let changes = gate::check_update(&req, &session.who, &shared.config().gate_rules(), now)?;
    session.owns_session_rows |=
        req.scope.as_deref().and_then(gate::normalize_scope) == Some("session");
    // An update may reach superseded and archived rows (to restore them).
    let filter = Filter {
        include_superseded: true,
        include_archived: true,
        ..Filter::default()
    };
    let view = gate::view(&filter, &session.who, now)?;
    let (id, expect_rev) = (req.id, req.expect_rev);
    let (memory, generation) =
        super::support::guarded(shared, session, WriteKind::Destructive, move |ctx, _| {
            let current =
                memories::get_visible(ctx.conn, id, &view)?.ok_or(StoreError::NotFound(id))?;
            ctx.check_row(id, expect_rev)?;
            // The task rules need the row: its category and status.
            let mut changes = changes;
            gate::task_changes(&current, &mut changes)?;
            memories::apply(ctx.conn, &current, &changes)?;
            let updated = memories::fetch(ctx.conn, id)?.ok_or(StoreError::NotFound(id))?;
            Ok((updated, ctx.generation()?))
        })
        .await?;
    Ok(Response::Memory(Box::new(MemoryReply {
        memory,
        generation,
    })))
}
