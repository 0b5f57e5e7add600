//! `subscribe`: drift events become pushes (frame id 0) on this connection.

use memd_proto::{Response, SubscribeRequest};

use super::{Ctx, HandlerError};
use crate::session::Session;

/// Drift and similarity events are pushed to this session from now on.
pub(super) async fn handle(
    _req: SubscribeRequest,
    session: &mut Session,
    _cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    session.subscribed = true;
    Ok(Response::Subscribed)
}

#[cfg(test)]
mod tests {
    use memd_proto::{Request, Response, SubscribeRequest};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn marks_the_session_for_pushes() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        assert!(!s.subscribed);
        assert_eq!(
            kit.ok(&mut s, Request::Subscribe(SubscribeRequest {}))
                .await,
            Response::Subscribed
        );
        assert!(s.subscribed);
    }
}
