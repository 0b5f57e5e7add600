//! The FTS vocabulary fuzzy search keeps in memory: rebuilt on a reader
//! when a fuzzy search found it out of date, at most once per
//! `vocab::REBUILD_EVERY`.

use std::sync::Arc;

use crate::state::Shared;
use crate::store::search::vocab;

/// Rebuilds the vocabulary when asked, until the daemon stops.
pub async fn run(shared: Arc<Shared>) {
    loop {
        shared.store.vocab.wanted.notified().await;
        match shared.store.vocabulary().await {
            Ok(terms) => {
                tracing::debug!(
                    terms = terms.terms.len(),
                    generation = terms.generation,
                    "vocabulary cached"
                );
                shared.store.vocab.set(terms);
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the vocabulary"),
        }
        tokio::time::sleep(vocab::REBUILD_EVERY).await;
    }
}
