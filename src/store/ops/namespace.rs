//! A maintenance write of the daemon: a project's memories follow it to
//! its namespace (see `jobs::namespaces`).

use crate::session::ident::Author;
use crate::store::{Store, StoreError, memories};

impl Store {
    /// Moves every memory of namespace `from` to `to`, and the capture
    /// state of the sessions captured into it, in one transaction; returns
    /// how many memories moved.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn move_namespace(&self, from: String, to: String) -> Result<usize, StoreError> {
        self.writer
            .call(Author::Daemon, move |ctx| {
                let n = memories::move_namespace(ctx.conn, &from, &to)?;
                crate::store::capture::move_namespace(ctx.conn, &from, &to)?;
                Ok(n)
            })
            .await
    }
}
