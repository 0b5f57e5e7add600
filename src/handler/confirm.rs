//! `confirm`: one more confirmation of a memory.

use memd_proto::{ConfirmRequest, Filter, MemoryReply, Response};
use time::OffsetDateTime;

use crate::drift::policy::WriteKind;
use crate::gate;
use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;
use crate::store::memories::{self};

/// `confirm`: `confirmed_count + 1`, `last_confirmed_at`. Not an edit: the
/// generation and `rev` do not move.
pub(super) async fn handle(
    req: ConfirmRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let view = gate::view(&Filter::default(), &session.who, OffsetDateTime::now_utc())?;
    let id = req.id;
    let (memory, generation) =
        super::support::guarded(shared, session, WriteKind::Append, move |ctx, _| {
            memories::get_visible(ctx.conn, id, &view)?.ok_or(StoreError::NotFound(id))?;
            memories::confirm(ctx.conn, id, &crate::clock::now())?;
            let m = memories::fetch(ctx.conn, id)?.ok_or(StoreError::NotFound(id))?;
            Ok((m, ctx.generation()?))
        })
        .await?;
    Ok(Response::Memory(Box::new(MemoryReply {
        memory,
        generation,
    })))
}
