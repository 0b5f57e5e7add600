//! `session end`: ends a named session.

use memd_proto::{Response, SessionEndRequest, SessionEnded};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

/// Ends a named session of the namespace.
pub(super) async fn handle(
    req: SessionEndRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let Some(named) = shared.named.end(session.namespace(), &req.name) else {
        return Err(StoreError::InvalidInput(format!(
            "no session named `{}` in namespace {}",
            req.name,
            session.namespace()
        )));
    };
    let connections = named.connections();
    crate::jobs::sessions::end(shared, named).await;
    Ok(Response::SessionEnded(SessionEnded {
        ended: req.name,
        connections: connections as u64,
    }))
}
