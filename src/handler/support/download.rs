//! The session's download file: `export` and `backup` prepare it in the
//! data dir (mode 0600), `fetch` reads it.

use memd_proto::{DownloadInfo, Response};
use serde_json::Value;

use super::super::{Ctx, HandlerError};
use crate::session::{Download, Session, create_private};

/// The session's download file, replacing an earlier one.
pub(crate) fn new_download(
    cx: &Ctx<'_>,
    session: &mut Session,
) -> Result<(std::path::PathBuf, std::fs::File), HandlerError> {
    session.download = None;
    let path = cx
        .data_dir()
        .join(format!(".download-{}.tmp", session.id()));
    let file = create_private(&path)?;
    Ok((path, file))
}

/// Keeps `file` as the session's download and answers with its size and
/// `info`.
pub(crate) fn finish_download(
    session: &mut Session,
    path: std::path::PathBuf,
    file: std::fs::File,
    info: Value,
) -> Result<Response, HandlerError> {
    let size = file.metadata()?.len();
    session.download = Some(Download { path, file, size });
    Ok(Response::Download(DownloadInfo {
        size,
        info: info.to_string(),
    }))
}
