//! `capture forget`: removes a host session's captured turns and its
//! capture state (memories someone kept from them stay: they are their
//! own rows).

use memd_proto::{CaptureForgetRequest, CaptureForgotten, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;

pub(super) async fn handle(
    req: CaptureForgetRequest,
    _session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    if req.session.is_empty() {
        return Err(HandlerError::InvalidInput(
            "capture forget: name the session".into(),
        ));
    }
    let turns = cx.store().capture_forget(req.host, req.session).await?;
    Ok(Response::CaptureForgotten(CaptureForgotten { turns }))
}
