//! The search index merged once writes pause after it grew by a quarter: a
//! bulk load (an import, a transcript through `memd ingest`) leaves FTS5
//! segments that every search walks, and the lifecycle sweep, which merges
//! them too, may be hours away. Growth, not every pause: merging rewrites
//! the whole index, so it runs again only once the index grew by a quarter
//! since (at most about five times the index's final size written over its
//! life).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::state::Shared;
use crate::store::lifecycle;

/// How often the job looks at the commit counter.
const CHECK: Duration = Duration::from_secs(2);

/// How long no transaction may commit before the job merges.
const QUIET: Duration = Duration::from_secs(10);

/// Growth of the index since its last merge (or since start) that makes a
/// merge worth it.
const GROWTH: f64 = 0.25;

/// Merges after a quiet spell that followed growth, until the daemon stops.
pub async fn run(shared: Arc<Shared>) {
    let commits = || shared.store.stats.commits.load(Ordering::Relaxed);
    let mut base = match lifecycle::search_index_pages(&shared.store).await {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the search index's size");
            return;
        }
    };
    let mut seen = commits();
    let mut looked = seen;
    let mut changed_at = Instant::now();
    loop {
        tokio::time::sleep(CHECK).await;
        let now = commits();
        if now != seen {
            seen = now;
            changed_at = Instant::now();
            continue;
        }
        if now == looked || changed_at.elapsed() < QUIET {
            continue;
        }
        looked = now;
        let pages = match lifecycle::search_index_pages(&shared.store).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the search index's size");
                continue;
            }
        };
        if (pages as f64) < (base as f64) * (1.0 + GROWTH) || pages < 2 {
            continue;
        }
        match lifecycle::merge_search_index(&shared.store, pages).await {
            Ok(steps) => tracing::info!(steps, pages, "search index merged after writes paused"),
            Err(e) => tracing::warn!(error = %e, "cannot merge the search index"),
        }
        // Growth is counted from here (a merge leaves about as many pages).
        base = pages;
        // The merge's own commits are not writes to wait for.
        seen = commits();
        looked = seen;
    }
}
