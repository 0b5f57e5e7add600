//! Provenance: every memory says where it came from — a person through the
//! CLI or the viewer, an agent (MCP, hooks, the CLI run by an agent, the
//! HTTP API), another tool — in one shape on `get`, `history` and search
//! hits, and a merge keeps every source and never raises trust.

use serde_json::{Value, json};

use crate::common::http::request;
use crate::common::{Daemon, sqlite3};

fn origin(v: &Value) -> (String, String) {
    let o = &v["provenance"]["sources"][0];
    (
        o["source"].as_str().unwrap_or("?").to_string(),
        o["via"].as_str().unwrap_or("-").to_string(),
    )
}

fn get(d: &Daemon, id: i64) -> Value {
    let (v, code) = d.json(&["get", &id.to_string()]);
    assert_eq!(code, 0, "{v}");
    v["memory"].clone()
}

#[test]
fn every_memory_says_where_it_came_from_and_a_merge_keeps_every_source() {
    let d = Daemon::start();
    // A person at the CLI.
    let (v, _) = d.json(&["add", "the release train leaves on thursdays"]);
    let person = v["id"].as_i64().unwrap();
    let m = get(&d, person);
    assert_eq!(origin(&m), ("user".into(), "cli".into()), "{m}");
    assert_eq!(m["source"], "user");
    assert_eq!(m["provenance"]["trust"], "high", "{m}");
    assert!(m["provenance"]["sources"][0]["session"].is_string(), "{m}");

    // The same CLI run by an agent host's shell tool is the agent's.
    let out = d
        .cmd()
        .args(["add", "the nightly build takes forty minutes", "--json"])
        .env("CLAUDECODE", "1")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let agent = v["id"].as_i64().unwrap();
    assert_eq!(
        origin(&get(&d, agent)),
        ("agent".into(), "agent-cli".into())
    );

    // The HTTP API is a program's, even one that says it is the viewer;
    // the viewer is a person's only through a browser session
    // (`viewer::memd_client_viewer_is_a_persons_only_through_a_browser_session`).
    let ns = ("Memd-Namespace", "default");
    let r = request(
        &d.socket(),
        "POST",
        "/v1/memories",
        &[ns],
        Some(&json!({"content": "the api gateway times out after 30 s"})),
    );
    assert_eq!(r.status, 201);
    assert_eq!(
        origin(&get(&d, r.json()["id"].as_i64().unwrap())),
        ("agent".into(), "http".into())
    );
    let r = request(
        &d.socket(),
        "POST",
        "/v1/memories",
        &[ns, ("Memd-Client", "viewer")],
        Some(&json!({"content": "staging is frozen during the audit"})),
    );
    assert_eq!(
        origin(&get(&d, r.json()["id"].as_i64().unwrap())),
        ("agent".into(), "http".into())
    );

    // Another tool's row: said so, and trusted least.
    sqlite3(
        &d.db(),
        "INSERT INTO memories (uid, namespace, content, dedupe_key) \
         VALUES ('ext1', 'default', 'written by a script', 'written by a script')",
    );
    let (v, _) = d.json(&["search", "script", "--mode", "lexical"]);
    let hit = &v["hits"][0];
    assert_eq!(origin(hit), ("external".into(), "-".into()), "{v}");
    assert_eq!(hit["provenance"]["trust"], "low", "{v}");

    // An agent's duplicate merged into the person's note: both sources
    // kept, trust no higher than the agent's.
    let out = d
        .cmd()
        .args(["add", "The release train leaves on Thursdays", "--json"])
        .env("CODEX_THREAD_ID", "t-1")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        (v["id"].as_i64(), v["deduped"].as_bool()),
        (Some(person), Some(true)),
        "{v}"
    );
    let m = get(&d, person);
    let sources = m["provenance"]["sources"].as_array().unwrap();
    assert_eq!(sources.len(), 2, "{m}");
    assert_eq!(sources[1]["source"], "agent", "{m}");
    assert_eq!(m["provenance"]["trust"], "medium", "{m}");
    // A person's duplicate of the agent's note does not raise it.
    d.json(&["add", "the nightly build takes forty minutes"]);
    let m = get(&d, agent);
    assert_eq!(
        m["provenance"]["sources"].as_array().unwrap().len(),
        2,
        "{m}"
    );
    assert_eq!(m["provenance"]["trust"], "medium", "{m}");

    // history shows the same shape on the chain; the human form says it.
    let (v, _) = d.json(&["history", &person.to_string()]);
    assert_eq!(
        v["chain"][0]["provenance"],
        get(&d, person)["provenance"],
        "{v}"
    );
    let out = d.cmd().args(["get", &person.to_string()]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("from         user via cli"), "{text}");
    assert!(text.contains("merged       agent via agent-cli"), "{text}");
    assert!(text.contains("trust        medium"), "{text}");
}
