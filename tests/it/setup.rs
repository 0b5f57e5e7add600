//! `memd setup claude-code` through the real binary, on settings files that
//! hold other keys: merged once, kept in meaning, backed up, undone by
//! `--uninstall`.

use std::path::Path;

use crate::common::{BIN, memd_command};
use serde_json::{Value, json};

fn setup(home: &Path, cwd: &Path, args: &[&str]) -> Value {
    setup_in(home, cwd, "claude-code", args)
}

/// `memd --json setup HOST ARGS` run in `cwd`, checked to succeed.
fn setup_in(home: &Path, cwd: &Path, host: &str, args: &[&str]) -> Value {
    let out = memd_command(home)
        .current_dir(cwd)
        .args(["--json", "setup", host])
        .args(args)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn setup_merges_once_keeps_every_other_key_and_uninstalls() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    std::fs::create_dir_all(h.join(".claude")).unwrap();
    let settings = json!({
        "model": "opus",
        "permissions": {"allow": ["Bash(ls:*)"], "deny": []},
        "hooks": {
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/guard.sh"}]}],
            "SessionStart": [{"matcher": "startup", "hooks": [{"type": "command", "command": "echo hello"}]}]
        },
        "env": {"FOO": "1"}
    });
    let claude_json = json!({
        "numStartups": 41,
        "projects": {"/home/me/app": {"allowedTools": []}},
        "mcpServers": {"github": {"type": "stdio", "command": "gh-mcp", "args": []}}
    });
    let settings_path = h.join(".claude/settings.json");
    let claude_path = h.join(".claude.json");
    std::fs::write(
        &settings_path,
        serde_json::to_string_pretty(&settings).unwrap(),
    )
    .unwrap();
    std::fs::write(&claude_path, claude_json.to_string()).unwrap();

    // A dry run writes nothing.
    let v = setup(h, h, &["--dry-run"]);
    assert_eq!(v["changed"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(read(&settings_path), settings);

    let v = setup(h, h, &[]);
    assert_eq!(v["changed"].as_array().unwrap().len(), 2, "{v}");
    let backup = v["changed"][0]["backup"].as_str().unwrap();
    assert_eq!(read(Path::new(backup)), settings, "the old file is kept");
    let s = read(&settings_path);
    let binary = std::fs::canonicalize(BIN).unwrap();
    let command = format!("{} hook claude-code", binary.display());
    for event in ["SessionStart", "PreCompact", "SessionEnd"] {
        let ours: Vec<&Value> = s["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .filter(|h| h["command"] == command.as_str())
            .collect();
        assert_eq!(ours.len(), 1, "{event}: {s}");
    }
    for key in ["model", "permissions", "env"] {
        assert_eq!(s[key], settings[key], "{key}");
    }
    assert_eq!(s["hooks"]["PreToolUse"], settings["hooks"]["PreToolUse"]);
    assert_eq!(
        s["hooks"]["SessionStart"][0],
        settings["hooks"]["SessionStart"][0]
    );
    let c = read(&claude_path);
    assert_eq!(c["numStartups"], 41);
    assert_eq!(c["projects"], claude_json["projects"]);
    assert_eq!(
        c["mcpServers"]["github"],
        claude_json["mcpServers"]["github"]
    );
    assert_eq!(c["mcpServers"]["memd"]["command"], binary.to_str().unwrap());
    assert_eq!(c["mcpServers"]["memd"]["args"], json!(["mcp"]));

    // Again: nothing changes, nothing is duplicated.
    let v = setup(h, h, &[]);
    assert_eq!(v["changed"], json!([]), "{v}");
    assert_eq!(read(&settings_path), s);

    // Uninstall: what was there before, in meaning.
    let v = setup(h, h, &["--uninstall"]);
    assert_eq!(v["changed"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(read(&settings_path), settings);
    assert_eq!(read(&claude_path), claude_json);
    let v = setup(h, h, &["--uninstall"]);
    assert_eq!(v["changed"], json!([]), "{v}");
}

#[test]
fn project_setup_writes_the_projects_files_and_names_its_namespace() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("shop");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let v = setup(home.path(), &project, &["--project"]);
    assert_eq!(v["changed"].as_array().unwrap().len(), 2, "{v}");
    assert!(v["namespace"].as_str().unwrap().starts_with("shop-"), "{v}");
    let mcp = read(&project.join(".mcp.json"));
    assert_eq!(mcp["mcpServers"]["memd"]["args"], json!(["mcp"]));
    let s = read(&project.join(".claude/settings.json"));
    assert!(
        s["hooks"]["SessionStart"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with(" hook claude-code")
    );
    assert!(
        !home.path().join(".claude.json").exists(),
        "the user's files are untouched"
    );
    // A file that is not JSON: a clear error, nothing changed.
    std::fs::write(project.join(".mcp.json"), "{ not json").unwrap();
    let out = memd_command(home.path())
        .current_dir(&project)
        .args(["setup", "claude-code", "--project", "--uninstall"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not JSON"));
    assert_eq!(
        std::fs::read_to_string(project.join(".mcp.json")).unwrap(),
        "{ not json"
    );
}

#[test]
fn codex_setup_edits_config_toml_in_place() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    std::fs::create_dir_all(h.join(".codex")).unwrap();
    let toml =
        "# my settings\nmodel = \"gpt-5-codex\"\n\n[mcp_servers.github]\ncommand = \"gh-mcp\"\n";
    let config = h.join(".codex/config.toml");
    std::fs::write(&config, toml).unwrap();
    let v = setup_in(h, h, "codex", &[]);
    assert_eq!(v["changed"].as_array().unwrap().len(), 2, "{v}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        text.starts_with(toml),
        "the file's own lines stay as they were: {text}"
    );
    assert!(text.contains("codex_hooks = true"), "{text}");
    assert!(text.contains("[mcp_servers.memd]"), "{text}");
    let hooks = read(&h.join(".codex/hooks.json"));
    assert!(
        hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"]
            .as_str()
            .unwrap()
            .ends_with(" hook codex")
    );
    assert!(
        hooks["hooks"].get("SessionEnd").is_none(),
        "Codex has no SessionEnd"
    );
    let again = setup_in(h, h, "codex", &[]);
    assert_eq!(again["changed"], json!([]), "{again}");
    let v = setup_in(h, h, "codex", &["--uninstall"]);
    assert_eq!(v["changed"].as_array().unwrap().len(), 2, "{v}");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(
        !text.contains("mcp_servers.memd") && text.contains("[mcp_servers.github]"),
        "{text}"
    );
    assert_eq!(read(&h.join(".codex/hooks.json")), json!({}));
}
