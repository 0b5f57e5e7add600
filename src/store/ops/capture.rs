//! Captured conversations: a stretch of a host's transcript stored with its
//! offset in one write job (an append: it cannot discard anything, so no
//! drift guard applies, and it never leaves the machine — a captured turn
//! is not shared with the team), where capture stands, and a session's
//! turns removed.

use memd_proto::{CaptureReport, CaptureState};

use crate::session::ident::Author;
use crate::store::capture::{self, Stretch};
use crate::store::readers::ReadKind;
use crate::store::{Store, StoreError};

impl Store {
    /// Stores a stretch of a transcript for `author` and moves its offset.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn capture(
        &self,
        author: Author,
        stretch: Stretch,
    ) -> Result<CaptureReport, StoreError> {
        self.writer
            .call(author, move |ctx| {
                let mut ids = Vec::new();
                let report = capture::store(ctx.conn, stretch, |id| ids.push(id))?;
                for id in ids {
                    ctx.wrote(id);
                }
                Ok(report)
            })
            .await
    }

    /// Where capture stands (of `host`, of `session`).
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn capture_states(
        &self,
        host: Option<String>,
        session: Option<String>,
    ) -> Result<Vec<CaptureState>, StoreError> {
        Ok(self
            .readers
            .read(ReadKind::Client, move |conn| {
                capture::states(conn, host.as_deref(), session.as_deref())
            })
            .await?
            .value)
    }

    /// Deletes a host session's captured turns and its capture state.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn capture_forget(&self, host: String, session: String) -> Result<u64, StoreError> {
        self.writer
            .call(Author::Daemon, move |ctx| {
                capture::forget(ctx.conn, &host, &session)
            })
            .await
    }
}
