//! `refresh`: the session asks for a new block at the next inject.

use memd_proto::{RefreshRequest, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;

/// The session asks for a new block at the next inject.
pub(super) async fn handle(
    _req: RefreshRequest,
    session: &mut Session,
    _cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    session.invalidate();
    Ok(Response::Invalidated)
}

#[cfg(test)]
mod tests {
    use memd_proto::{InjectRequest, RefreshRequest, Request, Response};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_next_inject_shows_what_others_wrote() {
        let kit = Kit::new();
        let mut a = kit.session("a");
        let mut b = kit.session("b");
        kit.ok(&mut a, Request::Inject(InjectRequest {})).await;
        kit.add(&mut b, "the tests run with nextest").await;
        assert_eq!(
            kit.ok(&mut a, Request::Refresh(RefreshRequest {})).await,
            Response::Invalidated
        );
        let Response::Injected(i) = kit.ok(&mut a, Request::Inject(InjectRequest {})).await else {
            panic!()
        };
        assert!(!i.stats.cached);
        assert!(i.block.contains("nextest"));
    }
}
