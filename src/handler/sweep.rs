//! `sweep`: the lifecycle sweep on demand (decay, tiers, expiry, scope limits).

use memd_proto::{Response, SweepRequest};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;
use crate::store::lifecycle::Trigger;

pub(super) async fn handle(
    req: SweepRequest,
    _session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let report = crate::jobs::sweep::run(shared, Trigger::Manual, req.dry_run).await?;
    Ok(Response::Swept(report))
}
