//! `session list`: the named sessions of the session's namespace.

use memd_proto::{NamedSessionInfo, Response, SessionList, SessionListRequest};

use super::{Ctx, HandlerError};
use crate::session::Session;

/// The named sessions of the session's namespace (or of every one).
pub(super) async fn handle(
    req: SessionListRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let every = req.all_namespaces || session.who.reach.every_namespace;
    let sessions = cx
        .named()
        .list((!every).then(|| session.namespace()))
        .into_iter()
        .map(|s| NamedSessionInfo {
            namespace: s.namespace,
            name: s.name,
            agent: s.agent,
            connections: s.connections as u64,
            idle_secs: s.idle_secs,
            seen_generation: s.seen,
            has_block: s.has_block,
        })
        .collect();
    Ok(Response::Sessions(SessionList { sessions }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{DriftPolicy, Request, Response, SessionListRequest};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn lists_the_named_sessions_of_the_namespace() {
        let kit = Kit::new();
        let mut plain = kit.session("a");
        let _named = kit.session_with("claude-code", DriftPolicy::Standard, Some("work"));
        let Response::Sessions(l) = kit
            .ok(
                &mut plain,
                Request::SessionList(SessionListRequest::default()),
            )
            .await
        else {
            panic!()
        };
        assert_eq!(l.sessions.len(), 1);
        assert_eq!(l.sessions[0].name, "work");
        assert_eq!(l.sessions[0].agent, "claude-code");
    }
}
