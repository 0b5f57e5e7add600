//! The one door to team memory (src/store/team/README.md): what the
//! daemon asks of it — is this row shared, has this machine caught up,
//! write this plan through, purge, rename, the review queue, `status` —
//! and the daemon's two team tasks (the pull, the cleanup). Nothing
//! outside `store::team` holds the PostgreSQL engine. [`Wing::Postgres`]
//! is the team's PostgreSQL ([`Team`]), [`Wing::None`] a daemon without
//! team memory, and, in tests only, [`Wing::Failing`] a team that cannot
//! be reached, so every team branch (the guarded write, purge, import,
//! `team sync`, `status`) is tested on its failure path without a server.

use std::sync::Arc;

use serde_json::Value;

use super::admin::review::Queue;
use super::engine::row::TeamRow;
use super::engine::write::{Committed, Plan, Refusal};
use super::{Team, TeamError};
use crate::drift::backup::Backups;
use crate::store::Store;

/// Team memory as the write path sees it.
#[derive(Clone, Default)]
pub enum Wing {
    /// No team memory: nothing is shared.
    #[default]
    None,
    /// The team's PostgreSQL.
    Postgres(Arc<Team>),
    /// Tests: a team that shares one namespace and refuses every
    /// write-through.
    #[cfg(test)]
    Failing(Arc<Failing>),
}

impl Wing {
    /// Team memory as `[team]` sets it: `None` when it shares nothing.
    ///
    /// # Errors
    /// An invalid `[team]` (its URL, TLS files, machine name).
    pub fn from_config(config: &super::conn::config::TeamConfig) -> Result<Wing, String> {
        Ok(Team::new(config)?.map_or(Wing::None, |t| Wing::Postgres(Arc::new(t))))
    }

    /// The PostgreSQL engine, for team memory's own code (the push, the
    /// pull's local edits); everything else goes through the wing.
    pub(in crate::store::team) fn engine(&self) -> Option<&Arc<Team>> {
        match self {
            Wing::Postgres(team) => Some(team),
            _ => None,
        }
    }

    /// Whether any namespace may be shared: when not, a write is never
    /// captured for a write-through.
    pub fn is_on(&self) -> bool {
        !matches!(self, Wing::None)
    }

    /// Whether rows of `namespace` in `scope` are shared.
    pub fn shares(&self, namespace: &str, scope: &str) -> bool {
        match self {
            Wing::None => false,
            Wing::Postgres(team) => team.shares(namespace, scope),
            #[cfg(test)]
            Wing::Failing(f) => scope != "session" && namespace == f.namespace,
        }
    }

    /// Whether a row is shared: of a shared namespace and not local by
    /// rule (a session-scope row, a captured turn).
    pub fn shares_row(&self, row: &TeamRow) -> bool {
        !super::engine::row::never_shared(row) && self.shares(&row.namespace, &row.scope)
    }

    /// Whether this machine has caught up with the team since it started.
    pub fn is_synced(&self) -> bool {
        match self {
            Wing::None => true,
            Wing::Postgres(team) => team.is_synced(),
            #[cfg(test)]
            Wing::Failing(f) => f.synced,
        }
    }

    /// Catches up now when not synced (bounded); whether shared writes may
    /// go.
    pub async fn sync_now(&self) -> bool {
        match self {
            Wing::None => true,
            Wing::Postgres(team) => team.sync_now().await,
            #[cfg(test)]
            Wing::Failing(f) => f.synced,
        }
    }

    /// The last connection error, if any.
    pub fn last_error(&self) -> Option<String> {
        match self {
            Wing::None => None,
            Wing::Postgres(team) => team.last_error(),
            #[cfg(test)]
            Wing::Failing(_) => Some("the test's team is down".into()),
        }
    }

    /// Whether `namespace` was checked to hold no row never pushed.
    pub fn is_clean(&self, namespace: &str) -> bool {
        match self {
            Wing::Postgres(team) => team.is_clean(namespace),
            _ => true,
        }
    }

    /// `namespace` holds no row never pushed.
    pub fn mark_clean(&self, namespace: &str) {
        if let Wing::Postgres(team) = self {
            team.mark_clean(namespace);
        }
    }

    /// Writes `plan` through: acknowledged if and only if the team
    /// committed it.
    ///
    /// # Errors
    /// [`Refusal`].
    pub async fn write_through(&self, plan: &Plan) -> Result<Committed, Refusal> {
        match self {
            Wing::None => Err(Refusal::Invalid(
                "team memory is off: nothing is shared".into(),
            )),
            Wing::Postgres(team) => team.write_through(plan).await,
            #[cfg(test)]
            Wing::Failing(f) => {
                f.calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Err((f.refusal)())
            }
        }
    }

    /// Asks the pull to look now (whatever PostgreSQL did reaches this
    /// machine through it).
    pub fn wake(&self) {
        match self {
            Wing::None => {}
            Wing::Postgres(team) => team.wake.notify_one(),
            #[cfg(test)]
            Wing::Failing(f) => {
                f.woken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
        }
    }

    /// This machine's name in authorship.
    pub fn machine(&self) -> &str {
        match self {
            Wing::Postgres(team) => team.machine(),
            _ => "",
        }
    }

    /// Waits until the pull caught up once or failed once (a daemon is
    /// backfilled before it serves and before its model loads, when
    /// PostgreSQL can be reached); at once without team memory.
    pub async fn first_attempt(&self) {
        if let Wing::Postgres(team) = self {
            team.first_attempt().await;
        }
    }

    /// `status`'s `team` key (`None`: team memory is off).
    pub fn status(&self) -> Option<Value> {
        match self {
            Wing::None => None,
            Wing::Postgres(team) => Some(team.status()),
            #[cfg(test)]
            Wing::Failing(f) => Some(serde_json::json!({
                "namespaces": [f.namespace],
                "connected": false,
                "synced": f.synced,
                "last_error": self.last_error(),
            })),
        }
    }

    /// Erases the shared memories `uids` in PostgreSQL (the `admin` right
    /// there).
    ///
    /// # Errors
    /// [`TeamError::Forbidden`], [`TeamError::Unavailable`] (team memory
    /// off included): nothing was erased.
    pub async fn purge(&self, uids: &[String]) -> Result<(), TeamError> {
        match self {
            Wing::None => Err(off()),
            Wing::Postgres(team) => team.purge(uids).await,
            #[cfg(test)]
            Wing::Failing(f) => Err(f.error()),
        }
    }

    /// Moves the shared rows of namespace `old` to `new` in PostgreSQL;
    /// the number moved.
    ///
    /// # Errors
    /// [`TeamError::Forbidden`], [`TeamError::Unavailable`] (team memory
    /// off included): nothing was moved.
    pub async fn rename_namespace(&self, old: &str, new: &str) -> Result<i64, TeamError> {
        match self {
            Wing::None => Err(off()),
            Wing::Postgres(team) => team.rename_namespace(old, new).await,
            #[cfg(test)]
            Wing::Failing(f) => Err(f.error()),
        }
    }

    /// The review queue as this daemon's role sees it (`None`: team memory
    /// is off).
    pub async fn review_queue(&self) -> Option<Result<Queue, TeamError>> {
        match self {
            Wing::None => None,
            Wing::Postgres(team) => Some(team.review_queue().await),
            #[cfg(test)]
            Wing::Failing(f) => Some(Err(f.error())),
        }
    }

    /// Follows the team's PostgreSQL into `store` until the daemon stops
    /// ([`super::engine::follow::run`]); returns at once without team memory.
    pub async fn follow(&self, store: &Store, backups: &Backups) {
        if let Wing::Postgres(team) = self {
            super::engine::follow::run(store, backups, team).await;
        }
    }

    /// Cleans team memory up every `[team] cleanup_every`, until the daemon
    /// stops ([`super::admin::grants::clean_up_every`]); returns at once without
    /// team memory or without the setting.
    pub async fn clean_up(&self) {
        if let Wing::Postgres(team) = self {
            super::admin::grants::clean_up_every(team).await;
        }
    }
}

/// What a team call answers when team memory is off.
fn off() -> TeamError {
    TeamError::Unavailable("team memory is not running here".into())
}

/// Tests: a team that shares `namespace` and refuses each write-through
/// with what `refusal` makes.
#[cfg(test)]
pub struct Failing {
    /// The shared namespace.
    pub namespace: String,
    /// Whether the machine caught up (when not, a shared write is refused
    /// before any write-through).
    pub synced: bool,
    /// The refusal.
    pub refusal: fn() -> Refusal,
    /// Write-throughs asked for.
    pub calls: std::sync::atomic::AtomicUsize,
    /// Pulls woken.
    pub woken: std::sync::atomic::AtomicUsize,
}

#[cfg(test)]
impl Failing {
    /// A team sharing `namespace`, caught up, refusing with `refusal`.
    pub fn new(namespace: &str, refusal: fn() -> Refusal) -> Arc<Failing> {
        Failing::with(namespace, true, refusal)
    }

    /// The same team, but this machine has not caught up with it.
    pub fn behind(namespace: &str, refusal: fn() -> Refusal) -> Arc<Failing> {
        Failing::with(namespace, false, refusal)
    }

    /// The refusal as a team call other than a write-through meets it.
    fn error(&self) -> TeamError {
        match (self.refusal)() {
            Refusal::Unavailable(e) | Refusal::Unknown(e) => e,
            Refusal::Forbidden(m) => TeamError::Forbidden(m),
            other => TeamError::Unavailable(format!("{other:?}")),
        }
    }

    fn with(namespace: &str, synced: bool, refusal: fn() -> Refusal) -> Arc<Failing> {
        Arc::new(Failing {
            namespace: namespace.into(),
            synced,
            refusal,
            calls: Default::default(),
            woken: Default::default(),
        })
    }
}
