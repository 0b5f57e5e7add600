//! One search as `search` and `search_batch` run it: the session's view,
//! the store's ranked search, the session told what it saw.

use memd_proto::{QuerySyntax, SearchMode, SearchRequest, SearchResult};
use time::OffsetDateTime;

use super::super::{Ctx, HandlerError};
use crate::gate;
use crate::session::Session;
use crate::store::StoreError;
use crate::store::ops::search::{SearchJob, Searches};
use crate::store::search::words::{self, MAX_QUERY_WORDS};

/// The most namespaces one search may name (`--namespaces`): the index
/// query carries one token of each, weighed in the same function call as
/// the words ([`MAX_QUERY_WORDS`]); `--all-namespaces` has no limit.
pub(crate) const MAX_SEARCH_NAMESPACES: usize = 200;

/// Refuses a search too big to run: more distinct words than
/// [`MAX_QUERY_WORDS`] (a plain query searched by its words: every mode but
/// semantic), or more namespaces than [`MAX_SEARCH_NAMESPACES`].
fn check_size(req: &SearchRequest) -> Result<(), HandlerError> {
    if req.syntax == QuerySyntax::Plain && req.mode != SearchMode::Semantic {
        let words = words::query_words(&req.query).len();
        if words > MAX_QUERY_WORDS {
            return Err(HandlerError::InvalidInput(format!(
                "the query has {words} distinct words; a search takes at most \
                 {MAX_QUERY_WORDS} (stopwords and repeats are not counted): search for fewer, \
                 or use --mode semantic for a long text"
            )));
        }
    }
    let namespaces = req.filter.namespaces.len();
    if namespaces > MAX_SEARCH_NAMESPACES {
        return Err(HandlerError::InvalidInput(format!(
            "the search names {namespaces} namespaces; at most {MAX_SEARCH_NAMESPACES} \
             (or --all-namespaces)"
        )));
    }
    Ok(())
}

/// Which searches get a query vector (semantic and hybrid always, an
/// error without a ready embedder; auto when one is ready), and those
/// vectors in order, from one embedding call. When every search is auto
/// and the embedder fails, none gets one.
async fn query_vectors(
    reqs: &[SearchRequest],
    embed: &crate::embed::EmbedService,
) -> Result<(Vec<bool>, Vec<Vec<f32>>), HandlerError> {
    // Which searches need a vector: semantic and hybrid always (an error
    // without a ready embedder), auto when one is ready.
    let mut wants = Vec::with_capacity(reqs.len());
    for req in reqs {
        wants.push(match req.mode {
            SearchMode::Semantic | SearchMode::Hybrid => {
                embed.ready()?;
                true
            }
            SearchMode::Auto => embed.is_ready(),
            SearchMode::Lexical | SearchMode::Fuzzy => false,
        });
    }
    let texts: Vec<String> = reqs
        .iter()
        .zip(&wants)
        .filter(|(_, w)| **w)
        .map(|(r, _)| r.query.clone())
        .collect();
    let vectors = if texts.is_empty() {
        Vec::new()
    } else {
        let embedder = embed.ready()?;
        let embedded = tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder.embed(&refs)
        })
        .await
        .map_err(|e| {
            HandlerError::Io(std::io::Error::other(format!(
                "the embedding task failed: {e}"
            )))
        })?;
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
                return Err(
                    StoreError::NotConfigured(format!("cannot embed the query: {e}")).into(),
                );
            }
        }
    };
    Ok((wants, vectors))
}

/// Runs searches in one read transaction; semantic ones get their query
/// vectors from one embedding call first.
pub(crate) async fn run(
    reqs: Vec<SearchRequest>,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Vec<SearchResult>, HandlerError> {
    let now = OffsetDateTime::now_utc();
    let mut views = Vec::with_capacity(reqs.len());
    for req in &reqs {
        if req.query.trim().is_empty() {
            return Err(HandlerError::InvalidInput("the query is empty".into()));
        }
        check_size(req)?;
        views.push(gate::view(&req.filter, &session.who, now)?);
    }
    let embed = cx.embed();
    let (wants, vectors) = query_vectors(&reqs, embed).await?;
    let mut vectors = vectors.into_iter();
    let jobs: Vec<SearchJob> = reqs
        .into_iter()
        .zip(wants)
        .zip(views)
        .map(|((req, want), view)| SearchJob {
            vector: if want { vectors.next() } else { None },
            limit: super::page_limit(req.limit, cx),
            view,
            req,
        })
        .collect();
    let floor = embed
        .ready()
        .map(|e| cx.config().search.floors_for(e.model_id()))
        .unwrap_or_default();
    let store = cx.store();
    let read = store
        .search(Searches {
            jobs,
            now,
            rank: cx.config().search.clone(),
            index: embed.index_handle(),
            floor,
        })
        .await?;
    let generation = read.generation;
    let results = read.value.results;
    let counts = session.counts_uses();
    session.shown(
        generation,
        results
            .iter()
            .flat_map(|(hits, _)| hits.iter().map(|h| (h.memory.id, h.memory.rev))),
    );
    Ok(results
        .into_iter()
        .map(|(hits, mode)| {
            if counts {
                cx.access().record(hits.iter().map(|h| h.memory.id));
            }
            SearchResult {
                hits,
                generation,
                mode,
            }
        })
        .collect())
}
