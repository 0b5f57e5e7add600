//! What several handlers share: the session's write guard and what a write
//! leaves in the session, the page size, the session's download, one
//! search, the views. Not a request: each file beside this module handles
//! exactly one.

pub(crate) mod download;
pub(crate) mod search;
#[cfg(test)]
pub(crate) mod testkit;
pub(crate) mod view;

use crate::drift::policy::WriteKind;
use crate::drift::refusal::Refusal;
use crate::session::Session;
use crate::store::ops::Written;
use crate::store::{Guard, StoreError};

use super::Ctx;

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

/// What a session's write leaves in the session. A write that went
/// through drops the session's block (its next inject must show the
/// write; a hook session keeps its block, see
/// `Session::wrote_block_content`) and records the rows it wrote in the read set. A refusal wrote
/// nothing; one on the whole view comes back with the backup that holds
/// every row (its reply moves the session's seen generation, see
/// `dispatch`); a row-rule refusal moves nothing, so the same blind write
/// is refused again until the session reads the row.
pub(crate) async fn settle<T>(
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
