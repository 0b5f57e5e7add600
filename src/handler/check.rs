//! `check`: SQLite integrity, FTS integrity and sync, required triggers.

use memd_proto::{CheckRequest, Report, Response};
use serde_json::json;

use crate::session::Session;
use crate::state::Shared;
use crate::store::readers::ReadKind;
use crate::store::{StoreError, read_generation, schema};

pub(super) async fn handle(
    _req: CheckRequest,
    _session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let read = shared
        .store
        .readers
        .read(ReadKind::Internal, |conn| {
            // FTS5's integrity method on a read-only connection checks the
            // index structure the connection cached at its last FTS query,
            // not the one committed since, and reports a checksum mismatch
            // that is not there (SQLite 3.54). Any scan of the table reloads
            // the structure first.
            conn.query_row(
                "SELECT count(*) FROM (SELECT rowid FROM memories_fts LIMIT 1)",
                [],
                |_| Ok(()),
            )?;
            let mut stmt = conn.prepare("PRAGMA integrity_check")?;
            let integrity = stmt
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            let (memories, fts_rows, out_of_sync, orphans): (i64, i64, i64, i64) = conn.query_row(
                "SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM memories_fts), \
                 (SELECT count(*) FROM memories m LEFT JOIN memories_fts f ON f.rowid = m.id \
                  WHERE f.rowid IS NULL OR f.content IS NOT m.content \
                  OR f.subject IS NOT m.subject), \
                 (SELECT count(*) FROM memories_fts f \
                  WHERE NOT EXISTS (SELECT 1 FROM memories m WHERE m.id = f.rowid))",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )?;
            let missing = schema::missing_objects(conn)?;
            let version = schema::current_version(conn)?;
            Ok((
                integrity,
                memories,
                fts_rows,
                out_of_sync,
                orphans,
                missing,
                version,
                read_generation(conn)?,
            ))
        })
        .await?;
    let (integrity, memories, fts_rows, out_of_sync, orphans, missing, version, generation) =
        read.value;
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
