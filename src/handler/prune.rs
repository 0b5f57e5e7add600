//! `prune`: deletes expired memories.

use memd_proto::{PruneRequest, PruneResult, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;

/// `prune`: deletes expired memories (already invisible to every read) of
/// the session's namespace, or of all with `all_namespaces`. A maintenance
/// write of the daemon, not of the session: it is not checked by the
/// session's drift guard and counts as drift for nobody.
pub(super) async fn handle(
    req: PruneRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let namespace = (!req.all_namespaces).then(|| session.namespace().to_string());
    let dry_run = req.dry_run;
    let (mut ids, mut generation) = cx.store().prune(namespace.clone(), dry_run).await?;
    // Expired shared rows (team memory) go through the team's PostgreSQL.
    let guard = super::support::guard(session, crate::drift::policy::WriteKind::Destructive);
    let shared = cx.store().prune_shared(guard, namespace, dry_run).await?;
    if !shared.is_empty() {
        ids.extend(shared);
        ids.sort_unstable();
        generation = cx.store().generations.current();
    }
    if !dry_run && !ids.is_empty() {
        tracing::info!(session = %session.id(), pruned = ids.len(), "pruned expired memories");
    }
    Ok(Response::Pruned(PruneResult {
        ids,
        dry_run,
        generation,
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{AddRequest, PruneRequest, Request, Response};

    use crate::handler::support::testkit::{Kit, add};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deletes_only_expired_rows_and_a_dry_run_deletes_none() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let keep = kit.add(&mut s, "the build uses make").await;
        let Response::Added(r) = kit
            .ok(
                &mut s,
                Request::Add(AddRequest {
                    expires: Some("1s".into()),
                    ..add("a note that expires at once")
                }),
            )
            .await
        else {
            panic!()
        };
        let gone = r.id.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
        let prune = |dry_run| {
            Request::Prune(PruneRequest {
                dry_run,
                all_namespaces: false,
            })
        };
        let Response::Pruned(p) = kit.ok(&mut s, prune(true)).await else {
            panic!()
        };
        assert_eq!(p.ids, vec![gone]);
        assert_eq!(kit.store_count().await, 2);
        let Response::Pruned(p) = kit.ok(&mut s, prune(false)).await else {
            panic!()
        };
        assert_eq!(p.ids, vec![gone]);
        assert_eq!(kit.store_count().await, 1);
        kit.get(&mut s, keep).await;
    }
}
