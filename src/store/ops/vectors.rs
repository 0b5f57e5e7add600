//! What the embedding worker and `reembed` read and write: the model lock,
//! the stored vectors, the rows still without one, near-duplicate records.
//! Writes here are the daemon's own (never a session's drift).

use std::collections::HashMap;

use crate::embed::rules::{self, LockCheck, ModelLock};
use crate::embed::vectors::Index;
use crate::session::ident::Author;
use crate::store::readers::ReadKind;
use crate::store::vectors::{self, Close, Pending};
use crate::store::{Store, StoreError, memories};

/// Every stored vector, read for a new index.
#[derive(Debug)]
pub struct Loaded {
    /// The model lock in the file.
    pub lock: Option<ModelLock>,
    /// The vectors of the lock's dimension (empty for another).
    pub index: Index,
    /// The newest row id.
    pub newest: i64,
}

impl Store {
    /// The lock and every stored vector of `dim` dimensions.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn load_vectors(&self, dim: usize) -> Result<Loaded, StoreError> {
        let read = self
            .readers
            .read(ReadKind::Internal, move |conn| {
                let lock = vectors::read_lock(conn)?;
                let newest = vectors::newest_id(conn)?;
                let index = vectors::load_index(conn, lock.as_ref(), dim)?;
                Ok(Loaded {
                    lock,
                    index,
                    newest,
                })
            })
            .await?;
        Ok(read.value)
    }

    /// The lock, and the ids of the rows that have a stored vector.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn vector_ids(
        &self,
    ) -> Result<(Option<ModelLock>, HashMap<i64, Option<vectors::Threaded>>), StoreError> {
        let read = self
            .readers
            .read(ReadKind::Internal, |conn| {
                Ok((vectors::read_lock(conn)?, vectors::stored_ids(conn)?))
            })
            .await?;
        Ok(read.value)
    }

    /// Up to `limit` rows without a vector, oldest first.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn pending_vectors(&self, limit: i64) -> Result<Vec<Pending>, StoreError> {
        let read = self
            .readers
            .read(ReadKind::Internal, move |conn| {
                vectors::pending(conn, limit)
            })
            .await?;
        Ok(read.value)
    }

    /// Stores vectors made with the model `lock` names (taking the lock
    /// when the file has none), each only if its row still holds the text
    /// embedded; returns the ones stored.
    ///
    /// # Errors
    /// `NotConfigured` when the file is locked to another model; SQLite
    /// errors.
    pub async fn store_vectors(
        &self,
        lock: ModelLock,
        items: Vec<(i64, String, String, Vec<f32>)>,
    ) -> Result<Vec<(i64, String, Vec<f32>)>, StoreError> {
        self.writer
            .call(Author::Daemon, move |ctx| {
                match rules::check_lock(
                    vectors::read_lock(ctx.conn)?.as_ref(),
                    &lock.model,
                    lock.dim,
                ) {
                    LockCheck::Free => vectors::write_lock(ctx.conn, &lock)?,
                    LockCheck::Same => {}
                    LockCheck::Other(stored) => {
                        return Err(StoreError::NotConfigured(rules::mismatch_message(
                            &stored,
                            &lock.model,
                            lock.dim,
                        )));
                    }
                }
                vectors::store(ctx.conn, items)
            })
            .await
    }

    /// Row `id`'s namespace, subject and metadata, and which of the `close`
    /// rows are active beside it (`None` when it is gone or superseded).
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn neighbors(
        &self,
        id: i64,
        close: Vec<(i64, f32)>,
    ) -> Result<Option<Close>, StoreError> {
        let read = self
            .readers
            .read(ReadKind::Internal, move |conn| {
                vectors::neighbors_of(conn, id, &close)
            })
            .await?;
        Ok(read.value)
    }

    /// Records `newer` as a semantic near duplicate of `older` (and
    /// supersedes `older` when asked) if both are still active; `true` when
    /// recorded.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn record_similar(
        &self,
        newer: i64,
        older: i64,
        cosine: f32,
        supersede: bool,
    ) -> Result<bool, StoreError> {
        self.writer
            .call(Author::Daemon, move |ctx| {
                vectors::record_similar(ctx.conn, newer, older, cosine, supersede)
            })
            .await
    }

    /// Drops every stored vector and locks the file to `lock` (`reembed`);
    /// returns the number of rows to embed again.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn reset_vectors(&self, lock: ModelLock) -> Result<i64, StoreError> {
        self.writer
            .call(Author::Daemon, move |ctx| {
                vectors::clear(ctx.conn)?;
                vectors::write_lock(ctx.conn, &lock)?;
                memories::count(ctx.conn)
            })
            .await
    }
}
