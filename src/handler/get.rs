//! `get`: one memory by id, if the session may see it.

use memd_proto::{Filter, GetRequest, MemoryReply, Response};
use time::OffsetDateTime;

use crate::gate;
use crate::session::Session;
use crate::state::Shared;
use crate::store::readers::ReadKind;
use crate::store::{StoreError, memories};

pub(super) async fn handle(
    req: GetRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let filter = Filter {
        include_superseded: req.include_inactive,
        include_archived: req.include_inactive,
        ..Filter::default()
    };
    let view = gate::view(&filter, &session.who, OffsetDateTime::now_utc())?;
    let id = req.id;
    let read = shared
        .store
        .readers
        .read(ReadKind::Client, move |conn| {
            memories::get_visible(conn, id, &view)
        })
        .await?;
    session.saw(read.generation, read.value.iter().map(|m| (m.id, m.rev)));
    let memory = read.value.ok_or(StoreError::NotFound(id))?;
    shared.access.record([memory.id]);
    Ok(Response::Memory(Box::new(MemoryReply {
        memory,
        generation: read.generation,
    })))
}
