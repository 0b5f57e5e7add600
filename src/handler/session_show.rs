//! `session show`: what a named session was told — its frozen block byte
//! for byte, when it was built, and the memories (and revs) in it. Read
//! only: the session is not joined and no block is built.

use memd_proto::{NamedSessionInfo, Response, SessionDetail, SessionShowRequest};

use super::Ctx;
use super::HandlerError;
use crate::session::Session;
use crate::sync;

pub(super) async fn handle(
    req: SessionShowRequest,
    _session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let Some(named) = cx.named().find(&req.namespace, &req.name) else {
        return Err(HandlerError::InvalidInput(format!(
            "no named session `{}` in namespace `{}`",
            req.name, req.namespace
        )));
    };
    let (seen, block, built) = {
        let view = sync::lock(&named.view);
        (view.seen, view.snapshot.clone(), view.built.clone())
    };
    let read_set_rows = sync::lock(&named.reads).export().2.len() as u64;
    let built = built.filter(|_| block.is_some());
    Ok(Response::SessionShown(Box::new(SessionDetail {
        info: NamedSessionInfo {
            namespace: named.who.namespace.clone(),
            name: named.who.session.clone(),
            agent: named.who.agent.clone(),
            connections: named.connections() as u64,
            idle_secs: named.idle().as_secs(),
            seen_generation: seen,
            has_block: block.is_some(),
        },
        policy: named.policy,
        hold_block: named.hold_block,
        block_rows: built.as_ref().map(|b| b.rows.clone()).unwrap_or_default(),
        built_at: built.map(|b| b.at),
        block,
        read_set_rows,
    })))
}

#[cfg(test)]
mod tests {
    use memd_proto::{
        DriftPolicy, ErrorCode, InjectRequest, Request, Response, SessionShowRequest,
    };

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shows_the_block_a_named_session_was_given_and_its_rows() {
        let kit = Kit::new();
        let mut plain = kit.session("a");
        let id = kit.add(&mut plain, "the build uses make").await;
        let mut named = kit.session_with("claude-code", DriftPolicy::Standard, Some("work"));
        let Response::Injected(given) = kit.ok(&mut named, Request::Inject(InjectRequest {})).await
        else {
            panic!()
        };
        let show = |name: &str| {
            Request::SessionShow(SessionShowRequest {
                namespace: "default".into(),
                name: name.into(),
            })
        };
        let Response::SessionShown(d) = kit.ok(&mut plain, show("work")).await else {
            panic!()
        };
        assert_eq!(
            d.block.as_ref().map(|b| b.block.as_str()),
            Some(given.block.as_str())
        );
        assert_eq!(d.block_rows, vec![(id, 1)]);
        assert!(d.built_at.is_some());
        assert_eq!(d.info.agent, "claude-code");
        kit.err(&mut plain, show("nobody"), ErrorCode::InvalidInput)
            .await;
    }
}
