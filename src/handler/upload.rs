//! `upload`: a file sent through the socket, in chunks, for `restore` or `import`.

use memd_proto::{Response, UploadAck, UploadChunk};

use super::{Ctx, HandlerError};
use crate::session::{Session, Upload};

pub(super) async fn handle(
    req: UploadChunk,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    if req.reset {
        session.upload = None;
    }
    let max = cx.config().limits.max_upload_bytes;
    if session.upload.as_ref().map_or(0, |u| u.len) + req.data.len() as u64 > max {
        session.upload = None;
        return Err(HandlerError::InvalidInput(format!(
            "the upload is over the {max}-byte limit (limits.max_upload_bytes)"
        )));
    }
    if session.upload.is_none() {
        session.upload = Some(Upload::create(cx.data_dir(), session.id())?);
    }
    let up = session.upload.as_mut().expect("created above");
    tokio::task::block_in_place(|| {
        use std::io::Write;
        up.file.write_all(&req.data)
    })?;
    up.len += req.data.len() as u64;
    Ok(Response::Uploaded(UploadAck { received: up.len }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, Request, Response, UploadChunk};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn appends_chunks_within_the_limit() {
        let kit = Kit::with(|c| c.limits.max_upload_bytes = 10);
        let mut s = kit.session("a");
        let chunk = |data: &[u8], reset| {
            Request::Upload(UploadChunk {
                data: data.to_vec(),
                reset,
            })
        };
        let Response::Uploaded(a) = kit.ok(&mut s, chunk(b"abcd", false)).await else {
            panic!()
        };
        assert_eq!(a.received, 4);
        let Response::Uploaded(a) = kit.ok(&mut s, chunk(b"efgh", false)).await else {
            panic!()
        };
        assert_eq!(a.received, 8);
        let path = s.upload.as_ref().unwrap().path.clone();
        assert_eq!(std::fs::read(&path).unwrap(), b"abcdefgh");
        // Over the limit: refused, and the partial upload is gone.
        kit.err(&mut s, chunk(b"ijkl", false), ErrorCode::InvalidInput)
            .await;
        assert!(s.upload.is_none());
        assert!(!path.exists());
        let Response::Uploaded(a) = kit.ok(&mut s, chunk(b"xy", true)).await else {
            panic!()
        };
        assert_eq!(a.received, 2);
    }
}
