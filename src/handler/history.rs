//! `history`: a supersession chain, walked both ways from any member, with its revisions.

use memd_proto::{History, HistoryRequest, Response};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;
use crate::store::readers::ReadKind;

pub(super) async fn handle(
    req: HistoryRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let view = super::support::view::everything(session)?;
    let id = req.id;
    let read = shared
        .store
        .readers
        .read(ReadKind::Client, move |conn| {
            crate::store::chains::walk(conn, id, &view)
        })
        .await?;
    let (chain, revisions) = read.value;
    session.saw(read.generation, chain.iter().map(|m| (m.id, m.rev)));
    Ok(Response::History(History {
        chain,
        revisions,
        generation: read.generation,
    }))
}
