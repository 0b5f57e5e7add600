//! Near-duplicate sketches for rows that have none (written by another
//! tool, or before sketches existed): once, at start, in chunks.

use std::sync::Arc;

use crate::state::Shared;

/// Rows sketched per write.
const CHUNK: i64 = 250;

/// Sketches every row without one.
pub async fn run(shared: Arc<Shared>) {
    match crate::store::lifecycle::backfill_sketches(&shared.store, CHUNK).await {
        Ok(0) => {}
        Ok(n) => tracing::info!(rows = n, "sketched rows for the near-duplicate check"),
        Err(e) => tracing::warn!(error = %e, "cannot sketch rows"),
    }
}
