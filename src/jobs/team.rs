//! The team pull (team memory, ARCHITECTURE.md "Team memory"): one task per
//! daemon that keeps a connection to the team's PostgreSQL, `LISTEN`s for
//! commits and, on a notification or every few seconds, applies every
//! later commit of the shared namespaces in commit order. Before it
//! follows, it checks that PostgreSQL still holds the history this machine
//! applied (else it resyncs by uid and rev, keeping the rows PostgreSQL
//! lost in a drift backup), and backfills a namespace that starts to be
//! shared. PostgreSQL down or not initialised: it retries every 2 s.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use crate::state::Shared;
use crate::store::StoreError;
use crate::store::team::pg::{self, Link};
use crate::store::team::pull::{self, Mark, PAGE};
use crate::store::team::write::{Plan, Refusal};
use crate::store::team::{Team, TeamError, schema};

/// How long between two connection attempts.
const RETRY: Duration = Duration::from_secs(2);
/// How often the pull looks even without a notification.
const POLL: Duration = Duration::from_secs(2);

/// Follows the team's PostgreSQL until the daemon stops.
pub async fn run(shared: Arc<Shared>) {
    let Some(team) = shared.store.team().cloned() else {
        return;
    };
    loop {
        team.attempt_started();
        match follow(&shared, &team).await {
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

enum Failure {
    Team(TeamError),
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

/// One connection's life: connect, catch up, follow until it breaks.
async fn follow(shared: &Shared, team: &Team) -> Result<(), Failure> {
    let mut link = pg::connect(team.target(), team.config().timeout(), true).await?;
    team.bounded(schema::check(&link.client)).await?;
    team.bounded(async {
        link.client
            .batch_execute("LISTEN memd_changes")
            .await
            .map_err(|e| TeamError::Unavailable(pg::describe(&e)))
    })
    .await?;
    catch_up(shared, team, &link).await?;
    team.set_synced(true);
    team.wake.notify_one();
    tracing::info!(url = %team.target().display(), "team memory: following the team's PostgreSQL");
    let mut notices = link.notices.take().expect("a listening link");
    // Another tool's edits of shared rows are looked for at the start and
    // after each external change the daemon saw.
    let mut scanned_epoch = None;
    loop {
        // PostgreSQL must still hold what was applied (a restored dump, a
        // failover that lost commits): checked at every pull.
        let mark = shared.store.team_mark().await?;
        if !team
            .bounded(pull::history_holds(&link.client, &mark))
            .await?
        {
            resync(shared, team, &link, &mark).await?;
        }
        pull_all(shared, team, &link).await?;
        push_local_edits(shared, team, &mut scanned_epoch).await?;
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
async fn catch_up(shared: &Shared, team: &Team, link: &Link) -> Result<(), Failure> {
    let store = &shared.store;
    let mut mark = store.team_mark().await?;
    let patterns = team.config().namespaces.clone();
    let holds = team
        .bounded(pull::history_holds(&link.client, &mark))
        .await?;
    if !holds {
        resync(shared, team, link, &mark).await?;
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
    pull_all(shared, team, link).await
}

/// Writes through what another tool (the `sqlite3` shell) changed of shared
/// rows here, as `external`: an edit with a compare-and-set on the
/// `team_rev` the row held, a delete likewise. When PostgreSQL's row moved
/// meanwhile, PostgreSQL's row replaces the local one, and the local
/// version goes into a drift backup.
async fn push_local_edits(
    shared: &Shared,
    team: &Team,
    scanned_epoch: &mut Option<u64>,
) -> Result<(), Failure> {
    let store = &shared.store;
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
            op_id: crate::session::new_session_id(),
            agent: String::new(),
            session: String::new(),
            changes: chunk.to_vec(),
            resurrect: false,
            external: true,
            strict: None,
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
                let lost = store.apply_team_rows_anew(rows, true).await?;
                keep_lost(shared, lost).await;
                // What was not written is looked at again next time.
                return Ok(());
            }
            Err(Refusal::Unavailable(e) | Refusal::Unknown(e)) => return Err(e.into()),
            Err(Refusal::Invalid(m)) => {
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

/// Keeps local versions that PostgreSQL's rows replaced in a drift backup.
async fn keep_lost(shared: &Shared, lost: Vec<memd_proto::Memory>) {
    if lost.is_empty() {
        return;
    }
    let g = shared.store.generations.current();
    let rows = lost.len();
    match shared.backups.of_rows(g, g, lost).await {
        Ok(path) => tracing::warn!(
            path = %path.display(),
            rows,
            "team memory: another tool changed shared rows here that changed in PostgreSQL too; PostgreSQL's version stands, the local one is in this drift backup"
        ),
        Err(e) => tracing::error!(error = %e, "cannot write the drift backup of local edits"),
    }
}

/// Applies every commit after the mark, page by page; the next page is
/// fetched from PostgreSQL while the current one is applied here.
async fn pull_all(shared: &Shared, team: &Team, link: &Link) -> Result<(), Failure> {
    let store = &shared.store;
    let mut mark = store.team_mark().await?;
    let started = std::time::Instant::now();
    let mut rows = 0usize;
    let fetch = |after: i64, patterns: Vec<String>| async move {
        team.bounded(pull::page(&link.client, after, &patterns))
            .await
    };
    let mut page = fetch(mark.applied, mark.patterns.clone()).await?;
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
        let apply = store.apply_team_rows(std::mem::take(&mut page.rows), mark.clone(), false);
        let (applied, next) = if full {
            let (applied, next) = tokio::join!(apply, fetch(mark.applied, mark.patterns.clone()));
            (applied?, Some(next?))
        } else {
            (apply.await?, None)
        };
        keep_lost(shared, applied.lost).await;
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

/// PostgreSQL no longer holds what this machine applied (a restored dump,
/// a failover that lost commits, another database): every shared row is
/// taken again from PostgreSQL by uid and rev, and the local rows it lacks
/// go into a drift backup.
async fn resync(shared: &Shared, team: &Team, link: &Link, old: &Mark) -> Result<(), Failure> {
    let store = &shared.store;
    let patterns = team.config().namespaces.clone();
    tracing::warn!(
        applied = old.applied,
        "team memory: PostgreSQL no longer holds the history this machine applied; resyncing"
    );
    let (head, uuid) = team.bounded(pull::head(&link.client)).await?;
    let rows = team
        .bounded(pull::everything(&link.client, &patterns))
        .await?;
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
    };
    for chunk in rows.chunks(PAGE as usize) {
        let applied = store
            .apply_team_rows(chunk.to_vec(), mark.clone(), true)
            .await?;
        keep_lost(shared, applied.lost).await;
    }
    if rows.is_empty() {
        store
            .apply_team_rows(Vec::new(), mark.clone(), true)
            .await?;
    }
    let gone = store.drop_rows_unknown_to_team(team, known).await?;
    if !gone.is_empty() {
        let generation = store.generations.current();
        match shared
            .backups
            .of_rows(old.applied.max(0) as u64, generation, gone.clone())
            .await
        {
            Ok(path) => tracing::warn!(
                path = %path.display(),
                rows = gone.len(),
                "team memory: rows the team's PostgreSQL no longer holds were removed here; they are in this drift backup"
            ),
            Err(e) => {
                tracing::error!(error = %e, "cannot write the drift backup of the rows PostgreSQL lost");
            }
        }
    }
    team.note_pull(head, head);
    Ok(())
}
