//! WAL checkpoints: the writer checkpoints itself, when idle or once the
//! WAL is long, instead of SQLite's automatic checkpoint inside a commit a
//! client waits for.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rusqlite::Connection;

use crate::store::StoreError;

use super::Thread;

/// The writer checkpoints the WAL itself, when it has nothing else to do and
/// the WAL holds at least this many frames (SQLite's own automatic
/// checkpoint would run in the middle of a commit that a client waits for).
pub(super) const CHECKPOINT_IDLE_FRAMES: i64 = 1_000;

/// Under a load that never lets the writer idle, it checkpoints after a
/// batch once the WAL holds this many frames (bounding the WAL's size).
pub(super) const CHECKPOINT_BUSY_FRAMES: i64 = 8_000;

/// Counts the frames in the WAL after each of the connection's commits; the
/// hook replaces SQLite's automatic checkpoint.
pub(super) fn watch_wal(conn: &mut Connection, frames: &Arc<AtomicI64>) -> Result<(), StoreError> {
    let frames = frames.clone();
    conn.wal_hook(Some(
        move |_: &mut rusqlite::hooks::Wal, n: std::os::raw::c_int| {
            frames.store(i64::from(n), Ordering::Relaxed);
            Ok(())
        },
    ))?;
    Ok(())
}

impl Thread {
    /// Whether the WAL holds at least `frames` frames that no checkpoint has
    /// tried yet.
    pub(super) fn checkpoint_due(&self, frames: i64) -> bool {
        let now = self.wal_frames.load(Ordering::Relaxed);
        now >= frames && now != self.checkpointed_at && self.broken.is_none()
    }

    /// Copies the WAL into the database without waiting for readers
    /// (`PASSIVE`); the next commit starts the WAL over when all of it was
    /// copied.
    pub(super) fn checkpoint(&mut self) {
        self.checkpointed_at = self.wal_frames.load(Ordering::Relaxed);
        let done = self
            .conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
            });
        match done {
            Ok((log, copied)) => tracing::debug!(log, copied, "checkpoint"),
            Err(e) => {
                tracing::warn!(error = %e, "checkpoint failed; will retry after the next commit");
            }
        }
    }
}
