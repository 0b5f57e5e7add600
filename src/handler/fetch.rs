//! `fetch`: the next chunk of the session's download.

use std::os::unix::fs::FileExt;

use memd_proto::{Chunk, FetchRequest, Response};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

/// Largest chunk a fetch returns.
const FETCH_MAX: u32 = 1024 * 1024;

pub(super) async fn handle(
    req: FetchRequest,
    session: &mut Session,
    _shared: &Shared,
) -> Result<Response, StoreError> {
    let d = session.download.as_ref().ok_or_else(|| {
        StoreError::InvalidInput("nothing to fetch: ask for an export or a backup first".into())
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
