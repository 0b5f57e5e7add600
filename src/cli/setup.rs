//! `memd setup claude-code`: Claude Code's configuration gets memd's hooks
//! (`SessionStart`, `PreCompact`, `SessionEnd` → `memd hook claude-code`)
//! and its MCP server (`memd mcp`), merged into the files Claude Code reads:
//!
//! - `--user` (default): hooks in `~/.claude/settings.json`, the server in
//!   `~/.claude.json` (`mcpServers.memd`);
//! - `--project`: hooks in `./.claude/settings.json`, the server in
//!   `./.mcp.json`.
//!
//! Every other key stays (JSON objects are rewritten with their keys in
//! sorted order); running it again changes nothing; a file it changes is
//! copied first to `FILE.memd-backup-<time>`; `--dry-run` says what would
//! change and writes nothing; `--uninstall` removes what it added: hook
//! commands that run `hook claude-code` and a `memd` server that runs
//! `mcp`.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};

use super::CliError;
use super::output::{Output, success};

/// Where the entries go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's files under `$HOME`.
    User,
    /// The project in the working directory.
    Project,
}

/// The events memd answers.
pub const EVENTS: [&str; 3] = ["SessionStart", "PreCompact", "SessionEnd"];

/// Whether a hook command is memd's.
fn is_ours(command: &str) -> bool {
    command.trim_end().ends_with(" hook claude-code")
}

/// Adds (or, with `uninstall`, removes) memd's hook entries in a
/// `settings.json` value. Returns whether it changed.
pub fn merge_hooks(settings: &mut Value, command: &str, uninstall: bool) -> bool {
    let before = settings.clone();
    if !settings.is_object() {
        *settings = json!({});
    }
    let root = settings.as_object_mut().expect("an object");
    let hooks = root.entry("hooks").or_insert_with(|| json!({}));
    if !hooks.is_object() {
        *hooks = json!({});
    }
    let hooks = hooks.as_object_mut().expect("an object");
    for event in EVENTS {
        let groups = hooks.entry(event).or_insert_with(|| json!([]));
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
            groups.push(json!({"hooks": [{"type": "command", "command": command}]}));
        }
    }
    hooks.retain(|_, groups| groups.as_array().is_none_or(|g| !g.is_empty()));
    if hooks.is_empty() {
        root.remove("hooks");
    }
    // Re-adding an entry that was there moves it last: compare meaning.
    !same_hooks(&before, settings)
}

/// Equal but for the order of memd's groups among an event's groups.
fn same_hooks(a: &Value, b: &Value) -> bool {
    let norm = |v: &Value| {
        let mut v = v.clone();
        if let Some(hooks) = v.get_mut("hooks").and_then(Value::as_object_mut) {
            for groups in hooks.values_mut() {
                if let Some(g) = groups.as_array_mut() {
                    g.sort_by_key(|x| x.to_string());
                }
            }
        }
        v
    };
    norm(a) == norm(b)
}

/// Adds (or removes) `mcpServers.memd` in an MCP configuration value.
/// Returns whether it changed.
pub fn merge_server(config: &mut Value, program: &str, uninstall: bool) -> bool {
    let before = config.clone();
    if !config.is_object() {
        *config = json!({});
    }
    let root = config.as_object_mut().expect("an object");
    let servers = root.entry("mcpServers").or_insert_with(|| json!({}));
    if !servers.is_object() {
        *servers = json!({});
    }
    let servers = servers.as_object_mut().expect("an object");
    let ours = |v: &Value| {
        v["args"][0] == "mcp" && v["command"].as_str().is_some_and(|c| c.ends_with("memd"))
    };
    if uninstall {
        if servers.get("memd").is_some_and(ours) {
            servers.remove("memd");
        }
    } else {
        servers.insert(
            "memd".into(),
            json!({"type": "stdio", "command": program, "args": ["mcp"]}),
        );
    }
    if servers.is_empty() {
        root.remove("mcpServers");
    }
    *config != before
}

/// One file's change.
struct Change {
    path: PathBuf,
    old: Option<String>,
    new: Value,
}

fn read_json(path: &Path) -> Result<(Option<String>, Value), CliError> {
    match std::fs::read_to_string(path) {
        Ok(text) if text.trim().is_empty() => Ok((Some(text), json!({}))),
        Ok(text) => {
            let v = serde_json::from_str(&text).map_err(|e| {
                CliError::Usage(format!(
                    "{} is not JSON ({e}); nothing was changed",
                    path.display()
                ))
            })?;
            Ok((Some(text), v))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok((None, json!({}))),
        Err(e) => Err(CliError::Io(format!("cannot read {}: {e}", path.display()))),
    }
}

/// Writes next to the file and renames over it, keeping its mode (a new
/// file: 0600 under `$HOME`, 0644 in a project, which is shared).
fn write(path: &Path, text: &str, scope: Scope) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mode = std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o777)
        .unwrap_or(if scope == Scope::User { 0o600 } else { 0o644 });
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

/// Runs `memd setup claude-code`.
///
/// # Errors
/// Unreadable or non-JSON files (nothing is changed then), write errors.
pub fn claude_code(scope: Scope, dry_run: bool, uninstall: bool) -> Result<Output, CliError> {
    let program = std::env::current_exe()
        .and_then(std::fs::canonicalize)
        .map_err(|e| CliError::Io(format!("cannot find the memd executable: {e}")))?
        .display()
        .to_string();
    let quoted = if program.contains([' ', '\'', '"']) {
        format!("'{}'", program.replace('\'', r"'\''"))
    } else {
        program.clone()
    };
    let command = format!("{quoted} hook claude-code");
    let cwd = std::env::current_dir().map_err(|e| CliError::Io(e.to_string()))?;
    let (settings_path, mcp_path) = match scope {
        Scope::User => {
            let home = std::env::var_os("HOME")
                .map(PathBuf::from)
                .ok_or_else(|| CliError::Usage("HOME is not set".into()))?;
            (
                home.join(".claude/settings.json"),
                home.join(".claude.json"),
            )
        }
        Scope::Project => (cwd.join(".claude/settings.json"), cwd.join(".mcp.json")),
    };
    let mut changes = Vec::new();
    let (old, mut settings) = read_json(&settings_path)?;
    if merge_hooks(&mut settings, &command, uninstall) {
        changes.push(Change {
            path: settings_path.clone(),
            old,
            new: settings,
        });
    }
    let (old, mut mcp) = read_json(&mcp_path)?;
    if merge_server(&mut mcp, &program, uninstall) {
        changes.push(Change {
            path: mcp_path.clone(),
            old,
            new: mcp,
        });
    }
    let stamp = time::OffsetDateTime::now_utc().unix_timestamp();
    let mut done = Vec::new();
    for c in &changes {
        let mut entry = json!({"file": c.path.display().to_string()});
        if !dry_run {
            if let Some(old) = &c.old {
                let backup = PathBuf::from(format!("{}.memd-backup-{stamp}", c.path.display()));
                write(&backup, old, Scope::User).map_err(|e| {
                    CliError::Io(format!("cannot back up {}: {e}", c.path.display()))
                })?;
                entry["backup"] = json!(backup.display().to_string());
            }
            let text = serde_json::to_string_pretty(&c.new).unwrap_or_default() + "\n";
            write(&c.path, &text, scope)
                .map_err(|e| CliError::Io(format!("cannot write {}: {e}", c.path.display())))?;
        }
        done.push(entry);
    }
    let namespace = match scope {
        Scope::Project => super::hook::project_namespace(&cwd).unwrap_or_else(|| "default".into()),
        Scope::User => "each project's own (from its git root)".into(),
    };
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
            settings_path.display(),
            mcp_path.display()
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
        human.push_str(&format!(
            "\nhooks: SessionStart, PreCompact, SessionEnd → {command}\nMCP server: memd → {program} mcp\nnamespace: {namespace}"
        ));
    }
    let mut fields = Map::new();
    fields.insert("changed".into(), Value::Array(done));
    fields.insert("dry_run".into(), json!(dry_run));
    fields.insert("uninstall".into(), json!(uninstall));
    fields.insert("hook_command".into(), json!(command));
    fields.insert("namespace".into(), json!(namespace));
    Ok(Output {
        json: success(fields),
        human,
    })
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
        assert!(merge_hooks(&mut s, "/bin/memd hook claude-code", false));
        assert!(
            !merge_hooks(&mut s, "/bin/memd hook claude-code", false),
            "again: no change"
        );
        assert_eq!(s["hooks"]["SessionStart"].as_array().unwrap().len(), 2);
        assert_eq!(
            s["hooks"]["PreCompact"][0]["hooks"][0]["command"],
            "/bin/memd hook claude-code"
        );
        assert_eq!(s["hooks"]["PreToolUse"], original["hooks"]["PreToolUse"]);
        // A new path replaces the old entry.
        assert!(merge_hooks(&mut s, "/opt/memd hook claude-code", false));
        assert_eq!(s["hooks"]["SessionEnd"].as_array().unwrap().len(), 1);
        assert!(merge_hooks(&mut s, "", true));
        assert_eq!(s, original, "uninstall leaves what was there");
    }

    #[test]
    fn the_server_merges_once_and_only_memds_is_removed() {
        let mut c = json!({"numStartups": 3, "mcpServers": {"other": {"command": "x"}}});
        let original = c.clone();
        assert!(merge_server(&mut c, "/bin/memd", false));
        assert!(!merge_server(&mut c, "/bin/memd", false));
        assert_eq!(c["mcpServers"]["memd"]["args"], json!(["mcp"]));
        assert!(merge_server(&mut c, "/bin/memd", true));
        assert_eq!(c, original);
        let mut foreign =
            json!({"mcpServers": {"memd": {"command": "/usr/bin/other-tool", "args": []}}});
        assert!(!merge_server(&mut foreign, "/bin/memd", true), "not ours");
    }
}
