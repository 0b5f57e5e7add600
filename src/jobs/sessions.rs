//! The end of named sessions: by `session end`, and by `[session] idle_ttl`
//! for the ones idle without a connection.

use std::sync::Arc;
use std::time::Duration;

use crate::session::named::Named;
use crate::state::Shared;

/// What ending a named session leaves behind: its key leaves the live set
/// (its session-scope rows age from now), its snapshot and read set go
/// with the last reference.
pub async fn end(shared: &Shared, named: Arc<Named>) {
    let key = named.who.session.clone();
    shared
        .live
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .remove(&key);
    crate::store::lifecycle::record_session_end(&shared.store, &key).await;
    tracing::debug!(session = %key, namespace = %named.who.namespace, "named session ended");
}

/// Ends named sessions idle for `[session] idle_ttl`, checked every tenth
/// of it (at least each second, at most each minute), until the daemon
/// stops.
pub async fn run(shared: Arc<Shared>) {
    loop {
        let ttl = shared.config().session.idle_ttl();
        let every = (ttl / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
        tokio::time::sleep(every).await;
        expire(&shared, ttl).await;
    }
}

/// Ends the named sessions idle for `ttl` without a connection.
pub async fn expire(shared: &Shared, ttl: Duration) {
    for named in shared.named.expire(ttl) {
        end(shared, named).await;
    }
}
