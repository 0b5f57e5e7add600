//! Concurrent sessions never lose each other's work: the drift guard's row
//! rule, through the client library and `memd shell`, with the real daemon.
//! (Two `memd mcp` servers: tests/it/mcp.rs.)
//!
//! `MEMD_CONCURRENCY_SECS=60 cargo test --release --test it sessions --
//! --nocapture lost_update` runs the lost-update property longer and prints
//! its counts.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::common::{Daemon, memd_command, sqlite3};
use memd_client::error::Error;
use memd_client::{
    AddRequest, ChangeKind, Client, DriftPolicy, DriftRule, ErrorBody, SearchRequest, UpdateRequest,
};
use serde_json::{Value, json};

fn update(id: i64, content: &str) -> UpdateRequest {
    UpdateRequest {
        id,
        content: Some(content.into()),
        ..Default::default()
    }
}

fn add(content: &str) -> AddRequest {
    AddRequest {
        content: content.into(),
        ..Default::default()
    }
}

/// Connect options for a session of another agent.
fn agent(d: &Daemon, agent: &str) -> memd_client::ConnectOptions {
    memd_client::ConnectOptions {
        agent_id: agent.into(),
        ..d.opts()
    }
}

/// The body of a row-rule refusal.
fn row_refusal(r: Result<impl std::fmt::Debug, Error>) -> Box<ErrorBody> {
    match r {
        Err(Error::Drift(body)) => {
            let d = body.drift.as_ref().expect("drift details");
            assert_eq!(d.rule, DriftRule::Row, "{body:?}");
            assert!(d.drift_backup.is_empty(), "a row refusal needs no backup");
            body
        }
        other => panic!("expected a row-rule refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn another_sessions_update_is_never_overwritten_blindly() {
    let d = Daemon::start();
    let mut a = d.client().await;
    let mut b = Client::connect(agent(&d, "agent-b")).await.unwrap();
    let id = a
        .add(add("the build uses four cores"))
        .await
        .unwrap()
        .id
        .unwrap();

    // 1. A reads the row at rev 1; 2. B updates it; 3. A updates it blindly.
    assert_eq!(a.get(id).await.unwrap().rev, 1);
    let b_rev = b.get(id).await.unwrap().rev;
    let by_b = b
        .update(update(id, "the build uses eight cores"))
        .await
        .unwrap();
    assert_eq!(by_b.memory.rev, b_rev + 1);
    let seen_before = a.seen_generation();
    let body = row_refusal(a.update(update(id, "the build uses two cores")).await);
    let d_ = body.drift.as_ref().unwrap();
    let row = d_.row.as_ref().unwrap();
    assert_eq!(row.current.content, "the build uses eight cores");
    assert_eq!((row.rev_seen, row.rev_now), (Some(1), 2));
    assert_eq!(row.changed_by.kind, ChangeKind::Session);
    assert_eq!(row.changed_by.agent.as_deref(), Some("agent-b"));
    assert_eq!(
        row.changed_by.session.as_deref(),
        Some(b.welcome().session_id.as_str())
    );
    assert_eq!(row.changed_at, by_b.memory.updated_at);
    assert!(
        body.message.contains(&format!("memory {id}")),
        "{}",
        body.message
    );
    assert!(
        d_.remediation.contains(&format!("get {id}")),
        "{}",
        d_.remediation
    );
    assert!(
        d_.remediation.contains("--expect-rev 2"),
        "{}",
        d_.remediation
    );
    assert_eq!(
        a.seen_generation(),
        seen_before,
        "a row refusal moves nothing"
    );
    // B's text is intact.
    assert_eq!(
        b.get(id).await.unwrap().content,
        "the build uses eight cores"
    );

    // A blind retry is refused again, the error's `current` not being a read;
    // so is a forget of the row.
    row_refusal(a.update(update(id, "the build uses two cores")).await);
    row_refusal(a.forget(id, None).await);
    // After reading the row again, A's write goes through.
    assert_eq!(a.get(id).await.unwrap().rev, 2);
    let r = a
        .update(update(id, "the build uses two cores"))
        .await
        .unwrap();
    assert_eq!(r.memory.rev, 3);
    // And B, which has not seen A's write, is refused in turn.
    row_refusal(b.update(update(id, "the build uses six cores")).await);
}

#[tokio::test]
async fn adds_and_changes_to_other_rows_never_refuse() {
    let d = Daemon::start();
    let mut a = d.client().await;
    let mut b = d.client().await;
    let mine = a
        .add(add("a's own note about ports"))
        .await
        .unwrap()
        .id
        .unwrap();
    let theirs = b
        .add(add("b's own note about hosts"))
        .await
        .unwrap()
        .id
        .unwrap();
    for n in 0..5 {
        b.update(update(theirs, &format!("b's note, version {n}")))
            .await
            .unwrap();
        b.add(add(&format!("b adds another distinct thing {n}")))
            .await
            .unwrap();
        // Another row changed, a row was added: A's own row is untouched.
        a.update(update(mine, &format!("a's note, version {n}")))
            .await
            .unwrap();
        let r = a
            .add(add(&format!("a adds something else {n}")))
            .await
            .unwrap();
        assert!(r.accepted && r.drift.is_none(), "{r:?}");
    }
}

#[tokio::test]
async fn a_never_read_row_is_judged_from_the_sessions_start() {
    let d = Daemon::start();
    let mut creator = d.client().await;
    let id = creator
        .add(add("the cache lives in redis"))
        .await
        .unwrap()
        .id
        .unwrap();
    let mut early = d.client().await;
    // A session that starts after the last change may write it blindly
    // (a one-shot CLI call is such a session).
    let mut late = d.client().await;
    late.update(update(id, "the cache lives in memcached"))
        .await
        .unwrap();
    // `early` never read the row, and `late` changed it after early began.
    let body = row_refusal(early.update(update(id, "the cache lives in valkey")).await);
    assert_eq!(body.drift.unwrap().row.unwrap().rev_seen, None);
    // `expect_rev` states the version the write is based on: it passes.
    early
        .update(UpdateRequest {
            expect_rev: Some(2),
            ..update(id, "the cache lives in valkey")
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn search_hits_and_the_inject_block_count_as_reads() {
    let d = Daemon::start();
    let mut a = d.client().await;
    let mut b = d.client().await;
    let id = b
        .add(add("staging deploys on fridays"))
        .await
        .unwrap()
        .id
        .unwrap();
    let other = b
        .add(add("production freezes in december"))
        .await
        .unwrap()
        .id
        .unwrap();
    b.update(update(id, "staging deploys on thursdays"))
        .await
        .unwrap();
    b.update(update(other, "production freezes in august"))
        .await
        .unwrap();
    // Both rows changed after A began: refused until A is shown them.
    row_refusal(a.update(update(id, "staging deploys daily")).await);
    row_refusal(a.update(update(other, "production never freezes")).await);
    let hits = a
        .search(SearchRequest {
            query: "staging".into(),
            filter: Default::default(),
            limit: 5,
            mode: Default::default(),
            syntax: Default::default(),
            explain: false,
            offset: 0,
        })
        .await
        .unwrap();
    assert!(hits.hits.iter().any(|h| h.memory.id == id));
    a.update(update(id, "staging deploys daily")).await.unwrap();
    let block = a.inject().await.unwrap();
    assert!(
        block.block.contains(&format!("#{other} ")),
        "{}",
        block.block
    );
    a.update(update(other, "production never freezes"))
        .await
        .unwrap();
}

#[tokio::test]
async fn a_tag_only_change_moves_rev_and_protects_the_whole_row() {
    let d = Daemon::start();
    let mut a = d.client().await;
    let mut b = d.client().await;
    let id = a
        .add(AddRequest {
            tags: vec!["ops".into()],
            ..add("deploys go through the ops queue")
        })
        .await
        .unwrap()
        .id
        .unwrap();
    assert_eq!(
        a.get(id).await.unwrap().rev,
        1,
        "a new row's tags are part of it"
    );
    b.get(id).await.unwrap();
    let tagged = b
        .update(UpdateRequest {
            id,
            tags: Some(vec!["ops".into(), "release".into()]),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(tagged.memory.rev, 2, "one change, one rev");
    // A stale expect_rev no longer passes, and the row rule holds content
    // updates on a row whose tags another session changed.
    let err = a
        .update(UpdateRequest {
            expect_rev: Some(1),
            ..update(id, "deploys go through the release queue")
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err:?}");
    row_refusal(
        a.update(update(id, "deploys go through the release queue"))
            .await,
    );
    // The tag change left a revision holding the tags before it.
    let h = a.history(id).await.unwrap();
    let last = h.revisions.last().unwrap();
    assert_eq!(last.op, "update");
    assert_eq!(last.rev, Some(1));
    assert_eq!(last.tags.as_deref(), Some(&["ops".to_string()][..]));
    // Tags and content in one update: still one rev.
    let both = a
        .update(UpdateRequest {
            tags: Some(vec!["queue".into()]),
            ..update(id, "deploys go through the release queue")
        })
        .await
        .unwrap();
    assert_eq!(both.memory.rev, 3);
    assert_eq!(both.memory.tags, ["queue"]);
    // An update that changes nothing moves nothing.
    let same = a
        .update(UpdateRequest {
            id,
            tags: Some(vec!["queue".into()]),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(same.memory.rev, 3);
}

#[test]
fn a_tag_added_with_the_sqlite3_shell_moves_rev() {
    if !crate::common::tool("sqlite3", "the external writer") {
        return;
    }
    let d = Daemon::start();
    let (v, _) = d.json(&["add", "the queue is rabbitmq", "--tag", "infra"]);
    let id = v["id"].as_i64().unwrap();
    sqlite3(
        &d.db(),
        &format!("INSERT INTO memory_tags (memory_id, tag) VALUES ({id}, 'messaging')"),
    );
    let (v, _) = d.json(&["get", &id.to_string()]);
    assert_eq!(v["memory"]["rev"], 2, "{v}");
    assert_eq!(v["memory"]["tags"], json!(["infra", "messaging"]));
    assert!(
        v["generation"].as_u64().unwrap() >= v["memory"]["changed_generation"].as_u64().unwrap()
    );
    sqlite3(
        &d.db(),
        &format!("DELETE FROM memory_tags WHERE memory_id = {id} AND tag = 'infra'"),
    );
    let (v, _) = d.json(&["history", &id.to_string()]);
    let revs: Vec<(i64, Value)> = v["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["rev"].as_i64().unwrap(), r["tags"].clone()))
        .collect();
    assert_eq!(
        revs,
        [(1, json!(["infra"])), (2, json!(["infra", "messaging"]))],
        "{v}"
    );
    let (v, _) = d.json(&["get", &id.to_string()]);
    assert_eq!(v["memory"]["rev"], 3, "{v}");
}

#[test]
fn a_replacing_import_keeps_rev_growing() {
    let d = Daemon::start();
    let (v, _) = d.json(&["add", "the api listens on 8080"]);
    let id = v["id"].as_i64().unwrap().to_string();
    let (v, code) = d.json(&["update", &id, "--content", "the api listens on 8081"]);
    assert_eq!((code, v["memory"]["rev"].as_i64()), (0, Some(2)), "{v}");
    let (export, _) = d.json(&["export"]);
    let file = d.dir.path().join("at-rev-2.json");
    std::fs::write(&file, export.to_string()).unwrap();
    let (v, _) = d.json(&["update", &id, "--content", "the api listens on 9090"]);
    assert_eq!(v["memory"]["rev"], 3);

    let (report, code) = d.json(&["import", "--replace", file.to_str().unwrap()]);
    assert_eq!((code, &report["replaced"]), (0, &json!(1)), "{report}");
    let (v, _) = d.json(&["get", &id]);
    let m = &v["memory"];
    assert_eq!(m["content"], "the api listens on 8081");
    assert_eq!(
        m["rev"], 4,
        "a replaced row gets a rev above the current one"
    );
    assert!(
        m["updated_at"].as_str().unwrap() > export["entries"][0]["updated_at"].as_str().unwrap(),
        "{m}"
    );
    // A stale expect_rev from before the import is a conflict.
    let (v, code) = d.json(&["update", &id, "--content", "x y z", "--expect-rev", "2"]);
    assert_eq!((code, &v["code"]), (4, &json!("conflict")), "{v}");
    // The replaced version is labelled as such.
    let (h, _) = d.json(&["history", &id]);
    let ops: Vec<(&str, i64)> = h["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["op"].as_str().unwrap(), r["rev"].as_i64().unwrap()))
        .collect();
    assert_eq!(ops, [("update", 1), ("update", 2), ("replace", 3)], "{h}");
}

#[tokio::test]
async fn a_merged_add_and_add_supersedes_are_checked_like_updates() {
    let d = Daemon::start();
    let mut a = d.client().await;
    let mut b = Client::connect(agent(&d, "agent-b")).await.unwrap();
    let text = "the release branch is cut every other monday morning";
    let id = b.add(add(text)).await.unwrap().id.unwrap();
    b.update(UpdateRequest {
        id,
        tags: Some(vec!["release".into()]),
        ..Default::default()
    })
    .await
    .unwrap();
    // A's add would merge into a row another session changed after A began.
    let body = row_refusal(a.add(add(text)).await);
    assert_eq!(body.drift.unwrap().row.unwrap().current.id, id);
    a.get(id).await.unwrap();
    let r = a.add(add(text)).await.unwrap();
    assert_eq!((r.id, r.deduped), (Some(id), true));
    // add --supersedes changes the superseded row.
    let old = b
        .add(add("the wiki lives on confluence"))
        .await
        .unwrap()
        .id
        .unwrap();
    b.update(update(old, "the wiki lives on notion"))
        .await
        .unwrap();
    let supersede = AddRequest {
        supersedes: Some(old),
        ..add("the wiki lives in the repository")
    };
    row_refusal(a.add(supersede.clone()).await);
    a.get(old).await.unwrap();
    a.add(supersede).await.unwrap();
}

#[tokio::test]
async fn the_external_and_off_policies_keep_their_behaviour() {
    let d = Daemon::start();
    let mut b = d.client().await;
    let id = b.add(add("logs rotate daily")).await.unwrap().id.unwrap();
    for policy in [DriftPolicy::External, DriftPolicy::Off] {
        let mut a = Client::connect(memd_client::ConnectOptions {
            policy: Some(policy),
            ..d.opts()
        })
        .await
        .unwrap();
        a.get(id).await.unwrap();
        b.get(id).await.unwrap();
        b.update(update(id, "logs rotate hourly")).await.unwrap();
        // Only writers outside memd count under these policies.
        a.update(update(id, "logs rotate weekly")).await.unwrap();
    }
}

#[test]
fn an_external_change_of_a_read_row_is_named_and_a_blind_retry_refused() {
    if !crate::common::tool("sqlite3", "the external writer") {
        return;
    }
    let d = Daemon::start();
    let (v, _) = d.json(&["add", "the mail relay is postfix"]);
    let id = v["id"].as_i64().unwrap();
    let sh = shell(&d);
    assert_eq!(ask(&sh, &format!("get {id}"))["memory"]["rev"], 1);
    let before = d.status()["drift"]["external_epoch"].as_u64().unwrap_or(0);
    sqlite3(
        &d.db(),
        &format!("UPDATE memories SET content = 'the mail relay is exim' WHERE id = {id}"),
    );
    // Wait for the daemon to notice the external commit.
    let deadline = Instant::now() + Duration::from_secs(10);
    while d.status()["drift"]["external_epoch"].as_u64().unwrap_or(0) == before {
        assert!(
            Instant::now() < deadline,
            "the external change was not noticed"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let v = ask(
        &sh,
        &format!("update {id} --content \"the mail relay is sendmail\""),
    );
    assert_eq!(
        (v["code"].as_str(), v["rule"].as_str()),
        (Some("drift"), Some("external")),
        "{v}"
    );
    let msg = v["error"].as_str().unwrap();
    assert!(
        msg.contains(&format!("memory {id} was changed by another tool")),
        "the refusal names the row and who changed it: {msg}"
    );
    assert!(
        v["drift_backup"].as_str().unwrap().ends_with(".json"),
        "{v}"
    );
    // The blind retry: the row rule holds it, naming the external writer.
    let v = ask(
        &sh,
        &format!("update {id} --content \"the mail relay is sendmail\""),
    );
    assert_eq!(v["rule"], "row", "{v}");
    assert_eq!(v["changed_by"]["kind"], "external", "{v}");
    assert_eq!(v["current"]["content"], "the mail relay is exim", "{v}");
    assert_eq!(
        (v["rev_seen"].as_i64(), v["rev_now"].as_i64()),
        (Some(1), Some(2))
    );
    assert_eq!(v["drift_backup"], Value::Null, "{v}");
    assert!(
        v["remediation"]
            .as_str()
            .unwrap()
            .contains(&format!("`get {id}`")),
        "{v}"
    );
    assert_eq!(ask(&sh, &format!("get {id}"))["memory"]["rev"], 2);
    let v = ask(
        &sh,
        &format!("update {id} --content \"the mail relay is sendmail\""),
    );
    assert_eq!(v["memory"]["rev"], 3, "{v}");
}

type Shell = (
    std::cell::RefCell<std::process::ChildStdin>,
    mpsc::Receiver<String>,
    std::process::Child,
);

/// A `memd shell --json` process: its stdin, and a channel of its answers.
fn shell(d: &Daemon) -> Shell {
    let mut child = memd_command(d.dir.path())
        .arg("--data-dir")
        .arg(d.data_dir())
        .args(["--no-autostart", "--json", "shell"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            if tx.send(line.unwrap()).is_err() {
                break;
            }
        }
    });
    (std::cell::RefCell::new(stdin), rx, child)
}

fn ask(s: &Shell, line: &str) -> Value {
    writeln!(s.0.borrow_mut(), "{line}").unwrap();
    s.0.borrow_mut().flush().unwrap();
    let answer =
        s.1.recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("no answer to {line:?}"));
    serde_json::from_str(&answer).unwrap()
}

#[test]
fn two_shells_never_overwrite_each_others_update() {
    let d = Daemon::start();
    let a = shell(&d);
    let b = shell(&d);
    let id = ask(&a, "add \"the nightly job runs at 02:00\"")["id"]
        .as_i64()
        .unwrap();
    assert_eq!(ask(&a, &format!("get {id}"))["memory"]["rev"], 1);
    assert_eq!(ask(&b, &format!("get {id}"))["memory"]["rev"], 1);
    let v = ask(
        &b,
        &format!("update {id} --content \"the nightly job runs at 03:00\""),
    );
    assert_eq!(v["memory"]["rev"], 2, "{v}");
    let v = ask(
        &a,
        &format!("update {id} --content \"the nightly job runs at 04:00\""),
    );
    assert_eq!(
        (v["code"].as_str(), v["rule"].as_str()),
        (Some("drift"), Some("row")),
        "{v}"
    );
    assert_eq!(v["current"]["content"], "the nightly job runs at 03:00");
    assert_eq!(v["changed_by"]["kind"], "session");
    // Refused again without a read; through after one.
    let v = ask(
        &a,
        &format!("update {id} --content \"the nightly job runs at 04:00\""),
    );
    assert_eq!(v["rule"], "row", "{v}");
    assert_eq!(
        ask(&a, &format!("get {id}"))["memory"]["content"],
        "the nightly job runs at 03:00"
    );
    let v = ask(
        &a,
        &format!("update {id} --content \"the nightly job runs at 04:00\""),
    );
    assert_eq!(v["memory"]["rev"], 3, "{v}");
    // The one-shot CLI is a session of its own, started after every change:
    // it passes, but only `--expect-rev` ties it to a version it read.
    let (v, code) = d.json(&[
        "update",
        &id.to_string(),
        "--content",
        "x",
        "--expect-rev",
        "2",
    ]);
    assert_eq!((code, &v["code"]), (4, &json!("conflict")), "{v}");
    for s in [a, b] {
        drop(s.0);
        let mut child = s.2;
        assert!(child.wait().unwrap().success());
    }
}

/// How long the lost-update load runs: `MEMD_CONCURRENCY_SECS`, 3 s by
/// default.
fn run_time() -> Duration {
    let secs = std::env::var("MEMD_CONCURRENCY_SECS").ok().map_or(3, |v| {
        v.parse()
            .expect("MEMD_CONCURRENCY_SECS is a number of seconds")
    });
    Duration::from_secs(secs)
}

/// Sessions doing read-modify-write cycles at once.
const SESSIONS: usize = 8;
/// Rows every session fights over.
const HOT: i64 = 4;

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// FNV-1a 64 of a text.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// An acknowledged update: the version it read and the one it made.
#[derive(Debug, Clone)]
struct Acked {
    id: i64,
    read_rev: i64,
    read_content: String,
    new_rev: i64,
    new_content: String,
}

#[derive(Default)]
struct Tally {
    acked: Vec<Acked>,
    row_refusals: usize,
    appends: usize,
    own_updates: usize,
}

async fn read_modify_write(d_opts: memd_client::ConnectOptions, n: usize, stop: Instant) -> Tally {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (n as u64 + 1));
    let mut c = Client::connect(d_opts).await.unwrap();
    let mut t = Tally::default();
    let mut own: Vec<i64> = Vec::new();
    let mut k = 0;
    while Instant::now() < stop {
        k += 1;
        match rng.below(4) {
            // Appends, and changes to rows no other session touches: they
            // must never be refused.
            0 => {
                let r = c
                    .add(add(&format!("session {n} appends entry {k} of its own")))
                    .await
                    .unwrap_or_else(|e| panic!("an append was refused: {e}"));
                own.push(r.id.unwrap());
                t.appends += 1;
            }
            1 if !own.is_empty() => {
                let id = own[rng.below(own.len() as u64) as usize];
                c.update(update(
                    id,
                    &format!("session {n} rewrites its entry at step {k}"),
                ))
                .await
                .unwrap_or_else(|e| panic!("a change of an own row was refused: {e}"));
                t.own_updates += 1;
            }
            // Read-modify-write on a hot row.
            _ => {
                let id = 1 + rng.below(HOT as u64) as i64;
                let read = c.get(id).await.unwrap();
                // Think time, in which other sessions may strike.
                tokio::time::sleep(Duration::from_micros(rng.below(3000))).await;
                // Names the version it was written over, so the history
                // can be checked as a chain (and stays small).
                let new_content =
                    format!("hot row {id} by s{n}.{k} over {:016x}", fnv(&read.content));
                match c.update(update(id, &new_content)).await {
                    Ok(r) => t.acked.push(Acked {
                        id,
                        read_rev: read.rev,
                        read_content: read.content,
                        new_rev: r.memory.rev,
                        new_content,
                    }),
                    Err(Error::Drift(body)) => {
                        let drift = body.drift.unwrap();
                        assert_eq!(drift.rule, DriftRule::Row, "{}", body.message);
                        let row = drift.row.unwrap();
                        assert_eq!(row.rev_seen, Some(read.rev));
                        assert!(row.rev_now > read.rev);
                        assert_eq!(row.changed_by.kind, ChangeKind::Session);
                        t.row_refusals += 1;
                    }
                    Err(e) => panic!("update {id}: {e}"),
                }
            }
        }
    }
    t
}

/// N sessions do random read-modify-write cycles on a few hot rows (and
/// appends and changes on rows of their own) for a bounded time. Every
/// acknowledged update is recorded with the rev and content it was based
/// on; at the end each hot row's history must be a chain in which every
/// acknowledged update was applied right over the version its session had
/// read: zero lost updates. The appends and own-row changes must cause zero
/// refusals.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lost_update_property_holds_for_many_sessions() {
    // Small read sets: they overflow within the run, so rows are judged by
    // the floor and by the recorded authors too.
    let d = Daemon::with_config("[drift]\nread_set_rows = 64\n");
    let mut seed = d.client().await;
    for i in 1..=HOT {
        let id = seed
            .add(add(&format!("hot row {i}")))
            .await
            .unwrap()
            .id
            .unwrap();
        assert_eq!(id, i);
    }
    let started = Instant::now();
    let stop = started + run_time();
    let tasks: Vec<_> = (0..SESSIONS)
        .map(|n| tokio::spawn(read_modify_write(d.opts(), n, stop)))
        .collect();
    let mut all = Tally::default();
    for t in tasks {
        let t = t.await.unwrap();
        all.acked.extend(t.acked);
        all.row_refusals += t.row_refusals;
        all.appends += t.appends;
        all.own_updates += t.own_updates;
    }
    let elapsed = started.elapsed();

    // Each acknowledged update made the very next version of what it read.
    let mut by_row: HashMap<i64, Vec<&Acked>> = HashMap::new();
    for a in &all.acked {
        assert_eq!(
            a.new_rev,
            a.read_rev + 1,
            "row {}: an update based on rev {} became rev {}: a version in between was lost",
            a.id,
            a.read_rev,
            a.new_rev
        );
        by_row.entry(a.id).or_default().push(a);
    }
    for id in 1..=HOT {
        let h = seed.history(id).await.unwrap();
        let current = seed.get(id).await.unwrap();
        // The version at every rev, from the history and the row itself.
        let mut versions: HashMap<i64, String> = h
            .revisions
            .iter()
            .filter(|r| r.memory_id == id)
            .map(|r| (r.rev.unwrap(), r.content.clone().unwrap()))
            .collect();
        versions.insert(current.rev, current.content.clone());
        assert_eq!(
            versions.len() as i64,
            current.rev,
            "one version per rev of row {id}"
        );
        let acked = by_row.get(&id).map(Vec::as_slice).unwrap_or_default();
        assert_eq!(
            acked.len() as i64,
            current.rev - 1,
            "every change of row {id} is an acknowledged update"
        );
        for a in acked {
            assert_eq!(
                versions[&a.read_rev], a.read_content,
                "row {id} rev {}",
                a.read_rev
            );
            assert_eq!(
                versions[&a.new_rev], a.new_content,
                "row {id} rev {}",
                a.new_rev
            );
        }
        // The history is a chain: each version was written over the one
        // right before it.
        for rev in 2..=current.rev {
            let over = format!("over {:016x}", fnv(&versions[&(rev - 1)]));
            assert!(
                versions[&rev].ends_with(&over),
                "row {id} rev {rev} ({}) was not written over rev {}",
                versions[&rev],
                rev - 1
            );
        }
    }
    eprintln!(
        "lost-update property: {SESSIONS} sessions, {HOT} hot rows, {:.1} s: {} acknowledged \
         read-modify-write updates, {} refused by the row rule, {} appends and {} own-row \
         updates (0 refused), 0 lost",
        elapsed.as_secs_f64(),
        all.acked.len(),
        all.row_refusals,
        all.appends,
        all.own_updates
    );
    assert!(
        all.acked.len() > 10,
        "too few updates: the run proved nothing"
    );
    assert!(
        all.row_refusals > 0,
        "no conflict happened: the run proved nothing"
    );
}

#[tokio::test]
async fn a_change_by_memd_itself_is_named_as_the_daemons() {
    let d =
        Daemon::with_config("[lifecycle]\ninterval_hours = 0\n[lifecycle.limits]\nproject = 1\n");
    let mut a = d.client().await;
    let first = a
        .add(add("the first of two notes"))
        .await
        .unwrap()
        .id
        .unwrap();
    let second = a
        .add(add("the second of two notes"))
        .await
        .unwrap()
        .id
        .unwrap();
    // The sweep archives one of them (the scope holds one active row).
    let (v, code) = d.json(&["sweep"]);
    assert_eq!((code, &v["counts"]["limited"]), (0, &json!(1)), "{v}");
    let mut refused = 0;
    for id in [first, second] {
        match a.update(update(id, "rewritten by the session")).await {
            Ok(_) => {}
            Err(e) => {
                let body = row_refusal(Err::<(), _>(e));
                let row = body.drift.unwrap().row.unwrap();
                assert_eq!(row.changed_by.kind, ChangeKind::Daemon);
                assert_eq!(row.current.status, "archived");
                refused += 1;
            }
        }
    }
    assert_eq!(refused, 1);
}
