//! `search`: lexical and fuzzy search with the list filters, ranked by
//! relevance, recency and pins (`store::search`).

use memd_proto::{Response, SearchMode, SearchRequest, SearchResult};
use time::OffsetDateTime;

use crate::daemon::Shared;
use crate::session::Session;
use crate::store::readers::ReadKind;
use crate::store::{StoreError, gate, search};

pub(super) async fn handle(
    req: SearchRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    if matches!(req.mode, SearchMode::Semantic | SearchMode::Hybrid) {
        return Err(StoreError::InvalidInput(format!(
            "{} search needs an embedder, and no embedder is configured; use --mode lexical \
             or fuzzy",
            req.mode.as_str()
        )));
    }
    if req.query.trim().is_empty() {
        return Err(StoreError::InvalidInput("the query is empty".into()));
    }
    let now = OffsetDateTime::now_utc();
    let view = gate::view(&req.filter, &session.who(), now)?;
    let limit = super::page_limit(req.limit, shared);
    let rank = shared.config().search.clone();
    let mode = req.mode;
    let read = shared
        .store
        .readers
        .read(ReadKind::Client, move |conn| {
            search::run(
                conn,
                &search::Query {
                    text: &req.query,
                    syntax: req.syntax,
                    mode: req.mode,
                    view: &view,
                    limit,
                    explain: req.explain,
                    now,
                    rank: &rank,
                },
            )
        })
        .await?;
    session.seen = read.generation;
    shared.access.record(read.value.iter().map(|h| h.memory.id));
    Ok(Response::Hits(SearchResult {
        hits: read.value,
        generation: read.generation,
        mode,
    }))
}
