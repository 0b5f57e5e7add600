//! Access tracking: every memory a search or a `get` returns gets
//! `use_count + 1`, `last_used_at` and `access_score + 1` — collected in
//! memory and written in batches by the daemon (never on the request path).
//! These columns are not edits: the generation, `rev` and every session's
//! snapshot stay as they are.

use std::collections::HashMap;
use std::sync::Mutex;

use super::{Store, StoreError};
use crate::session::ident::Author;
use crate::sync;

/// Pending uses, by memory id.
#[derive(Debug, Default)]
pub struct Access {
    pending: Mutex<HashMap<i64, i64>>,
    /// Woken when many uses are pending.
    pub wake: tokio::sync::Notify,
}

/// Uses pending before a flush is asked for early.
const EARLY_FLUSH: usize = 4_096;

impl Access {
    /// Records that these memories were returned.
    pub fn record(&self, ids: impl IntoIterator<Item = i64>) {
        let mut pending = sync::lock(&self.pending);
        for id in ids {
            *pending.entry(id).or_insert(0) += 1;
        }
        if pending.len() >= EARLY_FLUSH {
            self.wake.notify_one();
        }
    }

    fn take(&self) -> HashMap<i64, i64> {
        std::mem::take(&mut *sync::lock(&self.pending))
    }

    /// Writes the pending uses (as the daemon); returns how many rows.
    ///
    /// # Errors
    /// The write failed; the uses are put back for the next flush.
    pub async fn flush(&self, store: &Store) -> Result<usize, StoreError> {
        let uses = self.take();
        if uses.is_empty() {
            return Ok(0);
        }
        let n = uses.len();
        let batch = uses.clone();
        let written = store
            .writer
            .call(Author::Daemon, move |ctx| {
                let now = crate::clock::now();
                let mut stmt = ctx.conn.prepare_cached(
                    "UPDATE memories SET use_count = use_count + ?1, last_used_at = ?2, \
                     access_score = access_score + ?1 WHERE id = ?3",
                )?;
                for (id, count) in &batch {
                    stmt.execute((count, &now, id))?;
                }
                Ok(())
            })
            .await;
        if let Err(e) = written {
            let mut pending = sync::lock(&self.pending);
            for (id, count) in uses {
                *pending.entry(id).or_insert(0) += count;
            }
            return Err(e);
        }
        Ok(n)
    }
}
