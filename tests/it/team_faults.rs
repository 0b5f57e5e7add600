//! Team memory under faults, with a real PostgreSQL: the server crashed
//! (`pg_ctl stop -m immediate`) under write load and started again; the
//! server frozen (SIGSTOP: a partition); a daemon killed between
//! PostgreSQL's commit and its local apply; a daemon down while the others
//! write; the server restored from an older dump. After each: no
//! acknowledged write lost, nothing applied twice, every machine converges,
//! every refused write got a clear error.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Daemon;
use crate::common::pg::Pg;

fn machine(pg: &Pg, name: &str, timeout_ms: u64) -> Daemon {
    Daemon::with_config(&format!(
        "[team]\nurl = \"{}\"\nnamespaces = [\"team-*\"]\nmachine = \"{name}\"\ntimeout_ms = {timeout_ms}\n",
        pg.url()
    ))
}

fn init(pg: &Pg) -> Daemon {
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
    boot
}

/// Content → how many rows hold it, on a machine (every row of `team-*`).
fn local_counts(d: &Daemon) -> BTreeMap<String, usize> {
    let out = crate::common::sqlite3(
        &d.db(),
        "SELECT content FROM memories WHERE namespace LIKE 'team-%'",
    );
    let mut m = BTreeMap::new();
    for line in out.lines() {
        *m.entry(line.to_string()).or_insert(0) += 1;
    }
    m
}

fn pg_counts(pg: &Pg) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for line in pg
        .psql("SELECT content FROM memd.memories WHERE NOT deleted AND namespace LIKE 'team-%'")
        .lines()
    {
        *m.entry(line.to_string()).or_insert(0) += 1;
    }
    m
}

fn converge(pg: &Pg, machines: &[&Daemon]) -> BTreeMap<String, usize> {
    let want = pg_counts(pg);
    for d in machines {
        Pg::wait_for(Duration::from_secs(30), "a machine to converge", || {
            local_counts(d) == want
        });
    }
    want
}

fn add(d: &Daemon, text: &str) -> (Value, i32) {
    d.json(&["--namespace", "team-load", "add", text])
}

/// A refused shared write says why, and nothing else happens.
fn assert_clear_refusal(v: &Value, code: i32) {
    assert_eq!(code, 5, "a refused shared write exits 5: {v}");
    assert_eq!(v["code"], "team_unavailable", "{v}");
    assert!(!v["error"].as_str().unwrap_or_default().is_empty(), "{v}");
}

#[test]
fn a_crashed_server_under_write_load_loses_no_acknowledged_write() {
    let Some(pg) = Pg::start() else { return };
    let _boot = init(&pg);
    let a = machine(&pg, "a", 1000);
    let b = machine(&pg, "b", 1000);
    let stop = std::sync::atomic::AtomicBool::new(false);
    // Two writers, one per machine, add notes the whole time.
    let results: Vec<(BTreeSet<String>, BTreeSet<String>, usize)> = std::thread::scope(|s| {
        let writers: Vec<_> = [(&a, "a"), (&b, "b")]
            .into_iter()
            .map(|(d, name)| {
                let stop = &stop;
                s.spawn(move || {
                    let (mut acked, mut unknown, mut refused) =
                        (BTreeSet::new(), BTreeSet::new(), 0);
                    let mut k = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        k += 1;
                        let text = format!("load note {name}{k}");
                        let (v, code) = add(d, &text);
                        if code == 0 {
                            acked.insert(text);
                        } else {
                            assert_clear_refusal(&v, code);
                            refused += 1;
                            if v["error"]
                                .as_str()
                                .unwrap()
                                .contains("may have been applied")
                            {
                                unknown.insert(text);
                            }
                        }
                    }
                    (acked, unknown, refused)
                })
            })
            .collect();
        std::thread::sleep(Duration::from_secs(1));
        pg.stop("immediate");
        std::thread::sleep(Duration::from_millis(1500));
        pg.start_server();
        std::thread::sleep(Duration::from_secs(2));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        writers.into_iter().map(|w| w.join().unwrap()).collect()
    });
    let (mut acked, mut unknown, mut refused) = (BTreeSet::new(), BTreeSet::new(), 0);
    for (a, u, r) in results {
        acked.extend(a);
        unknown.extend(u);
        refused += r;
    }
    let have = converge(&pg, &[&a, &b]);
    for text in &acked {
        assert_eq!(
            have.get(text),
            Some(&1),
            "an acknowledged write is there once: {text}"
        );
    }
    for (text, n) in &have {
        assert_eq!(*n, 1, "nothing applied twice: {text}");
        assert!(
            acked.contains(text) || unknown.contains(text),
            "only acknowledged writes (or ones whose answer was lost) are there: {text}"
        );
    }
    eprintln!(
        "server crash under load: {} acknowledged, {refused} refused ({} with an unknown outcome), every acknowledged one there once",
        acked.len(),
        unknown.len()
    );
    assert!(
        refused > 0,
        "the crash refused nothing: the test proved nothing"
    );
    assert!(acked.len() > 10, "too few writes: the test proved nothing");
}

#[test]
fn a_frozen_server_fails_shared_writes_in_time_and_local_ones_go_on() {
    let Some(pg) = Pg::start() else { return };
    let _boot = init(&pg);
    let a = machine(&pg, "a", 500);
    let (v, code) = add(&a, "before the partition");
    assert_eq!(code, 0, "{v}");
    pg.freeze();
    let t = Instant::now();
    let (v, code) = add(&a, "during the partition");
    let took = t.elapsed();
    assert_clear_refusal(&v, code);
    // timeout_ms bounds each call: a refusal comes within a few of them.
    assert!(took < Duration::from_secs(5), "the refusal took {took:?}");
    // Local namespaces and reads do not wait for PostgreSQL.
    let t = Instant::now();
    for i in 0..20 {
        let (v, code) = a.json(&["--namespace", "local", "add", &format!("local note {i}")]);
        assert_eq!(code, 0, "{v}");
    }
    assert!(t.elapsed() < Duration::from_secs(10));
    let (v, code) = a.json(&["--namespace", "team-load", "list"]);
    assert_eq!(code, 0, "{v}");
    pg.thaw();
    Pg::wait_for(
        Duration::from_secs(15),
        "shared writes to pass again",
        || add(&a, "after the partition").1 == 0,
    );
    let b = machine(&pg, "b", 500);
    let have = converge(&pg, &[&a, &b]);
    assert!(!have.contains_key("during the partition"));
    assert_eq!(have.get("after the partition"), Some(&1));
}

#[test]
fn a_daemon_killed_between_the_commit_and_its_apply_gets_the_write_from_the_pull() {
    let Some(pg) = Pg::start() else { return };
    let _boot = init(&pg);
    let mut a = machine(&pg, "a", 2000);
    let b = machine(&pg, "b", 2000);
    a.terminate();
    a.env
        .push(("MEMD_FAULT".into(), "after-team-commit".into()));
    a.spawn();
    let (v, code) = add(&a, "committed, then the daemon died");
    assert_ne!(code, 0, "the write was not acknowledged: {v}");
    let _ = a.child.take().map(|mut c| c.wait());
    assert_eq!(
        pg.psql(
            "SELECT count(*) FROM memd.memories WHERE content = 'committed, then the daemon died'"
        ),
        "1",
        "PostgreSQL committed it"
    );
    a.env.clear();
    a.spawn();
    let have = converge(&pg, &[&a, &b]);
    assert_eq!(have.get("committed, then the daemon died"), Some(&1));
}

#[test]
fn a_daemon_down_while_the_others_write_catches_up_deletes_included() {
    let Some(pg) = Pg::start() else { return };
    let _boot = init(&pg);
    let mut a = machine(&pg, "a", 2000);
    let b = machine(&pg, "b", 2000);
    for i in 0..5 {
        assert_eq!(add(&b, &format!("note {i}")).1, 0);
    }
    converge(&pg, &[&a, &b]);
    a.terminate();
    for i in 5..10 {
        assert_eq!(add(&b, &format!("note {i}")).1, 0);
    }
    let (v, _) = b.json(&["--namespace", "team-load", "list", "--limit", "100"]);
    let ids: Vec<i64> = v["memories"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["content"] == "note 0" || m["content"] == "note 7")
        .map(|m| m["id"].as_i64().unwrap())
        .collect();
    for id in ids {
        let (v, code) = b.json(&["--namespace", "team-load", "forget", &id.to_string()]);
        assert_eq!(code, 0, "{v}");
    }
    a.spawn();
    let have = converge(&pg, &[&a, &b]);
    assert_eq!(have.len(), 8);
    assert!(!have.contains_key("note 0") && !have.contains_key("note 7"));
}

#[test]
fn a_server_restored_from_an_older_dump_is_resynced_and_what_it_lost_is_kept_in_a_backup() {
    let Some(pg) = Pg::start() else { return };
    let _boot = init(&pg);
    let a = machine(&pg, "a", 2000);
    let b = machine(&pg, "b", 2000);
    assert_eq!(add(&a, "in the dump").1, 0);
    converge(&pg, &[&a, &b]);
    let dump = pg.dir.join("memd.sql");
    pg.dump(&dump);
    assert_eq!(add(&a, "after the dump, from a").1, 0);
    assert_eq!(add(&b, "after the dump, from b").1, 0);
    converge(&pg, &[&a, &b]);
    pg.restore(&dump);
    // Both machines notice and take PostgreSQL's history again.
    let have = converge(&pg, &[&a, &b]);
    assert_eq!(have.keys().collect::<Vec<_>>(), ["in the dump"]);
    for d in [&a, &b] {
        let backups: Vec<String> = std::fs::read_dir(d.data_dir())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("memory.bak."))
            .collect();
        let mut kept = String::new();
        for name in &backups {
            kept.push_str(&std::fs::read_to_string(d.data_dir().join(name)).unwrap());
        }
        assert!(
            kept.contains("after the dump, from a") && kept.contains("after the dump, from b"),
            "the rows PostgreSQL lost are in a drift backup: {backups:?}"
        );
    }
    // And writing goes on.
    assert_eq!(add(&a, "after the restore").1, 0);
    let have = converge(&pg, &[&a, &b]);
    assert_eq!(have.len(), 2);
}
