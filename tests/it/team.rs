//! Team memory with a real PostgreSQL (the distribution's server, started
//! by the test) and two or three daemons with their own data dirs and
//! machine names standing for machines.

use std::time::Duration;

use serde_json::Value;

use crate::common::Daemon;
use crate::common::pg::Pg;

/// A machine: a daemon whose config shares `team-*`.
fn machine(pg: &Pg, name: &str) -> Daemon {
    Daemon::with_config(&format!(
        "[team]\nurl = \"{}\"\nnamespaces = [\"team-*\"]\nmachine = \"{name}\"\ntimeout_ms = 3000\n",
        pg.url()
    ))
}

/// `memd team init` against the server, with the URL from the environment.
fn init(pg: &Pg, d: &Daemon) -> Value {
    let out = crate::common::memd_command(d.dir.path())
        .args(["team", "init", "--json"])
        .env("MEMD_TEAM_URL", pg.url())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "team init failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn add(d: &Daemon, ns: &str, text: &str) -> i64 {
    let (v, code) = d.json(&["--namespace", ns, "add", text]);
    assert_eq!(code, 0, "add failed: {v}");
    v["id"].as_i64().unwrap()
}

fn contents(d: &Daemon, ns: &str) -> Vec<String> {
    let (v, code) = d.json(&["--namespace", ns, "list", "--limit", "1000"]);
    assert_eq!(code, 0, "list failed: {v}");
    let mut out: Vec<String> = v["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    out.sort();
    out
}

fn wait_contents(d: &Daemon, ns: &str, want: &[&str]) {
    let mut want: Vec<String> = want.iter().map(|s| (*s).to_string()).collect();
    want.sort();
    Pg::wait_for(
        Duration::from_secs(15),
        &format!("{want:?} on a machine"),
        || contents(d, ns) == want,
    );
}

#[test]
fn a_shared_namespace_reaches_every_machine_and_psql_edits_reach_them_too() {
    let Some(pg) = Pg::start() else { return };
    let bootstrap = Daemon::prepare(tempfile::tempdir().unwrap());
    let v = init(&pg, &bootstrap);
    assert_eq!((v["from"].as_i64(), v["to"].as_i64()), (Some(0), Some(1)));
    // Again: nothing to do.
    assert_eq!(init(&pg, &bootstrap)["from"].as_i64(), Some(1));
    let a = machine(&pg, "a");
    let b = machine(&pg, "b");
    add(&a, "team-web", "the staging database listens on port 5432");
    add(&a, "team-web", "deploys go out on tuesdays");
    add(&a, "local-notes", "this never leaves machine a");
    wait_contents(
        &b,
        "team-web",
        &[
            "deploys go out on tuesdays",
            "the staging database listens on port 5432",
        ],
    );
    assert!(
        contents(&b, "local-notes").is_empty(),
        "a local namespace stays local"
    );
    let (hits, _) = b.json(&["--namespace", "team-web", "search", "staging database"]);
    assert_eq!(
        hits["hits"][0]["content"],
        "the staging database listens on port 5432"
    );
    // psql writes reach both.
    pg.psql(
        "UPDATE memd.memories SET content = 'deploys go out on wednesdays' \
         WHERE content = 'deploys go out on tuesdays'",
    );
    pg.psql("DELETE FROM memd.memories WHERE content LIKE 'the staging%'");
    for d in [&a, &b] {
        wait_contents(d, "team-web", &["deploys go out on wednesdays"]);
    }
    // The delete is a tombstone; TRUNCATE is refused.
    assert_eq!(
        pg.psql("SELECT count(*) FROM memd.memories WHERE deleted"),
        "1"
    );
    assert!(
        pg.psql_err("TRUNCATE memd.memories")
            .contains("cannot be truncated")
    );
    // A new machine pulls everything, tombstones included.
    let c = machine(&pg, "c");
    assert_eq!(contents(&c, "team-web"), ["deploys go out on wednesdays"]);
    let status = c.status();
    assert_eq!(status["team"]["connected"], true, "{status}");
    assert_eq!(status["team"]["machine"], "c");
}
