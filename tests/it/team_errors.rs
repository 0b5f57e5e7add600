//! Each cause a team connection or write can meet is told apart, with its
//! code and what fixes it (a real PostgreSQL): a privilege refused, no
//! such database, no connection slot left, a read-only server. The login
//! refused and TLS are in tests/it/team_tls.rs.

use serde_json::Value;

use crate::common::Daemon;
use crate::common::pg::Pg;

/// `memd team ARGS --json` against `url`: its exit code and JSON.
fn team(url: &str, args: &[&str]) -> (i32, Value) {
    let home = tempfile::tempdir().unwrap();
    let out = crate::common::memd_command(home.path())
        .arg("team")
        .args(args)
        .arg("--json")
        .env("MEMD_TEAM_URL", url)
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

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
