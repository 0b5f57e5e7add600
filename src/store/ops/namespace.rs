//! A maintenance write of the daemon: a project's memories follow it to
//! its namespace (see `jobs::namespaces`).

use crate::session::ident::Author;
use crate::store::{Store, StoreError, memories};

impl Store {
    /// Moves every memory of namespace `from` to `to` in one transaction;
    /// returns how many moved.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn move_namespace(&self, from: String, to: String) -> Result<usize, StoreError> {
        self.writer
            .call(Author::Daemon, move |ctx| {
                memories::move_namespace(ctx.conn, &from, &to)
            })
            .await
    }
}
