//! `citations`: the live memories of the session's namespace (and the
//! person's own, `@me`, as a block shows them) that cite code. The client
//! that asks runs in a checkout and checks them there; the daemon never
//! opens a cited path. Not a read of the rows for the drift guard, not a
//! use: the answer is handed to no model as it is.

use memd_proto::cite::{CitationList, CitationsRequest};
use memd_proto::{Filter, PERSONAL_NAMESPACE, Response};
use time::OffsetDateTime;

use super::{Ctx, HandlerError};
use crate::gate;
use crate::session::Session;

pub(super) async fn handle(
    req: CitationsRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let filter = match req.id {
        // One memory, wherever it lives, as `get` finds it.
        Some(_) => Filter {
            all_namespaces: true,
            include_superseded: true,
            include_archived: true,
            ..Filter::default()
        },
        None => {
            let mut namespaces = vec![session.namespace().to_string()];
            if req.personal && session.namespace() != PERSONAL_NAMESPACE {
                namespaces.push(PERSONAL_NAMESPACE.to_string());
            }
            Filter {
                namespaces,
                ..Filter::default()
            }
        }
    };
    let view = gate::view(&filter, &session.who, OffsetDateTime::now_utc())?;
    let read = cx.store().cited(view, req.id).await?;
    Ok(Response::Citations(CitationList {
        memories: read.value,
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::cite::CitationsRequest;
    use memd_proto::{AddRequest, PERSONAL_NAMESPACE, Request, Response};

    use crate::handler::support::testkit::{Kit, cited};

    async fn ids(kit: &Kit, s: &mut crate::session::Session, personal: bool) -> Vec<i64> {
        match kit
            .ok(
                s,
                Request::Citations(CitationsRequest { personal, id: None }),
            )
            .await
        {
            Response::Citations(l) => l.memories.iter().map(|m| m.id).collect(),
            other => panic!("{other:?}"),
        }
    }

    async fn added(kit: &Kit, s: &mut crate::session::Session, req: AddRequest) -> i64 {
        match kit.ok(s, Request::Add(req)).await {
            Response::Added(r) => r.id.unwrap(),
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lists_the_cited_memories_of_the_namespace_and_the_persons_own() {
        let kit = Kit::new();
        let mut s = kit.session_in("a", "github.com/acme/api");
        let mut other = kit.session_in("a", "github.com/acme/web");
        let mut me = kit.session_in("a", PERSONAL_NAMESPACE);
        kit.add(&mut s, "the build uses make").await;
        let here = added(
            &kit,
            &mut s,
            cited("retries are set in the webhook", &["src/hook.rs:40-44"]),
        )
        .await;
        added(
            &kit,
            &mut other,
            cited("the web app's router", &["src/router.ts"]),
        )
        .await;
        let mine = added(
            &kit,
            &mut me,
            cited("my notes on the parser", &["docs/parser.md"]),
        )
        .await;
        assert_eq!(ids(&kit, &mut s, false).await, [here]);
        assert_eq!(ids(&kit, &mut s, true).await, [here, mine]);
        // A forgotten memory is not listed.
        kit.ok(
            &mut s,
            Request::Forget(memd_proto::ForgetRequest {
                id: here,
                expect_rev: None,
            }),
        )
        .await;
        assert_eq!(ids(&kit, &mut s, false).await, Vec::<i64>::new());
    }
}
