//! Team memory: shared namespaces on PostgreSQL (how it is built:
//! `README.md` in this folder). Every machine keeps its daemon and its `memory.db`; the
//! namespaces `[team] namespaces` matches have PostgreSQL as their system of
//! record. A write to one is decided in PostgreSQL (a compare-and-set on
//! the rev each row had here), then applied here; a pull applies everyone
//! else's commits in commit order.
//!
//! # Layout
//! By what runs where:
//! - [`engine`]: the daemon's team memory — [`engine::row`] (a shared row as
//!   PostgreSQL holds it), [`engine::apply`] (the SQLite side: rows as they
//!   are here, PostgreSQL's rows applied here), [`engine::write`] (the
//!   write-through of a session's write), [`engine::pull`] (pages of later
//!   commits, the history check), [`engine::follow`] (the pull's
//!   connection, `LISTEN`, catch-up and resync), [`engine::push`] (`memd team
//!   push`);
//! - [`admin`]: what the CLI's `memd team` commands do on the server —
//!   [`admin::schema`] (PostgreSQL's schema `memd` and its migrations, `memd
//!   team init`), [`admin::grants`] (people's rights, `grant|revoke|members`,
//!   `cleanup`, as PostgreSQL's row-level security enforces them),
//!   [`admin::review`] (`review-required|review`); the daemon asks them only
//!   for its own rights, its review page and the periodic cleanup;
//! - [`conn`]: reaching the server — [`conn::config`] (`[team]`, the URL,
//!   passwords and TLS as libpq users know them), `conn::pg` (connections,
//!   bounded calls, `LISTEN`; private to the store);
//! - [`wing`]: the one door the rest of the daemon goes through.
//!
//! Without `[team]` none of this runs: no connection, no task.

pub mod admin;
pub mod conn;
pub mod engine;
pub mod wing;

use std::collections::HashSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Value, json};
use tokio::sync::Notify;

use crate::sync::lock;
use admin::grants;
use admin::schema;
use conn::config::{Target, TeamConfig};
use conn::pg::{self, Link};
use engine::row;

/// Why a team call failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum TeamError {
    /// PostgreSQL cannot be reached, refused, or did not answer in time.
    #[error("{0}")]
    Unavailable(String),
    /// `memd team init` never ran on this database.
    #[error("the team database has no memd schema yet: run `memd team init`")]
    NotInitialised,
    /// The schema is newer than this binary.
    #[error(
        "the team schema is at version {found}, newer than this memd knows ({known}): upgrade memd"
    )]
    SchemaTooNew {
        /// The schema's version.
        found: i32,
        /// This binary's.
        known: i32,
    },
    /// The role this machine connects as lacks the right (PostgreSQL's
    /// row-level security decides): nothing was written.
    #[error("{0}")]
    Forbidden(String),
    /// A request PostgreSQL cannot take as asked (an unknown role, a
    /// grant that is not there).
    #[error("{0}")]
    Invalid(String),
    /// What was named is not there (a proposal).
    #[error("{0}")]
    NotFound(String),
}

/// What `status` shows of team memory.
#[derive(Debug, Clone, Default)]
struct Health {
    connected: bool,
    last_error: Option<String>,
    last_pull_at: Option<String>,
    /// PostgreSQL's newest number, as last seen.
    head: i64,
    /// The number applied here.
    applied: i64,
    /// What this machine's role may do with each configured glob.
    rights: Vec<grants::Right>,
    /// Where the last pull read its pages: `primary` or `replica`.
    read_from: Option<&'static str>,
    /// How many commits the replica was behind, as last seen.
    replica_lag: Option<i64>,
}

/// The team engine of one daemon.
pub struct Team {
    config: TeamConfig,
    target: Target,
    /// Where the pull listens and reads (`listen_url`, else `target`).
    pull_target: Target,
    /// A streaming replica the pull reads pages from (`replica_url`).
    replica_target: Option<Target>,
    machine: String,
    health: Mutex<Health>,
    /// The connection shared writes go through (one at a time).
    writer: tokio::sync::Mutex<Option<Link>>,
    /// Wakes the pull (a notification, a reconnect, a new pattern).
    pub wake: Notify,
    /// Every shared namespace is backfilled: shared writes may go.
    synced: AtomicBool,
    /// Namespaces checked to hold no row that was never pushed.
    clean: Mutex<HashSet<String>>,
    /// The pull's attempts to connect and catch up: how many started, how
    /// many failed, and whether one succeeded (the daemon serves once one
    /// concluded; a shared write waits for the one it asked for).
    attempts: tokio::sync::watch::Sender<Attempts>,
    /// Wakes the pull's retry at once (a shared write while not synced,
    /// `memd team init` on this machine).
    pub kick: Notify,
}

/// The pull's connection attempts, as a shared write waiting for one sees
/// them.
#[derive(Debug, Clone, Copy, Default)]
struct Attempts {
    started: u64,
    failed: u64,
    synced: bool,
}

impl Team {
    /// The engine for `config`, or `None` when team memory is off (no URL,
    /// or no namespace to share).
    ///
    /// # Errors
    /// A message when the URL cannot be parsed.
    pub fn new(config: &TeamConfig) -> Result<Option<Team>, String> {
        let env = |k: &str| std::env::var(k).ok();
        if !config.enabled_with(env) {
            return Ok(None);
        }
        let url = config.url_with(env).unwrap_or_default();
        let target = Target::parse(&url).map_err(|e| format!("team URL: {e}"))?;
        let pull_target = match config.listen_url_with(env) {
            Some(u) => Target::parse(&u).map_err(|e| format!("team listen_url: {e}"))?,
            None => target.clone(),
        };
        let replica_target = config
            .replica_url_with(env)
            .map(|u| Target::parse(&u).map_err(|e| format!("team replica_url: {e}")))
            .transpose()?;
        Ok(Some(Team {
            machine: config.machine_name(),
            config: config.clone(),
            target,
            pull_target,
            replica_target,
            health: Mutex::default(),
            writer: tokio::sync::Mutex::new(None),
            wake: Notify::new(),
            synced: AtomicBool::new(false),
            clean: Mutex::default(),
            attempts: tokio::sync::watch::channel(Attempts::default()).0,
            kick: Notify::new(),
        }))
    }

    /// This machine's name.
    pub fn machine(&self) -> &str {
        &self.machine
    }

    /// The settings.
    pub fn config(&self) -> &TeamConfig {
        &self.config
    }

    /// Where PostgreSQL is.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// Where the pull listens and reads: `listen_url`, else [`Self::target`].
    pub fn pull_target(&self) -> &Target {
        &self.pull_target
    }

    /// The replica the pull reads pages from, when configured.
    pub fn replica_target(&self) -> Option<&Target> {
        self.replica_target.as_ref()
    }

    /// Whether rows of `namespace` in `scope` are shared (session-scope
    /// rows never leave the machine).
    pub fn shares(&self, namespace: &str, scope: &str) -> bool {
        scope != "session" && self.config.shares(namespace)
    }

    /// Whether a row is shared: of a shared namespace and not local by
    /// rule (a session-scope row, a captured turn).
    pub fn shares_row(&self, row: &row::TeamRow) -> bool {
        !row::never_shared(row) && self.shares(&row.namespace, &row.scope)
    }

    /// Whether every shared namespace has been backfilled.
    pub fn is_synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    pub(crate) fn set_synced(&self, synced: bool) {
        self.synced.store(synced, Ordering::Release);
        self.attempts.send_modify(|a| a.synced = synced);
    }

    /// The pull begins an attempt to connect and catch up.
    pub(crate) fn attempt_started(&self) {
        self.attempts.send_modify(|a| a.started += 1);
    }

    /// Waits until the pull caught up once or failed once (a machine is
    /// backfilled before it serves, when PostgreSQL can be reached).
    pub async fn first_attempt(&self) {
        let mut rx = self.attempts.subscribe();
        let _ = rx.wait_for(|a| a.synced || a.failed > 0).await;
    }

    /// Makes the pull connect and catch up now when it is not synced, and
    /// waits for that attempt (bounded by twice `timeout_ms`, a connection
    /// and the catch-up); whether shared writes may go.
    pub async fn sync_now(&self) -> bool {
        if self.is_synced() {
            return true;
        }
        let mut rx = self.attempts.subscribe();
        // An attempt under way may be one that began before whatever made
        // the caller ask (`team init`): only the next one counts.
        let after = rx.borrow().started;
        self.kick.notify_one();
        let limit = self.config.timeout() * 2;
        let _ = tokio::time::timeout(
            limit,
            rx.wait_for(|a| a.synced || (a.started > after && a.failed >= a.started)),
        )
        .await;
        self.is_synced()
    }

    pub(crate) fn is_clean(&self, namespace: &str) -> bool {
        lock(&self.clean).contains(namespace)
    }

    pub(crate) fn mark_clean(&self, namespace: &str) {
        lock(&self.clean).insert(namespace.to_string());
    }

    /// Forget which namespaces were checked (another tool wrote here).
    pub fn forget_clean(&self) {
        lock(&self.clean).clear();
    }

    pub(crate) fn note_ok(&self) {
        let mut h = lock(&self.health);
        h.connected = true;
        h.last_error = None;
    }

    pub(crate) fn note_error(&self, e: &TeamError) {
        let mut h = lock(&self.health);
        h.connected = false;
        h.last_error = Some(e.to_string());
    }

    /// The pull's attempt failed (it retries after a pause, or at once
    /// when kicked).
    pub(crate) fn attempt_failed(&self, e: &TeamError) {
        self.note_error(e);
        self.attempts.send_modify(|a| a.failed = a.started);
    }

    /// The last connection error, if any.
    pub fn last_error(&self) -> Option<String> {
        lock(&self.health).last_error.clone()
    }

    pub(crate) fn note_pull(&self, applied: i64, head: i64) {
        let mut h = lock(&self.health);
        h.applied = applied;
        h.head = head.max(applied);
        h.last_pull_at = Some(crate::clock::now());
        h.connected = true;
        h.last_error = None;
    }

    /// Where the pull reads, and the replica's lag when it was asked.
    pub(crate) fn note_reader(&self, from: &'static str, lag: Option<i64>) {
        let mut h = lock(&self.health);
        h.read_from = Some(from);
        h.replica_lag = lag;
    }

    pub(crate) fn note_rights(&self, rights: Vec<grants::Right>) {
        lock(&self.health).rights = rights;
    }

    /// `status`'s `team` key.
    pub fn status(&self) -> Value {
        let h = lock(&self.health).clone();
        let unreadable: Vec<&str> = h
            .rights
            .iter()
            .filter(|r| r.access == "none")
            .map(|r| r.glob.as_str())
            .collect();
        json!({
            "url": self.target.display(),
            "machine": self.machine,
            "namespaces": self.config.namespaces,
            "connected": h.connected,
            "synced": self.is_synced(),
            "applied": h.applied,
            "head": h.head,
            "lag": (h.head - h.applied).max(0),
            "last_pull_at": h.last_pull_at,
            "last_error": h.last_error,
            "read_from": h.read_from,
            "replica": self.replica_target.as_ref().map(|t| json!({
                "url": t.display(),
                "lag": h.replica_lag,
            })),
            "rights": h.rights,
            "unreadable": unreadable,
        })
    }

    /// Runs `f` on the write connection, connecting first when there is
    /// none (one attempt); a call that fails for the connection drops it,
    /// so the next one reconnects.
    pub(in crate::store) async fn with_writer<T, F>(&self, f: F) -> Result<T, TeamError>
    where
        F: AsyncFnOnce(&mut Link) -> Result<T, TeamError>,
    {
        let mut slot = self.writer.lock().await;
        if slot.as_ref().is_none_or(Link::is_closed) {
            *slot = None;
            let link = pg::connect(&self.target, self.config.timeout(), false).await;
            let link = match link {
                Ok(l) => l,
                Err(e) => {
                    self.note_error(&e);
                    return Err(e);
                }
            };
            if let Err(e) = self.bounded(schema::check(&link.client)).await {
                self.note_error(&e);
                return Err(e);
            }
            *slot = Some(link);
        }
        let link = slot.as_mut().expect("connected above");
        let out = f(link).await;
        match &out {
            Ok(_) => self.note_ok(),
            Err(e) => {
                self.note_error(e);
                *slot = None;
            }
        }
        out
    }

    /// Bounds a call by `timeout_ms`.
    pub(in crate::store) async fn bounded<T>(
        &self,
        call: impl Future<Output = Result<T, TeamError>>,
    ) -> Result<T, TeamError> {
        let limit = self.config.timeout();
        tokio::time::timeout(limit, call).await.map_err(|_| {
            TeamError::Unavailable(format!(
                "{} did not answer within {} ms (team.timeout_ms)",
                self.target.display(),
                limit.as_millis()
            ))
        })?
    }
}

/// A test's fault point: with `MEMD_FAULT` naming it, the daemon dies on
/// the spot (as if killed), e.g. `after-team-commit` between PostgreSQL's
/// commit and the local apply. Compiled into debug builds only (those the
/// integration tests run); a release build has none.
#[cfg(debug_assertions)]
pub fn fault(point: &str) {
    static FAULT: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();
    let armed = FAULT.get_or_init(|| std::env::var("MEMD_FAULT").ok());
    if armed.as_deref() == Some(point) {
        tracing::error!(point, "fault point reached: dying (MEMD_FAULT)");
        std::process::abort();
    }
}

/// A release build has no fault points.
#[cfg(not(debug_assertions))]
#[inline(always)]
pub fn fault(_point: &str) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_go_to_url_and_the_pull_to_listen_url() {
        let config = TeamConfig {
            url: Some("postgresql://memd@bouncer:6432/team".into()),
            listen_url: Some("postgresql://memd@db:5432/team".into()),
            namespaces: vec!["team-*".into()],
            ..TeamConfig::default()
        };
        let team = Team::new(&config).unwrap().expect("team memory is on");
        assert_eq!(
            team.target().display(),
            "postgresql://memd@bouncer:6432/team"
        );
        assert_eq!(
            team.pull_target().display(),
            "postgresql://memd@db:5432/team"
        );
        let alone = Team::new(&TeamConfig {
            listen_url: None,
            ..config.clone()
        })
        .unwrap()
        .unwrap();
        assert_eq!(alone.pull_target().display(), alone.target().display());
        let bad = Team::new(&TeamConfig {
            listen_url: Some("mysql://db".into()),
            ..config
        });
        assert!(bad.is_err_and(|e| e.contains("listen_url")));
    }

    #[test]
    fn a_replica_is_read_only_when_configured() {
        let config = TeamConfig {
            url: Some("postgresql://memd@db:5432/team".into()),
            namespaces: vec!["team-*".into()],
            ..TeamConfig::default()
        };
        let team = Team::new(&config).unwrap().unwrap();
        assert!(team.replica_target().is_none());
        assert_eq!(team.status()["replica"], Value::Null);
        let with = Team::new(&TeamConfig {
            replica_url: Some("postgresql://memd@replica:5432/team".into()),
            ..config.clone()
        })
        .unwrap()
        .unwrap();
        assert_eq!(
            with.replica_target().unwrap().display(),
            "postgresql://memd@replica:5432/team"
        );
        with.note_reader("replica", Some(2));
        let status = with.status();
        assert_eq!(status["read_from"], "replica");
        assert_eq!(status["replica"]["lag"], 2);
        let bad = Team::new(&TeamConfig {
            replica_url: Some("mysql://replica".into()),
            ..config
        });
        assert!(bad.is_err_and(|e| e.contains("replica_url")));
    }
}
