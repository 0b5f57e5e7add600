//! What request handlers and background jobs share: the store, the
//! settings in force, the session registry, the embedder, the shutdown
//! signal. A low module: it imports the layers below it and nothing above
//! (see ARCHITECTURE.md "Layers"). Handlers see it through the narrower
//! `handler::Ctx`.

pub mod purge;
pub mod shutdown;
pub mod web;

use std::collections::HashSet;
use std::sync::atomic::AtomicUsize;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use crate::config::{Config, Paths};
use crate::drift::backup::Backups;
use crate::embed::EmbedService;
use crate::session::named::Registry;
use crate::store::Store;
use crate::store::access::Access;
use crate::store::sessions::SessionFile;
use crate::sync;
use shutdown::Shutdown;

/// What the handlers and jobs share.
pub struct Shared {
    /// The database.
    pub store: Store,
    /// Settings; SIGHUP swaps in what the reloaded file changes live. Read
    /// them with [`Shared::config`].
    config: RwLock<Arc<Config>>,
    /// Resolved paths.
    pub paths: Paths,
    /// The shutdown signal.
    pub shutdown: Shutdown,
    /// Open sessions.
    pub sessions: AtomicUsize,
    /// Start time.
    pub started: Instant,
    /// Drift backups.
    pub backups: Backups,
    /// Pending access tracking.
    pub access: Access,
    /// Keys of the sessions now connected, and of the named sessions.
    pub live: Mutex<HashSet<String>>,
    /// Named sessions.
    pub named: Registry,
    /// Earlier derived namespaces whose memories were moved this run.
    pub namespaces_moved: Mutex<HashSet<String>>,
    /// Where named sessions are kept across restarts.
    pub session_file: SessionFile,
    /// Held while a sweep runs (one at a time).
    pub sweeping: tokio::sync::Mutex<()>,
    /// The listener came from the service manager (socket activation).
    pub socket_inherited: bool,
    /// The embedder, the model lock and the vector index.
    pub embed: EmbedService,
    /// The viewer's loopback listener.
    pub web: web::Web,
    /// Ids purged this run: a connection's frozen block that holds one is
    /// dropped at its next inject (named sessions' blocks at the purge).
    pub purged: Mutex<HashSet<i64>>,
    /// Each purge's erased ids, told to every connected session.
    pub purge_told: tokio::sync::broadcast::Sender<memd_proto::PurgedEvent>,
}

impl Shared {
    /// The shared state of a daemon serving `store` with `config`: drift
    /// backups in the data dir, the embedder the config names (started by
    /// its job), no session yet.
    pub fn new(
        store: Store,
        session_file: SessionFile,
        config: Config,
        paths: Paths,
        socket_inherited: bool,
    ) -> Shared {
        let backups = Backups::new(
            paths.data_dir.clone(),
            config.drift.backups_keep,
            config.drift.backups_max_bytes,
        );
        let embed = {
            let dir = crate::embed::model_dir(&config.embed, |k| std::env::var_os(k));
            EmbedService::new(config.embed.clone(), dir)
        };
        Shared {
            store,
            config: RwLock::new(Arc::new(config)),
            paths,
            shutdown: Shutdown::new(),
            sessions: AtomicUsize::new(0),
            started: Instant::now(),
            backups,
            access: Access::default(),
            live: Mutex::default(),
            named: Registry::default(),
            namespaces_moved: Mutex::default(),
            session_file,
            sweeping: tokio::sync::Mutex::default(),
            socket_inherited,
            embed,
            web: web::Web::default(),
            purged: Mutex::default(),
            purge_told: tokio::sync::broadcast::channel(64).0,
        }
    }

    /// The settings in force now (a reload may replace them between two
    /// calls; hold the returned value for one decision).
    pub fn config(&self) -> Arc<Config> {
        sync::read(&self.config).clone()
    }

    /// Replaces the settings (after a reload).
    pub fn set_config(&self, config: Config) {
        *sync::write(&self.config) = Arc::new(config);
    }
}

#[cfg(test)]
pub(crate) mod testing {
    //! A real store in a temporary directory, for unit tests of what runs
    //! on [`Shared`].

    use super::Shared;
    use crate::config::{Config, PathFlags, Paths};
    use crate::store::Store;
    use crate::store::sessions::SessionFile;

    /// A daemon's shared state on a fresh database in `dir`, with `config`
    /// (its embedder off unless the config names one).
    pub(crate) fn shared(dir: &std::path::Path, config: Config) -> Shared {
        shared_with(dir, config, crate::store::team::wing::Wing::None)
    }

    /// The same, with team memory through `wing`.
    pub(crate) fn shared_with(
        dir: &std::path::Path,
        config: Config,
        wing: crate::store::team::wing::Wing,
    ) -> Shared {
        let paths = Paths::resolve_with(
            &PathFlags {
                data_dir: Some(dir.to_path_buf()),
                ..PathFlags::default()
            },
            |_| None,
        );
        let store = Store::open(
            &paths.db(),
            &config.storage,
            std::time::Duration::from_millis(config.drift.poll_ms),
            wing,
        )
        .expect("open a store in a temporary directory");
        let (sessions, _) = SessionFile::open(&paths.sessions_db()).expect("open a sessions file");
        Shared::new(store, sessions, config, paths, false)
    }
}
