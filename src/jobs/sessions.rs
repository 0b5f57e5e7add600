//! The life of named sessions beyond their connections: kept on disk after
//! each change (`store::sessions`), put back when the daemon starts, ended
//! by `session end` and by `[session] idle_ttl` for the ones idle without a
//! connection.

use std::sync::Arc;
use std::time::Duration;

use crate::session::Session;
use crate::session::named::{Named, changed};
use crate::state::Shared;
use crate::store::sessions::Record;
use crate::sync;

/// What ending a named session leaves behind: its key leaves the live set
/// (its session-scope rows age from now), its record leaves the disk (once
/// that is written, the end is answered), its snapshot and read set go
/// with the last reference.
pub async fn end(shared: &Shared, named: Arc<Named>) {
    let key = named.who.session.clone();
    sync::lock(&shared.live).remove(&key);
    {
        // After any state of it being kept right now; a connection still
        // open (an MCP server) never keeps it again.
        let _keeping = named.mark_ended();
        shared.session_file.remove(&named.who.namespace, &key);
    }
    if let Err(e) = shared.session_file.sync().await {
        tracing::warn!(error = %e, session = %key, "the end of a named session was not kept on disk");
    }
    crate::store::lifecycle::record_session_end(&shared.store, &key).await;
    tracing::debug!(session = %key, namespace = %named.who.namespace, "named session ended");
}

/// Ends named sessions idle for `[session] idle_ttl`, checked every tenth
/// of it (at least each second, at most each minute), until the daemon
/// stops; on the same beat, keeps what changed in sessions whose
/// connections stay open (an MCP server's reads).
pub async fn run(shared: Arc<Shared>) {
    loop {
        let ttl = shared.config().session.idle_ttl();
        let every = (ttl / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
        tokio::time::sleep(every).await;
        expire(&shared, ttl).await;
        keep_all(&shared);
    }
}

/// Sends what changed in every named session to be kept (without waiting
/// for the disk).
pub fn keep_all(shared: &Shared) {
    for named in shared.named.all() {
        if let Some((_, keeping)) = named.take_changes() {
            shared.session_file.put(Record::of(&named));
            drop(keeping);
        }
    }
}

/// Ends the named sessions idle for `ttl` without a connection.
pub async fn expire(shared: &Shared, ttl: Duration) {
    for named in shared.named.expire(ttl) {
        end(shared, named).await;
    }
}

/// Keeps what changed in `named` on disk. A new or dropped block is on
/// disk before this returns (the reply that shows it follows); other
/// changes are written soon after.
pub async fn keep(shared: &Shared, named: &Named) {
    let Some((what, keeping)) = named.take_changes() else {
        return;
    };
    shared.session_file.put(Record::of(named));
    drop(keeping);
    if what & changed::BLOCK != 0
        && let Err(e) = shared.session_file.sync().await
    {
        tracing::warn!(error = %e, session = %named.who.session,
            "a named session's block was not kept on disk; a restart builds a new one");
    }
}

/// After each request of a session: a named session whose block was built
/// or dropped is kept, on disk before the reply. Its other changes (seen
/// generation, read set) wait for the connection to close, the periodic
/// beat of [`run`] or the daemon's stop: lost in a crash, they leave the
/// session's view older, so the drift guard errs on the safe side.
pub async fn after_request(shared: &Shared, session: &Session) {
    if let Some(named) = &session.named
        && named.block_changed()
    {
        keep(shared, named).await;
    }
}

/// A connection of a named session closed: its last use is kept.
pub async fn leave(shared: &Shared, named: &Named) {
    shared.named.leave(named);
    keep(shared, named).await;
}

/// Puts back the named sessions an earlier daemon kept: the same block,
/// seen generation, read set and last use (their idle time goes on
/// counting).
pub fn restore(shared: &Shared, records: Vec<Record>) {
    let rows = shared.config().drift.read_set_rows;
    let count = records.len();
    let mut live = sync::lock(&shared.live);
    for record in records {
        let named = shared.named.restore(record.into_named(rows));
        live.insert(named.who.session.clone());
    }
    if count > 0 {
        tracing::info!(
            sessions = count,
            "named sessions put back from the sessions file"
        );
    }
}
