//! Access tracking written in batches: search and get hits are counted in
//! memory and flushed every second (or sooner when many are pending), as
//! the daemon's own writes that never move the generation.

use std::sync::Arc;
use std::time::Duration;

use crate::state::Shared;

/// How often pending access counts are written.
const ACCESS_FLUSH: Duration = Duration::from_secs(1);

/// Flushes pending access counts until the daemon stops (the last ones are
/// written at shutdown by the daemon itself).
pub async fn run(shared: Arc<Shared>) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(ACCESS_FLUSH) => {}
            () = shared.access.wake.notified() => {}
        }
        if let Err(e) = shared.access.flush(&shared.store).await {
            tracing::warn!(error = %e, "cannot write access counts; will retry");
        }
    }
}
