//! The FTS vocabulary in memory, for fuzzy search.
//!
//! `fts5vocab` walks each term's doclist to count it, so looking terms up
//! through it costs milliseconds per query word at 100K memories, and a
//! substring scan of the whole vocabulary a few hundred. This cache holds
//! the sorted term list with the generation it was read at; a search uses
//! it only when its own read transaction is at that same generation (every
//! change of content or subject moves the generation), so a cached list is
//! never out of date. Otherwise the search reads `fts5vocab` as before and
//! asks for a rebuild, which the daemon runs on a reader in the background,
//! at most once per [`REBUILD_EVERY`].

use std::sync::{Arc, RwLock};
use std::time::Duration;

use rusqlite::Connection;

/// The vocabulary view on a connection (a TEMP virtual table: nothing is
/// stored, and read-only connections may create it).
pub(super) fn ensure_vocab(conn: &Connection) -> Result<(), StoreError> {
    conn.execute_batch(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.memd_vocab \
         USING fts5vocab(main, 'memories_fts', 'row')",
    )?;
    Ok(())
}

use super::super::StoreError;
use crate::sync;

/// Shortest time between two rebuilds (a workload that writes all the
/// time would otherwise rebuild all the time).
pub const REBUILD_EVERY: Duration = Duration::from_secs(10);

/// The vocabulary at one generation.
#[derive(Debug, Default)]
pub struct Terms {
    /// The generation it was read at.
    pub generation: u64,
    /// Every term, sorted.
    pub terms: Vec<String>,
}

impl Terms {
    /// Terms in `[lower, upper)`.
    pub fn range(&self, lower: &str, upper: &str) -> &[String] {
        let from = self.terms.partition_point(|t| t.as_str() < lower);
        let to = self.terms.partition_point(|t| t.as_str() < upper);
        &self.terms[from..to.max(from)]
    }

    /// At most `limit` terms containing `needle`.
    pub fn containing(&self, needle: &str, limit: usize) -> Vec<String> {
        self.terms
            .iter()
            .filter(|t| t.contains(needle))
            .take(limit)
            .cloned()
            .collect()
    }
}

/// The shared cache and its rebuild requests.
#[derive(Debug, Default)]
pub struct Cache {
    terms: RwLock<Option<Arc<Terms>>>,
    /// Woken when a search found the cache out of date.
    pub wanted: tokio::sync::Notify,
}

impl Cache {
    /// The cached vocabulary, if any (it may be out of date: compare its
    /// generation with the read's).
    pub fn current(&self) -> Option<Arc<Terms>> {
        sync::read(&self.terms).clone()
    }

    /// Replaces the cached vocabulary.
    pub fn set(&self, terms: Terms) {
        *sync::write(&self.terms) = Some(Arc::new(terms));
    }

    /// Asks the daemon for a rebuild.
    pub fn want(&self) {
        self.wanted.notify_one();
    }
}

/// Reads the whole vocabulary and the generation, in one read transaction.
///
/// # Errors
/// SQLite errors.
pub fn load(conn: &Connection) -> Result<Terms, StoreError> {
    ensure_vocab(conn)?;
    let generation = super::super::read_generation(conn)?;
    let mut stmt = conn.prepare_cached("SELECT term FROM temp.memd_vocab")?;
    let mut terms = stmt
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    // In the index's (bytewise) order already; sorted again to be sure the
    // binary searches hold.
    terms.sort_unstable();
    Ok(Terms { generation, terms })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_substrings() {
        let t = Terms {
            generation: 1,
            terms: ["dock", "docker", "dog", "network", "networking"]
                .map(String::from)
                .to_vec(),
        };
        assert_eq!(t.range("do", "dp"), ["dock", "docker", "dog"]);
        assert_eq!(t.range("ne", "nf"), ["network", "networking"]);
        assert!(t.range("zz", "z{").is_empty());
        assert_eq!(t.containing("work", 10), ["network", "networking"]);
        assert_eq!(t.containing("o", 2), ["dock", "docker"]);
    }
}
