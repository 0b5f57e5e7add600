//! Team rights with a real PostgreSQL: people as login roles, grants by
//! namespace glob enforced by row-level security (for memd and `psql`
//! alike), a daemon refused with `forbidden`, a revoked read dropped
//! without a backup, and the migration of a version-1 team schema.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::pg::Pg;
use crate::common::{Daemon, contents, files_holding, wait_contents};

/// The server's URL as `role` (trust on the private socket).
fn url_as(pg: &Pg, role: &str) -> String {
    pg.url().replace("user=postgres", &format!("user={role}"))
}

/// A machine whose daemon connects as `role` and shares `team-*` and `lab*`.
fn machine(pg: &Pg, role: &str) -> Daemon {
    Daemon::with_config(&format!(
        "[team]\nurl = \"{}\"\nnamespaces = [\"team-*\", \"lab*\"]\nmachine = \"{role}-laptop\"\n\
         timeout_ms = 3000\n",
        url_as(pg, role)
    ))
}

/// `memd team ARGS --json` as `role`, from a directory of its own.
fn team_as(pg: &Pg, role: &str, args: &[&str]) -> (Value, i32) {
    let home = tempfile::tempdir().unwrap();
    let out = crate::common::memd_command(home.path())
        .arg("team")
        .args(args)
        .arg("--json")
        .env("MEMD_TEAM_URL", url_as(pg, role))
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (v, out.status.code().unwrap_or(-1))
}

/// `psql` as `role`: its output, or its error.
fn psql_as(pg: &Pg, role: &str, sql: &str) -> Result<String, String> {
    let out = std::process::Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(pg_bin("psql"))
        .args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d"])
        .arg(url_as(pg, role))
        .args(["-c", sql])
        .current_dir(&pg.dir)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

fn pg_bin(program: &str) -> std::path::PathBuf {
    let mut dirs: Vec<_> = std::fs::read_dir("/usr/lib/postgresql")
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join(program).is_file())
        .collect();
    dirs.sort();
    dirs.pop().unwrap().join(program)
}

#[test]
fn people_see_and_change_exactly_what_their_grants_allow() {
    let Some(pg) = Pg::start() else { return };
    // The database's superuser creates the schema (and is warned that no
    // grant binds it), the login roles, and one admin.
    let (v, code) = team_as(&pg, "postgres", &["init"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["bypasses_row_security"], true, "{v}");
    assert!(v["warning"].as_str().unwrap().contains("BYPASSRLS"), "{v}");
    pg.psql("CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN; CREATE ROLE carol LOGIN; CREATE ROLE dave LOGIN");
    let (v, code) = team_as(&pg, "postgres", &["grant", "alice", "*", "admin"]);
    assert_eq!(code, 0, "{v}");
    // Alice administers without owning the schema.
    for (role, glob, right) in [
        ("bob", "team-*", "write"),
        ("carol", "team-*", "read"),
        ("carol", "lab_a", "read"),
    ] {
        let (v, code) = team_as(&pg, "alice", &["grant", role, glob, right]);
        assert_eq!(code, 0, "{v}");
        assert_eq!(v["grant"]["granted_by"], "alice", "{v}");
    }
    // Bad requests are told apart: an unknown role or right is usage, a
    // grant without admin is forbidden.
    let (v, code) = team_as(&pg, "alice", &["grant", "nobody", "team-*", "read"]);
    assert_eq!((code, v["code"].as_str()), (2, Some("usage")), "{v}");
    let (v, code) = team_as(&pg, "alice", &["grant", "bob", "team-*", "own"]);
    assert_eq!(code, 2, "{v}");
    let (v, code) = team_as(&pg, "bob", &["grant", "bob", "*", "admin"]);
    assert_eq!((code, v["code"].as_str()), (7, Some("forbidden")), "{v}");
    let (v, code) = team_as(&pg, "bob", &["revoke", "carol", "team-*"]);
    assert_eq!((code, v["code"].as_str()), (7, Some("forbidden")), "{v}");

    let bob = machine(&pg, "bob");
    let carol = machine(&pg, "carol");
    let dave = machine(&pg, "dave");
    let (v, code) = bob.json(&[
        "--namespace",
        "team-web",
        "add",
        "the deploy key rotates monthly",
    ]);
    assert_eq!(code, 0, "{v}");
    wait_contents(&carol, "team-web", &["the deploy key rotates monthly"]);
    // PostgreSQL names the role that wrote it.
    assert_eq!(
        pg.psql("SELECT changed_role FROM memd.memories WHERE namespace = 'team-web'"),
        "bob"
    );
    // Provenance, in one shape on both machines: bob's own says how it
    // came; carol's says whose machine and role it came from.
    let (v, _) = carol.json(&["--namespace", "team-web", "list"]);
    let o = &v["memories"][0]["provenance"]["sources"][0];
    assert_eq!(
        (
            o["source"].as_str(),
            o["via"].as_str(),
            o["machine"].as_str(),
            o["role"].as_str()
        ),
        (Some("user"), Some("team"), Some("bob-laptop"), Some("bob")),
        "{v}"
    );
    let (v, _) = bob.json(&["--namespace", "team-web", "list"]);
    let o = &v["memories"][0]["provenance"]["sources"][0];
    assert_eq!(
        (o["via"].as_str(), o["machine"].as_str(), o["role"].as_str()),
        (Some("cli"), None, Some("bob")),
        "{v}"
    );

    // A write without the right: forbidden, exit 7, nothing anywhere.
    let (v, code) = carol.json(&["--namespace", "team-web", "add", "carol's guess"]);
    assert_eq!((code, v["code"].as_str()), (7, Some("forbidden")), "{v}");
    assert!(v["error"].as_str().unwrap().contains("carol"), "{v}");
    let (v, code) = bob.json(&["--namespace", "lab-x", "add", "bob's lab note"]);
    assert_eq!((code, v["code"].as_str()), (7, Some("forbidden")), "{v}");
    let id = bob.json(&["--namespace", "team-web", "list"]).0["memories"][0]["id"].clone();
    let (v, code) = carol.json(&["--namespace", "team-web", "list"]);
    assert_eq!(code, 0, "{v}");
    let carol_id = v["memories"][0]["id"].as_i64().unwrap().to_string();
    let (v, code) = carol.json(&["--namespace", "team-web", "forget", &carol_id]);
    assert_eq!((code, v["code"].as_str()), (7, Some("forbidden")), "{v}");
    assert!(id.is_i64());
    assert_eq!(
        pg.psql(
            "SELECT string_agg(content, '|' ORDER BY content) FROM memd.memories WHERE NOT deleted"
        ),
        "the deploy key rotates monthly"
    );
    assert_eq!(
        contents(&carol, "team-web"),
        ["the deploy key rotates monthly"]
    );
    assert!(contents(&bob, "lab-x").is_empty());

    // psql as each role sees and changes what memd would.
    assert_eq!(
        psql_as(&pg, "carol", "SELECT count(*) FROM memd.memories").unwrap(),
        "1"
    );
    assert_eq!(
        psql_as(&pg, "dave", "SELECT count(*) FROM memd.memories").unwrap(),
        "0"
    );
    assert_eq!(
        psql_as(&pg, "dave", "SELECT count(*) FROM memd.revisions").unwrap(),
        "0"
    );
    let err = psql_as(
        &pg,
        "carol",
        "INSERT INTO memd.memories (namespace, content) VALUES ('team-web', 'by hand')",
    )
    .unwrap_err();
    assert!(err.contains("row-level security"), "{err}");
    assert_eq!(
        psql_as(
            &pg,
            "carol",
            "UPDATE memd.memories SET content = 'x' RETURNING uid"
        )
        .unwrap(),
        ""
    );
    let err = psql_as(&pg, "bob", "UPDATE memd.generation SET value = 0").unwrap_err();
    assert!(err.contains("permission denied"), "{err}");
    // `_` is literal: carol's `lab_a` is not `labXa`.
    psql_as(
        &pg,
        "alice",
        "INSERT INTO memd.memories (namespace, content) VALUES ('lab_a', 'underscore'), ('labXa', 'not it')",
    )
    .unwrap();
    assert_eq!(
        psql_as(
            &pg,
            "carol",
            "SELECT string_agg(namespace, ',') FROM memd.memories WHERE namespace LIKE 'lab%'"
        )
        .unwrap(),
        "lab_a"
    );
    wait_contents(&carol, "lab_a", &["underscore"]);
    assert!(contents(&carol, "labXa").is_empty());

    // Status names what each role may do with the configured globs.
    Pg::wait_for(Duration::from_secs(10), "dave's rights in status", || {
        dave.status()["team"]["unreadable"] == serde_json::json!(["team-*", "lab*"])
    });
    let team = &carol.status()["team"];
    assert_eq!(
        team["rights"],
        serde_json::json!([{"glob": "team-*", "access": "read"}, {"glob": "lab*", "access": "partly"}]),
        "{team}"
    );
    assert!(contents(&dave, "team-web").is_empty());

    // Members: an admin sees every grant, anyone else their own.
    let (v, _) = team_as(&pg, "alice", &["members"]);
    assert_eq!(v["members"].as_array().unwrap().len(), 5, "{v}");
    let (v, _) = team_as(&pg, "carol", &["members"]);
    let roles: Vec<&str> = v["members"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["carol", "carol"], "{v}");

    // A revoked read: the rows leave carol's machine, with no backup of
    // their text; granted again, they come back.
    let (v, code) = team_as(&pg, "alice", &["revoke", "carol", "team-*"]);
    assert_eq!((code, v["revoked"].as_str()), (0, Some("read")), "{v}");
    wait_contents(&carol, "team-web", &[]);
    let kept = files_holding(&carol.data_dir(), "the deploy key rotates monthly", true);
    assert!(kept.is_empty(), "text kept in {kept:?}");
    let (v, code) = carol.json(&["search", "deploy key", "--all-namespaces"]);
    assert_eq!(code, 0, "{v}");
    assert!(!v.to_string().contains("rotates monthly"), "{v}");
    let (v, code) = team_as(&pg, "alice", &["grant", "carol", "team-*", "read"]);
    assert_eq!(code, 0, "{v}");
    wait_contents(&carol, "team-web", &["the deploy key rotates monthly"]);
    // Bob's machine kept everything meanwhile, and nothing was deleted in
    // PostgreSQL by carol's drop.
    assert_eq!(
        pg.psql("SELECT count(*) FROM memd.memories WHERE deleted"),
        "0"
    );
    // A config that lies about its machine cannot forge the role.
    let liar = Daemon::with_config(&format!(
        "[team]\nurl = \"{}\"\nnamespaces = [\"team-*\"]\nmachine = \"alice-laptop\"\n",
        url_as(&pg, "bob")
    ));
    let (v, code) = liar.json(&["--namespace", "team-web", "add", "signed as alice"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        pg.psql(
            "SELECT changed_role || ' ' || changed_machine FROM memd.memories \
             WHERE content = 'signed as alice'"
        ),
        "bob alice-laptop"
    );
    // Carol's machine pulls it when it pulls: wait for it there.
    Pg::wait_for(Duration::from_secs(20), "carol's machine pulled it", || {
        let (v, _) = carol.json(&["--namespace", "team-web", "search", "signed"]);
        v["count"] != 0
    });
    let (v, _) = carol.json(&["--namespace", "team-web", "search", "signed"]);
    assert_eq!(
        v["hits"][0]["provenance"]["sources"][0]["role"], "bob",
        "{v}"
    );
    drop(liar);
    psql_as(
        &pg,
        "alice",
        "DELETE FROM memd.memories WHERE content = 'signed as alice'",
    )
    .unwrap();
    wait_contents(&carol, "team-web", &["the deploy key rotates monthly"]);
}

#[test]
fn a_version_1_team_schema_migrates_to_grants_without_losing_a_row() {
    let Some(pg) = Pg::start() else { return };
    // A team schema as version 1 made it, with rows written by psql.
    let v1 = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/team/admin/schema/v1.sql"),
    )
    .unwrap();
    pg.psql(
        "CREATE SCHEMA memd; CREATE TABLE memd.migrations (version integer PRIMARY KEY, \
         name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now()); \
         INSERT INTO memd.migrations (version, name) VALUES (1, 'v1')",
    );
    pg.psql(&v1);
    pg.psql(
        "INSERT INTO memd.memories (namespace, content) VALUES ('team-web', 'first'), \
         ('team-web', 'second'); UPDATE memd.memories SET content = 'second, edited' \
         WHERE content = 'second'",
    );
    let before = pg.psql(
        "SELECT string_agg(uid || ':' || rev || ':' || changed_seq, ',' ORDER BY uid) FROM memd.memories",
    );
    let revisions = pg.psql("SELECT count(*) FROM memd.revisions");
    let (v, code) = team_as(&pg, "postgres", &["init"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (v["from"].as_i64(), v["to"].as_i64()),
        (Some(1), Some(6)),
        "{v}"
    );
    assert_eq!(
        pg.psql(
            "SELECT string_agg(uid || ':' || rev || ':' || changed_seq, ',' ORDER BY uid) FROM memd.memories"
        ),
        before
    );
    assert_eq!(pg.psql("SELECT count(*) FROM memd.revisions"), revisions);
    // Owned by a role nobody logs in as, security forced.
    assert_eq!(
        pg.psql("SELECT nspowner::regrole FROM pg_namespace WHERE nspname = 'memd'"),
        "memd_owner_postgres"
    );
    assert_eq!(
        pg.psql("SELECT rolcanlogin FROM pg_roles WHERE rolname = 'memd_owner_postgres'"),
        "f"
    );
    assert_eq!(
        pg.psql(
            "SELECT string_agg(relname, ',' ORDER BY relname) FROM pg_class \
             WHERE relnamespace = 'memd'::regnamespace AND relforcerowsecurity"
        ),
        "memories,ops,proposals,purges,revisions"
    );
    // The role that migrated administers; a machine reads every row.
    assert_eq!(
        pg.psql("SELECT role || ' ' || glob || ' ' || access FROM memd.grants"),
        "postgres * admin"
    );
    let d = machine(&pg, "postgres");
    wait_contents(&d, "team-web", &["first", "second, edited"]);
    let (v, code) = d.json(&["--namespace", "team-web", "add", "after the migration"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        pg.psql("SELECT changed_role FROM memd.memories WHERE content = 'after the migration'"),
        "postgres"
    );
}

#[test]
fn a_purge_erases_a_shared_memory_everywhere_and_needs_admin() {
    const SECRET: &str = "AKIAQX7TEAMPURGE99";
    let Some(pg) = Pg::start() else { return };
    let (v, code) = team_as(&pg, "postgres", &["init"]);
    assert_eq!(code, 0, "{v}");
    pg.psql("CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN");
    for (role, glob, right) in [("alice", "*", "admin"), ("bob", "team-*", "write")] {
        let (v, code) = team_as(&pg, "postgres", &["grant", role, glob, right]);
        assert_eq!(code, 0, "{v}");
    }
    let a = machine(&pg, "alice");
    let b = machine(&pg, "bob");
    let (v, code) = a.json(&[
        "--namespace",
        "team-web",
        "add",
        &format!("the upload key is {SECRET}"),
    ]);
    assert_eq!(code, 0, "{v}");
    let id = v["id"].as_i64().unwrap().to_string();
    // An earlier version in PostgreSQL's revisions holds it too.
    let (v, code) = a.json(&[
        "--namespace",
        "team-web",
        "update",
        &id,
        "--content",
        &format!("the upload key is {SECRET}, rotate it monthly"),
    ]);
    assert_eq!(code, 0, "{v}");
    a.json(&[
        "--namespace",
        "team-web",
        "add",
        "deploys go out on tuesdays",
    ]);
    a.json(&[
        "--namespace",
        "local-notes",
        "add",
        &format!("my copy: {SECRET}"),
    ]);
    wait_contents(
        &b,
        "team-web",
        &[
            "deploys go out on tuesdays",
            &format!("the upload key is {SECRET}, rotate it monthly"),
        ],
    );
    let block = b
        .cli(&["--namespace", "team-web", "--session", "s1", "inject"])
        .stdout;
    assert!(block.contains(SECRET), "{block}");

    // A writer without admin: forbidden, nothing erased anywhere.
    let (v, code) = b.json(&[
        "--namespace",
        "team-web",
        "purge",
        "--matching",
        SECRET,
        "--yes",
    ]);
    assert_eq!((code, v["code"].as_str()), (7, Some("forbidden")), "{v}");
    assert_eq!(
        pg.psql(&format!(
            "SELECT count(*) FROM memd.revisions WHERE content LIKE '%{SECRET}%'"
        )),
        "1"
    );
    assert!(!files_holding(&b.data_dir(), SECRET, false).is_empty());

    // PostgreSQL down: the shared memory is refused, the local one goes.
    pg.stop("fast");
    let (v, code) = a.json(&["purge", "--matching", SECRET, "--all-namespaces", "--yes"]);
    assert_eq!(
        (code, v["code"].as_str()),
        (5, Some("team_unavailable")),
        "{v}"
    );
    let (v, code) = a.json(&["--namespace", "local-notes", "list"]);
    assert_eq!(code, 0, "{v}");
    let local = v["memories"][0]["id"].as_i64().unwrap().to_string();
    let (v, code) = a.json(&["--namespace", "local-notes", "purge", &local, "--yes"]);
    assert_eq!((code, v["purged"].as_bool()), (0, Some(true)), "{v}");
    pg.start_server();

    // The admin purges: gone from PostgreSQL (a dump holds no byte of it)
    // and from every machine's files; b's block is rebuilt.
    Pg::wait_for(
        Duration::from_secs(20),
        "alice's machine reconnected",
        || {
            let (v, code) = a.json(&["purge", "--matching", SECRET, "--all-namespaces", "--yes"]);
            code == 0 && v["purged"] == true
        },
    );
    let dump = pg.dir.join("after-purge.sql");
    pg.dump(&dump);
    let dumped = std::fs::read(&dump).unwrap();
    assert!(
        !dumped.windows(SECRET.len()).any(|w| w == SECRET.as_bytes()),
        "the dump holds the secret"
    );
    assert_eq!(pg.psql("SELECT count(*) FROM memd.purges"), "1");
    let kept = files_holding(&a.data_dir(), SECRET, false);
    assert!(kept.is_empty(), "alice's machine keeps it in {kept:?}");
    Pg::wait_for(Duration::from_secs(20), "bob's machine erased it", || {
        files_holding(&b.data_dir(), SECRET, false).is_empty()
    });
    wait_contents(&b, "team-web", &["deploys go out on tuesdays"]);
    let block = b
        .cli(&["--namespace", "team-web", "--session", "s1", "inject"])
        .stdout;
    assert!(!block.contains(SECRET), "{block}");
    assert!(block.contains("tuesdays"), "{block}");
    // The history check holds (no resync, no drift backup), and the team
    // goes on.
    assert!(
        !b.log().contains("no longer holds the history"),
        "{}",
        b.log()
    );
    let (v, code) = b.json(&["--namespace", "team-web", "add", "after the purge"]);
    assert_eq!(code, 0, "{v}");
    wait_contents(
        &a,
        "team-web",
        &["after the purge", "deploys go out on tuesdays"],
    );
}

#[test]
fn in_a_reviewed_namespace_writers_propose_and_reviewers_decide() {
    let Some(pg) = Pg::start() else { return };
    let (v, code) = team_as(&pg, "postgres", &["init"]);
    assert_eq!(code, 0, "{v}");
    pg.psql("CREATE ROLE alice LOGIN; CREATE ROLE bob LOGIN; CREATE ROLE carol LOGIN; CREATE ROLE dave LOGIN");
    let (v, code) = team_as(&pg, "postgres", &["grant", "alice", "*", "admin"]);
    assert_eq!(code, 0, "{v}");
    for (role, right) in [("bob", "write"), ("carol", "review"), ("dave", "read")] {
        let (v, code) = team_as(&pg, "alice", &["grant", role, "team-*", right]);
        assert_eq!(code, 0, "{v}");
    }
    // Only an admin decides where review is required.
    let (v, code) = team_as(&pg, "bob", &["review-required", "team-web", "on"]);
    assert_eq!((code, v["code"].as_str()), (7, Some("forbidden")), "{v}");
    let (v, code) = team_as(&pg, "alice", &["review-required", "team-web", "on"]);
    assert_eq!((code, v["changed"].as_bool()), (0, Some(true)), "{v}");

    let bob = machine(&pg, "bob");
    let carol = machine(&pg, "carol");
    let dave = machine(&pg, "dave");
    // A reviewer's write is not a proposal.
    let (v, code) = carol.json(&["--namespace", "team-web", "add", "staging runs on pg-12"]);
    assert_eq!((code, v["status"].as_str()), (0, Some("stored")), "{v}");
    wait_contents(&dave, "team-web", &["staging runs on pg-12"]);
    wait_contents(&bob, "team-web", &["staging runs on pg-12"]);

    // A writer's add is a proposal: acknowledged, and no memory anywhere.
    let (v, code) = bob.json(&["--namespace", "team-web", "add", "the cache is redis 7"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["status"], "proposed", "{v}");
    assert!(v["id"].is_null(), "{v}");
    let added = v["proposal"].as_i64().unwrap().to_string();
    assert_eq!(
        pg.psql("SELECT count(*) FROM memd.memories"),
        "1",
        "only the approved memory"
    );
    assert_eq!(contents(&bob, "team-web"), ["staging runs on pg-12"]);
    // A writer's change and forget of team knowledge are proposals too.
    let id = bob.json(&["--namespace", "team-web", "list"]).0["memories"][0]["id"]
        .as_i64()
        .unwrap()
        .to_string();
    let (v, code) = bob.json(&[
        "--namespace",
        "team-web",
        "update",
        &id,
        "--content",
        "staging runs on pg-15",
    ]);
    assert_eq!((code, v["status"].as_str()), (0, Some("proposed")), "{v}");
    let changed = v["proposal"].as_i64().unwrap().to_string();
    let (v, code) = bob.json(&["--namespace", "team-web", "forget", &id]);
    assert_eq!((code, v["status"].as_str()), (0, Some("proposed")), "{v}");
    assert_eq!(v["forgotten"], false, "{v}");
    let forget = v["proposal"].as_i64().unwrap().to_string();
    assert_eq!(contents(&bob, "team-web"), ["staging runs on pg-12"]);
    // Over HTTP a proposal is 202 Accepted.
    let r = crate::common::http::request(
        &bob.socket(),
        "POST",
        "/v1/memories",
        &[("Memd-Namespace", "team-web")],
        Some(&serde_json::json!({"content": "the logs go to loki"})),
    );
    assert_eq!(r.status, 202, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["status"], "proposed");
    let logs = r.json()["proposal"].as_i64().unwrap().to_string();
    // A confirmation changes counts only: not a change of team knowledge.
    let (v, code) = bob.json(&["--namespace", "team-web", "confirm", &id]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(pg.psql("SELECT confirmed_count FROM memd.memories"), "1");

    // PostgreSQL enforces it for psql too; proposals are seen by their
    // author and by reviewers only.
    let err = psql_as(
        &pg,
        "bob",
        "INSERT INTO memd.memories (namespace, content) VALUES ('team-web', 'by hand')",
    )
    .unwrap_err();
    assert!(err.contains("requires review"), "{err}");
    let err = psql_as(
        &pg,
        "bob",
        "UPDATE memd.memories SET content = 'by hand' WHERE namespace = 'team-web'",
    )
    .unwrap_err();
    assert!(err.contains("requires review"), "{err}");
    let err = psql_as(&pg, "bob", "DELETE FROM memd.memories").unwrap_err();
    assert!(err.contains("requires review"), "{err}");
    let err = psql_as(&pg, "bob", "UPDATE memd.proposals SET state = 'approved'").unwrap_err();
    assert!(err.contains("permission denied"), "{err}");
    assert_eq!(
        psql_as(&pg, "bob", "SELECT count(*) FROM memd.proposals").unwrap(),
        "4"
    );
    assert_eq!(
        psql_as(&pg, "dave", "SELECT count(*) FROM memd.proposals").unwrap(),
        "0"
    );
    let (v, _) = team_as(&pg, "dave", &["review"]);
    assert_eq!(v["review"]["proposals"], serde_json::json!([]), "{v}");
    assert_eq!(
        v["review"]["required"],
        serde_json::json!(["team-web"]),
        "{v}"
    );
    let (v, code) = team_as(&pg, "carol", &["review"]);
    assert_eq!(code, 0, "{v}");
    let queue = v["review"]["proposals"].as_array().unwrap();
    let actions: Vec<&str> = queue
        .iter()
        .map(|p| p["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["add", "update", "forget", "add"], "{v}");
    assert_eq!(queue[0]["proposed_by"], "bob", "{v}");
    assert_eq!(queue[0]["machine"], "bob-laptop", "{v}");
    assert_eq!(queue[1]["current"], "staging runs on pg-12", "{v}");

    // The viewer's team page shows the queue: carol's all three, dave's
    // none.
    let page = crate::common::http::get(&carol.socket(), "/team", &[]);
    let html = String::from_utf8_lossy(&page.body).into_owned();
    assert!(
        html.contains("Review is required in <code>team-web</code>"),
        "{html}"
    );
    assert!(html.contains("the cache is redis 7"), "{html}");
    assert!(html.contains("<del>staging runs on pg-12</del>"), "{html}");
    let page = crate::common::http::get(&dave.socket(), "/team", &[]);
    let html = String::from_utf8_lossy(&page.body).into_owned();
    assert!(!html.contains("redis"), "{html}");
    if let Some((chromium, driver)) = crate::common::webdriver::tools() {
        let (address, code) = super::viewer::open(&carol, false);
        let browser = crate::common::webdriver::Browser::start(&chromium, &driver, &[]);
        let base = super::viewer_browser::log_in(&browser, &address, &code);
        browser.go(&format!("{base}/team"));
        let rows = browser.find_all("table.table tbody tr");
        assert_eq!(rows.len(), 4, "the open proposals");
        browser.screenshot(
            &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("target/viewer-screenshots/team-review.png"),
        );
    }

    // Only a reviewer decides.
    let (v, code) = team_as(&pg, "bob", &["review", "approve", &added]);
    assert_eq!((code, v["code"].as_str()), (7, Some("forbidden")), "{v}");
    let (v, code) = team_as(&pg, "carol", &["review", "approve", "999999"]);
    assert_eq!((code, v["code"].as_str()), (1, Some("not_found")), "{v}");
    let (v, code) = team_as(&pg, "carol", &["review", "approve", &added]);
    assert_eq!(
        (code, v["decision"]["state"].as_str()),
        (0, Some("approved")),
        "{v}"
    );
    let (v, code) = team_as(&pg, "carol", &["review", "approve", &added]);
    assert_eq!(code, 2, "decided already: {v}");
    let (v, code) = team_as(
        &pg,
        "carol",
        &[
            "review",
            "reject",
            &changed,
            "--reason",
            "pg-12 still serves staging",
        ],
    );
    assert_eq!(
        (code, v["decision"]["state"].as_str()),
        (0, Some("rejected")),
        "{v}"
    );
    wait_contents(
        &dave,
        "team-web",
        &["staging runs on pg-12", "the cache is redis 7"],
    );
    // Writes that cannot be proposed are refused there.
    wait_contents(
        &bob,
        "team-web",
        &["staging runs on pg-12", "the cache is redis 7"],
    );
    let redis = bob.json(&["--namespace", "team-web", "search", "redis"]).0["hits"][0]["id"]
        .as_i64()
        .unwrap()
        .to_string();
    let (v, code) = bob.json(&["--namespace", "team-web", "supersede", &id, &redis]);
    assert_eq!((code, v["code"].as_str()), (7, Some("forbidden")), "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("requires review"),
        "{v}"
    );
    // The approved add is the reviewer's change, authored as bob's machine.
    assert_eq!(
        pg.psql(
            "SELECT changed_role || ' ' || changed_machine FROM memd.memories \
             WHERE content = 'the cache is redis 7'"
        ),
        "carol bob-laptop"
    );
    // Bob sees what became of his proposals.
    let (v, _) = team_as(&pg, "bob", &["review", "--all"]);
    let rejected = v["review"]["proposals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["state"] == "rejected")
        .cloned()
        .unwrap();
    assert_eq!(rejected["reason"], "pg-12 still serves staging", "{v}");
    assert_eq!(rejected["decided_by"], "carol", "{v}");
    let (v, code) = team_as(&pg, "carol", &["review", "reject", &logs]);
    assert_eq!(code, 0, "{v}");
    // The forget, approved, leaves every machine.
    let (v, code) = team_as(&pg, "carol", &["review", "approve", &forget]);
    assert_eq!(code, 0, "{v}");
    wait_contents(&dave, "team-web", &["the cache is redis 7"]);
    wait_contents(&bob, "team-web", &["the cache is redis 7"]);
    let (v, _) = team_as(&pg, "carol", &["review"]);
    assert_eq!(v["review"]["proposals"], serde_json::json!([]), "{v}");

    // Review off: the writer writes.
    let (v, code) = team_as(&pg, "alice", &["review-required", "team-web", "off"]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = bob.json(&["--namespace", "team-web", "add", "the queue is nats"]);
    assert_eq!((code, v["status"].as_str()), (0, Some("stored")), "{v}");
    assert!(v["id"].is_i64(), "{v}");
}

/// The URL of database `db` as `role`.
fn url_db(pg: &Pg, role: &str, db: &str) -> String {
    url_as(pg, role).replace("dbname=postgres", &format!("dbname={db}"))
}

/// `memd team init --json` as `role` on database `db`.
fn init_on(pg: &Pg, role: &str, db: &str) -> (Value, i32) {
    let (code, v) = crate::common::team_json(&url_db(pg, role, db), &["init"]);
    (v, code)
}

/// `psql` as `role` on database `db`: its output (it must succeed).
fn psql_db(pg: &Pg, role: &str, db: &str, sql: &str) -> String {
    psql_try(pg, role, db, sql).unwrap_or_else(|e| panic!("{e}"))
}

/// `psql` as `role` on database `db`: its output, or its error.
fn psql_try(pg: &Pg, role: &str, db: &str, sql: &str) -> Result<String, String> {
    let out = std::process::Command::new("runuser")
        .args(["-u", "postgres", "--"])
        .arg(pg_bin("psql"))
        .args(["-X", "-q", "-t", "-A", "-v", "ON_ERROR_STOP=1", "-d"])
        .arg(url_db(pg, role, db))
        .args(["-c", sql])
        .current_dir(&pg.dir)
        .output()
        .unwrap();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).to_string())
    }
}

/// The login roles that are members of `owner`.
fn owner_members(pg: &Pg, owner: &str) -> String {
    pg.psql(&format!(
        "SELECT coalesce(string_agg(r.rolname, ',' ORDER BY r.rolname), '') \
         FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member \
         WHERE m.roleid = '{owner}'::regrole"
    ))
}

#[test]
fn a_database_owner_who_is_not_superuser_sets_up_team_memory() {
    let Some(pg) = Pg::start() else { return };
    // A managed server: the database's owner is an ordinary role that may
    // create roles, nobody memd runs as is superuser.
    pg.psql("CREATE ROLE lead LOGIN CREATEROLE; CREATE ROLE bob LOGIN");
    pg.psql("CREATE DATABASE memd OWNER lead");
    let (v, code) = init_on(&pg, "lead", "memd");
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (v["from"].as_i64(), v["to"].as_i64()),
        (Some(0), Some(6)),
        "{v}"
    );
    assert_eq!(v["bypasses_row_security"], false, "{v}");
    // The schema belongs to the owner role; the lead held it only while
    // migrating.
    assert_eq!(owner_members(&pg, "memd_owner_memd"), "");
    let (v, code) = init_on(&pg, "lead", "memd");
    assert_eq!((code, v["from"].as_i64()), (0, Some(6)), "{v}");
    // The lead administers: grants bob, and bob's machine shares.
    let home = tempfile::tempdir().unwrap();
    let out = crate::common::memd_command(home.path())
        .args(["team", "grant", "bob", "team-*", "write", "--json"])
        .env("MEMD_TEAM_URL", url_db(&pg, "lead", "memd"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bob = Daemon::with_config(&format!(
        "[team]\nurl = \"{}\"\nnamespaces = [\"team-*\"]\nmachine = \"bob-laptop\"\n\
         timeout_ms = 3000\n",
        url_db(&pg, "bob", "memd")
    ));
    let (v, code) = bob.json(&[
        "--namespace",
        "team-web",
        "add",
        "shared without a superuser",
    ]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        psql_db(
            &pg,
            "postgres",
            "memd",
            "SELECT content || ' ' || changed_role FROM memd.memories"
        ),
        "shared without a superuser bob"
    );
}

#[test]
fn two_teams_on_one_server_have_two_owner_roles() {
    let Some(pg) = Pg::start() else { return };
    // Each lead was given its own database's owner role by an
    // administrator (no CREATEROLE): neither may act as the other's.
    for sql in [
        "CREATE ROLE ann LOGIN",
        "CREATE ROLE ben LOGIN",
        "CREATE DATABASE alpha OWNER ann",
        "CREATE DATABASE beta OWNER ben",
        "CREATE ROLE memd_owner_alpha NOLOGIN",
        "GRANT memd_owner_alpha TO ann",
        "CREATE ROLE memd_owner_beta NOLOGIN",
        "GRANT memd_owner_beta TO ben",
    ] {
        pg.psql(sql);
    }
    for (lead, db) in [("ann", "alpha"), ("ben", "beta")] {
        let (v, code) = init_on(&pg, lead, db);
        assert_eq!(code, 0, "{lead} on {db}: {v}");
    }
    let owner = |db: &str| {
        psql_db(
            &pg,
            "postgres",
            db,
            "SELECT nspowner::regrole FROM pg_namespace WHERE nspname = 'memd'",
        )
    };
    assert_eq!(owner("alpha"), "memd_owner_alpha");
    assert_eq!(owner("beta"), "memd_owner_beta");
    // Ann reaches into beta's schema as nothing more than any login role:
    // row-level security hides every row, the owner's bookkeeping is shut.
    let ann_in_beta = |sql: &str| psql_try(&pg, "ann", "beta", sql).unwrap_err();
    let err = ann_in_beta("SET ROLE memd_owner_beta");
    assert!(err.contains("permission denied"), "{err}");
    let err = ann_in_beta("ALTER TABLE memd.memories DISABLE ROW LEVEL SECURITY");
    assert!(err.contains("must be owner"), "{err}");
    // Her own database's owner role is hers to act as.
    assert_eq!(
        psql_db(
            &pg,
            "ann",
            "alpha",
            "SET ROLE memd_owner_alpha; SELECT current_user"
        ),
        "memd_owner_alpha"
    );
}

#[test]
fn a_role_that_cannot_set_up_is_told_what_it_lacks() {
    let Some(pg) = Pg::start() else { return };
    // Owns its database, may not create roles: told the SQL an
    // administrator runs, as `forbidden` (exit 7), nothing written.
    pg.psql("CREATE ROLE plain LOGIN");
    pg.psql("CREATE DATABASE plaindb OWNER plain");
    let (v, code) = init_on(&pg, "plain", "plaindb");
    assert_eq!(code, 7, "{v}");
    assert_eq!(v["code"], "forbidden", "{v}");
    let msg = v["error"].as_str().unwrap();
    assert!(
        msg.contains(
            "CREATE ROLE memd_owner_plaindb NOLOGIN; GRANT memd_owner_plaindb TO \"plain\";"
        ) && msg.contains("ALTER ROLE \"plain\" CREATEROLE;")
            && !msg.contains("cannot reach"),
        "{msg}"
    );
    let schema = |db: &str| {
        psql_db(
            &pg,
            "postgres",
            db,
            "SELECT count(*) FROM pg_namespace WHERE nspname = 'memd'",
        )
    };
    assert_eq!(schema("plaindb"), "0");
    // The administrator does as told: the init goes through, and the
    // membership it was given stays.
    pg.psql("CREATE ROLE memd_owner_plaindb NOLOGIN; GRANT memd_owner_plaindb TO plain");
    let (v, code) = init_on(&pg, "plain", "plaindb");
    assert_eq!(code, 0, "{v}");
    assert_eq!(owner_members(&pg, "memd_owner_plaindb"), "plain");
    // A role that does not own the database is told so.
    pg.psql("CREATE ROLE other LOGIN CREATEROLE");
    pg.psql("CREATE DATABASE otherdb");
    let (v, code) = init_on(&pg, "other", "otherdb");
    assert_eq!(code, 7, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("ALTER DATABASE \"otherdb\" OWNER TO \"other\";"),
        "{v}"
    );
    assert_eq!(schema("otherdb"), "0");
}

#[test]
fn a_version_1_schema_migrates_as_its_owner_and_names_a_foreign_one() {
    let Some(pg) = Pg::start() else { return };
    let v1 = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/team/admin/schema/v1.sql"),
    )
    .unwrap();
    let setup = format!(
        "CREATE SCHEMA memd; CREATE TABLE memd.migrations (version integer PRIMARY KEY, \
         name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now()); \
         INSERT INTO memd.migrations (version, name) VALUES (1, 'v1'); {v1}"
    );
    for sql in [
        "CREATE ROLE lead LOGIN CREATEROLE",
        "CREATE DATABASE mine OWNER lead",
        "CREATE DATABASE theirs OWNER lead",
    ] {
        pg.psql(sql);
    }
    // Version 1 made by the lead itself: migrated by it.
    let run = |role: &str, db: &str, sql: &str| psql_db(&pg, role, db, sql);
    run("lead", "mine", &setup);
    run(
        "lead",
        "mine",
        "INSERT INTO memd.memories (namespace, content) VALUES ('team-web', 'kept')",
    );
    let (v, code) = init_on(&pg, "lead", "mine");
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (v["from"].as_i64(), v["to"].as_i64()),
        (Some(1), Some(6)),
        "{v}"
    );
    assert_eq!(
        run("postgres", "mine", "SELECT content FROM memd.memories"),
        "kept"
    );
    assert_eq!(
        run(
            "postgres",
            "mine",
            "SELECT nspowner::regrole FROM pg_namespace WHERE nspname = 'memd'"
        ),
        "memd_owner_mine"
    );
    // Version 1 made by a superuser: the lead is told who migrates it.
    run("postgres", "theirs", &setup);
    let (v, code) = init_on(&pg, "lead", "theirs");
    assert_eq!(code, 7, "{v}");
    let msg = v["error"].as_str().unwrap();
    assert!(
        msg.contains("owned by postgres") && msg.contains("as postgres"),
        "{msg}"
    );
    assert_eq!(
        run(
            "postgres",
            "theirs",
            "SELECT max(version) FROM memd.migrations"
        ),
        "1"
    );
    // And the superuser does.
    let (v, code) = init_on(&pg, "postgres", "theirs");
    assert_eq!((code, v["to"].as_i64()), (0, Some(6)), "{v}");
}
