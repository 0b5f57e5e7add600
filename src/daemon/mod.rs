//! The daemon: lock, store, socket, accept loop, shutdown.
//!
//! # Teardown order
//! SIGTERM/SIGINT or a `stop` request: stop accepting → every connection
//! finishes the request it is running and closes (deadline
//! [`DRAIN_DEADLINE`]) → the writer drains its queue and checkpoints → the
//! socket is removed (only if it is still ours) → the lock is released →
//! exit 0.

pub mod activation;
pub mod connection;
pub mod lock;
pub mod notify;
pub mod peer;
pub mod reload;
pub mod sidecar;
pub mod socket;

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant};

use memd_proto::ErrorCode;
use tokio::net::UnixListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use crate::config::{Config, ConfigError, Paths};
use crate::state::Shared;
use crate::state::shutdown::{Shutdown, triggered};
use crate::store::{Cause, Store, StoreError};

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
    /// A file-system failure (the `io::Error` is its source).
    #[error("{0}")]
    Io(#[source] Cause),
}

/// File descriptors the daemon needs besides its connections: SQLite files
/// of the writer and readers, the watcher, the lock, logs, uploads.
const SPARE_FDS: u64 = 64;

/// Rebuilds the in-memory FTS vocabulary when a fuzzy search found it out
/// of date, on a reader, at most once per `REBUILD_EVERY`.
async fn refresh_vocab(shared: Arc<Shared>) {
    use crate::store::search::vocab;
    loop {
        shared.store.vocab.wanted.notified().await;
        let read = shared
            .store
            .readers
            .read(crate::store::readers::ReadKind::Internal, vocab::load)
            .await;
        match read {
            Ok(read) => {
                tracing::debug!(
                    terms = read.value.terms.len(),
                    generation = read.value.generation,
                    "vocabulary cached"
                );
                shared.store.vocab.set(read.value);
            }
            Err(e) => tracing::warn!(error = %e, "cannot read the vocabulary"),
        }
        tokio::time::sleep(vocab::REBUILD_EVERY).await;
    }
}

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
    let store = Store::open(
        &paths.db(),
        &config.storage,
        Duration::from_millis(config.drift.poll_ms),
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
    let backups = crate::drift::backup::Backups::new(
        paths.data_dir.clone(),
        config.drift.backups_keep,
        config.drift.backups_max_bytes,
    );
    let embed = {
        let dir = crate::embed::model_dir(&config.embed, |k| std::env::var_os(k));
        crate::embed::EmbedService::new(config.embed.clone(), dir)
    };
    let shared = Arc::new(Shared {
        store,
        config: std::sync::RwLock::new(Arc::new(config)),
        paths,
        shutdown: Shutdown::new(),
        sessions: AtomicUsize::new(0),
        started: Instant::now(),
        backups,
        access: Default::default(),
        live: Default::default(),
        named: Default::default(),
        session_file,
        namespaces_moved: Default::default(),
        sweeping: Default::default(),
        socket_inherited: bound.inherited,
        embed,
    });
    crate::jobs::sessions::restore(&shared, kept);
    tokio::spawn(watch_signals(shared.clone()));
    let flusher = tokio::spawn(flush_access(shared.clone()));
    let sweeper = tokio::spawn(schedule_sweeps(shared.clone()));
    let sidecar = tokio::spawn(sidecar::run(shared.clone()));
    let vocab = tokio::spawn(refresh_vocab(shared.clone()));
    tokio::spawn(expire_sessions(shared.clone()));
    // Rows there before the daemon serves are old data for the embedding
    // worker; every later one gets the near-duplicate check.
    let existing = shared
        .store
        .readers
        .read(crate::store::readers::ReadKind::Internal, |conn| {
            crate::store::vectors::newest_id(conn)
        })
        .await
        .map(|r| r.value)
        .inspect_err(|e| tracing::warn!(error = %e, "cannot read the newest memory"))
        .ok();
    let embedder = tokio::spawn(crate::jobs::embed::run(shared.clone(), existing));
    let backfill = tokio::spawn({
        let shared = shared.clone();
        async move {
            match crate::store::lifecycle::backfill_sketches(&shared.store, 250).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(rows = n, "sketched rows for the near-duplicate check"),
                Err(e) => tracing::warn!(error = %e, "cannot sketch rows"),
            }
        }
    });
    tracing::info!(
        socket = %shared.paths.socket.display(),
        db = %shared.paths.db().display(),
        generation = shared.store.generations.current(),
        version = env!("CARGO_PKG_VERSION"),
        "memd is serving"
    );
    notify::notify("READY=1");

    let own_uid = crate::sys::euid();
    let permits = Arc::new(Semaphore::new(max_connections));
    let mut connections = JoinSet::new();
    let mut stop = shared.shutdown.subscribe();
    loop {
        tokio::select! {
            () = triggered(&mut stop) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((stream, _)) => stream,
                    Err(e) => {
                        // EMFILE and friends: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                match stream.peer_cred() {
                    Ok(cred) => {
                        let groups = {
                            use std::os::fd::AsRawFd;
                            crate::sys::peer_groups(stream.as_raw_fd())
                        };
                        let admitted = peer::admit(own_uid, cred.uid(), cred.gid(), &groups, &shared.config().socket);
                        if let Err(message) = admitted {
                            tracing::warn!(uid = cred.uid(), gid = cred.gid(), pid = ?cred.pid(), "refused a client: its user is not the daemon's and not in [socket] allow_uids / allow_gids");
                            connections.spawn(connection::refuse(
                                stream,
                                ErrorCode::PermissionDenied,
                                message,
                            ));
                            continue;
                        }
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "cannot read peer credentials; refusing");
                        continue;
                    }
                }
                match permits.clone().try_acquire_owned() {
                    Ok(permit) => {
                        let shared = shared.clone();
                        connections.spawn(async move {
                            connection::serve(stream, shared).await;
                            drop(permit);
                        });
                    }
                    Err(_) => {
                        tracing::warn!(max_connections, "connection limit reached; refusing a client");
                        connections.spawn(connection::refuse(
                            stream,
                            ErrorCode::Busy,
                            format!("memd is at its limit of {max_connections} connections (limits.max_connections); retry later"),
                        ));
                    }
                }
            }
        }
    }

    drop(listener);
    notify::notify("STOPPING=1");
    tracing::info!(
        connections = connections.len(),
        "shutting down: finishing in-flight requests"
    );
    let drained = tokio::time::timeout(DRAIN_DEADLINE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            left = connections.len(),
            "connections did not finish in time; closing them"
        );
        connections.shutdown().await;
    }
    flusher.abort();
    sweeper.abort();
    sidecar.abort();
    vocab.abort();
    embedder.abort();
    backfill.abort();
    if let Err(e) = shared.access.flush(&shared.store).await {
        tracing::warn!(error = %e, "cannot write the last access counts");
    }
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

/// How often pending access counts are written.
const ACCESS_FLUSH: Duration = Duration::from_secs(1);

async fn flush_access(shared: Arc<Shared>) {
    loop {
        tokio::select! {
            () = tokio::time::sleep(ACCESS_FLUSH) => {}
            () = shared.access.wake.notified() => {}
        }
        if let Err(e) = shared.access.flush(&shared.store).await {
            tracing::warn!(error = %e, "cannot write access counts; will retry");
        }
    }
}

/// Ends named sessions idle for `[session] idle_ttl` (checked every
/// tenth of it, at least each second and at most each minute).
async fn expire_sessions(shared: Arc<Shared>) {
    loop {
        let ttl = shared.config().session.idle_ttl();
        let every = (ttl / 10).clamp(Duration::from_secs(1), Duration::from_secs(60));
        tokio::time::sleep(every).await;
        crate::jobs::sessions::expire(&shared, ttl).await;
    }
}

async fn schedule_sweeps(shared: Arc<Shared>) {
    use crate::store::lifecycle::Trigger;
    let lifecycle = shared.config().lifecycle.clone();
    let hours = lifecycle.interval_hours;
    if lifecycle.at_start
        && let Err(e) = crate::jobs::sweep::run(&shared, Trigger::Start, false).await
    {
        tracing::warn!(error = %e, "sweep at start failed");
    }
    if hours <= 0.0 {
        return;
    }
    loop {
        tokio::time::sleep(Duration::from_secs_f64(hours * 3_600.0)).await;
        if let Err(e) = crate::jobs::sweep::run(&shared, Trigger::Schedule, false).await {
            tracing::warn!(error = %e, "scheduled sweep failed");
        }
    }
}

fn start_watcher(store: &Store, config: &Config) -> Option<crate::drift::watcher::DataDirWatcher> {
    let handle = store.writer.check_handle()?;
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
