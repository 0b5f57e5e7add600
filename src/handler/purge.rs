//! `purge`: erases memories and every trace of their text this machine
//! keeps — and, for a memory of a namespace shared with the team, in the
//! team's PostgreSQL first (`Store::purge`). The rest (frozen blocks, drift
//! backups, compacting the files) is `state::purge::finish`, which the team
//! pull's purges go through too. Without `confirm` it only lists what it
//! would erase.

use memd_proto::{PurgeReport, PurgeRequest, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;
use crate::session::ident::Author;

pub(super) async fn handle(
    req: PurgeRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let targets = cx.store().purge_targets(req.id, req.matching).await?;
    let listed = |purged| PurgeReport {
        targets: targets.clone(),
        purged,
        blocks_rebuilt: 0,
        backups_rewritten: 0,
        not_rewritten: Vec::new(),
        scrubbed: false,
        generation: cx.store().generations.current(),
    };
    if !req.confirm || targets.is_empty() {
        return Ok(Response::Purged(listed(false)));
    }
    let uids: Vec<String> = targets.iter().map(|t| t.uid.clone()).collect();
    let by = format!("agent {} (session {})", session.agent(), session.id());
    let done = cx
        .store()
        .purge(Author::Session(session.who.clone()), by, uids)
        .await?;
    tracing::warn!(
        uids = ?done.uids,
        session = %session.id(),
        "purged memories and every trace of their text"
    );
    let finished = cx.finish_purge(&done).await?;
    // This connection's own block (other connections' at their next inject).
    let mut blocks = finished.blocks;
    if session.named.is_none() && session.built().is_some_and(|b| b.holds_any(&done.ids)) {
        session.invalidate();
        blocks += 1;
    }
    Ok(Response::Purged(PurgeReport {
        blocks_rebuilt: blocks,
        backups_rewritten: finished.backups,
        not_rewritten: finished.not_rewritten,
        scrubbed: finished.scrubbed,
        generation: cx.store().generations.current(),
        ..listed(true)
    }))
}
