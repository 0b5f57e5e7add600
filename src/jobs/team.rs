//! The team pull (team memory, ARCHITECTURE.md "Team memory"): one task per
//! daemon that follows the team's PostgreSQL (`store::team::follow`) and,
//! when PostgreSQL is down or not initialised, tries again every 2 s (at
//! once when a shared write or `memd team init` asks).

use std::sync::Arc;
use std::time::Duration;

use crate::state::Shared;
use crate::store::team::TeamError;
use crate::store::team::follow::{self, Failure};

/// How long between two connection attempts.
const RETRY: Duration = Duration::from_secs(2);

/// Follows the team's PostgreSQL until the daemon stops.
pub async fn run(shared: Arc<Shared>) {
    let Some(team) = shared.store.team().cloned() else {
        return;
    };
    loop {
        team.attempt_started();
        match follow::follow(&shared.store, &shared.backups, &team).await {
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

/// Cleans team memory up every `[team] cleanup_every` (when set): what is
/// older than `[team] retention` goes (`memd.cleanup`). Only a role with
/// admin on `*` may; another is told once, in the log.
pub async fn cleanup(shared: Arc<Shared>) {
    let Some(team) = shared.store.team().cloned() else {
        return;
    };
    let Some(every) = team.config().cleanup_every() else {
        return;
    };
    let mut told = false;
    loop {
        tokio::time::sleep(every).await;
        let config = team.config();
        let done = crate::store::team::grants::cleanup(
            team.target(),
            config.timeout(),
            config.retention(),
        )
        .await;
        match done {
            Ok(c) => tracing::info!(
                tombstones = c.tombstones,
                ops = c.ops,
                proposals = c.proposals,
                cleaned_through = c.cleaned_through,
                "team memory: cleaned up"
            ),
            Err(TeamError::Forbidden(m)) if !told => {
                told = true;
                tracing::info!(reason = %m, "team memory: this machine's role may not clean up");
            }
            Err(TeamError::Forbidden(_)) => {}
            Err(e) => tracing::warn!(error = %e, "team memory: the cleanup failed; next time"),
        }
    }
}

/// Finishes the purges the team pull applied here (frozen blocks, drift
/// backups, compacting the files), until the daemon stops.
pub async fn purges(shared: Arc<Shared>) {
    let mut events = shared.store.purge_events.subscribe();
    loop {
        match events.recv().await {
            Ok(done) => {
                if let Err(e) = crate::state::purge::finish(&shared, &done).await {
                    tracing::error!(error = %e, "cannot finish a purge the team made");
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}
