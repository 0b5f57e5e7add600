//! Test harness: a real `memd` daemon on a temp data dir, the real CLI, the
//! real client, and the `sqlite3` shell as the external writer.
//!
//! Readiness comes from the daemon's own `READY=1` notification on a
//! `NOTIFY_SOCKET` datagram socket the harness binds first — no sleeps.

#![allow(dead_code)]

pub mod http;
pub mod pg;
pub mod webdriver;
pub mod wire;

use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

pub mod model_api;
pub mod netns;
pub mod provider;

use memd_client::{Client, ConnectOptions};
use serde_json::Value;
use tempfile::TempDir;

/// The binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_memd");

/// `memd --data-dir DATA --no-autostart --json ARGS` run in `dir` (its
/// namespace derived there, as a host's hooks and MCP server derive it),
/// with [`memd_command`]'s environment for `home`; its JSON and exit code.
pub fn memd_json_status_in(
    home: &Path,
    dir: &Path,
    data_dir: &Path,
    args: &[&str],
) -> (Value, i32) {
    let out = memd_command(home)
        .current_dir(dir)
        .arg("--data-dir")
        .arg(data_dir)
        .args(["--no-autostart", "--json"])
        .args(args)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "memd {args:?}: {e}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (v, out.status.code().unwrap_or(-1))
}

/// [`memd_json_status_in`] that must exit 0: its JSON.
pub fn memd_json_in(home: &Path, dir: &Path, data_dir: &Path, args: &[&str]) -> Value {
    let (v, code) = memd_json_status_in(home, dir, data_dir, args);
    assert_eq!(code, 0, "memd {args:?}: {v}");
    v
}

/// `memd --data-dir … --no-autostart --json ARGS` run in `dir` against
/// `d` (the namespace derived there): its JSON and exit code.
pub fn memd_in(d: &Daemon, dir: &Path, args: &[&str]) -> (Value, i32) {
    memd_json_status_in(d.dir.path(), dir, &d.data_dir(), args)
}

/// `memd ARGS` run in `dir` with [`memd_command`]'s environment for
/// `home`, which must exit 0: its output.
pub fn memd_ok_in(home: &Path, dir: &Path, args: &[&str]) -> std::process::Output {
    let out = memd_command(home)
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "memd {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Asserts that `hit` is a compact search hit (`memory_search`,
/// `view=compact`): what an agent picks by and nothing more, with `cut`
/// when its text was cut.
pub fn assert_compact_hit(hit: &Value, cut: bool) {
    let mut keys: Vec<&str> = hit
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    let mut want = vec![
        "category",
        "id",
        "namespace",
        "relevance",
        "score",
        "source",
        "text",
        "thread",
        "when",
    ];
    if cut {
        want.push("cut");
        want.sort_unstable();
    }
    assert_eq!(keys, want, "{hit}");
}

/// Runs git in `dir` (no user or system config), asserting it succeeds.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
        ])
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// [`memd_in`] that must exit 0: its JSON.
pub fn memd_json(d: &Daemon, dir: &Path, args: &[&str]) -> Value {
    memd_json_in(d.dir.path(), dir, &d.data_dir(), args)
}

/// `memd hook claude-code` given a SessionStart of session `id` in `dir`:
/// the block it answered with, and its stderr.
pub fn session_start(d: &Daemon, dir: &Path, id: &str) -> (String, String) {
    use std::io::Write;
    let event = serde_json::json!({
        "hook_event_name": "SessionStart", "source": "startup", "session_id": id,
        "cwd": dir, "transcript_path": dir.join(format!("{id}.jsonl")),
    });
    let mut child = memd_command(d.dir.path())
        .current_dir(dir)
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(["hook", "claude-code"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    (
        v["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .to_string(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `memd team ARGS --json` with `MEMD_TEAM_URL=url`, from a home of its
/// own: its exit code and JSON.
pub fn team_json(url: &str, args: &[&str]) -> (i32, Value) {
    let home = tempfile::tempdir().unwrap();
    let out = memd_command(home.path())
        .arg("team")
        .args(args)
        .arg("--json")
        .env("MEMD_TEAM_URL", url)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

/// A command with a hermetic environment: no ambient `MEMD_*`, XDG dirs
/// inside `home`.
pub fn memd_command(home: &Path) -> Command {
    let mut cmd = Command::new(BIN);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("MEMD_") {
            cmd.env_remove(&k);
        }
    }
    // Outside any git work tree: the namespace is `default` unless given.
    cmd.current_dir(home)
        .env("HOME", home)
        .env("XDG_DATA_HOME", home.join("xdg-data"))
        .env("XDG_CONFIG_HOME", home.join("xdg-config"))
        .env("XDG_RUNTIME_DIR", home.join("xdg-run"))
        .env("XDG_STATE_HOME", home.join("xdg-state"))
        .env_remove("NOTIFY_SOCKET");
    // Not run by an agent host (the CLI would say its memories are an
    // agent's).
    for var in [
        "CLAUDECODE",
        "CLAUDE_CODE_SESSION_ID",
        "CODEX_THREAD_ID",
        "GEMINI_SESSION_ID",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// A running daemon on its own temp dir.
pub struct Daemon {
    /// Holds the data dir (`dir/data`) and the harness's files.
    pub dir: TempDir,
    /// The daemon process.
    pub child: Option<Child>,
    notify: UnixDatagram,
    notify_path: PathBuf,
    /// Extra `daemon` arguments (e.g. `--config F`).
    pub extra: Vec<String>,
    /// Extra environment of the daemon process.
    pub env: Vec<(String, String)>,
}

/// The result of one CLI run.
#[derive(Debug)]
pub struct CliOut {
    /// Exit code.
    pub code: i32,
    /// Stdout.
    pub stdout: String,
    /// Stderr.
    pub stderr: String,
}

impl CliOut {
    fn from(out: Output) -> CliOut {
        CliOut {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Stdout as exactly one JSON value on one line.
    pub fn json(&self) -> Value {
        let lines: Vec<&str> = self.stdout.lines().collect();
        assert_eq!(
            lines.len(),
            1,
            "expected one line of JSON, got {:?} (stderr {:?})",
            self.stdout,
            self.stderr
        );
        serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("not JSON ({e}): {}", lines[0]))
    }
}

impl Daemon {
    /// Starts a daemon on a fresh temp dir.
    pub fn start() -> Daemon {
        Self::start_with(&[])
    }

    /// Starts a daemon with extra `daemon` arguments.
    pub fn start_with(extra: &[&str]) -> Daemon {
        let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
        let mut d = Self::prepare(dir);
        d.extra = extra.iter().map(std::string::ToString::to_string).collect();
        d.spawn();
        d
    }

    /// Starts a daemon with `toml` as its config file.
    pub fn with_config(toml: &str) -> Daemon {
        let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
        let config = dir.path().join("config.toml");
        std::fs::write(&config, toml).unwrap();
        let mut d = Self::prepare(dir);
        d.extra = vec!["--config".into(), config.to_string_lossy().into_owned()];
        d.spawn();
        d
    }

    /// A harness on `dir` without starting the daemon.
    pub fn prepare(dir: TempDir) -> Daemon {
        let notify_path = dir.path().join("notify.sock");
        let notify = UnixDatagram::bind(&notify_path).unwrap();
        Daemon {
            dir,
            child: None,
            notify,
            notify_path,
            extra: Vec::new(),
            env: Vec::new(),
        }
    }

    /// The data dir.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The socket.
    pub fn socket(&self) -> PathBuf {
        self.data_dir().join("memd.sock")
    }

    /// The database file.
    pub fn db(&self) -> PathBuf {
        self.data_dir().join("memory.db")
    }

    /// The daemon's stderr log.
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("daemon.log")
    }

    /// The daemon's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// A `memd daemon` command for this data dir (not started).
    pub fn daemon_command(&self) -> Command {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .unwrap();
        let mut cmd = memd_command(self.dir.path());
        cmd.arg("daemon")
            .arg("--data-dir")
            .arg(self.data_dir())
            .args(&self.extra)
            .env("NOTIFY_SOCKET", &self.notify_path)
            .env("MEMD_LOG", "info")
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::from(log));
        cmd
    }

    /// Starts the daemon process and waits for its `READY=1`.
    pub fn spawn(&mut self) {
        assert!(self.child.is_none(), "daemon already running");
        let child = self.daemon_command().spawn().unwrap();
        self.child = Some(child);
        self.wait_ready();
    }

    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        self.notify
            .set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let mut buf = [0u8; 256];
        loop {
            if let Ok(n) = self.notify.recv(&mut buf)
                && &buf[..n] == b"READY=1"
            {
                return;
            }
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!(
                    "daemon exited with {status} before it was ready:\n{}",
                    self.log()
                );
            }
            assert!(
                Instant::now() < deadline,
                "daemon not ready in 30s:\n{}",
                self.log()
            );
        }
    }

    /// Sends SIGHUP (reload the config) and waits for the daemon's
    /// `READY=1` that ends the reload.
    pub fn reload(&mut self) {
        let pid = self.child.as_ref().expect("daemon not running").id();
        signal(pid, "HUP");
        self.wait_ready();
    }

    /// The service-manager notifications received so far (and not yet
    /// consumed by a wait for `READY=1`).
    pub fn notifications(&self) -> Vec<String> {
        self.notify.set_nonblocking(true).unwrap();
        let mut out = Vec::new();
        let mut buf = [0u8; 256];
        while let Ok(n) = self.notify.recv(&mut buf) {
            out.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        self.notify.set_nonblocking(false).unwrap();
        out
    }

    /// Sends SIGTERM and waits for the exit.
    pub fn terminate(&mut self) -> ExitStatus {
        let mut child = self.child.take().expect("daemon not running");
        signal(child.id(), "TERM");
        child.wait().unwrap()
    }

    /// Kills the daemon with SIGKILL.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Runs the CLI against this daemon (never autostarting).
    pub fn cli(&self, args: &[&str]) -> CliOut {
        self.cli_stdin(args, None)
    }

    /// The CLI against this daemon, to add arguments and environment to.
    pub fn cmd(&self) -> Command {
        let mut cmd = memd_command(self.dir.path());
        cmd.arg("--data-dir")
            .arg(self.data_dir())
            .arg("--no-autostart")
            .stdin(Stdio::null());
        cmd
    }

    /// Runs the CLI with bytes on stdin.
    pub fn cli_stdin(&self, args: &[&str], stdin: Option<&[u8]>) -> CliOut {
        let mut cmd = memd_command(self.dir.path());
        cmd.arg("--data-dir")
            .arg(self.data_dir())
            .arg("--no-autostart")
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        let mut child = cmd.spawn().unwrap();
        if let Some(bytes) = stdin {
            use std::io::Write;
            let mut pipe = child.stdin.take().unwrap();
            let bytes = bytes.to_vec();
            // Write from a thread: a large input must not dead-lock against
            // a full stdout pipe.
            std::thread::spawn(move || {
                let _ = pipe.write_all(&bytes);
            });
        }
        CliOut::from(child.wait_with_output().unwrap())
    }

    /// Runs the CLI with `--json`; returns the value and the exit code.
    pub fn json(&self, args: &[&str]) -> (Value, i32) {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.cli(&all);
        (out.json(), out.code)
    }

    /// Connect options for a session in `namespace`.
    pub fn opts(&self) -> ConnectOptions {
        ConnectOptions::new(self.socket())
    }

    /// A client session in the default namespace.
    pub async fn client(&self) -> Client {
        Client::connect(self.opts()).await.unwrap()
    }

    /// The `status --json` object.
    pub fn status(&self) -> Value {
        let (v, code) = self.json(&["status"]);
        assert_eq!(code, 0, "{v}");
        v
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Whether an external tool the test needs is on `PATH`. Without it the
/// test prints why it is skipped — unless `MEMD_REQUIRE_TOOLS=1` (set by
/// `.ci/run`, which installs every tool), where a missing tool fails.
pub fn tool(name: &str, why: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()));
    require(found, &format!("`{name}` is not installed ({why})"))
}

/// Lets this test process (and the daemons it starts, which inherit the
/// limit) hold `want` open files: raises the soft limit, and the hard one
/// only when it is lower (which needs root). It never lowers either, so
/// tests running side by side in this process cannot take descriptors
/// from each other. Returns whether `want` are allowed.
pub fn allow_open_files(want: u64) -> bool {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    let Some((soft, hard)) = limits.lines().find_map(|l| {
        let mut v = l.strip_prefix("Max open files")?.split_whitespace();
        Some((
            v.next()?.parse::<u64>().ok()?,
            v.next()?.parse::<u64>().ok()?,
        ))
    }) else {
        return false;
    };
    if soft >= want {
        return true;
    }
    // `want:` sets the soft limit alone; `want:want` raises both (root).
    let limit = if hard >= want {
        format!("--nofile={want}:")
    } else {
        format!("--nofile={want}:{want}")
    };
    let raised = Command::new("prlimit")
        .args(["--pid", &std::process::id().to_string(), &limit])
        .status()
        .is_ok_and(|s| s.success());
    if !raised {
        eprintln!(
            "cannot raise the open-file limit to {want} (the hard limit is {hard}; past it needs root)"
        );
    }
    raised
}

/// A precondition of a test: when it does not hold the test is skipped
/// with a visible message, or fails under `MEMD_REQUIRE_TOOLS=1`.
pub fn require(holds: bool, what: &str) -> bool {
    if holds {
        return true;
    }
    assert!(
        std::env::var_os("MEMD_REQUIRE_TOOLS").is_none_or(|v| v != "1"),
        "{what}; MEMD_REQUIRE_TOOLS=1 says CI has it"
    );
    eprintln!("SKIPPED: {what}; set MEMD_REQUIRE_TOOLS=1 to make this a failure");
    false
}

/// Sends a signal by name with the `kill` command.
pub fn signal(pid: u32, name: &str) {
    let ok = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill -{name} {pid} failed");
}

/// Runs SQL in the `sqlite3` shell — a separate process with none of memd's
/// code — and returns its stdout.
pub fn sqlite3(db: &Path, sql: &str) -> String {
    // A busy timeout, as any well-behaved tool sets: memd holds the write
    // lock for each of its commits.
    let out = Command::new("sqlite3")
        .arg("-batch")
        .args(["-cmd", ".timeout 5000"])
        .arg(db)
        .arg(sql)
        .output()
        .unwrap_or_else(|e| {
            panic!("the sqlite3 shell is needed for this test (apt-get install sqlite3): {e}")
        });
    assert!(
        out.status.success(),
        "sqlite3 failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The ids of a JSON list or search result.
pub fn ids(v: &Value, key: &str) -> Vec<i64> {
    v[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {v}"))
        .iter()
        .map(|m| m["id"].as_i64().unwrap())
        .collect()
}

/// The local embedding model's directory (`MEMD_MODEL_DIR`, or where
/// `memd model fetch` puts it), or `None` — with a visible message,
/// or a failure under `MEMD_REQUIRE_TOOLS=1` (CI fetches the model) — when
/// its files are not there.
pub fn model_dir() -> Option<PathBuf> {
    let dir = memd::embed::model_dir(&memd::embed::EmbedConfig::default(), |k| {
        std::env::var_os(k)
    });
    let missing = memd::embed::missing_model_files(&dir);
    require(
        missing.is_empty(),
        &format!(
            "the local embedding model is not in {} (missing {}); run \
             memd model fetch to run this test",
            dir.display(),
            missing.join(", ")
        ),
    )
    .then_some(dir)
}

/// The contents of namespace `ns` on daemon `d`, sorted.
pub fn contents(d: &Daemon, ns: &str) -> Vec<String> {
    let (v, code) = d.json(&["--namespace", ns, "list", "--limit", "1000"]);
    assert_eq!(code, 0, "list failed: {v}");
    listed_contents(&v)
}

/// The contents of the memories a `list --json` answer holds, sorted.
pub fn listed_contents(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

/// Waits until namespace `ns` on `d` holds exactly `want` (a machine of a
/// team catching up).
pub fn wait_contents(d: &Daemon, ns: &str, want: &[&str]) {
    let mut want: Vec<String> = want.iter().map(|s| (*s).to_string()).collect();
    want.sort();
    pg::Pg::wait_for(
        std::time::Duration::from_secs(20),
        &format!("{want:?} in {ns}"),
        || contents(d, ns) == want,
    );
}

/// Every file under `dir` whose bytes hold `needle` in upper or lower
/// case (`skip_db`: leave `memory.db*` out).
pub fn files_holding(dir: &Path, needle: &str, skip_db: bool) -> Vec<String> {
    let forms = [
        needle.to_uppercase(),
        needle.to_lowercase(),
        needle.to_string(),
    ];
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            if skip_db && e.file_name().to_string_lossy().starts_with("memory.db") {
                continue;
            }
            let Ok(bytes) = std::fs::read(&p) else {
                continue;
            };
            if forms
                .iter()
                .any(|f| bytes.windows(f.len()).any(|w| w == f.as_bytes()))
            {
                out.push(p.display().to_string());
            }
        }
    }
    out.sort();
    out
}
