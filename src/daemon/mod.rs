//! The daemon: lock, store, socket, accept loop, shutdown.
//!
//! # Teardown order
//! SIGTERM/SIGINT or a `stop` request: stop accepting → every connection
//! finishes the request it is running and closes (deadline
//! [`DRAIN_DEADLINE`]) → every background job stops → the last access
//! counts are written → the writer drains its queue and checkpoints → the
//! socket is removed (only if it is still ours) → the lock is released →
//! exit 0.
//!
//! # Layout
//! - this file: start-up ([`run`]), the serve sequence, signals;
//! - [`listener`]: the accept loop (peer check, connection limit);
//! - [`connection`]: one connection's loop (preamble, handshake, frames);
//! - [`socket`], [`activation`], [`lock`], [`owner`], [`peer`],
//!   [`notify`], [`reload`]: binding, socket activation, the data dir's
//!   lock, whose the data dir is, peer credentials, systemd notifications,
//!   SIGHUP;
//! - [`web`]: the viewer's loopback listener (`[http] listen`, `memd ui`).

pub(crate) mod activation;
pub(crate) mod connection;
pub(crate) mod listener;
pub(crate) mod lock;
pub(crate) mod notify;
pub(crate) mod owner;
pub(crate) mod peer;
pub(crate) mod reload;
pub(crate) mod socket;
pub(crate) mod web;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::UnixListener;
use tokio::signal::unix::{SignalKind, signal};

use crate::config::{Config, ConfigError, Paths};
use crate::jobs::Jobs;
use crate::state::Shared;
use crate::store::{Cause, Store, StoreError};
use listener::Listener;

/// How long in-flight requests may take to finish at shutdown.
pub const DRAIN_DEADLINE: Duration = Duration::from_secs(10);

/// Why the daemon could not start (or stopped abnormally).
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    /// Another daemon holds the data dir.
    #[error(
        "another memd (pid {pid}) is already running on this data dir (lock {lock}); \
         its socket is {socket}"
    )]
    AlreadyRunning {
        /// Its pid, as recorded in the lock file.
        pid: String,
        /// Its socket, as recorded in the lock file.
        socket: String,
        /// The lock file.
        lock: PathBuf,
    },
    /// A live socket answers at our socket path.
    #[error("a memd daemon already answers on {0}; not replacing a live socket")]
    AlreadyServing(PathBuf),
    /// The socket path is unusable.
    #[error("{0}")]
    SocketPath(String),
    /// The config file is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// The database could not be opened.
    #[error("cannot open the database: {0}")]
    Store(#[from] StoreError),
    /// The data dir, or something in it, belongs to another user.
    #[error("{0}")]
    NotOurs(String),
    /// A file-system failure (the `io::Error` is its source).
    #[error("{0}")]
    Io(#[source] Cause),
}

/// File descriptors the daemon needs besides its connections: SQLite files
/// of the writer and readers, the watcher, the lock, logs, uploads.
const SPARE_FDS: u64 = 64;

/// Raises the open-file limit as far as allowed and warns when it still
/// cannot hold `max_connections` sessions (each is one descriptor).
fn check_open_file_limit(max_connections: usize) {
    match crate::sys::raise_open_file_limit() {
        Ok(limit) if limit < max_connections as u64 + SPARE_FDS => tracing::warn!(
            limit,
            max_connections,
            "the open-file limit is below limits.max_connections; clients past it will be refused \
             (raise it with `ulimit -n` or LimitNOFILE=, or lower limits.max_connections)"
        ),
        Ok(limit) => tracing::debug!(limit, "open-file limit"),
        Err(e) => tracing::warn!(error = %e, "cannot read the open-file limit"),
    }
}

/// Runs the daemon in the foreground until it is told to stop.
///
/// # Errors
/// [`DaemonError`] when it cannot start; a clean stop is `Ok`.
pub fn run(mut paths: Paths, config: Config) -> Result<(), DaemonError> {
    crate::sys::set_umask(0o077);
    crate::sys::limit_malloc_arenas();
    check_open_file_limit(config.limits.max_connections);
    let inherited = activation::take()?;
    if let Some(bound) = &inherited
        && bound.path != paths.socket
    {
        tracing::warn!(
            inherited = %bound.path.display(),
            configured = %paths.socket.display(),
            "the service manager's socket is not the configured one; clients must use --socket {}",
            bound.path.display()
        );
        paths.socket.clone_from(&bound.path);
    }
    socket::ensure_private_data_dir(&paths.data_dir)?;
    socket::check_path(&paths.socket)?;
    let lock = lock::acquire(&paths.lock(), &paths.socket)?;
    let team = crate::store::team::wing::Wing::from_config(&config.team)
        .map_err(|e| DaemonError::SocketPath(format!("[team]: {e}")))?;
    let store = Store::open(
        &paths.db(),
        &config.storage,
        Duration::from_millis(config.drift.poll_ms),
        team,
    )?;
    let sessions = crate::store::sessions::SessionFile::open(&paths.sessions_db())?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("memd-rt")
        .build()
        .map_err(|e| DaemonError::Io(Cause::context("cannot start the runtime", e)))?;
    let result = runtime.block_on(serve(paths, config, store, sessions, inherited));
    runtime.shutdown_timeout(Duration::from_secs(2));
    drop(lock);
    result
}

async fn serve(
    paths: Paths,
    config: Config,
    store: Store,
    (session_file, kept): (
        crate::store::sessions::SessionFile,
        Vec<crate::store::sessions::Record>,
    ),
    inherited: Option<socket::Bound>,
) -> Result<(), DaemonError> {
    let bound = match inherited.map_or_else(|| socket::bind(&paths.socket, config.socket.mode), Ok)
    {
        Ok(b) => b,
        Err(e) => {
            store.close().await;
            return Err(e);
        }
    };
    let listener = match UnixListener::from_std(bound.listener) {
        Ok(l) => l,
        Err(e) => {
            store.close().await;
            if !bound.inherited {
                socket::remove_if_ours(&bound.path, bound.id);
            }
            return Err(DaemonError::Io(Cause::context("cannot listen", e)));
        }
    };
    let max_connections = config.limits.max_connections;
    let _watcher = if config.drift.watch {
        start_watcher(&store, &config)
    } else {
        None
    };
    let shared = Arc::new(Shared::new(
        store,
        session_file,
        config,
        paths,
        bound.inherited,
    ));
    crate::jobs::sessions::restore(&shared, kept);
    let signals = tokio::spawn(watch_signals(shared.clone()));
    // Rows there before the daemon serves are old data for the embedding
    // worker; every later one gets the near-duplicate check.
    let existing = shared
        .store
        .newest_id()
        .await
        .inspect_err(|e| tracing::warn!(error = %e, "cannot read the newest memory"))
        .ok();
    let jobs = Jobs::start(&shared, existing);
    let web = tokio::spawn(web::run(shared.clone()));
    if shared.config().http.address().ok().flatten().is_some() {
        // A listener the config names is up before the daemon says it is
        // ready (or its error is logged).
        let mut bound = shared.web.bound.subscribe();
        let _ = tokio::time::timeout(
            Duration::from_secs(5),
            bound.wait_for(|b| b.address.is_some() || b.error.is_some()),
        )
        .await;
    }
    // A machine serves once it pulled the team's memories, or once
    // PostgreSQL proved unreachable (it serves local data then, and refuses
    // shared writes until the pull caught up).
    shared.store.wing().first_attempt().await;
    tracing::info!(
        socket = %shared.paths.socket.display(),
        db = %shared.paths.db().display(),
        generation = shared.store.generations.current(),
        version = crate::version::LINE,
        "memd is serving"
    );
    notify::notify("READY=1");

    let mut listener = Listener::new(listener, shared.clone(), max_connections);
    listener.run().await;
    notify::notify("STOPPING=1");
    listener.drain(DRAIN_DEADLINE).await;
    let _ = web.await;
    jobs.stop().await;
    signals.abort();
    if let Err(e) = shared.access.flush(&shared.store).await {
        tracing::warn!(error = %e, "cannot write the last access counts");
    }
    crate::jobs::sessions::keep_all(&shared);
    shared.session_file.close().await;
    shared.store.close().await;
    if bound.inherited {
        tracing::info!(socket = %bound.path.display(), "leaving the inherited socket to the service manager");
    } else {
        socket::remove_if_ours(&bound.path, bound.id);
    }
    tracing::info!("memd stopped");
    Ok(())
}

fn start_watcher(store: &Store, config: &Config) -> Option<crate::drift::watcher::DataDirWatcher> {
    let handle = store.check_handle()?;
    let debounce = Duration::from_millis(config.drift.debounce_ms);
    match crate::drift::watcher::spawn(&store.path, move || handle.check(), debounce) {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::warn!(error = %e, "cannot watch the data dir; external changes will be seen by polling or at the next write");
            None
        }
    }
}

async fn watch_signals(shared: Arc<Shared>) {
    let (Ok(mut term), Ok(mut int), Ok(mut hup)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
    ) else {
        tracing::error!("cannot install signal handlers");
        return;
    };
    loop {
        tokio::select! {
            _ = term.recv() => {
                tracing::info!("SIGTERM received");
                shared.shutdown.trigger();
            }
            _ = int.recv() => {
                tracing::info!("SIGINT received");
                shared.shutdown.trigger();
            }
            _ = hup.recv() => {
                tracing::info!("SIGHUP received: reloading the config");
                notify::notify(&format!("RELOADING=1\nMONOTONIC_USEC={}", crate::sys::monotonic_usec()));
                let shared = shared.clone();
                // Reading the file is blocking I/O: off the async workers.
                let _ = tokio::task::spawn_blocking(move || reload::reload(&shared)).await;
                notify::notify("READY=1");
            }
        }
    }
}
