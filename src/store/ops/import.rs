//! One chunk of an import, as a session's write (see `store::import`).

use std::collections::HashMap;
use std::sync::Arc;

use super::Written;
use crate::store::import::{self, Entry};
use crate::store::writer::Sharing;
use crate::store::{Guard, Store, StoreError};

/// The counts of one chunk: inserted, skipped, replaced, linked, dangling.
pub type ImportCounts = [u64; 5];

impl Store {
    /// An import chunk's entries in the writes they go in: the local ones,
    /// then those of shared namespaces (team memory), whose write goes
    /// through PostgreSQL. A captured turn is never shared.
    pub fn import_writes(&self, entries: Vec<Entry>) -> [Vec<Entry>; 2] {
        let (shared, local): (Vec<_>, Vec<_>) = entries.into_iter().partition(|e| {
            let (ns, scope) = e.place();
            !e.captured() && self.wing.shares(ns, scope)
        });
        [local, shared]
    }

    /// Writes one chunk of checked entries; with `replace`, rows whose uid
    /// exists are replaced (each checked by the row rule).
    ///
    /// # Errors
    /// `Drift`, SQLite errors.
    pub async fn import_chunk(
        &self,
        guard: Guard,
        batch: Vec<Entry>,
        links: Arc<HashMap<i64, String>>,
        replace: bool,
    ) -> Result<Written<ImportCounts>, StoreError> {
        let sharing = if replace {
            Sharing::Resurrecting
        } else {
            Sharing::Plain
        };
        self.guarded(guard, sharing, move |ctx, _| {
            ctx.hold_index()?;
            import::chunk(ctx, batch.clone(), &links, replace)
        })
        .await
    }
}
