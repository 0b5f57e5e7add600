//! Following the team's PostgreSQL (src/store/team/README.md): one
//! connection that `LISTEN`s for commits and, on a notification or every
//! few seconds, applies every later commit of the shared namespaces in
//! commit order. Before it follows, it checks that PostgreSQL still holds
//! the history this machine applied (else it resyncs by uid and rev,
//! keeping the rows PostgreSQL lost in a drift backup), and backfills a
//! namespace that starts to be shared. [`run`] runs it again after a pause
//! when it stops (the daemon's pull task, through the wing).

use std::collections::HashSet;
use std::time::Duration;

use super::super::admin::{grants, schema};
use super::super::conn::pg::{self, Link};
use super::super::{Team, TeamError};
use super::pull::{self, Mark, PAGE};
use super::write::{Plan, Refusal};
use crate::drift::backup::Backups;
use crate::store::{Store, StoreError};

/// How often the pull looks even without a notification.
const POLL: Duration = Duration::from_secs(2);

/// How long between two connection attempts.
const RETRY: Duration = Duration::from_secs(2);

/// Why following stopped.
pub enum Failure {
    /// PostgreSQL.
    Team(TeamError),
    /// This machine's database.
    Local(StoreError),
}

impl From<TeamError> for Failure {
    fn from(e: TeamError) -> Self {
        Failure::Team(e)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::Local(e)
    }
}

/// Follows the team's PostgreSQL until the daemon stops: when PostgreSQL
/// is down or not initialised, tries again every 2 s (at once when a
/// shared write or `memd team init` asks).
pub async fn run(store: &Store, backups: &Backups, team: &Team) {
    loop {
        team.attempt_started();
        match follow(store, backups, team).await {
            Ok(()) => {}
            Err(Failure::Team(e)) => {
                tracing::warn!(error = %e, "team memory: PostgreSQL is not usable; retrying in 2 s");
                team.attempt_failed(&e);
            }
            Err(Failure::Local(e)) => {
                tracing::warn!(error = %e, "team memory: cannot apply the team's changes here; retrying in 2 s");
                team.attempt_failed(&TeamError::Unavailable(format!(
                    "cannot apply the team's changes here: {e}"
                )));
            }
        }
        // A shared write that finds this machine not synced, or `memd team
        // init` run here, does not wait for the pause.
        tokio::select! {
            () = tokio::time::sleep(RETRY) => {}
            () = team.kick.notified() => {}
        }
    }
}

/// One connection's life: connect, `LISTEN`, catch up, follow until it
/// breaks (the pull job runs it again after a pause).
///
/// # Errors
/// [`Failure`].
pub async fn follow(store: &Store, backups: &Backups, team: &Team) -> Result<(), Failure> {
    let mut link = pg::connect(team.pull_target(), team.config().timeout(), true).await?;
    team.bounded(schema::check(&link.client)).await?;
    team.bounded(async {
        link.client
            .batch_execute("LISTEN memd_changes")
            .await
            .map_err(|e| TeamError::Unavailable(pg::describe(&e)))
    })
    .await?;
    catch_up(store, backups, team, &link).await?;
    team.set_synced(true);
    team.wake.notify_one();
    tracing::info!(url = %team.pull_target().display(), "team memory: following the team's PostgreSQL");
    let mut notices = link.notices.take().expect("a listening link");
    // The replica's connection, when one is configured and answers.
    let mut replica: Option<Link> = None;
    // Another tool's edits of shared rows are looked for at the start and
    // after each external change the daemon saw.
    let mut scanned_epoch = None;
    loop {
        // A grant or a revoke since the last look (announced like a
        // commit): before the history check, which a row hidden by a
        // revoke would fail.
        follow_rights(store, team, &link).await?;
        // PostgreSQL must still hold what was applied (a restored dump, a
        // failover that lost commits): checked at every pull.
        let mark = store.team_mark().await?;
        if !team
            .bounded(pull::history_holds(&link.client, &mark))
            .await?
        {
            resync(store, backups, team, &link, &mark).await?;
        }
        pull_read(store, backups, team, &link, &mut replica).await?;
        push_local_edits(store, backups, team, &mut scanned_epoch).await?;
        tokio::select! {
            n = notices.recv() => {
                if n.is_none() {
                    return Err(TeamError::Unavailable("the connection ended".into()).into());
                }
                // Everything that arrived meanwhile is in the next pull.
                while notices.try_recv().is_ok() {}
            }
            () = tokio::time::sleep(POLL) => {}
            () = team.wake.notified() => {}
        }
        if link.is_closed() {
            return Err(TeamError::Unavailable("the connection ended".into()).into());
        }
    }
}

/// Brings this machine to PostgreSQL's present: a resync when its history
/// went back, a backfill when a namespace starts to be shared (or for a new
/// machine), then every later commit.
async fn catch_up(
    store: &Store,
    backups: &Backups,
    team: &Team,
    link: &Link,
) -> Result<(), Failure> {
    follow_rights(store, team, link).await?;
    let mut mark = store.team_mark().await?;
    let patterns = team.config().namespaces.clone();
    let holds = team
        .bounded(pull::history_holds(&link.client, &mark))
        .await?;
    if !holds {
        resync(store, backups, team, link, &mark).await?;
        return Ok(());
    }
    if mark.patterns != patterns {
        // A new machine, or new patterns: everything of the shared
        // namespaces, from the start (applying is idempotent by uid and rev).
        let (_, uuid) = team.bounded(pull::head(&link.client)).await?;
        tracing::info!(patterns = ?patterns, "team memory: backfilling the shared namespaces");
        mark.applied = 0;
        mark.db_uuid = Some(uuid);
        mark.patterns.clone_from(&patterns);
        mark.last = None;
        store
            .apply_team_rows(Vec::new(), mark.clone(), false)
            .await?;
    }
    pull_all(store, backups, team, link).await
}

/// Looks at what this machine's role may do (PostgreSQL's grants, which
/// row-level security enforces): `status` shows it per configured glob. When
/// what it may read changed since the last look, the rows of namespaces it
/// may no longer read are dropped here — with their revisions, without a
/// drift backup — and a read granted since is backfilled: rows hidden
/// before are below the number applied, so the pull starts again from the
/// beginning (applying is idempotent by uid and rev).
async fn follow_rights(store: &Store, team: &Team, link: &Link) -> Result<(), Failure> {
    let rights = team
        .bounded(grants::rights(&link.client, &team.config().namespaces))
        .await?;
    team.note_rights(rights);
    let readable = team.bounded(grants::readable(&link.client)).await?;
    let mut mark = store.team_mark().await?;
    if mark.readable == readable {
        return Ok(());
    }
    let local = store.team_namespaces().await?;
    let hidden = team
        .bounded(grants::unreadable(&link.client, &local))
        .await?;
    if !hidden.is_empty() {
        let rows = store.drop_unreadable_team_rows(hidden.clone()).await?;
        tracing::warn!(
            namespaces = ?hidden,
            rows,
            "team memory: this machine's role may no longer read these namespaces; their rows were removed here"
        );
    }
    let widened = readable.iter().any(|p| !mark.readable.contains(p));
    mark = store.team_mark().await?;
    if widened && !mark.readable.is_empty() {
        tracing::info!("team memory: this machine's role may read more; backfilling");
        mark.applied = 0;
        mark.last = None;
    }
    mark.readable = readable;
    store.set_team_mark(mark).await?;
    Ok(())
}

/// Writes through what another tool (the `sqlite3` shell) changed of shared
/// rows here, as `external`: an edit with a compare-and-set on the
/// `team_rev` the row held, a delete likewise. When PostgreSQL's row moved
/// meanwhile, PostgreSQL's row replaces the local one, and the local
/// version goes into a drift backup.
async fn push_local_edits(
    store: &Store,
    backups: &Backups,
    team: &Team,
    scanned_epoch: &mut Option<u64>,
) -> Result<(), Failure> {
    let epoch = store
        .generations
        .external_epoch
        .load(std::sync::atomic::Ordering::Acquire);
    let scan_edits = *scanned_epoch != Some(epoch);
    if scan_edits {
        // Another tool may have added rows never pushed: look again.
        team.forget_clean();
    }
    let mut mark = store.team_mark().await?;
    if mark.revisions_checked == 0 {
        // The first look: deletes from before are history, not news.
        let start = store.team_local_edits(0, false).await?;
        mark.revisions_checked = start.through.max(1);
        store.set_team_mark(mark.clone()).await?;
    }
    let edits = store
        .team_local_edits(mark.revisions_checked, scan_edits)
        .await?;
    for chunk in edits.changes.chunks(100) {
        let plan = Plan {
            op_id: crate::session::new_session_id().map_err(StoreError::from)?,
            agent: String::new(),
            session: String::new(),
            changes: chunk.to_vec(),
            resurrect: false,
            external: true,
            strict: None,
            proposable: false,
        };
        match team.write_through(&plan).await {
            Ok(committed) => {
                let rows = committed.rows.into_iter().map(|(_, r)| r).collect();
                store.apply_team_rows_anew(rows, false).await?;
                tracing::info!(
                    rows = chunk.len(),
                    "team memory: wrote another tool's changes here through, as external"
                );
            }
            Err(Refusal::Moved(rows)) => {
                let kept = keep_replaced(store, backups, &rows, true).await?;
                let lost = store.apply_team_rows_anew(rows, true).await?;
                keep_lost(store, backups, lost, &kept).await;
                // What was not written is looked at again next time.
                return Ok(());
            }
            Err(Refusal::Unavailable(e) | Refusal::Unknown(e)) => return Err(e.into()),
            Err(Refusal::Invalid(m) | Refusal::Forbidden(m)) => {
                tracing::warn!(error = %m, "team memory: PostgreSQL refused another tool's change of shared rows; it stays local");
            }
            Err(Refusal::Strict(_)) => {}
        }
    }
    *scanned_epoch = Some(epoch);
    if edits.through > mark.revisions_checked {
        let mut mark = store.team_mark().await?;
        mark.revisions_checked = edits.through;
        store.set_team_mark(mark).await?;
    }
    Ok(())
}

/// What a drift backup of the pull holds, as its log line says.
const REPLACED: &str = "team memory: another tool changed shared rows here that changed in \
     PostgreSQL too; PostgreSQL's version stands, the local one is in this drift backup";
const UNKNOWN: &str = "team memory: rows the team's PostgreSQL no longer holds are removed \
     here; they are in this drift backup";

/// Writes `rows` (none: nothing) into a drift backup from generation
/// `from`, and says so with `what`.
async fn keep(
    store: &Store,
    backups: &Backups,
    from: u64,
    rows: Vec<memd_proto::Memory>,
    what: &'static str,
) -> std::io::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let n = rows.len();
    let path = backups
        .of_rows(from, store.generations.current(), rows)
        .await?;
    tracing::warn!(path = %path.display(), rows = n, "{what}");
    Ok(())
}

/// Rows by id and rev: what a backup kept.
fn kept(rows: &[memd_proto::Memory]) -> HashSet<(i64, i64)> {
    rows.iter().map(|m| (m.id, m.rev)).collect()
}

/// Rows beyond those a backup `kept` (a row another tool changed between
/// the backup and the change).
fn unkept(rows: Vec<memd_proto::Memory>, kept: &HashSet<(i64, i64)>) -> Vec<memd_proto::Memory> {
    rows.into_iter()
        .filter(|m| !kept.contains(&(m.id, m.rev)))
        .collect()
}

/// Keeps in a drift backup, before PostgreSQL's `rows` are applied, the
/// local versions another tool made here that they will replace: no moment
/// holds such a version nowhere. A backup that cannot be written stops the
/// pull (it is tried again) before anything is replaced. Returns what was
/// kept.
async fn keep_replaced(
    store: &Store,
    backups: &Backups,
    rows: &[super::row::TeamRow],
    force: bool,
) -> Result<HashSet<(i64, i64)>, Failure> {
    let incoming = rows.iter().map(|r| (r.uid.clone(), r.rev)).collect();
    let doomed = store.team_rows_to_be_replaced(incoming, force).await?;
    let done = kept(&doomed);
    let g = store.generations.current();
    keep(store, backups, g, doomed, REPLACED)
        .await
        .map_err(StoreError::from)?;
    Ok(done)
}

/// Keeps what an apply replaced beyond what [`keep_replaced`] kept before
/// it; the apply committed, so a backup that fails now is only said.
async fn keep_lost(
    store: &Store,
    backups: &Backups,
    lost: Vec<memd_proto::Memory>,
    before: &HashSet<(i64, i64)>,
) {
    let g = store.generations.current();
    if let Err(e) = keep(store, backups, g, unkept(lost, before), REPLACED).await {
        tracing::error!(error = %e, "cannot write the drift backup of local edits");
    }
}

/// Pulls from the replica when one is configured, answers, holds this
/// database and is at most `[team] replica_max_lag` commits behind the
/// primary; else from the primary. A replica that fails mid-way is dropped
/// (tried again at the next pull) and the pull goes on from the primary.
async fn pull_read(
    store: &Store,
    backups: &Backups,
    team: &Team,
    primary: &Link,
    replica: &mut Option<Link>,
) -> Result<(), Failure> {
    if replica_usable(team, primary, replica).await? {
        let r = replica.as_ref().expect("usable above");
        match pull_all(store, backups, team, r).await {
            Err(Failure::Team(e)) => {
                tracing::warn!(error = %e, "team memory: the replica failed; pulling from the primary");
                *replica = None;
                team.note_reader("primary", None);
            }
            other => return other,
        }
    }
    pull_all(store, backups, team, primary).await
}

/// Whether the pull may read from the replica now (connecting to it when
/// there is no connection).
async fn replica_usable(
    team: &Team,
    primary: &Link,
    replica: &mut Option<Link>,
) -> Result<bool, Failure> {
    let Some(target) = team.replica_target() else {
        team.note_reader("primary", None);
        return Ok(false);
    };
    if replica.as_ref().is_none_or(Link::is_closed) {
        *replica = match pg::connect(target, team.config().timeout(), false).await {
            Ok(l) => Some(l),
            Err(e) => {
                tracing::warn!(error = %e, "team memory: the replica cannot be reached; pulling from the primary");
                None
            }
        };
    }
    let Some(r) = replica.as_ref() else {
        team.note_reader("primary", None);
        return Ok(false);
    };
    let (head, uuid) = team.bounded(pull::head(&primary.client)).await?;
    let (theirs, their_uuid) = match team.bounded(pull::head(&r.client)).await {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!(error = %e, "team memory: the replica does not answer; pulling from the primary");
            *replica = None;
            team.note_reader("primary", None);
            return Ok(false);
        }
    };
    if their_uuid != uuid {
        tracing::warn!(url = %target.display(), "team memory: [team] replica_url is not a replica of the team's database; pulling from the primary");
        *replica = None;
        team.note_reader("primary", None);
        return Ok(false);
    }
    let lag = (head - theirs).max(0);
    let max = team.config().replica_max_lag.max(0);
    if lag > max {
        tracing::info!(
            lag,
            max,
            "team memory: the replica is behind; pulling from the primary"
        );
        team.note_reader("primary", Some(lag));
        return Ok(false);
    }
    team.note_reader("replica", Some(lag));
    Ok(true)
}

/// Applies every commit after the mark, page by page; the next page is
/// fetched from PostgreSQL while the current one is applied here.
async fn pull_all(
    store: &Store,
    backups: &Backups,
    team: &Team,
    link: &Link,
) -> Result<(), Failure> {
    let mut mark = store.team_mark().await?;
    let started = std::time::Instant::now();
    let mut rows = 0usize;
    let fetch = |after: i64, patterns: Vec<String>| async move {
        team.bounded(pull::page(&link.client, after, &patterns))
            .await
    };
    let mut page = fetch(mark.applied, mark.patterns.clone()).await?;
    let mut from = mark.applied;
    loop {
        let full = page.rows.len() as i64 >= PAGE;
        if page.rows.is_empty() && page.through <= mark.applied {
            team.note_pull(mark.applied, page.head);
            break;
        }
        rows += page.rows.len();
        mark.applied = page.through;
        if let Some(last) = page.rows.last() {
            mark.last = Some((last.uid.clone(), last.rev, last.changed_seq));
        }
        let head = page.head;
        let kept = keep_replaced(store, backups, &page.rows, false).await?;
        let apply = store.apply_team_rows(std::mem::take(&mut page.rows), mark.clone(), false);
        let (applied, next) = if full {
            let (applied, next) = tokio::join!(apply, fetch(mark.applied, mark.patterns.clone()));
            (applied?, Some(next?))
        } else {
            (apply.await?, None)
        };
        keep_lost(store, backups, applied.lost, &kept).await;
        apply_purges(store, team, link, from, mark.applied).await?;
        from = mark.applied;
        team.note_pull(mark.applied, head);
        match next {
            Some(n) => page = n,
            None => break,
        }
    }
    if rows >= PAGE as usize {
        tracing::info!(
            rows,
            secs = started.elapsed().as_secs_f64(),
            "team memory: pulled"
        );
    }
    Ok(())
}

/// Erases here the memories purged in PostgreSQL by the commits numbered
/// after `from` up to `through` (another machine's purge, or this one's
/// coming back: erasing is idempotent).
async fn apply_purges(
    store: &Store,
    team: &Team,
    link: &Link,
    from: i64,
    through: i64,
) -> Result<(), Failure> {
    if through <= from {
        return Ok(());
    }
    let uids = team
        .bounded(pull::purges(&link.client, from, through))
        .await?;
    if !uids.is_empty() {
        let done = store.erase_pulled(uids).await?;
        if !done.uids.is_empty() {
            tracing::warn!(uids = ?done.uids, "team memory: erased memories the team purged");
        }
    }
    Ok(())
}

/// PostgreSQL no longer holds what this machine applied (a restored dump,
/// a failover that lost commits, another database): every shared row is
/// taken again from PostgreSQL by uid and rev, and the local rows it lacks
/// go into a drift backup.
async fn resync(
    store: &Store,
    backups: &Backups,
    team: &Team,
    link: &Link,
    old: &Mark,
) -> Result<(), Failure> {
    // What this role may no longer read goes first, without a backup: its
    // rows are missing from PostgreSQL's answer for that reason alone.
    follow_rights(store, team, link).await?;
    let patterns = team.config().namespaces.clone();
    tracing::warn!(
        applied = old.applied,
        "team memory: PostgreSQL no longer holds the history this machine applied; resyncing"
    );
    let (head, uuid) = team.bounded(pull::head(&link.client)).await?;
    let rows = team
        .bounded(pull::everything(&link.client, &patterns))
        .await?;
    // Purged memories are erased, never kept in a backup.
    let purged = team
        .bounded(pull::purges(&link.client, 0, i64::MAX))
        .await?;
    if !purged.is_empty() {
        store.erase_pulled(purged).await?;
    }
    let known: HashSet<String> = rows.iter().map(|r| r.uid.clone()).collect();
    let last = rows.last().map(|r| (r.uid.clone(), r.rev, r.changed_seq));
    let mark = Mark {
        applied: head,
        last,
        db_uuid: Some(uuid),
        patterns,
        // The rows dropped here are no news for PostgreSQL: the next look
        // for other tools' deletes starts after them.
        revisions_checked: 0,
        readable: old.readable.clone(),
    };
    for chunk in rows.chunks(PAGE as usize) {
        let kept = keep_replaced(store, backups, chunk, true).await?;
        let applied = store
            .apply_team_rows(chunk.to_vec(), mark.clone(), true)
            .await?;
        keep_lost(store, backups, applied.lost, &kept).await;
    }
    if rows.is_empty() {
        store
            .apply_team_rows(Vec::new(), mark.clone(), true)
            .await?;
    }
    // The rows PostgreSQL lost go into a drift backup before they are
    // dropped here: no moment holds them nowhere. A row that changed in
    // between is kept again as it was dropped.
    let doomed = store.rows_unknown_to_team(team, known.clone()).await?;
    let from = old.applied.max(0) as u64;
    let before = kept(&doomed);
    keep(store, backups, from, doomed, UNKNOWN)
        .await
        .map_err(StoreError::from)?;
    let gone = store.drop_rows_unknown_to_team(team, known).await?;
    keep(store, backups, from, unkept(gone, &before), UNKNOWN)
        .await
        .map_err(StoreError::from)?;
    team.note_pull(head, head);
    Ok(())
}
