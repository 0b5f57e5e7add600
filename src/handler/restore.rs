//! `upload` and `restore`: the client streams a SQLite file (the daemon never
//! opens a path a client names), then the daemon copies it into the live
//! database through the SQLite backup API. A restore counts as an external
//! change: every session must read again before a destructive write.

use memd_proto::{Response, RestoreReport, RestoreRequest};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

pub(super) async fn handle(
    _req: RestoreRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let upload = session
        .upload
        .take()
        .ok_or_else(|| StoreError::InvalidInput("nothing was uploaded to restore from".into()))?;
    tokio::task::block_in_place(|| upload.file.sync_all())?;
    let bytes = upload.len;
    tracing::warn!(session = %session.id(), bytes, "restoring the database from an uploaded file");
    let restored = shared.store.writer.restore(upload.path.clone()).await?;
    drop(upload);
    Ok(Response::Restored(RestoreReport {
        bytes,
        generation_in_file: restored.generation_in_file,
        generation: restored.generation,
    }))
}
