//! Team memory with a real PostgreSQL (the distribution's server, started
//! by the test) and two or three daemons with their own data dirs and
//! machine names standing for machines.

use std::time::Duration;

use serde_json::Value;

use crate::common::pg::Pg;
use crate::common::{Daemon, contents, wait_contents};

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

#[test]
fn a_shared_namespace_reaches_every_machine_and_psql_edits_reach_them_too() {
    let Some(pg) = Pg::start() else { return };
    let bootstrap = Daemon::prepare(tempfile::tempdir().unwrap());
    let v = init(&pg, &bootstrap);
    assert_eq!((v["from"].as_i64(), v["to"].as_i64()), (Some(0), Some(6)));
    // Again: nothing to do.
    assert_eq!(init(&pg, &bootstrap)["from"].as_i64(), Some(6));
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

/// The `[team]` section of a machine sharing `patterns`.
fn team_toml(pg: &Pg, name: &str, patterns: &[&str]) -> String {
    let list: Vec<String> = patterns.iter().map(|p| format!("\"{p}\"")).collect();
    format!(
        "[team]\nurl = \"{}\"\nnamespaces = [{}]\nmachine = \"{name}\"\ntimeout_ms = 2000\n",
        pg.url(),
        list.join(", ")
    )
}

/// A machine with its own namespace patterns.
fn machine_sharing(pg: &Pg, name: &str, patterns: &[&str]) -> Daemon {
    Daemon::with_config(&team_toml(pg, name, patterns))
}

/// Starts a stopped daemon again, now a machine of the team.
fn join_team(d: &mut Daemon, pg: &Pg, name: &str, patterns: &[&str]) {
    let config = d.dir.path().join("config.toml");
    std::fs::write(&config, team_toml(pg, name, patterns)).unwrap();
    d.extra = vec!["--config".into(), config.display().to_string()];
    d.spawn();
}

fn started(pg: &Pg) -> Daemon {
    let bootstrap = Daemon::prepare(tempfile::tempdir().unwrap());
    init(pg, &bootstrap);
    bootstrap
}

fn rev_of(d: &Daemon, ns: &str, id: i64) -> i64 {
    let (v, code) = d.json(&["--namespace", ns, "get", &id.to_string()]);
    assert_eq!(code, 0, "{v}");
    v["memory"]["rev"].as_i64().unwrap()
}

fn id_of(d: &Daemon, ns: &str, text: &str) -> Option<i64> {
    let (v, _) = d.json(&["--namespace", ns, "list", "--limit", "1000"]);
    v["memories"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["content"] == text)
        .and_then(|m| m["id"].as_i64())
}

#[test]
fn a_row_another_machine_changed_is_not_overwritten_blind() {
    let Some(pg) = Pg::start() else { return };
    let _b0 = started(&pg);
    let a = machine(&pg, "a");
    let b = machine(&pg, "b");
    let id_a = add(&a, "team-web", "the build uses make");
    Pg::wait_for(Duration::from_secs(10), "the row on b", || {
        id_of(&b, "team-web", "the build uses make").is_some()
    });
    let id_b = id_of(&b, "team-web", "the build uses make").unwrap();
    // b's named session reads the row.
    let (v, code) = b.json(&[
        "--namespace",
        "team-web",
        "--session",
        "rev",
        "get",
        &id_b.to_string(),
    ]);
    assert_eq!(code, 0, "{v}");
    // a changes it.
    let (v, code) = a.json(&[
        "--namespace",
        "team-web",
        "update",
        &id_a.to_string(),
        "--content",
        "the build uses ninja",
    ]);
    assert_eq!(code, 0, "{v}");
    // b's session, the same update each time.
    let id_b_text = id_b.to_string();
    let b_update = || {
        b.json(&[
            "--namespace",
            "team-web",
            "--session",
            "rev",
            "update",
            &id_b_text,
            "--content",
            "the build uses bazel",
        ])
    };
    // b's session writes over the version it read: refused, whether b has
    // pulled a's change yet or not, naming a's machine.
    let (v, code) = b_update();
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["code"], "drift");
    assert_eq!(v["rule"], "row", "{v}");
    assert_eq!(v["changed_by"]["machine"], "a", "{v}");
    assert_eq!(v["current"]["content"], "the build uses ninja");
    // Refused again without a read; after one, it passes and reaches a.
    let (_, code) = b_update();
    assert_eq!(code, 3);
    b.json(&[
        "--namespace",
        "team-web",
        "--session",
        "rev",
        "get",
        &id_b.to_string(),
    ]);
    let (v, code) = b_update();
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["memory"]["rev"], 3);
    wait_contents(&a, "team-web", &["the build uses bazel"]);
    assert_eq!(rev_of(&a, "team-web", id_a), 3, "the same rev everywhere");
    // A psql change is `external`.
    pg.psql("UPDATE memd.memories SET content = 'the build uses cmake'");
    wait_contents(&b, "team-web", &["the build uses cmake"]);
    let (v, code) = b.json(&[
        "--namespace",
        "team-web",
        "--session",
        "rev",
        "update",
        &id_b.to_string(),
        "--content",
        "the build uses xmake",
    ]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["changed_by"]["kind"], "external", "{v}");
}

#[test]
fn two_machines_adding_the_same_memory_at_once_get_one_row() {
    let Some(pg) = Pg::start() else { return };
    let _b0 = started(&pg);
    let a = machine(&pg, "a");
    let b = machine(&pg, "b");
    let try_add = |d: &Daemon, text: &str| {
        let (v, code) = d.json(&["--namespace", "team-ops", "add", text]);
        // The add merged into a row the other machine's add created after
        // this one-shot session began is a change of that row: the row
        // rule may refuse it (exit 3), never anything else.
        assert!(code == 0 || (code == 3 && v["rule"] == "row"), "{v}");
        code == 0
    };
    for round in 0..5 {
        let text = format!("the on-call rotation changes every monday, round {round}");
        let (ok_a, ok_b) = std::thread::scope(|s| {
            let ja = s.spawn(|| try_add(&a, &text));
            let jb = s.spawn(|| try_add(&b, &text));
            (ja.join().unwrap(), jb.join().unwrap())
        });
        let acknowledged = u64::from(ok_a) + u64::from(ok_b);
        assert!(acknowledged >= 1);
        let n = pg.psql(&format!(
            "SELECT count(*) || ' ' || max(observation_count) FROM memd.memories WHERE content = '{text}'"
        ));
        assert_eq!(
            n,
            format!("1 {acknowledged}"),
            "round {round}: one row, counted once per acknowledged add"
        );
    }
    Pg::wait_for(Duration::from_secs(10), "both machines alike", || {
        contents(&a, "team-ops") == contents(&b, "team-ops") && contents(&a, "team-ops").len() == 5
    });
}

#[test]
fn postgresql_down_refuses_shared_writes_and_serves_the_rest() {
    let Some(pg) = Pg::start() else { return };
    let _b0 = started(&pg);
    let a = machine(&pg, "a");
    add(&a, "team-web", "written while the server was up");
    pg.stop("fast");
    let (v, code) = a.json(&["--namespace", "team-web", "add", "written while it is down"]);
    assert_eq!(code, 5, "{v}");
    assert_eq!(v["code"], "team_unavailable");
    assert!(
        v["error"].as_str().unwrap().contains("nothing was written"),
        "{v}"
    );
    // Reads and local namespaces go on.
    assert_eq!(
        contents(&a, "team-web"),
        ["written while the server was up"]
    );
    add(&a, "local", "a local note");
    let status = a.status();
    assert_eq!(status["team"]["connected"], false, "{status}");
    pg.start_server();
    Pg::wait_for(
        Duration::from_secs(15),
        "a shared write to pass again",
        || {
            a.json(&[
                "--namespace",
                "team-web",
                "add",
                "written after it came back",
            ])
            .1 == 0
        },
    );
    let b = machine(&pg, "b");
    wait_contents(
        &b,
        "team-web",
        &[
            "written after it came back",
            "written while the server was up",
        ],
    );
}

#[test]
fn a_namespace_with_local_memories_is_pushed_once_and_sweeps_leave_shared_rows_alone() {
    let Some(pg) = Pg::start() else { return };
    let _b0 = started(&pg);
    // Machine a used memd alone before: its namespace holds memories.
    let mut a = Daemon::start();
    add(&a, "team-old", "first local fact about the api");
    add(&a, "team-old", "second local fact about the api");
    a.terminate();
    join_team(&mut a, &pg, "a", &["team-*"]);
    let (v, code) = a.json(&["--namespace", "team-old", "add", "a third fact"]);
    assert_eq!(v["code"], "team_unpushed", "{v}");
    assert_ne!(code, 0);
    let (v, code) = a.json(&["--namespace", "team-old", "team", "push", "team-old"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (v["pushed"].as_u64(), v["already"].as_u64()),
        (Some(2), Some(0))
    );
    let (v, _) = a.json(&["--namespace", "team-old", "team", "push", "team-old"]);
    assert_eq!(
        v["pushed"].as_u64(),
        Some(0),
        "a second push uploads nothing: {v}"
    );
    add(&a, "team-old", "a third fact");
    let b = machine(&pg, "b");
    wait_contents(
        &b,
        "team-old",
        &[
            "a third fact",
            "first local fact about the api",
            "second local fact about the api",
        ],
    );
    // A sweep on b leaves the shared rows alone, even the ones it would
    // move; an expired shared row is hidden, and `prune` deletes it
    // through PostgreSQL for everyone.
    let (v, code) = a.json(&[
        "--namespace",
        "team-old",
        "add",
        "expires soon",
        "--expires",
        "1s",
    ]);
    assert_eq!(code, 0, "{v}");
    std::thread::sleep(Duration::from_millis(1_500));
    let (v, code) = b.json(&["sweep"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        pg.psql("SELECT count(*) FROM memd.memories WHERE NOT deleted"),
        "4",
        "a sweep deleted nothing in PostgreSQL"
    );
    let (v, code) = b.json(&["--namespace", "team-old", "prune"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["count"], 1, "{v}");
    assert_eq!(
        pg.psql("SELECT count(*) FROM memd.memories WHERE deleted"),
        "1",
        "prune deleted it through PostgreSQL"
    );
}

#[test]
fn a_namespace_that_starts_to_match_is_backfilled() {
    let Some(pg) = Pg::start() else { return };
    let _b0 = started(&pg);
    let a = machine_sharing(&pg, "a", &["team-*", "shared-*"]);
    add(&a, "shared-docs", "the docs site builds with mdbook");
    let mut b = machine_sharing(&pg, "b", &["team-*"]);
    assert!(contents(&b, "shared-docs").is_empty());
    b.terminate();
    join_team(&mut b, &pg, "b", &["team-*", "shared-*"]);
    // Backfilled before it served.
    assert_eq!(
        contents(&b, "shared-docs"),
        ["the docs site builds with mdbook"]
    );
}

#[test]
fn an_import_into_a_shared_namespace_writes_through_and_a_deleted_uid_comes_back_only_with_replace()
{
    let Some(pg) = Pg::start() else { return };
    let _b0 = started(&pg);
    let a = machine(&pg, "a");
    let b = machine(&pg, "b");
    add(&a, "team-web", "exported and then deleted");
    let out = a.dir.path().join("export.json");
    let (v, code) = a.json(&[
        "--namespace",
        "team-web",
        "export",
        "--out",
        &out.display().to_string(),
    ]);
    assert_eq!(code, 0, "{v}");
    let id = id_of(&a, "team-web", "exported and then deleted").unwrap();
    let (v, code) = a.json(&["--namespace", "team-web", "forget", &id.to_string()]);
    assert_eq!(code, 0, "{v}");
    wait_contents(&b, "team-web", &[]);
    // A plain import leaves the team's delete standing.
    let (v, code) = b.json(&[
        "--namespace",
        "team-web",
        "import",
        &out.display().to_string(),
    ]);
    assert_eq!(code, 0, "{v}");
    assert!(contents(&b, "team-web").is_empty(), "{v}");
    assert_eq!(
        pg.psql("SELECT count(*) FROM memd.memories WHERE NOT deleted"),
        "0"
    );
    // With --replace it comes back, everywhere.
    let (v, code) = b.json(&[
        "--namespace",
        "team-web",
        "import",
        "--replace",
        &out.display().to_string(),
    ]);
    assert_eq!(code, 0, "{v}");
    for d in [&a, &b] {
        wait_contents(d, "team-web", &["exported and then deleted"]);
    }
}

#[test]
fn a_push_of_ten_thousand_memories_is_idempotent() {
    let Some(pg) = Pg::start() else { return };
    let _b0 = started(&pg);
    let mut a = Daemon::start();
    let entries: Vec<Value> = (0..10_000)
        .map(|i| {
            serde_json::json!({
                "uid": format!("{i:032x}"),
                "namespace": "team-big",
                "content": format!("memory number {i} of the big namespace"),
            })
        })
        .collect();
    let doc = a.dir.path().join("big.json");
    std::fs::write(&doc, serde_json::json!({ "entries": entries }).to_string()).unwrap();
    let (v, code) = a.json(&["import", &doc.display().to_string()]);
    assert_eq!((code, v["inserted"].as_u64()), (0, Some(10_000)), "{v}");
    a.terminate();
    join_team(&mut a, &pg, "a", &["team-*"]);
    let (v, code) = a.json(&["team", "push", "team-big"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (v["pushed"].as_u64(), v["already"].as_u64()),
        (Some(10_000), Some(0)),
        "{v}"
    );
    let (v, code) = a.json(&["team", "push", "team-big"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (v["pushed"].as_u64(), v["already"].as_u64()),
        (Some(0), Some(0)),
        "{v}"
    );
    assert_eq!(
        pg.psql("SELECT count(*) FROM memd.memories WHERE namespace = 'team-big'"),
        "10000"
    );
    let b = machine(&pg, "b");
    let n = crate::common::sqlite3(
        &b.db(),
        "SELECT count(*) FROM memories WHERE namespace = 'team-big'",
    );
    assert_eq!(
        n.trim(),
        "10000",
        "a new machine pulled them before it served"
    );
    // The namespace is clean now: writes pass.
    add(&a, "team-big", "one more after the push");
}

#[test]
fn another_tools_edits_of_shared_rows_here_are_written_through_as_external() {
    if !crate::common::tool("sqlite3", "edits a machine's database by hand") {
        return;
    }
    let Some(pg) = Pg::start() else { return };
    let _b0 = started(&pg);
    let mut a = machine(&pg, "a");
    let b = machine(&pg, "b");
    add(&a, "team-web", "edited by hand later");
    add(&a, "team-web", "deleted by hand later");
    add(&a, "team-web", "edited on two machines");
    wait_contents(
        &b,
        "team-web",
        &[
            "deleted by hand later",
            "edited by hand later",
            "edited on two machines",
        ],
    );
    // While the daemon runs: the shell's UPDATE and DELETE reach PostgreSQL
    // (as external) and the other machine.
    crate::common::sqlite3(
        &a.db(),
        "UPDATE memories SET content = 'edited by hand' WHERE content = 'edited by hand later'; \
         DELETE FROM memories WHERE content = 'deleted by hand later';",
    );
    wait_contents(
        &b,
        "team-web",
        &["edited by hand", "edited on two machines"],
    );
    assert_eq!(
        pg.psql("SELECT changed_kind FROM memd.memories WHERE content = 'edited by hand'"),
        "external"
    );
    // A conflict: the shell edits a row here while the daemon is down and
    // machine b changes it in PostgreSQL. PostgreSQL's version stands; the
    // local one is kept in a drift backup.
    a.terminate();
    crate::common::sqlite3(
        &a.db(),
        "UPDATE memories SET content = 'the shell on a says this' \
         WHERE content = 'edited on two machines'",
    );
    let id_b = id_of(&b, "team-web", "edited on two machines").unwrap();
    let (v, code) = b.json(&[
        "--namespace",
        "team-web",
        "update",
        &id_b.to_string(),
        "--content",
        "machine b says this",
    ]);
    assert_eq!(code, 0, "{v}");
    a.spawn();
    wait_contents(&a, "team-web", &["edited by hand", "machine b says this"]);
    wait_contents(&b, "team-web", &["edited by hand", "machine b says this"]);
    let kept: String = std::fs::read_dir(a.data_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("memory.bak.")
        })
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(
        kept.contains("the shell on a says this"),
        "the local version is in a backup"
    );
}

#[test]
fn the_readme_recipe_shares_a_namespace_between_two_machines() {
    let Some(pg) = Pg::start() else { return };
    let homes = [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()];
    let memd = |home: &std::path::Path, args: &[&str]| {
        let out = crate::common::memd_command(home)
            .args(args)
            .env("MEMD_TEAM_URL", pg.url())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    // Once, from any machine.
    assert_eq!(memd(homes[0].path(), &["team", "init"]).0, 0);
    for (i, home) in homes.iter().enumerate() {
        let dir = home.path().join("xdg-config/memd");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("config.toml"),
            format!(
                "[team]\nurl = \"{}\"\nnamespaces = [\"github.com/acme/*\"]\nmachine = \"m{i}\"\n",
                pg.url()
            ),
        )
        .unwrap();
        memd(home.path(), &["stop"]);
    }
    let ns = ["--namespace", "github.com/acme/api"];
    let (code, _) = memd(
        homes[0].path(),
        &[ns[0], ns[1], "add", "the api deploys with ops/ship.sh"],
    );
    assert_eq!(code, 0);
    Pg::wait_for(
        Duration::from_secs(15),
        "the memory on the second machine",
        || {
            let (_, out) = memd(
                homes[1].path(),
                &[ns[0], ns[1], "--json", "search", "deploys"],
            );
            out.contains("the api deploys with ops/ship.sh")
        },
    );
    let (code, out) = memd(homes[1].path(), &["--json", "team", "status"]);
    assert_eq!(code, 0, "{out}");
    let v: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(v["team"]["connected"], true, "{v}");
    assert_eq!(v["team"]["machine"], "m1");
    for home in &homes {
        assert_eq!(memd(home.path(), &["stop"]).0, 0);
    }
}

#[test]
fn strict_refuses_after_another_machines_commit_in_the_namespace_until_read() {
    let Some(pg) = Pg::start() else { return };
    let _b0 = started(&pg);
    let a = machine(&pg, "a");
    let b = machine(&pg, "b");
    let strict = [
        "--namespace",
        "team-web",
        "--drift-policy",
        "strict",
        "--session",
        "careful",
    ];
    let run = |d: &Daemon, extra: &[&str]| {
        let mut args: Vec<&str> = strict.to_vec();
        args.extend_from_slice(extra);
        d.json(&args)
    };
    let (v, code) = run(&a, &["list"]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = run(&a, &["add", "written on a under strict"]);
    assert_eq!(code, 0, "{v}");
    // Another machine commits in the namespace: a's strict session has not
    // seen it.
    add(&b, "team-web", "written on b meanwhile");
    let (v, code) = run(&a, &["add", "written on a again"]);
    assert_eq!(code, 3, "{v}");
    assert_eq!(v["rule"], "strict", "{v}");
    // A read moves its view; then it passes.
    wait_contents(
        &a,
        "team-web",
        &["written on a under strict", "written on b meanwhile"],
    );
    let (v, code) = run(&a, &["list"]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = run(&a, &["add", "written on a again"]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn a_daemon_started_before_team_init_serves_and_catches_up_once_it_ran() {
    let Some(pg) = Pg::start() else { return };
    let a = machine(&pg, "a");
    let b = machine(&pg, "b");
    let (v, code) = a.json(&["--namespace", "team-web", "add", "too early"]);
    assert_eq!(code, 5, "{v}");
    assert_eq!(v["code"], "team_unavailable");
    assert!(
        v["error"].as_str().unwrap().contains("memd team init"),
        "the refusal says what to do: {v}"
    );
    let (v, _) = a.json(&["team", "status"]);
    assert!(
        v["team"]["last_error"]
            .as_str()
            .unwrap_or_default()
            .contains("memd team init"),
        "{v}"
    );
    add(&a, "local", "local namespaces work meanwhile");
    // `team init` run on machine a wakes a's daemon: it has caught up
    // before init returns, and the next shared write passes at once.
    let out = crate::common::memd_command(a.dir.path())
        .args(["--data-dir"])
        .arg(a.data_dir())
        .args(["team", "init", "--json"])
        .env("MEMD_TEAM_URL", pg.url())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["daemon"]["synced"], true, "{v}");
    let (v, code) = a.json(&["--namespace", "team-web", "add", "right after init"]);
    assert_eq!(code, 0, "{v}");
    // Machine b was not woken (init ran elsewhere) and sits in its 2 s
    // pause: its first shared write makes its own reconnect and catch-up
    // instead of refusing.
    let (v, code) = b.json(&["--namespace", "team-web", "add", "b right after init"]);
    assert_eq!(code, 0, "{v}");
    wait_contents(&b, "team-web", &["b right after init", "right after init"]);
}

#[test]
fn a_unix_socket_url_connects_without_tls_unless_tls_is_demanded() {
    let Some(pg) = Pg::start() else { return };
    let _boot = started(&pg);
    // The URL form of a local server's socket, as libpq users write it:
    // no sslmode (libpq's default, prefer), prefer, allow, disable.
    for (name, mode) in [
        ("m0", ""),
        ("m1", "&sslmode=prefer"),
        ("m2", "&sslmode=allow"),
        ("m3", "&sslmode=disable"),
    ] {
        let url = format!("{}{mode}", pg.socket_url());
        let d = Daemon::with_config(&format!(
            "[team]\nurl = \"{url}\"\nnamespaces = [\"team-*\"]\nmachine = \"{name}\"\n"
        ));
        let (v, code) = d.json(&[
            "--namespace",
            "team-web",
            "add",
            &format!("over the socket, {name}"),
        ]);
        assert_eq!(code, 0, "{url}: {v}");
    }
    assert_eq!(
        pg.psql("SELECT count(*) FROM memd.memories WHERE content LIKE 'over the socket, %'"),
        "4"
    );
    // A mode that demands TLS cannot be met over a socket: a clear error,
    // from `team init` and from the daemon's config check.
    let url = format!("{}&sslmode=require", pg.socket_url());
    let boot = Daemon::prepare(tempfile::tempdir().unwrap());
    let out = crate::common::memd_command(boot.dir.path())
        .args(["team", "init"])
        .env("MEMD_TEAM_URL", &url)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("not possible over a Unix socket"), "{err}");
    let config = boot.dir.path().join("config.toml");
    std::fs::write(
        &config,
        format!("[team]\nurl = \"{url}\"\nnamespaces = [\"team-*\"]\n"),
    )
    .unwrap();
    let out = crate::common::memd_command(boot.dir.path())
        .arg("--config")
        .arg(&config)
        .args(["config", "show"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("not possible over a Unix socket"), "{err}");
}

/// `src/store/team/admin/schema/current.sql` is the team schema as `memd team
/// init` leaves a fresh database (`pg_dump --schema-only`): the schema in
/// one file to read, held against the migrations (v1.sql …). After adding
/// a migration: `MEMD_BLESS=1 cargo test -p memd-daemon --test it
/// team::the_checked_in_team_schema`.
#[test]
fn the_checked_in_team_schema_is_what_init_makes() {
    let Some(pg) = Pg::start() else { return };
    started(&pg);
    let made = format!(
        "-- memd's team schema in PostgreSQL as `memd team init` leaves a fresh\n\
         -- database (pg_dump --schema-only, comments and settings left out),\n\
         -- here one named postgres: its owner role is memd_owner_postgres.\n\
         -- Generated by a test; do not edit: add a migration, then run\n\
         -- MEMD_BLESS=1 cargo test -p memd-daemon --test it team::the_checked_in_team_schema\n\n{}",
        pg.schema_sql()
    );
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("src/store/team/admin/schema/current.sql");
    if std::env::var_os("MEMD_BLESS").is_some() {
        std::fs::write(&path, &made).unwrap();
    }
    let checked_in = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        checked_in == made,
        "src/store/team/admin/schema/current.sql is not what init makes: run \
         MEMD_BLESS=1 cargo test -p memd-daemon --test it team::the_checked_in_team_schema"
    );
    assert!(made.contains("CREATE TABLE memd.memories"), "{made}");
}
