//! `session list`: the named sessions of the session's namespace.

use memd_proto::{NamedSessionInfo, Response, SessionList, SessionListRequest};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

/// The named sessions of the session's namespace.
pub(super) async fn handle(
    _req: SessionListRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let sessions = shared
        .named
        .list(session.namespace())
        .into_iter()
        .map(|s| NamedSessionInfo {
            name: s.name,
            agent: s.agent,
            connections: s.connections as u64,
            idle_secs: s.idle_secs,
            seen_generation: s.seen,
            has_block: s.has_block,
        })
        .collect();
    Ok(Response::Sessions(SessionList { sessions }))
}
