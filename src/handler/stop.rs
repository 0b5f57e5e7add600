//! `stop`: graceful shutdown, as on SIGTERM.

use memd_proto::{Response, StopRequest};

use super::{Ctx, HandlerError};
use crate::session::Session;

/// Stops the daemon (in-flight requests finish first).
pub(super) async fn handle(
    _req: StopRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    tracing::info!(session = %session.id(), agent = %session.agent(), "stop requested by a client");
    cx.stop();
    Ok(Response::Stopping)
}

#[cfg(test)]
mod tests {
    use memd_proto::{Request, Response, StopRequest};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn triggers_the_shutdown() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        assert!(!kit.shared.shutdown.is_triggered());
        assert_eq!(
            kit.ok(&mut s, Request::Stop(StopRequest {})).await,
            Response::Stopping
        );
        assert!(kit.shared.shutdown.is_triggered());
    }
}
