//! `capture status`: where the capture of each host's session stands — the
//! offset the next capture starts at, turns, bytes, redactions, the last
//! capture and the last error.

use memd_proto::{CaptureStates, CaptureStatusRequest, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;

pub(super) async fn handle(
    req: CaptureStatusRequest,
    _session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let sessions = cx.store().capture_states(req.host, req.session).await?;
    Ok(Response::CaptureStates(CaptureStates { sessions }))
}
