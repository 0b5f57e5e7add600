//! Lifecycle sweeps through the real daemon. The clock is injected through
//! the data: `updated_at`, `created_at` and the last sweep time are set with
//! the `sqlite3` shell (none of them is an edit, so nothing else moves).

use crate::common::{Daemon, ids, sqlite3};
use serde_json::Value;

fn sweep(d: &Daemon, args: &[&str]) -> Value {
    let mut all = vec!["sweep"];
    all.extend_from_slice(args);
    let (v, code) = d.json(&all);
    assert_eq!(code, 0, "{v}");
    v["counts"].clone()
}

fn col(d: &Daemon, sql: &str) -> String {
    sqlite3(&d.db(), sql).trim().to_string()
}

#[test]
fn access_scores_decay_except_evergreen_and_pinned() {
    let d = Daemon::start();
    d.json(&["add", "a fact that was used", "--category", "fact"]);
    d.json(&[
        "add",
        "a preference that was used",
        "--category",
        "preference",
    ]);
    d.json(&["add", "a pinned fact", "--category", "fact", "--pin"]);
    sqlite3(&d.db(), "UPDATE memories SET access_score = 8");
    // The previous sweep was 30 days ago: one half-life.
    sqlite3(
        &d.db(),
        "INSERT OR REPLACE INTO memory_meta (key, value) VALUES ('last_decay_at', \
         strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-30 days'))",
    );
    let g = d.status()["generation"].as_u64().unwrap();
    let counts = sweep(&d, &[]);
    assert_eq!(counts["decayed"], 1);
    assert_eq!(
        col(
            &d,
            "SELECT round(access_score, 3) FROM memories ORDER BY id"
        ),
        "4.0\n8.0\n8.0"
    );
    assert_eq!(
        d.status()["generation"].as_u64().unwrap(),
        g,
        "decay is not an edit"
    );
    // Right after, no time has passed: nothing decays.
    let counts = sweep(&d, &[]);
    assert_eq!(counts["decayed"], 0);
}

#[test]
fn tiers_move_down_then_archive_and_candidates_are_promoted() {
    let d = Daemon::start();
    d.json(&["add", "an idle fact", "--category", "fact", "--tier", "1"]);
    d.json(&["add", "a busy fact", "--category", "fact", "--tier", "1"]);
    d.json(&["add", "an idle convention", "--category", "convention"]);
    d.json(&[
        "add",
        "a likely episode",
        "--category",
        "episode",
        "--confidence",
        "0.9",
    ]);
    sqlite3(&d.db(), "UPDATE memories SET access_score = 5 WHERE id = 2");
    sqlite3(&d.db(), "UPDATE memories SET use_count = 3 WHERE id = 4");
    let age = |d: &Daemon| {
        sqlite3(
            &d.db(),
            "UPDATE memories SET updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-60 days')",
        )
    };
    age(&d);
    let counts = sweep(&d, &[]);
    assert_eq!(counts["demoted"], 1, "{counts}");
    assert_eq!(counts["promoted"], 1, "{counts}");
    assert_eq!(
        col(&d, "SELECT tier, status FROM memories ORDER BY id"),
        "2|promoted\n1|promoted\n2|promoted\n2|promoted"
    );
    // The move itself was a change: no second step until it idles again.
    let counts = sweep(&d, &[]);
    assert_eq!(counts["demoted"], 0, "{counts}");
    age(&d);
    sweep(&d, &[]);
    age(&d);
    let counts = sweep(&d, &[]);
    // The idle fact went 1 → 2 → 3 → archived; the promoted episode, idle
    // too, followed from tier 2.
    assert_eq!(counts["archived"], 2, "{counts}");
    assert_eq!(
        col(
            &d,
            "SELECT group_concat(id) FROM memories WHERE status = 'archived'"
        ),
        "1,4"
    );
    assert_eq!(
        col(&d, "SELECT tier, status FROM memories WHERE id = 3"),
        "2|promoted",
        "evergreen"
    );
    // Archived rows leave reads, but are not deleted.
    let (l, _) = d.json(&["list"]);
    assert!(!ids(&l, "memories").contains(&1));
    let (l, _) = d.json(&["list", "--include-archived"]);
    assert!(ids(&l, "memories").contains(&1));
}

#[test]
fn scope_limits_archive_the_lowest_scores() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[lifecycle.limits]\nproject = 5\n").unwrap();
    let d = Daemon::start_with(&["--config", config.to_str().unwrap()]);
    for i in 1..=8 {
        let pin = if i == 1 { "--pin" } else { "--tier" };
        let val = if i == 1 { "--pin" } else { "2" };
        let mut args = vec!["add".to_string(), format!("memory number {i} of eight")];
        args.push(pin.into());
        if pin != "--pin" {
            args.push(val.into());
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        d.json(&args);
    }
    // Scores: id 1 is pinned with nothing; ids 2..8 get 2..8.
    sqlite3(
        &d.db(),
        "UPDATE memories SET access_score = id WHERE id > 1",
    );
    let dry = sweep(&d, &["--dry-run"]);
    assert_eq!(dry["limited"], 3);
    assert_eq!(
        col(
            &d,
            "SELECT count(*) FROM memories WHERE status = 'archived'"
        ),
        "0"
    );
    let counts = sweep(&d, &[]);
    assert_eq!(counts["limited"], 3);
    assert_eq!(
        col(
            &d,
            "SELECT group_concat(id) FROM memories WHERE status = 'archived'"
        ),
        "2,3,4",
        "the lowest scores go, the pinned one stays"
    );
    assert_eq!(
        col(&d, "SELECT count(*) FROM memories"),
        "8",
        "archived, not deleted"
    );
}

#[test]
fn expired_rows_are_deleted() {
    let d = Daemon::start();
    d.json(&["add", "expires at once", "--expires", "1s"]);
    d.json(&["add", "stays"]);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let counts = sweep(&d, &[]);
    assert_eq!(counts["expired"], 1, "{counts}");
    assert_eq!(
        col(&d, "SELECT group_concat(content) FROM memories"),
        "stays"
    );
}

/// Session-scope rows are archived `session_rows_days` (7) after their
/// session ended: by the recorded end, not by the rows' age (a long
/// session's old rows stay a week after it ends); a session with no
/// recorded end goes by its rows' newest creation; a connected session's rows
/// always stay.
#[tokio::test(flavor = "multi_thread")]
async fn rows_of_sessions_are_archived_a_while_after_the_session_ended() {
    let d = Daemon::start();
    let old = "strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-30 days')";
    let out = d.cli_stdin(
        &["--json", "shell"],
        Some(b"add \"a note of a long session\" --scope session\n"),
    );
    assert_eq!(out.code, 0, "{}", out.stdout);
    // The end is recorded as the connection closes.
    let mut ended = String::new();
    for _ in 0..200 {
        ended = col(&d, "SELECT count(*) FROM memory_session_ends");
        if ended == "1" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(ended, "1");
    sqlite3(
        &d.db(),
        &format!("UPDATE memories SET created_at = {old}, updated_at = {old}"),
    );
    let counts = sweep(&d, &[]);
    assert_eq!(counts["sessions"], 0, "ended just now: {counts}");
    sqlite3(
        &d.db(),
        &format!("UPDATE memory_session_ends SET ended_at = {old}"),
    );
    // A connected session with old rows, and rows of sessions with no
    // recorded end: one written long ago, one recently.
    let mut live = d.client().await;
    let added = live
        .add(memd_client::proto::AddRequest {
            content: "a note of a session still connected".into(),
            scope: Some("session".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let live_id = added.id.unwrap();
    sqlite3(
        &d.db(),
        &format!(
            "UPDATE memories SET created_at = {old} WHERE id = {live_id}; \
             INSERT INTO memories (content, scope, scope_owner, created_at) \
             VALUES ('left by a crashed session', 'session', 'gone-1', {old}), \
                    ('a recent note of an unknown session', 'session', 'gone-2', \
                     strftime('%Y-%m-%dT%H:%M:%fZ', 'now'));"
        ),
    );
    let counts = sweep(&d, &[]);
    assert_eq!(counts["sessions"], 2, "{counts}");
    assert_eq!(
        col(
            &d,
            "SELECT group_concat(content, ' | ') FROM \
             (SELECT content FROM memories WHERE status = 'archived' ORDER BY id)"
        ),
        "a note of a long session | left by a crashed session"
    );
    // The recorded end of a session with nothing left to archive is gone
    // once it is older than the cutoff.
    assert_eq!(col(&d, "SELECT count(*) FROM memory_session_ends"), "0");
    drop(live);
}

#[tokio::test(flavor = "multi_thread")]
async fn sweeps_do_not_trip_drift_or_snapshots() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[lifecycle.limits]\nproject = 2\n").unwrap();
    let d = Daemon::start_with(&["--config", config.to_str().unwrap()]);
    let mut strict = memd_client::Client::connect({
        let mut o = d.opts();
        o.policy = Some(memd_client::DriftPolicy::Strict);
        o
    })
    .await
    .unwrap();
    for i in 0..4 {
        strict
            .add(memd_client::AddRequest {
                content: format!("memory {i} for the sweep test"),
                ..Default::default()
            })
            .await
            .unwrap();
    }
    let block = strict.inject().await.unwrap();
    let counts = sweep(&d, &[]);
    assert_eq!(counts["limited"], 2);
    // The daemon's writes: the block stays frozen, nothing is refused.
    let again = strict.inject().await.unwrap();
    assert!(again.stats.cached);
    assert_eq!(again.block, block.block);
    strict
        .update(memd_client::UpdateRequest {
            id: 4,
            content: Some("changed after the sweep".into()),
            ..Default::default()
        })
        .await
        .expect("a sweep is not drift, even under strict");
    let status = d.status();
    assert_eq!(status["drift"]["external_epoch"], Value::Null);
    let last = &status["sweeps"][0];
    assert_eq!(last["trigger"], "manual");
    assert_eq!(last["counts"]["limited"], 2);
    assert!(last["ended_at"].is_string());
    // The human status shows the log too.
    let human = d.cli(&["status"]).stdout;
    let line = human
        .lines()
        .find(|l| l.starts_with("sweeps"))
        .unwrap_or_else(|| panic!("{human}"));
    assert!(
        line.contains("(manual)") && line.contains("2 limited"),
        "{line}"
    );
}

/// `[lifecycle] at_start` runs a sweep as the daemon starts (logged with
/// its trigger); a stopping daemon tells its service manager `STOPPING=1`.
#[test]
fn a_sweep_at_start_and_stopping_is_announced() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[lifecycle]\nat_start = true\n").unwrap();
    let mut d = Daemon::start_with(&["--config", config.to_str().unwrap()]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let sweeps = d.status()["sweeps"].clone();
        if sweeps.as_array().is_some_and(|s| {
            s.iter()
                .any(|w| w["trigger"] == "start" && w["ended_at"].is_string())
        }) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no start sweep: {sweeps}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(d.terminate().success());
    let said = d.notifications();
    assert!(said.iter().any(|n| n.contains("STOPPING=1")), "{said:?}");
}

/// A `chunk` above the limit works (each transaction still takes at most
/// 250 rows: `rows_per_transaction`), and every row is swept.
#[test]
fn a_chunk_above_the_limit_still_sweeps_every_row() {
    let d = Daemon::with_config("[lifecycle]\nchunk = 100000\n");
    sqlite3(
        &d.db(),
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 600) \
         INSERT INTO memories (content, category, access_score) \
         SELECT 'a used fact number ' || i, 'fact', 8 FROM n; \
         INSERT OR REPLACE INTO memory_meta (key, value) VALUES ('last_decay_at', \
         strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-30 days'));",
    );
    let counts = sweep(&d, &[]);
    assert_eq!(counts["decayed"], 600, "{counts}");
    assert_eq!(
        col(
            &d,
            "SELECT count(*) FROM memories WHERE access_score BETWEEN 3.99 AND 4.01"
        ),
        "600"
    );
}

/// Topics of the memories the index-merge tests add, one write each.
const TOPICS: [&str; 12] = [
    "kernel",
    "postgres",
    "flask",
    "nginx",
    "grafana",
    "terraform",
    "redis",
    "kafka",
    "docker",
    "rustup",
    "systemd",
    "vault",
];

/// Adds one memory per topic, each its own write (so its own segment).
fn add_one_per_topic(d: &Daemon, topics: &[&str]) {
    for t in topics {
        let (v, code) = d.json(&["add", &format!("the {t} deploy note: {t} ships on friday")]);
        assert_eq!(code, 0, "{v}");
    }
}

/// The search index's segments, counted by the `sqlite3` shell from the
/// index's row ids (FTS5's file format: the segment id above bit 37).
fn segments(d: &Daemon) -> u32 {
    col(
        d,
        "SELECT count(DISTINCT id >> 37) FROM memories_fts_data WHERE id >> 37 > 0",
    )
    .parse()
    .unwrap()
}

/// A sweep merges the search index into one segment (each write adds one,
/// and FTS5 merges them only a few at a time); search finds the same rows
/// after it.
#[test]
fn a_sweep_merges_the_search_index() {
    let d = Daemon::start();
    add_one_per_topic(&d, &TOPICS);
    let segments = || segments(&d);
    let found = || {
        ids(
            &d.json(&["search", "deploy note", "--limit", "50"]).0,
            "hits",
        )
    };
    let before = found();
    assert_eq!(before.len(), 12);
    assert!(segments() > 1, "one write, one segment");
    let g = d.status()["generation"].as_u64().unwrap();
    sweep(&d, &[]);
    assert_eq!(segments(), 1);
    assert_eq!(found(), before);
    // The daemon's own maintenance: no generation move, no drift.
    assert_eq!(d.status()["generation"].as_u64().unwrap(), g);
    assert_eq!(d.status()["drift"]["external_epoch"], Value::Null);
    // A dry run changes nothing, and a second sweep has nothing to merge.
    sweep(&d, &["--dry-run"]);
    sweep(&d, &[]);
    assert_eq!(segments(), 1);
}

/// After a burst of writes grows the search index, the daemon merges it
/// once writes pause (10 s), without a sweep.
#[test]
fn the_search_index_is_merged_once_writes_pause() {
    let d = Daemon::start();
    let topics = &TOPICS[..8];
    add_one_per_topic(&d, topics);
    let segments = || segments(&d);
    assert!(segments() > 1);
    let g = d.status()["generation"].as_u64().unwrap();
    let started = std::time::Instant::now();
    while segments() > 1 {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "no merge within a minute of the last write"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    assert!(
        started.elapsed() >= std::time::Duration::from_secs(5),
        "merged while writes had barely paused"
    );
    assert_eq!(d.status()["generation"].as_u64().unwrap(), g);
    let (found, _) = d.json(&["search", "deploy note", "--limit", "20"]);
    assert_eq!(ids(&found, "hits").len(), topics.len());
}
