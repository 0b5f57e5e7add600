//! The CLI contract through the real binary: commands, output forms, exit
//! codes, stdin content, the shell, autostart.

use crate::common::{Daemon, ids, memd_command};
use serde_json::Value;
use std::process::Stdio;
use std::time::Duration;

#[test]
fn add_get_search_update_forget_round_trip_json() {
    let d = Daemon::start();
    let (added, code) = d.json(&[
        "add",
        "The deploy script lives in ops/deploy.sh",
        "--tag",
        "ops",
        "--category",
        "fact",
        "--subject",
        "deploy",
        "--meta",
        "port=5432",
    ]);
    assert_eq!(code, 0, "{added}");
    assert_eq!(added["success"], true);
    assert_eq!(added["accepted"], true);
    assert_eq!(added["deduped"], false);
    assert_eq!(added["drift"], Value::Null);
    let id = added["id"].as_i64().unwrap();

    let (got, code) = d.json(&["get", &id.to_string()]);
    assert_eq!(code, 0);
    let m = &got["memory"];
    assert_eq!(m["content"], "The deploy script lives in ops/deploy.sh");
    assert_eq!(m["tags"], serde_json::json!(["ops"]));
    assert_eq!(m["category"], "fact");
    assert_eq!(m["subject"], "deploy");
    assert_eq!(m["metadata"]["port"], 5432);
    assert_eq!(m["rev"], 1);
    assert_eq!(m["scope"], "project");
    assert_eq!(m["source"], "user", "a person at the CLI");
    // Every memory has the one shape: SQL columns plus tags.
    for key in [
        "id",
        "uid",
        "namespace",
        "scope",
        "scope_owner",
        "content",
        "subject",
        "category",
        "tier",
        "importance",
        "confidence",
        "pinned",
        "status",
        "metadata",
        "tags",
        "superseded_by",
        "superseded_at",
        "dedupe_key",
        "observation_count",
        "confirmed_count",
        "last_confirmed_at",
        "use_count",
        "last_used_at",
        "access_score",
        "source",
        "created_by",
        "expires_at",
        "created_at",
        "updated_at",
        "rev",
    ] {
        assert!(m.get(key).is_some(), "memory lacks {key}: {m}");
    }

    let (found, code) = d.json(&["search", "deploy"]);
    assert_eq!(code, 0);
    assert_eq!(ids(&found, "hits"), vec![id]);
    let hit = &found["hits"][0];
    assert!(hit["score"].as_f64().unwrap() > 0.0, "{hit}");
    assert_eq!(hit["matched"], "lexical");

    let (updated, code) = d.json(&[
        "update",
        &id.to_string(),
        "--content",
        "The deploy script moved to ops/ship.sh",
        "--expect-rev",
        "1",
    ]);
    assert_eq!(code, 0, "{updated}");
    assert_eq!(updated["memory"]["rev"], 2);
    assert_eq!(updated["memory"]["tags"], serde_json::json!(["ops"]));
    let (found, _) = d.json(&["search", "ship"]);
    assert_eq!(ids(&found, "hits"), vec![id]);
    let (cleared, code) = d.json(&["update", &id.to_string(), "--clear-tags"]);
    assert_eq!(code, 0, "{cleared}");
    assert_eq!(cleared["memory"]["tags"], serde_json::json!([]));
    let (found, _) = d.json(&["search", "deploy.sh"]);
    assert!(
        !ids(&found, "hits").is_empty(),
        "old words still match 'deploy'"
    );

    let (gone, code) = d.json(&["forget", &id.to_string()]);
    assert_eq!(code, 0);
    assert_eq!(gone["forgotten"], true);
    let (missing, code) = d.json(&["get", &id.to_string()]);
    assert_eq!(code, 1);
    assert_eq!(missing["success"], false);
    assert_eq!(missing["code"], "not_found");
    let (found, _) = d.json(&["search", "ship"]);
    assert!(ids(&found, "hits").is_empty());
}

#[test]
fn human_output_is_readable() {
    let d = Daemon::start();
    let out = d.cli(&["add", "Use tabs in the Makefile", "--tag", "build"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.trim(), "stored #1");
    let out = d.cli(&["get", "1"]);
    assert!(out.stdout.contains("Use tabs in the Makefile"), "{out:?}");
    assert!(out.stdout.contains("tags         build"), "{out:?}");
    let out = d.cli(&["search", "makefile"]);
    assert!(
        out.stdout
            .contains("#1 [note] Use tabs in the Makefile  (build)"),
        "{out:?}"
    );
    let out = d.cli(&["list"]);
    assert_eq!(
        out.stdout.trim(),
        "#1 [note] Use tabs in the Makefile  (build)"
    );
    let out = d.cli(&["update", "1", "--pin"]);
    assert_eq!(out.stdout.trim(), "updated #1 (rev 2)");
    let out = d.cli(&["forget", "1"]);
    assert_eq!(out.stdout.trim(), "forgot #1");
    let out = d.cli(&["get", "1"]);
    assert_eq!(out.code, 1);
    assert!(out.stdout.is_empty());
    assert_eq!(out.stderr.trim(), "memd: memory 1 not found");
    let out = d.cli(&["status"]);
    assert!(out.stdout.contains("memories     0"), "{out:?}");
}

#[test]
fn wrong_expect_rev_is_a_conflict_and_changes_nothing() {
    let d = Daemon::start();
    d.cli(&["add", "The staging database is on port 5432"]);
    d.cli(&["update", "1", "--tier", "1"]); // rev 2
    let (err, code) = d.json(&["update", "1", "--content", "changed", "--expect-rev", "1"]);
    assert_eq!(code, 4, "{err}");
    assert_eq!(err["code"], "conflict");
    assert_eq!(err["current_rev"], 2);
    let (err, code) = d.json(&["forget", "1", "--expect-rev", "7"]);
    assert_eq!(code, 4, "{err}");
    let (got, _) = d.json(&["get", "1"]);
    assert_eq!(
        got["memory"]["content"],
        "The staging database is on port 5432"
    );
    assert_eq!(got["memory"]["rev"], 2);
    // The right rev goes through.
    let (_, code) = d.json(&["forget", "1", "--expect-rev", "2"]);
    assert_eq!(code, 0);
}

#[test]
fn text_may_begin_with_a_dash_and_come_from_stdin_or_a_file() {
    let d = Daemon::start();
    let (a, code) = d.json(&["add", "-x marks the spot"]);
    assert_eq!(code, 0, "{a}");
    let (b, code) = d.json(&["add", "--", "--tag is literal here"]);
    assert_eq!(code, 0, "{b}");
    let out = d.cli_stdin(
        &["--json", "add", "-", "--tag", "multi"],
        Some(b"line one\nline two\n"),
    );
    assert_eq!(out.code, 0, "{out:?}");
    let c = out.json()["id"].as_i64().unwrap();
    let file = d.dir.path().join("note.txt");
    std::fs::write(&file, "from a file").unwrap();
    let (f, code) = d.json(&["add", "--file", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{f}");

    let (got, _) = d.json(&["get", &a["id"].to_string()]);
    assert_eq!(got["memory"]["content"], "-x marks the spot");
    let (got, _) = d.json(&["get", &b["id"].to_string()]);
    assert_eq!(got["memory"]["content"], "--tag is literal here");
    assert_eq!(got["memory"]["tags"], serde_json::json!([]));
    let (got, _) = d.json(&["get", &c.to_string()]);
    assert_eq!(got["memory"]["content"], "line one\nline two\n");
    let (got, _) = d.json(&["get", &f["id"].to_string()]);
    assert_eq!(got["memory"]["content"], "from a file");
    let (found, _) = d.json(&["search", "-x"]);
    assert_eq!(ids(&found, "hits"), vec![a["id"].as_i64().unwrap()]);

    let out = d.cli_stdin(&["--json", "add", "-"], Some(&[0xff, 0xfe, b'x']));
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.json()["error"].as_str().unwrap().contains("UTF-8"));
}

#[test]
fn one_mebibyte_from_stdin_is_refused_clearly() {
    let d = Daemon::start();
    let big = vec![b'a'; 1024 * 1024];
    let out = d.cli_stdin(&["--json", "add", "-"], Some(&big));
    assert_eq!(out.code, 6, "{out:?}");
    let v = out.json();
    assert_eq!(v["success"], false);
    assert_eq!(v["code"], "rejected");
    assert_eq!(v["reason"], "too_large");
    let msg = v["error"].as_str().unwrap();
    assert!(
        msg.contains("1048576 bytes") && msg.contains("10240"),
        "{msg}"
    );
    let out = d.cli_stdin(&["add", "-"], Some(&big));
    assert_eq!(out.code, 6);
    assert!(out.stderr.contains("the limit is 10240 bytes"), "{out:?}");
    assert_eq!(d.status()["counts"]["memories"], 0);
}

#[test]
fn fts_operator_characters_never_error() {
    let d = Daemon::start();
    d.cli(&[
        "add",
        "Quotes \"inside\" text and a col: colon, NEAR the end OR not",
    ]);
    for q in [
        "\"",
        "*",
        "OR",
        "NEAR(",
        "-x",
        "col:",
        "nosuchcol:foo",
        "\"unbalanced",
        "a AND",
        "(",
        ")",
        "^",
        "''",
        "NOT",
        "☃ emoji 🎉",
    ] {
        let (v, code) = d.json(&["search", q]);
        assert_eq!(code, 0, "query {q:?}: {v}");
        assert_eq!(v["success"], true, "query {q:?}");
    }
    let (v, _) = d.json(&["search", "col:"]);
    assert_eq!(ids(&v, "hits"), vec![1]);
    let (v, _) = d.json(&["search", "NEAR("]);
    assert_eq!(ids(&v, "hits"), vec![1]);
    // The explicit FTS syntax reports its syntax errors as invalid input.
    let (v, code) = d.json(&["search", "--syntax", "fts", "NEAR("]);
    assert_eq!(code, 2, "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("invalid FTS query"),
        "{v}"
    );
    let (v, code) = d.json(&["search", "--syntax", "fts", "inside OR nothing"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(ids(&v, "hits"), vec![1]);
}

#[test]
fn filters_limit_and_offset() {
    let d = Daemon::start();
    d.cli(&[
        "add",
        "alpha one",
        "--category",
        "fact",
        "--tag",
        "x",
        "--tag",
        "y",
    ]);
    d.cli(&["add", "alpha two", "--category", "decision", "--tag", "x"]);
    d.cli(&[
        "add",
        "alpha three",
        "--subject",
        "s1",
        "--meta",
        "env=prod",
    ]);
    d.cli(&[
        "add",
        "alpha four",
        "--scope",
        "agent",
        "--meta",
        "port=5432",
    ]);
    let list = |args: &[&str]| {
        let mut all = vec!["list"];
        all.extend_from_slice(args);
        let (v, code) = d.json(&all);
        assert_eq!(code, 0, "{v}");
        ids(&v, "memories")
    };
    assert_eq!(list(&[]), vec![4, 3, 2, 1]);
    assert_eq!(list(&["--limit", "2"]), vec![4, 3]);
    assert_eq!(list(&["--limit", "2", "--offset", "2"]), vec![2, 1]);
    assert_eq!(list(&["--category", "fact"]), vec![1]);
    assert_eq!(list(&["--tag", "x"]), vec![2, 1]);
    assert_eq!(list(&["--tag", "x", "--tag", "y"]), vec![1]);
    assert_eq!(list(&["--any-tag", "y", "--any-tag", "nope"]), vec![1]);
    // All of some tags and any of others cannot be asked at once.
    let (v, code) = d.json(&["list", "--tag", "x", "--any-tag", "y"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(list(&["--subject", "s1"]), vec![3]);
    assert_eq!(list(&["--scope", "agent"]), vec![4]);
    assert_eq!(list(&["--meta", "env=prod"]), vec![3]);
    assert_eq!(list(&["--meta", "port=5432"]), vec![4]);
    assert_eq!(list(&["--meta", "port=\"5432\""]), Vec::<i64>::new());
    assert_eq!(list(&["--since", "1h"]), vec![4, 3, 2, 1]);
    assert_eq!(list(&["--until", "1h"]), Vec::<i64>::new());
    // Another agent does not see agent-scope rows of this one.
    let (v, _) = d.json(&["--agent", "other", "list"]);
    assert_eq!(ids(&v, "memories"), vec![3, 2, 1]);
    let (v, code) = d.json(&["search", "alpha", "--category", "decision"]);
    assert_eq!(code, 0);
    assert_eq!(ids(&v, "hits"), vec![2]);
    // Search pages like list: the same order, cut at offset and limit.
    let (v, _) = d.json(&["search", "alpha"]);
    let all = ids(&v, "hits");
    assert_eq!(all.len(), 4, "{v}");
    let (v, code) = d.json(&["search", "alpha", "--offset", "1", "--limit", "2"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(ids(&v, "hits"), all[1..3].to_vec());
    let (v, code) = d.json(&["list", "--since", "yesterday"]);
    assert_eq!(code, 2, "{v}");
}

#[test]
fn namespaces_are_confined() {
    let d = Daemon::start();
    d.cli(&["--namespace", "a", "add", "secret plan of team a"]);
    d.cli(&["--namespace", "b", "add", "plan of team b"]);
    let (v, _) = d.json(&["--namespace", "b", "search", "plan"]);
    assert_eq!(ids(&v, "hits"), vec![2]);
    let (v, code) = d.json(&["--namespace", "b", "get", "1"]);
    assert_eq!(code, 1, "{v}");
    let (v, code) = d.json(&["--namespace", "b", "update", "1", "--content", "stolen"]);
    assert_eq!(code, 1, "{v}");
    let (v, code) = d.json(&["--namespace", "b", "forget", "1"]);
    assert_eq!(code, 1, "{v}");
    // Explicit opt-in reads across namespaces.
    let (v, _) = d.json(&["--namespace", "b", "search", "plan", "--all-namespaces"]);
    let mut found = ids(&v, "hits");
    found.sort_unstable();
    assert_eq!(found, vec![1, 2]);
    let (v, _) = d.json(&["--namespace", "b", "list", "--namespaces", "a"]);
    assert_eq!(ids(&v, "memories"), vec![1]);
    let (v, _) = d.json(&["--namespace", "a", "get", "1"]);
    assert_eq!(v["memory"]["content"], "secret plan of team a");
}

#[test]
fn usage_errors_exit_2_with_json() {
    let d = Daemon::start();
    let out = d.cli(&["--json", "add"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert_eq!(out.json()["code"], "usage");
    let out = d.cli(&["--json", "frobnicate"]);
    assert_eq!(out.code, 2);
    assert_eq!(out.json()["success"], false);
    let out = d.cli(&["get", "notanumber"]);
    assert_eq!(out.code, 2);
    let (v, code) = d.json(&["add", "x", "--tier", "9"]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(v["code"], "invalid_input");
    let (v, code) = d.json(&["add", "x", "--category", "gossip"]);
    assert_eq!(code, 6, "{v}");
    assert_eq!(v["reason"], "category");
    assert!(v["error"].as_str().unwrap().contains("preference"));
    let (v, code) = d.json(&["--drift-policy", "sometimes", "list"]);
    assert_eq!(code, 2, "{v}");
    let (v, code) = d.json(&["search", "x", "--mode", "semantic"]);
    assert_eq!(code, 2, "{v}");
    assert!(v["error"].as_str().unwrap().contains("no embedder"));
    let out = d.cli(&["--help"]);
    assert_eq!(out.code, 0);
    let out = d.cli(&["--version"]);
    assert_eq!(out.code, 0);
    assert!(out.stdout.contains(env!("CARGO_PKG_VERSION")));
}

#[test]
fn unreachable_daemon_exits_5() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let out = memd_command(dir.path())
        .args(["--json", "--no-autostart", "--data-dir"])
        .arg(&data)
        .args(["list"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(5));
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["code"], "unreachable");
    // status and stop never start a daemon.
    for cmd in ["status", "stop"] {
        let out = memd_command(dir.path())
            .args(["--data-dir"])
            .arg(&data)
            .arg(cmd)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(5), "{cmd}");
    }
    assert!(!data.join("memd.sock").exists());
}

#[test]
fn autostart_starts_one_daemon_and_stop_stops_it() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let run = |args: &[&str]| {
        let out = memd_command(dir.path())
            .arg("--data-dir")
            .arg(&data)
            .arg("--json")
            .args(args)
            .output()
            .unwrap();
        let v: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&out.stderr)));
        (v, out.status.code().unwrap())
    };
    // Several clients race to autostart; one daemon wins, all succeed.
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let dir = dir.path().to_path_buf();
            let data = data.clone();
            std::thread::spawn(move || {
                memd_command(&dir)
                    .arg("--data-dir")
                    .arg(&data)
                    .args(["--json", "add", &format!("autostarted memory {i}")])
                    .output()
                    .unwrap()
            })
        })
        .collect();
    for h in handles {
        let out = h.join().unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let (status, code) = run(&["status"]);
    assert_eq!(code, 0);
    assert_eq!(status["counts"]["memories"], 4);
    let perms = std::fs::metadata(&data).unwrap();
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(perms.permissions().mode() & 0o777, 0o700);
    let (v, code) = run(&["stop"]);
    assert_eq!(code, 0, "{v}");
    assert!(
        !data.join("memd.sock").exists(),
        "stop waits for the socket to go"
    );
    let log = std::fs::read_to_string(data.join("memd.log")).unwrap();
    assert!(log.contains("memd is serving"), "{log}");
    assert!(log.contains("memd stopped"), "{log}");
}

/// `memd stop` returns once the socket is gone, but the stopping daemon
/// holds the data dir's lock a moment longer: a command right after it
/// starts a daemon that loses the lock — and the command starts another.
#[test]
fn autostart_outlasts_a_daemon_still_holding_the_lock() {
    use std::os::unix::fs::DirBuilderExt;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&data)
        .unwrap();
    let lock = std::fs::File::create(data.join("memd.lock")).unwrap();
    lock.lock().unwrap();
    let release = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(800));
        drop(lock);
    });
    let out = memd_command(dir.path())
        .arg("--data-dir")
        .arg(&data)
        .args(["--json", "add", "stored once the lock is free"])
        .output()
        .unwrap();
    release.join().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{} {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let log = std::fs::read_to_string(data.join("memd.log")).unwrap();
    assert!(log.contains("already running"), "{log}");
    assert!(log.contains("memd is serving"), "{log}");
    let out = memd_command(dir.path())
        .arg("--data-dir")
        .arg(&data)
        .args(["--no-autostart", "stop"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
}

#[test]
fn shell_answers_every_line_with_one_json_line() {
    let d = Daemon::start();
    let script = concat!(
        "add \"hello shell\" --tag greet\n",
        "search hello\n",
        "{\"command\": \"add\", \"content\": \"multi\\nline content\", \"tags\": [\"a\"], \"metadata\": {\"k\": 1}}\n",
        "\n",
        "frobnicate\n",
        "get 999\n",
        "add 'unbalanced\n",
        "{not json\n",
        "get 2\n",
        "add -\n",
    );
    let out = d.cli_stdin(&["--json", "shell"], Some(script.as_bytes()));
    assert_eq!(out.code, 0, "{out:?}");
    let lines: Vec<Value> = out
        .stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 10, "{}", out.stdout);
    assert_eq!(lines[0]["id"], 1);
    assert_eq!(ids(&lines[1], "hits"), vec![1]);
    assert_eq!(lines[2]["id"], 2);
    assert_eq!(lines[3]["code"], "usage");
    assert_eq!(lines[4]["code"], "usage");
    assert_eq!(lines[5]["code"], "not_found");
    assert_eq!(lines[6]["code"], "usage");
    assert_eq!(lines[7]["code"], "usage");
    assert_eq!(lines[8]["memory"]["content"], "multi\nline content");
    assert_eq!(lines[8]["memory"]["metadata"]["k"], 1);
    assert_eq!(lines[9]["code"], "usage");
    // One session for the whole shell: the status from inside it sees 1.
    let out = d.cli_stdin(&["--json", "shell"], Some(b"status\n"));
    let v: Value = serde_json::from_str(out.stdout.trim()).unwrap();
    assert_eq!(v["sessions"], 1);
}

#[test]
fn long_socket_path_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let long = dir.path().join("d".repeat(120)).join("memd.sock");
    let out = memd_command(dir.path())
        .arg("daemon")
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--socket")
        .arg(&long)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("at most 107"), "{err}");
}

/// Every global flag has its environment variable, and flags work after
/// the subcommand as well as before it.
#[test]
fn global_flags_come_from_the_environment_or_after_the_subcommand() {
    let d = Daemon::start();
    let env_cli = |vars: &[(&str, &str)], args: &[&str]| {
        let mut cmd = memd_command(d.dir.path());
        for (k, v) in vars {
            cmd.env(k, v);
        }
        let out = cmd.args(args).output().unwrap();
        let v: Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{args:?}: {out:?}"));
        (v, out.status.code().unwrap_or(-1))
    };
    let data = d.data_dir();
    let data = data.to_str().unwrap();
    let socket = d.socket();
    let socket = socket.to_str().unwrap();
    // MEMD_DATA_DIR, MEMD_NAMESPACE, MEMD_AGENT, MEMD_NO_AUTOSTART.
    let (v, code) = env_cli(
        &[
            ("MEMD_DATA_DIR", data),
            ("MEMD_NAMESPACE", "envns"),
            ("MEMD_AGENT", "envagent"),
            ("MEMD_NO_AUTOSTART", "1"),
        ],
        &["--json", "add", "from the environment", "--scope", "agent"],
    );
    assert_eq!(code, 0, "{v}");
    let id = v["id"].to_string();
    // Flags after the subcommand, MEMD_SOCKET for the socket.
    let (v, code) = env_cli(
        &[("MEMD_SOCKET", socket)],
        &[
            "get",
            &id,
            "--namespace",
            "envns",
            "--agent",
            "envagent",
            "--json",
            "--no-autostart",
        ],
    );
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["memory"]["namespace"], "envns");
    assert_eq!(v["memory"]["scope_owner"], "envagent");
    // Another agent, or the default namespace, does not see it.
    let (v, code) = d.json(&["get", &id, "--namespace", "envns"]);
    assert_eq!(code, 1, "{v}");
    let (v, code) = d.json(&["get", &id]);
    assert_eq!(code, 1, "{v}");
    // MEMD_NO_AUTOSTART=1 with no daemon: unreachable, nothing started.
    let empty = d.dir.path().join("nobody");
    let (v, code) = env_cli(
        &[
            ("MEMD_DATA_DIR", empty.to_str().unwrap()),
            ("MEMD_NO_AUTOSTART", "1"),
        ],
        &["--json", "list"],
    );
    assert_eq!(
        (code, v["code"].clone()),
        (5, serde_json::json!("unreachable")),
        "{v}"
    );
    assert!(!empty.join("memd.sock").exists());
}

/// `status --json` has every key it promises, with its type.
#[test]
fn status_json_has_the_documented_keys() {
    let d = Daemon::start();
    d.cli(&["add", "one"]);
    let s = d.status();
    for key in [
        "version",
        "protocol",
        "generation",
        "own_generation",
        "sessions",
    ] {
        assert!(!s[key].is_null(), "{key} missing: {s}");
    }
    for key in ["data_dir", "db", "socket", "config"] {
        assert!(s["paths"][key].is_string(), "paths.{key}: {s}");
    }
    for key in ["policy", "external_epoch", "last_drift_at", "backups_kept"] {
        assert!(
            s["drift"].as_object().unwrap().contains_key(key),
            "drift.{key}: {s}"
        );
    }
    assert_eq!(s["counts"]["memories"], 1, "{s}");
    assert_eq!(s["counts"]["by_status"]["promoted"], 1, "{s}");
    assert!(s.as_object().unwrap().contains_key("embedder"), "{s}");
    if !s["embedder"].is_null() {
        for key in ["model", "dim", "embedded", "pending"] {
            assert!(
                s["embedder"].as_object().unwrap().contains_key(key),
                "embedder.{key}: {s}"
            );
        }
    }
    for key in ["snapshot_builds", "snapshot_hits", "db_reads"] {
        assert!(s["stats"][key].is_u64(), "stats.{key}: {s}");
    }
    assert!(s["sweeps"].is_array(), "{s}");
}

/// `memd shell --json` answers each line as it comes (flushed), before the
/// next line is written: a driver can wait for each answer.
#[test]
fn shell_flushes_each_answer_before_the_next_line() {
    use std::io::{BufRead, BufReader, Write};
    let d = Daemon::start();
    let mut child = memd_command(d.dir.path())
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(["--no-autostart", "--json", "shell"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    for (i, line) in ["add \"first line\"", "frobnicate", "get 1"]
        .iter()
        .enumerate()
    {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        let answer = rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("no answer to line {i} while the shell still reads"));
        let v: Value = serde_json::from_str(&answer).unwrap();
        match i {
            0 => assert_eq!(v["id"], 1, "{v}"),
            1 => assert_eq!(v["code"], "usage", "{v}"),
            _ => assert_eq!(v["memory"]["content"], "first line", "{v}"),
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// The CLI helps itself without a daemon: completion scripts, the man page,
/// `--help` grouped by what a person does, `memd help TOPIC` naming the
/// docs page.
#[test]
fn completions_man_page_and_help_topics_come_from_the_clap_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = memd_command(dir.path())
            .arg("--no-autostart")
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8(out.stdout).unwrap();
        (stdout, out.status.code())
    };
    for shell in ["bash", "zsh", "fish"] {
        let (script, code) = run(&["completions", shell]);
        assert_eq!(code, Some(0), "{shell}");
        assert!(!script.trim().is_empty(), "{shell}: empty script");
        for sub in ["search", "import-md", "completions"] {
            assert!(script.contains(sub), "{shell}: no {sub} in\n{script}");
        }
    }
    let (_, code) = run(&["completions", "tcsh"]);
    assert_eq!(code, Some(2), "an unknown shell is a usage error");
    // The values a flag knows, and the help topics, instead of file names.
    let (bash, _) = run(&["completions", "bash"]);
    let case = |flag: &str| {
        let at = bash
            .find(&format!("                {flag})\n"))
            .unwrap_or_else(|| panic!("no case for {flag} in\n{bash}"));
        bash[at..].lines().nth(1).unwrap().to_string()
    };
    assert!(
        case("--mode").contains("compgen -W \"auto lexical fuzzy semantic hybrid\""),
        "{}",
        case("--mode")
    );
    assert!(
        case("--category").contains("preference fact"),
        "{}",
        case("--category")
    );
    assert!(
        case("--scope").contains("project agent session"),
        "{}",
        case("--scope")
    );
    let help_opts = bash
        .split("memd__subcmd__help)")
        .nth(1)
        .and_then(|s| s.lines().find(|l| l.trim_start().starts_with("opts=")))
        .unwrap_or_else(|| panic!("no opts of memd help in\n{bash}"));
    for word in ["drift", "troubleshooting", "not-built", "search"] {
        assert!(
            help_opts.contains(&format!(" {word} ")),
            "{word}: {help_opts}"
        );
    }
    let (zsh, _) = run(&["completions", "zsh"]);
    assert!(
        zsh.contains(":MODE:(auto lexical fuzzy semantic hybrid)"),
        "no modes in the zsh script"
    );
    let (fish, _) = run(&["completions", "fish"]);
    assert!(
        fish.lines()
            .any(|l| l.contains("-l scope") && l.contains("project") && l.contains("session")),
        "no scopes in the fish script"
    );
    // Parsing still takes any value (a category the config adds): the
    // daemon says what it refuses. No daemon here: exit 5, not a usage error.
    let (_, code) = run(&["add", "x", "--category", "recipe"]);
    assert_eq!(code, Some(5));

    let (page, code) = run(&["man"]);
    assert_eq!(code, Some(0));
    let first_macro = page
        .lines()
        .find(|l| l.starts_with('.') && !l.starts_with(".ie") && !l.starts_with(".el"))
        .unwrap();
    assert!(first_macro.starts_with(".TH memd 1"), "{page}");
    assert!(
        page.contains(".SH SUBCOMMANDS") && page.contains("import\\-md"),
        "{page}"
    );
    // Every page a page names exists: `memd man add` prints memd-add(1),
    // `memd man --dir` writes them all.
    let (add, code) = run(&["man", "add"]);
    assert_eq!(code, Some(0));
    assert!(add.contains(".TH memd-add 1"), "{add}");
    assert!(add.contains("\\-\\-category"), "{add}");
    let (task_add, code) = run(&["man", "task", "add"]);
    assert_eq!(code, Some(0));
    assert!(task_add.contains(".TH memd-task-add 1"), "{task_add}");
    let (_, code) = run(&["man", "frobnicate"]);
    assert_eq!(code, Some(2));
    let pages = dir.path().join("man1");
    let (listed, code) = run(&["man", "--dir", pages.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{listed}");
    let files: std::collections::BTreeSet<String> = std::fs::read_dir(&pages)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed.lines().count(), files.len(), "{listed}");
    assert!(
        files.contains("memd.1") && files.contains("memd-task-add.1"),
        "{files:?}"
    );
    let reference = regex::Regex::new(r"memd(\\-[a-z]+)+\(1\)").unwrap();
    for file in &files {
        let text = std::fs::read_to_string(pages.join(file)).unwrap();
        for m in reference.find_iter(&text) {
            let name = m.as_str().replace("\\-", "-").replace("(1)", ".1");
            assert!(
                files.contains(&name),
                "{file} names {}, which is not there",
                m.as_str()
            );
        }
    }

    let (help, code) = run(&["--help"]);
    assert_eq!(code, Some(0));
    let at = |s: &str| {
        help.find(s)
            .unwrap_or_else(|| panic!("no {s:?} in\n{help}"))
    };
    for group in [
        "Memories:",
        "Sessions:",
        "Hosts:",
        "Team:",
        "Service:",
        "Maintenance:",
    ] {
        at(group);
    }
    assert!(at("Memories:") < at("  add ") && at("  add ") < at("Sessions:"));
    assert!(at("Hosts:") < at("  setup ") && at("  setup ") < at("Team:"));

    let (text, code) = run(&["help", "drift"]);
    assert_eq!(code, Some(0));
    assert!(text.contains("docs/drift.md"), "{text}");
    let (text, code) = run(&["help", "task", "add"]);
    assert_eq!(code, Some(0));
    assert!(text.contains("Usage: memd task add"), "{text}");
    let (text, code) = run(&["team", "--help"]);
    assert_eq!(code, Some(0));
    assert!(text.contains("docs/team.md"), "{text}");
    let (_, code) = run(&["help", "no-such-thing"]);
    assert_eq!(code, Some(2));
}
