//! A session's write under the drift guard, and its write-through to the
//! team: the rules on the session's whole view first, then the operation;
//! a write that changes shared rows goes through PostgreSQL first and is
//! applied here once it committed (`Store::guarded`), and rows the team
//! sent applied anew (`Store::apply_team_rows_anew`).

use std::collections::{HashMap, HashSet};

use memd_proto::DriftNotice;

use super::Written;
use crate::session::ident::Author;
use crate::store::team::{self, wing::Wing};
use crate::store::writer::Sharing;
use crate::store::writer::WriteCtx;
use crate::store::{Guard, Store, StoreError};

/// A session's write: it runs on the writer thread, told what the drift
/// guard noticed, and checks each row it changes.
pub(in crate::store) trait SessionJob<T>:
    Fn(&mut WriteCtx<'_>, Option<DriftNotice>) -> Result<T, StoreError> + Send + Sync + 'static
{
}

impl<T, F> SessionJob<T> for F where
    F: Fn(&mut WriteCtx<'_>, Option<DriftNotice>) -> Result<T, StoreError> + Send + Sync + 'static
{
}

impl Store {
    /// Runs a session's write under the drift guard: the rules on the
    /// whole view first (a refusal writes nothing), then `f`, which checks
    /// each row it changes ([`WriteCtx::check_row`]). `sharing` says what
    /// the operation's shared changes may become (team memory).
    ///
    /// A write that changes shared rows (team memory) goes through the team's
    /// PostgreSQL first: the job runs here inside its savepoint, what it
    /// changed is collected and the savepoint rolled back; the change is
    /// written through with a compare-and-set on each row's rev; once
    /// PostgreSQL committed, it is applied here in a short transaction. No
    /// SQLite transaction is held across a PostgreSQL round trip. A row
    /// that moved in PostgreSQL is applied here first and the job runs
    /// again (the row rule then judges it against the new version).
    pub(in crate::store) async fn guarded<T, F>(
        &self,
        guard: Guard,
        sharing: Sharing,
        f: F,
    ) -> Result<Written<T>, StoreError>
    where
        F: SessionJob<T>,
        T: Remap + Send + 'static,
    {
        let author = Author::Session(guard.who.clone());
        let team = self.wing.clone();
        if !team.is_on() {
            return self.unshared(author, guard, f).await;
        }
        let f = std::sync::Arc::new(f);
        let mut moved_once = false;
        let mut synced_once = false;
        loop {
            let (job_guard, job_f, job_team) = (guard.clone(), f.clone(), team.clone());
            let step = self
                .writer
                .call(author.clone(), move |ctx| {
                    ctx.begin_team(sharing)?;
                    let notice = ctx.guard(job_guard)?;
                    let value = job_f(ctx, notice)?;
                    match team_plan(ctx, &job_team)? {
                        Route::Local => Ok(Step::Done(Written {
                            value,
                            rows: ctx.written_revs()?,
                            generation: ctx.generation()?,
                            proposals: Vec::new(),
                        })),
                        Route::NotSynced => {
                            ctx.discard();
                            Ok(Step::NotSynced)
                        }
                        Route::Shared(plan) => {
                            ctx.discard();
                            Ok(Step::Deferred(value, plan))
                        }
                    }
                })
                .await?;
            let (value, plan) = match step {
                Step::Done(written) => return Ok(written),
                Step::NotSynced if !synced_once => {
                    // The pull has not caught up since memd started (or
                    // since PostgreSQL came back): one reconnect and
                    // catch-up now, then the write is decided again.
                    synced_once = true;
                    team.sync_now().await;
                    continue;
                }
                Step::NotSynced => return Err(not_synced(&team)),
                Step::Deferred(value, plan) => (value, plan),
            };
            match team.write_through(&plan).await {
                Ok(committed) if committed.rows.is_empty() && !committed.proposals.is_empty() => {
                    // Review: nothing was written but the proposals; the
                    // answer names no row the job created.
                    return Ok(Written {
                        value: value.proposed(&plan.created()),
                        rows: Vec::new(),
                        generation: self.generations.current(),
                        proposals: committed.proposals,
                    });
                }
                Ok(committed) => {
                    let proposals = committed.proposals.clone();
                    let mut written = self
                        .apply_committed(author, value, &plan, committed)
                        .await?;
                    written.proposals = proposals;
                    return Ok(written);
                }
                Err(team::engine::write::Refusal::Moved(rows)) if !moved_once => {
                    // This machine's copy was behind: take PostgreSQL's rows
                    // and decide again.
                    moved_once = true;
                    self.take_moved(rows, &team).await?;
                }
                Err(refusal) => return Err(self.refused(refusal, &plan, &guard, &team)),
            }
        }
    }

    /// [`Store::guarded`] without team memory: the job in one write.
    async fn unshared<T, F>(
        &self,
        author: Author,
        guard: Guard,
        f: F,
    ) -> Result<Written<T>, StoreError>
    where
        F: SessionJob<T>,
        T: Remap + Send + 'static,
    {
        self.writer
            .call(author, move |ctx| {
                let notice = ctx.guard(guard)?;
                let value = f(ctx, notice)?;
                Ok(Written {
                    value,
                    rows: ctx.written_revs()?,
                    generation: ctx.generation()?,
                    proposals: Vec::new(),
                })
            })
            .await
    }

    /// Takes PostgreSQL's rows that moved past this machine's copy, so the
    /// job is decided again on them. A version another tool made here is
    /// never replaced by a session's write: the pull replaces it after
    /// keeping it in a drift backup, and the write is refused until then.
    async fn take_moved(
        &self,
        rows: Vec<team::engine::row::TeamRow>,
        team: &Wing,
    ) -> Result<(), StoreError> {
        let incoming = rows.iter().map(|r| (r.uid.clone(), r.rev)).collect();
        if !self
            .team_rows_to_be_replaced(incoming, false)
            .await?
            .is_empty()
        {
            team.wake();
            return Err(StoreError::Conflict {
                message: "the memory changed in the team's PostgreSQL and, here, by another \
                          tool: the pull keeps this machine's version in a drift backup and \
                          takes PostgreSQL's; read it again and retry"
                    .into(),
                current_rev: None,
            });
        }
        let lost = self.apply_team_rows_anew(rows, false).await?;
        if !lost.is_empty() {
            tracing::warn!(
                rows = lost.len(),
                "team memory: another tool changed rows here while this write was decided; PostgreSQL's rows replaced them"
            );
        }
        Ok(())
    }

    /// The error a session is given for a write-through PostgreSQL refused
    /// (a row that moved again after this machine took PostgreSQL's copy
    /// included).
    fn refused(
        &self,
        refusal: team::engine::write::Refusal,
        plan: &team::engine::write::Plan,
        guard: &Guard,
        team: &Wing,
    ) -> StoreError {
        match refusal {
            team::engine::write::Refusal::Moved(_) => StoreError::Conflict {
                message: "the memory kept changing in the team's PostgreSQL while this \
                                  write was decided; read it again and retry"
                    .into(),
                current_rev: None,
            },
            team::engine::write::Refusal::Unavailable(e) => {
                StoreError::TeamUnavailable(e.to_string())
            }
            team::engine::write::Refusal::Unknown(e) => {
                // Whatever PostgreSQL did, the pull brings it here.
                team.wake();
                StoreError::TeamOutcomeUnknown {
                    operation_id: plan.op_id.clone(),
                    message: e.to_string(),
                }
            }
            team::engine::write::Refusal::Invalid(m) => {
                StoreError::InvalidInput(format!("the team's PostgreSQL refused the write: {m}"))
            }
            team::engine::write::Refusal::Forbidden(m) => StoreError::Forbidden(m),
            team::engine::write::Refusal::Strict(seq) => {
                tracing::debug!(
                    team_seq = seq,
                    "strict: another session committed in the namespace after this view"
                );
                let actual = self.generations.current();
                StoreError::Drift(Box::new(crate::drift::refusal::Refusal::View(
                    crate::drift::refusal::ViewRefusal {
                        rule: memd_proto::DriftRule::Strict,
                        observed: guard.seen,
                        actual,
                        cause: actual,
                        backup: None,
                        changes: Vec::new(),
                        more: false,
                    },
                )))
            }
        }
    }

    /// Applies what PostgreSQL committed for a session's write, as that
    /// session's write here; the job's answer is translated to the rows as
    /// they are now (the local ids of the rows PostgreSQL committed: a row
    /// the job created had an id only in the rolled-back job). A local
    /// apply that fails is not the write's failure (PostgreSQL has it; the
    /// pull applies it): it is tried once more, and if it fails again the
    /// answer keeps the ids of rows that were here before and names no id
    /// for a row the job created ([`Remap::unapplied`]).
    async fn apply_committed<T: Remap + Send + 'static>(
        &self,
        author: Author,
        value: T,
        plan: &team::engine::write::Plan,
        committed: team::engine::write::Committed,
    ) -> Result<Written<T>, StoreError> {
        let uids: HashMap<i64, String> = plan
            .changes
            .iter()
            .filter_map(|c| c.after.as_ref().map(|a| (c.id, a.uid.clone())))
            .collect();
        let created = plan.created();
        tracing::debug!(
            team_seq = committed.seq,
            rows = committed.rows.len(),
            "team memory: PostgreSQL committed a shared write; applying it here"
        );
        // Where the rows came from as the job left them (the way in, the
        // session, a merge's added source): the job knew it, PostgreSQL's
        // row does not.
        let origins: HashMap<i64, Vec<memd_proto::Origin>> = plan
            .changes
            .iter()
            .filter_map(|c| {
                let p = c.after.as_ref()?.provenance.as_ref()?;
                Some((c.id, p.sources.clone()))
            })
            .collect();
        let committed = std::sync::Arc::new(committed);
        let uids = std::sync::Arc::new(uids);
        let origins = std::sync::Arc::new(origins);
        let own = self.wing.machine().to_string();
        let mut failure = None;
        for _ in 0..2 {
            let (value, committed, uids) = (value.clone(), committed.clone(), uids.clone());
            let (origins, own) = (origins.clone(), own.clone());
            let applied = self
                .writer
                .call(author.clone(), move |ctx| {
                    let mut t = Translation::default();
                    for (old, row) in &committed.rows {
                        let outcome = team::engine::apply::apply(ctx.conn, row, false)?;
                        let job = old.and_then(|o| origins.get(&o));
                        if let team::engine::apply::Outcome::Inserted(id) = outcome {
                            let first = job.and_then(|s| s.first());
                            team::engine::apply::record_origin(ctx.conn, id, row, &own, first)?;
                        }
                        if let (Some(id), Some(sources)) = (outcome.id(), job) {
                            crate::store::memories::add_sources(ctx.conn, id, sources)?;
                        }
                        if let Some(id) = outcome.id() {
                            ctx.wrote(id);
                            if let Some(old) = old {
                                t.ids.insert(*old, id);
                            }
                        }
                        if let Some(old) = old
                            && uids.get(old).is_some_and(|uid| uid != &row.uid)
                        {
                            // PostgreSQL merged the new row into one it had.
                            t.merged.insert(*old);
                        }
                    }
                    for (_, row) in &committed.rows {
                        team::engine::apply::link(ctx.conn, row)?;
                    }
                    let generation = ctx.generation()?;
                    let value = value.remap(ctx.conn, &t, generation)?;
                    Ok(Written {
                        value,
                        rows: ctx.written_revs()?,
                        generation,
                        proposals: Vec::new(),
                    })
                })
                .await;
            match applied {
                Ok(w) => return Ok(w),
                Err(e) => failure = Some(e),
            }
        }
        if let Some(e) = failure {
            tracing::warn!(error = %e, op_id = %plan.op_id, "a write PostgreSQL committed could not be applied here; the pull applies it");
        }
        self.wing.wake();
        Ok(Written {
            value: value.unapplied(&created),
            rows: Vec::new(),
            generation: self.generations.current(),
            proposals: Vec::new(),
        })
    }

    /// Applies rows PostgreSQL holds, as a pull would, without moving the
    /// pull's mark; with `force`, whatever the revs (PostgreSQL's version
    /// stands).
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn apply_team_rows_anew(
        &self,
        rows: Vec<team::engine::row::TeamRow>,
        force: bool,
    ) -> Result<Vec<memd_proto::Memory>, StoreError> {
        let own = self.wing.machine().to_string();
        self.writer
            .call(Author::Team, move |ctx| {
                let mut lost = Vec::new();
                for row in &rows {
                    let outcome =
                        team::engine::apply::apply_keeping(ctx.conn, row, force, &mut lost)?;
                    if let team::engine::apply::Outcome::Inserted(id) = outcome {
                        team::engine::apply::record_origin(ctx.conn, id, row, &own, None)?;
                    }
                    if outcome.edited()
                        && let Some(id) = outcome.id()
                    {
                        team::engine::apply::record_author(ctx.conn, id, &row.author, &own)?;
                    }
                }
                for row in &rows {
                    team::engine::apply::link(ctx.conn, row)?;
                }
                Ok(lost)
            })
            .await
    }
}

/// What a job left for the caller: done here, to be written through, or
/// waiting for this machine to catch up with the team.
enum Step<T> {
    Done(Written<T>),
    NotSynced,
    Deferred(T, team::engine::write::Plan),
}

/// Where a job's changes go.
enum Route {
    /// Only local rows: committed as they are.
    Local,
    /// Shared rows, but this machine has not caught up with the team.
    NotSynced,
    /// Shared rows: this plan, written through.
    Shared(team::engine::write::Plan),
}

/// How a write's local ids became the ids of the rows PostgreSQL
/// committed, once applied here.
#[derive(Debug, Default)]
pub struct Translation {
    /// The job's id of a row → its id now.
    pub ids: HashMap<i64, i64>,
    /// The job's new rows that PostgreSQL merged into a row it had (two
    /// machines added the same memory).
    pub merged: HashSet<i64>,
}

impl Translation {
    fn id(&self, id: i64) -> i64 {
        self.ids.get(&id).copied().unwrap_or(id)
    }
}

/// An operation's answer, made true of the rows as PostgreSQL committed
/// them and as they were applied here.
pub trait Remap: Sized + Clone + Send + Sync {
    /// The answer for the applied rows.
    ///
    /// # Errors
    /// SQLite errors.
    fn remap(
        self,
        conn: &rusqlite::Connection,
        t: &Translation,
        generation: u64,
    ) -> Result<Self, StoreError>;

    /// The answer when PostgreSQL committed the write but it could not be
    /// applied here: no id of a row the job created (`created`), which only
    /// the rolled-back job had.
    fn unapplied(self, _created: &HashSet<i64>) -> Self {
        self
    }

    /// The answer when the write became proposals (review): no id of a
    /// row the job created.
    fn proposed(self, _created: &HashSet<i64>) -> Self {
        self
    }
}

impl Remap for () {
    fn remap(self, _: &rusqlite::Connection, _: &Translation, _: u64) -> Result<(), StoreError> {
        Ok(())
    }
}

impl Remap for Vec<i64> {
    fn remap(self, _: &rusqlite::Connection, _: &Translation, _: u64) -> Result<Self, StoreError> {
        Ok(self)
    }
}

impl Remap for [u64; 5] {
    fn remap(self, _: &rusqlite::Connection, _: &Translation, _: u64) -> Result<Self, StoreError> {
        Ok(self)
    }
}

impl Remap for memd_proto::Memory {
    fn remap(
        self,
        conn: &rusqlite::Connection,
        t: &Translation,
        _: u64,
    ) -> Result<Self, StoreError> {
        Ok(crate::store::memories::fetch(conn, t.id(self.id))?.unwrap_or(self))
    }
}

impl Remap for memd_proto::AddResult {
    fn remap(
        mut self,
        _: &rusqlite::Connection,
        t: &Translation,
        generation: u64,
    ) -> Result<Self, StoreError> {
        if let Some(id) = self.id {
            if t.merged.contains(&id) {
                self.deduped = true;
                self.reason = Some("duplicate".into());
            }
            self.id = Some(t.id(id));
        }
        self.merged_into = self.merged_into.map(|id| t.id(id));
        self.generation = generation;
        Ok(self)
    }

    fn unapplied(mut self, created: &HashSet<i64>) -> Self {
        if self.id.is_some_and(|id| created.contains(&id)) {
            self.id = None;
            self.reason = Some("committed; not yet applied here".into());
        }
        self
    }

    fn proposed(mut self, created: &HashSet<i64>) -> Self {
        if self.id.is_some_and(|id| created.contains(&id)) {
            self.id = None;
        }
        if self.merged_into.is_some_and(|id| created.contains(&id)) {
            self.merged_into = None;
        }
        self.reason = Some("proposed".into());
        self
    }
}

/// The shared rows a job changed, as a plan to write through; `Local` when
/// it changed none (a local write, committed as it is).
fn team_plan(ctx: &mut WriteCtx<'_>, team: &Wing) -> Result<Route, StoreError> {
    let changes = ctx.changes()?;
    let shared = |c: &team::engine::write::Change| {
        c.after.as_ref().is_some_and(|a| team.shares_row(a))
            || c.before
                .as_ref()
                .is_some_and(|b| !b.local && team.shares(&b.namespace, "project"))
    };
    let n_shared = changes.iter().filter(|c| shared(c)).count();
    if n_shared == 0 {
        return Ok(Route::Local);
    }
    if n_shared < changes.len() {
        return Err(StoreError::InvalidInput(
            "one write cannot change memories of a shared namespace and of a local one together"
                .into(),
        ));
    }
    if !team.is_synced() {
        return Ok(Route::NotSynced);
    }
    let mut namespaces: Vec<&str> = changes
        .iter()
        .filter_map(|c| c.after.as_ref().map(|a| a.namespace.as_str()))
        .collect();
    namespaces.sort_unstable();
    namespaces.dedup();
    let created: Vec<i64> = changes
        .iter()
        .filter(|c| c.before.is_none())
        .map(|c| c.id)
        .collect();
    for ns in namespaces {
        if !team.is_clean(ns) {
            if crate::store::memories::has_unpushed(ctx.conn, ns, &created)? {
                return Err(StoreError::TeamUnpushed(ns.to_string()));
            }
            team.mark_clean(ns);
        }
    }
    let (agent, session) = match ctx.author {
        Author::Session(who) => (who.agent.clone(), who.session.clone()),
        Author::Daemon | Author::Team => (String::new(), String::new()),
    };
    let strict = match ctx.strict_view() {
        Some((namespace, seen)) => Some((namespace, team::engine::apply::seq_at(ctx.conn, seen)?)),
        None => None,
    };
    Ok(Route::Shared(team::engine::write::Plan {
        op_id: crate::session::new_session_id()?,
        agent,
        session,
        changes,
        resurrect: ctx.resurrects(),
        external: false,
        strict,
        proposable: ctx.proposable(),
    }))
}

/// The team branch of the guarded write, without a server: a team that
/// shares namespace `team` and refuses every write-through.
/// The error for a shared write before this machine has pulled the team's
/// memories, when connecting now failed too.
fn not_synced(team: &Wing) -> StoreError {
    StoreError::TeamUnavailable(format!(
        "this machine has not pulled the team's memories yet, and connecting \
         now failed: {}",
        team.last_error()
            .unwrap_or_else(|| "the catch-up did not finish in time".into())
    ))
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;
    use std::sync::{Arc, Mutex};

    use memd_proto::{AddRequest, DriftPolicy};

    use super::*;
    use crate::drift::policy::WriteKind;
    use crate::gate::{Limits, Rules, View, settings};
    use crate::session::ident::Who;
    use crate::session::readset::ReadSet;
    use crate::store::ops::add::AddOp;
    use crate::store::team::TeamError;
    use crate::store::team::engine::write::Refusal;
    use crate::store::team::wing::Failing;

    fn store(dir: &tempfile::TempDir, wing: Wing) -> Store {
        let mut store = Store::open(
            &dir.path().join("memory.db"),
            &crate::store::StorageConfig::default(),
            std::time::Duration::from_secs(3600),
            crate::store::team::wing::Wing::None,
        )
        .unwrap();
        store.set_wing(wing);
        store
    }

    fn who(namespace: &str) -> Who {
        Who {
            namespace: namespace.into(),
            agent: "test".into(),
            session: "s1".into(),
            reach: crate::session::ident::Reach::default(),
        }
    }

    async fn add(
        store: &Store,
        namespace: &str,
        text: &str,
        policy: DriftPolicy,
        source: Option<&str>,
    ) -> Result<Written<memd_proto::AddResult>, StoreError> {
        add_checked(store, namespace, text, policy, source, false).await
    }

    /// [`add`], with the near-duplicate check when `near`.
    async fn add_checked(
        store: &Store,
        namespace: &str,
        text: &str,
        policy: DriftPolicy,
        source: Option<&str>,
        near: bool,
    ) -> Result<Written<memd_proto::AddResult>, StoreError> {
        let memory = settings::MemoryConfig::default();
        let gate = settings::GateConfig::default();
        let rules = Rules {
            memory: &memory,
            gate: &gate,
            limits: Limits::default(),
        };
        let who = who(namespace);
        let req = AddRequest {
            content: text.into(),
            ..AddRequest::default()
        };
        let mut new = crate::gate::check_add(&req, &who, &rules, time::OffsetDateTime::now_utc())
            .expect("the gate lets it through");
        if let Some(source) = source {
            new.row.source = source.into();
        }
        let mine = crate::gate::similar::profile(text);
        new.sketch = Some(crate::gate::similar::sketch(&mine));
        let guard = Guard {
            policy,
            seen: 0,
            kind: WriteKind::Append,
            who: Arc::new(who),
            reads: Arc::new(Mutex::new(ReadSet::new(0, 64))),
        };
        let op = AddOp {
            new,
            supersedes: None,
            view: View::namespace(namespace, "test", "s1"),
            dedup: true,
            near: near.then_some((mine, 0.8)),
            now: crate::clock::now(),
        };
        store.add(guard, op).await
    }

    /// The candidates' profiles are held for the next adds, and a purge
    /// leaves none in memory.
    #[tokio::test]
    async fn near_duplicate_profiles_are_held_until_a_purge() {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir, Wing::None);
        let text = "the staging database listens on port 5432 for the app, the workers and \
                    the nightly reports of the support team";
        add(&store, "mine", text, DriftPolicy::Off, None)
            .await
            .unwrap();
        let similar = "the staging database listens on port 5432 for the app, the workers and \
                       the nightly reports of the support teams";
        let placed = add_checked(&store, "mine", similar, DriftPolicy::Off, None, true)
            .await
            .unwrap()
            .value;
        assert!(placed.merged_into.is_some(), "{placed:?}");
        assert_eq!(crate::sync::lock(&store.profiles).len(), 1);
        let author = crate::session::ident::Author::Session(Arc::new(who("mine")));
        let uids = uids(&store).await;
        store.purge(author, "test".into(), uids).await.unwrap();
        assert!(crate::sync::lock(&store.profiles).is_empty());
    }

    async fn rows(store: &Store) -> usize {
        store.all_rows().await.unwrap().0.len()
    }

    async fn uids(store: &Store) -> Vec<String> {
        let (all, _) = store.all_rows().await.unwrap();
        all.into_iter().map(|m| m.uid).collect()
    }

    fn unavailable() -> Refusal {
        Refusal::Unavailable(TeamError::Unavailable("connection refused".into()))
    }

    /// A shared add through `team` that must be refused: the error, and the
    /// store to look at after it.
    async fn refused(
        team: &Arc<Failing>,
        policy: DriftPolicy,
    ) -> (tempfile::TempDir, Store, StoreError) {
        let dir = tempfile::tempdir().unwrap();
        let store = store(&dir, Wing::Failing(team.clone()));
        let err = add(&store, "team", "the deploy runs at noon", policy, None)
            .await
            .unwrap_err();
        (dir, store, err)
    }

    #[tokio::test]
    async fn a_refused_write_through_writes_nothing_here() {
        let team = Failing::new("team", unavailable);
        let (_dir, store, err) = refused(&team, DriftPolicy::Standard).await;
        assert!(matches!(err, StoreError::TeamUnavailable(_)), "{err:?}");
        assert_eq!(team.calls.load(Ordering::Relaxed), 1);
        assert_eq!(rows(&store).await, 0, "the job's insert was rolled back");
    }

    #[tokio::test]
    async fn an_unknown_outcome_names_the_operation_and_wakes_the_pull() {
        let team = Failing::new("team", || {
            Refusal::Unknown(TeamError::Unavailable(
                "the COMMIT's answer was lost".into(),
            ))
        });
        let (_dir, store, err) = refused(&team, DriftPolicy::Standard).await;
        match err {
            StoreError::TeamOutcomeUnknown { operation_id, .. } => {
                assert!(!operation_id.is_empty());
            }
            other => panic!("team_outcome_unknown expected, got {other:?}"),
        }
        assert_eq!(team.woken.load(Ordering::Relaxed), 1);
        assert_eq!(rows(&store).await, 0);
    }

    #[tokio::test]
    async fn local_rows_never_ask_the_team() {
        let dir = tempfile::tempdir().unwrap();
        let team = Failing::new("team", unavailable);
        let store = store(&dir, Wing::Failing(team.clone()));
        // Another namespace, and a captured turn in the shared one.
        for (namespace, source) in [("mine", None), ("team", Some("capture"))] {
            add(
                &store,
                namespace,
                "the deploy runs at noon",
                DriftPolicy::Standard,
                source,
            )
            .await
            .unwrap();
        }
        assert_eq!(team.calls.load(Ordering::Relaxed), 0);
        assert_eq!(rows(&store).await, 2);
    }

    #[tokio::test]
    async fn a_machine_not_caught_up_refuses_before_any_write_through() {
        let team = Failing::behind("team", unavailable);
        let (_dir, store, err) = refused(&team, DriftPolicy::Standard).await;
        match err {
            StoreError::TeamUnavailable(m) => assert!(m.contains("has not pulled"), "{m}"),
            other => panic!("team_unavailable expected, got {other:?}"),
        }
        assert_eq!(team.calls.load(Ordering::Relaxed), 0);
        assert_eq!(rows(&store).await, 0);
    }

    #[tokio::test]
    async fn a_change_no_store_function_reported_is_still_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = store(&dir, Wing::None);
        add(
            &store,
            "team",
            "the deploy runs at noon",
            DriftPolicy::Off,
            None,
        )
        .await
        .unwrap();
        let team = Failing::new("team", unavailable);
        store.set_wing(Wing::Failing(team.clone()));
        // A job that changes a shared row by hand, telling the context
        // nothing: the database records the change, the team is asked,
        // its refusal rolls the change back.
        let guard = Guard {
            policy: DriftPolicy::Off,
            seen: 0,
            kind: WriteKind::Destructive,
            who: Arc::new(who("team")),
            reads: Arc::new(Mutex::new(ReadSet::new(0, 64))),
        };
        let err = store
            .guarded(guard, Sharing::Plain, |ctx, _| {
                ctx.conn
                    .execute("UPDATE memories SET content = 'changed by hand'", [])?;
                Ok(())
            })
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::TeamUnavailable(_)), "{err:?}");
        assert_eq!(team.calls.load(Ordering::Relaxed), 1);
        let (all, _) = store.all_rows().await.unwrap();
        assert_eq!(all[0].content, "the deploy runs at noon");
    }

    #[tokio::test]
    async fn a_purge_the_team_refuses_erases_nothing_anywhere() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = store(&dir, Wing::None);
        add(&store, "team", "the key was AKIA", DriftPolicy::Off, None)
            .await
            .unwrap();
        add(&store, "mine", "the key was AKIA", DriftPolicy::Off, None)
            .await
            .unwrap();
        let uids = uids(&store).await;
        let author = || crate::session::ident::Author::Session(Arc::new(who("team")));
        for (team, forbidden) in [
            (Failing::new("team", unavailable), false),
            (
                Failing::new("team", || Refusal::Forbidden("role carol".into())),
                true,
            ),
        ] {
            store.set_wing(Wing::Failing(team));
            let err = store
                .purge(author(), "test".into(), uids.clone())
                .await
                .unwrap_err();
            match err {
                StoreError::Forbidden(m) if forbidden => assert!(m.contains("carol"), "{m}"),
                StoreError::TeamUnavailable(m) if !forbidden => {
                    assert!(m.contains("connection refused"), "{m}");
                }
                other => panic!("the team's refusal expected, got {other:?}"),
            }
            assert_eq!(rows(&store).await, 2, "nothing erased, shared or not");
        }
    }

    #[tokio::test]
    async fn each_refusal_gets_its_own_error() {
        let invalid = Failing::new("team", || Refusal::Invalid("check constraint".into()));
        let (_dir, _, err) = refused(&invalid, DriftPolicy::Standard).await;
        assert!(
            matches!(err, StoreError::InvalidInput(ref m) if m.contains("check constraint")),
            "{err:?}"
        );

        // Rows that keep moving: applied and decided again once, then a
        // conflict.
        let moved = Failing::new("team", || Refusal::Moved(Vec::new()));
        let (_dir, _, err) = refused(&moved, DriftPolicy::Standard).await;
        assert!(matches!(err, StoreError::Conflict { .. }), "{err:?}");
        assert_eq!(moved.calls.load(Ordering::Relaxed), 2);

        let strict = Failing::new("team", || Refusal::Strict(7));
        let (_dir, store, err) = refused(&strict, DriftPolicy::Strict).await;
        assert!(matches!(err, StoreError::Drift(_)), "{err:?}");
        assert_eq!(rows(&store).await, 0);

        // The role may not write there: forbidden, nothing written here.
        let forbidden = Failing::new("team", || Refusal::Forbidden("role carol".into()));
        let (_dir, store, err) = refused(&forbidden, DriftPolicy::Standard).await;
        assert!(
            matches!(err, StoreError::Forbidden(ref m) if m.contains("carol")),
            "{err:?}"
        );
        assert_eq!(rows(&store).await, 0);
        assert_eq!(forbidden.calls.load(Ordering::Relaxed), 1);
    }

    #[tokio::test]
    async fn a_moved_row_another_tool_edited_here_is_left_to_the_pull() {
        // A team row as PostgreSQL holds it, at rev 5.
        let (_db, there) = crate::store::test_db();
        there
            .execute(
                "INSERT INTO memories (namespace, content, category) \
                 VALUES ('team', 'the cache runs on 6379', 'fact')",
                [],
            )
            .unwrap();
        let mut row = team::engine::apply::after(&there, there.last_insert_rowid())
            .unwrap()
            .unwrap();
        row.rev = 5;
        let dir = tempfile::tempdir().unwrap();
        let failing = Failing::new("team", unavailable);
        let store = store(&dir, Wing::Failing(failing.clone()));
        let wing = Wing::Failing(failing.clone());
        store
            .apply_team_rows_anew(vec![row.clone()], false)
            .await
            .unwrap();
        let mut newer = row.clone();
        newer.rev = 6;
        newer.content = "the cache runs on 6380".into();
        // Not edited here: PostgreSQL's row is taken.
        store.take_moved(vec![newer.clone()], &wing).await.unwrap();
        assert_eq!(failing.woken.load(Ordering::Relaxed), 0);
        // Another tool edits it here; PostgreSQL moves on again.
        let shell = rusqlite::Connection::open(dir.path().join("memory.db")).unwrap();
        shell
            .execute(
                "UPDATE memories SET content = 'the shell says 6381' WHERE uid = ?1",
                [&row.uid],
            )
            .unwrap();
        drop(shell);
        let mut newest = newer.clone();
        newest.rev = 7;
        let err = store.take_moved(vec![newest], &wing).await.unwrap_err();
        assert!(matches!(err, StoreError::Conflict { .. }), "{err:?}");
        assert_eq!(
            failing.woken.load(Ordering::Relaxed),
            1,
            "the pull is woken"
        );
        let (all, _) = store.all_rows().await.unwrap();
        assert_eq!(all[0].content, "the shell says 6381", "left for the pull");
    }
}
