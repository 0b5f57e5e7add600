//! The daemon under test: this binary re-run as `memd-bench daemon`, which
//! calls memd's own `daemon::run`. Readiness is the daemon's `READY=1` on a
//! `NOTIFY_SOCKET` datagram socket.

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memd::config::{Config, PathFlags, Paths};

/// Entry point of the child process.
pub fn run_child(data_dir: PathBuf, config: Option<PathBuf>) -> anyhow::Result<()> {
    memd::commands::init_logging();
    let paths = Paths::resolve(&PathFlags {
        data_dir: Some(data_dir),
        socket: None,
        config: config.clone(),
    });
    let config = match config {
        Some(path) => Config::load(&path)?,
        None => Config::default(),
    };
    memd::daemon::run(paths, config)?;
    Ok(())
}

/// A running daemon on a temp dir.
pub struct BenchDaemon {
    pub dir: tempfile::TempDir,
    /// The data dir when it is not `dir/data`.
    data: Option<PathBuf>,
    child: Option<Child>,
    notify: UnixDatagram,
    config: Option<PathBuf>,
}

impl BenchDaemon {
    /// Starts a daemon with an optional config file text.
    pub fn start(config: Option<&str>) -> anyhow::Result<BenchDaemon> {
        BenchDaemon::start_in(None, config)
    }

    /// Starts a daemon on `data` (a data dir kept from an earlier run), or
    /// on a new one in a temporary directory.
    pub fn start_in(data: Option<PathBuf>, config: Option<&str>) -> anyhow::Result<BenchDaemon> {
        let dir = tempfile::Builder::new().prefix("memd-bench").tempdir()?;
        let notify = UnixDatagram::bind(dir.path().join("notify.sock"))?;
        let config = match config {
            Some(text) => {
                let path = dir.path().join("config.toml");
                std::fs::write(&path, text)?;
                Some(path)
            }
            None => None,
        };
        let mut d = BenchDaemon {
            dir,
            data,
            child: None,
            notify,
            config,
        };
        d.spawn()?;
        Ok(d)
    }

    /// The data dir.
    pub fn data_dir(&self) -> PathBuf {
        self.data
            .clone()
            .unwrap_or_else(|| self.dir.path().join("data"))
    }

    /// The socket.
    pub fn socket(&self) -> PathBuf {
        self.data_dir().join("memd.sock")
    }

    /// The daemon's pid.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Starts the child and waits until it serves; returns the time it took.
    pub fn spawn(&mut self) -> anyhow::Result<Duration> {
        let started = Instant::now();
        let mut cmd = Command::new(std::env::current_exe()?);
        cmd.arg("daemon").arg("--data-dir").arg(self.data_dir());
        if let Some(c) = &self.config {
            cmd.arg("--config").arg(c);
        }
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("MEMD_") && k != "MEMD_MODEL_DIR" {
                cmd.env_remove(&k);
            }
        }
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("daemon.log"))?;
        cmd.env("NOTIFY_SOCKET", self.dir.path().join("notify.sock"))
            .env(
                "MEMD_LOG",
                std::env::var("MEMD_BENCH_LOG").unwrap_or_else(|_| "warn".into()),
            )
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        self.child = Some(cmd.spawn().context("cannot start the daemon")?);
        self.notify
            .set_read_timeout(Some(Duration::from_millis(100)))?;
        let mut buf = [0u8; 64];
        loop {
            if let Ok(n) = self.notify.recv(&mut buf)
                && &buf[..n] == b"READY=1"
            {
                return Ok(started.elapsed());
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                bail!("the daemon exited with {status} before it was ready");
            }
            // A team machine pulls the team's memories before it serves.
            if started.elapsed() > Duration::from_secs(900) {
                bail!("the daemon was not ready within 900 s");
            }
        }
    }

    /// Stops the daemon with SIGTERM and waits for it.
    pub fn stop(&mut self) -> anyhow::Result<()> {
        if let Some(mut child) = self.child.take() {
            Command::new("kill")
                .arg("-TERM")
                .arg(child.id().to_string())
                .status()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Resident set size of the daemon in MiB (Linux `/proc`).
    pub fn rss_mb(&self) -> Option<f64> {
        self.status_mb("VmRSS:")
    }

    /// The part of [`rss_mb`](Self::rss_mb) that is file pages: the
    /// database the readers map (the page cache's, shared, dropped under
    /// memory pressure), the binary.
    pub fn rss_file_mb(&self) -> Option<f64> {
        self.status_mb("RssFile:")
    }

    /// A `/proc/PID/status` line's kB in MiB.
    fn status_mb(&self, key: &str) -> Option<f64> {
        let pid = self.pid()?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map(|kb| kb / 1024.0)
    }
}

impl Drop for BenchDaemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        // MEMD_BENCH_KEEP=1 leaves the data dir behind (to profile
        // searches on a loaded database); its path goes to stderr.
        if std::env::var_os("MEMD_BENCH_KEEP").is_some() {
            self.dir.disable_cleanup(true);
            eprintln!("kept {}", self.dir.path().display());
        }
    }
}

/// Size of a file in MiB (0 when missing).
pub fn file_mb(path: &Path) -> f64 {
    std::fs::metadata(path).map_or(0.0, |m| m.len() as f64 / 1_048_576.0)
}

/// The `memd` binary the hooks run: `given`, or `memd` next to this
/// executable (`cargo build --release --bin memd` puts it there).
///
/// # Errors
/// When it does not exist.
pub fn memd_binary(given: Option<&Path>) -> anyhow::Result<PathBuf> {
    let path = match given {
        Some(p) => p.to_path_buf(),
        None => std::env::current_exe()?
            .parent()
            .ok_or_else(|| anyhow::anyhow!("the executable has no directory"))?
            .join("memd"),
    };
    if !path.exists() {
        anyhow::bail!(
            "{} is missing: build it (cargo build --release --bin memd) or pass --memd",
            path.display()
        );
    }
    Ok(path)
}
