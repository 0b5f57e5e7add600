//! `upload`: a file sent through the socket, in chunks, for `restore` or `import`.

use memd_proto::{Response, UploadAck, UploadChunk};

use crate::session::{Session, Upload};
use crate::state::Shared;
use crate::store::StoreError;

pub(super) async fn handle(
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
