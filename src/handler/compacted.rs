//! `compacted`: the agent compacted its context; the next inject rebuilds the block.

use memd_proto::{CompactedRequest, Response};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

pub(super) async fn handle(
    _req: CompactedRequest,
    session: &mut Session,
    _shared: &Shared,
) -> Result<Response, StoreError> {
    session.invalidate();
    Ok(Response::Invalidated)
}
