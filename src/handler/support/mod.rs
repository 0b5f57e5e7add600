//! What several handlers share: a session's write from its guard to what
//! it leaves in the session (`write`), the page size, the session's
//! download, one search, the views. Not a request: each file beside this
//! module handles exactly one.

pub(crate) mod download;
pub(crate) mod search;
#[cfg(test)]
pub(crate) mod testkit;
pub(crate) mod view;

use memd_proto::{Memory, MemoryReply, Response};

use super::{Ctx, HandlerError};
use crate::drift::policy::WriteKind;
use crate::drift::refusal::Refusal;
use crate::session::Session;
use crate::store::ops::Written;
use crate::store::{Guard, StoreError};

/// What the session's write of `kind` is checked against: its policy,
/// its seen generation, its identity and its read set (the store runs the
/// check inside the write transaction).
pub(crate) fn guard(session: &Session, kind: WriteKind) -> Guard {
    Guard {
        policy: session.policy,
        seen: session.seen(),
        kind,
        who: session.who.clone(),
        reads: session.reads(),
    }
}

/// A session's write, the tail every write handler shares: the session's
/// [`guard`] for a write of `kind`, the store operation `op` under it (the
/// store runs the check inside its write transaction), then what the write
/// leaves in the session ([`settle`]). A handler keeps only what differs:
/// its checks before, the operation, its reply after.
pub(crate) async fn write<T, F, Fut>(
    cx: &Ctx<'_>,
    session: &mut Session,
    kind: WriteKind,
    op: F,
) -> Result<Written<T>, HandlerError>
where
    F: FnOnce(Guard) -> Fut,
    Fut: Future<Output = Result<Written<T>, StoreError>>,
{
    let written = op(guard(session, kind)).await;
    Ok(settle(cx, session, written).await?)
}

/// The reply of a write that answers with the memory as it is now.
pub(crate) fn memory_reply(written: Written<Memory>) -> Response {
    Response::Memory(Box::new(MemoryReply {
        memory: written.value,
        generation: written.generation,
        proposal: written.proposals.first().copied(),
    }))
}

/// `compacted` and `refresh`, one body: the session's block is dropped, so
/// the next inject builds it anew from the rows as they are then
/// (`Session::invalidate`).
pub(crate) fn new_block_at_next_inject(session: &mut Session) -> Response {
    session.invalidate();
    Response::Invalidated
}

/// What a session's write leaves in the session. A write that went
/// through drops the session's block (its next inject must show the
/// write; a hook session keeps its block, see
/// `Session::wrote_block_content`) and records the rows it wrote in the read set. A refusal wrote
/// nothing; one on the whole view comes back with the backup that holds
/// every row (its reply moves the session's seen generation, see
/// `dispatch`); a row-rule refusal moves nothing, so the same blind write
/// is refused again until the session reads the row.
async fn settle<T>(
    cx: &Ctx<'_>,
    session: &mut Session,
    result: Result<Written<T>, StoreError>,
) -> Result<Written<T>, StoreError> {
    match result {
        Ok(written) => {
            session.wrote_block_content();
            session.wrote(written.generation, written.rows.iter().copied());
            Ok(written)
        }
        Err(StoreError::Drift(mut refusal)) => {
            if let Refusal::View(view) = refusal.as_mut() {
                let store = cx.store();
                match cx
                    .backups()
                    .for_refusal(view.cause, view.observed, || store.all_rows())
                    .await
                {
                    Ok(path) => view.backup = Some(path.display().to_string()),
                    Err(e) => tracing::error!(error = %e, "cannot write the drift backup"),
                }
            }
            tracing::warn!(
                session = %session.id(),
                policy = session.policy.as_str(),
                rule = refusal.rule().as_str(),
                observed = refusal.observed(),
                actual = refusal.actual(),
                "refused a write made on a stale view"
            );
            Err(StoreError::Drift(refusal))
        }
        Err(e) => Err(e),
    }
}

/// The largest page a list or search returns, and the default when the
/// request says 0.
pub(crate) fn page_limit(asked: u32, cx: &Ctx<'_>) -> u32 {
    match asked {
        0 => 20,
        n => n.min(cx.config().limits.max_results),
    }
}

#[cfg(test)]
mod tests {
    use memd_proto::{CompactedRequest, InjectRequest, RefreshRequest, Request, Response};

    use super::testkit::Kit;

    /// `compacted` and `refresh` share their body, and this test: the reply
    /// says the block is invalidated, the block is gone, and the next
    /// inject builds a new one that shows what another session wrote since.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn compacted_and_refresh_drop_the_block_for_the_next_inject() {
        for req in [
            Request::Compacted(CompactedRequest {}),
            Request::Refresh(RefreshRequest {}),
        ] {
            let kit = Kit::new();
            let mut a = kit.session("a");
            let mut b = kit.session("b");
            kit.add(&mut a, "the build uses make").await;
            kit.ok(&mut a, Request::Inject(InjectRequest {})).await;
            assert!(a.snapshot().is_some());
            kit.add(&mut b, "the tests run with nextest").await;
            assert_eq!(kit.ok(&mut a, req).await, Response::Invalidated);
            assert!(a.snapshot().is_none());
            let Response::Injected(i) = kit.ok(&mut a, Request::Inject(InjectRequest {})).await
            else {
                panic!("an inject answers with the block")
            };
            assert!(!i.stats.cached);
            assert!(i.block.contains("nextest"), "{}", i.block);
        }
    }
}
