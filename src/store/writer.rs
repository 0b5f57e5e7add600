//! The writer thread: the one owner of the write connection.
//!
//! Requests send closures over a channel. The thread takes the first waiting
//! job and every job queued behind it (up to `max_batch`), runs them in one
//! `BEGIN IMMEDIATE` transaction — each inside its own savepoint, so one
//! job's failure rolls back only that job — commits once, and only then
//! answers each job (group commit: an acknowledged write is durable).
//!
//! Every batch starts by reading the generation: a value that is not the
//! daemon's own last one means someone else wrote the file (DESIGN.md
//! "Drift"), and that check runs here, between batches, for every kind of
//! external change.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::oneshot;

use super::{Generations, Stats, StoreError, read_generation};

/// Who makes a write: it decides what counts as drift for whom.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Author {
    /// A client session.
    Session {
        /// Session key.
        id: String,
        /// The session's namespace.
        namespace: String,
    },
    /// The daemon itself (sweeps, embeddings, migrations).
    Daemon,
}

/// A commit made by a session, kept in a short log (for the `strict` policy).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCommit {
    /// Generation after the commit.
    pub generation: u64,
    /// Session key.
    pub session: String,
    /// Namespace written.
    pub namespace: String,
}

/// How many session commits the log keeps.
pub const COMMIT_LOG_LEN: usize = 4_096;

/// What a job sees while it runs: the connection inside the batch's
/// transaction, and the generation state.
pub struct WriteCtx<'a> {
    /// The write connection, inside an open transaction.
    pub conn: &'a Connection,
    /// Generation bookkeeping (already updated for this batch's check).
    pub generations: &'a Generations,
    /// Who submitted this job.
    pub author: &'a Author,
}

impl WriteCtx<'_> {
    /// The generation as this transaction sees it now.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn generation(&self) -> Result<u64, StoreError> {
        read_generation(self.conn)
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
            (Ok(()), None) => Err(StoreError::Sqlite("the job did not run".into())),
        };
        // The requester may have gone away (client disconnected): fine, the
        // write is committed either way.
        let _ = self.reply.send(result);
    }
}

enum Msg {
    Job(Box<dyn Job>),
    Shutdown(oneshot::Sender<()>),
}

/// Handle to the writer thread.
pub struct Writer {
    tx: Mutex<Option<mpsc::Sender<Msg>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
    /// Recent session commits, newest last.
    pub commit_log: Arc<Mutex<VecDeque<SessionCommit>>>,
}

impl Writer {
    /// Starts the thread that owns `conn`.
    ///
    /// # Errors
    /// When the thread cannot be spawned.
    pub fn spawn(
        conn: Connection,
        generations: Arc<Generations>,
        stats: Arc<Stats>,
        max_batch: usize,
    ) -> Result<Writer, StoreError> {
        let (tx, rx) = mpsc::channel();
        let commit_log = Arc::new(Mutex::new(VecDeque::with_capacity(COMMIT_LOG_LEN)));
        let state = Thread {
            conn,
            generations,
            stats,
            max_batch,
            commit_log: commit_log.clone(),
        };
        let thread = std::thread::Builder::new()
            .name("memd-writer".into())
            .spawn(move || state.run(rx))?;
        Ok(Writer {
            tx: Mutex::new(Some(tx)),
            thread: Mutex::new(Some(thread)),
            commit_log,
        })
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
        let job = Box::new(CallJob {
            author,
            f: Some(f),
            out: None,
            reply,
        });
        {
            let guard = self.tx.lock().unwrap_or_else(|e| e.into_inner());
            let tx = guard.as_ref().ok_or(StoreError::Closed)?;
            tx.send(Msg::Job(job)).map_err(|_| StoreError::Closed)?;
        }
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

struct Thread {
    conn: Connection,
    generations: Arc<Generations>,
    stats: Arc<Stats>,
    max_batch: usize,
    commit_log: Arc<Mutex<VecDeque<SessionCommit>>>,
}

impl Thread {
    fn run(mut self, rx: mpsc::Receiver<Msg>) {
        let mut stop = None;
        while stop.is_none() {
            let Ok(first) = rx.recv() else { break };
            let mut batch: Vec<Box<dyn Job>> = Vec::new();
            match first {
                Msg::Job(j) => batch.push(j),
                Msg::Shutdown(ack) => stop = Some(ack),
            }
            while stop.is_none() && batch.len() < self.max_batch {
                match rx.try_recv() {
                    Ok(Msg::Job(j)) => batch.push(j),
                    Ok(Msg::Shutdown(ack)) => stop = Some(ack),
                    Err(_) => break,
                }
            }
            if !batch.is_empty() {
                self.run_batch(batch);
            }
        }
        self.close();
        if let Some(ack) = stop {
            let _ = ack.send(());
        }
    }

    fn close(self) {
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

    fn run_batch(&mut self, mut batch: Vec<Box<dyn Job>>) {
        if let Err(e) = self.begin() {
            for job in batch {
                job.finish(Err(e.clone()));
            }
            return;
        }
        let mut commits = Vec::new();
        for job in batch.iter_mut() {
            let before = read_generation(&self.conn).unwrap_or(0);
            let ok = self.conn.execute_batch("SAVEPOINT job").is_ok() && {
                let author = job.author().clone();
                let mut ctx = WriteCtx {
                    conn: &self.conn,
                    generations: &self.generations,
                    author: &author,
                };
                job.run(&mut ctx)
            };
            if ok {
                let _ = self.conn.execute_batch("RELEASE job");
                let after = read_generation(&self.conn).unwrap_or(before);
                if let (Author::Session { id, namespace }, true) = (job.author(), after > before) {
                    commits.push(SessionCommit {
                        generation: after,
                        session: id.clone(),
                        namespace: namespace.clone(),
                    });
                }
            } else {
                let _ = self.conn.execute_batch("ROLLBACK TO job; RELEASE job");
            }
        }
        let end = read_generation(&self.conn);
        let committed = end.and_then(|g| {
            self.conn.execute_batch("COMMIT")?;
            Ok(g)
        });
        match committed {
            Ok(g) => {
                self.generations.own_last.store(g, Ordering::Release);
                self.generations.observe(g);
                self.stats.commits.fetch_add(1, Ordering::Relaxed);
                self.stats
                    .writes
                    .fetch_add(batch.len() as u64, Ordering::Relaxed);
                if !commits.is_empty() {
                    let mut log = self.commit_log.lock().unwrap_or_else(|e| e.into_inner());
                    for c in commits {
                        if log.len() == COMMIT_LOG_LEN {
                            log.pop_front();
                        }
                        log.push_back(c);
                    }
                }
                for job in batch {
                    job.finish(Ok(()));
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "commit failed; the batch was rolled back");
                let _ = self.conn.execute_batch("ROLLBACK");
                for job in batch {
                    job.finish(Err(e.clone()));
                }
            }
        }
    }

    /// Opens the batch's transaction and runs the external-change check.
    fn begin(&mut self) -> Result<(), StoreError> {
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let checked = self.check_external();
        if checked.is_err() {
            let _ = self.conn.execute_batch("ROLLBACK");
        }
        checked
    }

    /// Compares the file's generation with the daemon's own last one.
    fn check_external(&mut self) -> Result<(), StoreError> {
        let own = self.generations.own_last.load(Ordering::Acquire);
        let mut g = read_generation(&self.conn)?;
        if g == own {
            return Ok(());
        }
        if g < own {
            // An older file was restored: generations never go back.
            let known = own.max(self.generations.current());
            let next = known + 1;
            self.conn.execute(
                "UPDATE memory_meta SET value = ?1 WHERE key = 'generation'",
                [next.to_string()],
            )?;
            tracing::warn!(
                found = g,
                known,
                now = next,
                "the database generation went back (an older file was restored); moved it forward"
            );
            g = next;
        }
        tracing::warn!(
            own_generation = own,
            generation = g,
            "external change detected: the database was written outside memd"
        );
        self.generations.external_epoch.store(g, Ordering::Release);
        *self
            .generations
            .last_drift_at
            .lock()
            .unwrap_or_else(|e| e.into_inner()) = Some(crate::clock::now());
        self.generations.observe(g);
        self.generations.own_last.store(g, Ordering::Release);
        Ok(())
    }
}
