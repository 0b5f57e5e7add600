//! `search_batch`: several searches in one round trip.

use memd_proto::{Response, SearchBatchRequest, SearchBatchResult};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

/// Most searches in one batch.
const MAX_BATCH: usize = 64;

pub(super) async fn handle(
    req: SearchBatchRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    if req.searches.is_empty() {
        return Err(StoreError::InvalidInput("the batch holds no search".into()));
    }
    if req.searches.len() > MAX_BATCH {
        return Err(StoreError::InvalidInput(format!(
            "a batch holds at most {MAX_BATCH} searches, not {}",
            req.searches.len()
        )));
    }
    let results = super::support::search::run(req.searches, session, shared).await?;
    Ok(Response::HitsBatch(SearchBatchResult { results }))
}
