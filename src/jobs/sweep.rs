//! The lifecycle sweep as the daemon runs it: one at a time, over the
//! store's sweep (decay, tiers, expiry, scope limits), at start, on a
//! schedule and on demand.

use std::sync::Arc;
use std::time::Duration;

use memd_proto::SweepReport;
use time::OffsetDateTime;

use crate::state::Shared;
use crate::store::StoreError;
use crate::store::lifecycle::{self, Trigger};
use crate::sync;

/// Runs a sweep (one at a time).
///
/// # Errors
/// As [`lifecycle::sweep`].
pub async fn run(
    shared: &Shared,
    trigger: Trigger,
    dry_run: bool,
) -> Result<SweepReport, StoreError> {
    let _one = shared.sweeping.lock().await;
    let live = sync::lock(&shared.live).clone();
    let config = shared.config();
    let report = lifecycle::sweep(
        &shared.store,
        &config.lifecycle,
        config.capture.retention(),
        live,
        trigger,
        dry_run,
        OffsetDateTime::now_utc(),
    )
    .await;
    // A sweep reads every row in chunks; what it allocated goes back.
    crate::sys::release_free_memory();
    report
}

/// Sweeps at start (`[lifecycle] at_start`) and every `interval_hours`
/// (0: never on a schedule), until the daemon stops.
pub async fn schedule(shared: Arc<Shared>) {
    let lifecycle = shared.config().lifecycle.clone();
    let hours = lifecycle.interval_hours;
    if lifecycle.at_start
        && let Err(e) = run(&shared, Trigger::Start, false).await
    {
        tracing::warn!(error = %e, "sweep at start failed");
    }
    if hours <= 0.0 {
        return;
    }
    loop {
        tokio::time::sleep(Duration::from_secs_f64(hours * 3_600.0)).await;
        if let Err(e) = run(&shared, Trigger::Schedule, false).await {
            tracing::warn!(error = %e, "scheduled sweep failed");
        }
    }
}
