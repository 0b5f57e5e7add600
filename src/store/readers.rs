//! A small pool of read-only connections.
//!
//! Each read runs on tokio's blocking pool inside one deferred transaction
//! that first reads the generation, so the result and the generation come
//! from the same WAL snapshot (that generation becomes the session's seen).
//!
//! Every read holds the pool's gate shared; the writer thread takes it
//! exclusively to swap the database file (a restore, or a file replaced
//! under the daemon), so no reader ever straddles two files.

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::Semaphore;

use super::{Cause, Generations, Stats, StorageConfig, StoreError, read_generation};
use crate::sync;

/// Whether a read counts in `stats.db_reads` (client requests) or not
/// (`status`, background work).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadKind {
    /// On behalf of a client request.
    Client,
    /// Status and background work.
    Internal,
}

/// A value read together with the generation of its snapshot.
#[derive(Debug)]
pub struct Read<T> {
    /// What the closure returned.
    pub value: T,
    /// Generation of the read transaction.
    pub generation: u64,
}

/// The part of the pool the writer thread shares.
pub struct Pool {
    path: PathBuf,
    busy_timeout: Duration,
    mmap_bytes: i64,
    idle: Mutex<Vec<Connection>>,
    gate: RwLock<()>,
}

impl Pool {
    /// Runs `f` on an idle connection (opening one when none is idle), under
    /// the gate a file swap takes exclusively, and puts it back.
    fn with_idle<T>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let _gate = sync::read(&self.gate);
        let pooled = sync::lock(&self.idle).pop();
        let conn = match pooled {
            Some(c) => c,
            None => self.open()?,
        };
        let result = f(&conn);
        sync::lock(&self.idle).push(conn);
        result
    }

    fn open(&self) -> Result<Connection, StoreError> {
        let conn = Connection::open_with_flags(
            &self.path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(self.busy_timeout)?;
        // Pages read through the mapping are shared with the page cache
        // (Linux's unified buffer cache keeps them coherent with other
        // processes' writes); SQLite maps a file that grows afresh.
        conn.pragma_update(None, "mmap_size", self.mmap_bytes)?;
        super::configure_connection(&conn)?;
        conn.set_prepared_statement_cache_capacity(64);
        Ok(conn)
    }

    /// Runs `f` with every reader stopped and every idle connection closed;
    /// readers reopen the file afterwards.
    pub fn exclusive<T>(&self, f: impl FnOnce() -> T) -> T {
        let _gate = sync::write(&self.gate);
        sync::lock(&self.idle).clear();
        f()
    }
}

/// The pool.
pub struct Readers {
    pool: Arc<Pool>,
    permits: Semaphore,
    stats: Arc<Stats>,
    generations: Arc<Generations>,
}

impl Readers {
    /// A pool of at most `storage.readers` connections to `path`, opened
    /// lazily with `storage`'s busy timeout and mapping.
    pub fn new(
        path: PathBuf,
        storage: &StorageConfig,
        stats: Arc<Stats>,
        generations: Arc<Generations>,
    ) -> Readers {
        Readers {
            pool: Arc::new(Pool {
                path,
                busy_timeout: Duration::from_millis(storage.busy_timeout_ms),
                mmap_bytes: i64::try_from(storage.mmap_mb.saturating_mul(1 << 20))
                    .unwrap_or(i64::MAX),
                idle: Mutex::new(Vec::with_capacity(storage.readers)),
                gate: RwLock::new(()),
            }),
            permits: Semaphore::new(storage.readers),
            stats,
            generations,
        }
    }

    /// The part the writer thread uses to swap files.
    pub fn pool(&self) -> Arc<Pool> {
        self.pool.clone()
    }

    /// Opens one connection now, so a broken file fails at start-up.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn warm(&self) -> Result<(), StoreError> {
        let conn = self.pool.open()?;
        read_generation(&conn)?;
        sync::lock(&self.pool.idle).push(conn);
        Ok(())
    }

    /// Runs `f` in a read transaction on a blocking thread.
    ///
    /// # Errors
    /// The closure's error, or SQLite errors opening the transaction.
    pub(in crate::store) async fn read<T, F>(
        &self,
        kind: ReadKind,
        f: F,
    ) -> Result<Read<T>, StoreError>
    where
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| StoreError::Closed)?;
        if kind == ReadKind::Client {
            self.stats.db_reads.fetch_add(1, Ordering::Relaxed);
        }
        let pool = self.pool.clone();
        let read = tokio::task::spawn_blocking(move || pool.with_idle(|conn| run_in_tx(conn, f)))
            .await
            // A panicking closure loses its connection; the pool opens a new one
            // next time.
            .map_err(|e| StoreError::Sqlite(Cause::context("read failed", e)))??;
        self.generations.observe(read.generation);
        Ok(read)
    }

    /// Runs `f` on a pooled connection outside any transaction (for the
    /// backup API, which takes its own locks), on a blocking thread.
    ///
    /// # Errors
    /// The closure's error.
    pub(in crate::store) async fn with_connection<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let _permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| StoreError::Closed)?;
        let pool = self.pool.clone();
        tokio::task::spawn_blocking(move || pool.with_idle(f))
            .await
            .map_err(|e| StoreError::Sqlite(Cause::context("read failed", e)))?
    }

    /// Closes every idle connection; later reads fail.
    pub fn close(&self) {
        self.permits.close();
        sync::lock(&self.pool.idle).clear();
    }
}

fn run_in_tx<T>(
    conn: &Connection,
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<Read<T>, StoreError> {
    conn.execute_batch("BEGIN")?;
    let result = read_generation(conn)
        .and_then(|generation| f(conn).map(|value| Read { value, generation }));
    // A read transaction has nothing to keep: end it either way.
    if conn.execute_batch("COMMIT").is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each reader maps as much of the file as `[storage] mmap_mb` says,
    /// and none with 0.
    #[tokio::test]
    async fn readers_map_what_the_setting_says() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.db");
        let mut conn = Connection::open(&path).unwrap();
        crate::store::schema::migrate(&mut conn, dir.path()).unwrap();
        drop(conn);
        for (mb, bytes) in [(8u64, 8i64 << 20), (0, 0)] {
            let readers = Readers::new(
                path.clone(),
                &StorageConfig {
                    readers: 2,
                    mmap_mb: mb,
                    ..StorageConfig::default()
                },
                Arc::default(),
                Arc::default(),
            );
            let mapped = readers
                .read(ReadKind::Internal, |c| {
                    Ok(c.pragma_query_value(None, "mmap_size", |r| r.get::<_, i64>(0))?)
                })
                .await
                .unwrap()
                .value;
            assert_eq!(mapped, bytes, "mmap_mb = {mb}");
        }
    }
}
