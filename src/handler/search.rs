//! `search` and `search batch`: lexical, fuzzy, semantic and hybrid search
//! with the list filters, ranked by relevance, recency and pins
//! (`store::search`). Query vectors are computed on the blocking pool
//! before the read; a batch embeds all its queries in one call.

use memd_proto::{Response, SearchRequest};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

pub(super) async fn handle(
    req: SearchRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let mut results = super::support::search::run(vec![req], session, shared).await?;
    Ok(Response::Hits(results.remove(0)))
}
