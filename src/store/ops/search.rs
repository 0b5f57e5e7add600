//! Searches in one read transaction: every query of a batch sees the same
//! snapshot, and the reply carries its generation.

use std::sync::{Arc, RwLock};

use memd_proto::{Hit, SearchMode, SearchRequest};
use time::OffsetDateTime;

use crate::embed::vectors::Index;
use crate::gate::View;
use crate::store::readers::{Read, ReadKind};
use crate::store::search::rank::RankConfig;
use crate::store::search::{self, semantic::Semantic};
use crate::store::{Store, StoreError, read_generation};

/// One search of a batch: the request, the query's vector (semantic and
/// hybrid legs), what the session may see and the page size.
#[derive(Debug)]
pub struct SearchJob {
    /// The request.
    pub req: SearchRequest,
    /// The query's unit vector, when it has one.
    pub vector: Option<Vec<f32>>,
    /// What the session may see with the request's filters.
    pub view: View,
    /// Most hits returned.
    pub limit: u32,
}

/// A batch of searches and what ranks them.
pub struct Searches {
    /// The searches.
    pub jobs: Vec<SearchJob>,
    /// Now (recency, expiry).
    pub now: OffsetDateTime,
    /// Ranking settings.
    pub rank: RankConfig,
    /// Every current vector.
    pub index: Arc<RwLock<Index>>,
    /// The least relevance of a hit of a search with a query vector (the
    /// embedding model's floor).
    pub floor: crate::store::search::rank::Floor,
}

/// What a batch found.
#[derive(Debug)]
pub struct Found {
    /// Each search's hits, and the mode it ran in.
    pub results: Vec<(Vec<Hit>, SearchMode)>,
}

impl Store {
    /// Runs the searches in one read transaction. Fuzzy matching reads
    /// the store's cached vocabulary when it is at the read's generation;
    /// when it is not, the search reads the table and asks for a rebuild.
    ///
    /// # Errors
    /// `InvalidInput` for an invalid FTS query; SQLite errors.
    pub async fn search(&self, s: Searches) -> Result<Read<Found>, StoreError> {
        let Searches {
            jobs,
            now,
            rank,
            index,
            floor,
        } = s;
        let vocab = self.vocab.current();
        // Fuzzy matching may read the vocabulary: from the cache when it is
        // at this read's generation.
        let may_fuzzy = jobs.iter().any(|j| {
            j.req.mode == SearchMode::Fuzzy
                || (j.req.mode == SearchMode::Auto && j.vector.is_none())
        });
        let frequencies = self.frequencies.clone();
        let read = self
            .readers
            .read(ReadKind::Client, move |conn| {
                let generation = read_generation(conn)?;
                let vocab = match &vocab {
                    Some(t) if may_fuzzy && t.generation == generation => Some(t.as_ref()),
                    _ => None,
                };
                let mut results = Vec::with_capacity(jobs.len());
                for job in &jobs {
                    let semantic = job.vector.as_deref().map(|v| Semantic {
                        vector: v,
                        index: &index,
                        mix: rank.hybrid.thread_mix(),
                        floor,
                    });
                    let mode = match (job.req.mode, &semantic) {
                        (SearchMode::Auto, Some(_)) => SearchMode::Hybrid,
                        (m, _) => m,
                    };
                    let hits = search::run(
                        conn,
                        &search::Query {
                            text: &job.req.query,
                            syntax: job.req.syntax,
                            mode: job.req.mode,
                            view: &job.view,
                            limit: job.limit,
                            offset: job.req.offset,
                            explain: job.req.explain,
                            now,
                            rank: &rank,
                            semantic,
                            vocab,
                            frequencies: Some((&frequencies, generation)),
                        },
                    )?;
                    results.push((hits, mode));
                }
                Ok((Found { results }, may_fuzzy && vocab.is_none()))
            })
            .await?;
        let (found, stale_vocab) = read.value;
        if stale_vocab {
            self.vocab.want();
        }
        Ok(Read {
            value: found,
            generation: read.generation,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::store::team::wing::Wing;

    fn fuzzy(query: &str) -> Searches {
        let req = SearchRequest {
            query: query.into(),
            filter: memd_proto::Filter::default(),
            limit: 5,
            mode: SearchMode::Fuzzy,
            syntax: memd_proto::QuerySyntax::Plain,
            explain: false,
            offset: 0,
        };
        Searches {
            jobs: vec![SearchJob {
                req,
                vector: None,
                view: View::namespace("default", "a", "s"),
                limit: 5,
            }],
            now: OffsetDateTime::now_utc(),
            rank: RankConfig::default(),
            index: Arc::new(RwLock::new(Index::new(4))),
            floor: search::rank::Floor::default(),
        }
    }

    /// Whether a search asked for the vocabulary since the last look.
    async fn asked(store: &Store) -> bool {
        tokio::time::timeout(Duration::from_millis(50), store.vocab.wanted.notified())
            .await
            .is_ok()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_fuzzy_search_asks_for_the_vocabulary_only_when_the_cache_is_behind() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            &dir.path().join("memory.db"),
            &crate::store::StorageConfig::default(),
            Duration::from_secs(3600),
            Wing::None,
        )
        .unwrap();
        store.search(fuzzy("deploy")).await.unwrap();
        assert!(
            asked(&store).await,
            "no vocabulary cached: a rebuild is asked"
        );
        store.vocab.set(store.vocabulary().await.unwrap());
        store.search(fuzzy("deploy")).await.unwrap();
        assert!(
            !asked(&store).await,
            "the cache is at the read's generation"
        );
    }
}
