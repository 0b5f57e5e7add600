//! What several handlers share: the guarded write, the page size, the
//! session's download, one search, the views. Not a request: each file
//! beside this module handles exactly one.

pub(crate) mod download;
pub(crate) mod search;
pub(crate) mod view;

use memd_proto::DriftNotice;

use crate::drift::policy::WriteKind;
use crate::drift::refusal::Refusal;
use crate::session::Session;
use crate::state::Shared;
use crate::store::readers::ReadKind;
use crate::store::{Guard, StoreError, WriteCtx};

/// Runs a session's write under the drift guard. The rules on the
/// session's whole view run first, inside the write transaction, after the
/// writer's external-change check; the job then checks each row it changes
/// with [`WriteCtx::check_row`]. A refusal writes nothing. One on the whole
/// view moves the session's seen generation to the current one (the retry
/// after review passes that rule; the row rule still holds every row that
/// changed) and comes back with the backup that holds every row; a row-rule
/// refusal moves nothing, so the same blind write is refused again until the
/// session reads the row. After a write, the session's read set records the
/// rows it wrote, at their new revs.
pub(crate) async fn guarded<T, F>(
    shared: &Shared,
    session: &mut Session,
    kind: WriteKind,
    f: F,
) -> Result<T, StoreError>
where
    F: FnOnce(&mut WriteCtx<'_>, Option<DriftNotice>) -> Result<T, StoreError> + Send + 'static,
    T: Send + 'static,
{
    let guard = Guard {
        policy: session.policy,
        seen: session.seen(),
        kind,
        who: session.who.clone(),
        reads: session.reads(),
    };
    let result = shared
        .store
        .writer
        .call(session.author(), move |ctx| {
            let notice = ctx.guard(guard)?;
            let out = f(ctx, notice)?;
            Ok((out, ctx.written_revs()?, ctx.generation()?))
        })
        .await;
    match result {
        Ok((out, written, generation)) => {
            session.wrote_block_content();
            session.wrote(generation, written);
            Ok(out)
        }
        Err(StoreError::Drift(mut refusal)) => {
            if let Refusal::View(view) = refusal.as_mut() {
                session.saw(shared.store.generations.current().max(view.actual), []);
                match shared
                    .backups
                    .for_refusal(view.cause, view.observed, || async {
                        let read = shared
                            .store
                            .readers
                            .read(ReadKind::Internal, crate::store::memories::all_rows)
                            .await?;
                        Ok::<_, StoreError>((read.value, read.generation))
                    })
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
pub(crate) fn page_limit(asked: u32, shared: &Shared) -> u32 {
    match asked {
        0 => 20,
        n => n.min(shared.config().limits.max_results),
    }
}
