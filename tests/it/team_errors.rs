//! Each cause a team connection or write can meet is told apart, with its
//! code and what fixes it (a real PostgreSQL): a privilege refused, no
//! such database, no connection slot left, a read-only server. The login
//! refused and TLS are in tests/it/team_tls.rs.

use serde_json::Value;

use crate::common::Daemon;
use crate::common::pg::Pg;

use crate::common::team_json as team;

fn error(v: &Value) -> &str {
    v["error"].as_str().unwrap_or_default()
}

#[test]
fn every_cause_has_its_message_and_code() {
    let Some(pg) = Pg::start() else { return };
    let url = |role: &str, db: &str| {
        pg.url()
            .replace("user=postgres", &format!("user={role}"))
            .replace("dbname=postgres", &format!("dbname={db}"))
    };
    // No such database.
    let (code, v) = team(&url("postgres", "nosuchdb"), &["init"]);
    assert_eq!(
        (code, v["code"].as_str()),
        (5, Some("team_unavailable")),
        "{v}"
    );
    assert!(
        error(&v).contains("no such database") && error(&v).contains("3D000"),
        "{v}"
    );
    // No connection slot left (a role limited to none).
    pg.psql("CREATE ROLE capped LOGIN CONNECTION LIMIT 0");
    let (code, v) = team(&url("capped", "postgres"), &["init"]);
    assert_eq!(
        (code, v["code"].as_str()),
        (5, Some("team_unavailable")),
        "{v}"
    );
    assert!(error(&v).contains("no connection slot left"), "{v}");
    // A privilege refused: forbidden, exit 7.
    pg.psql("CREATE ROLE plain LOGIN");
    let (code, v) = team(&url("plain", "postgres"), &["init"]);
    assert_eq!((code, v["code"].as_str()), (7, Some("forbidden")), "{v}");
    assert!(!error(&v).contains("cannot reach"), "{v}");
    // A read-only server: the init, and a shared write through a daemon.
    let (code, v) = team(&url("postgres", "postgres"), &["init"]);
    assert_eq!(code, 0, "{v}");
    let d = Daemon::with_config(&format!(
        "[team]\nurl = \"{}\"\nnamespaces = [\"team-*\"]\nmachine = \"m\"\ntimeout_ms = 3000\n",
        pg.url()
    ));
    let (v, code) = d.json(&["--namespace", "team-web", "add", "before read-only"]);
    assert_eq!(code, 0, "{v}");
    // Applied to the daemon's open connections too, at the reload.
    pg.psql("ALTER SYSTEM SET default_transaction_read_only = on");
    pg.psql("SELECT pg_reload_conf()");
    let (v, code) = d.json(&["--namespace", "team-web", "add", "while read-only"]);
    assert_eq!(
        (code, v["code"].as_str()),
        (5, Some("team_unavailable")),
        "{v}"
    );
    assert!(error(&v).contains("takes no writes"), "{v}");
}

#[test]
fn a_cleanup_never_resurrects_what_an_offline_machine_missed() {
    let Some(pg) = Pg::start() else { return };
    let (code, v) = team(&pg.url(), &["init"]);
    assert_eq!(code, 0, "{v}");
    let config = |machine: &str, extra: &str| {
        format!(
            "[team]\nurl = \"{}\"\nnamespaces = [\"team-*\"]\nmachine = \"{machine}\"\n\
             timeout_ms = 3000\n{extra}",
            pg.url()
        )
    };
    // Alice's daemon cleans up every second, keeping nothing.
    let alice = Daemon::with_config(&config(
        "alice",
        "retention = \"0s\"\ncleanup_every = \"1s\"\n",
    ));
    let mut bob = Daemon::with_config(&config("bob", ""));
    let mut ids = Vec::new();
    for text in ["the old deploy host is ares", "the build uses make"] {
        let (v, code) = alice.json(&["--namespace", "team-web", "add", text]);
        assert_eq!(code, 0, "{v}");
        ids.push(v["id"].as_i64().unwrap());
    }
    crate::common::wait_contents(
        &bob,
        "team-web",
        &["the build uses make", "the old deploy host is ares"],
    );
    let (v, code) = bob.json(&["--namespace", "notes", "add", "bob's own note"]);
    assert_eq!(code, 0, "{v}");
    // Bob goes offline; Alice forgets one, and the tombstone is cleaned up.
    bob.terminate();
    let (v, code) = alice.json(&["--namespace", "team-web", "forget", &ids[0].to_string()]);
    assert_eq!(code, 0, "{v}");
    Pg::wait_for(
        std::time::Duration::from_secs(15),
        "the tombstone cleaned up",
        || {
            pg.psql("SELECT count(*) FROM memd.memories WHERE deleted") == "0"
                && pg.psql("SELECT value FROM memd.meta WHERE key = 'cleaned_through'") != "0"
        },
    );
    // Bob comes back past the retention: he resyncs, the forgotten memory
    // does not come back (here or in PostgreSQL), his own note stays.
    bob.spawn();
    crate::common::wait_contents(&bob, "team-web", &["the build uses make"]);
    assert_eq!(crate::common::contents(&bob, "notes"), ["bob's own note"]);
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        pg.psql("SELECT string_agg(content, ',') FROM memd.memories"),
        "the build uses make"
    );
    // The admin command: JSON of what went; a role without admin on * is
    // refused.
    let (code, v) = team(&pg.url(), &["cleanup", "--older-than", "0s"]);
    assert_eq!(code, 0, "{v}");
    assert!(v["cleaned"]["cleaned_through"].as_i64().unwrap() > 0, "{v}");
    pg.psql("CREATE ROLE carol LOGIN");
    let (code, v) = team(
        &pg.url().replace("user=postgres", "user=carol"),
        &["cleanup"],
    );
    assert_eq!((code, v["code"].as_str()), (7, Some("forbidden")), "{v}");
}
