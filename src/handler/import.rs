//! `import`: an uploaded export or drift backup, in chunks under the drift guard.

use memd_proto::{ImportReport, ImportRequest, Response};
use serde_json::Value;

use super::{Ctx, HandlerError};
use crate::drift::policy::WriteKind;
use crate::session::Session;
use crate::store::StoreError;

/// Entries imported per transaction. Small on purpose: inside a job's
/// savepoint every statement's own savepoint is released by truncating the
/// in-memory sub-journal, a walk from its start, so a job's cost grows with
/// the square of its rows (10K entries with tags: 500 per job 2.9 s, 100 per
/// job 1.4 s, 50 per job 1.2 s).
const IMPORT_CHUNK: usize = 100;

pub(super) async fn handle(
    req: ImportRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let upload = session
        .upload
        .take()
        .ok_or_else(|| HandlerError::InvalidInput("nothing was uploaded to import".into()))?;
    let path = upload.path.clone();
    let (doc, layout) = tokio::task::spawn_blocking(move || {
        let doc = std::fs::read_to_string(&path)
            .map_err(|e| StoreError::InvalidInput(format!("the file is not UTF-8 text: {e}")))?;
        let layout = crate::store::import::layout(&doc)?;
        Ok::<_, StoreError>((doc, layout))
    })
    .await
    .map_err(|e| HandlerError::Io(std::io::Error::other(e)))??;
    drop(upload);
    let kind = if req.replace {
        WriteKind::Destructive
    } else {
        WriteKind::Append
    };
    let links = std::sync::Arc::new(layout.links);
    let read = layout.order.len() as u64;
    let mut invalid = 0u64;
    let mut errors: Vec<String> = Vec::new();
    let mut totals = [0u64; 5]; // inserted, skipped, replaced, linked, dangling
    let session_namespace = session.namespace().to_string();
    for chunk in layout.order.chunks(IMPORT_CHUNK) {
        // Second pass: build only this chunk's entries.
        let mut batch = Vec::with_capacity(chunk.len());
        for range in chunk {
            let parsed = serde_json::from_str::<Value>(&doc[range.clone()])
                .map_err(|e| e.to_string())
                .and_then(|v| crate::store::import::entry(&v, &session_namespace));
            match parsed {
                Ok(e) => batch.push(e),
                Err(msg) => {
                    invalid += 1;
                    if errors.len() < 5 {
                        errors.push(format!("entry at byte {}: {msg}", range.start));
                    }
                }
            }
        }
        // Shared (team memory) and local entries are written apart.
        for part in cx.store().import_writes(batch) {
            if part.is_empty() {
                continue;
            }
            let (links, replace) = (links.clone(), req.replace);
            let written = super::support::write(cx, session, kind, |guard| {
                cx.store().import_chunk(guard, part, links, replace)
            })
            .await?;
            for (t, c) in totals.iter_mut().zip(written.value) {
                *t += c;
            }
        }
    }
    let [inserted, skipped, replaced, links, dangling_links] = totals;
    let report = ImportReport {
        read,
        inserted,
        skipped,
        replaced,
        links,
        dangling_links,
        invalid,
        errors,
    };
    tracing::info!(session = %session.id(), report = ?report, "import done");
    // The document was read whole; its pages go back to the system.
    drop(doc);
    crate::sys::release_free_memory();
    Ok(Response::Imported(report))
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, ExportRequest, ImportRequest, Request, Response};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn imports_an_export_once_and_refuses_bad_files() {
        let source = Kit::new();
        let mut s = source.session("a");
        source.add(&mut s, "the build uses make").await;
        source.add(&mut s, "the tests run with nextest").await;
        source
            .ok(&mut s, Request::Export(ExportRequest::default()))
            .await;
        let doc = source.fetch_all(&mut s).await;

        let kit = Kit::new();
        let mut t = kit.session("b");
        let import = |replace| Request::Import(ImportRequest { replace });
        kit.err(&mut t, import(false), ErrorCode::InvalidInput)
            .await;
        kit.upload(&mut t, &doc).await;
        let Response::Imported(r) = kit.ok(&mut t, import(false)).await else {
            panic!()
        };
        assert_eq!((r.read, r.inserted, r.skipped), (2, 2, 0));
        kit.upload(&mut t, &doc).await;
        let Response::Imported(r) = kit.ok(&mut t, import(false)).await else {
            panic!()
        };
        assert_eq!((r.inserted, r.skipped), (0, 2), "idempotent by uid");
        assert_eq!(kit.store_count().await, 2);
        kit.upload(&mut t, b"not json at all").await;
        kit.err(&mut t, import(false), ErrorCode::InvalidInput)
            .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn local_entries_land_when_the_team_refuses_the_shared_ones() {
        use crate::store::team::TeamError;
        use crate::store::team::engine::write::Refusal;
        use crate::store::team::wing::{Failing, Wing};
        let source = Kit::new();
        let mut mine = source.session_in("a", "mine");
        let mut team = source.session_in("a", "team");
        source.add(&mut mine, "the build uses make").await;
        source.add(&mut team, "the tests run with nextest").await;
        source
            .ok(
                &mut mine,
                Request::Export(ExportRequest {
                    all_namespaces: true,
                    ..ExportRequest::default()
                }),
            )
            .await;
        let doc = source.fetch_all(&mut mine).await;

        let failing = Failing::new("team", || {
            Refusal::Unavailable(TeamError::Unavailable("connection refused".into()))
        });
        let kit = Kit::with_wing(Wing::Failing(failing.clone()));
        let mut t = kit.session("b");
        kit.upload(&mut t, &doc).await;
        let e = kit
            .err(
                &mut t,
                Request::Import(ImportRequest { replace: false }),
                ErrorCode::TeamUnavailable,
            )
            .await;
        assert!(e.message.contains("connection refused"), "{e:?}");
        assert_eq!(failing.calls.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert_eq!(kit.store_count().await, 1, "the local entry only");
    }
}
