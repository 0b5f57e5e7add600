//! `subscribe`: drift events become pushes (frame id 0) on this connection.

use memd_proto::{Response, SubscribeRequest};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

pub(super) async fn handle(
    _req: SubscribeRequest,
    session: &mut Session,
    _shared: &Shared,
) -> Result<Response, StoreError> {
    session.subscribed = true;
    Ok(Response::Subscribed)
}
