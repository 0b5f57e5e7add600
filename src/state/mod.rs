//! What every request handler and background job shares: the store, the
//! settings in force, the session registry, the embedder, the shutdown
//! signal. A low module: it imports the layers below it and nothing above
//! (see ARCHITECTURE.md "Layers").

pub mod shutdown;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Instant;

use crate::config::{Config, Paths};
use crate::store::Store;
use shutdown::Shutdown;

/// What the handlers share.
pub struct Shared {
    /// The database.
    pub store: Store,
    /// Settings; SIGHUP swaps in what the reloaded file changes live (see
    /// [`reload`]). Read them with [`Shared::config`].
    pub(crate) config: std::sync::RwLock<Arc<Config>>,
    /// Resolved paths.
    pub paths: Paths,
    /// The shutdown signal.
    pub shutdown: Shutdown,
    /// Open sessions.
    pub sessions: AtomicUsize,
    /// Start time.
    pub started: Instant,
    /// Drift backups.
    pub backups: crate::drift::backup::Backups,
    /// Pending access tracking.
    pub access: crate::store::access::Access,
    /// Keys of the sessions now connected, and of the named sessions.
    pub live: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Named sessions.
    pub named: crate::session::named::Registry,
    /// Earlier derived namespaces whose memories were moved this run.
    pub namespaces_moved: std::sync::Mutex<std::collections::HashSet<String>>,
    /// Where named sessions are kept across restarts.
    pub session_file: crate::store::sessions::SessionFile,
    /// Held while a sweep runs (one at a time).
    pub sweeping: tokio::sync::Mutex<()>,
    /// The listener came from the service manager (socket activation).
    pub socket_inherited: bool,
    /// The embedder, the model lock and the vector index.
    pub embed: crate::embed::EmbedService,
}

impl Shared {
    /// The settings in force now (a reload may replace them between two
    /// calls; hold the returned value for one decision).
    pub fn config(&self) -> Arc<Config> {
        self.config
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Replaces the settings (after a reload).
    pub fn set_config(&self, config: Config) {
        *self
            .config
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Arc::new(config);
    }
}
