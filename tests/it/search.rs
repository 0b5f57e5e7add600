//! Search quality through the real daemon: fuzzy matching, ranking,
//! filters on every mode, access tracking.

use std::time::{Duration, Instant};

use crate::common::{Daemon, ids, sqlite3};
use serde_json::Value;

fn search(d: &Daemon, args: &[&str]) -> Value {
    let mut all = vec!["search"];
    all.extend_from_slice(args);
    let (v, code) = d.json(&all);
    assert_eq!(code, 0, "{v}");
    v
}

fn seed(d: &Daemon) {
    for (text, extra) in [
        (
            "Docker networking between containers uses the bridge driver",
            vec!["--category", "fact"],
        ),
        (
            "Kubernetes clusters are created with minikube for local tests",
            vec!["--tag", "k8s"],
        ),
        (
            "The deploy script lives in ops/deploy.sh",
            vec!["--tag", "ops"],
        ),
        (
            "PostgreSQL listens on port 5432 in staging",
            vec!["--meta", "env=staging"],
        ),
        (
            "Prefer tabs over spaces in Makefiles",
            vec!["--category", "preference"],
        ),
    ] {
        let mut args = vec!["add", text];
        args.extend(extra);
        let (v, code) = d.json(&args);
        assert_eq!(code, 0, "{v}");
    }
}

#[test]
fn typos_find_what_was_meant() {
    let d = Daemon::start();
    seed(&d);
    // The example: two words, each with a swapped pair of letters.
    let v = search(&d, &["dokcer netwrok"]);
    assert_eq!(ids(&v, "hits")[0], 1, "{v}");
    assert_eq!(v["hits"][0]["matched"], "fuzzy");
    let (v, code) = d.json(&[
        "add",
        "The configuration of the load balancer is in the infra repository",
    ]);
    assert_eq!((code, v["id"].as_i64()), (0, Some(6)), "{v}");
    for (query, want) in [
        ("kubernetse", 2),    // one transposition in a long word
        ("kubrenetse", 2),    // two transpositions
        ("confguraton", 6),   // two deletions
        ("configurtaion", 6), // a transposition in a long word
        ("minikub", 2),       // one deletion
        ("depoly script", 3), // transposition, plus an exact word
        ("postgrse", 4),      // transposition
        ("makefiels", 5),     // transposition with a plural
        ("focker", 1),        // a typo in the first letter
        ("dcker", 1),         // the second letter missing
        ("ddocker", 1),       // a letter doubled at the start
        ("kbernetes", 2),     // a deletion near the start of a long word
        ("ostgresql", 4),     // the first letter missing
    ] {
        let v = search(&d, &["--mode", "fuzzy", query]);
        let found = ids(&v, "hits");
        assert_eq!(found.first(), Some(&want), "{query}: {v}");
    }
    // Nothing close: no hit rather than noise.
    let v = search(&d, &["--mode", "fuzzy", "xylophone"]);
    assert_eq!(v["count"], 0, "{v}");
}

#[test]
fn prefixes_and_substrings() {
    let d = Daemon::start();
    seed(&d);
    for (query, want) in [
        ("kube", 2),
        ("deplo", 3),
        ("containe", 1),
        ("postgre", 4),
        // Inner parts that run past what the stemmer keeps of the word.
        ("ntainers", 1),
        ("etworking", 1),
        ("inikube", 2),
        ("lusters", 2),
    ] {
        let v = search(&d, &["--mode", "fuzzy", query]);
        assert_eq!(ids(&v, "hits").first(), Some(&want), "{query}: {v}");
    }
    // FTS prefix queries with the explicit syntax.
    let v = search(&d, &["--syntax", "fts", "kube*"]);
    assert_eq!(ids(&v, "hits"), vec![2]);
}

#[test]
fn auto_falls_back_to_fuzzy_only_when_lexical_finds_little() {
    let d = Daemon::start();
    seed(&d);
    let v = search(&d, &["docker"]);
    assert_eq!(v["hits"][0]["matched"], "lexical");
    let v = search(&d, &["dokcer"]);
    assert_eq!(ids(&v, "hits"), vec![1]);
    assert_eq!(v["hits"][0]["matched"], "fuzzy");
    let v = search(&d, &["--mode", "lexical", "dokcer"]);
    assert_eq!(v["count"], 0);
}

#[test]
fn rows_written_externally_are_found_fuzzily() {
    let d = Daemon::start();
    sqlite3(
        &d.db(),
        "INSERT INTO memories(content) VALUES ('Grafana dashboards show the latency budget')",
    );
    let v = search(&d, &["grafnaa dashbaords"]);
    assert_eq!(ids(&v, "hits"), vec![1], "{v}");
}

#[test]
fn every_filter_applies_to_every_mode() {
    let d = Daemon::start();
    seed(&d);
    d.json(&[
        "add",
        "Docker compose runs the staging stack",
        "--tag",
        "ops",
        "--scope",
        "agent",
        "--subject",
        "compose",
        "--meta",
        "env=prod",
    ]);
    for mode in ["lexical", "fuzzy", "auto"] {
        let q = if mode == "fuzzy" { "dokcer" } else { "docker" };
        let run = |extra: &[&str]| {
            let mut args = vec!["--mode", mode];
            args.extend_from_slice(extra);
            args.push(q);
            ids(&search(&d, &args), "hits")
        };
        assert_eq!(run(&[]).len(), 2, "{mode}");
        assert_eq!(run(&["--category", "fact"]), vec![1], "{mode}");
        assert_eq!(run(&["--tag", "ops"]), vec![6], "{mode}");
        assert_eq!(run(&["--scope", "agent"]), vec![6], "{mode}");
        assert_eq!(run(&["--scope", "project"]), vec![1], "{mode}");
        assert_eq!(run(&["--until", "1h"]), Vec::<i64>::new(), "{mode}");
        assert_eq!(run(&["--since", "1h"]).len(), 2, "{mode}");
        assert_eq!(run(&["--updated-until", "1h"]), Vec::<i64>::new(), "{mode}");
        assert_eq!(
            run(&["--namespaces", "nobody"]),
            Vec::<i64>::new(),
            "{mode}"
        );
        assert_eq!(run(&["--meta", "env=staging"]), Vec::<i64>::new(), "{mode}");
        assert_eq!(run(&["--meta", "env=prod"]), vec![6], "{mode}");
        assert_eq!(run(&["--subject", "compose"]), vec![6], "{mode}");
        assert_eq!(
            run(&["--tag", "ops", "--tag", "nope"]),
            Vec::<i64>::new(),
            "{mode}"
        );
        assert_eq!(
            run(&["--any-tag", "ops", "--any-tag", "nope"]),
            vec![6],
            "{mode}"
        );
        assert_eq!(run(&["--updated-since", "1h"]).len(), 2, "{mode}");
    }
    let v = search(&d, &["--meta", "env=staging", "postgres staging"]);
    assert_eq!(ids(&v, "hits"), vec![4]);
    // Superseded rows only when asked.
    d.json(&[
        "add",
        "Docker networking now uses the overlay driver",
        "--supersedes",
        "1",
    ]);
    let v = search(&d, &["--category", "fact", "docker networking"]);
    assert_eq!(
        ids(&v, "hits"),
        Vec::<i64>::new(),
        "the new one has the default category"
    );
    let v = search(
        &d,
        &[
            "--include-superseded",
            "--category",
            "fact",
            "docker networking",
        ],
    );
    assert_eq!(ids(&v, "hits"), vec![1]);
}

#[test]
fn recency_decay_and_pins_order_equal_matches() {
    let d = Daemon::start();
    d.json(&[
        "add",
        "the release train leaves on tuesday",
        "--category",
        "fact",
    ]);
    d.json(&[
        "add",
        "the release train leaves on thursday",
        "--category",
        "fact",
    ]);
    d.json(&[
        "add",
        "the release train preference is weekly",
        "--category",
        "preference",
    ]);
    // Age rows 1 and 3 by a year. `updated_at` is not a meaningful column:
    // setting it from the shell moves neither the generation nor `rev`.
    sqlite3(
        &d.db(),
        "UPDATE memories SET updated_at = '2025-01-01T00:00:00.000Z' WHERE id IN (1, 3)",
    );
    let v = search(&d, &["--explain", "release train"]);
    let order = ids(&v, "hits");
    let pos = |id: i64| order.iter().position(|x| *x == id).unwrap();
    assert!(pos(2) < pos(1), "the fresh fact before the old one: {v}");
    let old_fact = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == 1)
        .unwrap();
    assert!(
        old_fact["explain"]["decay"].as_f64().unwrap() < 0.2,
        "{old_fact}"
    );
    let old_pref = v["hits"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == 3)
        .unwrap();
    assert_eq!(
        old_pref["explain"]["decay"], 1.0,
        "preferences do not decay"
    );
    for key in [
        "raw",
        "relevance",
        "decay",
        "age_days",
        "pin_boost",
        "score",
    ] {
        assert!(old_fact["explain"].get(key).is_some(), "{key}");
    }
    // A pin lifts the old fact to the top.
    d.json(&["update", "1", "--pin"]);
    let v = search(&d, &["release train"]);
    assert_eq!(ids(&v, "hits")[0], 1, "{v}");
    // Without --explain, no parts.
    assert!(v["hits"][0].get("explain").is_none());
}

#[test]
fn access_tracking_is_not_an_edit() {
    let d = Daemon::start();
    seed(&d);
    let (s, _) = d.json(&["inject"]);
    let mut shell_script = String::from("inject\n");
    for _ in 0..5 {
        shell_script.push_str("search docker\n");
    }
    shell_script.push_str("inject\n");
    let g = d.status()["generation"].as_u64().unwrap();
    // Run by an agent (its host's variable set): its reads are uses.
    let mut shell = d
        .cmd()
        .args(["--json", "shell"])
        .env("CLAUDECODE", "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut shell.stdin.take().unwrap(), shell_script.as_bytes()).unwrap();
    let out = shell.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines[0]["block"], s["block"]);
    assert_eq!(
        lines[6]["stats"]["cached"], true,
        "searching does not invalidate the block"
    );
    // The counts land within a flush interval.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let row = sqlite3(
            &d.db(),
            "SELECT use_count, last_used_at IS NOT NULL FROM memories WHERE id = 1",
        );
        if row.trim() == "5|1" {
            break;
        }
        assert!(Instant::now() < deadline, "use_count not written: {row}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = d.status();
    assert_eq!(
        status["generation"].as_u64().unwrap(),
        g,
        "no generation bump"
    );
    assert_eq!(status["drift"]["external_epoch"], Value::Null);
    let (m, _) = d.json(&["get", "1"]);
    assert_eq!(m["memory"]["rev"], 1, "no rev bump");
}

#[test]
fn fts_syntax_errors_are_clear() {
    let d = Daemon::start();
    seed(&d);
    for q in ["AND docker", "\"unclosed", "docker NOT", "nosuchcol:x"] {
        let (v, code) = d.json(&["search", "--syntax", "fts", q]);
        assert_eq!(code, 2, "{q}: {v}");
        assert!(
            v["error"]
                .as_str()
                .unwrap()
                .starts_with("invalid FTS query"),
            "{v}"
        );
    }
    let v = search(&d, &["--syntax", "fts", "docker NOT kubernetes"]);
    assert_eq!(ids(&v, "hits"), vec![1]);
    let v = search(&d, &["--syntax", "fts", "\"deploy script\""]);
    assert_eq!(ids(&v, "hits"), vec![3]);
    let (v, code) = d.json(&["search", "--mode", "fuzzy", "--syntax", "fts", "x"]);
    assert_eq!(code, 2, "{v}");
}

/// The best matches of the whole index lie in another namespace: the
/// session's own, weaker ones are still found (the ranked window grows).
#[test]
fn weaker_matches_behind_another_namespaces_are_found() {
    let d = Daemon::start();
    let entries: Vec<Value> = (0..300)
        .map(|i| serde_json::json!({"uid": format!("busy-{i}"), "namespace": "busy", "content": format!("alpha alpha {i}")}))
        .collect();
    let file = d.dir.path().join("busy.json");
    std::fs::write(&file, serde_json::json!({ "entries": entries }).to_string()).unwrap();
    let (v, code) = d.json(&["import", file.to_str().unwrap()]);
    assert_eq!((code, v["inserted"].as_i64()), (0, Some(300)), "{v}");
    let mine: Vec<i64> = [
        "alpha appears once in this much longer memory about other things",
        "and alpha here too, among many other words of a long note",
    ]
    .iter()
    .map(|t| d.json(&["add", t]).0["id"].as_i64().unwrap())
    .collect();
    for mode in ["lexical", "fuzzy", "auto"] {
        let v = search(&d, &["--mode", mode, "--limit", "5", "alpha"]);
        let mut found = ids(&v, "hits");
        found.sort_unstable();
        assert_eq!(found, mine, "{mode}: {v}");
    }
    let v = search(&d, &["--namespaces", "busy", "--limit", "3", "alpha"]);
    assert_eq!(v["count"], 3, "{v}");
}

/// Fuzzy search keeps the vocabulary in memory once asked, at the
/// generation it read; a memory added since is still found by a typo (the
/// cached list is not used at another generation).
#[test]
fn the_vocabulary_cache_never_hides_new_words() {
    let d = Daemon::start();
    seed(&d);
    let v = search(&d, &["--mode", "fuzzy", "dokcer"]);
    assert_eq!(ids(&v, "hits")[0], 1, "{v}");
    let deadline = Instant::now() + Duration::from_secs(30);
    let cached = loop {
        let s = d.status();
        if let Some(g) = s["stats"]["vocab_generation"].as_u64() {
            break g;
        }
        assert!(Instant::now() < deadline, "no vocabulary cached: {s}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(Some(cached), d.status()["generation"].as_u64());
    // At the cached generation: the cache answers.
    let v = search(&d, &["--mode", "fuzzy", "kubernetse"]);
    assert_eq!(ids(&v, "hits")[0], 2, "{v}");
    // A new word, then its typo at once: found.
    let (v, code) = d.json(&["add", "The zanzibar cluster hosts the staging queue"]);
    assert_eq!(code, 0, "{v}");
    let v = search(&d, &["--mode", "fuzzy", "zanzibra"]);
    assert_eq!(ids(&v, "hits"), vec![6], "{v}");
}

/// A query of more distinct words than a search takes gets a clear
/// `invalid_input`, over the CLI and HTTP alike, with captured turns in the
/// index (each word is then weighed per kind of row); no SQL reaches the
/// reply or the log, and 256 words still search.
#[test]
fn too_many_words_get_a_clear_error_and_no_sql() {
    let d = Daemon::start();
    let words = |n: usize| {
        (0..n)
            .map(|i| format!("alpha{i}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (v, code) = d.json(&["add", &format!("kept {}", words(300))]);
    assert_eq!(code, 0, "{v}");
    let transcript = d.dir.path().join("t.jsonl");
    let line = serde_json::json!({
        "type": "user", "uuid": "u1", "sessionId": "s",
        "timestamp": "2026-11-27T10:00:00.000Z",
        "message": {"role": "user", "content": format!("said {}", words(20))},
    });
    std::fs::write(&transcript, format!("{line}\n")).unwrap();
    let event = serde_json::json!({
        "hook_event_name": "Stop", "session_id": "s1",
        "cwd": d.dir.path(), "transcript_path": transcript,
    });
    let out = d.cli_stdin(&["hook", "claude-code"], Some(event.to_string().as_bytes()));
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (v, code) = d.json(&["capture", "status"]);
    assert_eq!(code, 0, "{v}");
    assert!(v.to_string().contains("\"turns\":1"), "{v}");

    let v = search(&d, &[&words(256)]);
    assert_eq!(v["count"], 2, "{v}");
    let (v, code) = d.json(&["search", &words(501)]);
    assert_eq!(code, 2, "{v}");
    assert_eq!(v["code"], "invalid_input", "{v}");
    let error = v["error"].as_str().unwrap();
    assert!(
        error.contains("501 distinct words") && error.contains("at most 256"),
        "{v}"
    );
    let out = d.cli(&["search", &words(501)]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("at most 256"), "{}", out.stderr);

    let q = words(501).replace(' ', "+");
    let reply = crate::common::http::get(&d.socket(), &format!("/v1/memories?q={q}"), &[]);
    assert_eq!(
        reply.status,
        400,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    let body = reply.json();
    assert!(body.to_string().contains("at most 256"), "{body}");
    assert!(body.to_string().contains("invalid_input"), "{body}");
    for text in [body.to_string(), v.to_string(), d.log()] {
        let lower = text.to_lowercase();
        assert!(
            !lower.contains("select") && !lower.contains("memd_rank"),
            "{text}"
        );
    }
}
