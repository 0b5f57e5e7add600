//! The client side of a session: the paths the global flags select, the
//! namespace a session opens in when no flag names one, and connecting to
//! the daemon (starting one when allowed).

use std::path::{Path, PathBuf};

use memd_client::autostart::{self, StartSpec};
use memd_client::{Client, ConnectOptions, DriftPolicy};

use super::CommandError;
use super::args::Global;
use super::trust::Verdict;
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

/// The CLI's way in: `agent-cli` when an agent host runs it (its shell
/// tool's environment names the host's session), `cli` for a person.
fn cli_via() -> &'static str {
    let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty());
    if [
        "CLAUDECODE",
        "CLAUDE_CODE_SESSION_ID",
        "CODEX_THREAD_ID",
        "GEMINI_SESSION_ID",
    ]
    .into_iter()
    .any(set)
    {
        "agent-cli"
    } else {
        "cli"
    }
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
    opts.previous_namespaces.clone_from(&g.previous_namespaces);
    opts.via = g.via.unwrap_or_else(cli_via).into();
    let spec = if autostart_allowed && !g.no_autostart {
        // A daemon started on a config file it refuses would only exit:
        // say why now (a daemon already running keeps the config it read).
        if !paths.socket.exists()
            && let Err(e) = Config::load(&paths.config)
        {
            return Err(CommandError::Usage(format!("cannot start the daemon: {e}")));
        }
        // Nor on another user's data dir: the daemon refuses it.
        if !paths.socket.exists()
            && let Err(e) = crate::daemon::owner::check_existing(&paths.data_dir)
        {
            return Err(CommandError::Client(memd_client::Error::Autostart(e)));
        }
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
/// when `from_project`, the project's (see [`project`]) for the working
/// directory (else the daemon's `default`). Every command that opens a
/// session gets the same, so notes imported in a project are what its
/// sessions get; `hook` passes `from_project: false` and calls
/// [`apply_project`] with the event's directory instead.
pub fn resolve_namespace(g: &mut Global, from_project: bool) {
    if g.namespace.is_none() {
        g.namespace = configured_namespace(g);
    }
    if g.namespace.is_none()
        && from_project
        && let Ok(dir) = std::env::current_dir()
    {
        apply_project(g, &dir);
    }
}

/// Gives `g` the namespace of the project that holds `dir` (and the name
/// an earlier derivation gave that checkout, whose memories move to it),
/// when there is one and `g` has no namespace yet. A `.memd.toml` namespace
/// the person has not trusted is not used, and one line on stderr says so
/// (the hooks' and the MCP server's stderr included).
pub fn apply_project(g: &mut Global, dir: &Path) {
    if g.namespace.is_some() {
        return;
    }
    if let Some(p) = project(dir) {
        if let Some(u) = &p.untrusted {
            eprintln!("memd: {}", u.note(&p.namespace));
        }
        g.previous_namespaces = p.previous;
        g.namespace = Some(p.namespace);
    }
}

/// Where a project's namespace came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamespaceSource {
    /// `namespace` in the `.memd.toml` at the work tree's root, a file the
    /// person trusts (`memd trust`).
    File,
    /// The repository's normalised `origin` URL (`github.com/acme/api`).
    Origin,
    /// The repository's name and a hash of its identity (`api-6eacb40f`):
    /// no `origin`, or one that is a local path.
    GitDir,
}

/// A git project and its namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    /// The root of the work tree.
    pub root: PathBuf,
    /// What identifies the repository: the normalised `origin` URL, else
    /// the common git directory's absolute path.
    pub identity: String,
    /// The namespace.
    pub namespace: String,
    /// Where it came from.
    pub source: NamespaceSource,
    /// The names earlier derivations gave this checkout (whose memories
    /// move to `namespace`): `<name>-<hash>` of the repository's identity,
    /// then of the work tree's path; each only when it is not `namespace`,
    /// and none when a `.memd.toml` names the namespace.
    pub previous: Vec<String>,
    /// A namespace the work tree's `.memd.toml` names but that is not used:
    /// the person has not trusted the file (or it changed since).
    pub untrusted: Option<Untrusted>,
}

/// A `.memd.toml` whose namespace is not used because the person has not
/// trusted the file ([`super::trust`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untrusted {
    /// The file (its directory canonical).
    pub path: PathBuf,
    /// The namespace it names.
    pub namespace: String,
    /// It was trusted with other content: it changed since.
    pub changed: bool,
}

impl Untrusted {
    /// The one line that says so: what the file names, the namespace
    /// `used` instead, and the command that trusts it.
    pub fn note(&self, used: &str) -> String {
        let path = self.path.display().to_string();
        let quoted =
            shlex::try_quote(&path).map_or_else(|_| path.clone(), std::borrow::Cow::into_owned);
        let ns = &self.namespace;
        if self.changed {
            format!(
                "{path} changed since you trusted it: its namespace `{ns}` is not used (this \
                 directory uses `{used}`) until you trust it again: memd trust {quoted}"
            )
        } else {
            format!(
                "{path} names namespace `{ns}`, but you have not trusted this file: this \
                 directory uses `{used}`; to use `{ns}`, check the file, then: memd trust {quoted}"
            )
        }
    }
}

/// The file at a work tree's root that can name the project's namespace.
pub const PROJECT_FILE: &str = ".memd.toml";

/// The project that holds `dir`, `None` outside a git work tree.
///
/// Its namespace is the same for every worktree and every clone of one
/// repository, on every machine: `namespace = "…"` in `.memd.toml` at the
/// work tree's root when the file says so and the person trusts the file
/// (`memd trust`; otherwise [`Project::untrusted`] says what it named); else derived
/// from the repository's identity — its `origin` URL, normalised (scheme,
/// user, port, a trailing `.git` and `/` dropped, `host:path` as
/// `host/path`, lower-cased: `github.com/acme/api`), which is the
/// namespace itself. A repository without an `origin`, or whose `origin` is
/// a local path, is named by its name (the identity's last part,
/// lower-cased, characters other than letters, digits, `.`, `_`, `-` as
/// `-`), a `-`, and the first 8 hex digits of the FNV-1a 64 hash of its
/// identity (the `origin` path made absolute, or its common git directory,
/// the one every worktree shares): e.g. `shop-1f0c3a9e` — no `/`, so never
/// read as a host's path.
pub fn project(dir: &Path) -> Option<Project> {
    let root = git_root(dir)?;
    let common = common_git_dir(&root);
    let origin = common.as_deref().and_then(|c| origin_url(c, &root));
    let (identity, source) = match (&origin, &common) {
        (Some(url), _) => (url.clone(), NamespaceSource::Origin),
        (None, Some(c)) => (c.display().to_string(), NamespaceSource::GitDir),
        (None, None) => (root.display().to_string(), NamespaceSource::GitDir),
    };
    let name = identity
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .find(|part| !part.is_empty() && *part != ".git")
        .map(|n| n.strip_suffix(".git").unwrap_or(n))
        .unwrap_or_default();
    let hashed = namespace_name(name, &identity);
    // A local path is no host's: such an origin is named as no origin is.
    let (derived, source) = if source == NamespaceSource::Origin && !identity.starts_with('/') {
        (identity.clone(), source)
    } else {
        (hashed.clone(), NamespaceSource::GitDir)
    };
    let by_path = namespace_name(
        &root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        &root.to_string_lossy(),
    );
    let (namespace, source, untrusted) = match project_file_namespace(&root) {
        Some((ns, _, Verdict::Trusted)) => (ns, NamespaceSource::File, None),
        // Naming the derived namespace itself needs no trust.
        Some((ns, _, _)) if ns == derived => (derived, source, None),
        Some((ns, path, verdict)) => (
            derived,
            source,
            Some(Untrusted {
                path,
                namespace: ns,
                changed: verdict == Verdict::Changed,
            }),
        ),
        None => (derived, source, None),
    };
    // Earlier derived names move into the derived one only: a namespace a
    // file names takes nothing along (another checkout may still derive
    // the same name).
    let mut previous = Vec::new();
    if source != NamespaceSource::File {
        for name in [hashed, by_path] {
            if name != namespace && !previous.contains(&name) {
                previous.push(name);
            }
        }
    }
    Some(Project {
        root,
        identity,
        namespace,
        source,
        previous,
        untrusted,
    })
}

/// `<name>-<8 hex digits of the FNV-1a 64 hash of identity>`, the name
/// lower-cased and made of letters, digits, `.`, `_` and `-`.
fn namespace_name(name: &str, identity: &str) -> String {
    let name: String = name
        .to_lowercase()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let hash = crate::session::snapshot::hash(identity);
    format!(
        "{}-{}",
        if name.is_empty() { "root" } else { &name },
        &hash[..8]
    )
}

/// The namespace of a project: see [`project`]. `None` outside a git work
/// tree.
pub fn project_namespace(dir: &Path) -> Option<String> {
    project(dir).map(|p| p.namespace)
}

/// Whether the `.memd.toml` of the work tree that holds `dir` turns
/// capture off (`capture = false`). Trusted or not: it only keeps a
/// repository's own conversations out of memory, which is what whoever
/// wrote the file asks, and it can send nothing anywhere.
pub fn project_capture_off(dir: &Path) -> bool {
    #[derive(serde::Deserialize)]
    struct File {
        capture: Option<bool>,
    }
    let Some(p) = project(dir) else {
        return false;
    };
    std::fs::read_to_string(p.root.join(PROJECT_FILE))
        .ok()
        .and_then(|text| toml::from_str::<File>(&text).ok())
        .and_then(|f| f.capture)
        == Some(false)
}

/// `namespace` in the work tree's `.memd.toml`, when the file names one,
/// with the path the file is trusted under and whether it is (the content
/// read once, for both). A file that cannot be read as TOML is reported on
/// stderr and not used.
fn project_file_namespace(root: &Path) -> Option<(String, PathBuf, Verdict)> {
    let path = root.join(PROJECT_FILE);
    let bytes = std::fs::read(&path).ok()?;
    match parse_project_file(&bytes) {
        Ok(ns) => {
            let ns = ns?;
            let key = super::trust::key_path(&path).unwrap_or(path);
            let verdict = super::trust::verdict(&key, &bytes);
            Some((ns, key, verdict))
        }
        Err(e) => {
            eprintln!(
                "memd: {} is not valid ({e}); the project's namespace is derived instead",
                path.display(),
            );
            None
        }
    }
}

/// The `namespace` a `.memd.toml`'s content names (`None`: none).
///
/// # Errors
/// The TOML error (or that it is not UTF-8).
pub fn parse_project_file(bytes: &[u8]) -> Result<Option<String>, String> {
    #[derive(serde::Deserialize)]
    struct File {
        namespace: Option<String>,
    }
    let text = std::str::from_utf8(bytes).map_err(|_| "it is not UTF-8 text".to_string())?;
    toml::from_str::<File>(text)
        .map(|f| f.namespace.filter(|ns| !ns.trim().is_empty()))
        .map_err(|e| e.message().to_string())
}

/// The repository's common git directory: the `.git` directory, or for a
/// worktree (whose `.git` is a file naming its own git directory) the one
/// that directory's `commondir` names.
fn common_git_dir(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    let git_dir = if dot_git.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        let target = text.trim().strip_prefix("gitdir:")?.trim();
        root.join(target)
    };
    let common = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(c) => git_dir.join(c.trim()),
        Err(_) => git_dir,
    };
    std::fs::canonicalize(common).ok()
}

/// `remote.origin.url` in the repository's config, normalised.
fn origin_url(common: &Path, root: &Path) -> Option<String> {
    let config = std::fs::read_to_string(common.join("config")).ok()?;
    let mut in_origin = false;
    for line in config.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let section: String = line.chars().filter(|c| !c.is_whitespace()).collect();
            in_origin = section.eq_ignore_ascii_case("[remote\"origin\"]");
            continue;
        }
        if !in_origin {
            continue;
        }
        if let Some((key, value)) = line.split_once('=')
            && key.trim().eq_ignore_ascii_case("url")
        {
            let value = value.trim().trim_matches('"');
            return normalize_url(value, root);
        }
    }
    None
}

/// An `origin` URL as the same text for every way of writing it: https,
/// ssh and scp-like `user@host:path` of one repository agree; a local path
/// (or `file://`) is made absolute.
pub fn normalize_url(url: &str, root: &Path) -> Option<String> {
    let url = url.trim();
    if url.is_empty() {
        return None;
    }
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r)) => (Some(s.to_ascii_lowercase()), r),
        None => (None, url),
    };
    let local = match scheme.as_deref() {
        Some("file") => true,
        Some(_) => false,
        // scp-like `[user@]host:path` has a colon before any slash.
        None => !rest
            .split('/')
            .next()
            .is_some_and(|first| first.contains(':')),
    };
    let text = if local {
        let path = Path::new(rest);
        let path = if path.is_absolute() {
            path.to_path_buf()
        } else {
            root.join(path)
        };
        std::fs::canonicalize(&path)
            .unwrap_or(path)
            .display()
            .to_string()
    } else {
        let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
        let (host, path) = match scheme {
            Some(_) => rest.split_once('/').unwrap_or((rest, "")),
            None => rest.split_once(':').unwrap_or((rest, "")),
        };
        let host = host.split(':').next().unwrap_or(host);
        format!("{host}/{}", path.trim_start_matches('/'))
    };
    let text = text.trim_end_matches('/');
    let text = text
        .strip_suffix(".git")
        .unwrap_or(text)
        .trim_end_matches('/');
    Some(text.to_lowercase())
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

    #[test]
    fn every_way_of_writing_an_origin_is_one_identity() {
        let root = Path::new("/nowhere/checkout");
        let github = [
            "https://github.com/Acme/Shop.git",
            "https://user@github.com/acme/shop/",
            "git@github.com:acme/shop.git",
            "ssh://git@github.com:22/acme/shop.git",
            "git+ssh://git@github.com/acme/shop",
        ];
        for url in github {
            assert_eq!(
                normalize_url(url, root).as_deref(),
                Some("github.com/acme/shop"),
                "{url}"
            );
        }
        assert_eq!(
            normalize_url("/srv/git/shop.git", root).as_deref(),
            Some("/srv/git/shop")
        );
        assert_eq!(
            normalize_url("file:///srv/git/shop.git/", root).as_deref(),
            Some("/srv/git/shop")
        );
        assert_eq!(
            normalize_url("../upstream", root).as_deref(),
            Some("/nowhere/checkout/../upstream"),
            "relative to the work tree (made canonical when it exists)"
        );
        assert_eq!(normalize_url(" ", root), None);
    }

    #[test]
    fn the_namespace_is_the_repositorys_a_file_can_name_it() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        std::fs::create_dir_all(a.join(".git")).unwrap();
        std::fs::write(
            a.join(".git/config"),
            "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = x\n[remote \"origin\"]\n\turl = git@github.com:acme/shop.git\n",
        )
        .unwrap();
        let p = project(&a).unwrap();
        assert_eq!(p.identity, "github.com/acme/shop");
        assert_eq!(p.source, NamespaceSource::Origin);
        assert_eq!(p.namespace, "github.com/acme/shop");
        // What earlier derivations named it: by the identity, by the path.
        assert_eq!(p.previous.len(), 2, "{p:?}");
        assert!(p.previous[0].starts_with("shop-"), "{p:?}");
        assert!(p.previous[1].starts_with("a-"), "{p:?}");
        // A local path is no host: named by its name and a hash.
        std::fs::create_dir_all(dir.path().join("b/.git")).unwrap();
        std::fs::write(
            dir.path().join("b/.git/config"),
            "[remote \"origin\"]\n\turl = /srv/git/blog.git\n",
        )
        .unwrap();
        let local = project(&dir.path().join("b")).unwrap();
        assert_eq!(local.source, NamespaceSource::GitDir);
        assert!(local.namespace.starts_with("blog-") && !local.namespace.contains('/'));
        assert!(local.previous.iter().all(|n| n != &local.namespace));
        // A worktree: its `.git` file names a git dir whose `commondir`
        // leads back to the repository.
        let wt = dir.path().join("elsewhere/feature");
        std::fs::create_dir_all(a.join(".git/worktrees/feature")).unwrap();
        std::fs::write(a.join(".git/worktrees/feature/commondir"), "../..\n").unwrap();
        std::fs::create_dir_all(&wt).unwrap();
        std::fs::write(
            wt.join(".git"),
            format!("gitdir: {}\n", a.join(".git/worktrees/feature").display()),
        )
        .unwrap();
        assert_eq!(project(&wt).unwrap().namespace, p.namespace);
        // A file nobody trusted: its namespace is only reported (the
        // trusted case runs with the real binary, tests/it).
        std::fs::write(a.join(PROJECT_FILE), "namespace = \"team-shop\"\n").unwrap();
        let named = project(&a).unwrap();
        assert_eq!(
            (named.namespace.as_str(), named.source),
            (p.namespace.as_str(), NamespaceSource::Origin)
        );
        let untrusted = named.untrusted.unwrap();
        assert_eq!(untrusted.namespace, "team-shop");
        assert_eq!(
            untrusted.path,
            std::fs::canonicalize(&a).unwrap().join(PROJECT_FILE)
        );
        assert!(!untrusted.changed);
        let note = untrusted.note(&p.namespace);
        assert!(
            note.contains("team-shop")
                && note.contains(&p.namespace)
                && note.contains("memd trust"),
            "{note}"
        );
        // Naming the derived namespace needs no trust, and no note.
        std::fs::write(
            a.join(PROJECT_FILE),
            format!("namespace = \"{}\"\n", p.namespace),
        )
        .unwrap();
        assert_eq!(project(&a).unwrap(), p);
        std::fs::write(a.join(PROJECT_FILE), "namespace = [").unwrap();
        assert_eq!(
            project(&a).unwrap().namespace,
            p.namespace,
            "a bad file is not used"
        );
    }
}
