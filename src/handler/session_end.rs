//! `session end`: ends a named session.

use memd_proto::{Response, SessionEndRequest, SessionEnded};

use super::{Ctx, HandlerError};
use crate::session::Session;

/// Ends a named session of the namespace.
pub(super) async fn handle(
    req: SessionEndRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let Some(named) = cx.named().end(session.namespace(), &req.name) else {
        return Err(HandlerError::InvalidInput(format!(
            "no session named `{}` in namespace {}",
            req.name,
            session.namespace()
        )));
    };
    let connections = named.connections();
    cx.end_named(named).await;
    Ok(Response::SessionEnded(SessionEnded {
        ended: req.name,
        connections: connections as u64,
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{DriftPolicy, ErrorCode, Request, Response, SessionEndRequest};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn ends_a_named_session_and_refuses_an_unknown_name() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let named = kit.session_with("claude-code", DriftPolicy::Standard, Some("work"));
        drop(named);
        let end = |name: &str| Request::SessionEnd(SessionEndRequest { name: name.into() });
        let Response::SessionEnded(e) = kit.ok(&mut s, end("work")).await else {
            panic!()
        };
        assert_eq!(e.ended, "work");
        assert!(kit.shared.named.list(Some("default")).is_empty());
        kit.err(&mut s, end("work"), ErrorCode::InvalidInput).await;
    }
}
