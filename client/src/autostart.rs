//! Connect, or start a daemon in the background and connect.
//!
//! "Running" is decided by connecting, never by a pid file. When nothing
//! answers, the daemon binary is started detached (its own process group,
//! output appended to `<data_dir>/memd.log`) with the resolved data dir and
//! socket, and the client waits for the socket to answer. Two clients that
//! start at once both spawn a daemon: one wins the data-dir lock, the other
//! exits, and both clients connect to the winner. When the daemon a client
//! started exits and still nobody answers — a stopping daemon held the lock
//! a moment longer than its socket — the client starts another, a few times
//! with a growing pause, until its wait is over.

use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{Client, ConnectOptions, Error, Result};

/// How to start a daemon when none answers.
#[derive(Debug, Clone)]
pub struct StartSpec {
    /// The `memd` executable.
    pub program: PathBuf,
    /// Data dir to pass (`--data-dir`).
    pub data_dir: PathBuf,
    /// Config file to pass (`--config`), if one was given.
    pub config: Option<PathBuf>,
    /// How long to wait for the new daemon's socket.
    pub wait: Duration,
}

impl StartSpec {
    /// A spec with a 10-second wait.
    pub fn new(program: impl Into<PathBuf>, data_dir: impl Into<PathBuf>) -> StartSpec {
        StartSpec {
            program: program.into(),
            data_dir: data_dir.into(),
            config: None,
            wait: Duration::from_secs(10),
        }
    }
}

/// Whether a connect error means "nobody is there" (as opposed to a daemon
/// that refused us). A socket we may not open (`EACCES`: another user's
/// daemon) is somebody: starting a second daemon would not help.
fn nobody_there(e: &Error) -> bool {
    matches!(e, Error::Unreachable { source, .. }
        if source.kind() != std::io::ErrorKind::PermissionDenied)
}

/// Connects; when nothing answers and `start` is given, starts a daemon and
/// connects to it.
///
/// # Errors
/// [`Error::Unreachable`] without `start`; [`Error::Autostart`] when the
/// daemon cannot be started or does not answer in time (with the end of its
/// log); any refusal of the daemon.
pub async fn connect(opts: ConnectOptions, start: Option<&StartSpec>) -> Result<Client> {
    match Client::connect(opts.clone()).await {
        Err(e) if nobody_there(&e) => {
            let Some(spec) = start else { return Err(e) };
            let child = spawn_daemon(spec, &opts.socket)?;
            wait_for(opts, spec, child).await
        }
        other => other,
    }
}

fn spawn_daemon(spec: &StartSpec, socket: &Path) -> Result<Child> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&spec.data_dir)
        .map_err(|e| Error::Autostart(format!("cannot create {}: {e}", spec.data_dir.display())))?;
    let log_path = spec.data_dir.join("memd.log");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&log_path)
        .map_err(|e| Error::Autostart(format!("cannot open {}: {e}", log_path.display())))?;
    let log2 = log
        .try_clone()
        .map_err(|e| Error::Autostart(e.to_string()))?;
    let mut cmd = Command::new(&spec.program);
    cmd.arg("daemon")
        .arg("--data-dir")
        .arg(&spec.data_dir)
        .arg("--socket")
        .arg(socket);
    if let Some(config) = &spec.config {
        cmd.arg("--config").arg(config);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::from(log))
        .stderr(Stdio::from(log2))
        // Its own process group: a Ctrl-C in the client's terminal does not
        // reach the daemon.
        .process_group(0);
    cmd.spawn()
        .map_err(|e| Error::Autostart(format!("cannot run {}: {e}", spec.program.display())))
}

/// Reaps the daemon in the background whenever it exits; when it keeps
/// running, the thread simply outlives nothing of ours.
fn reap(mut child: Child) {
    std::thread::spawn(move || {
        let _ = child.wait();
    });
}

async fn wait_for(opts: ConnectOptions, spec: &StartSpec, child: Child) -> Result<Client> {
    let deadline = Instant::now() + spec.wait;
    let mut delay = Duration::from_millis(5);
    let mut child = child;
    // Pause before starting another daemon when ours exited.
    let mut pause = Duration::from_millis(100);
    let mut exited_at: Option<Instant> = None;
    let result = loop {
        match Client::connect(opts.clone()).await {
            Err(e) if nobody_there(&e) && Instant::now() < deadline => {
                if exited_at.is_none() && matches!(child.try_wait(), Ok(Some(_))) {
                    exited_at = Some(Instant::now());
                }
                if exited_at.is_some_and(|t| t.elapsed() >= pause) {
                    // It lost the lock to a daemon that is still going
                    // away (or failed): try again.
                    child = match spawn_daemon(spec, &opts.socket) {
                        Ok(c) => c,
                        Err(e) => break Err(e),
                    };
                    exited_at = None;
                    pause *= 2;
                }
                tokio::time::sleep(delay).await;
                delay = (delay * 2).min(Duration::from_millis(100));
            }
            Err(e) if nobody_there(&e) => {
                let log = spec.data_dir.join("memd.log");
                break Err(Error::Autostart(format!(
                    "the daemon did not answer on {} within {:?}; last lines of {}:\n{}",
                    opts.socket.display(),
                    spec.wait,
                    log.display(),
                    tail(&log, 10)
                )));
            }
            other => break other,
        }
    };
    reap(child);
    result
}

fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::ErrorKind;

    #[test]
    fn only_an_absent_or_dead_socket_means_nobody_is_there() {
        let unreachable = |kind: ErrorKind| Error::Unreachable {
            socket: "/run/memd.sock".into(),
            source: kind.into(),
        };
        assert!(nobody_there(&unreachable(ErrorKind::NotFound)));
        assert!(nobody_there(&unreachable(ErrorKind::ConnectionRefused)));
        // Another user's daemon: starting our own would not help.
        assert!(!nobody_there(&unreachable(ErrorKind::PermissionDenied)));
        assert!(!nobody_there(&Error::Closed));
        let message = unreachable(ErrorKind::PermissionDenied).to_string();
        assert!(message.contains("another user's daemon"), "{message}");
    }
}
