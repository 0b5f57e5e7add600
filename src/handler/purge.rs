//! `purge`: erases memories and every trace of their text this machine
//! keeps. The store erases the rows, their history and index entries
//! (`Store::purge`); here the rest: frozen blocks that held one are
//! dropped (named sessions' at once, on disk too; a connection's at its
//! next inject), drift backups are rewritten without them, and both
//! database files are compacted with their WAL emptied. Without `confirm`
//! it only lists what it would erase.

use memd_proto::{PurgeReport, PurgeRequest, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;
use crate::session::ident::Author;
use crate::session::named::changed;
use crate::store::sessions::Record;
use crate::sync::lock;

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
        .purge(Author::Session(session.who.clone()), by, uids.clone())
        .await?;
    tracing::warn!(
        uids = ?done.uids,
        session = %session.id(),
        "purged memories and every trace of their text"
    );
    lock(cx.purged()).extend(done.ids.iter().copied());
    let holds = |view: &crate::session::View| {
        view.built
            .as_ref()
            .is_some_and(|b| b.rows.iter().any(|(id, _)| done.ids.contains(id)))
    };
    // Named sessions' blocks, in memory and on disk.
    let mut blocks = 0u64;
    for named in cx.named().all() {
        {
            let mut view = lock(&named.view);
            if !holds(&view) {
                continue;
            }
            view.snapshot = None;
            view.built = None;
        }
        blocks += 1;
        named.mark(changed::BLOCK);
        if let Some((_, keeping)) = named.take_changes() {
            cx.session_file().put(Record::of(&named));
            drop(keeping);
        }
    }
    // This connection's own block (other connections' at their next inject).
    if session.named.is_none()
        && session
            .built()
            .is_some_and(|b| b.rows.iter().any(|(id, _)| done.ids.contains(id)))
    {
        session.invalidate();
        blocks += 1;
    }
    let backups = cx.backups().rewrite_without(done.uids.clone()).await?;
    let scrubbed = cx.store().scrub().await?;
    cx.session_file().scrub().await?;
    Ok(Response::Purged(PurgeReport {
        blocks_rebuilt: blocks,
        backups_rewritten: backups,
        not_rewritten: copies_before_migrations(cx.data_dir()),
        scrubbed,
        generation: cx.store().generations.current(),
        ..listed(true)
    }))
}

/// Copies of the database made before a schema migration
/// (`memory.db.v<N>.<time>.bak`): they may hold the text, and memd leaves
/// them to their owner.
fn copies_before_migrations(dir: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("memory.db.v") && n.ends_with(".bak"))
        .map(|n| dir.join(n).display().to_string())
        .collect();
    out.sort();
    out
}
