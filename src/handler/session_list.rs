//! `session list`: the named sessions of the session's namespace.

use memd_proto::{Report, Response, SessionListRequest};
use serde_json::json;

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

/// The named sessions of the session's namespace.
pub(super) async fn handle(
    _req: SessionListRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let sessions: Vec<_> = shared
        .named
        .list(session.namespace())
        .into_iter()
        .map(|s| {
            json!({
                "name": s.name,
                "agent": s.agent,
                "connections": s.connections,
                "idle_secs": s.idle_secs,
                "seen_generation": s.seen,
                "has_block": s.has_block,
            })
        })
        .collect();
    Ok(Response::Report(Report {
        json: json!({ "sessions": sessions }).to_string(),
    }))
}
