//! `fetch`: the next chunk of the session's download.

use std::os::unix::fs::FileExt;

use memd_proto::{Chunk, FetchRequest, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;

/// Largest chunk a fetch returns.
const FETCH_MAX: u32 = 1024 * 1024;

pub(super) async fn handle(
    req: FetchRequest,
    session: &mut Session,
    _cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let d = session.download.as_ref().ok_or_else(|| {
        HandlerError::InvalidInput("nothing to fetch: ask for an export or a backup first".into())
    })?;
    let len = u64::from(req.len.clamp(1, FETCH_MAX));
    let want = len.min(d.size.saturating_sub(req.offset));
    let mut data = vec![0u8; want as usize];
    let mut read = 0;
    tokio::task::block_in_place(|| {
        while read < data.len() {
            match d.file.read_at(&mut data[read..], req.offset + read as u64) {
                Ok(0) => break,
                Ok(n) => read += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    })?;
    data.truncate(read);
    let eof = req.offset + read as u64 >= d.size;
    if eof {
        session.download = None;
    }
    Ok(Response::Chunk(Chunk { data, eof }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{BackupRequest, ErrorCode, FetchRequest, Request, Response};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_the_download_in_chunks_then_forgets_it() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let fetch = |offset, len| Request::Fetch(FetchRequest { offset, len });
        kit.err(&mut s, fetch(0, 10), ErrorCode::InvalidInput).await;
        kit.add(&mut s, "the build uses make").await;
        let Response::Download(d) = kit.ok(&mut s, Request::Backup(BackupRequest {})).await else {
            panic!()
        };
        let Response::Chunk(c) = kit.ok(&mut s, fetch(0, 16)).await else {
            panic!()
        };
        assert_eq!(c.data, b"SQLite format 3\0");
        assert!(!c.eof);
        let Response::Chunk(c) = kit.ok(&mut s, fetch(d.size - 1, 100)).await else {
            panic!()
        };
        assert_eq!(c.data.len(), 1);
        assert!(c.eof);
        // Fetched to the end: gone.
        kit.err(&mut s, fetch(0, 10), ErrorCode::InvalidInput).await;
    }
}
