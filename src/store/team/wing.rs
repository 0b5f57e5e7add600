//! The seam between a session's guarded write and team memory: what the
//! write path asks (ARCHITECTURE.md "Team memory") — is this row shared,
//! has this machine caught up, write this plan through — and nothing
//! else. [`Wing::Postgres`] is the team's PostgreSQL ([`Team`]),
//! [`Wing::None`] a daemon without team memory, and, in tests only,
//! [`Wing::Failing`] a team whose every write-through is refused, so the
//! team branch of the guarded write is tested without a server.

use std::sync::Arc;

use super::Team;
use super::row::TeamRow;
use super::write::{Committed, Plan, Refusal};

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
    /// The PostgreSQL engine, when this is one (the pull, `status`).
    pub fn team(&self) -> Option<&Arc<Team>> {
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
        !super::row::never_shared(row) && self.shares(&row.namespace, &row.scope)
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
