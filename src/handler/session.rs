//! `session list` and `session end`: the named sessions of a namespace.

use std::sync::Arc;
use std::time::Duration;

use memd_proto::{Report, Response, SessionEndRequest, SessionListRequest};
use serde_json::json;

use crate::session::Session;
use crate::session::named::Named;
use crate::state::Shared;
use crate::store::StoreError;

/// The named sessions of the session's namespace.
pub(super) async fn list(
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

/// Ends a named session of the namespace.
pub(super) async fn end(
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
    end_named(shared, named).await;
    Ok(Response::Report(Report {
        json: json!({ "ended": req.name, "connections": connections }).to_string(),
    }))
}

/// What ending a named session leaves behind: its key leaves the live set
/// (its session-scope rows age from now), its snapshot and read set go
/// with the last reference.
pub async fn end_named(shared: &Shared, named: Arc<Named>) {
    let key = named.who.session.clone();
    shared
        .live
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&key);
    crate::store::lifecycle::record_session_end(&shared.store, &key).await;
    tracing::debug!(session = %key, namespace = %named.who.namespace, "named session ended");
}

/// Ends the named sessions idle for `ttl` without a connection.
pub async fn expire_named(shared: &Shared, ttl: Duration) {
    for named in shared.named.expire(ttl) {
        end_named(shared, named).await;
    }
}
