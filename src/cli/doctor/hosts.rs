//! The hosts' checks of `memd doctor`: for Claude Code, Codex CLI and
//! Gemini CLI, memd's hooks and MCP server where `memd setup` writes them
//! (the user's files and the repository's), each present and running this
//! binary; Claude Code's project setup started outside the project's root;
//! Codex's trust of the hooks. A host with nothing of memd in its files
//! is not set up: skipped, not failed.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{Check, Verdict, check};
use crate::cli::hook::Host;
use crate::cli::setup::{self, Scope};

/// Where the checks look.
pub struct Where<'a> {
    /// The working directory.
    pub cwd: &'a Path,
    /// The repository's root, when in one.
    pub root: Option<&'a Path>,
    /// The user's home.
    pub home: Option<&'a Path>,
    /// This binary (canonical).
    pub exe: &'a Path,
}

/// memd's entries in one scope's files of a host.
struct Setup {
    scope: Scope,
    hooks_path: PathBuf,
    hooks: Value,
    server_path: PathBuf,
    /// The command of memd's MCP server entry, when there is one.
    server: Option<String>,
}

/// The checks of every host.
pub fn checks(w: &Where) -> Vec<Check> {
    [Host::ClaudeCode, Host::Codex, Host::Gemini]
        .into_iter()
        .flat_map(|h| host_checks(w, h))
        .collect()
}

fn read_json(path: &Path) -> Value {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

/// The command of memd's MCP server in a host's server file.
fn server_command(host: Host, path: &Path) -> Option<String> {
    if host == Host::Codex {
        let text = std::fs::read_to_string(path).ok()?;
        let doc: toml::Table = toml::from_str(&text).ok()?;
        return doc
            .get("mcp_servers")?
            .get("memd")?
            .get("command")?
            .as_str()
            .map(String::from);
    }
    read_json(path)["mcpServers"]["memd"]["command"]
        .as_str()
        .map(String::from)
}

fn setups(w: &Where, host: Host) -> Vec<Setup> {
    let mut out = Vec::new();
    let empty = Path::new("");
    for scope in [Scope::User, Scope::Project] {
        let base = match scope {
            Scope::User => w.home,
            Scope::Project => w.root,
        };
        let Some(base) = base else { continue };
        let (hooks_path, server_path) = setup::files(host, scope, w.home.unwrap_or(empty), base);
        let hooks = read_json(&hooks_path);
        let server = server_command(host, &server_path);
        if !memd_hooks(&hooks, host).is_empty() || server.is_some() {
            out.push(Setup {
                scope,
                hooks_path,
                hooks,
                server_path,
                server,
            });
        }
    }
    out
}

/// memd's hook commands in a hooks file: (event, group index, index in
/// the group, command).
fn memd_hooks(hooks: &Value, host: Host) -> Vec<(&'static str, usize, usize, String)> {
    let mut out = Vec::new();
    for event in setup::events(host) {
        let groups = hooks["hooks"][*event]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (gi, group) in groups.iter().enumerate() {
            for (hi, h) in group["hooks"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .enumerate()
            {
                if let Some(c) = h["command"].as_str()
                    && setup::is_memd_hook(c, host)
                {
                    out.push((*event, gi, hi, c.to_string()));
                }
            }
        }
    }
    out
}

/// The file a command's program names: a path as it is, a bare name
/// where `PATH` finds it; canonical.
fn resolve(program: &str) -> Option<PathBuf> {
    if program.contains('/') {
        return std::fs::canonicalize(program).ok();
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::canonicalize(p).ok())
}

/// What is wrong with memd's hooks in a hooks file value, `None` when
/// every event has one that runs `exe`.
pub fn hooks_problem(
    hooks: &Value,
    host: Host,
    exe: &Path,
    resolve: impl Fn(&str) -> Option<PathBuf>,
) -> Option<String> {
    let found = memd_hooks(hooks, host);
    let missing: Vec<&str> = setup::events(host)
        .iter()
        .copied()
        .filter(|e| !found.iter().any(|(f, ..)| f == e))
        .collect();
    let mut wrong: Vec<String> = Vec::new();
    for (_, _, _, command) in &found {
        let program = shlex::split(command)
            .and_then(|w| w.into_iter().next())
            .unwrap_or_default();
        if resolve(&program).as_deref() != Some(exe) && !wrong.contains(&program) {
            wrong.push(program);
        }
    }
    let mut why = Vec::new();
    if !missing.is_empty() {
        why.push(format!("no memd hook for {}", missing.join(", ")));
    }
    if !wrong.is_empty() {
        why.push(format!(
            "they run {}, not this memd ({})",
            wrong.join(", "),
            exe.display()
        ));
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// The events whose memd hook Codex has not recorded as trusted in its
/// config (`[hooks.state."<hooks file>:<event>:<group>:<hook>"]
/// trusted_hash`). The hash is Codex's own: its presence is checked, not
/// its value.
pub fn codex_untrusted(config: &str, hooks_path: &Path, hooks: &Value) -> Vec<&'static str> {
    let doc: toml::Table = toml::from_str(config).unwrap_or_default();
    let state = doc
        .get("hooks")
        .and_then(|h| h.get("state"))
        .and_then(toml::Value::as_table);
    let snake = |e: &str| {
        let mut s = String::new();
        for (i, c) in e.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                s.push('_');
            }
            s.push(c.to_ascii_lowercase());
        }
        s
    };
    let mut out = Vec::new();
    for (event, gi, hi, _) in memd_hooks(hooks, Host::Codex) {
        let key = format!("{}:{}:{gi}:{hi}", hooks_path.display(), snake(event));
        let trusted = state
            .and_then(|s| s.get(&key))
            .and_then(|e| e.get("trusted_hash"))
            .and_then(toml::Value::as_str)
            .is_some_and(|h| !h.is_empty());
        if !trusted && !out.contains(&event) {
            out.push(event);
        }
    }
    out
}

fn setup_command(host: Host, scope: Scope) -> String {
    match scope {
        Scope::User => format!("memd setup {}", host.name()),
        Scope::Project => format!("memd setup {} --project", host.name()),
    }
}

fn host_checks(w: &Where, host: Host) -> Vec<Check> {
    let name = host.name();
    let found = setups(w, host);
    if found.is_empty() {
        return vec![check(
            name,
            Verdict::Skip,
            "not set up (no memd hooks or MCP server in its files)",
            Some(setup_command(host, Scope::User)),
        )];
    }
    let mut out = vec![hooks_check(w, host, &found), server_check(w, host, &found)];
    if host == Host::Codex
        && let Some(home) = w.home
    {
        out.push(codex_trust_check(home, &found));
    }
    out
}

fn where_of(s: &Setup) -> &'static str {
    match s.scope {
        Scope::User => "user",
        Scope::Project => "project",
    }
}

fn hooks_check(w: &Where, host: Host, found: &[Setup]) -> Check {
    let name = format!("{} hooks", host.name());
    for s in found {
        if let Some(why) = hooks_problem(&s.hooks, host, w.exe, resolve) {
            return check(
                &name,
                Verdict::Fail,
                format!("{}: {why}", s.hooks_path.display()),
                Some(setup_command(host, s.scope)),
            );
        }
    }
    let project_only = found.iter().all(|s| s.scope == Scope::Project);
    if host == Host::ClaudeCode
        && project_only
        && let Some(root) = w.root
        && std::fs::canonicalize(w.cwd).ok().as_deref() != Some(root)
    {
        return check(
            &name,
            Verdict::Fail,
            format!(
                "set up for the project only ({}): Claude Code reads a project's settings \
                 only when started at its root, so started here, in a subdirectory, it gets \
                 no memory",
                root.join(".claude/settings.json").display()
            ),
            Some(format!(
                "start claude in {} (or memd setup claude-code, for every directory)",
                root.display()
            )),
        );
    }
    let files: Vec<String> = found
        .iter()
        .map(|s| format!("{} ({})", s.hooks_path.display(), where_of(s)))
        .collect();
    check(
        &name,
        Verdict::Pass,
        format!(
            "{} → this memd, in {}",
            setup::events(host).join(", "),
            files.join(", ")
        ),
        None,
    )
}

fn server_check(w: &Where, host: Host, found: &[Setup]) -> Check {
    let name = format!("{} mcp", host.name());
    for s in found {
        let file = s.server_path.display();
        match &s.server {
            None => {
                return check(
                    &name,
                    Verdict::Fail,
                    format!("{file}: no memd MCP server"),
                    Some(setup_command(host, s.scope)),
                );
            }
            Some(program) if resolve(program).as_deref() != Some(w.exe) => {
                return check(
                    &name,
                    Verdict::Fail,
                    format!(
                        "{file}: the server runs {program}, not this memd ({})",
                        w.exe.display()
                    ),
                    Some(setup_command(host, s.scope)),
                );
            }
            Some(_) => {}
        }
    }
    let files: Vec<String> = found
        .iter()
        .map(|s| format!("{} ({})", s.server_path.display(), where_of(s)))
        .collect();
    check(
        &name,
        Verdict::Pass,
        format!("memd → this memd, in {}", files.join(", ")),
        None,
    )
}

fn codex_trust_check(home: &Path, found: &[Setup]) -> Check {
    let name = "codex hook trust";
    let config_path = home.join(".codex/config.toml");
    let config = std::fs::read_to_string(&config_path).unwrap_or_default();
    for s in found {
        if memd_hooks(&s.hooks, Host::Codex).is_empty() {
            continue;
        }
        let untrusted = codex_untrusted(&config, &s.hooks_path, &s.hooks);
        if !untrusted.is_empty() {
            return check(
                name,
                Verdict::Fail,
                format!(
                    "Codex has not trusted memd's hooks in {} ({}): it runs none of them",
                    s.hooks_path.display(),
                    untrusted.join(", ")
                ),
                Some("codex (interactive, here), then choose \"Trust all and continue\"".into()),
            );
        }
    }
    check(
        name,
        Verdict::Pass,
        format!("trusted in {}", config_path.display()),
        None,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn hooks(command: &str) -> Value {
        let mut v = json!({});
        setup::merge_hooks(&mut v, Host::Codex, command, false);
        v
    }

    #[test]
    fn hooks_are_checked_for_every_event_and_this_binary() {
        let exe = Path::new("/opt/memd/bin/memd");
        let at = |p: &str| Some(PathBuf::from(p));
        let ok = hooks("/opt/memd/bin/memd hook codex");
        assert_eq!(hooks_problem(&ok, Host::Codex, exe, at), None);
        let bare = hooks("memd hook codex");
        assert_eq!(
            hooks_problem(&bare, Host::Codex, exe, |_| at("/opt/memd/bin/memd")),
            None,
            "a bare name is found on PATH"
        );
        let other = hooks("/old/memd hook codex");
        let why = hooks_problem(&other, Host::Codex, exe, at).unwrap();
        assert!(why.contains("they run /old/memd"), "{why}");
        let mut partial = ok.clone();
        partial["hooks"].as_object_mut().unwrap().remove("Stop");
        let why = hooks_problem(&partial, Host::Codex, exe, at).unwrap();
        assert_eq!(why, "no memd hook for Stop");
    }

    #[test]
    fn codex_trust_is_read_from_its_hook_state() {
        let path = Path::new("/h/.codex/hooks.json");
        let v = hooks("memd hook codex");
        assert_eq!(
            codex_untrusted("", path, &v),
            vec!["SessionStart", "PreCompact", "Stop"]
        );
        let config = r#"
[hooks.state."/h/.codex/hooks.json:session_start:0:0"]
trusted_hash = "sha256:ab"
[hooks.state."/h/.codex/hooks.json:pre_compact:0:0"]
trusted_hash = "sha256:cd"
"#;
        assert_eq!(codex_untrusted(config, path, &v), vec!["Stop"]);
    }
}
