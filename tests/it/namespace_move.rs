//! A repository's namespace is its origin (`github.com/acme/api`) for every
//! way of writing the origin and every worktree; a checkout whose memories,
//! named sessions and capture state were under the name memd derived
//! before (`api-<hash>`) keeps them, once, every row kept once — also when
//! the team shares that name, where PostgreSQL moves the rows and closes
//! the old name to writers.

use std::path::Path;

use crate::common::pg::Pg;
use crate::common::{Daemon, git, memd_in, sqlite3, team_json, tool, wait_contents};

/// A repository with one commit whose origin is `origin`.
fn repository(dir: &Path, origin: &str) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    std::fs::write(dir.join("README"), "api\n").unwrap();
    git(dir, &["add", "README"]);
    git(dir, &["commit", "-q", "-m", "first"]);
    git(dir, &["remote", "add", "origin", origin]);
}

fn namespace_of(d: &Daemon, dir: &Path) -> String {
    let (v, code) = memd_in(d, dir, &["setup", "claude-code", "--project", "--dry-run"]);
    assert_eq!(code, 0, "{v}");
    v["namespace"].as_str().unwrap().to_string()
}

/// FNV-1a 64 as 16 hex digits.
fn fnv(text: &str) -> String {
    let h = text.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    });
    format!("{h:016x}")
}

/// The name memd derived for `github.com/acme/api` before.
fn old_name() -> String {
    format!("api-{}", &fnv("github.com/acme/api")[..8])
}

#[test]
fn every_form_of_one_origin_and_a_worktree_is_one_readable_namespace() {
    if !tool("git", "real repositories and worktrees") {
        return;
    }
    let d = Daemon::start();
    let base = d.dir.path().join("src");
    for (dir, origin) in [
        ("https", "https://github.com/Acme/API.git"),
        ("ssh", "ssh://git@github.com:22/acme/api.git"),
        ("scp", "git@github.com:acme/api.git"),
        ("user", "https://someone@github.com/acme/api/"),
    ] {
        let repo = base.join(dir);
        repository(&repo, origin);
        assert_eq!(namespace_of(&d, &repo), "github.com/acme/api", "{origin}");
    }
    let tree = base.join("feature");
    git(
        &base.join("scp"),
        &["worktree", "add", "-q", tree.to_str().unwrap()],
    );
    assert_eq!(namespace_of(&d, &tree), "github.com/acme/api");
    // No origin: the repository's name and a hash (no `/`).
    let solo = base.join("solo");
    std::fs::create_dir_all(&solo).unwrap();
    git(&solo, &["init", "-q"]);
    let ns = namespace_of(&d, &solo);
    assert!(ns.starts_with("solo-") && !ns.contains('/'), "{ns}");
}

#[test]
fn a_checkout_keeps_its_memories_sessions_and_capture_state_once() {
    if !tool("git", "a real repository") {
        return;
    }
    let d = Daemon::start();
    let repo = d.dir.path().join("api");
    repository(&repo, "git@github.com:acme/api.git");
    let old = old_name();
    for text in ["the api deploys with make ship", "tests run with nextest"] {
        let (v, code) = d.json(&["--namespace", &old, "add", "--category", "fact", text]);
        assert_eq!(code, 0, "{v}");
    }
    // A hook's named session with its frozen block, and its capture state.
    let (v, code) = d.json(&["--namespace", &old, "--session", "claude-code:s1", "inject"]);
    assert_eq!(code, 0, "{v}");
    let block = v["block"].as_str().unwrap().to_string();
    let (v, code) = d.json(&["--namespace", &old, "add", "written after the block froze"]);
    assert_eq!(code, 0, "{v}");
    let db = d.data_dir().join("memory.db");
    sqlite3(
        &db,
        &format!(
            "INSERT INTO capture_state (host, session, namespace) VALUES ('claude-code', 's1', '{old}')"
        ),
    );

    // The first command in the checkout moves everything, once.
    let (v, code) = memd_in(&d, &repo, &["list"]);
    assert_eq!((code, v["count"].as_i64()), (0, Some(3)), "{v}");
    let (v, _) = d.json(&["--namespace", &old, "list"]);
    assert_eq!(v["count"], 0, "moved, not copied: {v}");
    assert_eq!(
        sqlite3(
            &db,
            "SELECT namespace FROM capture_state WHERE session = 's1'"
        )
        .trim(),
        "github.com/acme/api"
    );
    // The resumed session keeps its exact block.
    let (v, code) = memd_in(&d, &repo, &["--session", "claude-code:s1", "inject"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["block"].as_str().unwrap(), block);
    // …across a restart of the daemon too (kept in sessions.db).
    let mut d = d;
    d.terminate();
    d.spawn();
    let (v, _) = memd_in(&d, &repo, &["--session", "claude-code:s1", "inject"]);
    assert_eq!(v["block"].as_str().unwrap(), block);
    assert_eq!(
        sqlite3(
            &db,
            "SELECT count(*) FROM memories WHERE namespace = 'github.com/acme/api'"
        )
        .trim(),
        "3"
    );
}

#[test]
fn a_shared_old_name_moves_in_postgresql_and_closes_to_writers() {
    if !tool("git", "a real repository") {
        return;
    }
    let Some(pg) = Pg::start() else { return };
    let (code, v) = team_json(&pg.url(), &["init"]);
    assert_eq!(code, 0, "{v}");
    let config = |machine: &str| {
        format!(
            "[team]\nurl = \"{}\"\nnamespaces = [\"*\"]\nmachine = \"{machine}\"\ntimeout_ms = 3000\n",
            pg.url()
        )
    };
    let old = old_name();
    let alice = Daemon::with_config(&config("alice"));
    let bob = Daemon::with_config(&config("bob"));
    for text in ["the api deploys with make ship", "tests run with nextest"] {
        let (v, code) = alice.json(&["--namespace", &old, "add", text]);
        assert_eq!(code, 0, "{v}");
    }
    wait_contents(
        &bob,
        &old,
        &["the api deploys with make ship", "tests run with nextest"],
    );
    let rows = || {
        pg.psql(
            "SELECT string_agg(namespace || ':' || content, ',' ORDER BY content) \
             FROM memd.memories WHERE NOT deleted",
        )
    };

    // Alice upgrades and works in her checkout: PostgreSQL moves the rows.
    let repo = alice.dir.path().join("api");
    repository(&repo, "https://github.com/acme/api");
    let (v, code) = memd_in(&alice, &repo, &["list"]);
    assert_eq!((code, v["count"].as_i64()), (0, Some(2)), "{v}");
    assert_eq!(
        rows(),
        "github.com/acme/api:tests run with nextest,github.com/acme/api:the api deploys with make ship"
    );
    // Bob's machine applies them: every row once, under the new name.
    wait_contents(
        &bob,
        "github.com/acme/api",
        &["the api deploys with make ship", "tests run with nextest"],
    );
    let (v, _) = bob.json(&["--namespace", &old, "list"]);
    assert_eq!(v["count"], 0, "{v}");
    assert_eq!(
        sqlite3(
            &bob.data_dir().join("memory.db"),
            "SELECT count(*) FROM memories WHERE content LIKE 'the api deploys%'"
        )
        .trim(),
        "1"
    );
    // A writer of the old name (an older memd, psql) is refused, told the
    // new one; nothing is written.
    let (v, code) = bob.json(&["--namespace", &old, "add", "written by an older binary"]);
    assert_ne!(code, 0, "{v}");
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("renamed to github.com/acme/api"),
        "{v}"
    );
    let err = pg.psql_err(&format!(
        "INSERT INTO memd.memories (namespace, content) VALUES ('{old}', 'by psql')"
    ));
    assert!(err.contains("was renamed to github.com/acme/api"), "{err}");
    assert!(!rows().contains("older binary") && !rows().contains("by psql"));
}

#[test]
fn the_team_of_three_in_team_md_shares_a_repositorys_memory() {
    if !tool("git", "real clones") {
        return;
    }
    let Some(pg) = Pg::start() else { return };
    // docs/team.md "A team of three, from nothing", on this server.
    for role in ["alice", "bob", "carol"] {
        pg.psql(&format!("CREATE ROLE {role} LOGIN"));
    }
    let url = |role: &str| pg.url().replace("user=postgres", &format!("user={role}"));
    let team = |role: &str, args: &[&str]| {
        let (code, v) = team_json(&url(role), args);
        assert_eq!(code, 0, "{args:?}: {v}");
    };
    team("postgres", &["init"]);
    team("postgres", &["grant", "alice", "*", "admin"]);
    team("alice", &["grant", "bob", "github.com/acme/*", "write"]);
    team("alice", &["grant", "carol", "github.com/acme/*", "read"]);
    let machine = |role: &str| {
        Daemon::with_config(&format!(
            "[team]\nurl = \"{}\"\nnamespaces = [\"github.com/acme/*\"]\nmachine = \"{role}-laptop\"\n\
             timeout_ms = 3000\n",
            url(role)
        ))
    };
    let (bob, carol) = (machine("bob"), machine("carol"));
    let bob_clone = bob.dir.path().join("api");
    repository(&bob_clone, "git@github.com:acme/api.git");
    let carol_clone = carol.dir.path().join("work/api");
    repository(&carol_clone, "https://github.com/acme/api.git");

    let (v, code) = memd_in(
        &bob,
        &bob_clone,
        &["add", "the api rate limit is 100 per minute"],
    );
    assert_eq!(code, 0, "{v}");
    let (v, _) = memd_in(&bob, &bob_clone, &["get", &v["id"].to_string()]);
    assert_eq!(v["memory"]["namespace"], "github.com/acme/api");
    assert_eq!(
        pg.psql("SELECT namespace || ' ' || changed_role FROM memd.memories"),
        "github.com/acme/api bob"
    );
    wait_contents(
        &carol,
        "github.com/acme/api",
        &["the api rate limit is 100 per minute"],
    );
    let (v, code) = memd_in(&carol, &carol_clone, &["search", "rate limit"]);
    assert_eq!((code, v["count"].as_i64()), (0, Some(1)), "{v}");
}
