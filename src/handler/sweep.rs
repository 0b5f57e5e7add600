//! `sweep`: the lifecycle sweep on demand (decay, tiers, expiry, scope limits).

use memd_proto::{Response, SweepRequest};

use super::{Ctx, HandlerError};
use crate::session::Session;

/// A lifecycle sweep on demand (decay, tiers, expiry, scope limits).
pub(super) async fn handle(
    req: SweepRequest,
    _session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let report = cx.sweep(req.dry_run).await?;
    Ok(Response::Swept(report))
}

#[cfg(test)]
mod tests {
    use memd_proto::{Request, Response, SweepRequest};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn sweeps_on_demand_and_a_dry_run_writes_nothing() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        kit.add(&mut s, "the build uses make").await;
        let before = kit.shared.store.generations.current();
        let Response::Swept(r) = kit
            .ok(&mut s, Request::Sweep(SweepRequest { dry_run: true }))
            .await
        else {
            panic!()
        };
        assert!(r.dry_run);
        assert_eq!(kit.shared.store.generations.current(), before);
        let Response::Swept(r) = kit
            .ok(&mut s, Request::Sweep(SweepRequest { dry_run: false }))
            .await
        else {
            panic!()
        };
        assert!(!r.dry_run);
        assert_eq!(kit.store_count().await, 1);
    }
}
