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
//! transaction, and the file watcher wakes the thread with [`Writer::check`]
//! so a change is seen within milliseconds even when nobody writes. The
//! thread also swaps database files: a restore through the backup API, or a
//! file renamed over `memory.db` (the old inode is never written again).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc;
use std::thread::JoinHandle;

use memd_proto::{DriftEvent, DriftNotice, DriftPolicy, RowDrift};
use rusqlite::{Connection, OptionalExtension};
use tokio::sync::oneshot;

use super::StorageConfig;
use super::readers::Pool;
use super::{Cause, Generations, Stats, StoreError, memories, read_generation, schema};
use crate::drift::highwater::HighWater;
use crate::drift::log::{Attribution, CommitLog, Committer};
use crate::drift::policy::{self, Decision, Facts, RowFacts, WriteKind};
use crate::drift::refusal::{self, Refusal, RowChange, RowRefusal, ViewRefusal};
use crate::session::ident::{Author, Who};
use crate::session::readset::{ReadSet, RowView};

/// How many commits the log keeps.
pub const COMMIT_LOG_LEN: usize = 65_536;

/// Rows named in the message of a refusal on the whole view.
const CHANGES_NAMED: usize = 3;

/// What a session's write is checked against.
#[derive(Debug, Clone)]
pub struct Guard {
    /// The session's policy.
    pub policy: DriftPolicy,
    /// The session's seen generation.
    pub seen: u64,
    /// Append or destructive.
    pub kind: WriteKind,
    /// The session.
    pub who: Arc<Who>,
    /// The session's read set (the row rule).
    pub reads: Arc<Mutex<ReadSet>>,
}

/// What a job sees while it runs: the connection inside the batch's
/// transaction, and the generation state.
pub struct WriteCtx<'a> {
    /// The write connection, inside an open transaction.
    pub conn: &'a Connection,
    /// Generation bookkeeping (already updated for this batch's check).
    pub generations: &'a Generations,
    /// Who submitted this job.
    pub author: &'a Author,
    log: &'a CommitLog,
    guard: Option<Guard>,
    wrote: Vec<i64>,
    /// The generation when the job started.
    start: u64,
}

impl WriteCtx<'_> {
    /// The generation as this transaction sees it now.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn generation(&self) -> Result<u64, StoreError> {
        read_generation(self.conn)
    }

    /// Applies the drift policy's rules on the session's whole view, and
    /// keeps `guard` for the row checks of this job ([`WriteCtx::check_row`]):
    /// `Ok(None)` to go ahead, `Ok(Some(notice))` to go ahead on a stale view
    /// (an append under `standard` or `external`).
    ///
    /// # Errors
    /// [`StoreError::Drift`] when the write must be refused.
    pub fn guard(&mut self, guard: Guard) -> Result<Option<DriftNotice>, StoreError> {
        let current = self.generation()?;
        let facts = Facts {
            seen: guard.seen,
            external_epoch: self.generations.external_epoch.load(Ordering::Acquire),
            other_session: self.log.newest_other_since(
                guard.seen,
                &guard.who.session,
                &guard.who.namespace,
            ),
            current,
        };
        let decision = policy::decide(guard.policy, guard.kind, &facts);
        let seen = guard.seen;
        self.guard = Some(guard);
        match decision {
            Decision::Allow => Ok(None),
            Decision::Notice => Ok(Some(DriftNotice {
                generation_observed: seen,
                generation_actual: current,
            })),
            Decision::Refuse { cause, rule } => {
                let (changes, more) = self.changes_since(seen)?;
                Err(StoreError::Drift(Box::new(Refusal::View(ViewRefusal {
                    rule,
                    observed: seen,
                    actual: current,
                    cause,
                    backup: None,
                    changes,
                    more,
                }))))
            }
        }
    }

    /// A few rows changed after generation `seen`, with their authors.
    fn changes_since(&self, seen: u64) -> Result<(Vec<RowChange>, bool), StoreError> {
        let mut found = memories::changed_since(self.conn, seen, CHANGES_NAMED + 1)?;
        let more = found.len() > CHANGES_NAMED;
        found.truncate(CHANGES_NAMED);
        let changes = found
            .into_iter()
            .map(|c| RowChange {
                id: c.id,
                deleted: c.deleted,
                by: refusal::changed_by(&self.log.author_of(c.generation)),
            })
            .collect();
        Ok((changes, more))
    }

    /// The row rule, for a row this job is about to change (the drift guard
    /// on one row), checked against the row as this transaction sees it.
    /// With `expect_rev` the request names the version it is based on: a
    /// mismatch is a conflict, a match passes. Jobs of the daemon pass.
    ///
    /// The row is remembered as written by this job (see
    /// [`WriteCtx::wrote`]). A missing row passes: the job reports it.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] for an `expect_rev` mismatch,
    /// [`StoreError::Drift`] for a row-rule refusal, SQLite errors.
    pub fn check_row(&mut self, id: i64, expect_rev: Option<i64>) -> Result<(), StoreError> {
        self.wrote.push(id);
        let Some((rev_now, changed_generation)) = memories::change_mark(self.conn, id)? else {
            return Ok(());
        };
        if let Some(rev) = expect_rev {
            if rev == rev_now {
                return Ok(());
            }
            return Err(StoreError::Conflict {
                message: format!(
                    "memory {id} is at rev {rev_now}, not the expected {rev}: it changed since \
                     you read it; read it again and retry"
                ),
                current_rev: Some(rev_now),
            });
        }
        let Some(guard) = &self.guard else {
            return Ok(());
        };
        let view = guard
            .reads
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .view(id);
        let author = self.author_of(id, changed_generation)?;
        let changed_by_self = matches!(
            &author,
            Attribution::Known(Committer::Session(who)) if who.session == guard.who.session
        );
        let facts = RowFacts {
            view,
            rev_now,
            changed_generation,
            changed_by_self,
        };
        if policy::decide_row(guard.policy, &facts) {
            return Ok(());
        }
        let current = memories::fetch(self.conn, id)?.ok_or(StoreError::NotFound(id))?;
        Err(StoreError::Drift(Box::new(Refusal::Row(Box::new(
            RowRefusal {
                observed: guard.seen,
                actual: self.generation()?,
                row: RowDrift {
                    changed_at: current.updated_at.clone(),
                    current,
                    changed_by: refusal::changed_by(&author),
                    rev_seen: match view {
                        RowView::Read { rev } => Some(rev),
                        RowView::Unread { .. } => None,
                    },
                    rev_now,
                },
            },
        )))))
    }

    /// Who made the change of row `id` at generation `g`: the session
    /// memd recorded for it, else the commit log's answer.
    fn author_of(&self, id: i64, g: u64) -> Result<Attribution, StoreError> {
        if let Some((session, agent)) = memories::author(self.conn, id, g)? {
            let namespace = match self.log.author_of(g) {
                Attribution::Known(Committer::Session(who)) => who.namespace.clone(),
                _ => String::new(),
            };
            return Ok(Attribution::Known(Committer::Session(Arc::new(Who {
                namespace,
                agent,
                session,
            }))));
        }
        Ok(self.log.author_of(g))
    }

    /// Remembers that this job wrote row `id` (a row it created): the
    /// session's read set gets the row's rev after the commit.
    pub fn wrote(&mut self, id: i64) {
        self.wrote.push(id);
    }

    /// Ends the job's row bookkeeping: records this session as the author
    /// of the rows the job changed, and returns the rows it wrote that
    /// still exist, with their revs now.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn written_revs(&self) -> Result<Vec<(i64, i64)>, StoreError> {
        let who = match self.author {
            Author::Session(who) => Some((who.session.as_str(), who.agent.as_str())),
            Author::Daemon => None,
        };
        let mut out = Vec::with_capacity(self.wrote.len());
        for id in &self.wrote {
            if let Some(rev) = memories::record_author(self.conn, *id, self.start, who)? {
                out.push((*id, rev));
            }
        }
        Ok(out)
    }
}

trait Job: Send {
    fn author(&self) -> &Author;
    /// Runs inside a savepoint; `false` rolls the savepoint back.
    fn run(&mut self, ctx: &mut WriteCtx<'_>) -> bool;
    /// Called after the batch's commit (or its failure).
    fn finish(self: Box<Self>, commit: Result<(), StoreError>);
}

struct CallJob<F, T> {
    author: Author,
    f: Option<F>,
    out: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<F, T> Job for CallJob<F, T>
where
    F: FnOnce(&mut WriteCtx<'_>) -> Result<T, StoreError> + Send,
    T: Send,
{
    fn author(&self) -> &Author {
        &self.author
    }

    fn run(&mut self, ctx: &mut WriteCtx<'_>) -> bool {
        let f = self.f.take().expect("a job runs once");
        let out = f(ctx);
        let ok = out.is_ok();
        self.out = Some(out);
        ok
    }

    fn finish(self: Box<Self>, commit: Result<(), StoreError>) {
        let result = match (commit, self.out) {
            (Ok(()), Some(out)) => out,
            // The job's own error wins: it was rolled back anyway.
            (Err(_), Some(Err(e))) => Err(e),
            (Err(e), _) => Err(e),
            (Ok(()), None) => Err(StoreError::Sqlite(Cause::msg("the job did not run"))),
        };
        // The requester may have gone away (client disconnected): fine, the
        // write is committed either way.
        let _ = self.reply.send(result);
    }
}

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
        let guard = self.tx.lock().unwrap_or_else(|e| e.into_inner());
        let tx = guard.as_ref().ok_or(StoreError::Closed)?;
        tx.send(msg).map_err(|_| StoreError::Closed)
    }

    /// A handle for the file watcher.
    pub fn check_handle(&self) -> Option<CheckHandle> {
        let guard = self.tx.lock().unwrap_or_else(|e| e.into_inner());
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
        self.send(Msg::Job(Box::new(CallJob {
            author,
            f: Some(f),
            out: None,
            reply,
        })))?;
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

    /// Lets queued jobs finish, checkpoints the WAL, closes the connection and
    /// joins the thread. Later calls fail with [`StoreError::Closed`].
    pub async fn shutdown(&self) {
        let tx = self.tx.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(tx) = tx {
            let (ack, done) = oneshot::channel();
            if tx.send(Msg::Shutdown(ack)).is_ok() {
                let _ = done.await;
            }
        }
        let thread = self.thread.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(thread) = thread {
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
    }
}

/// (device, inode) of a path, without opening it.
fn file_id(path: &Path) -> Result<(u64, u64), StoreError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

/// Runs a parameterless statement from the statement cache (no re-parse per
/// request); `false` on failure.
fn run_cached(conn: &Connection, sql: &str) -> bool {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .is_ok()
}

fn data_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("PRAGMA data_version", [], |r| r.get(0))?)
}

fn set_meta(conn: &Connection, key: &str, value: u64) -> Result<(), StoreError> {
    conn.prepare_cached("INSERT OR REPLACE INTO memory_meta (key, value) VALUES (?1, ?2)")?
        .execute((key, value.to_string()))?;
    Ok(())
}

fn set_generation(conn: &Connection, g: u64) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE memory_meta SET value = ?1 WHERE key = 'generation'",
        [g.to_string()],
    )?;
    Ok(())
}

/// The writer checkpoints the WAL itself, when it has nothing else to do and
/// the WAL holds at least this many frames (SQLite's own automatic
/// checkpoint would run in the middle of a commit that a client waits for).
const CHECKPOINT_IDLE_FRAMES: i64 = 1_000;
/// Under a load that never lets the writer idle, it checkpoints after a
/// batch once the WAL holds this many frames (bounding the WAL's size).
const CHECKPOINT_BUSY_FRAMES: i64 = 8_000;

/// Counts the frames in the WAL after each of the connection's commits; the
/// hook replaces SQLite's automatic checkpoint.
fn watch_wal(conn: &mut Connection, frames: &Arc<AtomicI64>) -> Result<(), StoreError> {
    let frames = frames.clone();
    conn.wal_hook(Some(
        move |_: &mut rusqlite::hooks::Wal, n: std::os::raw::c_int| {
            frames.store(i64::from(n), Ordering::Relaxed);
            Ok(())
        },
    ))?;
    Ok(())
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
            let mut take = |msg: Msg, batch: &mut Vec<Box<dyn Job>>, stop: &mut Option<_>| match msg
            {
                Msg::Job(j) => batch.push(j),
                Msg::Check => check = true,
                Msg::Restore(path, reply) => restores.push((path, reply)),
                Msg::Shutdown(ack) => *stop = Some(ack),
            };
            take(first, &mut batch, &mut stop);
            while stop.is_none() && batch.len() < self.max_batch {
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
        }
        self.close();
        if let Some(ack) = stop {
            let _ = ack.send(());
        }
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

    /// A check woken by the file watcher: cheap when nothing changed (the
    /// file is the same and no other connection committed).
    fn watcher_check(&mut self) {
        if let Err(e) = self.ensure_file() {
            tracing::warn!(error = %e, "external-change check failed");
            return;
        }
        if self.broken.is_some() {
            return;
        }
        match data_version(&self.conn) {
            Ok(v) if v == self.last_data_version => return,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot read data_version");
                return;
            }
        }
        // Look first in a read transaction: a plain external write needs no
        // write lock from memd (a tool without a busy timeout would fail).
        let needs_write = self
            .conn
            .execute_batch("BEGIN")
            .map_err(StoreError::from)
            .and_then(|()| self.check_external(false));
        let _ = self.conn.execute_batch("COMMIT");
        let checked = match needs_write {
            Ok(false) => Ok(()),
            Ok(true) => self
                .conn
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(StoreError::from)
                .and_then(|()| self.check_external(true))
                .and_then(|_| Ok(self.conn.execute_batch("COMMIT")?)),
            Err(e) => Err(e),
        };
        if let Err(e) = checked {
            if !self.conn.is_autocommit() {
                let _ = self.conn.execute_batch("ROLLBACK");
            }
            tracing::warn!(error = %e, "external-change check failed");
        }
    }

    /// Makes sure the connection has the file at the path open: reopens it
    /// when another file was renamed over it.
    fn ensure_file(&mut self) -> Result<(), StoreError> {
        match file_id(&self.path) {
            Ok(id) if id == self.file_id && self.broken.is_none() => Ok(()),
            Ok(_) => self.reopen(),
            Err(e) => {
                let msg = format!(
                    "the database file {} is gone ({e}); put it back or restart memd",
                    self.path.display()
                );
                if self.broken.as_deref() != Some(msg.as_str()) {
                    tracing::error!("{msg}");
                }
                self.broken = Some(msg);
                Ok(())
            }
        }
    }

    /// Whether the WAL holds at least `frames` frames that no checkpoint has
    /// tried yet.
    fn checkpoint_due(&self, frames: i64) -> bool {
        let now = self.wal_frames.load(Ordering::Relaxed);
        now >= frames && now != self.checkpointed_at && self.broken.is_none()
    }

    /// Copies the WAL into the database without waiting for readers
    /// (`PASSIVE`); the next commit starts the WAL over when all of it was
    /// copied.
    fn checkpoint(&mut self) {
        self.checkpointed_at = self.wal_frames.load(Ordering::Relaxed);
        let done = self
            .conn
            .query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
                Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
            });
        match done {
            Ok((log, copied)) => tracing::debug!(log, copied, "checkpoint"),
            Err(e) => {
                tracing::warn!(error = %e, "checkpoint failed; will retry after the next commit")
            }
        }
    }

    fn run_batch(&mut self, mut batch: Vec<Box<dyn Job>>) {
        if let Err(e) = self.begin() {
            for job in batch {
                job.finish(Err(e.clone()));
            }
            return;
        }
        let mut logged = 0;
        for job in batch.iter_mut() {
            let before = read_generation(&self.conn).unwrap_or(0);
            let ok = run_cached(&self.conn, "SAVEPOINT job") && {
                let author = job.author().clone();
                let mut ctx = WriteCtx {
                    conn: &self.conn,
                    generations: &self.generations,
                    author: &author,
                    log: &self.log,
                    guard: None,
                    wrote: Vec::new(),
                    start: before,
                };
                job.run(&mut ctx)
            };
            if ok {
                run_cached(&self.conn, "RELEASE job");
                let after = read_generation(&self.conn).unwrap_or(before);
                if after > before {
                    // Logged at once: a later job of this batch must see it.
                    let by = match job.author() {
                        Author::Session(who) => Committer::Session(who.clone()),
                        Author::Daemon => Committer::Daemon,
                    };
                    self.log.push(before, after, by);
                    logged += 1;
                }
            } else {
                run_cached(&self.conn, "ROLLBACK TO job");
                run_cached(&self.conn, "RELEASE job");
            }
        }
        let committed = read_generation(&self.conn).and_then(|g| {
            self.persist_generations(g)?;
            // Before the commit: no session can see a generation the mark
            // does not cover.
            self.highwater.record(g);
            self.conn.execute_batch("COMMIT")?;
            Ok(g)
        });
        match committed {
            Ok(g) => {
                self.generations.own_last.store(g, Ordering::Release);
                self.generations.own_commit.store(g, Ordering::Release);
                self.generations.observe(g);
                self.stats.commits.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .writes
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                for job in batch {
                    job.finish(Ok(()));
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "commit failed; the batch was rolled back");
                let _ = self.conn.execute_batch("ROLLBACK");
                self.log.unpush(logged);
                for job in batch {
                    job.finish(Err(e.clone()));
                }
            }
        }
    }

    /// Opens the batch's transaction and runs the external-change check.
    fn begin(&mut self) -> Result<(), StoreError> {
        self.ensure_file()?;
        if let Some(msg) = &self.broken {
            return Err(StoreError::Io(Cause::msg(msg.clone())));
        }
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let checked = self.check_external(true);
        if checked.is_err() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        checked.map(|_| ())
    }

    /// Inside a transaction: compares the file's generation with the
    /// daemon's own last one, repairs dropped triggers or tables, and records
    /// an external epoch when someone else wrote. With `can_write` false (a
    /// read transaction) it returns `Ok(true)` instead of writing when a
    /// repair or a generation move is needed.
    fn check_external(&mut self, can_write: bool) -> Result<bool, StoreError> {
        let own = self.generations.own_last.load(Ordering::Acquire);
        let dv = data_version(&self.conn)?;
        let g = read_generation(&self.conn)?;
        if g == own && dv == self.last_data_version {
            return Ok(false);
        }
        // Another connection committed: it may have dropped what memd relies
        // on (then its writes may have bypassed the triggers).
        let missing = schema::missing_objects(&self.conn)?;
        if !can_write && (!missing.is_empty() || g < own) {
            return Ok(true);
        }
        self.last_data_version = dv;
        let repaired = if missing.is_empty() {
            missing
        } else {
            repair_schema(&self.conn)?
        };
        if g == own && repaired.is_empty() {
            // Only columns that are not edits changed (e.g. access tracking).
            return Ok(false);
        }
        let known = own.max(self.generations.current());
        let mut epoch = g;
        if !repaired.is_empty() || g < own {
            // A repair is a change; a generation that went back (an older
            // file restored) moves forward: generations never go back.
            epoch = known.max(g) + 1;
            set_generation(&self.conn, epoch)?;
        }
        if g < own {
            tracing::warn!(
                found = g,
                known,
                now = epoch,
                "the database generation went back (an older file was restored); moved it forward"
            );
        }
        if !repaired.is_empty() {
            tracing::warn!(
                repaired = ?repaired,
                "memd's triggers or tables were dropped outside memd: recreated them and rebuilt the search index"
            );
        }
        let reason = if repaired.is_empty() {
            "external write".to_string()
        } else {
            format!("external write; repaired {}", repaired.join(", "))
        };
        self.log.push(own, epoch, Committer::External);
        self.record_external(own, epoch, &reason);
        Ok(false)
    }

    /// Records an external epoch and tells subscribed sessions. It reaches
    /// `memory_meta` with the next commit (or at shutdown).
    fn record_external(&mut self, own: u64, epoch: u64, reason: &str) {
        tracing::warn!(
            own_generation = own,
            generation = epoch,
            reason,
            "external change detected: the database was written outside memd"
        );
        let at = crate::clock::now();
        self.generations
            .external_epoch
            .store(epoch, Ordering::Release);
        *self
            .generations
            .last_drift_at
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(at.clone());
        self.generations.observe(epoch);
        self.generations.own_last.store(epoch, Ordering::Release);
        self.highwater.record(epoch);
        let _ = self.generations.events.send(DriftEvent {
            generation: epoch,
            external_epoch: epoch,
            at,
            reason: reason.to_string(),
        });
    }

    /// Writes the daemon's generation (and the external epoch) to
    /// `memory_meta` inside the current write transaction.
    fn persist_generations(&self, own: u64) -> Result<(), StoreError> {
        set_meta(&self.conn, "daemon_generation", own)?;
        let epoch = self.generations.external_epoch.load(Ordering::Acquire);
        if epoch > 0 {
            set_meta(&self.conn, "external_epoch", epoch)?;
        }
        Ok(())
    }

    /// Swaps the connection to the file now at the path (renamed over the
    /// old one). The old connections are checkpointed and closed first; the
    /// old inode is never written again.
    fn reopen(&mut self) -> Result<(), StoreError> {
        let readers = self.readers.clone();
        readers.exclusive(|| {
            let placeholder = Connection::open_in_memory()?;
            let old = std::mem::replace(&mut self.conn, placeholder);
            if self.broken.is_none() {
                let _ = old.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    r.get::<_, i64>(0)
                });
            }
            let _ = old.close();
            match self.open_current_file() {
                Ok(()) => {
                    self.broken = None;
                    Ok(())
                }
                Err(e) => {
                    let msg = format!(
                        "the database file {} was replaced by an unusable file: {e}",
                        self.path.display()
                    );
                    tracing::error!("{msg}");
                    self.broken = Some(msg);
                    Ok(())
                }
            }
        })
    }

    fn open_current_file(&mut self) -> Result<(), StoreError> {
        let mut conn = super::open_write_connection(&self.path, &self.storage)?;
        watch_wal(&mut conn, &self.wal_frames)?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        schema::migrate(&mut conn, dir)?;
        self.file_id = file_id(&self.path)?;
        self.conn = conn;
        let own = self.generations.own_last.load(Ordering::Acquire);
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let done = self.after_swap(own, "database file replaced");
        match done {
            Ok(()) => Ok(self.conn.execute_batch("COMMIT")?),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// After the file's content was swapped: repair, move the generation
    /// above everything seen, record it as external.
    fn after_swap(&mut self, own: u64, reason: &str) -> Result<(), StoreError> {
        repair_schema(&self.conn)?;
        let g = read_generation(&self.conn)?;
        let epoch = g.max(own).max(self.generations.current()) + 1;
        set_generation(&self.conn, epoch)?;
        // Every row of the new file counts as changed by it: a session's
        // reads of the old file say nothing about the new one.
        memories::mark_all_changed(&self.conn, epoch)?;
        self.log.reset(epoch - 1);
        self.log.push(epoch - 1, epoch, Committer::External);
        self.record_external(own, epoch, reason);
        self.persist_generations(epoch)?;
        self.last_data_version = data_version(&self.conn)?;
        Ok(())
    }

    fn restore(&mut self, path: &Path) -> Result<Restored, StoreError> {
        if let Some(msg) = &self.broken {
            return Err(StoreError::Io(Cause::msg(msg.clone())));
        }
        let generation_in_file = check_restorable(path)?;
        let readers = self.readers.clone();
        readers.exclusive(|| {
            let own = self.generations.own_last.load(Ordering::Acquire);
            self.conn.restore(
                rusqlite::MAIN_DB,
                path,
                None::<fn(rusqlite::backup::Progress)>,
            )?;
            let dir = self.path.parent().unwrap_or(Path::new("."));
            schema::migrate(&mut self.conn, dir)?;
            self.conn.execute_batch("BEGIN IMMEDIATE")?;
            match self.after_swap(own, "restored from a backup") {
                Ok(()) => self.conn.execute_batch("COMMIT")?,
                Err(e) => {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    return Err(e);
                }
            }
            Ok(Restored {
                generation_in_file,
                generation: self.generations.own_last.load(Ordering::Acquire),
            })
        })
    }
}

/// Checks that `path` is a memd database this binary can use, without
/// changing it; returns its generation.
fn check_restorable(path: &Path) -> Result<u64, StoreError> {
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| StoreError::InvalidInput(format!("not a SQLite database: {e}")))?;
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(|e| StoreError::InvalidInput(format!("not a SQLite database: {e}")))?;
    if check != "ok" {
        return Err(StoreError::InvalidInput(format!(
            "the file fails SQLite's quick_check: {check}"
        )));
    }
    let version = schema::current_version(&conn).map_err(|e| match e {
        StoreError::NotMemd => {
            StoreError::InvalidInput("the file is a SQLite database but not memd's".into())
        }
        other => other,
    })?;
    if version == 0 {
        return Err(StoreError::InvalidInput(
            "the file is an empty database, not a memd backup".into(),
        ));
    }
    if version > schema::latest_version() {
        return Err(StoreError::SchemaTooNew {
            found: version,
            supported: schema::latest_version(),
        });
    }
    read_generation(&conn)
}

/// Recreates required triggers and tables that are missing (and triggers
/// another tool altered) and, when any was, rebuilds the search index (writes may have bypassed the triggers).
/// Returns what was repaired.
fn repair_schema(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let missing = schema::missing_objects(conn)?;
    if missing.is_empty() {
        return Ok(missing);
    }
    for object in &missing {
        let name = schema::object_name(object);
        let sql = schema::definition_of(name).ok_or_else(|| {
            StoreError::Sqlite(Cause::msg(format!(
                "{object} is missing and memd cannot recreate it"
            )))
        })?;
        if object.starts_with("trigger ") {
            conn.execute_batch(&format!("DROP TRIGGER IF EXISTS {name}"))?;
        }
        conn.execute_batch(&sql)?;
    }
    conn.execute_batch(
        "DELETE FROM memories_fts;
         INSERT INTO memories_fts (rowid, content, subject, ctx, date)
             SELECT id, content, subject, ctx, date FROM memories_fts_source;",
    )?;
    Ok(missing)
}

/// Reads a value of `memory_meta`.
///
/// # Errors
/// SQLite errors.
pub fn meta_u64(conn: &Connection, key: &str) -> Result<Option<u64>, StoreError> {
    let v: Option<String> = conn
        .query_row("SELECT value FROM memory_meta WHERE key = ?1", [key], |r| {
            r.get(0)
        })
        .optional()?;
    Ok(v.and_then(|s| s.parse().ok()))
}
