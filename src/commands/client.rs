//! The client side of a session: the paths the global flags select, the
//! namespace a session opens in when no flag names one, and connecting to
//! the daemon (starting one when allowed).

use std::path::{Path, PathBuf};

use memd_client::autostart::{self, StartSpec};
use memd_client::{Client, ConnectOptions, DriftPolicy};

use super::CommandError;
use super::args::Global;
use crate::config::{Config, PathFlags, Paths};

/// Resolved paths from the global flags.
pub fn paths(g: &Global) -> Paths {
    Paths::resolve(&PathFlags {
        data_dir: g.data_dir.clone(),
        socket: g.socket.clone(),
        config: g.config.clone(),
    })
}

/// Paths for a client: without a socket given (flag or `MEMD_SOCKET`), the
/// socket the data dir's running daemon recorded in its lock, so a client
/// given only a data dir finds that daemon wherever it listens and never
/// starts another.
pub fn client_paths(g: &Global) -> Paths {
    let mut p = paths(g);
    if g.socket.is_none()
        && let Some(h) = crate::daemon::lock::holder(&p.lock())
    {
        p.socket = h.socket;
    }
    p
}

/// Connects with the global flags, autostarting a daemon when allowed.
///
/// # Errors
/// Usage errors in the flags, or the connection's error.
pub async fn connect(g: &Global, autostart_allowed: bool) -> Result<Client, CommandError> {
    let paths = client_paths(g);
    let policy = match g.drift_policy.as_deref() {
        None => None,
        Some(p) => Some(DriftPolicy::parse(p).ok_or_else(|| {
            CommandError::Usage(format!(
                "unknown drift policy `{p}`: expected standard, external, strict or off"
            ))
        })?),
    };
    let mut opts = ConnectOptions::new(&paths.socket);
    if let Some(ns) = &g.namespace {
        opts.namespace = ns.clone();
    }
    if let Some(agent) = &g.agent {
        opts.agent_id = agent.clone();
    }
    opts.policy = policy;
    opts.seen_generation = g.seen_generation;
    opts.session = g.session.clone();
    opts.hold_block = g.hold_block;
    opts.previous_namespace = g.previous_namespace.clone();
    let spec = if autostart_allowed && !g.no_autostart {
        let program = std::env::current_exe()
            .map_err(|e| CommandError::Io(format!("cannot find the memd executable: {e}")))?;
        let mut spec = StartSpec::new(program, &paths.data_dir);
        spec.config.clone_from(&g.config);
        Some(spec)
    } else {
        None
    };
    let client = autostart::connect(opts, spec.as_ref()).await?;
    let theirs = &client.welcome().server_version;
    let ours = env!("CARGO_PKG_VERSION");
    if theirs != ours {
        // The same protocol works, but the daemon lacks what this version
        // changed: say so once per command, on stderr (stdout stays the
        // command's own output).
        eprintln!(
            "memd: note: the daemon runs memd {theirs}, this client is memd {ours}; \
             `memd stop` lets the next command start this version \
             (`systemctl --user restart memd` under systemd)"
        );
    }
    Ok(client)
}

/// `[client] namespace` of the config file, when set (a file that cannot be
/// read is the daemon's to report).
fn configured_namespace(g: &Global) -> Option<String> {
    let path = paths(g).config;
    if !path.exists() {
        return None;
    }
    Config::load(&path)
        .ok()
        .map(|c| c.client.namespace)
        .filter(|ns| !ns.trim().is_empty())
}

/// Fills in the namespace of a session when neither `--namespace` nor
/// `MEMD_NAMESPACE` gave one: `[client] namespace` of the config file, else,
/// when `from_project`, the project's, from the git root of the working
/// directory (else the daemon's `default`). Every command that opens a
/// session gets the same, so notes imported in a project are what its
/// sessions get; `hook` passes `from_project: false` and derives the
/// project from the event's directory instead.
pub fn resolve_namespace(g: &mut Global, from_project: bool) {
    if g.namespace.is_none() {
        g.namespace = configured_namespace(g);
    }
    if g.namespace.is_none() && from_project {
        g.namespace = std::env::current_dir()
            .ok()
            .and_then(|d| project_namespace(&d));
    }
}

/// The namespace of a project: the name of the git root that holds `dir`,
/// lower-cased, with characters other than letters, digits, `.`, `_` and
/// `-` as `-`, then `-` and the first 8 hex digits of the FNV-1a 64 hash of
/// the root's absolute path (two checkouts with the same name stay apart).
/// `None` outside a git work tree.
pub fn project_namespace(dir: &Path) -> Option<String> {
    let root = git_root(dir)?;
    let name: String = root
        .file_name()
        .map(|n| n.to_string_lossy().to_lowercase())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let hash = crate::session::snapshot::hash(&root.to_string_lossy());
    Some(format!(
        "{}-{}",
        if name.is_empty() { "root" } else { &name },
        &hash[..8]
    ))
}

/// The root of the git work tree that holds `dir`: the nearest directory
/// at or above it that holds `.git` (a directory, or a file in a worktree
/// or submodule).
pub fn repository_root(dir: &Path) -> Option<PathBuf> {
    git_root(dir)
}

fn git_root(dir: &Path) -> Option<PathBuf> {
    let start = std::fs::canonicalize(dir).ok()?;
    start
        .ancestors()
        .find(|d| d.join(".git").exists())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_is_named_by_its_git_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("My App");
        std::fs::create_dir_all(root.join(".git")).unwrap();
        std::fs::create_dir_all(root.join("src/deep")).unwrap();
        let ns = project_namespace(&root.join("src/deep")).unwrap();
        assert!(ns.starts_with("my-app-"), "{ns}");
        assert_eq!(ns.len(), "my-app-".len() + 8);
        assert_eq!(project_namespace(&root).unwrap(), ns, "stable");
        let other = dir.path().join("elsewhere/My App");
        std::fs::create_dir_all(other.join(".git")).unwrap();
        assert_ne!(
            project_namespace(&other).unwrap(),
            ns,
            "same name, other path"
        );
        assert_eq!(project_namespace(&dir.path().join("nope")), None);
    }
}
