//! `list`: visible memories with filters, newest first.

use memd_proto::{ListRequest, MemoryList, Response};
use time::OffsetDateTime;

use crate::gate;
use crate::session::Session;
use crate::state::Shared;
use crate::store::readers::ReadKind;
use crate::store::{StoreError, memories};

pub(super) async fn handle(
    req: ListRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let view = gate::view(&req.filter, &session.who, OffsetDateTime::now_utc())?;
    let limit = super::support::page_limit(req.limit, shared);
    let offset = req.offset;
    let read = shared
        .store
        .readers
        .read(ReadKind::Client, move |conn| {
            memories::list(conn, &view, limit, offset)
        })
        .await?;
    session.saw(read.generation, read.value.iter().map(|m| (m.id, m.rev)));
    Ok(Response::Memories(MemoryList {
        memories: read.value,
        generation: read.generation,
    }))
}
