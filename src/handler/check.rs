//! `check`: SQLite integrity, FTS integrity and sync, required triggers.

use memd_proto::{CheckReport, CheckRequest, Response};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;
use crate::store::readers::ReadKind;

pub(super) async fn handle(
    _req: CheckRequest,
    _session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let read = shared
        .store
        .readers
        .read(ReadKind::Internal, crate::store::health::integrity)
        .await?;
    let crate::store::health::Integrity {
        integrity,
        memories,
        fts_rows,
        out_of_sync,
        orphans,
        missing,
        version,
        generation,
    } = read.value;
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
