//! `upload` and `restore`: the client streams a SQLite file (the daemon never
//! opens a path a client names), then the daemon copies it into the live
//! database through the SQLite backup API. A restore counts as an external
//! change: every session must read again before a destructive write.

use memd_proto::{Report, Response, RestoreRequest, UploadAck, UploadChunk};
use serde_json::json;

use crate::session::{Session, Upload};
use crate::state::Shared;
use crate::store::StoreError;

pub(super) async fn upload(
    req: UploadChunk,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    if req.reset {
        session.upload = None;
    }
    let max = shared.config().limits.max_upload_bytes;
    if session.upload.as_ref().map_or(0, |u| u.len) + req.data.len() as u64 > max {
        session.upload = None;
        return Err(StoreError::InvalidInput(format!(
            "the upload is over the {max}-byte limit (limits.max_upload_bytes)"
        )));
    }
    if session.upload.is_none() {
        session.upload = Some(Upload::create(&shared.paths.data_dir, session.id())?);
    }
    let up = session.upload.as_mut().expect("created above");
    tokio::task::block_in_place(|| {
        use std::io::Write;
        up.file.write_all(&req.data)
    })?;
    up.len += req.data.len() as u64;
    Ok(Response::Uploaded(UploadAck { received: up.len }))
}

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
    let report = json!({
        "restored": true,
        "bytes": bytes,
        "generation_in_file": restored.generation_in_file,
        "generation": restored.generation,
    });
    Ok(Response::Report(Report {
        json: report.to_string(),
    }))
}
