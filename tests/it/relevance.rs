//! Search an agent can trust: with the local model, a query nothing in the
//! namespace is about returns no hit (the relevance floor) over the CLI and
//! HTTP; and only an agent's reads count as uses — not a person's CLI, not
//! the viewer, not a search that returned nothing.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::http::{get, tcp_request};
use crate::common::{Daemon, sqlite3};

fn uses(d: &Daemon, id: i64) -> i64 {
    sqlite3(
        &d.db(),
        &format!("SELECT use_count FROM memories WHERE id = {id}"),
    )
    .trim()
    .parse()
    .unwrap()
}

fn add(d: &Daemon, text: &str) -> i64 {
    let (v, code) = d.json(&["add", text]);
    assert_eq!(code, 0, "{v}");
    v["id"].as_i64().unwrap()
}

/// Memories of a software project.
const PROJECT: [&str; 6] = [
    "The deploy script lives in ops/deploy.sh and runs from the nightly job.",
    "The CI machine has 2 cores and 8 GB of memory.",
    "We use PostgreSQL 16 for the team server; backups run at 3 am.",
    "Code review needs one approval before a merge to main.",
    "The release train leaves every second Tuesday.",
    "Lint with cargo clippy before each commit.",
];

/// A daemon with the local model (and `extra` config), the project's
/// memories added and embedded; `None` without the model.
fn with_model(extra: &str) -> Option<(Daemon, Vec<i64>)> {
    let model = crate::common::model_dir()?;
    let d = Daemon::with_config(&format!(
        "{extra}\n[embed]\nmodel_dir = \"{}\"\n",
        model.display()
    ));
    let ids: Vec<i64> = PROJECT.iter().map(|t| add(&d, t)).collect();
    let deadline = Instant::now() + Duration::from_secs(120);
    while d.status()["embedder"]["embedded"] != 6 {
        assert!(Instant::now() < deadline, "{}", d.status());
        std::thread::sleep(Duration::from_millis(100));
    }
    Some((d, ids))
}

/// Questions of another corpus (a chat about family and painting) and
/// made-up strings.
const ELSEWHERE: [&str; 4] = [
    "zzzqqq",
    "qxvrbl kjoo",
    "What did Caroline paint for the charity auction last summer?",
    "When did Melanie go camping with her kids?",
];

#[test]
fn no_hit_below_the_local_models_floor_in_any_mode_with_a_vector() {
    // (Only a memory holding half of a query's words may be below it; the
    // project's memories hold no word of these queries but "deploy
    // script", whose memory the model relates anyway.)
    let Some((d, ids)) = with_model("") else {
        return;
    };
    for q in ELSEWHERE.iter().chain(&["where is the deploy script?"]) {
        for mode in ["auto", "hybrid", "semantic"] {
            let (v, code) = d.json(&["search", q, "--mode", mode]);
            assert_eq!(code, 0, "{v}");
            for hit in v["hits"].as_array().unwrap() {
                let r = hit["relevance"].as_f64().expect("a relevance");
                assert!(r >= 0.11, "{q} ({mode}): a hit below the floor: {hit}");
            }
        }
    }
    // A question about the project finds its memory, with its relevance;
    // lexical search has none to give.
    let (v, _) = d.json(&["search", "where is the deploy script?"]);
    assert_eq!(v["hits"][0]["id"], ids[0], "{v}");
    let relevance = v["hits"][0]["relevance"].as_f64().unwrap();
    assert!(relevance > 0.3 && relevance <= 1.0, "{v}");
    let (v, _) = d.json(&["search", "deploy", "--mode", "lexical"]);
    assert_eq!(v["hits"][0]["relevance"], Value::Null, "{v}");
}

#[test]
fn above_a_configured_floor_nothing_is_said_as_nothing_and_used_by_none() {
    let Some((d, ids)) = with_model("[search.floor]\n\"local:all-MiniLM-L6-v2\" = 0.3\n") else {
        return;
    };
    for q in ELSEWHERE {
        for mode in ["auto", "hybrid", "semantic"] {
            let (v, code) = d.json(&["search", q, "--mode", mode]);
            assert_eq!(code, 0, "{v}");
            assert_eq!(v["count"], 0, "{q} ({mode}): {v}");
        }
        let out = d.cli(&["search", q]);
        assert_eq!(out.code, 0);
        assert_eq!(out.stdout.trim(), "no relevant memory", "{q}");
        let path = format!(
            "/v1/memories?q={}",
            q.replace(' ', "%20").replace('?', "%3F")
        );
        let r = get(&d.socket(), &path, &[("memd-agent", "a")]);
        assert_eq!(r.status, 200);
        assert_eq!(r.json()["hits"], Value::Array(vec![]), "{q}");
    }
    let (v, _) = d.json(&["search", "where is the deploy script?"]);
    assert_eq!(v["hits"][0]["id"], ids[0], "still found: {v}");
    // Nothing returned to an agent, nothing used.
    std::thread::sleep(Duration::from_millis(1500));
    assert!(ids.iter().all(|id| uses(&d, *id) == 0));
}

#[test]
fn only_an_agents_reads_count_as_uses() {
    let d = Daemon::start();
    let id = add(&d, PROJECT[0]);
    // A person: the CLI at hand, a `get`, the viewer's search and page.
    let (v, _) = d.json(&["search", "deploy script"]);
    assert_eq!(v["hits"][0]["id"], id, "{v}");
    d.json(&["get", &id.to_string()]);
    let (addr, code) = crate::viewer::open(&d, false);
    let (cookie, base) = crate::viewer::login(&addr, &code);
    for page in [format!("{base}?q=deploy"), format!("{base}m/{id}")] {
        let r = tcp_request(&addr, "GET", &page, &[("Cookie", &cookie)], None);
        assert_eq!(r.status, 200, "{page}");
        assert!(String::from_utf8_lossy(&r.body).contains("ops/deploy.sh"));
    }
    // An HTTP request that names no agent: a person looking.
    let r = get(&d.socket(), "/v1/memories?q=deploy", &[]);
    assert_eq!(r.json()["count"], 1);
    // A search that finds nothing.
    d.json(&["search", "zzzqqq"]);
    // Then an agent: the CLI run by an agent host, and HTTP naming one.
    let agent = d
        .cmd()
        .args(["--json", "search", "deploy script"])
        .env("CLAUDECODE", "1")
        .output()
        .unwrap();
    assert!(agent.status.success());
    let r = get(&d.socket(), "/v1/memories?q=deploy", &[("memd-agent", "a")]);
    assert_eq!(r.json()["count"], 1);
    let deadline = Instant::now() + Duration::from_secs(10);
    while uses(&d, id) < 2 {
        assert!(
            Instant::now() < deadline,
            "the agent's uses were not written"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Every earlier read would have been written by now too.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(uses(&d, id), 2, "only the two agent reads count");
}

#[test]
fn compact_hits_over_http_carry_few_fields_and_a_cut_text() {
    let d = Daemon::start();
    let long = format!(
        "{} the vault pin is kept in ops {}",
        "setup notes ".repeat(50),
        "more notes ".repeat(50)
    );
    let id = add(&d, &long);
    let r = get(
        &d.socket(),
        "/v1/memories?q=vault&view=compact",
        &[("memd-agent", "a")],
    );
    assert_eq!(r.status, 200);
    let hit = r.json()["hits"][0].clone();
    crate::common::assert_compact_hit(&hit, true);
    assert_eq!(hit["id"], id);
    let text = hit["text"].as_str().unwrap();
    assert!(
        text.contains("vault pin") && text.chars().count() <= 282,
        "{text}"
    );
    // The full view is the default; an unknown view is refused.
    let full = get(&d.socket(), "/v1/memories?q=vault", &[]).json();
    assert_eq!(full["hits"][0]["content"], long.as_str());
    let bad = get(&d.socket(), "/v1/memories?q=vault&view=tiny", &[]);
    assert_eq!(bad.status, 400);
}

#[test]
fn by_default_a_search_about_nothing_here_returns_nothing() {
    let Some((d, ids)) = with_model("") else {
        return;
    };
    for q in ELSEWHERE {
        for mode in ["auto", "hybrid", "semantic"] {
            let (v, code) = d.json(&["search", q, "--mode", mode]);
            assert_eq!(code, 0, "{v}");
            assert_eq!(v["count"], 0, "{q} ({mode}): {v}");
        }
    }
    // What the namespace holds is still found, by meaning and by word.
    let (v, _) = d.json(&["search", "where is the deploy script?"]);
    assert_eq!(v["hits"][0]["id"], ids[0], "{v}");
    let (v, _) = d.json(&["search", "cargo clippy"]);
    assert_eq!(v["hits"][0]["id"], ids[5], "{v}");
    // Lexical search is a keyword lookup: no relevance, no gate.
    let (v, _) = d.json(&["search", "Tuesday", "--mode", "lexical"]);
    assert_eq!(v["hits"][0]["id"], ids[4], "{v}");
}

/// Where the model relates nothing (floors it never reaches), a memory
/// holding half of the query's words is still found — and only then.
#[test]
fn a_memory_holding_the_querys_words_is_related_by_them() {
    let unreachable = "[search.floor]\n\"local:all-MiniLM-L6-v2\" = 0.99\n\
                       [search.nothing_below]\n\"local:all-MiniLM-L6-v2\" = 0.99\n";
    let Some((d, ids)) = with_model(unreachable) else {
        return;
    };
    for mode in ["auto", "hybrid", "semantic"] {
        let (v, _) = d.json(&["search", "where is the deploy script?", "--mode", mode]);
        let found: Vec<&Value> = v["hits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| &h["id"])
            .collect();
        assert_eq!(found, [&Value::from(ids[0])], "{mode}: {v}");
        assert!(v["hits"][0]["relevance"].as_f64().unwrap() < 0.99, "{v}");
    }
    let (v, _) = d.json(&["search", "Clippy, cargo"]);
    assert_eq!(v["hits"][0]["id"], ids[5], "{v}");
    // Fewer than half of the words, or stopwords only, relate nothing.
    for q in [
        "deploy kubernetes helm",
        "kubernetes helm chart",
        "where is the",
    ] {
        let (v, _) = d.json(&["search", q]);
        assert_eq!(v["count"], 0, "{q}: {v}");
    }
    // With the rule off, the model's floors alone decide.
    let off = format!("{unreachable}[search]\nrelated_words = 0\n");
    let Some((d, _)) = with_model(&off) else {
        return;
    };
    let (v, _) = d.json(&["search", "where is the deploy script?"]);
    assert_eq!(v["count"], 0, "{v}");
}

#[test]
fn without_floors_the_nearest_memories_come_back() {
    let Some((d, _)) = with_model("[search.floor]\n[search.nothing_below]\n") else {
        return;
    };
    let (v, _) = d.json(&["search", ELSEWHERE[2]]);
    assert!(v["count"].as_i64().unwrap() > 0, "{v}");
}
