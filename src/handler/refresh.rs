//! `refresh`: the session asks for a new block at the next inject.

use memd_proto::{RefreshRequest, Response};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

pub(super) async fn handle(
    _req: RefreshRequest,
    session: &mut Session,
    _shared: &Shared,
) -> Result<Response, StoreError> {
    session.invalidate();
    Ok(Response::Invalidated)
}
