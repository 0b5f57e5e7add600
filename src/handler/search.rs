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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_query_of_too_many_words_or_namespaces_is_refused_in_words() {
        use crate::handler::support::search::MAX_SEARCH_NAMESPACES;
        use crate::store::search::words::MAX_QUERY_WORDS;
        let kit = Kit::new();
        let mut s = kit.session("a");
        let words = |n: usize| {
            (0..n)
                .map(|i| format!("word{i}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        kit.add(&mut s, &format!("kept {}", words(40))).await;
        // A captured turn too: each word is then weighed twice, per kind,
        // which is what once went past SQLite's argument limit.
        kit.ok(
            &mut s,
            Request::Capture(memd_proto::CaptureRequest {
                host: "claude-code".into(),
                session: "s1".into(),
                file: "1:1".into(),
                path: "/t.jsonl".into(),
                from: 0,
                to: 10,
                turns: vec![memd_proto::CapturedTurn {
                    id: "u1".into(),
                    speaker: "User".into(),
                    text: format!("said {}", words(30)),
                    at: None,
                }],
                ..Default::default()
            }),
        )
        .await;
        let Response::Hits(r) = kit
            .ok(&mut s, Request::Search(search(&words(MAX_QUERY_WORDS))))
            .await
        else {
            panic!()
        };
        assert_eq!(r.hits.len(), 2);
        // Repeats and stopwords are not counted.
        let repeated = format!("{} the a of {}", words(MAX_QUERY_WORDS), words(10));
        kit.ok(&mut s, Request::Search(search(&repeated))).await;
        for mode in [SearchMode::Lexical, SearchMode::Fuzzy, SearchMode::Auto] {
            let e = kit
                .err(
                    &mut s,
                    Request::Search(memd_proto::SearchRequest {
                        mode,
                        ..search(&words(MAX_QUERY_WORDS + 1))
                    }),
                    ErrorCode::InvalidInput,
                )
                .await;
            assert!(
                e.message.contains("257 distinct words") && e.message.contains("at most 256"),
                "{e:?}"
            );
            assert!(!e.message.to_lowercase().contains("select"), "{e:?}");
        }
        // Semantic search does not look words up: the embedder is what it
        // lacks here.
        kit.err(
            &mut s,
            Request::Search(memd_proto::SearchRequest {
                mode: SearchMode::Semantic,
                ..search(&words(MAX_QUERY_WORDS + 1))
            }),
            ErrorCode::NotConfigured,
        )
        .await;
        // FTS syntax weighs its phrases in the index: no word limit.
        kit.ok(
            &mut s,
            Request::Search(memd_proto::SearchRequest {
                syntax: QuerySyntax::Fts,
                ..search(&words(600).replace(' ', " OR "))
            }),
        )
        .await;
        let mut many = search("word1");
        many.filter.namespaces = (0..=MAX_SEARCH_NAMESPACES)
            .map(|i| format!("ns{i}"))
            .collect();
        let e = kit
            .err(
                &mut s,
                Request::Search(many.clone()),
                ErrorCode::InvalidInput,
            )
            .await;
        assert!(e.message.contains("201 namespaces"), "{e:?}");
        many.filter.namespaces.pop();
        kit.ok(&mut s, Request::Search(many)).await;
    }
}
