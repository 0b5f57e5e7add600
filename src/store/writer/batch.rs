//! Group commit: the jobs of one batch run in one `BEGIN IMMEDIATE`
//! transaction, each inside its own savepoint; the batch commits once, and
//! only then is each job answered (an acknowledged write is durable).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::drift::log::Committer;
use crate::session::ident::Author;
use crate::store::{Cause, StoreError, memories, read_generation};

use super::ctx::WriteCtx;

use super::Thread;

pub(super) trait Job: Send {
    fn author(&self) -> &Author;
    /// A large job that runs in a batch of its own, without a savepoint
    /// (its failure rolls the batch's transaction back): SQLite's
    /// in-memory statement journal then never grows across its statements
    /// (with a savepoint around it, each statement's release walks the
    /// whole journal: quadratic in the job's size).
    fn alone(&self) -> bool {
        false
    }
    /// Runs inside a savepoint; `false` rolls the savepoint back.
    fn run(&mut self, ctx: &mut WriteCtx<'_>) -> bool;
    /// Called after the batch's commit (or its failure).
    fn finish(self: Box<Self>, commit: Result<(), StoreError>);
}

pub(super) struct CallJob<F, T> {
    author: Author,
    alone: bool,
    f: Option<F>,
    out: Option<Result<T, StoreError>>,
    reply: oneshot::Sender<Result<T, StoreError>>,
}

impl<F, T> CallJob<F, T> {
    /// The same job, run alone (see [`Job::alone`]).
    pub(super) fn alone(mut self) -> CallJob<F, T> {
        self.alone = true;
        self
    }

    pub(super) fn new(
        author: Author,
        f: F,
        reply: oneshot::Sender<Result<T, StoreError>>,
    ) -> CallJob<F, T> {
        CallJob {
            author,
            alone: false,
            f: Some(f),
            out: None,
            reply,
        }
    }
}

impl<F, T> Job for CallJob<F, T>
where
    F: FnOnce(&mut WriteCtx<'_>) -> Result<T, StoreError> + Send,
    T: Send,
{
    fn author(&self) -> &Author {
        &self.author
    }

    fn alone(&self) -> bool {
        self.alone
    }

    fn run(&mut self, ctx: &mut WriteCtx<'_>) -> bool {
        let f = self.f.take().expect("a job runs once");
        let mut out = f(ctx);
        if out.is_ok()
            && let Err(e) = ctx.release_index()
        {
            out = Err(e);
        }
        let ok = out.is_ok() && !ctx.discarded();
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

/// Runs a parameterless statement from the statement cache (no re-parse per
/// request); `false` on failure.
pub(super) fn run_cached(conn: &Connection, sql: &str) -> bool {
    conn.prepare_cached(sql)
        .and_then(|mut s| s.execute([]))
        .is_ok()
}

/// Adds the µs from `from` to `to` to a counter.
fn add_us(counter: &AtomicU64, from: Instant, to: Instant) {
    let us = u64::try_from(to.duration_since(from).as_micros()).unwrap_or(u64::MAX);
    counter.fetch_add(us, Ordering::Relaxed);
}

impl Thread {
    pub(super) fn run_batch(&mut self, mut batch: Vec<Box<dyn Job>>) {
        let started = Instant::now();
        if let Err(e) = self.begin() {
            for job in batch {
                job.finish(Err(e.clone()));
            }
            return;
        }
        let mut logged = 0;
        // A batch of several jobs indexes its new rows for search once,
        // before the commit (one index segment per batch; FTS5 then has
        // nothing to flush at each job's savepoint). A job alone flushes
        // its rows once anyway.
        let held = batch.len() > 1;
        if held && let Err(e) = memories::hold_index(&self.conn) {
            let _ = self.conn.execute_batch("ROLLBACK");
            for job in batch {
                job.finish(Err(e.clone()));
            }
            return;
        }
        // A large job alone in its batch runs without a savepoint.
        let bare = batch.len() == 1 && batch[0].alone();
        for job in &mut batch {
            let before = read_generation(&self.conn).unwrap_or(0);
            let ok = (bare || run_cached(&self.conn, "SAVEPOINT job")) && {
                let author = job.author().clone();
                let mut ctx =
                    WriteCtx::new(&self.conn, &self.generations, &author, &self.log, before);
                if held {
                    ctx = ctx.in_held_batch();
                }
                job.run(&mut ctx)
            };
            if !ok && bare {
                // Nothing of the batch may stay: the job's own error is its
                // answer.
                let _ = self.conn.execute_batch("ROLLBACK");
                for job in batch {
                    job.finish(Ok(()));
                }
                return;
            }
            if ok {
                if !bare {
                    run_cached(&self.conn, "RELEASE job");
                }
                let after = read_generation(&self.conn).unwrap_or(before);
                if after > before {
                    // Logged at once: a later job of this batch must see it.
                    let by = match job.author() {
                        Author::Session(who) => Committer::Session(who.clone()),
                        Author::Daemon => Committer::Daemon,
                        Author::Team => Committer::Team,
                    };
                    self.log.push(before, after, by);
                    logged += 1;
                }
            } else {
                run_cached(&self.conn, "ROLLBACK TO job");
                run_cached(&self.conn, "RELEASE job");
            }
        }
        let committed = self.commit(started, held);
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

    /// Ends the batch's transaction: the held rows indexed, the generation
    /// persisted and marked, then `COMMIT`. Returns the generation committed.
    fn commit(&mut self, started: Instant, held: bool) -> Result<u64, StoreError> {
        if held {
            memories::index_held(&self.conn)?;
        }
        let g = read_generation(&self.conn)?;
        self.persist_generations(g)?;
        // Before the commit: no session can see a generation the mark does
        // not cover.
        self.highwater.record(g);
        let committing = Instant::now();
        add_us(&self.stats.writer_work_us, started, committing);
        self.conn.execute_batch("COMMIT")?;
        add_us(&self.stats.writer_commit_us, committing, Instant::now());
        Ok(g)
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
}
