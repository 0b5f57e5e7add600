//! Secrets and private text against every way text gets in, through the
//! real binary: the secret corpus (tests/fixtures/secrets/caught.txt)
//! through `memd add`, through capture (in a reply, and as a tool call's
//! target with the secret at every offset around the hook's cut) and
//! through `memd ingest`; the `<private>` shapes through capture and
//! ingest. Afterwards no file the daemon wrote — the database, its WAL,
//! the log — holds any secret's distinctive bytes or any private text.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{Value, json};

use crate::common::{Daemon, files_holding, memd_command, sqlite3};

const CAUGHT: &str = include_str!("../fixtures/secrets/caught.txt");

/// `(kind, bytes that must go, text)` of each shape of the corpus.
fn corpus() -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = Vec::new();
    for line in CAUGHT.lines() {
        if let Some(header) = line.strip_prefix("--- ") {
            let (kind, keep) = header.split_once(" | ").expect("kind | bytes");
            out.push((kind.into(), keep.into(), String::new()));
        } else if let Some((_, _, text)) = out.last_mut() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(line);
        }
    }
    assert!(out.len() >= 120, "{}", out.len());
    out
}

/// Stops the daemon (its WAL checkpointed as it closes) and fails on any
/// file of its dir holding one of `needles`.
fn assert_nowhere(d: &mut Daemon, needles: &[&str]) {
    d.terminate();
    let mut found = Vec::new();
    let mut looked = 0;
    for needle in needles {
        for f in files_holding(d.dir.path(), needle, false) {
            found.push(format!("`{needle}` in {f}"));
        }
        looked += 1;
    }
    assert!(looked > 0);
    assert!(
        d.db().exists() && d.log_path().exists(),
        "the files looked at include the database and the log"
    );
    assert!(found.is_empty(), "{}", found.join("\n"));
}

fn with_policy(policy: &str) -> Daemon {
    Daemon::with_config(&format!("[gate]\nsecrets = \"{policy}\"\n"))
}

#[test]
fn no_secret_of_the_corpus_is_stored_through_add() {
    let all = corpus();
    // Refused by default: exit 6, reason `secret`, the value not echoed.
    let add = |d: &Daemon, text: &str| {
        let out = d.cli_stdin(&["--json", "add", "-"], Some(text.as_bytes()));
        (out.json(), out.code, out)
    };
    let mut d = Daemon::start();
    for (kind, keep, text) in &all {
        let (v, code, out) = add(&d, text);
        assert_eq!(code, 6, "accepted ({kind}): {text}\n{v}");
        assert_eq!(v["reason"], "secret", "({kind}) {text}\n{v}");
        assert!(!out.stdout.contains(keep.as_str()), "echoed: {v}");
        assert!(
            !out.stderr.contains(keep.as_str()),
            "echoed: {}",
            out.stderr
        );
    }
    let keeps: Vec<&str> = all.iter().map(|(_, k, _)| k.as_str()).collect();
    assert_nowhere(&mut d, &keeps);

    // Redacted: stored, the secret replaced; in a subject too.
    let mut d = with_policy("redact");
    for (kind, _, text) in &all {
        let (v, code, _) = add(&d, text);
        assert_eq!(code, 0, "({kind}) {text}\n{v}");
        // Redacted, or (its secret gone) the same text as one before.
        assert!(
            v["reason"] == "redacted" || v["reason"] == "duplicate",
            "({kind}) {text}\n{v}"
        );
    }
    for (i, (kind, _, text)) in all
        .iter()
        .enumerate()
        .filter(|(_, (_, _, t))| !t.contains('\n'))
    {
        let subject: String = text.chars().take(200).collect();
        let (v, code) = d.json(&["add", &format!("note {i}"), "--subject", &subject]);
        assert_eq!(code, 0, "({kind}) {text}\n{v}");
        assert_eq!(v["reason"], "redacted", "subject ({kind}) {text}\n{v}");
    }
    let stored = sqlite3(&d.db(), "SELECT count(*) FROM memories");
    assert!(
        stored.trim().parse::<usize>().unwrap() >= all.len(),
        "{stored}"
    );
    assert_nowhere(&mut d, &keeps);
}

/// A project (a git work tree) under the daemon's dir.
fn project(d: &Daemon, name: &str) -> PathBuf {
    let dir = d.dir.path().join(name);
    std::fs::create_dir_all(dir.join(".git")).unwrap();
    dir
}

/// Runs `memd hook claude-code` for a `Stop` of `session` reading
/// `transcript` until all of it is captured.
fn capture_all(d: &Daemon, dir: &Path, session: &str, transcript: &Path) {
    let len = std::fs::metadata(transcript).unwrap().len();
    for _ in 0..50 {
        let event = json!({
            "hook_event_name": "Stop", "session_id": session,
            "cwd": dir, "transcript_path": transcript,
        });
        let mut child = memd_command(d.dir.path())
            .arg("--data-dir")
            .arg(d.data_dir())
            .args(["hook", "claude-code"])
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
        assert_eq!(out.status.code(), Some(0));
        let (v, code) = d.json(&["capture", "status", &format!("claude-code:{session}")]);
        assert_eq!(code, 0, "{v}");
        if v["sessions"][0]["offset"].as_u64() == Some(len) {
            return;
        }
    }
    panic!("{} not captured in 50 hooks", transcript.display());
}

fn user(uuid: &str, text: &str) -> String {
    json!({"type": "user", "uuid": uuid, "sessionId": "s",
           "message": {"role": "user", "content": text}})
    .to_string()
}

fn assistant(uuid: &str, message: &str, blocks: Value) -> String {
    json!({"type": "assistant", "uuid": uuid, "sessionId": "s",
           "message": {"id": message, "role": "assistant", "content": blocks}})
    .to_string()
}

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn bash(command: &str) -> Value {
    json!({"type": "tool_use", "id": "t", "name": "Bash", "input": {"command": command}})
}

fn write_lines(path: &Path, lines: &[String]) {
    let mut f = std::fs::File::create(path).unwrap();
    for l in lines {
        writeln!(f, "{l}").unwrap();
    }
}

/// The contents of the memories `filter` selects, in order.
fn contents(d: &Daemon, filter: &str) -> Vec<String> {
    let out = sqlite3(
        &d.db(),
        &format!(
            "SELECT json_group_array(content) FROM \
             (SELECT content FROM memories WHERE {filter} ORDER BY thread, thread_pos, id)"
        ),
    );
    serde_json::from_str(out.trim()).unwrap()
}

fn captured(d: &Daemon) -> Vec<String> {
    contents(d, "source = 'capture'")
}

#[test]
fn no_secret_of_the_corpus_is_stored_through_capture() {
    let all = corpus();
    let mut d = Daemon::start();
    let dir = project(&d, "app");
    let inputs = tempfile::tempdir().unwrap();
    let t = inputs.path().join("t.jsonl");
    let mut lines = Vec::new();
    for (i, (_, keep, secret)) in all.iter().enumerate() {
        lines.push(user(
            &format!("u{i}"),
            &format!("please use this: {secret}"),
        ));
        // In a reply, and as a tool call's target: the distinctive bytes
        // start before, at and after the hook's cut (160 characters).
        let at = secret.find(keep.as_str()).unwrap();
        let mut blocks = vec![text(&format!("Noted: {secret}"))];
        for offset in [120_usize, 150, 155, 159, 160, 161, 165, 170] {
            let pad = offset.saturating_sub(at + 1).max(1);
            blocks.push(bash(&format!("{} {secret}", "a".repeat(pad))));
        }
        lines.push(assistant(&format!("a{i}"), &format!("m{i}"), json!(blocks)));
    }
    // Each token shape at every offset from 120 to 170 of a target.
    let tokens = [
        "ghp_p1GJkp0o1Jq73zJ9DUSJHOvLQxyrzSa2hbIq",
        "AKIAT4OVT5DDOG3KCWNK",
        "glpat-L5j9sSJk_aE3xnbu9rt0",
        "xoxb-529401911282-2554220033938-TwzwQm1AVtXtikv3TNaMxLjk",
        "sk-proj-W78SaNtn-GVWQNWIrYwTNIejzsb5FH-ZQ0xs7UPYFePK9ALEiPZyFwlEfczraD4Z",
        "npm_bJbnAvkrRIYfDQKsDemcYNp5dN5cNe5OFWvY",
        "AIzaBFmQKznH62CfMzizsFbcRTxh2nX4VoSpwSR",
    ];
    for (k, token) in tokens.iter().enumerate() {
        let blocks: Vec<Value> = (120..=170)
            .map(|offset| bash(&format!("{} {token}", "b".repeat(offset - 1))))
            .collect();
        lines.push(assistant(
            &format!("t{k}"),
            &format!("tm{k}"),
            json!(blocks),
        ));
    }
    write_lines(&t, &lines);
    capture_all(&d, &dir, "s1", &t);
    let turns = captured(&d);
    assert_eq!(turns.len(), 2 * all.len() + tokens.len(), "every turn kept");
    assert!(turns.iter().all(|t| t.contains("[redacted:")), "{turns:?}");
    let (v, _) = d.json(&["capture", "status", "claude-code:s1"]);
    assert!(
        v["sessions"][0]["redactions"].as_u64().unwrap() >= 2 * all.len() as u64,
        "{v}"
    );
    let mut needles: Vec<&str> = all.iter().map(|(_, k, _)| k.as_str()).collect();
    // A token's body less its last character, as a cut would leave it.
    let cut: Vec<String> = tokens
        .iter()
        .map(|t| t[t.len() - 17..t.len() - 1].to_string())
        .collect();
    needles.extend(cut.iter().map(String::as_str));
    assert_nowhere(&mut d, &needles);
}

#[test]
fn no_secret_of_the_corpus_is_stored_through_ingest() {
    let all = corpus();
    let inputs = tempfile::tempdir().unwrap();
    let turns = inputs.path().join("chat.jsonl");
    let lines: Vec<String> = all
        .iter()
        .enumerate()
        .map(|(i, (_, _, secret))| {
            json!({"thread": "chat", "speaker": if i % 2 == 0 { "Ann" } else { "Bob" },
                   "text": format!("here: {secret}")})
            .to_string()
        })
        .collect();
    write_lines(&turns, &lines);
    let claude = inputs.path().join("session.jsonl");
    let lines: Vec<String> = all
        .iter()
        .enumerate()
        .map(|(i, (_, _, secret))| {
            assistant(&format!("a{i}"), &format!("m{i}"), json!([text(secret)]))
        })
        .collect();
    write_lines(&claude, &lines);
    let keeps: Vec<&str> = all.iter().map(|(_, k, _)| k.as_str()).collect();

    // Refused by default: counted, nothing stored.
    let mut d = Daemon::start();
    for file in [&turns, &claude] {
        let (v, code) = d.json(&["ingest", file.to_str().unwrap()]);
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["rejected"], all.len(), "{v}");
        assert_eq!(v["added"], 0, "{v}");
    }
    assert_nowhere(&mut d, &keeps);

    // Redacted: every turn stored, no secret.
    let mut d = with_policy("redact");
    for file in [&turns, &claude] {
        let (v, code) = d.json(&["ingest", file.to_str().unwrap()]);
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["added"], all.len(), "{v}");
    }
    assert_nowhere(&mut d, &keeps);
}

/// The private shapes: nested spans, a span across the lines of one
/// assistant message (tool calls and a tool result between), an unclosed
/// one, one in a tool call's target, one across a chunk's end.
fn private_transcript() -> (Vec<String>, Vec<&'static str>) {
    let mut lines = vec![
        user(
            "u1",
            "deploy it <private>PRIV-A <private>PRIV-B</private> PRIV-C</private> now",
        ),
        assistant(
            "a1",
            "m1",
            json!([text("Plan: <private>the vault pin is PRIV-D")]),
        ),
        assistant("a2", "m1", json!([bash("echo PRIV-E > pin")])),
        json!({"type": "user", "uuid": "r1", "sessionId": "s",
               "message": {"role": "user", "content": [
                   {"type": "tool_result", "tool_use_id": "t", "content": "ok"}]},
               "toolUseResult": {"stdout": "ok"}})
        .to_string(),
        assistant("a3", "m1", json!([text("PRIV-F</private> then restart")])),
        assistant(
            "b1",
            "m2",
            json!([text("keep this <private>PRIV-G to the end")]),
        ),
        assistant("b2", "m2", json!([text("PRIV-H"), bash("cat PRIV-I")])),
        user("u2", "next <PRIVATE>PRIV-J</Private> one"),
        assistant(
            "c1",
            "m3",
            json!([bash("echo <private>PRIV-K</private> done")]),
        ),
    ];
    // Past a chunk's 256 lines: the message that ends one chunk and
    // begins the next is read whole.
    for i in 0..246 {
        lines.push(user(&format!("f{i}"), &format!("filler question {i}")));
    }
    lines.push(assistant(
        "d1",
        "m4",
        json!([text("chunk end <private>PRIV-L")]),
    ));
    lines.push(assistant(
        "d2",
        "m4",
        json!([text("PRIV-M</private> visible")]),
    ));
    let leaks = vec![
        "PRIV-A", "PRIV-B", "PRIV-C", "PRIV-D", "PRIV-E", "PRIV-F", "PRIV-G", "PRIV-H", "PRIV-I",
        "PRIV-J", "PRIV-K", "PRIV-L", "PRIV-M",
    ];
    (lines, leaks)
}

#[test]
fn private_text_never_reaches_the_disk_through_capture() {
    let mut d = Daemon::start();
    let dir = project(&d, "app");
    let inputs = tempfile::tempdir().unwrap();
    let t = inputs.path().join("t.jsonl");
    let (lines, leaks) = private_transcript();
    assert_eq!(lines.len(), 257, "the last message crosses line 256");
    write_lines(&t, &lines);
    capture_all(&d, &dir, "p1", &t);
    let turns = captured(&d);
    for want in [
        "User: deploy it  now",
        "Assistant: Plan:\nthen restart",
        "Assistant: keep this",
        "User: next  one",
        "Assistant: [Bash: echo done]",
        "Assistant: chunk end\nvisible",
    ] {
        assert!(turns.iter().any(|t| t == want), "{want:?} not in {turns:?}");
    }
    assert_nowhere(&mut d, &leaks);
}

#[test]
fn private_text_never_reaches_the_disk_through_ingest() {
    let mut d = Daemon::start();
    let inputs = tempfile::tempdir().unwrap();
    let t = inputs.path().join("session.jsonl");
    let (lines, leaks) = private_transcript();
    write_lines(&t, &lines);
    let (v, code) = d.json(&["ingest", t.to_str().unwrap(), "--format", "claude-code"]);
    assert_eq!(code, 0, "{v}");
    let turns = inputs.path().join("turns.jsonl");
    write_lines(
        &turns,
        &[
            json!({"speaker": "Ann", "text": "a <private>PRIV-N <private>PRIV-O</private> PRIV-P</private> b"}).to_string(),
            json!({"speaker": "Ann", "text": "c <private>PRIV-Q\nPRIV-R", "caption": "<private>PRIV-S</private>"}).to_string(),
        ],
    );
    let (v, code) = d.json(&["ingest", turns.to_str().unwrap(), "--thread", "t"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["added"], 2, "{v}");
    let stored = contents(&d, "1");
    for want in [
        "User: deploy it  now",
        "Assistant: Plan:",
        "Assistant: then restart",
        "Assistant: keep this",
        "Assistant: chunk end",
        "Assistant: visible",
        "Ann: a  b",
        "Ann: c",
    ] {
        assert!(
            stored.iter().any(|l| l == want),
            "{want:?} not in {stored:?}"
        );
    }
    let mut all = leaks;
    all.extend(["PRIV-N", "PRIV-O", "PRIV-P", "PRIV-Q", "PRIV-R", "PRIV-S"]);
    assert_nowhere(&mut d, &all);
}
