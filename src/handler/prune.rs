//! `prune`: deletes expired memories.

use memd_proto::{PruneRequest, PruneResult, Response};

use crate::session::Session;
use crate::session::ident::Author;
use crate::state::Shared;
use crate::store::StoreError;
use crate::store::memories::{self};

/// `prune`: deletes expired memories (already invisible to every read) of
/// the session's namespace, or of all with `all_namespaces`. A maintenance
/// write of the daemon: it counts as drift for nobody.
pub(super) async fn handle(
    req: PruneRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let namespace = (!req.all_namespaces).then(|| session.namespace().to_string());
    let dry_run = req.dry_run;
    let (ids, generation) = shared
        .store
        .writer
        .call(Author::Daemon, move |ctx| {
            let now = crate::clock::now();
            let ids = memories::expired_ids(ctx.conn, &now, namespace.as_deref())?;
            if !dry_run {
                for id in &ids {
                    memories::delete(ctx.conn, *id)?;
                }
            }
            Ok((ids, ctx.generation()?))
        })
        .await?;
    if !dry_run && !ids.is_empty() {
        tracing::info!(session = %session.id(), pruned = ids.len(), "pruned expired memories");
    }
    Ok(Response::Pruned(PruneResult {
        ids,
        dry_run,
        generation,
    }))
}
