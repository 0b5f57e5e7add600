//! `memd doctor` through the real binary, in a temporary home with real
//! git repositories: it passes on a healthy setup and fails the check that
//! names what was broken (the hooks removed, their binary path wrong, the
//! MCP entry wrong, the model missing, the daemon down — and it starts
//! none —, a team glob that misses the namespace, an untrusted
//! `.memd.toml`, a recent hook failure, Claude Code's project setup seen
//! from a subdirectory, Codex's hook trust). A failing hook records its
//! failure where doctor reads it; `add` and `team status` warn about a
//! glob that misses.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::common::{Daemon, git, memd_command, memd_json_status_in, memd_ok_in};

/// `memd --data-dir DATA --json doctor ARGS` in `cwd` for `home`: its JSON
/// and exit code.
fn doctor(home: &Path, cwd: &Path, data: &Path, args: &[&str]) -> (Value, i32) {
    let args: Vec<&str> = std::iter::once("doctor")
        .chain(args.iter().copied())
        .collect();
    memd_json_status_in(home, cwd, data, &args)
}

/// The check named `name`: (verdict, detail, fix).
fn verdict(v: &Value, name: &str) -> (String, String, Value) {
    let c = v["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no check {name} in {v:#}"));
    (
        c["verdict"].as_str().unwrap().to_string(),
        c["detail"].as_str().unwrap().to_string(),
        c["fix"].clone(),
    )
}

/// A repository at `home/api` whose origin is `url`.
fn repo(home: &Path, url: &str) -> PathBuf {
    let root = home.join("api");
    std::fs::create_dir_all(root.join("src")).unwrap();
    git(&root, &["init", "-q"]);
    git(&root, &["remote", "add", "origin", url]);
    root
}

fn run(home: &Path, cwd: &Path, data: &Path, args: &[&str]) -> std::process::Output {
    let data = data.to_str().unwrap();
    let args: Vec<&str> = ["--data-dir", data]
        .into_iter()
        .chain(args.iter().copied())
        .collect();
    memd_ok_in(home, cwd, &args)
}

fn edit(path: &Path, f: impl FnOnce(&mut Value)) {
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    f(&mut v);
    std::fs::write(path, serde_json::to_string_pretty(&v).unwrap()).unwrap();
}

#[test]
fn doctor_passes_when_healthy_and_fails_the_hooks_or_server_that_are_broken() {
    let d = Daemon::start();
    let home = d.dir.path();
    let data = d.data_dir();
    let root = repo(home, "git@github.com:acme/api.git");
    run(home, &root, &data, &["setup", "claude-code"]);

    let (v, code) = doctor(home, &root, &data, &[]);
    assert_eq!(code, 0, "{v:#}");
    assert_eq!(v["ok"], true);
    for c in v["checks"].as_array().unwrap() {
        let keys: Vec<&String> = c.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["detail", "fix", "name", "verdict"], "{c}");
        assert!(
            ["pass", "skip"].contains(&c["verdict"].as_str().unwrap()),
            "{c}"
        );
    }
    let (daemon, detail, _) = verdict(&v, "daemon");
    assert_eq!(daemon, "pass");
    assert!(
        detail.contains(&d.socket().display().to_string()),
        "{detail}"
    );
    let (_, ns, _) = verdict(&v, "namespace");
    assert!(ns.starts_with("github.com/acme/api (the origin"), "{ns}");
    assert_eq!(verdict(&v, "claude-code hooks").0, "pass");
    assert_eq!(verdict(&v, "claude-code mcp").0, "pass");
    let (codex, _, fix) = verdict(&v, "codex");
    assert_eq!(codex, "skip", "a host not set up is not applicable");
    assert_eq!(fix, "memd setup codex");
    assert_eq!(verdict(&v, "team").0, "skip");

    // The hooks removed from the host's settings file.
    let settings = home.join(".claude/settings.json");
    edit(&settings, |s| {
        s["hooks"].as_object_mut().unwrap().remove("SessionStart");
    });
    let (v, code) = doctor(home, &root, &data, &[]);
    assert_eq!((code, v["ok"].clone()), (1, json!(false)));
    let (hooks, detail, fix) = verdict(&v, "claude-code hooks");
    assert_eq!(hooks, "fail");
    assert!(detail.contains("no memd hook for SessionStart"), "{detail}");
    assert_eq!(fix, "memd setup claude-code");
    assert_eq!(verdict(&v, "daemon").0, "pass", "only what broke fails");

    // The binary path in them wrong.
    run(home, &root, &data, &["setup", "claude-code"]);
    assert_eq!(doctor(home, &root, &data, &[]).1, 0, "setup fixed it");
    let text = std::fs::read_to_string(&settings).unwrap();
    let exe = std::fs::canonicalize(crate::common::BIN).unwrap();
    let moved = text.replace(&exe.display().to_string(), "/opt/old/memd");
    assert_ne!(moved, text);
    std::fs::write(&settings, moved).unwrap();
    let (v, code) = doctor(home, &root, &data, &[]);
    assert_eq!(code, 1);
    let (hooks, detail, _) = verdict(&v, "claude-code hooks");
    assert_eq!(hooks, "fail");
    assert!(
        detail.contains("they run /opt/old/memd, not this memd"),
        "{detail}"
    );

    // The MCP entry pointing elsewhere.
    run(home, &root, &data, &["setup", "claude-code"]);
    edit(&home.join(".claude.json"), |c| {
        c["mcpServers"]["memd"]["command"] = json!("/opt/old/memd");
    });
    let (v, code) = doctor(home, &root, &data, &[]);
    assert_eq!(code, 1);
    let (mcp, detail, fix) = verdict(&v, "claude-code mcp");
    assert_eq!(mcp, "fail", "{detail}");
    assert_eq!(fix, "memd setup claude-code");
    assert_eq!(verdict(&v, "claude-code hooks").0, "pass");

    // The human form: a line per check, a fix line under the failure.
    let out = memd_command(home)
        .current_dir(&root)
        .arg("--data-dir")
        .arg(&data)
        .arg("doctor")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("fail  claude-code mcp"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        lines[at + 1].trim_start() == "fix: memd setup claude-code",
        "{text}"
    );
    assert_eq!(*lines.last().unwrap(), "1 check failed");
}

#[test]
fn doctor_fails_on_a_daemon_that_is_down_and_starts_none() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let data = h.join("data");
    let (v, code) = doctor(h, h, &data, &[]);
    assert_eq!(code, 1, "{v:#}");
    let (daemon, detail, fix) = verdict(&v, "daemon");
    assert_eq!(daemon, "fail");
    assert!(detail.contains("doctor starts none"), "{detail}");
    assert!(fix.as_str().unwrap().contains("memd service install"));
    assert_eq!(
        verdict(&v, "namespace").1,
        "default (not in a git repository: the daemon's default)"
    );
    assert!(
        !data.join("memd.sock").exists() && !data.join("memory.db").exists(),
        "no daemon was started"
    );
}

#[test]
fn doctor_fails_on_a_missing_model_the_config_asks_for() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let config = h.join("config.toml");
    let models = h.join("no-model-here");
    std::fs::write(
        &config,
        format!(
            "[embed]\nprovider = \"local\"\nmodel_dir = \"{}\"\n",
            models.display()
        ),
    )
    .unwrap();
    let (v, code) = doctor(
        h,
        h,
        &h.join("data"),
        &["--config", config.to_str().unwrap()],
    );
    assert_eq!(code, 1);
    let (embed, detail, fix) = verdict(&v, "embedder");
    assert_eq!(embed, "fail", "{detail}");
    assert!(detail.contains("model.safetensors"), "{detail}");
    assert_eq!(fix, "memd model fetch");
    // Not asked for: not applicable.
    std::fs::write(&config, "[embed]\nprovider = \"none\"\n").unwrap();
    let (v, _) = doctor(
        h,
        h,
        &h.join("data"),
        &["--config", config.to_str().unwrap()],
    );
    assert_eq!(verdict(&v, "embedder").0, "skip");
}

#[test]
fn a_glob_that_misses_the_namespace_fails_doctor_and_warns_add_and_team_status() {
    let d = Daemon::with_config(
        "[team]\nurl = \"postgres://memd@127.0.0.1:1/memd?connect_timeout=1\"\n\
         namespaces = [\"github.com/acme/*\"]\ntimeout_ms = 500\n",
    );
    let home = d.dir.path();
    let data = d.data_dir();
    let config = d.dir.path().join("config.toml");
    let config = config.to_str().unwrap();
    let root = repo(home, "https://github.com/acme/api.git");
    std::fs::write(root.join(".memd.toml"), "namespace = \"acme-api\"\n").unwrap();

    // Untrusted, the file is not used, and doctor says how to trust it.
    let (v, _) = doctor(home, &root, &data, &["--config", config]);
    let (file, detail, fix) = verdict(&v, "project file");
    assert_eq!(file, "fail", "{detail}");
    assert!(fix.as_str().unwrap().starts_with("memd trust "), "{fix}");
    assert_eq!(
        verdict(&v, "shared").0,
        "pass",
        "the derived name is shared"
    );

    run(home, &root, &data, &["trust"]);
    let (v, code) = doctor(home, &root.join("src"), &data, &["--config", config]);
    assert_eq!(code, 1);
    assert_eq!(verdict(&v, "project file").0, "pass");
    let (shared, detail, _) = verdict(&v, "shared");
    assert_eq!(shared, "fail");
    assert!(
        detail
            .contains("`github.com/acme/*` matches this repository's origin (github.com/acme/api)")
            && detail.contains("`acme-api`"),
        "{detail}"
    );
    // The team's server cannot be reached: its check fails and says why.
    let (team, detail, _) = verdict(&v, "team");
    assert_eq!(team, "fail", "{detail}");

    let add = |args: &[&str]| {
        let mut all = vec!["--no-autostart", "--config", config];
        all.extend_from_slice(args);
        run(home, &root, &data, &all)
    };
    let out = add(&["--json", "add", "a note"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("matches this repository's origin"),
        "{stderr}"
    );
    let stored: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stored["success"], true, "stdout is the command's own");
    let personal = add(&["add", "--personal", "mine"]);
    assert!(
        !String::from_utf8_lossy(&personal.stderr).contains("origin"),
        "a personal memory is never shared: no note"
    );
    let out = add(&["team", "status"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("but not the namespace in use, `acme-api`")
    );
}

#[test]
fn a_glob_written_as_a_clone_url_fails_the_shared_check() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let config = h.join("config.toml");
    std::fs::write(
        &config,
        "[team]\nurl = \"postgres://memd@127.0.0.1:1/memd\"\nnamespaces = [\"git@github.com:acme/*\"]\n",
    )
    .unwrap();
    let root = repo(h, "git@github.com:acme/api.git");
    let (v, _) = doctor(
        h,
        &root,
        &h.join("data"),
        &["--config", config.to_str().unwrap()],
    );
    let (shared, detail, fix) = verdict(&v, "shared");
    assert_eq!(shared, "fail");
    assert!(
        detail.contains("written as a clone URL") && detail.contains("`github.com/acme/api`"),
        "{detail}"
    );
    assert!(
        fix.as_str().unwrap().contains("\"github.com/acme/*\""),
        "the glob to write: {fix}"
    );
    assert_eq!(verdict(&v, "team").0, "fail", "no daemon to connect");
}

#[test]
fn a_failing_hook_records_its_failure_and_doctor_shows_it() {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let data = h.join("data");
    let event = json!({
        "hook_event_name": "SessionStart",
        "session_id": "s1",
        "cwd": h,
        "prompt": "my secret prompt text",
    });
    let mut child = memd_command(h)
        .arg("--data-dir")
        .arg(&data)
        .args(["--no-autostart", "hook", "claude-code"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(event.to_string().as_bytes()).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "a hook fails open");
    assert!(out.stdout.is_empty());
    let record = h.join("xdg-state/memd/hook-failures.json");
    let text = std::fs::read_to_string(&record).unwrap();
    assert!(!text.contains("secret") && !text.contains("s1"), "{text}");
    let list: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(list[0]["host"], "claude-code");
    assert_eq!(list[0]["event"], "SessionStart");
    assert_eq!(list[0]["code"], "unreachable");
    let mode = std::fs::metadata(&record).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);

    let (v, code) = doctor(h, h, &data, &[]);
    assert_eq!(code, 1);
    let (failures, detail, _) = verdict(&v, "hook failures");
    assert_eq!(failures, "fail");
    assert!(
        detail.contains("1 recorded (1 in the last 24 h)")
            && detail.contains("claude-code SessionStart unreachable"),
        "{detail}"
    );
    // Two days old: shown, not failed.
    let old = json!([{"at": list[0]["at"].as_i64().unwrap() - 2 * 86_400,
        "host": "codex", "event": "Stop", "code": "timeout"}]);
    std::fs::write(&record, old.to_string()).unwrap();
    let (v, _) = doctor(h, h, &data, &[]);
    let (failures, detail, _) = verdict(&v, "hook failures");
    assert_eq!(failures, "pass");
    assert!(detail.contains("codex Stop timeout"), "{detail}");
}

#[test]
fn claude_code_project_setup_fails_from_a_subdirectory() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let data = h.join("data");
    let root = repo(h, "git@github.com:acme/api.git");
    run(h, &root, &data, &["setup", "claude-code", "--project"]);
    let (v, _) = doctor(h, &root, &data, &[]);
    assert_eq!(verdict(&v, "claude-code hooks").0, "pass");
    let (v, _) = doctor(h, &root.join("src"), &data, &[]);
    let (hooks, detail, fix) = verdict(&v, "claude-code hooks");
    assert_eq!(hooks, "fail");
    assert!(detail.contains("only when started at its root"), "{detail}");
    assert!(
        fix.as_str()
            .unwrap()
            .contains(&root.canonicalize().unwrap().display().to_string())
    );
}

#[test]
fn codex_hooks_fail_until_codex_trusts_them() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let data = h.join("data");
    run(h, h, &data, &["setup", "codex"]);
    let (v, _) = doctor(h, h, &data, &[]);
    assert_eq!(verdict(&v, "codex hooks").0, "pass");
    assert_eq!(verdict(&v, "codex mcp").0, "pass");
    let (trust, detail, _) = verdict(&v, "codex hook trust");
    assert_eq!(trust, "fail", "{detail}");
    // What Codex records once the person trusts them.
    let hooks = h.join(".codex/hooks.json");
    let mut config = std::fs::read_to_string(h.join(".codex/config.toml")).unwrap();
    for event in ["session_start", "pre_compact", "stop"] {
        config.push_str(&format!(
            "\n[hooks.state.\"{}:{event}:0:0\"]\ntrusted_hash = \"sha256:00\"\n",
            hooks.display()
        ));
    }
    std::fs::write(h.join(".codex/config.toml"), config).unwrap();
    let (v, _) = doctor(h, h, &data, &[]);
    assert_eq!(verdict(&v, "codex hook trust").0, "pass");
}

#[test]
fn the_team_check_passes_connected_to_a_real_postgresql() {
    let Some(pg) = crate::common::pg::Pg::start() else {
        return;
    };
    let d = Daemon::with_config(&format!(
        "[team]\nurl = \"{}\"\nnamespaces = [\"github.com/acme/*\"]\nmachine = \"a\"\ntimeout_ms = 3000\n",
        pg.url()
    ));
    let home = d.dir.path();
    let init = memd_command(home)
        .args(["team", "init", "--json"])
        .env("MEMD_TEAM_URL", pg.url())
        .output()
        .unwrap();
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let root = repo(home, "ssh://git@github.com/acme/api.git");
    let config = home.join("config.toml");
    let args = ["--config", config.to_str().unwrap()];
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let v = loop {
        let (v, _) = doctor(home, &root, &d.data_dir(), &args);
        if verdict(&v, "team").0 == "pass" || std::time::Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let (team, detail, _) = verdict(&v, "team");
    assert_eq!(team, "pass", "{detail}");
    assert!(detail.contains("connected to"), "{detail}");
    let (shared, detail, _) = verdict(&v, "shared");
    assert_eq!(shared, "pass", "{detail}");
    assert!(detail.contains("github.com/acme/api is shared"), "{detail}");
    // The server gone: the check fails.
    pg.stop("immediate");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let v = loop {
        let (v, _) = doctor(home, &root, &d.data_dir(), &args);
        if verdict(&v, "team").0 == "fail" || std::time::Instant::now() > deadline {
            break v;
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    assert_eq!(verdict(&v, "team").0, "fail", "{v:#}");
}
