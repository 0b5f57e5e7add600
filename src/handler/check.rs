//! `check`: SQLite integrity, FTS integrity and sync, required triggers.

use memd_proto::{CheckRequest, Report, Response};
use serde_json::json;

use crate::daemon::Shared;
use crate::session::Session;
use crate::store::readers::ReadKind;
use crate::store::{Author, StoreError, read_generation, schema};

pub(super) async fn handle(
    _req: CheckRequest,
    _session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let read = shared
        .store
        .readers
        .read(ReadKind::Internal, |conn| {
            let mut stmt = conn.prepare("PRAGMA integrity_check")?;
            let integrity = stmt
                .query_map([], |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            let (memories, fts_rows, out_of_sync): (i64, i64, i64) = conn.query_row(
                "SELECT (SELECT count(*) FROM memories), (SELECT count(*) FROM memories_fts), \
                 (SELECT count(*) FROM memories m LEFT JOIN memories_fts f ON f.rowid = m.id \
                  WHERE f.rowid IS NULL OR f.content IS NOT m.content \
                  OR f.subject IS NOT m.subject)",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )?;
            let missing = schema::missing_objects(conn)?;
            let version = schema::current_version(conn)?;
            Ok((
                integrity,
                memories,
                fts_rows,
                out_of_sync,
                missing,
                version,
                read_generation(conn)?,
            ))
        })
        .await?;
    let (integrity, memories, fts_rows, out_of_sync, missing, version, generation) = read.value;
    // The FTS5 integrity command is an INSERT: it runs on the writer, in a
    // savepoint, and changes nothing.
    let fts = shared
        .store
        .writer
        .call(Author::Daemon, |ctx| {
            Ok(ctx
                .conn
                .execute_batch("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
                .map_err(|e| e.to_string()))
        })
        .await?;
    let integrity_ok = integrity == ["ok"];
    let ok = integrity_ok
        && fts.is_ok()
        && missing.is_empty()
        && out_of_sync == 0
        && fts_rows == memories;
    let report = json!({
        "ok": ok,
        "integrity": if integrity_ok { json!("ok") } else { json!(integrity) },
        "fts_integrity": match &fts { Ok(()) => "ok".to_string(), Err(e) => e.clone() },
        "memories": memories,
        "fts_rows": fts_rows,
        "fts_out_of_sync": out_of_sync,
        "missing_objects": missing,
        "schema_version": version,
        "generation": generation,
    });
    Ok(Response::Report(Report {
        json: report.to_string(),
    }))
}
