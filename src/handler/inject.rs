//! `inject`, `compacted`, `refresh`: the session's frozen memory block.
//!
//! A warm inject answers from the session's snapshot without touching
//! SQLite and moves seen only to `max(seen, built_at_generation)`: the prompt
//! still shows the old block, so a warm inject is not a read of new data.

use std::sync::atomic::Ordering;

use memd_proto::{InjectRequest, InjectStats, Injection, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;
use crate::session::snapshot;
use crate::store::ops::read::BlockFor;

pub(super) async fn handle(
    _req: InjectRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let stats = &cx.store().stats;
    // A purge erased a memory this frozen block shows: the one case where
    // a frozen block changes.
    let purged = {
        let p = crate::sync::lock(cx.purged());
        !p.is_empty() && session.drop_block_holding(&p)
    };
    if purged {
        tracing::info!(session = %session.id(), "a purged memory was in the frozen block: building a new one");
    }
    if let Some(snap) = session.snapshot() {
        stats.snapshot_hits.fetch_add(1, Ordering::Relaxed);
        // The prompt still shows the old block: the reply's generation is
        // the block's, not a newer one.
        let mut hit = snap;
        hit.stats.cached = true;
        return Ok(Response::Injected(hit));
    }
    let budget = session.budget;
    let who = BlockFor {
        namespace: session.namespace().to_string(),
        agent: session.agent().to_string(),
        session: session.id().to_string(),
    };
    let share = cx.config().inject.personal_share;
    let read = cx
        .store()
        .session_block(
            who,
            budget as usize,
            Some(memd_proto::PERSONAL_NAMESPACE.to_string()),
            share,
        )
        .await?;
    stats.snapshot_builds.fetch_add(1, Ordering::Relaxed);
    let (rendered, eligible) = read.value;
    let injection = Injection {
        hash: snapshot::hash(&rendered.block),
        block: rendered.block,
        built_at_generation: read.generation,
        stats: InjectStats {
            included: rendered.included,
            eligible,
            chars: rendered.chars,
            budget,
            cached: false,
        },
    };
    session.shown(read.generation, rendered.rows.iter().copied());
    session.set_snapshot(injection.clone(), rendered.rows);
    Ok(Response::Injected(injection))
}

#[cfg(test)]
mod tests {
    use memd_proto::{CompactedRequest, InjectRequest, Request, Response};

    use crate::handler::support::testkit::Kit;

    async fn inject(kit: &Kit, s: &mut crate::session::Session) -> memd_proto::Injection {
        match kit.ok(s, Request::Inject(InjectRequest {})).await {
            Response::Injected(i) => i,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_block_stays_frozen_until_the_session_writes() {
        let kit = Kit::new();
        let mut a = kit.session("a");
        let mut b = kit.session("b");
        kit.add(&mut a, "the build uses make").await;
        let first = inject(&kit, &mut a).await;
        assert!(!first.stats.cached);
        assert!(first.block.contains("the build uses make"));
        // Another session's write leaves a's block alone, and a warm
        // inject does not move seen past the block.
        kit.add(&mut b, "the tests run with nextest").await;
        let warm = inject(&kit, &mut a).await;
        assert!(warm.stats.cached);
        assert_eq!(warm.block, first.block);
        assert_eq!(a.seen(), first.built_at_generation);
        // Its own write rebuilds it.
        kit.add(&mut a, "the release is on tuesday").await;
        let rebuilt = inject(&kit, &mut a).await;
        assert!(!rebuilt.stats.cached);
        assert!(rebuilt.block.contains("nextest") && rebuilt.block.contains("tuesday"));
        assert_ne!(rebuilt.hash, first.hash);
        // Compaction asks for a new one too.
        kit.ok(&mut a, Request::Compacted(CompactedRequest {}))
            .await;
        assert!(!inject(&kit, &mut a).await.stats.cached);
    }
}
