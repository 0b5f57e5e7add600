//! `memd doctor`: for the current directory and user, what stands between
//! an agent and its memory — each check with a verdict (pass, fail, or
//! skip: not applicable here), what it found and the one command that
//! fixes it. It reads files and asks a running daemon; it never starts
//! one and changes nothing. Exit 0 when nothing fails, 1 when a check
//! does.
//!
//! The checks' rules are pure functions over what was read (unit-tested
//! below); [`run`] reads, calls them and prints. The hosts' checks are in
//! [`hosts`].

mod hosts;

use std::path::{Path, PathBuf};

use memd_client::exit;
use serde_json::{Value, json};

use super::failures::{self, Failure};
use crate::commands::args::Global;
use crate::commands::{NamespaceSource, Project, cites, client_paths, connect, paths, project};
use crate::config::Config;
use crate::embed::Provider;
use memd_client::proto::cite::Checked;

/// A check's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It works.
    Pass,
    /// It does not: the fix says what to run.
    Fail,
    /// Not applicable here (a host not set up, no team).
    Skip,
}

impl Verdict {
    fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Skip => "skip",
        }
    }
}

/// One check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// What is checked (`daemon`, `claude-code hooks`, …).
    pub name: String,
    /// Its verdict.
    pub verdict: Verdict,
    /// What was found.
    pub detail: String,
    /// The command that fixes it (or makes it apply), when there is one.
    pub fix: Option<String>,
}

fn check(name: &str, verdict: Verdict, detail: impl Into<String>, fix: Option<String>) -> Check {
    Check {
        name: name.into(),
        verdict,
        detail: detail.into(),
        fix,
    }
}

/// The command that gets a daemon running.
const START_DAEMON: &str = "memd service install (or any memd command but status, e.g. memd list)";

/// What the checks read, once.
struct Facts {
    cwd: PathBuf,
    project: Option<Project>,
    namespace: String,
    rule: String,
    config: Result<Config, String>,
    socket: PathBuf,
    /// The daemon's status, or why it could not be asked.
    status: Result<Value, String>,
    /// The namespace's citations checked in this checkout (not reported:
    /// the doctor changes nothing), or why they could not be.
    citations: Result<Vec<Checked>, String>,
}

/// Runs `memd doctor`; returns the exit code.
pub fn run(g: &Global) -> i32 {
    let checks = checks(g);
    use std::io::Write;
    let ok = checks.iter().all(|c| c.verdict != Verdict::Fail);
    let text = if g.json {
        let list: Vec<Value> = checks
            .iter()
            .map(|c| {
                json!({"name": c.name, "verdict": c.verdict.as_str(), "detail": c.detail, "fix": c.fix})
            })
            .collect();
        json!({"ok": ok, "checks": list}).to_string()
    } else {
        human(&checks)
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
    if ok { exit::OK } else { exit::ERROR }
}

/// The human form: one line per check, a `fix:` line under each that
/// has a fix and does not pass, then a summary.
pub fn human(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = Vec::new();
    for c in checks {
        out.push(format!(
            "{:<4}  {:<width$}  {}",
            c.verdict.as_str(),
            c.name,
            c.detail
        ));
        if let (Some(fix), false) = (&c.fix, c.verdict == Verdict::Pass) {
            out.push(format!("{:<4}  {:<width$}  fix: {fix}", "", ""));
        }
    }
    let failed = checks.iter().filter(|c| c.verdict == Verdict::Fail).count();
    out.push(if failed == 0 {
        "all checks pass".to_string()
    } else {
        format!(
            "{failed} check{} failed",
            if failed == 1 { "" } else { "s" }
        )
    });
    out.join("\n")
}

fn checks(g: &Global) -> Vec<Check> {
    let facts = gather(g);
    let mut out = vec![
        daemon_check(&facts),
        check(
            "namespace",
            Verdict::Pass,
            format!("{} ({})", facts.namespace, facts.rule),
            None,
        ),
        trust_check(facts.project.as_ref()),
        sharing_check(&facts),
    ];
    let exe = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .unwrap_or_default();
    let home = std::env::var_os("HOME").map(PathBuf::from);
    out.extend(hosts::checks(&hosts::Where {
        cwd: &facts.cwd,
        root: facts.project.as_ref().map(|p| p.root.as_path()),
        home: home.as_deref(),
        exe: &exe,
    }));
    out.push(embed_check(&facts));
    out.push(capture_check(&facts));
    out.push(failures_check(
        &failures::read(&failures::path()),
        time::OffsetDateTime::now_utc().unix_timestamp(),
    ));
    out.push(team_check(&facts));
    out.push(match &facts.citations {
        Ok(list) => citations_verdict(list),
        Err(_) => check("citations", Verdict::Skip, "no daemon to ask", None),
    });
    out
}

/// The citations check: fails when a memory of the namespace cites code
/// that changed, moved or is gone here (or that cannot be checked).
pub fn citations_verdict(checked: &[Checked]) -> Check {
    let name = "citations";
    if checked.is_empty() {
        return check(
            name,
            Verdict::Skip,
            "no memory of this namespace cites code",
            None,
        );
    }
    let stale: Vec<String> = checked
        .iter()
        .filter(|c| c.verdict.is_stale())
        .map(|c| format!("#{} {} {}", c.id, c.verdict.name(), c.cite.place()))
        .collect();
    if stale.is_empty() {
        return check(
            name,
            Verdict::Pass,
            format!("{} citations, all fresh in this checkout", checked.len()),
            None,
        );
    }
    check(
        name,
        Verdict::Fail,
        format!(
            "{} of {} citations are stale: {}",
            stale.len(),
            checked.len(),
            stale.join(", ")
        ),
        Some("memd check --citations (each with the command that updates or forgets it)".into()),
    )
}

fn gather(g: &Global) -> Facts {
    let cwd = std::env::current_dir().unwrap_or_default();
    let project = project(&cwd);
    let config_path = paths(g).config;
    let config = Config::load(&config_path).map_err(|e| e.to_string());
    let configured = config
        .as_ref()
        .ok()
        .map(|c| c.client.namespace.clone())
        .filter(|ns| !ns.trim().is_empty());
    let (namespace, rule) = match (&g.namespace, configured, &project) {
        (Some(ns), _, _) => {
            let by = if std::env::var("MEMD_NAMESPACE").ok().as_ref() == Some(ns) {
                "MEMD_NAMESPACE"
            } else {
                "--namespace"
            };
            (ns.clone(), format!("given by {by}"))
        }
        (None, Some(ns), _) => (
            ns,
            format!("[client] namespace of {}", config_path.display()),
        ),
        (None, None, Some(p)) => (p.namespace.clone(), project_rule(p)),
        (None, None, None) => (
            "default".into(),
            "not in a git repository: the daemon's default".into(),
        ),
    };
    let mut session = g.clone();
    session.namespace = Some(namespace.clone());
    session.previous_namespaces.clear();
    let socket = client_paths(g).socket;
    let asked = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
        .and_then(|rt| {
            rt.block_on(async {
                let mut client = connect(&session, false).await.map_err(|e| e.message())?;
                let mut status = client.status().await.map_err(|e| e.to_string())?;
                status["server_version"] = json!(client.welcome().server_version);
                let cited = cites::check_namespace(&mut client, Some(&cwd), false)
                    .await
                    .map(|l| l.into_iter().flat_map(|(_, c)| c).collect())
                    .map_err(|e| e.message());
                Ok((status, cited))
            })
        });
    let (status, citations) = match asked {
        Ok((status, cited)) => (Ok(status), cited),
        Err(e) => (Err(e.clone()), Err(e)),
    };
    Facts {
        cwd,
        project,
        namespace,
        rule,
        config,
        socket,
        status,
        citations,
    }
}

fn project_rule(p: &Project) -> String {
    let root = p.root.display();
    match p.source {
        NamespaceSource::File => format!("named by {root}/.memd.toml, which you trust"),
        NamespaceSource::Origin => format!("the origin of the repository at {root}"),
        NamespaceSource::GitDir => {
            format!("the repository at {root} has no origin: its name and a hash of its path")
        }
    }
}

fn daemon_check(f: &Facts) -> Check {
    match &f.status {
        Ok(s) => check(
            "daemon",
            Verdict::Pass,
            format!(
                "memd {} answers on {}",
                s["server_version"].as_str().unwrap_or("?"),
                f.socket.display()
            ),
            None,
        ),
        Err(why) => check(
            "daemon",
            Verdict::Fail,
            format!("{why} (doctor starts none)"),
            Some(START_DAEMON.into()),
        ),
    }
}

fn trust_check(p: Option<&Project>) -> Check {
    match p.and_then(|p| p.untrusted.as_ref().map(|u| (p, u))) {
        Some((p, u)) => {
            let path = u.path.display().to_string();
            let quoted = shlex::try_quote(&path).map_or(path.clone(), std::borrow::Cow::into_owned);
            check(
                "project file",
                Verdict::Fail,
                u.note(&p.namespace),
                Some(format!("memd trust {quoted}")),
            )
        }
        None if p.is_some_and(|p| p.source == NamespaceSource::File) => check(
            "project file",
            Verdict::Pass,
            "the repository's .memd.toml names the namespace and you trust it",
            None,
        ),
        None => check(
            "project file",
            Verdict::Skip,
            "no .memd.toml names a namespace here",
            None,
        ),
    }
}

/// Whether a namespace is shared by the team's globs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sharing {
    /// A glob matches the namespace.
    Shared(String),
    /// A glob (as written, or as an origin URL it spells normalised)
    /// matches the directory's origin-derived name, but none matches the
    /// namespace in use.
    Missed {
        /// The glob.
        glob: String,
        /// The origin-derived name it matches.
        origin: String,
    },
    /// No glob matches either.
    Local,
}

/// The sharing of `namespace` under `globs`, given the name the
/// directory's origin derives (`github.com/acme/api`), if any. A glob
/// written as a clone URL (`git@github.com:acme/*`,
/// `https://github.com/Acme/*.git`) is read in the origin's normalised
/// spelling too, since that is what it was meant to match.
pub fn sharing(globs: &[String], namespace: &str, origin: Option<&str>) -> Sharing {
    use crate::store::team::conn::config::glob_matches;
    if let Some(g) = globs.iter().find(|g| glob_matches(g, namespace)) {
        return Sharing::Shared(g.clone());
    }
    let Some(origin) = origin else {
        return Sharing::Local;
    };
    let spelled =
        |g: &str| crate::commands::normalize_url(g, Path::new("/")).filter(|n| !n.starts_with('/'));
    for g in globs {
        if glob_matches(g, origin) || spelled(g).is_some_and(|n| glob_matches(&n, origin)) {
            return Sharing::Missed {
                glob: g.clone(),
                origin: origin.to_string(),
            };
        }
    }
    Sharing::Local
}

/// The origin-derived name of a project (`None`: no origin, or a local
/// path).
fn origin_name(p: &Project) -> Option<&str> {
    let local = p.identity.starts_with('/');
    (!local && p.source != NamespaceSource::GitDir).then_some(p.identity.as_str())
}

fn sharing_check(f: &Facts) -> Check {
    let team = match &f.config {
        Ok(c) if c.team.enabled_with(|k| std::env::var(k).ok()) => &c.team,
        Ok(_) => {
            return check("shared", Verdict::Skip, "no team configured", None);
        }
        Err(e) => {
            return check(
                "shared",
                Verdict::Fail,
                format!("the config file cannot be read: {e}"),
                Some("memd config show".into()),
            );
        }
    };
    let origin = f.project.as_ref().and_then(origin_name);
    match sharing(&team.namespaces, &f.namespace, origin) {
        Sharing::Shared(g) => check(
            "shared",
            Verdict::Pass,
            format!("{} is shared with the team (glob {g})", f.namespace),
            None,
        ),
        Sharing::Missed { glob, origin } => check(
            "shared",
            Verdict::Fail,
            match spelled_glob(&glob) {
                Some(_) => format!(
                    "the team glob `{glob}` is written as a clone URL; namespaces are spelled \
                     without scheme, user or `.git` (this directory's is `{}`), so it \
                     matches none and its memories are not shared",
                    f.namespace
                ),
                None => missed_note(&glob, &origin, &f.namespace),
            },
            Some(if let Some(g) = spelled_glob(&glob) {
                format!("write the glob as namespaces are spelled: \"{g}\" in [team] namespaces")
            } else {
                format!(
                    "add \"{}\" to [team] namespaces, or remove the override that names it",
                    f.namespace
                )
            }),
        ),
        Sharing::Local => check(
            "shared",
            Verdict::Pass,
            format!(
                "{} stays on this machine (no [team] namespaces glob matches it)",
                f.namespace
            ),
            None,
        ),
    }
}

/// A glob written as a clone URL (`git@github.com:acme/*`), in the
/// spelling of a namespace (`github.com/acme/*`); `None` for any other.
fn spelled_glob(glob: &str) -> Option<String> {
    let url = glob.contains("://") || glob.contains('@') || glob.ends_with(".git");
    url.then(|| crate::commands::normalize_url(glob, Path::new("/")))
        .flatten()
        .filter(|n| !n.starts_with('/'))
}

/// The warning for a directory whose origin a team glob matches but whose
/// namespace none does.
fn missed_note(glob: &str, origin: &str, namespace: &str) -> String {
    format!(
        "the team glob `{glob}` matches this repository's origin ({origin}) but not the \
         namespace in use, `{namespace}`: its memories are not shared"
    )
}

/// The one stderr line `memd team status` and `memd add` print when the
/// directory's origin matches a `[team] namespaces` glob but `namespace`
/// does not (an override names another), `None` otherwise.
pub fn glob_warning(g: &Global, namespace: &str) -> Option<String> {
    let config = Config::load(&paths(g).config).ok()?;
    if !config.team.enabled_with(|k| std::env::var(k).ok()) {
        return None;
    }
    let p = project(&std::env::current_dir().ok()?)?;
    match sharing(&config.team.namespaces, namespace, origin_name(&p)) {
        Sharing::Missed { glob, origin } => Some(format!(
            "memd: note: {} (memd doctor says more)",
            missed_note(&glob, &origin, namespace)
        )),
        _ => None,
    }
}

/// The embedder's verdict: the configured provider, whether the local
/// model's files are there (`missing`), and what the daemon says
/// (`status`: its `embedder`, `None` when it cannot be asked).
pub fn embed_verdict(
    provider: Provider,
    dir: &Path,
    missing: &[&str],
    status: Option<&Value>,
) -> Check {
    let name = "embedder";
    let fetch = Some("memd model fetch".to_string());
    let shown = dir.display();
    let state = status.and_then(|s| s["state"].as_str());
    // `auto` without the model's files is search without vectors, as
    // configured: the daemon's "unavailable" says no more than that.
    let chose_none = provider == Provider::Auto && !missing.is_empty();
    if matches!(state, Some("unavailable" | "model_mismatch")) && !chose_none {
        let reason = status.and_then(|s| s["reason"].as_str()).unwrap_or("");
        let fix = if state == Some("model_mismatch") {
            Some("memd reembed".to_string())
        } else if missing.is_empty() {
            Some("memd config show (check [embed])".to_string())
        } else {
            fetch
        };
        return check(
            name,
            Verdict::Fail,
            format!(
                "{} embedder {}: {reason}",
                provider.as_str(),
                state.unwrap_or("")
            ),
            fix,
        );
    }
    match provider {
        Provider::None => check(
            name,
            Verdict::Skip,
            "off ([embed] provider = \"none\"): lexical and fuzzy search only",
            None,
        ),
        Provider::Local if !missing.is_empty() => check(
            name,
            Verdict::Fail,
            format!(
                "[embed] provider = \"local\" but the model is not in {shown} (missing {})",
                missing.join(", ")
            ),
            fetch,
        ),
        Provider::Auto if !missing.is_empty() => check(
            name,
            Verdict::Skip,
            format!("no local model in {shown}: lexical and fuzzy search only"),
            fetch,
        ),
        Provider::Auto | Provider::Local => {
            let detail = match state {
                Some(s) => format!("local model in {shown}: {s}"),
                None if status.is_some() => format!(
                    "local model in {shown}, but the running daemon has no embedder: it \
                     loads the model when it starts again (memd stop)"
                ),
                None => format!("local model in {shown}"),
            };
            check(name, Verdict::Pass, detail, None)
        }
        Provider::Ollama | Provider::Openai => check(
            name,
            Verdict::Pass,
            format!(
                "{} embedder: {}",
                provider.as_str(),
                state.unwrap_or("configured")
            ),
            None,
        ),
    }
}

fn embed_check(f: &Facts) -> Check {
    let Ok(config) = &f.config else {
        return check(
            "embedder",
            Verdict::Skip,
            "the config file cannot be read",
            None,
        );
    };
    let dir = crate::embed::model_dir(&config.embed, |k| std::env::var_os(k));
    let missing = crate::embed::missing_model_files(&dir);
    let status = f.status.as_ref().ok().map(|s| &s["embedder"]);
    embed_verdict(config.embed.provider, &dir, &missing, status)
}

fn capture_check(f: &Facts) -> Check {
    let config = f.config.as_ref().ok().cloned().unwrap_or_default();
    let (on, why) = if !config.capture.enabled {
        (false, "[capture] enabled = false")
    } else if !config.capture.captures(&f.cwd) {
        (false, "a [capture] exclude pattern matches this directory")
    } else if crate::commands::project_capture_off(&f.cwd) {
        (false, "the repository's .memd.toml says capture = false")
    } else {
        (true, "")
    };
    let detail = if on {
        format!(
            "on here: the hooks store each conversation's turns, kept {} days \
             (turn off: [capture] enabled = false, or capture = false in .memd.toml)",
            config.capture.keep_days
        )
    } else {
        format!("off here: {why}")
    };
    check("capture", Verdict::Pass, detail, None)
}

/// A day, in seconds: a hook failure younger than this fails the check.
const RECENT: i64 = 24 * 60 * 60;

/// The hook failures' verdict at `now` (Unix seconds).
pub fn failures_check(list: &[Failure], now: i64) -> Check {
    let name = "hook failures";
    let Some(last) = list.last() else {
        return check(name, Verdict::Pass, "none recorded", None);
    };
    let recent = list.iter().filter(|f| now - f.at < RECENT).count();
    let at = crate::clock::format_unix(u64::try_from(last.at).unwrap_or(0));
    let detail = format!(
        "{} recorded ({recent} in the last 24 h); last at {at}: {} {} {}",
        list.len(),
        last.host,
        last.event,
        last.code
    );
    if recent == 0 {
        return check(name, Verdict::Pass, format!("none in 24 h; {detail}"), None);
    }
    let fix = match last.code.as_str() {
        "unreachable" | "connection" | "timeout" => START_DAEMON.to_string(),
        "input" => format!("memd setup {} (the host gave no hook event)", last.host),
        code => format!("memd help troubleshooting (error code {code})"),
    };
    check(name, Verdict::Fail, detail, Some(fix))
}

/// The team's verdict from the config and the daemon's status.
fn team_check(f: &Facts) -> Check {
    let name = "team";
    let enabled = f
        .config
        .as_ref()
        .is_ok_and(|c| c.team.enabled_with(|k| std::env::var(k).ok()));
    if !enabled {
        return check(name, Verdict::Skip, "no team configured", None);
    }
    let status = match &f.status {
        Ok(s) => s,
        Err(_) => {
            return check(
                name,
                Verdict::Fail,
                "configured, but no daemon runs to connect to it",
                Some(START_DAEMON.into()),
            );
        }
    };
    team_verdict(&status["team"], &f.namespace)
}

/// The team's verdict from the daemon's `team` status (what `memd team
/// status` shows) for `namespace`.
pub fn team_verdict(team: &Value, namespace: &str) -> Check {
    let name = "team";
    if team.is_null() {
        return check(
            name,
            Verdict::Fail,
            "configured, but the running daemon has no team (it started before [team] was set)",
            Some("memd stop (the next command starts it with the config)".into()),
        );
    }
    let url = team["url"].as_str().unwrap_or("?");
    if team["connected"] != Value::Bool(true) {
        return check(
            name,
            Verdict::Fail,
            format!(
                "cannot reach {url}: {}",
                team["last_error"].as_str().unwrap_or("not connected")
            ),
            Some("memd team status".into()),
        );
    }
    let rights: Vec<(&str, &str)> = team["rights"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    (
                        r["glob"].as_str().unwrap_or(""),
                        r["access"].as_str().unwrap_or(""),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let here = rights
        .iter()
        .find(|(g, _)| crate::store::team::conn::config::glob_matches(g, namespace));
    if let Some((glob, access)) = here
        && !matches!(*access, "write" | "review" | "admin")
    {
        return check(
            name,
            Verdict::Fail,
            format!("connected to {url}, but this machine may only {access} {glob}"),
            Some(format!(
                "memd team grant ROLE {glob} write (by a team admin)"
            )),
        );
    }
    let list: Vec<String> = rights.iter().map(|(g, a)| format!("{g}: {a}")).collect();
    check(
        name,
        Verdict::Pass,
        format!("connected to {url}; rights {}", list.join(", ")),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_glob_that_matches_the_origin_but_not_the_name_is_missed() {
        let globs = vec!["github.com/acme/*".to_string()];
        let origin = Some("github.com/acme/api");
        assert_eq!(
            sharing(&globs, "github.com/acme/api", origin),
            Sharing::Shared("github.com/acme/*".into())
        );
        assert_eq!(
            sharing(&globs, "my-override", origin),
            Sharing::Missed {
                glob: "github.com/acme/*".into(),
                origin: "github.com/acme/api".into()
            }
        );
        assert_eq!(sharing(&globs, "my-override", None), Sharing::Local);
        assert_eq!(
            sharing(&globs, "x", Some("gitlab.com/acme/api")),
            Sharing::Local
        );
        // A glob written as a clone URL means the origin it spells.
        for url in ["git@github.com:Acme/*.git", "https://github.com/acme/*"] {
            assert_eq!(
                sharing(&[url.to_string()], "github.com/acme/api", origin),
                Sharing::Missed {
                    glob: url.into(),
                    origin: "github.com/acme/api".into()
                },
                "{url}"
            );
        }
    }

    #[test]
    fn a_recent_hook_failure_fails_an_old_one_is_shown() {
        let f = |at| Failure {
            at,
            host: "claude-code".into(),
            event: "SessionStart".into(),
            code: "unreachable".into(),
        };
        let now = 1_000_000;
        assert_eq!(failures_check(&[], now).verdict, Verdict::Pass);
        let old = failures_check(&[f(now - RECENT - 1)], now);
        assert_eq!(old.verdict, Verdict::Pass);
        assert!(old.detail.contains("SessionStart unreachable"), "{old:?}");
        let recent = failures_check(&[f(now - RECENT - 1), f(now - 60)], now);
        assert_eq!(recent.verdict, Verdict::Fail);
        assert!(
            recent.detail.contains("2 recorded (1 in the last 24 h)"),
            "{recent:?}"
        );
        assert!(recent.fix.unwrap().contains("memd service install"));
    }

    #[test]
    fn the_embedder_fails_only_when_configured_and_missing() {
        let dir = Path::new("/m");
        let gone = ["model.safetensors"];
        let v = |p, missing: &[&str], status: Option<&Value>| {
            embed_verdict(p, dir, missing, status).verdict
        };
        assert_eq!(v(Provider::Local, &gone, None), Verdict::Fail);
        assert_eq!(v(Provider::Auto, &gone, None), Verdict::Skip);
        assert_eq!(v(Provider::None, &gone, None), Verdict::Skip);
        assert_eq!(v(Provider::Local, &[], None), Verdict::Pass);
        let broken = json!({"state": "unavailable", "reason": "bad file"});
        assert_eq!(v(Provider::Auto, &[], Some(&broken)), Verdict::Fail);
        assert_eq!(v(Provider::Auto, &gone, Some(&broken)), Verdict::Skip);
        let ready = json!({"state": "ready"});
        assert_eq!(v(Provider::Auto, &[], Some(&ready)), Verdict::Pass);
    }

    #[test]
    fn the_team_fails_when_unreachable_or_read_only_here() {
        assert_eq!(team_verdict(&Value::Null, "ns").verdict, Verdict::Fail);
        let down = json!({"url": "postgres://x", "connected": false, "last_error": "refused"});
        let c = team_verdict(&down, "ns");
        assert_eq!(c.verdict, Verdict::Fail);
        assert!(c.detail.contains("refused"));
        let read = json!({"url": "u", "connected": true,
            "rights": [{"glob": "github.com/acme/*", "access": "read"}]});
        assert_eq!(
            team_verdict(&read, "github.com/acme/api").verdict,
            Verdict::Fail
        );
        assert_eq!(team_verdict(&read, "elsewhere").verdict, Verdict::Pass);
        let write = json!({"url": "u", "connected": true,
            "rights": [{"glob": "github.com/acme/*", "access": "write"}]});
        assert_eq!(
            team_verdict(&write, "github.com/acme/api").verdict,
            Verdict::Pass
        );
    }

    #[test]
    fn stale_citations_fail_with_the_command_that_lists_them() {
        use memd_client::proto::cite::{Cite, Verdict as V};
        let at = |id, place: &str, verdict| Checked {
            id,
            cite: Cite::parse(place).unwrap(),
            verdict,
            now: None,
            reason: None,
        };
        assert_eq!(citations_verdict(&[]).verdict, Verdict::Skip);
        let fresh = [at(1, "a.rs:1", V::Fresh)];
        assert_eq!(citations_verdict(&fresh).verdict, Verdict::Pass);
        let c = citations_verdict(&[at(1, "a.rs:1", V::Fresh), at(2, "b.rs:3-4", V::Gone)]);
        assert_eq!(c.verdict, Verdict::Fail);
        assert!(c.detail.contains("#2 gone b.rs:3-4"), "{}", c.detail);
        assert!(c.fix.unwrap().contains("memd check --citations"));
    }

    #[test]
    fn the_human_form_has_a_fix_line_under_what_fails() {
        let text = human(&[
            check("daemon", Verdict::Pass, "up", None),
            check(
                "team",
                Verdict::Fail,
                "down",
                Some("memd team status".into()),
            ),
            check("gemini mcp", Verdict::Skip, "not set up", None),
        ]);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(lines[1].starts_with("fail  team") && lines[1].ends_with("down"));
        assert!(lines[2].trim_start().starts_with("fix: memd team status"));
        assert_eq!(lines[4], "1 check failed");
    }
}
