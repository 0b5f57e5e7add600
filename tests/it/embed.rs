//! Semantic and hybrid search through the real daemon: the background
//! worker (adds, external writes by the `sqlite3` shell, rows written while
//! no daemon ran), the model lock and `reembed`, semantic near duplicates,
//! batch search, and the errors without an embedder.
//!
//! Most tests use an ollama-protocol provider on loopback (a bag-of-words
//! "model", `crate::common::provider`), so they run everywhere; the paraphrase
//! test needs the real local model (`memd model fetch`).

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::provider::{Fault, Provider};
use crate::common::{Daemon, sqlite3};
use memd_client::proto::{Event, Filter, QuerySyntax, SearchMode, SearchRequest};
use serde_json::{Value, json};

fn config(d: &Path, text: &str) -> String {
    std::fs::create_dir_all(d).unwrap();
    let path = d.join("config.toml");
    std::fs::write(&path, text).unwrap();
    path.to_str().unwrap().to_string()
}

fn ollama(p: &Provider, model: &str, extra: &str) -> String {
    format!(
        "[embed]\nprovider = \"ollama\"\nurl = \"{}\"\nmodel = \"{model}\"\ntimeout_ms = 2000\n{extra}",
        p.url
    )
}

/// Starts a daemon whose config file is `text`.
fn daemon_with(text: &str) -> Daemon {
    let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
    let cfg = config(&dir.path().join("cfg"), text);
    let mut d = Daemon::prepare(dir);
    d.extra = vec!["--config".into(), cfg];
    d.spawn();
    d
}

/// Polls `status` until every memory has a vector (at least `n`).
fn wait_embedded(d: &Daemon, n: i64) -> Value {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let s = d.status();
        let e = &s["embedder"];
        if e["state"] == "ready" && e["pending"] == 0 && e["embedded"].as_i64() >= Some(n) {
            return s;
        }
        assert!(Instant::now() < deadline, "not embedded in time: {e}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn search(d: &Daemon, q: &str, mode: &str) -> (Value, i32) {
    d.json(&["search", q, "--mode", mode])
}

fn hit_ids(v: &Value) -> Vec<i64> {
    crate::common::ids(v, "hits")
}

fn add(d: &Daemon, text: &str, extra: &[&str]) -> i64 {
    let mut args = vec!["add", text];
    args.extend_from_slice(extra);
    let (v, code) = d.json(&args);
    assert_eq!(code, 0, "{v}");
    v["id"].as_i64().unwrap()
}

#[test]
fn paraphrase_and_keyword_hits_with_the_local_model() {
    let Some(model) = crate::common::model_dir() else {
        return;
    };
    let d = daemon_with(&format!("[embed]\nmodel_dir = \"{}\"\n", model.display()));
    let tea = add(&d, "I'm a tea person; coffee makes me jittery.", &[]);
    let keyword = add(&d, "The drink menu for the offsite is in ops/menu.md.", &[]);
    let deploy = add(&d, "The deploy script lives in ops/deploy.sh.", &[]);
    add(&d, "Standups are at 9:30 on weekdays.", &[]);
    let s = wait_embedded(&d, 4);
    let model = s["embedder"]["model"].as_str().unwrap();
    assert!(model.starts_with("local:all-MiniLM-L6-v2@"), "{model}");
    assert_eq!(s["embedder"]["dim"], 384);

    let q = "what does the user like to drink?";
    // Lexical finds only the keyword hit; semantic puts the paraphrase first.
    let (lex, _) = search(&d, q, "lexical");
    assert_eq!(hit_ids(&lex), vec![keyword], "{lex}");
    let (sem, code) = search(&d, q, "semantic");
    assert_eq!(code, 0, "{sem}");
    assert_eq!(hit_ids(&sem)[0], tea, "{sem}");
    assert_eq!(sem["hits"][0]["matched"], "semantic");
    // Hybrid keeps both above the unrelated rows; auto runs hybrid.
    for mode in ["hybrid", "auto"] {
        let (h, _) = search(&d, q, mode);
        let ids = hit_ids(&h);
        assert_eq!(h["mode"], "hybrid", "{h}");
        let mut top2 = ids[..2].to_vec();
        top2.sort_unstable();
        assert_eq!(top2, vec![tea, keyword], "{mode}: {h}");
        // The unrelated row ranks below both, or is under the floor.
        assert!(!ids[..2].contains(&deploy), "{h}");
        let kw = h["hits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["id"] == keyword)
            .unwrap();
        assert_eq!(kw["matched"], "hybrid", "found by both: {kw}");
    }
    // An exact keyword stays first in hybrid.
    let (h, _) = search(&d, "deploy.sh", "hybrid");
    assert_eq!(hit_ids(&h)[0], deploy, "{h}");
}

#[test]
fn worker_embeds_adds_and_external_writes() {
    let p = Provider::start();
    let d = daemon_with(&ollama(&p, "bag-64", ""));
    add(&d, "alpha bravo charlie", &[]);
    wait_embedded(&d, 1);
    // The sqlite3 shell as another writer: found by the generation change.
    sqlite3(
        &d.db(),
        "INSERT INTO memories(content) VALUES ('delta echo foxtrot')",
    );
    wait_embedded(&d, 2);
    let (v, _) = search(&d, "echo delta", "semantic");
    let external = hit_ids(&v)[0];
    assert_eq!(v["hits"][0]["content"], "delta echo foxtrot", "{v}");
    // A changed text drops its vector (trigger) and gets a new one.
    sqlite3(
        &d.db(),
        &format!("UPDATE memories SET content = 'golf hotel india' WHERE id = {external}"),
    );
    // Pending is read from the database: the trigger already dropped it.
    wait_embedded(&d, 2);
    let (v, _) = search(&d, "hotel golf", "semantic");
    assert_eq!(hit_ids(&v)[0], external, "{v}");
    assert!(v["hits"][0]["score"].as_f64() > Some(0.9), "{v}");
    assert_eq!(v["hits"][0]["content"], "golf hotel india");
    let vectors: i64 = sqlite3(&d.db(), "SELECT count(*) FROM memory_vectors")
        .trim()
        .parse()
        .unwrap();
    assert_eq!(vectors, 2);
    // Vectors are little-endian f32 of the model's dimension.
    let len = sqlite3(
        &d.db(),
        &format!("SELECT length(vector) FROM memory_vectors WHERE memory_id = {external}"),
    );
    assert_eq!(len.trim(), (64 * 4).to_string());
}

#[test]
fn rows_written_while_no_daemon_ran_are_embedded_at_start() {
    let p = Provider::start();
    let mut d = daemon_with(&ollama(&p, "bag-32", ""));
    add(&d, "one two three", &[]);
    wait_embedded(&d, 1);
    d.terminate();
    // Pending work is what has no vector: nothing is kept in memory.
    sqlite3(
        &d.db(),
        "INSERT INTO memories(content) VALUES ('four five'); INSERT INTO memories(content) VALUES ('six seven');",
    );
    d.spawn();
    let s = wait_embedded(&d, 3);
    assert_eq!(s["embedder"]["embedded"], 3, "{s}");
}

#[test]
fn another_model_is_refused_until_reembed() {
    let p = Provider::start();
    let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
    let cfg = config(&dir.path().join("cfg"), &ollama(&p, "bag-16", ""));
    let mut d = Daemon::prepare(dir);
    d.extra = vec!["--config".into(), cfg.clone()];
    d.spawn();
    let a = add(&d, "kilo lima mike", &[]);
    add(&d, "november oscar papa", &[]);
    wait_embedded(&d, 2);
    d.terminate();

    // The same data dir with another model (another dimension too).
    std::fs::write(&cfg, ollama(&p, "bag-24", "")).unwrap();
    d.spawn();
    let deadline = Instant::now() + Duration::from_secs(60);
    let s = loop {
        let s = d.status();
        if s["embedder"]["state"] == "model_mismatch" {
            break s;
        }
        assert!(Instant::now() < deadline, "{s}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(s["embedder"]["stored_model"], "ollama:bag-16");
    assert_eq!(s["embedder"]["model"], "ollama:bag-24");
    for mode in ["semantic", "hybrid"] {
        let (v, code) = search(&d, "kilo", mode);
        assert_eq!(code, 2, "{v}");
        assert_eq!(v["code"], "not_configured", "{v}");
        let msg = v["error"].as_str().unwrap();
        for part in ["ollama:bag-16", "ollama:bag-24", "memd reembed"] {
            assert!(msg.contains(part), "{msg}");
        }
    }
    // Lexical keeps working, and auto falls back to it.
    let (v, code) = search(&d, "kilo", "auto");
    assert_eq!(code, 0, "{v}");
    assert_eq!(hit_ids(&v), vec![a]);
    assert_eq!(v["mode"], "auto");
    // Nothing was embedded with the wrong model meanwhile.
    let lock = sqlite3(
        &d.db(),
        "SELECT value FROM memory_meta WHERE key = 'embed_model'",
    );
    assert_eq!(lock.trim(), "ollama:bag-16");

    let (r, code) = d.json(&["reembed"]);
    assert_eq!(code, 0, "{r}");
    assert_eq!(r["model"], "ollama:bag-24");
    assert_eq!(r["previous_model"], "ollama:bag-16");
    assert_eq!(r["pending"], 2);
    let s = wait_embedded(&d, 2);
    assert_eq!(s["embedder"]["stored_model"], "ollama:bag-24");
    assert_eq!(s["embedder"]["stored_dim"], 24);
    let (v, code) = search(&d, "kilo lima", "semantic");
    assert_eq!(code, 0, "{v}");
    assert_eq!(hit_ids(&v)[0], a);
    let len = sqlite3(
        &d.db(),
        &format!("SELECT length(vector) FROM memory_vectors WHERE memory_id = {a}"),
    );
    assert_eq!(len.trim(), (24 * 4).to_string());
}

#[test]
fn without_an_embedder_semantic_modes_say_why() {
    // No model files where this daemon looks (its HOME is a temp dir).
    let d = Daemon::start();
    add(&d, "quebec romeo", &[]);
    let s = d.status();
    assert_eq!(s["embedder"]["state"], "unavailable", "{s}");
    let reason = s["embedder"]["reason"].as_str().unwrap();
    assert!(reason.contains("memd model fetch"), "{reason}");
    let (v, code) = search(&d, "quebec", "semantic");
    assert_eq!(
        (code, v["code"].as_str()),
        (2, Some("not_configured")),
        "{v}"
    );
    assert!(
        v["error"].as_str().unwrap().contains("model.safetensors"),
        "{v}"
    );
    let (v, code) = search(&d, "quebec", "auto");
    assert_eq!(code, 0);
    assert_eq!(v["count"], 1);
    drop(d);

    let d = daemon_with("[embed]\nprovider = \"none\"\n");
    assert_eq!(d.status()["embedder"], Value::Null);
    let (v, _) = search(&d, "x", "hybrid");
    assert_eq!(v["code"], "not_configured", "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("no embedder is configured"),
        "{v}"
    );
    let (v, _) = d.json(&["reembed"]);
    assert_eq!(v["code"], "not_configured", "{v}");
}

#[test]
fn filters_apply_before_semantic_ranking() {
    let p = Provider::start();
    let d = daemon_with(&ollama(&p, "bag-64", ""));
    // The closest row is filtered out: the best row that passes comes back.
    add(&d, "sierra tango uniform", &["--tag", "other"]);
    let wanted = add(&d, "sierra victor whiskey", &["--tag", "keep"]);
    for i in 0..30 {
        add(&d, &format!("sierra tango filler{i}"), &[]);
    }
    wait_embedded(&d, 32);
    let (v, _) = d.json(&[
        "search",
        "sierra tango uniform",
        "--mode",
        "semantic",
        "--tag",
        "keep",
        "--limit",
        "1",
    ]);
    assert_eq!(hit_ids(&v), vec![wanted], "{v}");
}

/// A provider that fails at query time: `auto` answers lexically, an
/// explicit semantic search says why it cannot.
#[test]
fn auto_search_survives_a_failing_provider() {
    let p = Provider::start();
    let d = daemon_with(&ollama(&p, "bag-16", "retries = 0\n"));
    let id = add(&d, "the quarterly report is due on friday", &[]);
    wait_embedded(&d, 1);
    let (v, code) = search(&d, "quarterly report", "auto");
    assert_eq!((code, v["mode"].clone()), (0, json!("hybrid")), "{v}");
    p.fail_next(&[Fault::Status(500, "model crashed")]);
    let (v, code) = search(&d, "quarterly report", "auto");
    assert_eq!(code, 0, "{v}");
    // `auto` as without an embedder: lexical, then fuzzy if needed.
    assert_eq!(v["mode"], "auto", "{v}");
    assert_eq!(hit_ids(&v), vec![id]);
    assert_eq!(v["hits"][0]["matched"], "lexical", "{v}");
    p.fail_next(&[Fault::Status(500, "model crashed")]);
    let (v, code) = search(&d, "quarterly report", "semantic");
    assert_ne!(code, 0, "{v}");
    assert_eq!(v["code"], "not_configured", "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("model crashed"),
        "{v}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn near_duplicates_are_noticed_and_auto_superseded() {
    let p = Provider::start();
    let d = daemon_with(&ollama(&p, "bag-64", "auto_supersede = true\n"));
    let mut c = d.client().await;
    c.subscribe().await.unwrap();
    let old = add(
        &d,
        "the staging database listens on port 5432",
        &["--subject", "db"],
    );
    let plain = add(&d, "zulu yankee xray whiskey", &[]);
    wait_embedded(&d, 2);
    // Same words, other order: cosine 1 under the bag-of-words model. The
    // add itself returns at once and merges nothing.
    let (v, code) = d.json(&[
        "add",
        "port 5432: the staging database listens on",
        "--subject",
        "db",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["merged_into"], Value::Null);
    let new = v["id"].as_i64().unwrap();
    let (v, _) = d.json(&["add", "whiskey xray yankee zulu"]);
    let similar = v["id"].as_i64().unwrap();
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let e = tokio::time::timeout(Duration::from_secs(60), c.next_event())
            .await
            .expect("a notice")
            .unwrap();
        if let Event::Similar(s) = e {
            seen.push(s);
        }
    }
    seen.sort_by_key(|s| s.id);
    assert_eq!(
        (seen[0].id, seen[0].similar_to, seen[0].superseded),
        (new, old, true)
    );
    assert_eq!(
        (seen[1].id, seen[1].similar_to, seen[1].superseded),
        (similar, plain, false)
    );
    assert!(seen[1].cosine > 0.99);
    // The subject matched: the old row is superseded by the new one.
    let (g, _) = d.json(&["get", &old.to_string(), "--include-inactive"]);
    assert_eq!(g["memory"]["superseded_by"], new, "{g}");
    let (g, _) = d.json(&["get", &plain.to_string()]);
    assert_eq!(
        g["memory"]["superseded_by"],
        Value::Null,
        "no subject: only a notice"
    );

    // A burst larger than the worker's batch (an import of 40 rows) is
    // checked too: only rows there before the daemon served are old data.
    let golf = add(&d, "golf hotel india juliet", &[]);
    wait_embedded(&d, 5);
    let mut entries: Vec<Value> = (0..40)
        .map(|i| json!({"uid": format!("burst-{i}"), "content": format!("burst{i} note{i} item{i}")}))
        .collect();
    entries[5] = json!({"uid": "burst-dup", "content": "juliet india hotel golf"});
    let file = d.dir.path().join("burst.json");
    std::fs::write(&file, json!({ "entries": entries }).to_string()).unwrap();
    let (v, code) = d.json(&["import", file.to_str().unwrap()]);
    assert_eq!((code, v["inserted"].clone()), (0, json!(40)), "{v}");
    let dup = loop {
        let e = tokio::time::timeout(Duration::from_secs(60), c.next_event())
            .await
            .expect("a notice for the burst")
            .unwrap();
        if let Event::Similar(s) = e
            && s.similar_to == golf
        {
            break s;
        }
    };
    let (g, _) = d.json(&["get", &dup.id.to_string()]);
    assert_eq!(g["memory"]["content"], "juliet india hotel golf");
}

#[tokio::test(flavor = "multi_thread")]
async fn batch_search_answers_each_query_in_order() {
    let p = Provider::start();
    let d = daemon_with(&ollama(&p, "bag-64", ""));
    let a = add(&d, "amber basalt cobalt", &[]);
    let b = add(&d, "dune ember flint", &[]);
    wait_embedded(&d, 2);
    let mut c = d.client().await;
    let req = |q: &str, mode| SearchRequest {
        query: q.into(),
        filter: Filter::default(),
        limit: 1,
        mode,
        syntax: QuerySyntax::Plain,
        explain: false,
        offset: 0,
    };
    let before = p.requests.load(std::sync::atomic::Ordering::SeqCst);
    let results = c
        .search_batch(vec![
            req("flint ember", SearchMode::Semantic),
            req("cobalt", SearchMode::Lexical),
            req("basalt amber", SearchMode::Hybrid),
        ])
        .await
        .unwrap();
    let after = p.requests.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(
        after - before,
        1,
        "the two queries that need vectors: one request"
    );
    let top: Vec<i64> = results.iter().map(|r| r.hits[0].memory.id).collect();
    assert_eq!(top, vec![b, a, a]);
    assert_eq!(results[2].mode, SearchMode::Hybrid);
    let err = c.search_batch(vec![]).await.unwrap_err();
    assert!(err.to_string().contains("no search"), "{err}");
}

/// The next semantic near-duplicate notice pushed to `c`.
async fn next_similar(c: &mut memd_client::Client) -> memd_client::proto::SimilarEvent {
    loop {
        let e = tokio::time::timeout(Duration::from_secs(30), c.next_event())
            .await
            .expect("a near-duplicate notice")
            .unwrap();
        if let Event::Similar(s) = e {
            return s;
        }
    }
}

fn superseded_by(d: &Daemon, id: i64) -> Value {
    let (g, code) = d.json(&["get", &id.to_string(), "--include-inactive"]);
    assert_eq!(code, 0, "{g}");
    g["memory"]["superseded_by"].clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn rows_embedded_in_one_batch_supersede_only_the_older_one() {
    let p = Provider::start();
    let d = daemon_with(&ollama(&p, "bag-64", "auto_supersede = true\n"));
    let mut c = d.client().await;
    c.subscribe().await.unwrap();
    add(&d, "kilo lima mike november", &[]);
    wait_embedded(&d, 1);
    // The next request stalls: the rows added while it does are embedded
    // together afterwards, in one batch.
    p.fail_next(&[Fault::Stall(Duration::from_millis(1500))]);
    let before = p.requests.load(std::sync::atomic::Ordering::SeqCst);
    add(&d, "oscar papa quebec romeo", &[]);
    let deadline = Instant::now() + Duration::from_secs(30);
    while p.requests.load(std::sync::atomic::Ordering::SeqCst) == before {
        assert!(Instant::now() < deadline, "the worker sent nothing");
        std::thread::sleep(Duration::from_millis(10));
    }
    let old = add(
        &d,
        "the cache is redis on host alpha",
        &["--subject", "cache"],
    );
    let new = add(
        &d,
        "on host alpha the cache is redis",
        &["--subject", "cache"],
    );
    assert_eq!(d.status()["embedder"]["pending"], 3, "still stalled");
    let s = next_similar(&mut c).await;
    assert_eq!(
        (s.id, s.similar_to, s.superseded),
        (new, old, true),
        "{s:?}"
    );
    wait_embedded(&d, 4);
    assert_eq!(superseded_by(&d, old), new);
    assert_eq!(superseded_by(&d, new), Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_older_row_changed_to_match_a_newer_one_is_the_one_superseded() {
    let p = Provider::start();
    let d = daemon_with(&ollama(&p, "bag-64", "auto_supersede = true\n"));
    let mut c = d.client().await;
    c.subscribe().await.unwrap();
    let old = add(&d, "alpha bravo charlie", &["--subject", "cache"]);
    let new = add(&d, "delta echo foxtrot golf", &["--subject", "cache"]);
    wait_embedded(&d, 2);
    // The older row now says what the newer one says: embedded again, it
    // meets a newer neighbor, which supersedes it (never the reverse).
    let (v, code) = d.json(&[
        "update",
        &old.to_string(),
        "--content",
        "golf foxtrot echo delta",
    ]);
    assert_eq!(code, 0, "{v}");
    let s = next_similar(&mut c).await;
    assert_eq!(
        (s.id, s.similar_to, s.superseded),
        (new, old, true),
        "{s:?}"
    );
    assert!(s.cosine > 0.99, "{s:?}");
    assert_eq!(superseded_by(&d, old), new);
    assert_eq!(superseded_by(&d, new), Value::Null);
}

/// Adds made before the embedder is ready (here the provider stalls at
/// the daemon's start; the same holds while a model loads or a provider is
/// down) are checked once it is.
#[tokio::test(flavor = "multi_thread")]
async fn adds_made_while_the_embedder_loads_are_checked_for_near_duplicates() {
    let p = Provider::start();
    // The dimension probe at start stalls; its retry answers.
    p.fail_next(&[Fault::Stall(Duration::from_millis(1500))]);
    let d = daemon_with(&ollama(&p, "bag-64", "auto_supersede = true\n"));
    let mut c = d.client().await;
    c.subscribe().await.unwrap();
    let old = add(
        &d,
        "the cache is redis on host alpha",
        &["--subject", "cache"],
    );
    let new = add(
        &d,
        "on host alpha the cache is redis",
        &["--subject", "cache"],
    );
    let first = add(&d, "uniform victor whiskey xray", &[]);
    let second = add(&d, "xray whiskey victor uniform", &[]);
    assert_eq!(d.status()["embedder"]["state"], "loading");
    let mut seen = [next_similar(&mut c).await, next_similar(&mut c).await];
    seen.sort_by_key(|s| s.id);
    assert_eq!(
        (seen[0].id, seen[0].similar_to, seen[0].superseded),
        (new, old, true)
    );
    assert_eq!(
        (seen[1].id, seen[1].similar_to, seen[1].superseded),
        (second, first, false),
        "no subject: flagged only"
    );
    assert_eq!(superseded_by(&d, old), new);
    wait_embedded(&d, 4);
    let similar = sqlite3(
        &d.db(),
        "SELECT memory_id || '>' || similar_to FROM memory_similar ORDER BY memory_id",
    );
    assert_eq!(similar.trim(), format!("{new}>{old}\n{second}>{first}"));

    // Rows that were there before the daemon started are old data: a
    // restart embeds them without a notice.
    let mut d = d;
    d.terminate();
    sqlite3(
        &d.db(),
        "DELETE FROM memory_vectors; DELETE FROM memory_similar;",
    );
    d.spawn();
    wait_embedded(&d, 4);
    let similar = sqlite3(&d.db(), "SELECT count(*) FROM memory_similar");
    assert_eq!(similar.trim(), "0");
}

/// The key of an openai-compatible provider reaches the provider and never
/// the daemon's log.
#[test]
fn the_providers_key_is_sent_but_never_logged() {
    let p = Provider::start();
    let key = "sk-memd-test-4f9a8c2e7b1d";
    let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
    let cfg = config(
        &dir.path().join("cfg"),
        &format!(
            "[embed]\nprovider = \"openai\"\nurl = \"{}\"\nmodel = \"bag-16\"\n\
             api_key_env = \"EMBED_KEY_FOR_TEST\"\ntimeout_ms = 2000\n",
            p.url
        ),
    );
    let mut d = Daemon::prepare(dir);
    d.extra = vec!["--config".into(), cfg];
    d.env = vec![("EMBED_KEY_FOR_TEST".into(), key.into())];
    d.spawn();
    add(&d, "the release checklist lives in the wiki", &[]);
    wait_embedded(&d, 1);
    assert!(
        p.tokens
            .lock()
            .unwrap()
            .iter()
            .any(|t| t == &format!("Bearer {key}")),
        "the key was not sent"
    );
    d.cli(&["stop"]);
    let log = d.log();
    assert!(log.contains("embed"), "{log}");
    assert!(!log.contains(key) && !log.contains("4f9a8c2e"), "{log}");
}

/// A memory of a thread is searched with its neighbours: a short reply
/// that shares no word with the question is found through the turn before
/// it (after that turn, before an unrelated memory); with `thread_near` and
/// `thread_far` at 0 it has only its own words again.
#[test]
fn a_turn_of_a_thread_is_found_through_its_neighbours() {
    let p = Provider::start();
    for (extra, borrows) in [
        ("", true),
        (
            "[search.hybrid]\nthread_near = 0.0\nthread_far = 0.0\n",
            false,
        ),
    ] {
        let d = daemon_with(&ollama(&p, "bag-256", extra));
        let ask = add(
            &d,
            "planning a kayak trip on the fjord",
            &["--thread", "chat", "--position", "1"],
        );
        let reply = add(
            &d,
            "sounds wonderful, when",
            &["--thread", "chat", "--position", "2"],
        );
        let other = add(&d, "quarterly budget review notes", &[]);
        wait_embedded(&d, 3);
        let (v, code) = d.json(&["search", "kayak fjord", "--mode", "semantic"]);
        assert_eq!(code, 0, "{v}");
        let hits = v["hits"].as_array().unwrap();
        let score = |id: i64| {
            hits.iter()
                .find(|h| h["id"] == id)
                .map_or(0.0, |h| h["score"].as_f64().unwrap())
        };
        assert_eq!(hit_ids(&v)[0], ask, "{v}");
        assert_eq!(score(other), 0.0, "{v}");
        if borrows {
            assert!(score(reply) > 0.0, "{v}");
            assert!(score(reply) < score(ask), "{v}");
            assert_eq!(hit_ids(&v)[1], reply, "{v}");
        } else {
            assert_eq!(score(reply), 0.0, "{v}");
            continue;
        }
        // Another tool moves the reply to another thread (its text, and so
        // its vector, stay): once the daemon has seen the change, the
        // reply has only its own words.
        sqlite3(
            &d.db(),
            &format!("UPDATE memories SET thread = 'elsewhere' WHERE id = {reply}"),
        );
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let (v, _) = d.json(&["search", "kayak fjord", "--mode", "semantic"]);
            let moved = v["hits"]
                .as_array()
                .unwrap()
                .iter()
                .find(|h| h["id"] == reply)
                .is_some_and(|h| h["score"].as_f64() == Some(0.0));
            if moved {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "still mixed with its old neighbour: {v}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
