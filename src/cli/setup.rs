//! `memd setup claude-code|codex`: an agent runtime's configuration gets
//! memd's hooks (`memd hook claude-code|codex`) and its MCP server (`memd
//! mcp`), merged into the files the runtime reads:
//!
//! - Claude Code, `--user` (default): hooks (`SessionStart`, `PreCompact`,
//!   `SessionEnd`, `Stop`, each with a `timeout`) in
//!   `~/.claude/settings.json`, the server in
//!   `~/.claude.json` (`mcpServers.memd`); `--project`:
//!   `./.claude/settings.json` and `./.mcp.json`;
//! - Codex CLI: hooks (`SessionStart`, `PreCompact`, `Stop`) in `~/.codex/hooks.json`
//!   (`--project`: `./.codex/hooks.json`), and in `config.toml` next to it
//!   `[features] hooks = true` and `[mcp_servers.memd]` (the TOML file
//!   is edited in place: its comments and layout stay; uninstall leaves
//!   the feature flag, which other hooks may need).
//!
//! Every other key stays (JSON objects are rewritten with their keys in
//! sorted order); running it again changes nothing; a file it changes is
//! copied first to `FILE.memd-backup-<time>`; `--dry-run` says what would
//! change and writes nothing; `--uninstall` removes what it added: hook
//! commands that run `hook claude-code` and a `memd` server that runs
//! `mcp`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use crate::commands::CommandError;
use crate::commands::output::{Output, success};

/// Where the entries go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's files under `$HOME`.
    User,
    /// The project in the working directory.
    Project,
}

/// The agent runtimes `setup` configures.
pub use super::hook::Host;

/// The events memd answers for a host.
pub fn events(host: Host) -> &'static [&'static str] {
    match host {
        Host::ClaudeCode => &["SessionStart", "PreCompact", "SessionEnd", "Stop"],
        Host::Codex => &["SessionStart", "PreCompact", "Stop"],
        Host::Gemini => &["SessionStart", "PreCompress", "SessionEnd"],
    }
}

/// Adds (or, with `uninstall`, removes) memd's hook entries (commands
/// ending in `hook <host>`) in a hooks file value. Returns whether it
/// changed.
pub fn merge_hooks(settings: &mut Value, host: Host, command: &str, uninstall: bool) -> bool {
    let is_ours = |c: &str| is_memd_hook(c, host);
    let before = settings.clone();
    let root = object(settings);
    let hooks = object(root.entry("hooks").or_insert(Value::Null));
    for event in events(host) {
        let groups = hooks.entry(*event).or_insert(Value::Null);
        if !groups.is_array() {
            *groups = json!([]);
        }
        let groups = groups.as_array_mut().expect("an array");
        // Every memd entry out (an older path included), then ours in once.
        for group in groups.iter_mut() {
            if let Some(list) = group.get_mut("hooks").and_then(Value::as_array_mut) {
                list.retain(|h| !h["command"].as_str().is_some_and(is_ours));
            }
        }
        groups.retain(|g| g["hooks"].as_array().is_none_or(|l| !l.is_empty()));
        if !uninstall {
            let mut hook = json!({"type": "command", "command": command});
            // Claude Code gives a hook 60 s unless told (a `SessionEnd`
            // hook far less): each gets what its work needs.
            if host == Host::ClaudeCode {
                hook["timeout"] = super::hook::hook_timeout(event).into();
            }
            groups.push(json!({ "hooks": [hook] }));
        }
    }
    hooks.retain(|_, groups| groups.as_array().is_none_or(|g| !g.is_empty()));
    if hooks.is_empty() {
        root.remove("hooks");
    }
    // Re-adding an entry that was there moves it last: compare meaning.
    !same_hooks(&before, settings)
}

/// Whether a hook command is memd's for `host` (it runs `… hook <host>`,
/// whatever path names memd).
pub fn is_memd_hook(command: &str, host: Host) -> bool {
    command
        .trim_end()
        .ends_with(&format!(" hook {}", host.name()))
}

/// The files `setup` writes for a host and scope: the hooks file and the
/// MCP server's file (one file for Gemini CLI). `home` is the user's home,
/// `root` the repository's root.
pub fn files(host: Host, scope: Scope, home: &Path, root: &Path) -> (PathBuf, PathBuf) {
    let base = match scope {
        Scope::User => home,
        Scope::Project => root,
    };
    match (host, scope) {
        (Host::ClaudeCode, Scope::User) => (
            home.join(".claude/settings.json"),
            home.join(".claude.json"),
        ),
        (Host::ClaudeCode, Scope::Project) => {
            (root.join(".claude/settings.json"), root.join(".mcp.json"))
        }
        (Host::Codex, _) => (
            base.join(".codex/hooks.json"),
            base.join(".codex/config.toml"),
        ),
        // One file holds Gemini CLI's hooks and servers.
        (Host::Gemini, _) => {
            let f = base.join(".gemini/settings.json");
            (f.clone(), f)
        }
    }
}

/// `value` as an object, made an empty one when it is anything else.
fn object(value: &mut Value) -> &mut Map<String, Value> {
    if !value.is_object() {
        *value = json!({});
    }
    value.as_object_mut().expect("an object")
}

/// Equal but for the order of memd's groups among an event's groups.
fn same_hooks(a: &Value, b: &Value) -> bool {
    let norm = |v: &Value| {
        let mut v = v.clone();
        if let Some(hooks) = v.get_mut("hooks").and_then(Value::as_object_mut) {
            for groups in hooks.values_mut() {
                if let Some(g) = groups.as_array_mut() {
                    g.sort_by_key(std::string::ToString::to_string);
                }
            }
        }
        v
    };
    norm(a) == norm(b)
}

/// The arguments of memd's MCP server for a host: it writes as the host's
/// agent.
pub fn server_args(host: Host) -> [&'static str; 3] {
    ["mcp", "--agent", host.name()]
}

/// Adds (or removes) `mcpServers.memd` in an MCP configuration value.
/// Returns whether it changed.
pub fn merge_server(config: &mut Value, program: &str, host: Host, uninstall: bool) -> bool {
    let before = config.clone();
    let root = object(config);
    let servers = object(root.entry("mcpServers").or_insert(Value::Null));
    let ours = |v: &Value| {
        v["args"][0] == "mcp" && v["command"].as_str().is_some_and(|c| c.ends_with("memd"))
    };
    if uninstall {
        if servers.get("memd").is_some_and(ours) {
            servers.remove("memd");
        }
    } else {
        let entry = match host {
            // Gemini CLI asks before each tool of a server it does not
            // trust.
            Host::Gemini => json!({"command": program, "args": server_args(host), "trust": true}),
            _ => json!({"type": "stdio", "command": program, "args": server_args(host)}),
        };
        servers.insert("memd".into(), entry);
    }
    if servers.is_empty() {
        root.remove("mcpServers");
    }
    *config != before
}

/// Sets `path` to `true` (objects made on the way). Returns whether it
/// changed.
pub fn set_true(value: &mut Value, path: &[&str]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut at = value;
    for key in parents {
        at = object(at).entry(*key).or_insert(Value::Null);
    }
    let slot = object(at).entry(*last).or_insert(Value::Null);
    let changed = *slot != Value::Bool(true);
    *slot = Value::Bool(true);
    changed
}

/// The permission rule that lets Claude Code call every tool of memd's
/// server without asking.
pub const PERMISSION_RULE: &str = "mcp__memd";

/// Adds (or removes) `entry` in the list at `path` (objects made on the
/// way; an emptied list and emptied objects removed). Returns whether it
/// changed.
pub fn merge_list_entry(value: &mut Value, path: &[&str], entry: &str, uninstall: bool) -> bool {
    fn walk(value: &mut Value, path: &[&str], entry: &str, uninstall: bool) -> bool {
        let Some((key, rest)) = path.split_first() else {
            return false;
        };
        if uninstall && value.get(key).is_none() {
            return false;
        }
        let root = object(value);
        let child = root.entry(*key).or_insert(Value::Null);
        let changed = if rest.is_empty() {
            if !child.is_array() {
                if uninstall {
                    return false;
                }
                *child = json!([]);
            }
            let list = child.as_array_mut().expect("an array");
            let had = list.iter().any(|v| v == entry);
            if uninstall {
                list.retain(|v| v != entry);
            } else if !had {
                list.push(json!(entry));
            }
            had == uninstall
        } else {
            walk(child, rest, entry, uninstall)
        };
        let empty = match root.get(*key) {
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Object(o)) => o.is_empty(),
            _ => false,
        };
        if changed && empty {
            root.remove(*key);
        }
        changed
    }
    walk(value, path, entry, uninstall)
}

/// The variables Codex passes on to memd's server: it starts MCP servers
/// with a cleared environment, and without these the server would look
/// for another data dir, socket or config than the hooks (which get the
/// whole environment).
pub const CODEX_FORWARDED_ENV: [&str; 7] = [
    "MEMD_DATA_DIR",
    "MEMD_SOCKET",
    "MEMD_CONFIG",
    "MEMD_NAMESPACE",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
    "XDG_RUNTIME_DIR",
];

/// Codex's `config.toml`: `[features] hooks = true` and
/// `[mcp_servers.memd]` added (or the server removed), the rest of the
/// file as it was. `None` when nothing changes.
///
/// # Errors
/// A message when the text is not TOML.
pub fn merge_codex_config(
    text: &str,
    program: &str,
    uninstall: bool,
) -> Result<Option<String>, String> {
    use toml_edit::{Array, DocumentMut, Item, Table, value};
    let mut doc: DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    let table = |doc: &mut DocumentMut, key: &str, implicit: bool| {
        if !doc.contains_table(key) {
            let mut t = Table::new();
            t.set_implicit(implicit);
            doc.insert(key, Item::Table(t));
        }
    };
    if uninstall {
        let ours = doc
            .get("mcp_servers")
            .and_then(|s| s.get("memd"))
            .and_then(|m| m.get("command"))
            .and_then(Item::as_str)
            .is_some_and(|c| c.ends_with("memd"));
        if ours && let Some(servers) = doc.get_mut("mcp_servers").and_then(Item::as_table_like_mut)
        {
            servers.remove("memd");
        }
    } else {
        table(&mut doc, "features", false);
        doc["features"]["hooks"] = value(true);
        table(&mut doc, "mcp_servers", true);
        let mut server = Table::new();
        server.insert("command", value(program));
        let args = server_args(Host::Codex);
        server.insert("args", value(Array::from_iter(args)));
        server.insert("env_vars", value(Array::from_iter(CODEX_FORWARDED_ENV)));
        let strings = |m: &Item, key: &str, want: &[&str]| {
            m.get(key).and_then(Item::as_array).is_some_and(|a| {
                a.iter()
                    .map(|v| v.as_str())
                    .eq(want.iter().map(|w| Some(*w)))
            })
        };
        let same = doc["mcp_servers"].get("memd").is_some_and(|m| {
            m.get("command").and_then(Item::as_str) == Some(program)
                && strings(m, "args", &args)
                && strings(m, "env_vars", &CODEX_FORWARDED_ENV)
        });
        if !same {
            doc["mcp_servers"]["memd"] = Item::Table(server);
        }
    }
    let after = doc.to_string();
    Ok((after != text).then_some(after))
}

/// One file's change.
struct Change {
    path: PathBuf,
    old: Option<String>,
    new: String,
}

fn read_json(path: &Path) -> Result<(Option<String>, Value), CommandError> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok((Some(text), json!({}))),
        Ok(text) => {
            let v = serde_json::from_str(&text).map_err(|e| {
                CommandError::Usage(format!(
                    "{} is not JSON ({e}); nothing was changed",
                    path.display()
                ))
            })?;
            Ok((Some(text), v))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((None, json!({}))),
        Err(e) => Err(CommandError::Io(format!(
            "cannot read {}: {e}",
            path.display()
        ))),
    }
}

/// Writes next to the file and renames over it, keeping its mode (a new
/// file: 0600 under `$HOME`, 0644 in a project, which is shared).
fn write(path: &Path, text: &str, scope: Scope) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mode = std::fs::metadata(path)
        .map_or(if scope == Scope::User { 0o600 } else { 0o644 }, |m| {
            m.permissions().mode() & 0o777
        });
    let tmp = dir.join(format!(
        ".{}.memd-{}.tmp",
        path.file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned()),
        std::process::id()
    ));
    std::fs::write(&tmp, text)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode))?;
    std::fs::rename(&tmp, path)
}

/// The directory `PATH` finds `name` in, if any.
fn on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).find(|d| {
        std::fs::metadata(d.join(name))
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    })
}

/// Reads a JSON file, applies `edit` and, when it changed something,
/// records the change.
fn edit_json(
    changes: &mut Vec<Change>,
    path: &Path,
    edit: impl FnOnce(&mut Value) -> bool,
) -> Result<(), CommandError> {
    let (old, mut value) = read_json(path)?;
    if edit(&mut value) {
        changes.push(Change {
            path: path.to_path_buf(),
            old,
            new: serde_json::to_string_pretty(&value).unwrap_or_default() + "\n",
        });
    }
    Ok(())
}

/// Runs `memd setup claude-code|codex`.
///
/// `--user` entries name memd by its absolute path (a host started from a
/// desktop may not search the user's `PATH`); `--project` entries, which a
/// team shares, name `memd` when `PATH` finds one (else the absolute path,
/// and the output says so) and go to the repository's root.
///
/// # Errors
/// Unreadable or malformed files (nothing is changed then), write errors.
pub fn run(
    host: Host,
    scope: Scope,
    dry_run: bool,
    uninstall: bool,
    namespace: &str,
) -> Result<Output, CommandError> {
    let absolute = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| CommandError::Io(format!("cannot find the memd executable: {e}")))?
        .display()
        .to_string();
    let found = on_path("memd");
    let program = match (scope, &found) {
        (Scope::Project, Some(_)) => "memd".to_string(),
        _ => absolute.clone(),
    };
    let quoted = if program.contains([' ', '\'', '"']) {
        format!("'{}'", program.replace('\'', r"'\''"))
    } else {
        program.clone()
    };
    let command = format!("{quoted} hook {}", host.name());
    let cwd = std::env::current_dir().map_err(|e| CommandError::Io(e.to_string()))?;
    let root = crate::commands::repository_root(&cwd).unwrap_or_else(|| cwd.clone());
    let home = || {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .ok_or_else(|| CommandError::Usage("HOME is not set".into()))
    };
    let home_dir = match scope {
        Scope::User => home()?,
        Scope::Project => PathBuf::new(),
    };
    let (hooks_path, server_path) = files(host, scope, &home_dir, &root);
    let changes = edits(
        host,
        scope,
        uninstall,
        &program,
        &command,
        &hooks_path,
        &server_path,
        &home,
    )?;
    let done = write_changes(&changes, dry_run, scope, &root)?;
    let verb = match (uninstall, dry_run) {
        (false, false) => "installed",
        (false, true) => "would install",
        (true, false) => "removed",
        (true, true) => "would remove",
    };
    let mut human = if done.is_empty() {
        format!(
            "nothing to change: memd is {} in {} and {}",
            if uninstall { "not" } else { "already" },
            hooks_path.display(),
            server_path.display()
        )
    } else {
        done.iter()
            .map(|d| {
                format!(
                    "{verb}: {}{}",
                    d["file"].as_str().unwrap_or_default(),
                    d["backup"]
                        .as_str()
                        .map_or(String::new(), |b| format!(" (old copy: {b})"))
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    if !uninstall {
        human.push_str(&installed_notes(
            host,
            scope,
            &command,
            &program,
            namespace,
            &hooks_path,
            found.is_none().then_some(absolute.as_str()),
        ));
    }
    let mut fields = Map::new();
    fields.insert("changed".into(), Value::Array(done));
    fields.insert("dry_run".into(), json!(dry_run));
    fields.insert("uninstall".into(), json!(uninstall));
    fields.insert("hook_command".into(), json!(command));
    fields.insert("server_command".into(), json!(program));
    fields.insert("server_args".into(), json!(server_args(host)));
    fields.insert("namespace".into(), json!(namespace));
    if scope == Scope::Project {
        fields.insert("root".into(), json!(root.display().to_string()));
    }
    Ok(Output {
        json: success(fields),
        human,
    })
}

/// The edits of the host's files: its hooks (and, for Claude Code, the
/// rule that lets it call memd's tools, and the MCP server; for Codex, its
/// TOML), each file's old and new text; nothing is written.
#[allow(clippy::too_many_arguments)]
fn edits(
    host: Host,
    scope: Scope,
    uninstall: bool,
    program: &str,
    command: &str,
    hooks_path: &Path,
    server_path: &Path,
    home: &dyn Fn() -> Result<PathBuf, CommandError>,
) -> Result<Vec<Change>, CommandError> {
    let mut changes = Vec::new();
    // Hooks, and for Claude Code the rule that lets it call memd's tools
    // without asking, in the same settings file.
    edit_json(&mut changes, hooks_path, |v| {
        let hooks = merge_hooks(v, host, command, uninstall);
        let rest = match host {
            Host::ClaudeCode => {
                merge_list_entry(v, &["permissions", "allow"], PERMISSION_RULE, uninstall)
            }
            // Its hooks run once the hooks system is on (uninstall leaves
            // it on: other hooks may need it); the server in the same file.
            Host::Gemini => {
                let on = !uninstall && set_true(v, &["tools", "enableHooks"]);
                merge_server(v, program, host, uninstall) || on
            }
            Host::Codex => false,
        };
        hooks || rest
    })?;
    match host {
        Host::Gemini => {}
        Host::ClaudeCode => {
            edit_json(&mut changes, server_path, |v| {
                merge_server(v, program, host, uninstall)
            })?;
            if scope == Scope::Project {
                // A project's `.mcp.json` server runs once the user approves
                // it: approved for this user, in their own settings.
                let user = home()?.join(".claude/settings.json");
                edit_json(&mut changes, &user, |v| {
                    merge_list_entry(v, &["enabledMcpjsonServers"], "memd", uninstall)
                })?;
            }
        }
        Host::Codex => {
            let old = match std::fs::read_to_string(server_path) {
                Ok(t) => Some(t),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => {
                    return Err(CommandError::Io(format!(
                        "cannot read {}: {e}",
                        server_path.display()
                    )));
                }
            };
            let merged = merge_codex_config(old.as_deref().unwrap_or(""), program, uninstall)
                .map_err(|e| {
                    CommandError::Usage(format!(
                        "{} is not TOML ({e}); nothing was changed",
                        server_path.display()
                    ))
                })?;
            if let Some(new) = merged {
                changes.push(Change {
                    path: server_path.to_path_buf(),
                    old,
                    new,
                });
            }
        }
    }
    Ok(changes)
}

/// Writes each change (the old text kept beside it first), unless
/// `dry_run`; what was (or would be) changed, as the JSON list `changed`.
fn write_changes(
    changes: &[Change],
    dry_run: bool,
    scope: Scope,
    root: &Path,
) -> Result<Vec<Value>, CommandError> {
    let stamp = time::OffsetDateTime::now_utc().unix_timestamp();
    let mut done = Vec::new();
    for c in changes {
        let mut entry = json!({"file": c.path.display().to_string()});
        if !dry_run {
            if let Some(old) = &c.old {
                let backup = PathBuf::from(format!("{}.memd-backup-{stamp}", c.path.display()));
                write(&backup, old, Scope::User).map_err(|e| {
                    CommandError::Io(format!("cannot back up {}: {e}", c.path.display()))
                })?;
                entry["backup"] = json!(backup.display().to_string());
            }
            let shared = scope == Scope::Project && c.path.starts_with(root);
            write(
                &c.path,
                &c.new,
                if shared { Scope::Project } else { Scope::User },
            )
            .map_err(|e| CommandError::Io(format!("cannot write {}: {e}", c.path.display())))?;
        }
        if dry_run {
            // The whole file as it would be (`--json`); the text output
            // names the entries instead.
            entry["new"] = json!(c.new);
        }
        done.push(entry);
    }
    Ok(done)
}

/// What an install tells the person besides the files: the hooks, the
/// server, the namespace, the host's own switches, capture, and what a
/// project's files need (`not_on_path`: the absolute path they name when
/// memd is not on PATH).
fn installed_notes(
    host: Host,
    scope: Scope,
    command: &str,
    program: &str,
    namespace: &str,
    hooks_path: &Path,
    not_on_path: Option<&str>,
) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "\nhooks: {} → {command}\nMCP server: memd → {program} {}\nnamespace: {namespace}",
        events(host).join(", "),
        server_args(host).join(" "),
    ));
    match host {
        Host::ClaudeCode => out.push_str(&format!(
            "\npermission: {PERMISSION_RULE} in {} (memd's tools run without a prompt)",
            hooks_path.display()
        )),
        Host::Gemini => {
            out.push_str("\ntrust: the server's tools run without a confirmation; hooks system on");
        }
        Host::Codex => out.push_str("\nfeature: [features] hooks = true"),
    }
    if host.format().is_some() {
        out.push_str(
            "\ncapture: on — the hooks store each conversation's prompts and replies (not \
             tool output; <private> text and secrets never) as searchable memories, kept \
             [capture] keep_days (90 days); off: [capture] enabled = false in memd's config",
        );
    }
    if scope == Scope::Project && host == Host::ClaudeCode {
        out.push_str("\napproval: memd in enabledMcpjsonServers of ~/.claude/settings.json");
    }
    if scope == Scope::Project
        && let Some(absolute) = not_on_path
    {
        out.push_str(&format!(
            "\nnote: no memd on PATH: the project's files name {absolute}, which other \
             checkouts may not have (install memd on PATH and run setup again)"
        ));
    }
    if scope == Scope::Project && host == Host::ClaudeCode {
        out.push_str(
            "\nnote: Claude Code reads the project's settings only when started at its \
             root; started in a subdirectory, it gets no block (use --user then)",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hooks_merge_once_and_leave_the_rest() {
        let mut s = json!({
            "model": "opus",
            "hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "lint.sh"}]}],
                      "SessionStart": [{"hooks": [{"type": "command", "command": "echo hi"}]}]}
        });
        let original = s.clone();
        assert!(merge_hooks(
            &mut s,
            Host::ClaudeCode,
            "/bin/memd hook claude-code",
            false
        ));
        assert!(
            !merge_hooks(
                &mut s,
                Host::ClaudeCode,
                "/bin/memd hook claude-code",
                false
            ),
            "again: no change"
        );
        assert_eq!(s["hooks"]["SessionStart"].as_array().unwrap().len(), 2);
        assert_eq!(
            s["hooks"]["PreCompact"][0]["hooks"][0]["command"],
            "/bin/memd hook claude-code"
        );
        assert_eq!(s["hooks"]["PreToolUse"], original["hooks"]["PreToolUse"]);
        // A new path replaces the old entry.
        assert!(merge_hooks(
            &mut s,
            Host::ClaudeCode,
            "/opt/memd hook claude-code",
            false
        ));
        assert_eq!(s["hooks"]["SessionEnd"].as_array().unwrap().len(), 1);
        assert!(merge_hooks(&mut s, Host::ClaudeCode, "", true));
        assert_eq!(s, original, "uninstall leaves what was there");
    }

    #[test]
    fn the_server_merges_once_and_only_memds_is_removed() {
        let mut c = json!({"numStartups": 3, "mcpServers": {"other": {"command": "x"}}});
        let original = c.clone();
        assert!(merge_server(&mut c, "/bin/memd", Host::ClaudeCode, false));
        assert!(!merge_server(&mut c, "/bin/memd", Host::ClaudeCode, false));
        assert_eq!(
            c["mcpServers"]["memd"]["args"],
            json!(["mcp", "--agent", "claude-code"])
        );
        assert!(merge_server(&mut c, "/bin/memd", Host::ClaudeCode, true));
        assert_eq!(c, original);
        let mut foreign =
            json!({"mcpServers": {"memd": {"command": "/usr/bin/other-tool", "args": []}}});
        assert!(
            !merge_server(&mut foreign, "/bin/memd", Host::ClaudeCode, true),
            "not ours"
        );
    }

    #[test]
    fn a_list_entry_is_added_once_and_only_it_is_removed() {
        let mut s = json!({"permissions": {"allow": ["Bash(ls:*)"], "deny": []}});
        let original = s.clone();
        let path = ["permissions", "allow"];
        assert!(merge_list_entry(&mut s, &path, PERMISSION_RULE, false));
        assert!(!merge_list_entry(&mut s, &path, PERMISSION_RULE, false));
        assert_eq!(
            s["permissions"]["allow"],
            json!(["Bash(ls:*)", "mcp__memd"])
        );
        assert!(merge_list_entry(&mut s, &path, PERMISSION_RULE, true));
        assert_eq!(s, original);
        assert!(!merge_list_entry(&mut s, &path, PERMISSION_RULE, true));
        let mut empty = json!({});
        assert!(merge_list_entry(&mut empty, &path, PERMISSION_RULE, false));
        assert!(merge_list_entry(&mut empty, &path, PERMISSION_RULE, true));
        assert_eq!(empty, json!({}), "what it made goes with it");
    }

    #[test]
    fn codex_config_keeps_its_comments_and_merges_once() {
        let text = "# my codex settings\nmodel = \"gpt-5-codex\" # the default\n\n[mcp_servers.github]\ncommand = \"gh-mcp\"\n";
        let merged = merge_codex_config(text, "/bin/memd", false)
            .unwrap()
            .unwrap();
        assert!(
            merged.starts_with("# my codex settings\nmodel = \"gpt-5-codex\" # the default\n"),
            "{merged}"
        );
        assert!(
            merged.contains("[mcp_servers.github]\ncommand = \"gh-mcp\"\n"),
            "{merged}"
        );
        assert!(merged.contains("[features]\nhooks = true\n"), "{merged}");
        assert!(
            merged.contains(
                "[mcp_servers.memd]\ncommand = \"/bin/memd\"\nargs = [\"mcp\", \"--agent\", \"codex\"]\nenv_vars = [\"MEMD_DATA_DIR\""
            ),
            "{merged}"
        );
        assert_eq!(
            merge_codex_config(&merged, "/bin/memd", false).unwrap(),
            None,
            "again: no change"
        );
        let removed = merge_codex_config(&merged, "", true).unwrap().unwrap();
        assert!(!removed.contains("mcp_servers.memd"), "{removed}");
        assert!(removed.contains("[mcp_servers.github]"));
        assert!(merge_codex_config("not = [toml", "/bin/memd", false).is_err());
        let fresh = merge_codex_config("", "/bin/memd", false).unwrap().unwrap();
        assert!(
            !fresh.contains("[mcp_servers]\n"),
            "no empty parent table: {fresh}"
        );
    }
}
