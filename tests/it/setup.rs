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
    let args: Vec<&str> = ["--json", "setup", host]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    serde_json::from_slice(&crate::common::memd_ok_in(home, cwd, &args).stdout).unwrap()
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

    // A dry run writes nothing and shows what it would write.
    let v = setup(h, h, &["--dry-run"]);
    assert_eq!(v["changed"].as_array().unwrap().len(), 2, "{v}");
    assert_eq!(read(&settings_path), settings);
    let shown: Value = serde_json::from_str(v["changed"][0]["new"].as_str().unwrap()).unwrap();
    assert_eq!(
        shown["permissions"]["allow"],
        json!(["Bash(ls:*)", "mcp__memd"]),
        "{v}"
    );

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
    for key in ["model", "env"] {
        assert_eq!(s[key], settings[key], "{key}");
    }
    // memd's tools run without a prompt: one rule next to the user's own.
    assert_eq!(
        s["permissions"],
        json!({"allow": ["Bash(ls:*)", "mcp__memd"], "deny": []})
    );
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
    assert_eq!(
        c["mcpServers"]["memd"]["args"],
        json!(["mcp", "--agent", "claude-code"]),
        "the server writes as Claude Code"
    );

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

/// `memd --json setup claude-code ARGS` in `cwd` with `PATH` set to
/// `path`.
fn setup_with_path(home: &Path, cwd: &Path, path: &str, args: &[&str]) -> Value {
    let out = memd_command(home)
        .current_dir(cwd)
        .env("PATH", path)
        .args(["--json", "setup", "claude-code"])
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

#[test]
fn project_setup_writes_at_the_repository_root_names_memd_on_path_and_approves_the_server() {
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("shop");
    let sub = project.join("src/deep");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    std::fs::create_dir_all(&sub).unwrap();
    let bin_dir = Path::new(BIN).parent().unwrap().display().to_string();
    let with_memd = format!("{bin_dir}:/usr/bin:/bin");
    // From a subdirectory: the files go to the repository's root.
    let v = setup_with_path(home.path(), &sub, &with_memd, &["--project"]);
    assert_eq!(v["changed"].as_array().unwrap().len(), 3, "{v}");
    assert!(v["namespace"].as_str().unwrap().starts_with("shop-"), "{v}");
    assert!(!sub.join(".mcp.json").exists() && !sub.join(".claude").exists());
    let mcp = read(&project.join(".mcp.json"));
    assert_eq!(
        mcp["mcpServers"]["memd"],
        json!({"type": "stdio", "command": "memd", "args": ["mcp", "--agent", "claude-code"]}),
        "the shared file names memd, found on PATH, not this user's path"
    );
    let s = read(&project.join(".claude/settings.json"));
    assert_eq!(
        s["hooks"]["SessionStart"][0]["hooks"][0]["command"],
        "memd hook claude-code"
    );
    assert_eq!(s["permissions"]["allow"], json!(["mcp__memd"]));
    // The project's server is approved in the user's own settings.
    let user = read(&home.path().join(".claude/settings.json"));
    assert_eq!(user, json!({"enabledMcpjsonServers": ["memd"]}));
    assert!(
        !home.path().join(".claude.json").exists(),
        "the user's server list is untouched"
    );
    // Uninstall takes all three back.
    let v = setup_with_path(
        home.path(),
        &project,
        &with_memd,
        &["--project", "--uninstall"],
    );
    assert_eq!(v["changed"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(read(&project.join(".mcp.json")), json!({}));
    assert_eq!(read(&home.path().join(".claude/settings.json")), json!({}));

    // No memd on PATH: the absolute path, and the output says so.
    let out = memd_command(home.path())
        .current_dir(&project)
        .env("PATH", "/usr/bin:/bin")
        .args(["setup", "claude-code", "--project"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("no memd on PATH"));
    let binary = std::fs::canonicalize(BIN).unwrap();
    assert_eq!(
        read(&project.join(".mcp.json"))["mcpServers"]["memd"]["command"],
        binary.to_str().unwrap()
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
    assert!(text.contains("[features]\nhooks = true"), "{text}");
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

#[test]
fn gemini_setup_puts_hooks_and_a_trusted_server_in_one_settings_file() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    std::fs::create_dir_all(h.join(".gemini")).unwrap();
    let settings = json!({"theme": "GitHub", "tools": {"sandbox": false},
                          "mcpServers": {"github": {"command": "gh-mcp"}}});
    let path = h.join(".gemini/settings.json");
    std::fs::write(&path, settings.to_string()).unwrap();
    let v = setup_in(h, h, "gemini", &[]);
    assert_eq!(v["changed"].as_array().unwrap().len(), 1, "one file: {v}");
    let s = read(&path);
    for event in ["SessionStart", "PreCompress", "SessionEnd"] {
        assert!(
            s["hooks"][event][0]["hooks"][0]["command"]
                .as_str()
                .unwrap()
                .ends_with(" hook gemini"),
            "{event}: {s}"
        );
    }
    assert_eq!(s["tools"], json!({"sandbox": false, "enableHooks": true}));
    assert_eq!(
        s["mcpServers"]["memd"]["args"],
        json!(["mcp", "--agent", "gemini"])
    );
    assert_eq!(s["mcpServers"]["memd"]["trust"], true);
    assert_eq!(s["mcpServers"]["github"], settings["mcpServers"]["github"]);
    assert_eq!(s["theme"], "GitHub");
    let again = setup_in(h, h, "gemini", &[]);
    assert_eq!(again["changed"], json!([]), "{again}");
    setup_in(h, h, "gemini", &["--uninstall"]);
    let s = read(&path);
    assert_eq!(
        s,
        json!({"theme": "GitHub", "tools": {"sandbox": false, "enableHooks": true},
               "mcpServers": {"github": {"command": "gh-mcp"}}}),
        "its hooks and server go; the hooks system stays on"
    );
}
