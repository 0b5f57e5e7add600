//! `stop`: graceful shutdown, as on SIGTERM.

use memd_proto::{Response, StopRequest};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

pub(super) async fn handle(
    _req: StopRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    tracing::info!(session = %session.id(), agent = %session.agent(), "stop requested by a client");
    shared.shutdown.trigger();
    Ok(Response::Stopping)
}
