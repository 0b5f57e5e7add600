//! `search`: lexical FTS5 search with the list filters.

use memd_proto::{QuerySyntax, Response, SearchMode, SearchRequest, SearchResult};
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
    match req.mode {
        SearchMode::Auto | SearchMode::Lexical => {}
        SearchMode::Fuzzy => {
            return Err(StoreError::InvalidInput(
                "fuzzy search is not available in this version of memd; use --mode lexical".into(),
            ));
        }
        SearchMode::Semantic | SearchMode::Hybrid => {
            return Err(StoreError::InvalidInput(format!(
                "{} search needs an embedder, and no embedder is configured; \
                 use --mode lexical",
                req.mode.as_str()
            )));
        }
    }
    let view = gate::view(&req.filter, &session.who(), OffsetDateTime::now_utc())?;
    let fts_query = match req.syntax {
        QuerySyntax::Plain => search::plain_query(&req.query),
        QuerySyntax::Fts => {
            if req.query.trim().is_empty() {
                return Err(StoreError::InvalidInput("the query is empty".into()));
            }
            Some(req.query.clone())
        }
    };
    let limit = super::page_limit(req.limit, shared);
    let read = shared
        .store
        .readers
        .read(ReadKind::Client, move |conn| match fts_query {
            Some(q) => search::lexical(conn, &q, &view, limit),
            None => Ok(Vec::new()),
        })
        .await?;
    session.seen = read.generation;
    Ok(Response::Hits(SearchResult {
        hits: read.value,
        generation: read.generation,
        mode: SearchMode::Lexical,
    }))
}
