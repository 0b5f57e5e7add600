//! `compacted`: the agent compacted its context; the next inject rebuilds the block.

use memd_proto::{CompactedRequest, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;

/// The agent compacted its context: the block is rebuilt at the next
/// inject.
pub(super) async fn handle(
    _req: CompactedRequest,
    session: &mut Session,
    _cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    session.invalidate();
    Ok(Response::Invalidated)
}

#[cfg(test)]
mod tests {
    use memd_proto::{CompactedRequest, InjectRequest, Request, Response};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn drops_the_block() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        kit.add(&mut s, "the build uses make").await;
        kit.ok(&mut s, Request::Inject(InjectRequest {})).await;
        assert!(s.snapshot().is_some());
        let r = kit
            .ok(&mut s, Request::Compacted(CompactedRequest {}))
            .await;
        assert_eq!(r, Response::Invalidated);
        assert!(s.snapshot().is_none());
    }
}
