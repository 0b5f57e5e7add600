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

/// The `inject --json` reply of named session `session`.
fn inject_json(d: &Daemon, session: &str) -> Value {
    let (v, code) = d.json(&["--session", session, "inject"]);
    assert_eq!(code, 0, "{v}");
    v
}

/// Stops the daemon with `memd stop` and waits for it to exit.
fn stop(d: &mut Daemon) {
    let (v, code) = d.json(&["stop"]);
    assert_eq!(code, 0, "{v}");
    let status = d.child.take().unwrap().wait().unwrap();
    assert!(status.success(), "{status}");
}

/// FNV-1a 64 of a block, as memd states it (16 hex digits).
fn fnv(text: &str) -> String {
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("{h:016x}")
}

#[test]
fn a_restart_keeps_every_named_sessions_block_seen_generation_and_read_set() {
    let mut d = Daemon::start();
    for text in ["tabs in Makefiles", "dark mode in editors"] {
        let (v, code) = d.json(&["add", "--category", "preference", text]);
        assert_eq!(code, 0, "{v}");
    }
    let a = inject(&d, "a");
    let (v, code) = d.json(&["--session", "b", "get", "1"]);
    assert_eq!(code, 0, "{v}");
    // #2 changes after b began, then b reads it: b may write it.
    let (v, code) = d.json(&["update", "2", "--content", "dark mode everywhere"]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = d.json(&["--session", "b", "get", "2"]);
    assert_eq!(code, 0, "{v}");
    // Written meanwhile, by another session: not in a's block.
    let (v, code) = d.json(&["add", "--category", "preference", "short commit messages"]);
    assert_eq!(code, 0, "{v}");
    let before = d.json(&["session", "list"]).0;

    stop(&mut d);
    assert!(d.data_dir().join("sessions.db").exists());
    d.spawn();
    assert_eq!(sessions(&d), ["a", "b"]);
    assert_eq!(inject(&d, "a"), a, "the same bytes after the restart");
    let after = d.json(&["session", "list"]).0;
    for i in 0..2 {
        for key in ["name", "agent", "seen", "has_block"] {
            assert_eq!(
                after["sessions"][i][key], before["sessions"][i][key],
                "{key}: {before} / {after}"
            );
        }
    }
    // b's read set came back: #1 changed since b read it, so b's blind
    // write is refused by the row rule, as before the restart.
    let (v, code) = d.json(&["update", "1", "--content", "tabs in every Makefile"]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = d.json(&["--session", "b", "update", "1", "--content", "spaces"]);
    assert_eq!((code, &v["rule"]), (3, &Value::from("row")), "{v}");
    // And what b read after #2 changed is still known: its write passes
    // (with the read set lost, a change after b began would refuse it).
    let (v, code) = d.json(&["--session", "b", "update", "2", "--content", "light mode"]);
    assert_eq!(code, 0, "{v}");

    // A crash (kill -9) right after a block was built: it was on disk
    // before the reply that showed it.
    let c = inject(&d, "c");
    d.kill();
    d.spawn();
    assert_eq!(inject(&d, "c"), c);
    assert_eq!(inject(&d, "a"), a);
}

#[test]
fn idle_time_counts_across_a_restart_and_an_end_after_one_is_kept() {
    let mut d = Daemon::with_config("[session]\nidle_ttl = \"4s\"\n");
    inject(&d, "short-lived");
    inject(&d, "ended");
    stop(&mut d);
    std::thread::sleep(Duration::from_secs(2));
    d.spawn();
    let (v, _) = d.json(&["session", "list"]);
    let idle = v["sessions"][1]["idle_secs"].as_u64().unwrap();
    assert!(
        idle >= 2,
        "the idle time went on while the daemon was down: {v}"
    );
    // `session end` after a restart removes it, also from the disk.
    let (v, code) = d.json(&["session", "end", "ended"]);
    assert_eq!(code, 0, "{v}");
    d.kill();
    d.spawn();
    assert_eq!(sessions(&d), ["short-lived"]);
    // The rest of its idle time runs out: it expires (4 s after its last
    // use, not 4 s after the restart).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sessions(&d).is_empty() {
        assert!(Instant::now() < deadline, "still there after 10 s");
        std::thread::sleep(Duration::from_millis(200));
    }
    stop(&mut d);
    d.spawn();
    assert!(sessions(&d).is_empty(), "an expired session stays ended");
}

/// Named sessions written by many processes while the daemon is killed
/// (SIGKILL) at varying moments: after each restart the sessions file is
/// intact, every kept block matches its hash and is byte for byte the one
/// its session was last shown.
#[test]
fn a_kill_in_the_middle_of_writes_leaves_no_half_written_session() {
    let mut d = Daemon::start();
    for i in 0..120 {
        let text = format!("convention number {i}: keep the build green on every branch {i}");
        let (v, code) = d.json(&["add", "--category", "convention", &text]);
        assert_eq!(code, 0, "{v}");
    }
    let shown: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<String, String>>> =
        Default::default();
    for round in 0..5_u64 {
        let stop_flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let workers: Vec<_> = (0..4)
            .map(|w| {
                let data = d.data_dir();
                let home = d.dir.path().to_path_buf();
                let shown = shown.clone();
                let stop_flag = stop_flag.clone();
                std::thread::spawn(move || {
                    let mut n = 0;
                    while !stop_flag.load(std::sync::atomic::Ordering::Relaxed) {
                        let name = format!("s{round}-{w}-{n}");
                        n += 1;
                        let out = crate::common::memd_command(&home)
                            .arg("--data-dir")
                            .arg(&data)
                            .args(["--no-autostart", "--json", "--session", &name, "inject"])
                            .output()
                            .unwrap();
                        if !out.status.success() {
                            continue; // the daemon was killed under it
                        }
                        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
                        let block = v["block"].as_str().unwrap().to_string();
                        shown.lock().unwrap().insert(name.clone(), block);
                        // A read: the read set grows (a change kept later).
                        let _ = crate::common::memd_command(&home)
                            .arg("--data-dir")
                            .arg(&data)
                            .args([
                                "--no-autostart",
                                "--session",
                                &name,
                                "list",
                                "--limit",
                                "50",
                            ])
                            .output();
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(150 + 97 * round));
        d.kill();
        stop_flag.store(true, std::sync::atomic::Ordering::Relaxed);
        for w in workers {
            w.join().unwrap();
        }
        let integrity =
            crate::common::sqlite3(&d.data_dir().join("sessions.db"), "PRAGMA integrity_check;");
        assert_eq!(integrity.trim(), "ok");
        d.spawn();
        let listed = sessions(&d);
        let shown = shown.lock().unwrap().clone();
        for (name, block) in &shown {
            assert!(
                listed.contains(name),
                "{name} was shown a block but is gone"
            );
            let v = inject_json(&d, name);
            assert_eq!(v["block"].as_str().unwrap(), block, "{name}");
            assert_eq!(v["hash"].as_str().unwrap(), fnv(block), "{name}");
        }
        assert!(!shown.is_empty(), "round {round} built no block");
        assert!(!d.log().contains("does not match its hash"), "{}", d.log());
    }
}

/// A session ended while a connection of it is still open (an MCP server
/// of a cleared Claude Code session): what that connection does later is
/// never kept, so the session does not come back after a restart.
#[tokio::test(flavor = "multi_thread")]
async fn an_ended_session_stays_ended_though_a_connection_of_it_goes_on() {
    let mut d = Daemon::start();
    let (v, code) = d.json(&["add", "tabs in Makefiles"]);
    assert_eq!(code, 0, "{v}");
    let mut opts = d.opts();
    opts.session = Some("held".into());
    let mut held = memd_client::Client::connect(opts).await.unwrap();
    held.inject().await.unwrap();
    let (v, code) = d.json(&["session", "end", "held"]);
    assert_eq!(code, 0, "{v}");
    // The open connection reads and builds a block again.
    held.get(1).await.unwrap();
    held.compacted().await.unwrap();
    held.inject().await.unwrap();
    drop(held);
    stop(&mut d);
    d.spawn();
    assert!(sessions(&d).is_empty(), "{:?}", sessions(&d));
}
