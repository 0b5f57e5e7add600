//! Capture through the real hook: `memd hook claude-code` (and `codex`)
//! given the events a host sends, reading transcripts written here as
//! the hosts write them; the turns then found, kept out, or gone, as
//! DESIGN.md "Capture" says. The real Claude Code CLI's run is in
//! `claude_code.rs`.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use serde_json::{Value, json};

use crate::common::{Daemon, memd_command, sqlite3};

/// A project (a git work tree) under the daemon's dir and its namespace.
fn project(d: &Daemon, name: &str) -> (PathBuf, String) {
    let dir = d.dir.path().join(name);
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    let ns = memd::cli::hook::project_namespace(&dir).unwrap();
    (dir, ns)
}

/// `memd hook HOST` with `event` on stdin (and `extra` flags before
/// `hook`): stdout, stderr, exit code.
fn hook(d: &Daemon, host: &str, event: &Value, extra: &[&str]) -> (String, String, i32) {
    let mut child = memd_command(d.dir.path())
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(extra)
        .args(["hook", host])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(event.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// A Claude Code event of session `id` in `cwd` reading `transcript`.
fn event(name: &str, id: &str, cwd: &Path, transcript: &Path) -> Value {
    json!({
        "hook_event_name": name,
        "session_id": id,
        "cwd": cwd,
        "transcript_path": transcript,
        "reason": "prompt_input_exit",
    })
}

/// A Claude Code user line.
fn user(uuid: &str, text: &str) -> String {
    json!({
        "type": "user", "uuid": uuid, "sessionId": "s",
        "timestamp": "2026-11-27T10:00:00.000Z",
        "message": {"role": "user", "content": text},
    })
    .to_string()
        + "\n"
}

/// A Claude Code assistant line.
fn assistant(uuid: &str, message: &str, text: &str) -> String {
    json!({
        "type": "assistant", "uuid": uuid, "sessionId": "s",
        "timestamp": "2026-11-27T10:00:01.000Z",
        "message": {"id": message, "role": "assistant",
                    "content": [{"type": "text", "text": text}]},
    })
    .to_string()
        + "\n"
}

/// A Claude Code tool output line (not a turn).
fn tool_output(uuid: &str, output: &str) -> String {
    json!({
        "type": "user", "uuid": uuid,
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": output}]},
        "toolUseResult": {"stdout": output},
    })
    .to_string()
        + "\n"
}

fn append(path: &Path, text: &str) {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
}

/// The captured turns of namespace `ns` (content), oldest first.
fn turns(d: &Daemon, ns: &str) -> Vec<String> {
    let out = sqlite3(
        &d.db(),
        &format!(
            "SELECT content FROM memories WHERE source = 'capture' AND namespace = '{ns}' \
             ORDER BY thread, thread_pos"
        ),
    );
    out.lines().map(str::to_string).collect()
}

fn search(d: &Daemon, ns: &str, query: &str) -> Vec<String> {
    let (v, code) = d.json(&["--namespace", ns, "search", query]);
    assert_eq!(code, 0, "{v}");
    v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["content"].as_str().unwrap().to_string())
        .collect()
}

fn capture_state(d: &Daemon, session: &str) -> Value {
    let (v, code) = d.json(&["capture", "status", session]);
    assert_eq!(code, 0, "{v}");
    v["sessions"][0].clone()
}

#[test]
fn a_sessions_turns_are_captured_once_and_found_by_search() {
    let d = Daemon::start();
    let (dir, ns) = project(&d, "shop");
    let t = d.dir.path().join("s1.jsonl");
    append(
        &t,
        &(user("u1", "where do the deploy scripts live?")
            + &assistant(
                "a1",
                "m1",
                "They live in ops/deploy, run by the nightly job.",
            )
            + &tool_output("r1", "TOOL OUTPUT NEVER STORED")),
    );
    let (out, err, code) = hook(&d, "claude-code", &event("Stop", "s1", &dir, &t), &[]);
    assert_eq!((out.as_str(), code), ("", 0), "Stop prints nothing: {err}");
    assert_eq!(
        turns(&d, &ns),
        [
            "User: where do the deploy scripts live?",
            "Assistant: They live in ops/deploy, run by the nightly job."
        ]
    );
    let hits = search(&d, &ns, "deploy scripts nightly");
    assert!(hits.iter().any(|h| h.contains("ops/deploy")), "{hits:?}");
    assert!(search(&d, &ns, "NEVER STORED").is_empty());

    // The same hook again, and a PreCompact: nothing new, nothing twice.
    hook(&d, "claude-code", &event("Stop", "s1", &dir, &t), &[]);
    hook(&d, "claude-code", &event("PreCompact", "s1", &dir, &t), &[]);
    assert_eq!(turns(&d, &ns).len(), 2);

    // A new turn and a reply still being written: the complete line only.
    let reply = assistant("a2", "m2", "Friday deploys are frozen.");
    let (head, tail) = reply.split_at(30);
    append(&t, &(user("u2", "can I deploy on friday?") + head));
    let (_, err, code) = hook(&d, "claude-code", &event("Stop", "s1", &dir, &t), &[]);
    assert_eq!(code, 0);
    assert!(err.contains("not complete"), "{err}");
    assert_eq!(turns(&d, &ns).len(), 3);
    append(&t, tail);
    hook(&d, "claude-code", &event("SessionEnd", "s1", &dir, &t), &[]);
    let all = turns(&d, &ns);
    assert_eq!(all.len(), 4, "{all:?}");
    assert_eq!(all[3], "Assistant: Friday deploys are frozen.");

    // The file rewritten (another inode, the same lines and one more, as a
    // resume into a new file carries them): only the new one is stored.
    let old = std::fs::read_to_string(&t).unwrap();
    std::fs::remove_file(&t).unwrap();
    append(&t, &(old + &user("u3", "thanks, noted")));
    hook(&d, "claude-code", &event("Stop", "s1", &dir, &t), &[]);
    let all = turns(&d, &ns);
    assert_eq!(all.len(), 5, "{all:?}");
    assert_eq!(all[4], "User: thanks, noted");

    // Status counts it; the turns are in their session's thread.
    let state = capture_state(&d, "claude-code:s1");
    assert_eq!(state["turns"], 5, "{state}");
    assert_eq!(state["namespace"], ns.as_str());
    let status = d.status();
    assert_eq!(status["capture"]["kept_turns"], 5, "{status}");
    let threads = sqlite3(
        &d.db(),
        "SELECT DISTINCT thread FROM memories WHERE source = 'capture'",
    );
    assert_eq!(threads.trim(), "claude-code:s1");
}

#[test]
fn private_spans_and_secrets_never_reach_the_disk() {
    let d = Daemon::start();
    let (dir, ns) = project(&d, "vault");
    let t = d.dir.path().join("p.jsonl");
    append(
        &t,
        &(user(
            "u1",
            "the staging password is <private>hunter2-staging\nacross lines</private> and the \
             key AKIAIOSFODNN7EXAMPLE is for the backup bucket",
        ) + &user("u2", "keep this but <private>not this TOPSECRET-TAIL")),
    );
    let (_, err, code) = hook(&d, "claude-code", &event("Stop", "p1", &dir, &t), &[]);
    assert_eq!(code, 0, "{err}");
    let all = turns(&d, &ns);
    assert_eq!(all.len(), 2, "{all:?}");
    assert!(all[0].contains("[redacted:"), "{all:?}");
    assert!(
        all[0].contains("backup bucket"),
        "the turn is kept: {all:?}"
    );
    assert_eq!(all[1], "User: keep this but");
    let state = capture_state(&d, "claude-code:p1");
    assert_eq!(state["redactions"], 1, "{state}");

    // Not in the database, its WAL, an export or a backup.
    let export = d.dir.path().join("export.json");
    let (v, code) = d.json(&[
        "--namespace",
        &ns,
        "export",
        "--out",
        export.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{v}");
    let backup = d.dir.path().join("backup.db");
    let (v, code) = d.json(&["backup", backup.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    let data = d.data_dir();
    let mut files = vec![export, backup];
    for entry in std::fs::read_dir(&data).unwrap() {
        files.push(entry.unwrap().path());
    }
    let mut looked = 0;
    for f in files.iter().filter(|f| f.is_file()) {
        let bytes = std::fs::read(f).unwrap();
        looked += bytes.len();
        for secret in [
            "hunter2",
            "across lines",
            "AKIAIOSFODNN7EXAMPLE",
            "TOPSECRET",
        ] {
            assert!(
                !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                "`{secret}` is in {}",
                f.display()
            );
        }
    }
    assert!(looked > 0);
    assert!(
        data.join("memory.db-wal").exists() || data.join("memory.db").exists(),
        "the files looked at include the database"
    );
}

#[test]
fn captured_turns_are_never_in_a_block_and_never_promoted() {
    let d = Daemon::start();
    let (dir, ns) = project(&d, "blocks");
    let (v, code) = d.json(&[
        "--namespace",
        &ns,
        "add",
        "--category",
        "convention",
        "prices are in cents",
    ]);
    assert_eq!(code, 0, "{v}");
    let t = d.dir.path().join("b.jsonl");
    append(
        &t,
        &user("u1", "the invoice service rounds half up to the cent"),
    );
    hook(&d, "claude-code", &event("Stop", "b1", &dir, &t), &[]);
    let id: i64 = sqlite3(&d.db(), "SELECT id FROM memories WHERE source = 'capture'")
        .trim()
        .parse()
        .unwrap();
    // Found many times, swept, even made promoted by hand: not in a block.
    for _ in 0..25 {
        assert_eq!(search(&d, &ns, "invoice rounds half up").len(), 1);
    }
    let (v, code) = d.json(&["sweep"]);
    assert_eq!(code, 0, "{v}");
    let status = sqlite3(
        &d.db(),
        &format!("SELECT status FROM memories WHERE id = {id}"),
    );
    assert_eq!(status.trim(), "candidate", "the sweep did not promote it");
    let block = |session: &str| {
        let (v, code) = d.json(&["--namespace", &ns, "--session", session, "inject"]);
        assert_eq!(code, 0, "{v}");
        v["block"].as_str().unwrap().to_string()
    };
    let b = block("fresh-1");
    assert!(b.contains("prices are in cents"), "{b}");
    assert!(!b.contains("invoice"), "{b}");
    let (v, code) = d.json(&[
        "--namespace",
        &ns,
        "update",
        &id.to_string(),
        "--status",
        "promoted",
    ]);
    assert_eq!(code, 0, "{v}");
    let b = block("fresh-2");
    assert!(!b.contains("invoice"), "{b}");
}

#[test]
fn a_captured_turn_can_be_kept_and_a_session_forgotten() {
    let d = Daemon::start();
    let (dir, ns) = project(&d, "keep");
    let t = d.dir.path().join("k.jsonl");
    append(
        &t,
        &(user("u1", "we decided to move the queue to postgres")
            + &assistant("a1", "m1", "Noted: the queue moves to postgres.")),
    );
    hook(&d, "claude-code", &event("Stop", "k1", &dir, &t), &[]);
    let id = sqlite3(
        &d.db(),
        "SELECT id FROM memories WHERE source = 'capture' AND content LIKE 'User:%'",
    )
    .trim()
    .to_string();
    let (v, code) = d.json(&[
        "--namespace",
        &ns,
        "add",
        "--category",
        "decision",
        "--from",
        &id,
    ]);
    assert_eq!(code, 0, "{v}");
    let kept = v["id"].as_i64().unwrap();
    let (v, _) = d.json(&["--namespace", &ns, "get", &kept.to_string()]);
    let meta = &v["memory"]["metadata"];
    assert_eq!(meta["kept_from"]["id"].to_string(), id, "{meta}");
    assert_eq!(meta["kept_from"]["thread"], "claude-code:k1");
    assert_ne!(v["memory"]["source"], "capture", "a memory of its own");

    // --from names a captured turn only.
    let (v, code) = d.json(&["--namespace", &ns, "add", "--from", &kept.to_string()]);
    assert_ne!(code, 0, "{v}");

    // Forget the session: its turns go, with no copy in their history;
    // the kept memory stays.
    let (v, code) = d.json(&["capture", "forget", "claude-code:k1"]);
    assert_eq!((code, v["turns"].as_i64()), (0, Some(2)), "{v}");
    assert!(turns(&d, &ns).is_empty());
    let copies = sqlite3(
        &d.db(),
        "SELECT count(*) FROM memory_revisions WHERE content LIKE '%queue moves%'",
    );
    assert_eq!(copies.trim(), "0");
    let (v, _) = d.json(&["--namespace", &ns, "get", &kept.to_string()]);
    assert!(
        v["memory"]["content"]
            .as_str()
            .unwrap()
            .contains("postgres")
    );
    let (v, _) = d.json(&["capture", "status"]);
    assert_eq!(v["sessions"], json!([]), "{v}");
    // Captured again from the start: the turns come back, once.
    hook(&d, "claude-code", &event("Stop", "k1", &dir, &t), &[]);
    assert_eq!(turns(&d, &ns).len(), 2);
}

#[test]
fn capture_can_be_turned_off_by_config_exclude_and_project_file() {
    let d = Daemon::start();
    let (dir, ns) = project(&d, "private-repo");
    let t = d.dir.path().join("o.jsonl");
    append(&t, &user("u1", "nothing of this is kept"));
    let config = d.dir.path().join("capture-off.toml");
    std::fs::write(&config, "[capture]\nenabled = false\n").unwrap();
    let c = config.to_str().unwrap();
    hook(
        &d,
        "claude-code",
        &event("Stop", "o1", &dir, &t),
        &["--config", c],
    );
    let excluded = d.dir.path().join("exclude.toml");
    std::fs::write(
        &excluded,
        format!(
            "[capture]\nexclude = [\"{}/private-*\"]\n",
            d.dir.path().display()
        ),
    )
    .unwrap();
    hook(
        &d,
        "claude-code",
        &event("Stop", "o1", &dir.join("src"), &t),
        &["--config", excluded.to_str().unwrap()],
    );
    std::fs::write(dir.join(".memd.toml"), "capture = false\n").unwrap();
    hook(&d, "claude-code", &event("Stop", "o1", &dir, &t), &[]);
    assert!(turns(&d, &ns).is_empty());
    std::fs::remove_file(dir.join(".memd.toml")).unwrap();
    hook(&d, "claude-code", &event("Stop", "o1", &dir, &t), &[]);
    assert_eq!(turns(&d, &ns).len(), 1);
}

#[test]
fn bad_transcripts_get_a_line_on_stderr_and_exit_0() {
    let d = Daemon::start();
    let (dir, ns) = project(&d, "bad");
    // Not JSON lines.
    let t = d.dir.path().join("bad.jsonl");
    append(
        &t,
        &("this is not json\n{\"half\": \n".to_string() + &user("u1", "the real turn")),
    );
    let (out, err, code) = hook(&d, "claude-code", &event("Stop", "x1", &dir, &t), &[]);
    assert_eq!((out.as_str(), code), ("", 0));
    assert!(
        err.contains("2 line(s)") && err.contains("not JSON"),
        "{err}"
    );
    assert_eq!(turns(&d, &ns), ["User: the real turn"]);
    assert_eq!(capture_state(&d, "claude-code:x1")["invalid_lines"], 2);

    // A missing file: said, recorded, nothing stored.
    let gone = d.dir.path().join("gone.jsonl");
    let (out, err, code) = hook(&d, "claude-code", &event("Stop", "x2", &dir, &gone), &[]);
    assert_eq!((out.as_str(), code), ("", 0));
    assert!(err.contains("cannot open the transcript"), "{err}");
    let state = capture_state(&d, "claude-code:x2");
    assert!(
        state["last_error"].as_str().unwrap().contains("gone.jsonl"),
        "{state}"
    );

    // A line longer than a chunk: skipped with its error, the next read.
    let config = d.dir.path().join("small.toml");
    std::fs::write(&config, "[capture]\nchunk_bytes = 4096\n").unwrap();
    let t = d.dir.path().join("long.jsonl");
    append(
        &t,
        &(user("u1", &"long ".repeat(2_000)) + &user("u2", "after the long line")),
    );
    let (_, err, code) = hook(
        &d,
        "claude-code",
        &event("Stop", "x3", &dir, &t),
        &["--config", config.to_str().unwrap()],
    );
    assert_eq!(code, 0);
    assert!(err.contains("longer than capture.chunk_bytes"), "{err}");
    assert!(turns(&d, &ns).contains(&"User: after the long line".to_string()));

    // The daemon away: the hook says so, exits 0, and the next hook
    // captures everything from where the last stopped.
    let t = d.dir.path().join("away.jsonl");
    append(&t, &user("u1", "first words"));
    hook(&d, "claude-code", &event("Stop", "x4", &dir, &t), &[]);
    let mut d = d;
    d.terminate();
    append(&t, &user("u2", "said while memd was stopped"));
    let (out, err, code) = hook(
        &d,
        "claude-code",
        &event("Stop", "x4", &dir, &t),
        &["--no-autostart"],
    );
    assert_eq!((out.as_str(), code), ("", 0));
    assert!(err.contains("memd hook:"), "{err}");
    d.spawn();
    hook(&d, "claude-code", &event("SessionEnd", "x4", &dir, &t), &[]);
    let all = turns(&d, &ns);
    assert!(
        all.contains(&"User: said while memd was stopped".to_string()),
        "{all:?}"
    );
    assert_eq!(
        all.iter()
            .filter(|t| t.as_str() == "User: first words")
            .count(),
        1
    );
}

#[test]
fn a_200_mb_transcript_is_captured_over_several_hooks() {
    let d = Daemon::start();
    let (dir, ns) = project(&d, "huge");
    let t = d.dir.path().join("huge.jsonl");
    let mut n = 0;
    {
        let mut f = std::io::BufWriter::new(std::fs::File::create(&t).unwrap());
        let output = "x".repeat(1 << 20);
        let mut size = 0;
        while size < 200 << 20 {
            let lines = user(
                &format!("u{n}"),
                &format!("question number {n} about the build"),
            ) + &tool_output(&format!("r{n}"), &output);
            size += lines.len();
            f.write_all(lines.as_bytes()).unwrap();
            n += 1;
        }
    }
    let len = std::fs::metadata(&t).unwrap().len();
    let mut hooks = 0;
    loop {
        let started = Instant::now();
        let (out, err, code) = hook(&d, "claude-code", &event("Stop", "h1", &dir, &t), &[]);
        hooks += 1;
        assert_eq!((out.as_str(), code), ("", 0), "{err}");
        let state = capture_state(&d, "claude-code:h1");
        let offset = state["offset"].as_u64().unwrap();
        if offset == len {
            break;
        }
        assert!(err.contains("the rest at the next hook"), "{err}");
        assert!(
            started.elapsed().as_secs() < 15,
            "a hook stays within its budget"
        );
        assert!(hooks < 50, "no progress: {state}");
    }
    let all = turns(&d, &ns);
    assert_eq!(all.len(), n, "every prompt, once");
    assert!(hooks > 1, "one hook read a bounded part: {hooks}");
    std::fs::remove_file(&t).unwrap();
}

#[test]
fn codex_rollouts_are_captured_too() {
    let d = Daemon::start();
    let (dir, ns) = project(&d, "codexed");
    let t = d.dir.path().join("rollout.jsonl");
    let line = |ty: &str, payload: Value| {
        json!({"timestamp": "2026-11-27T10:00:00Z", "type": ty, "payload": payload}).to_string()
            + "\n"
    };
    append(
        &t,
        &(line("session_meta", json!({"id": "c1"}))
            + &line(
                "response_item",
                json!({"type": "message", "role": "developer",
                       "content": [{"type": "input_text", "text": "## Memory\n- a rule"}]}),
            )
            + &line(
                "response_item",
                json!({"type": "message", "role": "user",
                       "content": [{"type": "input_text", "text": "bump the api version"}]}),
            )
            + &line(
                "event_msg",
                json!({"type": "user_message", "message": "bump the api version"}),
            )
            + &line(
                "response_item",
                json!({"type": "function_call", "name": "shell",
                       "arguments": "{\"command\":[\"rg\",\"API_VERSION\"]}"}),
            )
            + &line(
                "response_item",
                json!({"type": "message", "role": "assistant",
                       "content": [{"type": "output_text", "text": "Bumped API_VERSION to 7."}]}),
            )),
    );
    let ev = json!({"hook_event_name": "Stop", "session_id": "c1", "cwd": dir,
                    "transcript_path": t});
    let (out, err, code) = hook(&d, "codex", &ev, &[]);
    assert_eq!((out.as_str(), code), ("", 0), "{err}");
    hook(&d, "codex", &ev, &[]);
    assert_eq!(
        turns(&d, &ns),
        [
            "User: bump the api version",
            "Assistant: [shell: rg API_VERSION]",
            "Assistant: Bumped API_VERSION to 7."
        ]
    );
}
