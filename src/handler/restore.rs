//! `upload` and `restore`: the client streams a SQLite file (the daemon never
//! opens a path a client names), then the daemon copies it into the live
//! database through the SQLite backup API. A restore counts as an external
//! change: every session must read again before a destructive write.

use memd_proto::{Response, RestoreReport, RestoreRequest};

use super::{Ctx, HandlerError};
use crate::session::Session;

/// Replaces the database with the uploaded SQLite file (the backup API;
/// counted as an external change).
pub(super) async fn handle(
    _req: RestoreRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let upload = session
        .upload
        .take()
        .ok_or_else(|| HandlerError::InvalidInput("nothing was uploaded to restore from".into()))?;
    tokio::task::block_in_place(|| upload.file.sync_all())?;
    let bytes = upload.len;
    tracing::warn!(session = %session.id(), bytes, "restoring the database from an uploaded file");
    let restored = cx.store().restore(upload.path.clone()).await?;
    drop(upload);
    Ok(Response::Restored(RestoreReport {
        bytes,
        generation_in_file: restored.generation_in_file,
        generation: restored.generation,
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{BackupRequest, ErrorCode, Request, Response, RestoreRequest};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn restores_a_backup_as_an_external_change() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        kit.add(&mut s, "the build uses make").await;
        kit.ok(&mut s, Request::Backup(BackupRequest {})).await;
        let backup = kit.fetch_all(&mut s).await;
        kit.add(&mut s, "added after the backup").await;
        let restore = || Request::Restore(RestoreRequest {});
        kit.err(&mut s, restore(), ErrorCode::InvalidInput).await;
        kit.upload(&mut s, b"not a database").await;
        kit.err(&mut s, restore(), ErrorCode::InvalidInput).await;
        assert_eq!(kit.store_count().await, 2, "a bad file changes nothing");
        let before = kit.shared.store.generations.current();
        kit.upload(&mut s, &backup).await;
        let Response::Restored(r) = kit.ok(&mut s, restore()).await else {
            panic!()
        };
        assert!(r.generation > before, "generations never go back");
        assert_eq!(kit.store_count().await, 1);
        assert!(
            kit.shared
                .store
                .generations
                .external_epoch
                .load(std::sync::atomic::Ordering::Acquire)
                >= r.generation
        );
    }
}
