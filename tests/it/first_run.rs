//! A new user's first commands, through the real binary: a client given
//! only a data dir finds that data dir's daemon wherever it listens; a data
//! dir made with `mkdir` is made private once; `backup` never replaces a
//! file unasked; a Rust panic is refused like other stack traces; a shell
//! line may ask for JSON.

use std::os::unix::fs::PermissionsExt;
use std::time::{Duration, Instant};

use crate::common::{Daemon, memd_command};
use serde_json::Value;

#[test]
fn a_client_given_only_the_data_dir_finds_its_daemon_on_another_socket() {
    let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
    let elsewhere = dir.path().join("run");
    std::fs::create_dir(&elsewhere).unwrap();
    let socket = elsewhere.join("other.sock");
    let mut d = Daemon::prepare(dir);
    d.extra = vec!["--socket".into(), socket.to_string_lossy().into_owned()];
    d.spawn();
    let data = d.data_dir();
    let home = d.dir.path().to_path_buf();
    let run = |args: &[&str]| {
        let started = Instant::now();
        let out = memd_command(&home)
            .env("MEMD_DATA_DIR", &data)
            .args(args)
            .output()
            .unwrap();
        (out, started.elapsed())
    };
    let (out, took) = run(&["--json", "add", "found the daemon"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Before, the client tried the data dir's default socket, started
    // daemons that lost the lock race for 10 s, then failed.
    assert!(took < Duration::from_secs(1), "took {took:?}");
    assert!(
        !data.join("memd.log").exists(),
        "no second daemon was started"
    );
    let (out, _) = run(&["--json", "status"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        status["paths"]["socket"],
        socket.to_str().unwrap(),
        "{status}"
    );
    // An explicit socket still wins.
    let (out, _) = run(&[
        "--no-autostart",
        "--socket",
        data.join("memd.sock").to_str().unwrap(),
        "status",
    ]);
    assert!(!out.status.success());
    // Once the daemon is gone, the lock names nobody.
    d.terminate();
    let (out, took) = run(&["--no-autostart", "status"]);
    assert!(!out.status.success());
    assert!(took < Duration::from_secs(1), "took {took:?}");
}

#[test]
fn a_data_dir_made_with_mkdir_is_made_private_once() {
    let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
    let mut d = Daemon::prepare(dir);
    std::fs::create_dir_all(d.data_dir()).unwrap();
    std::fs::set_permissions(d.data_dir(), std::fs::Permissions::from_mode(0o755)).unwrap();
    d.spawn();
    let mode = std::fs::metadata(d.data_dir())
        .unwrap()
        .permissions()
        .mode()
        & 0o777;
    assert_eq!(mode, 0o700);
    assert!(
        d.log().contains("data directory made private"),
        "{}",
        d.log()
    );
    d.terminate();
    d.spawn();
    assert_eq!(d.log().matches("made private").count(), 1, "{}", d.log());
    assert!(
        !d.log().contains("accessible to other users"),
        "{}",
        d.log()
    );
}

#[test]
fn backup_replaces_an_existing_file_only_when_asked() {
    let d = Daemon::start();
    let (v, code) = d.json(&["add", "worth keeping"]);
    assert_eq!(code, 0, "{v}");
    let file = d.dir.path().join("copy.db");
    std::fs::write(&file, b"precious").unwrap();
    let (v, code) = d.json(&["backup", file.to_str().unwrap()]);
    assert_eq!(code, 2, "{v}");
    assert!(v["error"].as_str().unwrap().contains("--force"), "{v}");
    assert_eq!(std::fs::read(&file).unwrap(), b"precious");
    let (v, code) = d.json(&["backup", "--force", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert!(
        std::fs::read(&file)
            .unwrap()
            .starts_with(b"SQLite format 3")
    );
}

#[test]
fn a_rust_panic_is_refused_like_a_python_traceback() {
    let d = Daemon::start();
    for trace in [
        "thread 'main' panicked at src/main.rs:10:5:\ncalled `Option::unwrap()` on a `None` value\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
        "Traceback (most recent call last):\n  File \"/app/main.py\", line 8, in run\n    1/0\nZeroDivisionError: division by zero",
    ] {
        let (v, code) = d.json(&["add", trace]);
        assert_eq!(code, 6, "{v}");
        assert_eq!(v["reason"], "code_derivable", "{v}");
    }
    let (v, code) = d.json(&[
        "add",
        "The sync thread panicked at startup until the config had a default.",
    ]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn a_shell_line_may_ask_for_json() {
    let d = Daemon::start();
    let (v, code) = d.json(&["add", "--category", "preference", "tabs in Makefiles"]);
    assert_eq!(code, 0, "{v}");
    let out = d.cli_stdin(
        &["shell"],
        Some(b"inject --json\n{\"command\": \"list\", \"json\": true}\nlist\n"),
    );
    assert_eq!(out.code, 0, "{}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    let first: Value = serde_json::from_str(lines[0]).unwrap_or_else(|e| panic!("{e}: {lines:?}"));
    assert!(
        first["block"]
            .as_str()
            .unwrap()
            .contains("tabs in Makefiles"),
        "{first}"
    );
    let second: Value = serde_json::from_str(lines[1]).unwrap();
    assert_eq!(second["memories"].as_array().unwrap().len(), 1);
    assert!(
        serde_json::from_str::<Value>(lines[2]).is_err(),
        "a line without --json stays text: {lines:?}"
    );
}

#[test]
fn the_namespace_comes_from_the_flag_the_environment_the_config_then_the_git_root() {
    let d = Daemon::start();
    let project = d.dir.path().join("shop");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let run = |env: Option<&str>, args: &[&str]| {
        let mut cmd = memd_command(d.dir.path());
        cmd.current_dir(&project)
            .arg("--data-dir")
            .arg(d.data_dir())
            .args(["--no-autostart", "--json"])
            .args(args);
        if let Some(ns) = env {
            cmd.env("MEMD_NAMESPACE", ns);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let ns_of = |v: &Value| v["memories"][0]["namespace"].as_str().unwrap().to_string();
    run(None, &["add", "from the project"]);
    let project_ns = ns_of(&run(None, &["list"]));
    assert!(project_ns.starts_with("shop-"), "{project_ns}");
    run(Some("from-env"), &["add", "from the environment"]);
    assert_eq!(ns_of(&run(Some("from-env"), &["list"])), "from-env");
    run(
        Some("from-env"),
        &["--namespace", "from-flag", "add", "from the flag"],
    );
    assert_eq!(
        ns_of(&run(None, &["--namespace", "from-flag", "list"])),
        "from-flag"
    );
    let config = d.dir.path().join("xdg-config/memd/config.toml");
    std::fs::create_dir_all(config.parent().unwrap()).unwrap();
    std::fs::write(&config, "[client]\nnamespace = \"team\"\n").unwrap();
    run(None, &["add", "from the config"]);
    let v = run(None, &["list"]);
    assert_eq!(ns_of(&v), "team");
    assert_eq!(v["memories"].as_array().unwrap().len(), 1);
    assert_eq!(
        ns_of(&run(Some("from-env"), &["list"])),
        "from-env",
        "the environment wins"
    );
}
