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
    Ok(super::support::new_block_at_next_inject(session))
}
