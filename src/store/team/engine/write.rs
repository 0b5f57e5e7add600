//! The write-through of a session's write to shared rows: one PostgreSQL
//! transaction that locks each row (`FOR UPDATE`), compares its rev with the
//! one this machine held when the session's job ran (the row rule, decided
//! in PostgreSQL), writes, records the operation id, and commits. The write
//! is acknowledged if and only if PostgreSQL committed it; a lost COMMIT
//! reply is resolved by the operation id before anyone is answered.

use tokio_postgres::types::{ToSql, Type};

use super::super::conn::pg::{Backend, describe};
use super::super::{Team, TeamError};
use super::apply::Before;
use super::row::{COLUMNS, INSERT, Insert, TeamRow};

/// One row a job changed: as it was (absent for a row the job created)
/// and as the job left it (absent for a delete).
#[derive(Debug, Clone)]
pub struct Change {
    /// The local id when the job ran.
    pub id: i64,
    /// Before the job.
    pub before: Option<Before>,
    /// After it.
    pub after: Option<TeamRow>,
}

/// A session's write to shared rows, decided here and to be written
/// through.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Carried into `memd.ops`: a retry never applies twice.
    pub op_id: String,
    /// The session's agent.
    pub agent: String,
    /// The session.
    pub session: String,
    /// The rows, in the order the job changed them.
    pub changes: Vec<Change>,
    /// A row the job created whose uid PostgreSQL holds as a tombstone comes
    /// back (`import --replace`); otherwise PostgreSQL's row stands.
    pub resurrect: bool,
    /// Another tool's change of shared rows here (the `sqlite3` shell):
    /// written through as `external`.
    pub external: bool,
    /// Under `strict`: refused when another session committed in this
    /// namespace after this PostgreSQL number (what the session's view
    /// had applied).
    pub strict: Option<(String, i64)>,
    /// Where review is required and the role may only propose, the write
    /// becomes proposals (an add, update or forget); otherwise it is
    /// refused there (`forbidden`).
    pub proposable: bool,
}

impl Plan {
    /// The local ids of the rows the job created (only the rolled-back job
    /// had them).
    pub fn created(&self) -> std::collections::HashSet<i64> {
        self.changes
            .iter()
            .filter(|c| c.before.is_none())
            .map(|c| c.id)
            .collect()
    }
}

/// Why a write-through did not commit.
#[derive(Debug)]
pub enum Refusal {
    /// PostgreSQL cannot be reached or did not answer: nothing was
    /// written.
    Unavailable(TeamError),
    /// The COMMIT was sent and its answer lost, and PostgreSQL could not
    /// be asked since: it may have committed.
    Unknown(TeamError),
    /// Rows changed in PostgreSQL after this machine's copy of them: the
    /// rows as they are there now (apply them, then decide again).
    Moved(Vec<TeamRow>),
    /// PostgreSQL refused the write itself (a constraint): the message.
    Invalid(String),
    /// The role this machine connects as may not write there (row-level
    /// security): the message, naming the role and the namespaces.
    Forbidden(String),
    /// `strict`: another session committed in the namespace after the
    /// session's view (the number of that commit).
    Strict(i64),
}

/// What PostgreSQL committed: the number, and each row as it is now
/// (with the local id it had when the job ran, for a row of the job).
#[derive(Debug, Clone)]
pub struct Committed {
    /// The transaction's number.
    pub seq: i64,
    /// The rows.
    pub rows: Vec<(Option<i64>, TeamRow)>,
    /// The proposals made instead of changes (review), by number.
    pub proposals: Vec<i64>,
}

enum Step {
    Done(Committed),
    Moved(Vec<TeamRow>),
    Strict(i64),
    Forbidden(String),
}

impl Team {
    /// Writes `plan` through (see the module).
    ///
    /// # Errors
    /// [`Refusal`].
    pub async fn write_through(&self, plan: &Plan) -> Result<Committed, Refusal> {
        let author = if plan.external {
            String::new()
        } else {
            format!(
                "session\n{}\n{}\n{}",
                self.machine(),
                plan.agent,
                plan.session
            )
        };
        let limit = self.config().timeout();
        let target = self.target().display();
        // Set once the COMMIT is sent: a failure before it rolled the
        // transaction back (nothing written, for sure); after it, the
        // outcome is unknown until the transaction is concluded and the
        // operation id looked up.
        let commit_sent = std::sync::atomic::AtomicBool::new(false);
        let mut backend = None;
        let attempt = self
            .with_writer(async |link| {
                let mut tries = 0;
                loop {
                    tries += 1;
                    let run = tokio::time::timeout(
                        limit,
                        transaction(
                            &mut link.client,
                            plan,
                            (&author, self.machine()),
                            &commit_sent,
                            &mut backend,
                        ),
                    )
                    .await;
                    return match run {
                        Err(_) => Err(TeamError::Unavailable(format!(
                            "{target} did not answer within {} ms (team.timeout_ms)",
                            limit.as_millis()
                        ))),
                        Ok(Ok(step)) => Ok(Ok(step)),
                        // Two writers locked each other: one of them retries.
                        Ok(Err(TxError::Db(e))) if tries < 4 && e.retryable() => continue,
                        Ok(Err(TxError::Db(e)))
                            if e.code
                                == tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE =>
                        {
                            Ok(Err(Refusal::Forbidden(e.message)))
                        }
                        // The server answered but cannot take writes now.
                        Ok(Err(TxError::Db(e)))
                            if e.code
                                == tokio_postgres::error::SqlState::READ_ONLY_SQL_TRANSACTION =>
                        {
                            Ok(Err(Refusal::Unavailable(TeamError::Unavailable(format!(
                                "{} — the server takes no writes (a standby, or \
                                 default_transaction_read_only): point [team] url at the primary",
                                e.message
                            )))))
                        }
                        Ok(Err(TxError::Db(e))) => Ok(Err(Refusal::Invalid(e.message))),
                        Ok(Err(TxError::Lost(e))) => Err(e),
                    };
                }
            })
            .await;
        match attempt {
            Ok(Ok(Step::Done(c))) => Ok(c),
            Ok(Ok(Step::Moved(rows))) => Err(Refusal::Moved(rows)),
            Ok(Ok(Step::Strict(seq))) => Err(Refusal::Strict(seq)),
            Ok(Ok(Step::Forbidden(m))) => Err(Refusal::Forbidden(m)),
            Ok(Err(r)) => Err(r),
            Err(e) if !commit_sent.load(std::sync::atomic::Ordering::Acquire) => {
                Err(Refusal::Unavailable(e))
            }
            Err(e) => {
                // The COMMIT was sent and its answer did not come: the
                // server may still be committing (a slow disk, a
                // synchronous standby), so the lookup waits until that
                // transaction is over — its server process ended — and
                // only then asks the operation id.
                let Some(backend) = backend else {
                    return Err(Refusal::Unknown(e));
                };
                match self.conclude(&backend, plan).await {
                    Ok(Some(c)) => Ok(c),
                    Ok(None) => Err(Refusal::Unavailable(e)),
                    Err(again) => Err(Refusal::Unknown(TeamError::Unavailable(format!(
                        "{e}; then, asking whether it committed: {again}"
                    )))),
                }
            }
        }
    }

    /// Concludes the transaction `backend` was running — its server
    /// process is terminated and waited for, so the transaction either
    /// committed or never will — and looks operation `plan.op_id` up:
    /// the rows it wrote when it committed, `None` when it did not.
    ///
    /// # Errors
    /// [`TeamError`] when PostgreSQL cannot be asked, or the process does
    /// not end within the bound: the outcome stays unknown.
    async fn conclude(
        &self,
        backend: &Backend,
        plan: &Plan,
    ) -> Result<Option<Committed>, TeamError> {
        let limit = self.config().timeout();
        self.with_writer(async |link| {
            let db = |e: tokio_postgres::Error| TeamError::Unavailable(describe(&e));
            let gone = async {
                // A role may end its own backends; ending a superuser's
                // needs superuser (an error here leaves the outcome
                // unknown).
                link.client
                    .execute_typed(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                         WHERE pid = $1 AND backend_start::text = $2",
                        &[(&backend.pid, Type::INT4), (&backend.started, Type::TEXT)],
                    )
                    .await
                    .map_err(db)?;
                loop {
                    let alive: i64 = link
                        .client
                        .query_typed_one(
                            "SELECT count(*) FROM pg_stat_activity \
                             WHERE pid = $1 AND backend_start::text = $2",
                            &[(&backend.pid, Type::INT4), (&backend.started, Type::TEXT)],
                        )
                        .await
                        .map_err(db)?
                        .get(0);
                    if alive == 0 {
                        return Ok::<(), TeamError>(());
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                }
            };
            tokio::time::timeout(limit, gone).await.map_err(|_| {
                TeamError::Unavailable(format!(
                    "the server process of the abandoned transaction did not end within {} ms",
                    limit.as_millis()
                ))
            })??;
            self.bounded(lookup(&link.client, plan)).await
        })
        .await
    }
}

impl Team {
    /// Erases the shared memories `uids` in PostgreSQL (`memd.purge`: the
    /// row and its revisions, a purge record without text every machine
    /// applies), in one transaction; then asks PostgreSQL to vacuum the
    /// dead tuples (only the schema's owner or a superuser may: otherwise
    /// autovacuum does it later).
    ///
    /// # Errors
    /// [`TeamError::Forbidden`] without the `admin` right (nothing erased),
    /// [`TeamError::Unavailable`].
    pub async fn purge(&self, uids: &[String]) -> Result<(), TeamError> {
        let machine = self.machine().to_string();
        self.with_writer(async |link| {
            let run = async {
                let tx = link.client.transaction().await?;
                for uid in uids {
                    tx.query_one("SELECT memd.purge($1, $2)", &[uid, &machine])
                        .await?;
                }
                tx.commit().await
            };
            match self.bounded(async { Ok(run.await) }).await? {
                Ok(()) => {}
                Err(e)
                    if e.code()
                        == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) =>
                {
                    return Ok(Err(TeamError::Forbidden(describe(&e))));
                }
                Err(e) => return Err(TeamError::Unavailable(describe(&e))),
            }
            let vacuum = self
                .bounded(async {
                    link.client
                        .batch_execute("VACUUM memd.memories, memd.revisions")
                        .await
                        .map_err(|e| TeamError::Unavailable(describe(&e)))
                })
                .await;
            if let Err(e) = vacuum {
                tracing::info!(error = %e, "team memory: PostgreSQL did not vacuum after a purge");
            }
            Ok(Ok(()))
        })
        .await?
    }
}

impl Team {
    /// Moves the shared rows of namespace `old` to `new` in PostgreSQL and
    /// records the rename (`memd.rename_namespace`), in one transaction:
    /// every machine applies the moved rows at its next pull (same uids:
    /// nothing duplicated), and no writer may put a row in `old` again.
    /// The number of rows moved.
    ///
    /// # Errors
    /// [`TeamError::Forbidden`] without `write` on both names (nothing
    /// moved), [`TeamError::Unavailable`].
    pub async fn rename_namespace(&self, old: &str, new: &str) -> Result<i64, TeamError> {
        let author = format!("daemon\n{}\n\n", self.machine());
        self.with_writer(async |link| {
            let run = async {
                let tx = link.client.transaction().await?;
                tx.execute("SELECT set_config('memd.author', $1, true)", &[&author])
                    .await?;
                let n: i64 = tx
                    .query_one("SELECT memd.rename_namespace($1, $2)", &[&old, &new])
                    .await?
                    .get(0);
                tx.commit().await?;
                Ok::<_, tokio_postgres::Error>(n)
            };
            match self.bounded(async { Ok(run.await) }).await? {
                Ok(n) => Ok(Ok(n)),
                Err(e)
                    if e.code()
                        == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) =>
                {
                    Ok(Err(TeamError::Forbidden(describe(&e))))
                }
                Err(e) => Err(TeamError::Unavailable(describe(&e))),
            }
        })
        .await?
    }
}

/// Operation `plan.op_id` as PostgreSQL committed it: its number and each
/// row it wrote as it is now, paired with the local id the job gave it
/// (`memd.ops.uids` lists the rows in the order of the plan's changes; a
/// delete of a row PostgreSQL never held is not in it).
async fn lookup(
    client: &tokio_postgres::Client,
    plan: &Plan,
) -> Result<Option<Committed>, TeamError> {
    let db = |e: tokio_postgres::Error| TeamError::Unavailable(describe(&e));
    let found = client
        .query_typed_opt(
            "SELECT changed_seq, uids FROM memd.ops WHERE op_id = $1",
            &[(&plan.op_id, Type::TEXT)],
        )
        .await
        .map_err(db)?;
    let Some(found) = found else {
        return Ok(None);
    };
    let seq: i64 = found.get(0);
    let uids: Vec<String> = found.get(1);
    let sql = format!("SELECT {COLUMNS} FROM memd.memories WHERE uid = ANY($1)");
    let mut rows: std::collections::HashMap<String, TeamRow> = client
        .query_typed(&sql, &[(&uids, Type::TEXT_ARRAY)])
        .await
        .map_err(db)?
        .iter()
        .map(|r| TeamRow::from_pg(r).map(|row| (row.uid.clone(), row)))
        .collect::<Result<_, _>>()
        .map_err(db)?;
    let rows = pair(&plan.changes, &uids)
        .into_iter()
        .filter_map(|(id, uid)| rows.remove(uid).map(|row| (id, row)))
        .collect();
    let proposals = client
        .query_typed(
            "SELECT id FROM memd.proposals WHERE op_id = $1 ORDER BY id",
            &[(&plan.op_id, Type::TEXT)],
        )
        .await
        .map_err(db)?
        .iter()
        .map(|r| r.get(0))
        .collect();
    Ok(Some(Committed {
        seq,
        rows,
        proposals,
    }))
}

/// Pairs the uids an operation recorded with the local ids of the plan's
/// changes, as the transaction wrote them: one uid per change, in order,
/// but for a delete of a row PostgreSQL did not hold (no uid recorded).
fn pair<'a>(changes: &[Change], uids: &'a [String]) -> Vec<(Option<i64>, &'a String)> {
    let mut out = Vec::with_capacity(uids.len());
    let mut next = uids.iter().peekable();
    for change in changes {
        let Some(uid) = next.peek() else { break };
        match (&change.before, &change.after) {
            (Some(before), None) if &before.uid != *uid => continue,
            (None, None) => continue,
            _ => {}
        }
        out.push((Some(change.id), *uid));
        next.next();
    }
    out.extend(next.map(|uid| (None, uid)));
    out
}

enum TxError {
    /// PostgreSQL refused a statement (the transaction is rolled back).
    Db(DbRefusal),
    /// The connection failed.
    Lost(TeamError),
}

/// A statement PostgreSQL refused: its message and SQLSTATE.
struct DbRefusal {
    message: String,
    code: tokio_postgres::error::SqlState,
}

impl DbRefusal {
    /// A deadlock or a serialization failure: the same transaction again
    /// may pass.
    fn retryable(&self) -> bool {
        use tokio_postgres::error::SqlState;
        self.code == SqlState::T_R_DEADLOCK_DETECTED
            || self.code == SqlState::T_R_SERIALIZATION_FAILURE
    }
}

impl From<tokio_postgres::Error> for TxError {
    fn from(e: tokio_postgres::Error) -> Self {
        match e.code() {
            Some(code) => TxError::Db(DbRefusal {
                message: describe(&e),
                code: code.clone(),
            }),
            None => TxError::Lost(TeamError::Unavailable(describe(&e))),
        }
    }
}

/// The server process running the transaction, which records `author`
/// as the transaction's author.
async fn backend_of(
    tx: &tokio_postgres::Transaction<'_>,
    author: &str,
) -> Result<Backend, TxError> {
    let me = tx
        .query_one(
            "SELECT set_config('memd.author', $1, true), pg_backend_pid(), \
             (SELECT backend_start::text FROM pg_stat_activity WHERE pid = pg_backend_pid())",
            &[&author],
        )
        .await?;
    Ok(Backend {
        pid: me.get(1),
        started: me.get::<_, Option<String>>(2).unwrap_or_default(),
    })
}

/// Takes the transaction's number, and says who runs it (the current
/// role), the namespaces of `plan` it may not write and those where it
/// may only propose.
async fn rights(
    tx: &tokio_postgres::Transaction<'_>,
    plan: &Plan,
) -> Result<(String, Vec<String>, Vec<String>), TxError> {
    // The transaction's number first: memd's writers queue on it before
    // they lock any row, so two of them never lock rows in each other's way.
    // In the same statement, the namespaces this role may not write:
    // row-level security would hide their rows from the locks below (a
    // "row not found", not the truth), so the write is refused here.
    let mut namespaces: Vec<&str> = plan
        .changes
        .iter()
        .flat_map(|c| {
            let before = c.before.as_ref().map(|b| b.namespace.as_str());
            let after = c.after.as_ref().map(|a| a.namespace.as_str());
            before.into_iter().chain(after)
        })
        .collect();
    namespaces.sort_unstable();
    namespaces.dedup();
    // And the namespaces where it may only propose (review).
    let first = tx
        .query_one(
            "SELECT memd.take_seq(), current_user::text, ARRAY(SELECT n FROM \
             unnest($1::text[]) n WHERE NOT n LIKE ANY (memd.patterns(current_user, \
             'write'))), ARRAY(SELECT n FROM unnest($1::text[]) n \
             WHERE memd.proposes(session_user, n))",
            &[&namespaces],
        )
        .await?;
    Ok((first.get(1), first.get(2), first.get(3)))
}

/// With the strict rule, the newest change another session made in the
/// plan's namespace after the session's view (`None`: none).
async fn newer_in_strict(
    tx: &tokio_postgres::Transaction<'_>,
    plan: &Plan,
    machine: &str,
) -> Result<Option<i64>, TxError> {
    let Some((namespace, since)) = &plan.strict else {
        return Ok(None);
    };
    Ok(tx
        .query_one(
            "SELECT max(changed_seq) FROM memd.memories WHERE namespace = $1 \
             AND changed_seq > $2 AND NOT (changed_kind = 'session' \
             AND changed_machine IS NOT DISTINCT FROM $3 \
             AND changed_session IS NOT DISTINCT FROM $4)",
            &[namespace, since, &machine, &plan.session],
        )
        .await?
        .get(0))
}

/// One attempt of `plan`'s transaction. `backend` gets the server process
/// that runs it (learned inside the transaction: through a pooler in
/// transaction mode, each transaction may run on another one).
async fn transaction(
    client: &mut tokio_postgres::Client,
    plan: &Plan,
    (author, machine): (&str, &str),
    commit_sent: &std::sync::atomic::AtomicBool,
    backend: &mut Option<Backend>,
) -> Result<Step, TxError> {
    // Every row read here is dropped before the COMMIT: a row holds its
    // statement, which is closed when the row goes, and through a pooler
    // in transaction mode a close after the COMMIT would leave the
    // statement on a server connection another client gets next.
    let tx = client.transaction().await?;
    *backend = Some(backend_of(&tx, author).await?);
    let (role, denied, reviewed) = rights(&tx, plan).await?;
    if !denied.is_empty() {
        tx.rollback().await?;
        return Ok(Step::Forbidden(format!(
            "role {role} may not write to {} in the team's PostgreSQL: nothing was written \
             (an admin grants it: memd team grant {role} GLOB write)",
            denied.join(", ")
        )));
    }
    if let Some(seq) = newer_in_strict(&tx, plan, machine).await? {
        tx.rollback().await?;
        return Ok(Step::Strict(seq));
    }
    let mut moved = Vec::new();
    let mut out = Vec::with_capacity(plan.changes.len());
    let mut proposals = Vec::new();
    let select = format!("SELECT {COLUMNS} FROM memd.memories WHERE uid = $1 FOR UPDATE");
    let held = |change: &Change| -> Option<String> {
        let before = change.before.as_ref().map(|b| &b.namespace);
        let after = change.after.as_ref().map(|a| &a.namespace);
        before
            .into_iter()
            .chain(after)
            .find(|n| reviewed.contains(n))
            .cloned()
    };
    for change in &plan.changes {
        if let Some(namespace) = held(change) {
            let counts_only = match (&change.before, &change.after) {
                (Some(b), Some(a)) => a.rev == b.rev,
                _ => false,
            };
            if !counts_only {
                if !plan.proposable {
                    let role = &role;
                    tx.rollback().await?;
                    return Ok(Step::Forbidden(format!(
                        "namespace {namespace} requires review and role {role} may only \
                         propose there (add, update, forget): nothing was written"
                    )));
                }
                match propose(&tx, plan, change, &select, author).await? {
                    Proposed::Made(id) => proposals.push(id),
                    Proposed::Moved(row) => moved.push(*row),
                }
                continue;
            }
        }
        match write_change(&tx, plan, change, &select).await? {
            Changed::Row(row) => out.push((Some(change.id), *row)),
            Changed::Moved(row) => moved.push(*row),
            Changed::Nothing => {}
        }
    }
    if !moved.is_empty() {
        tx.rollback().await?;
        return Ok(Step::Moved(moved));
    }
    let uids: Vec<String> = out.iter().map(|(_, r)| r.uid.clone()).collect();
    let seq: i64 = tx
        .query_one(
            "SELECT memd.record_op($1, $2, $3)",
            &[&plan.op_id, &machine, &uids],
        )
        .await?
        .get(0);
    crate::store::team::fault("before-team-commit");
    commit_sent.store(true, std::sync::atomic::Ordering::Release);
    tx.commit().await?;
    crate::store::team::fault("after-team-commit");
    Ok(Step::Done(Committed {
        seq,
        rows: out,
        proposals,
    }))
}

/// What one change did in PostgreSQL.
enum Changed {
    /// The row as PostgreSQL now holds it.
    Row(Box<TeamRow>),
    /// The row moved in PostgreSQL after this machine's copy: nothing of
    /// the transaction may commit.
    Moved(Box<TeamRow>),
    /// Nothing to write (a row never pushed, now deleted).
    Nothing,
}

/// Writes one change of `plan` that is not held for review: a created
/// row inserted (or a deleted one brought back when the plan may), an
/// existing one updated, deleted or its counts added, each under a
/// compare-and-set on the rev this machine held. `select` locks a row by
/// uid.
async fn write_change(
    tx: &tokio_postgres::Transaction<'_>,
    plan: &Plan,
    change: &Change,
    select: &str,
) -> Result<Changed, TxError> {
    let Some(before) = &change.before else {
        // A row the job created; its uid may be PostgreSQL's already (an
        // import of a row this machine has not pulled, or deleted).
        let Some(after) = &change.after else {
            return Ok(Changed::Nothing);
        };
        let held = tx.query_opt(select, &[&after.uid]).await?;
        let row = match held {
            None => insert(tx, after).await?,
            Some(r) => {
                let held = TeamRow::from_pg(&r)?;
                if held.deleted && plan.resurrect {
                    let base = Before {
                        uid: held.uid.clone(),
                        namespace: held.namespace.clone(),
                        team_rev: Some(held.rev),
                        rev: held.rev,
                        observation_count: held.observation_count,
                        confirmed_count: held.confirmed_count,
                        local: false,
                    };
                    update(tx, &base, after).await?
                } else {
                    held
                }
            }
        };
        return Ok(Changed::Row(Box::new(row)));
    };
    let current = tx.query_opt(select, &[&before.uid]).await?;
    let current = match current {
        Some(r) => TeamRow::from_pg(&r)?,
        None => {
            // Never in PostgreSQL (a local row never pushed): the
            // caller checked the namespace; treat it as created.
            return Ok(match &change.after {
                Some(after) => Changed::Row(Box::new(insert(tx, after).await?)),
                None => Changed::Nothing,
            });
        }
    };
    let counts_only = change.after.as_ref().is_some_and(|a| a.rev == before.rev);
    if !counts_only && (Some(current.rev) != before.team_rev || current.deleted) {
        return Ok(Changed::Moved(Box::new(current)));
    }
    let row = match &change.after {
        None => {
            let sql = format!(
                "UPDATE memd.memories SET deleted = true WHERE uid = $1 RETURNING {COLUMNS}"
            );
            TeamRow::from_pg(&tx.query_one(&sql, &[&before.uid]).await?)?
        }
        Some(after) if counts_only => {
            let sql = format!(
                "UPDATE memd.memories SET observation_count = observation_count + $2, \
                 confirmed_count = confirmed_count + $3, \
                 last_confirmed_at = coalesce($4, last_confirmed_at) \
                 WHERE uid = $1 RETURNING {COLUMNS}"
            );
            let d_obs =
                i32::try_from(after.observation_count - before.observation_count).unwrap_or(0);
            let d_conf = i32::try_from(after.confirmed_count - before.confirmed_count).unwrap_or(0);
            TeamRow::from_pg(
                &tx.query_one(
                    &sql,
                    &[&before.uid, &d_obs, &d_conf, &after.last_confirmed_at],
                )
                .await?,
            )?
        }
        Some(after) => update(tx, before, after).await?,
    };
    Ok(Changed::Row(Box::new(row)))
}

enum Proposed {
    Made(i64),
    /// The row moved in PostgreSQL after this machine's copy.
    Moved(Box<TeamRow>),
}

/// Records `change` as a proposal: an add of a row the job created, an
/// update or forget of a row compared with its rev like any write.
async fn propose(
    tx: &tokio_postgres::Transaction<'_>,
    plan: &Plan,
    change: &Change,
    select: &str,
    author: &str,
) -> Result<Proposed, TxError> {
    let (action, base_rev, row) = match (&change.before, &change.after) {
        (None, Some(after)) => ("add", None, after.clone()),
        (Some(before), after) => {
            let Some(current) = tx.query_opt(select, &[&before.uid]).await? else {
                // Never in PostgreSQL: the row the job left is proposed whole.
                let Some(after) = after else {
                    return Err(TxError::Db(DbRefusal {
                        message: format!("memory {} is not in the team's PostgreSQL", before.uid),
                        code: tokio_postgres::error::SqlState::NO_DATA_FOUND,
                    }));
                };
                return Ok(Proposed::Made(
                    insert_proposal(tx, plan, "add", None, after, author).await?,
                ));
            };
            let current = TeamRow::from_pg(&current)?;
            if Some(current.rev) != before.team_rev || current.deleted {
                return Ok(Proposed::Moved(Box::new(current)));
            }
            match after {
                Some(after) => ("update", Some(current.rev), after.clone()),
                None => ("forget", Some(current.rev), current),
            }
        }
        (None, None) => unreachable!("a change changes a row"),
    };
    Ok(Proposed::Made(
        insert_proposal(tx, plan, action, base_rev, &row, author).await?,
    ))
}

/// Inserts one proposal: the row's columns as [`INSERT`] writes them, and
/// what it proposes; its number.
async fn insert_proposal(
    tx: &tokio_postgres::Transaction<'_>,
    plan: &Plan,
    action: &str,
    base_rev: Option<i64>,
    row: &TeamRow,
    author: &str,
) -> Result<i64, TxError> {
    let sql = INSERT
        .replacen(
            "INSERT INTO memd.memories (",
            "INSERT INTO memd.proposals (action, base_rev, op_id, changed_kind, changed_machine, \
             changed_agent, changed_session, ",
            1,
        )
        .replacen(
            ") VALUES (",
            ") VALUES ($29, $30, $31, 'session', $32, $33, $34, ",
            1,
        )
        + " RETURNING id";
    let mut lines = author
        .split('\n')
        .skip(1)
        .map(|s| (!s.is_empty()).then_some(s));
    let (machine, agent, session) = (
        lines.next().flatten(),
        lines.next().flatten(),
        lines.next().flatten(),
    );
    let values = Insert::of(row);
    let mut params: Vec<&(dyn ToSql + Sync)> = values.params().to_vec();
    params.extend_from_slice(&[&action, &base_rev, &plan.op_id, &machine, &agent, &session]);
    Ok(tx.query_one(&sql, &params).await?.get(0))
}

/// Inserts a row the job created; two machines adding the same memory at
/// once merge into one row (the dedup index): the existing row's counts
/// and tags take the new one's.
async fn insert(tx: &tokio_postgres::Transaction<'_>, a: &TeamRow) -> Result<TeamRow, TxError> {
    let sql = format!(
        "{INSERT} ON CONFLICT (namespace, scope, coalesce(scope_owner, ''), dedupe_key) \
         WHERE NOT deleted AND superseded_by_uid IS NULL AND dedupe_key IS NOT NULL \
           AND thread IS NULL \
         DO UPDATE SET observation_count = memd.memories.observation_count \
             + EXCLUDED.observation_count, \
           tags = ARRAY(SELECT DISTINCT t FROM unnest(memd.memories.tags || EXCLUDED.tags) t \
                        ORDER BY 1) \
         RETURNING {COLUMNS}"
    );
    let values = Insert::of(a);
    Ok(TeamRow::from_pg(
        &tx.query_one(&sql, &values.params()).await?,
    )?)
}

/// Writes a row's new values over the version compared; counts as deltas.
async fn update(
    tx: &tokio_postgres::Transaction<'_>,
    before: &Before,
    a: &TeamRow,
) -> Result<TeamRow, TxError> {
    let sql = format!(
        "UPDATE memd.memories SET namespace = $2, scope = $3, scope_owner = $4, content = $5, \
         subject = $6, category = $7, tier = $8, importance = $9, confidence = $10, \
         pinned = $11, status = $12, metadata = $13, tags = $14, superseded_by_uid = $15, \
         superseded_at = $16, dedupe_key = $17, \
         observation_count = observation_count + $18, \
         confirmed_count = confirmed_count + $19, \
         last_confirmed_at = coalesce($20, last_confirmed_at), expires_at = $21, \
         thread = $22, thread_pos = $23, occurred_at = $24, deleted = false \
         WHERE uid = $1 RETURNING {COLUMNS}"
    );
    let tier = i32::try_from(a.tier).unwrap_or(2);
    let d_obs = i32::try_from(a.observation_count - before.observation_count).unwrap_or(0);
    let d_conf = i32::try_from(a.confirmed_count - before.confirmed_count).unwrap_or(0);
    let params: [&(dyn ToSql + Sync); 24] = [
        &a.uid,
        &a.namespace,
        &a.scope,
        &a.scope_owner,
        &a.content,
        &a.subject,
        &a.category,
        &tier,
        &a.importance,
        &a.confidence,
        &a.pinned,
        &a.status,
        &a.metadata,
        &a.tags,
        &a.superseded_by_uid,
        &a.superseded_at,
        &a.dedupe_key,
        &d_obs,
        &d_conf,
        &a.last_confirmed_at,
        &a.expires_at,
        &a.thread,
        &a.thread_pos,
        &a.occurred_at,
    ];
    Ok(TeamRow::from_pg(&tx.query_one(&sql, &params).await?)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn before(uid: &str) -> Option<Before> {
        Some(Before {
            uid: uid.into(),
            namespace: "team".into(),
            team_rev: Some(1),
            rev: 1,
            observation_count: 1,
            confirmed_count: 0,
            local: false,
        })
    }

    fn after(uid: &str) -> Option<TeamRow> {
        Some(TeamRow {
            memory: memd_proto::Memory {
                uid: uid.into(),
                ..Default::default()
            },
            ..TeamRow::default()
        })
    }

    #[test]
    fn an_operations_uids_pair_with_the_local_ids_the_job_gave() {
        let changes = vec![
            // Created, and merged by PostgreSQL into another uid.
            Change {
                id: 7,
                before: None,
                after: after("new"),
            },
            // A delete of a row PostgreSQL never held: no uid recorded.
            Change {
                id: 3,
                before: before("local-only"),
                after: None,
            },
            // An update and a delete it held.
            Change {
                id: 4,
                before: before("u"),
                after: after("u"),
            },
            Change {
                id: 5,
                before: before("d"),
                after: None,
            },
        ];
        let uids: Vec<String> = ["merged", "u", "d"].map(String::from).to_vec();
        let paired: Vec<(Option<i64>, &str)> = pair(&changes, &uids)
            .into_iter()
            .map(|(id, uid)| (id, uid.as_str()))
            .collect();
        assert_eq!(
            paired,
            [(Some(7), "merged"), (Some(4), "u"), (Some(5), "d")]
        );
        // Every uid has a place, even past what the plan explains.
        let extra: Vec<String> = ["merged", "u", "d", "x"].map(String::from).to_vec();
        assert_eq!(pair(&changes, &extra).last().map(|(id, _)| *id), Some(None));
    }
}
