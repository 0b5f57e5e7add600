//! `check`: SQLite integrity, FTS integrity and sync, required triggers.

use memd_proto::{CheckRequest, Report, Response};
use serde_json::json;

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
    let fts: Vec<&String> = integrity.iter().filter(|l| l.starts_with("fts5")).collect();
    let fts = if fts.is_empty() {
        Ok(())
    } else {
        Err(fts
            .iter()
            .map(|l| l.as_str())
            .collect::<Vec<_>>()
            .join("; "))
    };
    let integrity_ok = integrity == ["ok"];
    let ok = integrity_ok
        && fts.is_ok()
        && missing.is_empty()
        && out_of_sync == 0
        && orphans == 0
        && fts_rows == memories;
    let report = json!({
        "ok": ok,
        "integrity": if integrity_ok { json!("ok") } else { json!(integrity) },
        "fts_integrity": match &fts { Ok(()) => "ok".to_string(), Err(e) => e.clone() },
        "memories": memories,
        "fts_rows": fts_rows,
        "fts_out_of_sync": out_of_sync,
        "fts_orphans": orphans,
        "missing_objects": missing,
        "schema_version": version,
        "generation": generation,
    });
    Ok(Response::Report(Report {
        json: report.to_string(),
    }))
}
