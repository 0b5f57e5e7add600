//! `reembed`: rebuild every stored vector with the daemon's embedder — the
//! way out of a model lock held by another model. The stored vectors and
//! near-duplicate notices are dropped and the lock is set to the current
//! model in one commit (the daemon's own: memories do not change, so no
//! generation moves); the worker then embeds every row in the background,
//! with progress in `status` (`embedder.embedded`, `embedder.pending`).

use memd_proto::{ReembedReport, ReembedRequest, Response};

use crate::embed::rules::ModelLock;
use crate::session::Session;
use crate::session::ident::Author;
use crate::state::Shared;
use crate::store::StoreError;
use crate::store::vectors::write_lock;

pub(super) async fn handle(
    _req: ReembedRequest,
    _session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let embedder = shared.embed.embedder()?;
    let lock = ModelLock {
        model: embedder.model_id().to_string(),
        dim: embedder.dim(),
    };
    let previous = shared.embed.lock();
    let job_lock = lock.clone();
    let pending = shared
        .store
        .writer
        .call(Author::Daemon, move |ctx| {
            crate::store::vectors::clear(ctx.conn)?;
            write_lock(ctx.conn, &job_lock)?;
            crate::store::memories::count(ctx.conn)
        })
        .await?;
    {
        let mut index = shared
            .embed
            .index
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        *index = crate::embed::vectors::Index::new(lock.dim);
    }
    shared.embed.set_lock(Some(lock.clone()));
    shared.embed.request_reload();
    tracing::info!(model = %lock.model, pending, "re-embedding every memory");
    Ok(Response::Reembedding(ReembedReport {
        model: lock.model,
        dim: lock.dim as u64,
        previous_model: previous.as_ref().map(|l| l.model.clone()),
        previous_dim: previous.as_ref().map(|l| l.dim as u64),
        pending: pending as u64,
    }))
}
