//! The daemon's team tasks (team memory, src/store/team/README.md):
//! the pull that follows the team's PostgreSQL, the periodic cleanup (both
//! through the store's wing, `store::team::wing`), and the finishing of
//! purges the pull applied.

use std::sync::Arc;

use crate::state::Shared;

/// Follows the team's PostgreSQL until the daemon stops (nothing without
/// team memory).
pub async fn run(shared: Arc<Shared>) {
    shared
        .store
        .wing()
        .follow(&shared.store, &shared.backups)
        .await;
}

/// Cleans team memory up every `[team] cleanup_every`, when set.
pub async fn cleanup(shared: Arc<Shared>) {
    shared.store.wing().clean_up().await;
}

/// Finishes the purges the team pull applied here (frozen blocks, drift
/// backups, compacting the files), until the daemon stops.
pub async fn purges(shared: Arc<Shared>) {
    let mut events = shared.store.purge_events.subscribe();
    loop {
        match events.recv().await {
            Ok(done) => {
                if let Err(e) = crate::state::purge::finish(&shared, &done).await {
                    tracing::error!(error = %e, "cannot finish a purge the team made");
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}
