//! `search_batch`: several searches in one round trip.

use memd_proto::{Response, SearchBatchRequest, SearchBatchResult};

use super::{Ctx, HandlerError};
use crate::session::Session;

/// Most searches in one batch.
const MAX_BATCH: usize = 64;

pub(super) async fn handle(
    req: SearchBatchRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    if req.searches.is_empty() {
        return Err(HandlerError::InvalidInput(
            "the batch holds no search".into(),
        ));
    }
    if req.searches.len() > MAX_BATCH {
        return Err(HandlerError::InvalidInput(format!(
            "a batch holds at most {MAX_BATCH} searches, not {}",
            req.searches.len()
        )));
    }
    let results = super::support::search::run(req.searches, session, cx).await?;
    Ok(Response::HitsBatch(SearchBatchResult { results }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, Request, Response, SearchBatchRequest};

    use crate::handler::support::testkit::{Kit, search};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn answers_each_search_from_one_read() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let deploy = kit
            .add(&mut s, "the deploy script lives in ops/deploy.sh")
            .await;
        let lunch = kit.add(&mut s, "lunch is at noon on fridays").await;
        let batch = |searches| Request::SearchBatch(SearchBatchRequest { searches });
        let Response::HitsBatch(b) = kit
            .ok(&mut s, batch(vec![search("deploy"), search("lunch")]))
            .await
        else {
            panic!()
        };
        assert_eq!(b.results.len(), 2);
        assert_eq!(b.results[0].hits[0].memory.id, deploy);
        assert_eq!(b.results[1].hits[0].memory.id, lunch);
        assert_eq!(b.results[0].generation, b.results[1].generation);
        kit.err(&mut s, batch(vec![]), ErrorCode::InvalidInput)
            .await;
        kit.err(
            &mut s,
            batch(vec![search("x"); 65]),
            ErrorCode::InvalidInput,
        )
        .await;
    }
}
