//! The pull reading from a streaming replica (`[team] replica_url`): a
//! real standby made by `pg_basebackup` from the primary, replaying its
//! changes. The pull reads its pages there while the replica is close
//! enough behind; past `replica_max_lag` commits, or once it is stopped,
//! the pull reads the primary and nothing is missed.

use std::time::Duration;

use serde_json::Value;

use crate::common::pg::Pg;
use crate::common::{Daemon, wait_contents};

const NS: &str = "team-api";

fn team_status(d: &Daemon) -> Value {
    let (v, code) = d.json(&["team", "status"]);
    assert_eq!(code, 0, "{v}");
    v["team"].clone()
}

fn add(d: &Daemon, text: &str) {
    let (v, code) = d.json(&["--namespace", NS, "add", text]);
    assert_eq!(code, 0, "add failed: {v}");
}

/// Waits until the machine's last pull read from `from`.
fn wait_reading(d: &Daemon, from: &str) {
    Pg::wait_for(
        Duration::from_secs(15),
        &format!("a pull from the {from}"),
        || team_status(d)["read_from"] == from,
    );
}

#[test]
fn the_pull_reads_a_replica_and_the_primary_when_it_lags_or_stops() {
    let Some(pg) = Pg::start() else { return };
    let boot = Daemon::prepare(tempfile::tempdir().unwrap());
    let out = crate::common::memd_command(boot.dir.path())
        .args(["team", "init"])
        .env("MEMD_TEAM_URL", pg.url())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let replica = pg.replica();
    let writer = Daemon::with_config(&format!(
        "[team]\nurl = \"{}\"\nnamespaces = [\"team-*\"]\nmachine = \"w\"\n",
        pg.url()
    ));
    let reader = Daemon::with_config(&format!(
        "[team]\nurl = \"{}\"\nreplica_url = \"{}\"\nreplica_max_lag = 3\n\
         namespaces = [\"team-*\"]\nmachine = \"r\"\n",
        pg.url(),
        replica.url()
    ));
    // Close enough behind: the reader's pages come from the replica.
    add(&writer, "deploys go out on tuesdays");
    wait_contents(&reader, NS, &["deploys go out on tuesdays"]);
    wait_reading(&reader, "replica");
    let status = team_status(&reader);
    assert_eq!(
        status["replica"]["url"],
        replica_display(&replica),
        "{status}"
    );
    assert!(status["replica"]["lag"].as_i64().unwrap() <= 3, "{status}");

    // The replica stops replaying: within the bound the reader waits for
    // it; past it, the primary serves the pull.
    replica.pause_replay(true);
    let more: Vec<String> = (0..5).map(|i| format!("release note {i}")).collect();
    for m in &more {
        add(&writer, m);
    }
    let mut want: Vec<&str> = more.iter().map(String::as_str).collect();
    want.push("deploys go out on tuesdays");
    wait_contents(&reader, NS, &want);
    let status = team_status(&reader);
    assert_eq!(status["read_from"], "primary", "{status}");
    assert!(status["replica"]["lag"].as_i64().unwrap() > 3, "{status}");
    replica.pause_replay(false);
    wait_reading(&reader, "replica");

    // The replica goes away mid-way: the pull goes on from the primary.
    replica.stop("immediate");
    add(&writer, "the replica is down");
    want.push("the replica is down");
    wait_contents(&reader, NS, &want);
    wait_reading(&reader, "primary");
    // And comes back: the pull returns to it.
    replica.start_server();
    add(&writer, "the replica is back");
    want.push("the replica is back");
    wait_contents(&reader, NS, &want);
    wait_reading(&reader, "replica");
}

/// How memd names the replica's address in `team status`.
fn replica_display(replica: &Pg) -> String {
    let url = replica.url();
    let field = |k: &str| {
        url.split_whitespace()
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .unwrap()
            .to_string()
    };
    format!(
        "postgresql://{}@{}:{}/{}",
        field("user"),
        field("host"),
        field("port"),
        field("dbname")
    )
}
