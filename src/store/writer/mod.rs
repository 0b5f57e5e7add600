//! The writer thread: the one owner of the write connection.
//!
//! Requests send closures over a channel. The thread takes the first waiting
//! job and every job queued behind it (up to `max_batch`), runs them in one
//! `BEGIN IMMEDIATE` transaction — each inside its own savepoint, so one
//! job's failure rolls back only that job — commits once, and only then
//! answers each job (group commit: an acknowledged write is durable).
//!
//! Every commit that moves the generation is logged with its author
//! ([`CommitLog`]): the drift guard traces each row's last change to a
//! session, the daemon or an external writer through it.
//!
//! Every external-change check runs here, between batches (ARCHITECTURE.md
//! "Drift"): each batch starts by reading the generation inside its write
//! transaction, and the file watcher wakes the thread through a [`CheckHandle`]
//! so a change is seen within milliseconds even when nobody writes. The
//! thread also swaps database files: a restore through the backup API, or a
//! file renamed over `memory.db` (the old inode is never written again).
//!
//! # Layout
//! - this file: the handle ([`Writer`]), the queue and the thread's loop;
//! - `batch`: group commit of a batch of jobs;
//! - `ctx`: what a job sees ([`WriteCtx`]) and the drift guard's check;
//! - `external`: the external-change check and schema repair;
//! - `swap`: restores and files renamed over the database;
//! - `checkpoint`: the writer's own WAL checkpoints.

mod batch;
mod checkpoint;
mod ctx;
mod external;
mod swap;

pub use ctx::{Guard, Sharing, WriteCtx};

use batch::{CallJob, Job};
use checkpoint::{CHECKPOINT_BUSY_FRAMES, CHECKPOINT_IDLE_FRAMES, watch_wal};
use external::data_version;
use swap::file_id;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::StorageConfig;
use super::readers::Pool;
use super::{Generations, Stats, StoreError};
use crate::drift::highwater::HighWater;
use crate::drift::log::CommitLog;
use crate::session::ident::Author;
use crate::sync;

/// How many commits the log keeps.
pub const COMMIT_LOG_LEN: usize = 65_536;

/// Result of a restore.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restored {
    /// Generation of the restored file as it arrived.
    pub generation_in_file: u64,
    /// Generation after the restore (above every earlier one).
    pub generation: u64,
}

enum Msg {
    Job(Box<dyn Job>),
    Check,
    Restore(PathBuf, oneshot::Sender<Result<Restored, StoreError>>),
    Scrub(oneshot::Sender<Result<bool, StoreError>>),
    Shutdown(oneshot::Sender<()>),
}

/// Handle to the writer thread.
pub struct Writer {
    tx: Mutex<Option<mpsc::Sender<Msg>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

/// A cheap, cloneable way to wake the writer for an external-change check
/// (used by the file watcher).
#[derive(Clone)]
pub struct CheckHandle(mpsc::Sender<Msg>);

impl CheckHandle {
    /// Asks for a check; `false` when the writer has stopped.
    pub fn check(&self) -> bool {
        self.0.send(Msg::Check).is_ok()
    }
}

/// Everything the writer thread needs besides its connection.
pub(super) struct WriterSetup {
    pub conn: Connection,
    pub path: PathBuf,
    pub storage: StorageConfig,
    pub poll: std::time::Duration,
    pub generations: Arc<Generations>,
    pub stats: Arc<Stats>,
    pub readers: Arc<Pool>,
    pub highwater: HighWater,
}

impl Writer {
    /// Starts the thread that owns the connection.
    ///
    /// # Errors
    /// When the thread cannot be spawned or the file cannot be inspected.
    pub(super) fn spawn(setup: WriterSetup) -> Result<Writer, StoreError> {
        let (tx, rx) = mpsc::channel();
        let file_id = file_id(&setup.path)?;
        let own = setup.generations.own_last.load(Ordering::Acquire);
        let last_data_version = data_version(&setup.conn)?;
        let mut conn = setup.conn;
        let wal_frames = Arc::new(AtomicI64::new(0));
        watch_wal(&mut conn, &wal_frames)?;
        let state = Thread {
            conn,
            path: setup.path,
            max_batch: setup.storage.max_batch,
            storage: setup.storage,
            poll: setup.poll,
            generations: setup.generations,
            stats: setup.stats,
            readers: setup.readers,
            log: CommitLog::new(own, COMMIT_LOG_LEN),
            file_id,
            last_data_version,
            broken: None,
            wal_frames,
            checkpointed_at: 0,
            highwater: setup.highwater,
        };
        let thread = std::thread::Builder::new()
            .name("memd-writer".into())
            .spawn(move || state.run(rx))?;
        Ok(Writer {
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
        })
    }

    fn send(&self, msg: Msg) -> Result<(), StoreError> {
        let guard = sync::lock(&self.tx);
        let tx = guard.as_ref().ok_or(StoreError::Closed)?;
        tx.send(msg).map_err(|_| StoreError::Closed)
    }

    /// A handle for the file watcher.
    pub fn check_handle(&self) -> Option<CheckHandle> {
        let guard = sync::lock(&self.tx);
        guard.as_ref().map(|tx| CheckHandle(tx.clone()))
    }

    /// Runs `f` in the next batch and returns its result once the batch is
    /// committed.
    ///
    /// # Errors
    /// The job's own error, the commit's error, or [`StoreError::Closed`].
    pub async fn call<T, F>(&self, author: Author, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut WriteCtx<'_>) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        self.send(Msg::Job(Box::new(CallJob::new(author, f, reply))))?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// As [`Writer::call`], for a large job (a page of the team pull): it
    /// runs in a batch of its own without a savepoint (see `Job::alone`).
    ///
    /// # Errors
    /// The job's own error, the commit's error, or [`StoreError::Closed`].
    pub async fn call_alone<T, F>(&self, author: Author, f: F) -> Result<T, StoreError>
    where
        F: FnOnce(&mut WriteCtx<'_>) -> Result<T, StoreError> + Send + 'static,
        T: Send + 'static,
    {
        let (reply, rx) = oneshot::channel();
        self.send(Msg::Job(Box::new(CallJob::new(author, f, reply).alone())))?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Replaces the database's content with the SQLite file at `path`
    /// through the backup API; counted as an external change.
    ///
    /// # Errors
    /// When the file is not a usable memd database (nothing is changed), or
    /// SQLite fails.
    pub async fn restore(&self, path: PathBuf) -> Result<Restored, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.send(Msg::Restore(path, reply))?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Rewrites the database file without its free space (`VACUUM`: no
    /// byte of a deleted row stays in a free page or a page's unused
    /// room), then empties the WAL into it (`wal_checkpoint(TRUNCATE)`,
    /// retried for a while when a reader holds it). Whether the WAL was
    /// emptied.
    ///
    /// # Errors
    /// SQLite errors (`VACUUM` needs room for a second copy of the file).
    pub async fn scrub(&self) -> Result<bool, StoreError> {
        let (reply, rx) = oneshot::channel();
        self.send(Msg::Scrub(reply))?;
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Lets queued jobs finish, checkpoints the WAL, closes the connection and
    /// joins the thread. Later calls fail with [`StoreError::Closed`].
    pub async fn shutdown(&self) {
        let tx = sync::lock(&self.tx).take();
        if let Some(tx) = tx {
            let (ack, done) = oneshot::channel();
            if tx.send(Msg::Shutdown(ack)).is_ok() {
                let _ = done.await;
            }
        }
        let thread = sync::lock(&self.thread).take();
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

struct Thread {
    conn: Connection,
    path: PathBuf,
    storage: StorageConfig,
    poll: std::time::Duration,
    generations: Arc<Generations>,
    stats: Arc<Stats>,
    max_batch: usize,
    readers: Arc<Pool>,
    log: CommitLog,
    /// Identity of the file the connection has open.
    file_id: (u64, u64),
    /// `PRAGMA data_version` at the last check: it moves only when another
    /// connection commits.
    last_data_version: i64,
    /// Set when the database file is gone or unusable: writes fail with this
    /// message until a check finds a usable file again.
    broken: Option<String>,
    /// Frames in the WAL after the last commit (see [`watch_wal`]).
    wal_frames: Arc<AtomicI64>,
    /// `wal_frames` when the last checkpoint ran: a checkpoint that readers
    /// kept from finishing is retried only after another commit.
    checkpointed_at: i64,
    /// The highest generation the data dir has shown, outside the database.
    highwater: HighWater,
}

impl Thread {
    fn run(mut self, rx: mpsc::Receiver<Msg>) {
        let mut stop = None;
        let poll = self.poll;
        while stop.is_none() {
            // Nothing queued and a long WAL: checkpoint now, while no client
            // waits for the writer.
            let queued = if self.checkpoint_due(CHECKPOINT_IDLE_FRAMES) {
                match rx.try_recv() {
                    Ok(m) => Some(m),
                    Err(mpsc::TryRecvError::Empty) => {
                        self.checkpoint();
                        None
                    }
                    Err(mpsc::TryRecvError::Disconnected) => break,
                }
            } else {
                None
            };
            // Idle: look for external commits every `poll_ms` (a writer
            // that keeps its connection open sends no file event).
            let first = if let Some(m) = queued {
                m
            } else if poll.is_zero() {
                match rx.recv() {
                    Ok(m) => m,
                    Err(_) => break,
                }
            } else {
                match rx.recv_timeout(poll) {
                    Ok(m) => m,
                    Err(mpsc::RecvTimeoutError::Timeout) => {
                        self.watcher_check();
                        continue;
                    }
                    Err(mpsc::RecvTimeoutError::Disconnected) => break,
                }
            };
            let mut batch: Vec<Box<dyn Job>> = Vec::new();
            let mut check = false;
            let mut restores = Vec::new();
            let mut scrubs = Vec::new();
            let mut take = |msg: Msg, batch: &mut Vec<Box<dyn Job>>, stop: &mut Option<_>| match msg
            {
                Msg::Job(j) => batch.push(j),
                Msg::Check => check = true,
                Msg::Restore(path, reply) => restores.push((path, reply)),
                Msg::Scrub(reply) => scrubs.push(reply),
                Msg::Shutdown(ack) => *stop = Some(ack),
            };
            take(first, &mut batch, &mut stop);
            while stop.is_none()
                && batch.len() < self.max_batch
                && !batch.first().is_some_and(|j| j.alone())
            {
                match rx.try_recv() {
                    Ok(msg) => take(msg, &mut batch, &mut stop),
                    Err(_) => break,
                }
            }
            if check && batch.is_empty() {
                self.watcher_check();
            }
            if !batch.is_empty() {
                self.run_batch(batch);
                if self.checkpoint_due(CHECKPOINT_BUSY_FRAMES) {
                    self.checkpoint();
                }
            }
            for (path, reply) in restores {
                let _ = reply.send(self.restore(&path));
            }
            if !scrubs.is_empty() {
                let done = self.scrub();
                for reply in scrubs {
                    let _ = reply.send(done.clone());
                }
            }
        }
        self.close();
        if let Some(ack) = stop {
            let _ = ack.send(());
        }
    }

    fn scrub(&self) -> Result<bool, StoreError> {
        self.conn.execute_batch("VACUUM")?;
        for _ in 0..100 {
            let busy: i64 = self
                .conn
                .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| r.get(0))?;
            if busy == 0 {
                return Ok(true);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        tracing::warn!("the WAL could not be emptied after a purge: a reader held it");
        Ok(false)
    }

    fn close(self) {
        let own = self.generations.own_last.load(Ordering::Acquire);
        if self.broken.is_none() {
            let recorded = self
                .conn
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(StoreError::from)
                .and_then(|()| self.persist_generations(own))
                .and_then(|()| Ok(self.conn.execute_batch("COMMIT")?));
            if let Err(e) = recorded {
                let _ = self.conn.execute_batch("ROLLBACK");
                tracing::warn!(error = %e, "cannot record the daemon's generation");
            }
        }
        match self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                r.get::<_, i64>(0)
            }) {
            Ok(0) => tracing::debug!("checkpointed the WAL"),
            Ok(_) => tracing::warn!("WAL checkpoint was blocked by a reader"),
            Err(e) => tracing::warn!(error = %e, "WAL checkpoint failed"),
        }
        if let Err((_, e)) = self.conn.close() {
            tracing::warn!(error = %e, "closing the write connection failed");
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::session::ident::Author;
    use crate::store::{StorageConfig, Store, StoreError};

    /// Rows the search index finds for `word`.
    fn found(conn: &rusqlite::Connection, word: &str) -> Result<i64, StoreError> {
        Ok(conn.query_row(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1",
            [word],
            |r| r.get(0),
        )?)
    }

    fn insert(conn: &rusqlite::Connection, text: &str) -> Result<(), StoreError> {
        conn.execute(
            "INSERT INTO memories (uid, namespace, content) VALUES (?1, 'n', ?1)",
            [text],
        )?;
        Ok(())
    }

    #[tokio::test]
    async fn a_job_alone_commits_whole_or_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(
            &dir.path().join("memory.db"),
            &StorageConfig::default(),
            std::time::Duration::from_secs(3600),
            crate::store::team::wing::Wing::None,
        )
        .unwrap();
        let err = store
            .writer
            .call_alone(Author::Daemon, |ctx| {
                insert(ctx.conn, "one")?;
                Err::<(), _>(StoreError::InvalidInput("refused halfway".into()))
            })
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::InvalidInput(ref m) if m.contains("halfway")));
        store
            .writer
            .call_alone(Author::Daemon, |ctx| insert(ctx.conn, "two"))
            .await
            .unwrap();
        store
            .writer
            .call(Author::Daemon, |ctx| insert(ctx.conn, "three"))
            .await
            .unwrap();
        let held: Vec<String> = store
            .writer
            .call(Author::Daemon, |ctx| {
                let mut s = ctx
                    .conn
                    .prepare("SELECT content FROM memories ORDER BY id")?;
                let rows = s
                    .query_map([], |r| r.get(0))?
                    .collect::<Result<Vec<String>, _>>()?;
                Ok(rows)
            })
            .await
            .unwrap();
        assert_eq!(held, ["two", "three"]);
    }

    /// A batch of several jobs indexes their new rows once, before its
    /// commit: within the batch they wait, after it each is searchable, a
    /// failed job's row is neither stored nor indexed, and nothing stays
    /// held.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_batch_of_several_jobs_indexes_its_rows_once_before_the_commit() {
        use std::sync::atomic::Ordering;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        let store = std::sync::Arc::new(
            Store::open(
                &path,
                &StorageConfig::default(),
                std::time::Duration::from_secs(3600),
                crate::store::team::wing::Wing::None,
            )
            .unwrap(),
        );
        // The first job holds the writer while the next three queue: they
        // run as one batch.
        let (started, wait) = std::sync::mpsc::channel();
        let first = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .writer
                    .call(Author::Daemon, move |_| {
                        started.send(()).unwrap();
                        std::thread::sleep(std::time::Duration::from_millis(300));
                        Ok(())
                    })
                    .await
            })
        };
        wait.recv().unwrap();
        let commits = store.stats.commits.load(Ordering::Relaxed);
        let job = |word: &'static str, fail: bool| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .writer
                    .call(Author::Daemon, move |ctx| {
                        insert(ctx.conn, word)?;
                        if fail {
                            return Err(StoreError::InvalidInput("refused".into()));
                        }
                        found(ctx.conn, word)
                    })
                    .await
            })
        };
        let jobs = [
            job("quokka", false),
            job("dingo", true),
            job("wombat", false),
        ];
        first.await.unwrap().unwrap();
        let mut during = Vec::new();
        for j in jobs {
            during.push(j.await.unwrap().ok());
        }
        // One commit for the three, none of them indexed inside it.
        assert_eq!(store.stats.commits.load(Ordering::Relaxed), commits + 2);
        assert_eq!(during, [Some(0), None, Some(0)]);
        let conn = rusqlite::Connection::open(&path).unwrap();
        let after: Vec<i64> = ["quokka", "dingo", "wombat"]
            .iter()
            .map(|w| found(&conn, w).unwrap())
            .collect();
        assert_eq!(after, [1, 0, 1]);
        let open: i64 = conn
            .query_row(
                "SELECT (SELECT count(*) FROM memory_fts_hold) \
                 + (SELECT count(*) FROM memory_fts_pending) \
                 + (SELECT count(*) FROM memories WHERE uid = 'dingo')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(open, 0);
    }

    /// Rows of a job that holds the index are searchable once the job
    /// ends (the runner indexes them), a thread's row at once; a failed
    /// job leaves neither rows nor a hold; an insert outside memd is
    /// indexed at once afterwards.
    #[tokio::test]
    async fn a_held_index_is_written_when_the_job_ends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memory.db");
        let store = Store::open(
            &path,
            &StorageConfig::default(),
            std::time::Duration::from_secs(3600),
            crate::store::team::wing::Wing::None,
        )
        .unwrap();
        let during = store
            .writer
            .call_alone(Author::Daemon, move |ctx| {
                ctx.hold_index()?;
                insert(ctx.conn, "quokka")?;
                insert(ctx.conn, "wombat")?;
                ctx.conn.execute(
                    "INSERT INTO memories (uid, namespace, content, thread, thread_pos) \
                     VALUES ('t', 'n', 'numbat', 'th', 1)",
                    [],
                )?;
                ctx.conn.execute(
                    "UPDATE memories SET content = 'quokkas' WHERE uid = 'quokka'",
                    [],
                )?;
                Ok([
                    found(ctx.conn, "wombat")?,
                    found(ctx.conn, "quokkas")?,
                    found(ctx.conn, "numbat")?,
                ])
            })
            .await
            .unwrap();
        // Inside the job: not yet, but the updated row through the update's
        // own trigger and the thread's row at once.
        assert_eq!(during, [0, 1, 1]);
        let failed = store
            .writer
            .call(Author::Daemon, |ctx| {
                ctx.hold_index()?;
                insert(ctx.conn, "dingo")?;
                Err::<(), _>(StoreError::InvalidInput("refused".into()))
            })
            .await;
        assert!(failed.is_err());
        let after = store
            .writer
            .call(Author::Daemon, move |ctx| {
                let words = ["quokka", "wombat", "numbat", "dingo"];
                let mut n = Vec::new();
                for w in words {
                    n.push(found(ctx.conn, w)?);
                }
                let open: i64 = ctx.conn.query_row(
                    "SELECT (SELECT count(*) FROM memory_fts_hold) \
                     + (SELECT count(*) FROM memory_fts_pending)",
                    [],
                    |r| r.get(0),
                )?;
                n.push(open);
                Ok(n)
            })
            .await
            .unwrap();
        assert_eq!(after, [1, 1, 1, 0, 0]);
        store.close().await;
        assert!(crate::store::testing::insert_by_hand(
            &path,
            "a platypus by hand"
        ));
        let conn = rusqlite::Connection::open(&path).unwrap();
        assert_eq!(found(&conn, "platypus").unwrap(), 1);
    }
}
