//! Named sessions through the real binary, one process per command as hook
//! commands and one-shot CLI calls run: the same name in the same namespace
//! is one session (frozen block, seen generation, read set) until `session
//! end` or the idle expiry.

use std::time::{Duration, Instant};

use crate::common::Daemon;
use serde_json::Value;

fn inject(d: &Daemon, session: &str) -> String {
    let out = d.cli(&["--session", session, "inject"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    out.stdout
}

fn sessions(d: &Daemon) -> Vec<String> {
    let (v, code) = d.json(&["session", "list"]);
    assert_eq!(code, 0, "{v}");
    v["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn one_name_is_one_frozen_block_across_processes_until_it_ends() {
    let d = Daemon::start();
    let (v, code) = d.json(&["add", "--category", "preference", "tabs in Makefiles"]);
    assert_eq!(code, 0, "{v}");
    let first = inject(&d, "agent-1");
    assert!(first.contains("tabs in Makefiles"), "{first}");
    // Another writer: the named session's block does not move.
    let (v, code) = d.json(&["add", "--category", "preference", "dark mode in editors"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        inject(&d, "agent-1"),
        first,
        "byte-identical in a new process"
    );
    // Another name is another session.
    assert!(inject(&d, "agent-2").contains("dark mode"));
    assert_eq!(sessions(&d), ["agent-1", "agent-2"]);
    // The session's own write rebuilds its block.
    let (v, code) = d.json(&[
        "--session",
        "agent-1",
        "add",
        "--category",
        "preference",
        "short commit messages",
    ]);
    assert_eq!(code, 0, "{v}");
    let second = inject(&d, "agent-1");
    assert!(second.contains("short commit messages") && second.contains("dark mode"));
    // Ended: the block is gone; the next inject builds a new one.
    let (v, code) = d.json(&["session", "end", "agent-1"]);
    assert_eq!((code, &v["ended"]), (0, &Value::from("agent-1")), "{v}");
    assert_eq!(sessions(&d), ["agent-2"]);
    let (v, code) = d.json(&["session", "end", "agent-1"]);
    assert_eq!(code, 2, "an unknown name is a clear error: {v}");
    // Names are per namespace.
    let (v, code) = d.json(&["--namespace", "other", "session", "list"]);
    assert_eq!(
        (code, v["sessions"].as_array().unwrap().len()),
        (0, 0),
        "{v}"
    );
}

#[test]
fn a_named_session_remembers_what_it_read_across_processes() {
    let d = Daemon::start();
    let (v, code) = d.json(&["add", "the build uses make"]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = d.json(&["--session", "a", "get", "1"]);
    assert_eq!(code, 0, "{v}");
    // Another session changes the row after the named session read it.
    let (v, code) = d.json(&[
        "update",
        "1",
        "--content",
        "the build uses just",
        "--expect-rev",
        "1",
    ]);
    assert_eq!(code, 0, "{v}");
    // A later process of the named session writes blind: refused by the row
    // rule, as the same connection would be.
    let (v, code) = d.json(&[
        "--session",
        "a",
        "update",
        "1",
        "--content",
        "the build uses cargo",
    ]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["rule"], "row", "{v}");
    // It reads again (another process), then writes.
    let (v, code) = d.json(&["--session", "a", "get", "1"]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = d.json(&[
        "--session",
        "a",
        "update",
        "1",
        "--content",
        "the build uses cargo",
    ]);
    assert_eq!(code, 0, "{v}");
    // Without a name, each one-shot call is a session of its own.
    let (v, code) = d.json(&["update", "1", "--content", "the build uses bazel"]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn an_idle_named_session_expires() {
    let d = Daemon::with_config("[session]\nidle_ttl = \"1s\"\n");
    inject(&d, "short-lived");
    assert_eq!(sessions(&d), ["short-lived"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sessions(&d).is_empty() {
        assert!(Instant::now() < deadline, "still there after 10 s");
        std::thread::sleep(Duration::from_millis(200));
    }
}
