//! Search an agent can trust: with the local model, a query nothing in the
//! namespace is about returns no hit (the relevance floor) over the CLI and
//! HTTP; and only an agent's reads count as uses — not a person's CLI, not
//! the viewer, not a search that returned nothing.

use std::time::{Duration, Instant};

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
    let mut keys: Vec<String> = hit.as_object().unwrap().keys().cloned().collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [
            "category",
            "cut",
            "id",
            "namespace",
            "relevance",
            "score",
            "source",
            "text",
            "thread",
            "when"
        ],
        "{hit}"
    );
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
