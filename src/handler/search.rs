//! `search` and `search batch`: lexical, fuzzy, semantic and hybrid search
//! with the list filters, ranked by relevance, recency and pins
//! (`store::search`). Query vectors are computed on the blocking pool
//! before the read; a batch embeds all its queries in one call.

use memd_proto::{Response, SearchRequest};

use super::{Ctx, HandlerError};
use crate::session::Session;

pub(super) async fn handle(
    req: SearchRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let mut results = super::support::search::run(vec![req], session, cx).await?;
    Ok(Response::Hits(results.remove(0)))
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, QuerySyntax, Request, Response, SearchMode};

    use crate::handler::support::testkit::{Kit, search};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn finds_by_words_takes_operators_literally_and_refuses_bad_input() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let id = kit
            .add(&mut s, "the deploy script lives in ops/deploy.sh")
            .await;
        kit.add(&mut s, "lunch is at noon on fridays").await;
        let Response::Hits(r) = kit
            .ok(&mut s, Request::Search(search("deploy script")))
            .await
        else {
            panic!()
        };
        assert_eq!(r.hits.first().map(|h| h.memory.id), Some(id));
        assert_eq!(s.seen(), r.generation);
        // FTS syntax in user text is literal.
        for q in [
            "deploy AND (",
            "\"unbalanced",
            "NEAR(deploy",
            "ops/deploy.sh*",
        ] {
            kit.ok(&mut s, Request::Search(search(q))).await;
        }
        let explicit = memd_proto::SearchRequest {
            syntax: QuerySyntax::Fts,
            ..search("deploy AND (")
        };
        kit.err(&mut s, Request::Search(explicit), ErrorCode::InvalidInput)
            .await;
        kit.err(
            &mut s,
            Request::Search(search("  ")),
            ErrorCode::InvalidInput,
        )
        .await;
        // No embedder: semantic search says so.
        let semantic = memd_proto::SearchRequest {
            mode: SearchMode::Semantic,
            ..search("deploy")
        };
        kit.err(&mut s, Request::Search(semantic), ErrorCode::NotConfigured)
            .await;
    }
}
