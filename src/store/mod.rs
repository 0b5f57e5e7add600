//! The SQLite store: schema, the writer thread, the reader pool, and the
//! queries over memories.
//!
//! # Layout
//! - [`schema`]: the schema as it is now (`schema/current.sql`), its
//!   versioned migrations (`schema/v1.sql` … ) and the migration mechanism.
//! - [`writer`]: the one thread that owns the write connection; group commit.
//! - [`readers`]: read-only connections run on tokio's blocking pool.
//! - [`memories`]: row mapping, insert/update/delete, visibility and filters.
//! - [`meta`]: `memory_meta`, the database's own facts (generation, model lock).
//! - [`search`]: lexical and fuzzy search, ranking.
//! - [`access`]: batched access tracking (use counts), never an edit.
//! - [`lifecycle`]: decay, tiers, expiry and scope-limit sweeps.
//! - [`inject`]: the read behind a session's memory block.
//! - [`kinds`]: what kind a row is (captured, history, local, synced),
//!   each predicate spelled once.
//! - [`citations`]: the memories that cite code and the last verdicts on them.
//! - [`ops`]: the named operations handlers and jobs call — the only way
//!   in from outside the store (no connection, transaction or closure over
//!   one leaves it).
//! - `error`: [`StoreError`], and [`Cause`], which keeps the error below.
//! - `facade` (feature `bench`): what `memd-bench` uses directly.
//!
//! No SQLite call runs on a tokio worker thread: writes go to the writer
//! thread, reads to `spawn_blocking`.

pub mod access;
pub mod capture;
pub mod chains;
pub mod citations;
mod error;
pub mod export;
#[cfg(feature = "bench")]
pub mod facade;
pub mod health;
pub mod import;
pub mod inject;
pub(crate) mod kinds;
pub mod lifecycle;
pub mod memories;
pub mod meta;
pub mod ops;
pub mod readers;
pub mod schema;
pub mod search;
pub mod sessions;
pub mod team;
#[cfg(test)]
pub(crate) mod testing;
pub mod vectors;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::{Connection, OpenFlags};

use crate::drift::highwater::HighWater;
use crate::sync;
use serde::{Deserialize, Serialize};

pub use error::{Cause, StoreError};
pub use meta::read_generation;
pub use readers::Readers;
pub use writer::{Guard, WriteCtx, Writer};

/// Generations as the daemon knows them (ARCHITECTURE.md "Drift").
#[derive(Debug)]
pub struct Generations {
    /// Newest generation the daemon has read or produced.
    pub current: AtomicU64,
    /// Generation the file is expected at: the daemon's own last commit,
    /// or the last external change it recorded (the base of the
    /// external-change check).
    pub own_last: AtomicU64,
    /// Generation the daemon's own last commit produced (`status`'s
    /// `own_generation`).
    pub own_commit: AtomicU64,
    /// Newest generation known to contain an external change (0: none).
    pub external_epoch: AtomicU64,
    /// When the last external change was detected (stored time format).
    pub last_drift_at: std::sync::Mutex<Option<String>>,
    /// Drift events for subscribed sessions.
    pub events: tokio::sync::broadcast::Sender<memd_proto::DriftEvent>,
    /// The last drift events, newest last (`status`'s `drift.recent`).
    pub recent: std::sync::Mutex<std::collections::VecDeque<memd_proto::DriftEvent>>,
    /// The newest generation, for those who follow every change (the HTTP
    /// API's event stream): it moves with [`Generations::observe`].
    pub changes: tokio::sync::watch::Sender<u64>,
}

/// How many drift events `status` keeps.
pub const RECENT_DRIFT: usize = 20;

impl Default for Generations {
    fn default() -> Self {
        Generations {
            current: AtomicU64::new(0),
            own_last: AtomicU64::new(0),
            own_commit: AtomicU64::new(0),
            external_epoch: AtomicU64::new(0),
            last_drift_at: std::sync::Mutex::new(None),
            events: tokio::sync::broadcast::channel(64).0,
            recent: std::sync::Mutex::default(),
            changes: tokio::sync::watch::channel(0).0,
        }
    }
}

impl Generations {
    /// Newest known generation.
    pub fn current(&self) -> u64 {
        self.current.load(Ordering::Acquire)
    }

    /// Records a generation read from the database (never goes back).
    pub fn observe(&self, g: u64) {
        if self.current.fetch_max(g, Ordering::AcqRel) < g {
            self.changes.send_if_modified(|now| {
                let newer = *now < g;
                *now = (*now).max(g);
                newer
            });
        }
    }

    /// Announces a drift event to subscribed sessions and keeps it among
    /// the recent ones.
    pub fn drifted(&self, event: memd_proto::DriftEvent) {
        {
            let mut recent = crate::sync::lock(&self.recent);
            recent.push_back(event.clone());
            while recent.len() > RECENT_DRIFT {
                recent.pop_front();
            }
        }
        let _ = self.events.send(event);
    }
}

/// Counters shown by `status`.
#[derive(Debug, Default)]
pub struct Stats {
    /// Read transactions run for client requests.
    pub db_reads: AtomicU64,
    /// Write transactions committed.
    pub commits: AtomicU64,
    /// Requests committed (a commit holds one or more).
    pub writes: AtomicU64,
    /// The writer thread's time in batches before their `COMMIT`: opening
    /// the transaction, the jobs, the index and generation bookkeeping (µs).
    pub writer_work_us: AtomicU64,
    /// The writer thread's time in `COMMIT` (the WAL's writes and sync, µs).
    pub writer_commit_us: AtomicU64,
    /// Snapshots built (cold injects).
    pub snapshot_builds: AtomicU64,
    /// Injects served from a snapshot.
    pub snapshot_hits: AtomicU64,
}

/// The database: one writer, a pool of readers, shared counters.
pub struct Store {
    /// The writer thread.
    pub(in crate::store) writer: Writer,
    /// Read-only connections.
    pub(in crate::store) readers: Readers,
    /// Generation bookkeeping.
    pub generations: Arc<Generations>,
    /// Counters.
    pub stats: Arc<Stats>,
    /// The FTS vocabulary in memory, for fuzzy search.
    pub vocab: Arc<search::vocab::Cache>,
    /// Query words' document frequencies at the current generation, for
    /// lexical ranking.
    pub frequencies: Arc<search::fts5::Frequencies>,
    /// The database file.
    pub path: PathBuf,
    /// Team memory, its one door (`Wing::None` unless `[team]` shares
    /// namespaces).
    pub(in crate::store) wing: team::wing::Wing,
    /// Purges the team pull applied here, for the daemon to finish (frozen
    /// blocks, drift backups, compacting the files).
    pub purge_events: tokio::sync::broadcast::Sender<ops::purge::Purged>,
    /// The near-duplicate candidates' profiles, held for the next adds
    /// (only the writer's jobs use them).
    pub(in crate::store) profiles: Arc<std::sync::Mutex<crate::gate::similar::Profiles>>,
}

impl Store {
    /// Opens (creating and migrating if needed) the database at `path`.
    ///
    /// # Errors
    /// [`StoreError`] when the file cannot be opened, is not memd's, or has a
    /// newer schema.
    pub fn open(
        path: &Path,
        storage: &StorageConfig,
        poll: std::time::Duration,
        wing: team::wing::Wing,
    ) -> Result<Store, StoreError> {
        let mut conn = open_write_connection(path, storage)?;
        let backup_dir = path.parent().unwrap_or(Path::new("."));
        if let Some(copy) = schema::migrate(&mut conn, backup_dir)? {
            tracing::info!(copy = %copy.display(), "copied the database before upgrading it");
        }
        restrict_mode(path);
        memories::close_stale_tag_edits(&conn)?;
        let generations = Arc::new(Generations::default());
        let mut highwater = HighWater::open(backup_dir);
        startup_generations(&conn, &generations, highwater.get())?;
        highwater.record(generations.current());
        let stats = Arc::new(Stats::default());
        let readers = Readers::new(
            path.to_path_buf(),
            storage,
            stats.clone(),
            generations.clone(),
        );
        readers.warm()?;
        let writer = Writer::spawn(writer::WriterSetup {
            conn,
            path: path.to_path_buf(),
            storage: storage.clone(),
            poll,
            generations: generations.clone(),
            stats: stats.clone(),
            readers: readers.pool(),
            highwater,
        })?;
        Ok(Store {
            writer,
            readers,
            generations,
            stats,
            vocab: Default::default(),
            frequencies: Default::default(),
            path: path.to_path_buf(),
            wing,
            purge_events: tokio::sync::broadcast::channel(64).0,
            profiles: Default::default(),
        })
    }

    /// Team memory: the one door to it (`Wing::None` when it is off).
    pub fn wing(&self) -> &team::wing::Wing {
        &self.wing
    }

    /// Tests: team memory through `wing` instead.
    #[cfg(test)]
    pub(crate) fn set_wing(&mut self, wing: team::wing::Wing) {
        self.wing = wing;
    }

    /// A handle that wakes the writer for an external-change check (the
    /// file watcher's); `None` once the writer has stopped.
    pub fn check_handle(&self) -> Option<writer::CheckHandle> {
        self.writer.check_handle()
    }

    /// Replaces the database's content with the SQLite file at `path`
    /// through the backup API; counted as an external change.
    ///
    /// # Errors
    /// When the file is not a usable memd database (nothing is changed), or
    /// SQLite fails.
    pub async fn restore(&self, path: PathBuf) -> Result<writer::Restored, StoreError> {
        self.writer.restore(path).await
    }

    /// Closes the readers, then drains the writer, which checkpoints the WAL
    /// and closes last (so SQLite removes the `-wal` and `-shm` files).
    pub async fn close(&self) {
        self.readers.close();
        self.writer.shutdown().await;
    }
}

/// Sets the generations at start-up. The daemon records the generation of
/// its last commit in `memory_meta`; a file whose generation differs was
/// written while no daemon watched it (or after a crash of one), and that
/// counts as an external change: sessions that come back with an older seen
/// generation must read again before a destructive write. `high_water` is
/// the highest generation the data dir has shown (kept outside the file,
/// [`HighWater`]): an older copy of the file, put in place with its own
/// matching record, starts above it.
fn startup_generations(
    conn: &Connection,
    g: &Generations,
    high_water: u64,
) -> Result<(), StoreError> {
    let mut generation = read_generation(conn)?;
    let recorded = meta::number(conn, "daemon_generation")?;
    let mut epoch = meta::number(conn, "external_epoch")?.unwrap_or(0);
    let known = recorded.unwrap_or(0).max(epoch).max(high_water);
    if recorded.is_some_and(|r| r != generation) || generation < known {
        if generation < known {
            // An older file was put in place: generations never go back.
            tracing::warn!(
                found = generation,
                known,
                "the database generation went back while memd was not running; moving it forward"
            );
            generation = known + 1;
        } else {
            tracing::warn!(
                recorded = recorded.unwrap_or_default(),
                generation,
                "the database changed while memd was not running; counting it as an external change"
            );
        }
        epoch = generation;
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let written = meta::set_generation(conn, generation)
            .and_then(|()| meta::set_number(conn, "external_epoch", generation))
            .and_then(|()| meta::set_number(conn, "daemon_generation", generation))
            .and_then(|()| Ok(conn.execute_batch("COMMIT")?));
        if let Err(e) = written {
            let _ = conn.execute_batch("ROLLBACK");
            return Err(e);
        }
        *sync::lock(&g.last_drift_at) = Some(crate::clock::now());
    }
    g.current.store(generation, Ordering::Release);
    g.own_last.store(generation, Ordering::Release);
    g.own_commit
        .store(recorded.unwrap_or(generation), Ordering::Release);
    g.external_epoch.store(epoch, Ordering::Release);
    Ok(())
}

/// Opens the connection that the writer thread will own, with the pragmas of
/// ARCHITECTURE.md "Processes and threads".
///
/// # Errors
/// SQLite errors.
pub fn open_write_connection(
    path: &Path,
    storage: &StorageConfig,
) -> Result<Connection, StoreError> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_millis(storage.busy_timeout_ms))?;
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::Sqlite(Cause::msg(format!(
            "cannot switch the database to WAL mode (it stays in {mode} mode)"
        ))));
    }
    let sync = match storage.synchronous {
        Synchronous::Full => "FULL",
        Synchronous::Normal => "NORMAL",
    };
    // Savepoint journals (one savepoint per request in a batch) stay in
    // memory rather than in temporary files. A large job (a page of the team
    // pull, whose rows' sketches land all over their index) dirties more
    // pages than the cache holds: they stay in memory until the commit, up
    // to 64 MiB, instead of being written to the WAL mid-transaction and
    // read back (8 % of a pull's time).
    conn.execute_batch(&format!(
        "PRAGMA synchronous = {sync};
         PRAGMA foreign_keys = ON;
         PRAGMA recursive_triggers = OFF;
         PRAGMA temp_store = MEMORY;
         PRAGMA cache_spill = 16384;"
    ))?;
    configure_connection(&conn)?;
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// What every connection of the store gets:
/// - one query plan per statement, whatever the bound values. The bundled
///   SQLite has STAT4, which otherwise re-prepares a cached statement each
///   time a bound value that could change the plan changes — and "now",
///   bound in every visibility filter, always does: that re-parse cost a
///   fifth of an add's CPU in the near-duplicate search;
/// - the lexical ranking function `memd_rank` ([`search::fts5`]).
///
/// # Errors
/// SQLite errors.
pub fn configure_connection(conn: &Connection) -> Result<(), StoreError> {
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    search::fts5::register(conn)
}

/// A database with memd's schema on a connection configured as the
/// daemon's are, in a directory removed when the first value drops.
#[cfg(test)]
pub(crate) fn test_db() -> (tempfile::TempDir, Connection) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let mut conn = Connection::open(dir.path().join("m.db")).expect("open");
    schema::migrate(&mut conn, dir.path()).expect("migrate");
    configure_connection(&conn).expect("configure");
    (dir, conn)
}

/// Makes the database file owner-only (its `-wal`/`-shm` inherit the mode).
/// `chmod` by path: the file is never opened outside SQLite.
fn restrict_mode(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)) {
        tracing::warn!(error = %e, path = %path.display(), "cannot set database mode 0600");
    }
}

/// Durability of a commit (`PRAGMA synchronous`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    /// fsync on every commit: an acknowledged write survives power loss.
    #[default]
    Full,
    /// fsync at checkpoints only: survives a crash of memd, not of the OS.
    Normal,
}

/// Storage settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// `full` (default) or `normal`.
    pub synchronous: Synchronous,
    /// How long SQLite waits for a lock held by another process, in ms.
    pub busy_timeout_ms: u64,
    /// Number of read-only connections.
    pub readers: usize,
    /// Most requests committed together in one transaction (group commit).
    pub max_batch: usize,
    /// How much of the database file each read-only connection maps into
    /// memory, in MiB (`PRAGMA mmap_size`; 0: none). Reads of a mapped page
    /// are a memory access instead of a `pread` copy: at 38K long
    /// memories a search spent a fifth of its time in `pread`.
    pub mmap_mb: u64,
}

impl Default for StorageConfig {
    fn default() -> Self {
        StorageConfig {
            synchronous: Synchronous::Full,
            busy_timeout_ms: 5_000,
            readers: 4,
            max_batch: 256,
            mmap_mb: 1024,
        }
    }
}

#[cfg(test)]
mod tests {
    use time::macros::datetime;

    #[test]
    fn stored_format_matches_sqlite() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let sqlite: String = conn
            .query_row(
                "SELECT strftime('%Y-%m-%dT%H:%M:%fZ', '2026-06-07 18:00:00.5')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            sqlite,
            crate::clock::format(datetime!(2026-06-07 18:00:00.5 UTC))
        );
    }
}
