//! What a job sees inside the batch's transaction ([`WriteCtx`]), and the
//! drift guard's check of a session's write against what it has seen
//! ([`Guard`]; the rules themselves are `drift::policy`, ARCHITECTURE.md
//! "Drift").

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::Ordering;

use memd_proto::{DriftNotice, DriftPolicy, RowDrift};
use rusqlite::Connection;

use crate::drift::log::{Attribution, CommitLog, Committer};
use crate::drift::policy::{self, Decision, Facts, RowFacts, WriteKind};
use crate::drift::refusal::{self, Refusal, RowChange, RowRefusal, ViewRefusal};
use crate::session::ident::{Author, Who};
use crate::session::readset::{ReadSet, RowView};
use crate::store::kinds::captured;
use crate::store::team::{self, engine::apply::Before};
use crate::store::{Generations, StoreError, memories, read_generation};
use crate::sync;

/// The write connection's record of the rows a job changes (team memory):
/// temporary triggers on `memories`, armed by a row in `job_capture`,
/// keep each row's state before the job's first change of it (a row the
/// job inserted: `created`). Temporary objects live in the connection, not
/// in the database file; a job's rollback takes its records with it.
const CAPTURE: &str = concat!(
    "
CREATE TEMP TABLE IF NOT EXISTS job_capture (armed INTEGER);
CREATE TEMP TABLE IF NOT EXISTS job_rows (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id INTEGER NOT NULL UNIQUE,
    created INTEGER NOT NULL,
    uid TEXT, namespace TEXT, team_rev INTEGER, rev INTEGER,
    observation_count INTEGER, confirmed_count INTEGER, local INTEGER
);
CREATE TEMP TRIGGER IF NOT EXISTS job_rows_bu BEFORE UPDATE ON main.memories
WHEN EXISTS (SELECT 1 FROM temp.job_capture)
BEGIN
    INSERT OR IGNORE INTO temp.job_rows (id, created, uid, namespace, team_rev, rev,
        observation_count, confirmed_count, local)
    VALUES (OLD.id, 0, OLD.uid, OLD.namespace, OLD.team_rev, OLD.rev, OLD.observation_count,
        OLD.confirmed_count, OLD.scope = 'session' OR ",
    captured!("OLD"),
    ");
END;
CREATE TEMP TRIGGER IF NOT EXISTS job_rows_bd BEFORE DELETE ON main.memories
WHEN EXISTS (SELECT 1 FROM temp.job_capture)
BEGIN
    INSERT OR IGNORE INTO temp.job_rows (id, created, uid, namespace, team_rev, rev,
        observation_count, confirmed_count, local)
    VALUES (OLD.id, 0, OLD.uid, OLD.namespace, OLD.team_rev, OLD.rev, OLD.observation_count,
        OLD.confirmed_count, OLD.scope = 'session' OR ",
    captured!("OLD"),
    ");
END;
CREATE TEMP TRIGGER IF NOT EXISTS job_rows_ai AFTER INSERT ON main.memories
WHEN EXISTS (SELECT 1 FROM temp.job_capture)
BEGIN
    INSERT OR IGNORE INTO temp.job_rows (id, created) VALUES (NEW.id, 1);
END;
"
);

/// Rows named in the message of a refusal on the whole view.
pub(super) const CHANGES_NAMED: usize = 3;

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
    /// The write connection, inside an open transaction (the store's own:
    /// no caller outside it sees a connection).
    pub(in crate::store) conn: &'a Connection,
    /// Generation bookkeeping (already updated for this batch's check).
    pub generations: &'a Generations,
    /// Who submitted this job.
    pub author: &'a Author,
    log: &'a CommitLog,
    guard: Option<Guard>,
    wrote: Vec<i64>,
    /// The generation when the job started.
    start: u64,
    /// What the job does for team memory: set only by the guarded write
    /// when the team is on ([`WriteCtx::begin_team`]); `None` otherwise.
    team: Option<TeamJob>,
    /// Whether the search index's inserts of new rows wait, and for what.
    index: IndexHold,
}

/// What a session's write may make of shared rows (team memory), as the
/// operation declares it to the guarded write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sharing {
    /// Its shared changes are written through, or refused.
    Plain,
    /// Where review is required, they may become proposals (an add, an
    /// update, a forget).
    Proposable,
    /// The rows it creates may bring back a uid deleted in the team's
    /// PostgreSQL (`import --replace`).
    Resurrecting,
}

/// A job's team memory state (see [`WriteCtx::begin_team`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TeamJob {
    /// What the operation declared.
    sharing: Sharing,
    /// The rows the job changes are recorded by the database itself (what
    /// a write-through compares and sets); off once they are read.
    capturing: bool,
    /// The job's savepoint is rolled back though it succeeded (a write
    /// that goes through PostgreSQL first).
    discard: bool,
}

/// Who holds the search index's inserts of a job's new rows (one index
/// segment for many rows instead of one per row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum IndexHold {
    /// Nobody: each insert indexes its row.
    Off,
    /// The job, since [`WriteCtx::hold_index`]: its runner indexes them
    /// when it succeeds ([`WriteCtx::release_index`]).
    Job,
    /// The batch (a group commit of several jobs): indexed once before the
    /// commit.
    Batch,
}

impl<'a> WriteCtx<'a> {
    /// A job's view of the batch's transaction, at generation `start`.
    pub(super) fn new(
        conn: &'a Connection,
        generations: &'a Generations,
        author: &'a Author,
        log: &'a CommitLog,
        start: u64,
    ) -> WriteCtx<'a> {
        WriteCtx {
            conn,
            generations,
            author,
            log,
            guard: None,
            wrote: Vec::new(),
            team: None,
            index: IndexHold::Off,
            start,
        }
    }

    /// The same, in a batch that indexes its new rows once before its
    /// commit: [`WriteCtx::hold_index`] has nothing more to do.
    pub(super) fn in_held_batch(mut self) -> WriteCtx<'a> {
        self.index = IndexHold::Batch;
        self
    }
}

impl WriteCtx<'_> {
    /// Rows this job inserts outside a thread are indexed for search once,
    /// when the job ends, instead of one index segment per row (a large
    /// job: a page of the team pull, a chunk of an import). The job's
    /// runner indexes them after the job succeeds; a failed job rolls the
    /// hold back with the rest.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn hold_index(&mut self) -> Result<(), StoreError> {
        if self.index == IndexHold::Off {
            memories::hold_index(self.conn)?;
            self.index = IndexHold::Job;
        }
        Ok(())
    }

    /// Indexes the rows held by [`WriteCtx::hold_index`] (the runner's,
    /// after a job that succeeded).
    pub(super) fn release_index(&mut self) -> Result<(), StoreError> {
        if self.index == IndexHold::Job {
            memories::index_held(self.conn)?;
            self.index = IndexHold::Off;
        }
        Ok(())
    }

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
        let view = sync::lock(&guard.reads).view(id);
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
        if let Some(recorded) = memories::author(self.conn, id, g)? {
            if recorded.external {
                return Ok(Attribution::Known(Committer::External));
            }
            if let Some(machine) = recorded.machine {
                return Ok(Attribution::Known(Committer::Remote {
                    machine,
                    agent: recorded.agent,
                    session: recorded.session,
                }));
            }
            let namespace = match self.log.author_of(g) {
                Attribution::Known(Committer::Session(who)) => who.namespace.clone(),
                _ => String::new(),
            };
            return Ok(Attribution::Known(Committer::Session(Arc::new(Who {
                namespace,
                agent: recorded.agent,
                session: recorded.session,
                reach: crate::session::ident::Reach::default(),
            }))));
        }
        Ok(self.log.author_of(g))
    }

    /// Remembers that this job wrote row `id` (a row it created): the
    /// session's read set gets the row's rev after the commit.
    pub fn wrote(&mut self, id: i64) {
        self.wrote.push(id);
    }

    /// The job is a write team memory may have to go through (the guarded
    /// write, the team on), its shared changes as `sharing` says: from now
    /// on, every row of `memories` it inserts, updates or deletes is
    /// recorded by the database — as it was before the job's first change
    /// of it — whatever store function changed it (temporary triggers of
    /// the write connection, [`CAPTURE`]): no change of a shared row can
    /// miss its write-through.
    ///
    /// # Errors
    /// SQLite errors.
    pub(in crate::store) fn begin_team(&mut self, sharing: Sharing) -> Result<(), StoreError> {
        self.conn.execute_batch(CAPTURE)?;
        self.conn
            .execute_batch("DELETE FROM temp.job_rows; INSERT INTO temp.job_capture VALUES (1);")?;
        self.team = Some(TeamJob {
            sharing,
            capturing: true,
            discard: false,
        });
        Ok(())
    }

    /// The rows the job changed: as they were, as they are now, in the
    /// order of their first change. Capturing stops.
    ///
    /// # Errors
    /// SQLite errors.
    pub(in crate::store) fn changes(
        &mut self,
    ) -> Result<Vec<team::engine::write::Change>, StoreError> {
        match &mut self.team {
            Some(t) if t.capturing => t.capturing = false,
            _ => return Ok(Vec::new()),
        }
        let rows: Vec<(i64, Option<Before>)> = self
            .conn
            .prepare_cached(
                "SELECT id, created, uid, namespace, team_rev, rev, observation_count, \
                 confirmed_count, local FROM temp.job_rows ORDER BY seq",
            )?
            .query_map([], |r| {
                let id: i64 = r.get(0)?;
                let created: bool = r.get(1)?;
                let before = if created {
                    None
                } else {
                    Some(Before {
                        uid: r.get(2)?,
                        namespace: r.get(3)?,
                        team_rev: r.get(4)?,
                        rev: r.get(5)?,
                        observation_count: r.get(6)?,
                        confirmed_count: r.get(7)?,
                        local: r.get(8)?,
                    })
                };
                Ok((id, before))
            })?
            .collect::<Result<_, _>>()?;
        self.conn
            .execute_batch("DELETE FROM temp.job_capture; DELETE FROM temp.job_rows;")?;
        let mut out = Vec::with_capacity(rows.len());
        for (id, before) in rows {
            out.push(team::engine::write::Change {
                id,
                before,
                after: team::engine::apply::after(self.conn, id)?,
            });
        }
        Ok(out)
    }

    /// Whether the rows this job creates bring back a uid deleted in the
    /// team's PostgreSQL.
    pub(in crate::store) fn resurrects(&self) -> bool {
        self.team
            .is_some_and(|t| t.sharing == Sharing::Resurrecting)
    }

    /// Whether, where review is required, the job's shared changes become
    /// proposals instead of being refused.
    pub(in crate::store) fn proposable(&self) -> bool {
        self.team.is_some_and(|t| t.sharing == Sharing::Proposable)
    }

    /// Under `strict`: the session's namespace and seen generation (team
    /// memory checks other sessions' commits in PostgreSQL).
    pub(in crate::store) fn strict_view(&self) -> Option<(String, u64)> {
        self.guard
            .as_ref()
            .filter(|g| g.policy == DriftPolicy::Strict)
            .map(|g| (g.who.namespace.clone(), g.seen))
    }

    /// Rolls the job back when it ends, though it succeeded (its change
    /// goes through the team's PostgreSQL first). Only a team job does.
    pub(in crate::store) fn discard(&mut self) {
        if let Some(t) = &mut self.team {
            t.discard = true;
        }
    }

    /// Whether the job asked to be rolled back.
    pub(super) fn discarded(&self) -> bool {
        self.team.is_some_and(|t| t.discard)
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
            Author::Daemon | Author::Team => None,
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
