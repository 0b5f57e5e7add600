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
    Ok(super::support::new_block_at_next_inject(session))
}
