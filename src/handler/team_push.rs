//! `team push`: share a local namespace with the team (upload its
//! memories to the team's PostgreSQL, idempotent by uid).

use memd_proto::{Response, TeamPushRequest};

use super::{Ctx, HandlerError};
use crate::session::Session;

pub(super) async fn handle(
    req: TeamPushRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    if req.namespace.trim().is_empty() {
        return Err(HandlerError::InvalidInput("the namespace is empty".into()));
    }
    let report = cx.store().team_push(&session.who, &req.namespace).await?;
    Ok(Response::TeamPushed(report))
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, Request, TeamPushRequest};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn without_team_memory_it_says_so() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let push = |ns: &str| {
            Request::TeamPush(TeamPushRequest {
                namespace: ns.into(),
            })
        };
        kit.err(&mut s, push("default"), ErrorCode::NotConfigured)
            .await;
        kit.err(&mut s, push(" "), ErrorCode::InvalidInput).await;
    }
}
