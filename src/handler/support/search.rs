//! One search as `search` and `search_batch` run it: the session's view,
//! the store's ranked search, the session told what it saw.

use memd_proto::{SearchMode, SearchRequest, SearchResult};
use time::OffsetDateTime;

use crate::gate;
use crate::session::Session;
use crate::state::Shared;
use crate::store::readers::ReadKind;
use crate::store::{Cause, StoreError, search};

/// Runs searches in one read transaction; semantic ones get their query
/// vectors from one embedding call first.
pub(crate) async fn run(
    reqs: Vec<SearchRequest>,
    session: &mut Session,
    shared: &Shared,
) -> Result<Vec<SearchResult>, StoreError> {
    let now = OffsetDateTime::now_utc();
    let mut views = Vec::with_capacity(reqs.len());
    for req in &reqs {
        if req.query.trim().is_empty() {
            return Err(StoreError::InvalidInput("the query is empty".into()));
        }
        views.push(gate::view(&req.filter, &session.who, now)?);
    }
    // Which searches need a vector: semantic and hybrid always (an error
    // without a ready embedder), auto when one is ready.
    let mut wants = Vec::with_capacity(reqs.len());
    for req in &reqs {
        wants.push(match req.mode {
            SearchMode::Semantic | SearchMode::Hybrid => {
                shared.embed.ready()?;
                true
            }
            SearchMode::Auto => shared.embed.is_ready(),
            SearchMode::Lexical | SearchMode::Fuzzy => false,
        });
    }
    let texts: Vec<String> = reqs
        .iter()
        .zip(&wants)
        .filter(|(_, w)| **w)
        .map(|(r, _)| r.query.clone())
        .collect();
    let mut vectors = if texts.is_empty() {
        Vec::new()
    } else {
        let embedder = shared.embed.ready()?;
        let embedded = tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder.embed(&refs)
        })
        .await
        .map_err(|e| StoreError::Io(Cause::context("the embedding task failed", e)))?;
        match embedded {
            Ok(v) => v,
            // `auto` asked for no embedder: when the provider fails, it
            // searches lexically (its result says so) instead of failing.
            Err(e) if reqs.iter().all(|r| r.mode == SearchMode::Auto) => {
                tracing::warn!(error = %e, "cannot embed the query; auto search runs lexical");
                wants.fill(false);
                Vec::new()
            }
            Err(e) => {
                return Err(StoreError::NotConfigured(format!(
                    "cannot embed the query: {e}"
                )));
            }
        }
    }
    .into_iter();
    let queries: Vec<(SearchRequest, Option<Vec<f32>>)> = reqs
        .into_iter()
        .zip(wants)
        .map(|(r, w)| {
            let v = if w { vectors.next() } else { None };
            (r, v)
        })
        .collect();
    let limits: Vec<u32> = queries
        .iter()
        .map(|(r, _)| super::page_limit(r.limit, shared))
        .collect();
    let rank = shared.config().search.clone();
    // Fuzzy matching may read the vocabulary: from the cache when it is at
    // this read's generation; otherwise a rebuild is asked for below.
    let may_fuzzy = queries
        .iter()
        .any(|(r, v)| r.mode == SearchMode::Fuzzy || (r.mode == SearchMode::Auto && v.is_none()));
    let cached = shared.store.vocab.current();
    let read = {
        let index = shared.embed.index_handle();
        shared
            .store
            .readers
            .read(ReadKind::Client, move |conn| {
                let vocab = match &cached {
                    Some(t)
                        if may_fuzzy && t.generation == crate::store::read_generation(conn)? =>
                    {
                        Some(t.as_ref())
                    }
                    _ => None,
                };
                let mut out = Vec::with_capacity(queries.len());
                for (((req, vector), view), limit) in queries.iter().zip(&views).zip(&limits) {
                    let semantic = vector.as_deref().map(|v| search::semantic::Semantic {
                        vector: v,
                        index: &index,
                    });
                    let mode = match (req.mode, &semantic) {
                        (SearchMode::Auto, Some(_)) => SearchMode::Hybrid,
                        (m, _) => m,
                    };
                    let hits = search::run(
                        conn,
                        &search::Query {
                            text: &req.query,
                            syntax: req.syntax,
                            mode: req.mode,
                            view,
                            limit: *limit,
                            offset: req.offset,
                            explain: req.explain,
                            now,
                            rank: &rank,
                            semantic,
                            vocab,
                        },
                    )?;
                    out.push((hits, mode));
                }
                Ok((out, may_fuzzy && vocab.is_none()))
            })
            .await?
    };
    let (results, stale_vocab) = read.value;
    if stale_vocab {
        shared.store.vocab.want();
    }
    let generation = read.generation;
    session.saw(
        generation,
        results
            .iter()
            .flat_map(|(hits, _)| hits.iter().map(|h| (h.memory.id, h.memory.rev))),
    );
    Ok(results
        .into_iter()
        .map(|(hits, mode)| {
            shared.access.record(hits.iter().map(|h| h.memory.id));
            SearchResult {
                hits,
                generation,
                mode,
            }
        })
        .collect())
}
