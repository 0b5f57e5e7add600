//! `reembed`: rebuild every stored vector with the daemon's embedder — the
//! way out of a model lock held by another model. The stored vectors and
//! near-duplicate notices are dropped and the lock is set to the current
//! model in one commit (the daemon's own: memories do not change, so no
//! generation moves); the worker then embeds every row in the background,
//! with progress in `status` (`embedder.embedded`, `embedder.pending`).

use memd_proto::{ReembedReport, ReembedRequest, Response};

use super::{Ctx, HandlerError};
use crate::embed::rules::ModelLock;
use crate::session::Session;
use crate::sync;

/// `reembed`: drops every stored vector, locks the database to the
/// configured model and lets the embedding worker start over. A write of
/// the daemon (vectors are not memories: no session's drift).
pub(super) async fn handle(
    _req: ReembedRequest,
    _session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let embed = cx.embed();
    let embedder = embed.embedder()?;
    let lock = ModelLock {
        model: embedder.model_id().to_string(),
        dim: embedder.dim(),
    };
    let previous = embed.lock();
    let pending = cx.store().reset_vectors(lock.clone()).await?;
    {
        let mut index = sync::write(&embed.index);
        *index = crate::embed::vectors::Index::new(lock.dim);
    }
    embed.set_lock(Some(lock.clone()));
    embed.request_reload();
    tracing::info!(model = %lock.model, pending, "re-embedding every memory");
    Ok(Response::Reembedding(ReembedReport {
        model: lock.model,
        dim: lock.dim as u64,
        previous_model: previous.as_ref().map(|l| l.model.clone()),
        previous_dim: previous.as_ref().map(|l| l.dim as u64),
        pending: pending as u64,
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, ReembedRequest, Request};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn without_an_embedder_it_says_so() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        kit.add(&mut s, "the build uses make").await;
        let e = kit
            .err(
                &mut s,
                Request::Reembed(ReembedRequest {}),
                ErrorCode::NotConfigured,
            )
            .await;
        assert!(!e.message.is_empty());
    }
}
