//! `check`: SQLite integrity, FTS integrity and sync, required triggers.

use memd_proto::{CheckReport, CheckRequest, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;

/// Integrity: SQLite's check, the FTS index's, rows missing from the index
/// and missing schema objects.
pub(super) async fn handle(
    _req: CheckRequest,
    _session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let crate::store::health::Integrity {
        integrity,
        memories,
        fts_rows,
        out_of_sync,
        orphans,
        missing,
        version,
        generation,
    } = cx.store().integrity().await?;
    // SQLite's integrity check runs FTS5's own (the `integrity-check`
    // command, without needing a write transaction, so it works on a full
    // disk or a read-only file); its findings start with `fts5:`.
    let fts_integrity: Vec<String> = integrity
        .iter()
        .filter(|l| l.starts_with("fts5"))
        .cloned()
        .collect();
    let ok = integrity == ["ok"]
        && fts_integrity.is_empty()
        && missing.is_empty()
        && out_of_sync == 0
        && orphans == 0
        && fts_rows == memories;
    let count = |n: i64| u64::try_from(n).unwrap_or(0);
    Ok(Response::Checked(CheckReport {
        ok,
        integrity,
        fts_integrity,
        memories: count(memories),
        fts_rows: count(fts_rows),
        fts_out_of_sync: count(out_of_sync),
        fts_orphans: count(orphans),
        missing_objects: missing,
        schema_version: version,
        generation,
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{CheckRequest, Request, Response};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sound_database_passes_with_external_rows_indexed() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        kit.add(&mut s, "the build uses make").await;
        let Response::Checked(c) = kit.ok(&mut s, Request::Check(CheckRequest {})).await else {
            panic!()
        };
        assert!(c.ok, "{c:?}");
        assert_eq!((c.memories, c.fts_rows), (1, 1));
        assert!(c.missing_objects.is_empty());
        // A row another tool inserts is indexed by the triggers.
        if !kit.insert_by_hand("added by hand") {
            return;
        }
        let Response::Checked(c) = kit.ok(&mut s, Request::Check(CheckRequest {})).await else {
            panic!()
        };
        assert!(c.ok, "{c:?}");
        assert_eq!((c.memories, c.fts_rows), (2, 2));
    }
}
