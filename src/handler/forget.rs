//! `forget`: delete a memory (its old values stay in `memory_revisions`).

use memd_proto::{ForgetRequest, ForgetResult, Response};

use super::{Ctx, HandlerError};
use crate::drift::policy::WriteKind;
use crate::session::Session;

pub(super) async fn handle(
    req: ForgetRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let view = super::support::view::everything(session)?;
    let written = super::support::write(cx, session, WriteKind::Destructive, |guard| {
        cx.store().forget(guard, req.id, req.expect_rev, view)
    })
    .await?;
    Ok(Response::Forgotten(ForgetResult {
        id: req.id,
        generation: written.generation,
        proposal: written.proposals.first().copied(),
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{DriftRule, ErrorCode, ForgetRequest, Request, Response};

    use crate::handler::support::testkit::{Kit, drift_rule};

    fn forget(id: i64) -> Request {
        Request::Forget(ForgetRequest {
            id,
            expect_rev: None,
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deletes_and_then_finds_nothing() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let id = kit.add(&mut s, "the build uses make").await;
        let Response::Forgotten(f) = kit.ok(&mut s, forget(id)).await else {
            panic!()
        };
        assert_eq!(f.id, id);
        kit.err(&mut s, forget(id), ErrorCode::NotFound).await;
        assert_eq!(kit.store_count().await, 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_row_changed_by_another_session_is_not_forgotten_blind() {
        let kit = Kit::new();
        let mut a = kit.session("a");
        let mut b = kit.session("b");
        let id = kit.add(&mut a, "the build uses make").await;
        kit.get(&mut b, id).await;
        kit.ok(
            &mut b,
            Request::Update(memd_proto::UpdateRequest {
                id,
                content: Some("the build uses ninja".into()),
                ..Default::default()
            }),
        )
        .await;
        let e = kit.err(&mut a, forget(id), ErrorCode::Drift).await;
        assert_eq!(drift_rule(&e), DriftRule::Row);
        let stale = Request::Forget(ForgetRequest {
            id,
            expect_rev: Some(1),
        });
        kit.err(&mut a, stale, ErrorCode::Conflict).await;
        assert_eq!(kit.store_count().await, 1, "nothing was deleted");
    }
}
