//! Team memory under faults, with a real PostgreSQL: the server crashed
//! (`pg_ctl stop -m immediate`) under write load and started again; the
//! server frozen (SIGSTOP: a partition); a daemon killed between
//! PostgreSQL's commit and its local apply; a daemon down while the others
//! write; the server restored from an older dump. After each: no
//! acknowledged write lost, nothing applied twice, every machine converges,
//! every refused write got a clear error. Each machine connects as a login
//! role of its own with a grant (row-level security in force).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::Daemon;
use crate::common::pg::Pg;

/// A machine connecting as a login role of its own, with write on
/// `team-*`: grants in place, nobody above row-level security (its own
/// backends are the only ones it may end).
fn machine(pg: &Pg, name: &str, timeout_ms: u64) -> Daemon {
    let role = format!("machine_{name}");
    pg.psql(&format!(
        "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = '{role}') THEN \
         CREATE ROLE {role} LOGIN; END IF; END $$; \
         INSERT INTO memd.grants (role, glob, access) VALUES ('{role}', 'team-*', 'write') \
         ON CONFLICT DO NOTHING"
    ));
    Daemon::with_config(&format!(
        "[team]\nurl = \"{}\"\nnamespaces = [\"team-*\"]\nmachine = \"{name}\"\ntimeout_ms = {timeout_ms}\n",
        pg.url().replace("user=postgres", &format!("user={role}"))
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

/// A shared write that was not acknowledged: refused (`team_unavailable`,
/// nothing written) or of unknown outcome (`team_outcome_unknown`, with
/// the operation id); whether it was the latter.
fn not_acknowledged(v: &Value, code: i32) -> bool {
    assert_eq!(code, 5, "a shared write not acknowledged exits 5: {v}");
    assert!(!v["error"].as_str().unwrap_or_default().is_empty(), "{v}");
    match v["code"].as_str() {
        Some("team_unavailable") => false,
        Some("team_outcome_unknown") => {
            assert!(v["operation_id"].is_string(), "{v}");
            true
        }
        _ => panic!("neither refused nor unknown: {v}"),
    }
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
                            refused += 1;
                            if not_acknowledged(&v, code) {
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

/// A deferred trigger on `memd.ops` that makes a commit slow: it sleeps
/// `secs` inside the COMMIT (with probability `p`), holding the commit
/// back as a stalled disk would.
fn slow_commits(pg: &Pg, p: f64, secs: f64) {
    pg.psql(&format!(
        "CREATE OR REPLACE FUNCTION public.slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ \
         BEGIN IF random() < {p} THEN PERFORM pg_sleep({secs}); END IF; RETURN NULL; END $$; \
         DROP TRIGGER IF EXISTS slow_commit ON memd.ops; \
         CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON memd.ops \
         DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION public.slow_commit()"
    ));
}

/// Waits until a COMMIT is inside the slow trigger (its backend sleeps).
fn commit_in_flight(pg: &Pg) {
    Pg::wait_for(
        Duration::from_secs(20),
        "a COMMIT in the slow trigger",
        || pg.psql("SELECT count(*) FROM pg_stat_activity WHERE wait_event = 'PgSleep'") != "0",
    );
}

fn fast_commits(pg: &Pg) {
    pg.psql("DROP TRIGGER IF EXISTS slow_commit ON memd.ops");
}

/// A synchronous standby that never answers: every COMMIT is written
/// locally and then waits for it — committed, but not acknowledged, as
/// with a lagging standby.
fn lagging_standby(pg: &Pg, on: bool) {
    if on {
        pg.psql("ALTER SYSTEM SET synchronous_standby_names = 'ghost'");
    } else {
        pg.psql("ALTER SYSTEM RESET synchronous_standby_names");
    }
    pg.psql("SELECT pg_reload_conf()");
}

/// How many versions of `content` PostgreSQL holds (rows and revisions).
fn pg_holds(pg: &Pg, content: &str) -> i64 {
    let c = content.replace('\'', "''");
    pg.psql(&format!(
        "SELECT (SELECT count(*) FROM memd.memories WHERE content = '{c}') \
         + (SELECT count(*) FROM memd.revisions WHERE content = '{c}')"
    ))
    .parse()
    .unwrap()
}

#[test]
fn a_commit_slower_than_the_timeout_is_refused_only_when_it_never_lands() {
    let Some(pg) = Pg::start() else { return };
    let _boot = init(&pg);
    let a = machine(&pg, "a", 1000);
    slow_commits(&pg, 1.0, 2.0);
    let (v, code) = add(&a, "a slow commit");
    // memd ended the abandoned transaction before it looked the operation
    // up: it never committed, and the refusal says so truthfully.
    assert_clear_refusal(&v, code);
    assert!(
        v["error"].as_str().unwrap().contains("nothing was written"),
        "{v}"
    );
    // Long after the sleep would have ended, nothing of it is anywhere.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(pg_holds(&pg, "a slow commit"), 0);
    fast_commits(&pg);
    let (v, code) = add(&a, "after the slow commit");
    assert_eq!(code, 0, "{v}");
    let b = machine(&pg, "b", 1000);
    let have = converge(&pg, &[&a, &b]);
    assert!(!have.contains_key("a slow commit"), "{have:?}");
}

#[test]
fn a_commit_whose_answer_is_late_is_acknowledged_with_the_id_of_its_own_row() {
    let Some(pg) = Pg::start() else { return };
    let _boot = init(&pg);
    let a = machine(&pg, "a", 1000);
    // A shared add that lands in PostgreSQL but whose COMMIT answer does
    // not come in time; 0.4 s later, an add to a local namespace takes the
    // next local id — the one the shared add's rolled-back job had.
    lagging_standby(&pg, true);
    let (shared, local) = std::thread::scope(|s| {
        let shared = s.spawn(|| add(&a, "a shared note, committed late"));
        std::thread::sleep(Duration::from_millis(400));
        let local = a.json(&["--namespace", "local", "add", "a local note beside it"]);
        (shared.join().unwrap(), local)
    });
    lagging_standby(&pg, false);
    let ((sv, scode), (lv, lcode)) = (shared, local);
    assert_eq!(lcode, 0, "{lv}");
    assert_eq!(scode, 0, "PostgreSQL committed it: acknowledged: {sv}");
    let (shared_id, local_id) = (sv["id"].as_i64().unwrap(), lv["id"].as_i64().unwrap());
    assert_ne!(shared_id, local_id, "two adds, two ids: {sv} {lv}");
    let (v, code) = a.json(&["--namespace", "team-load", "get", &shared_id.to_string()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        v["memory"]["content"], "a shared note, committed late",
        "{v}"
    );
    let (v, code) = a.json(&["--namespace", "local", "get", &local_id.to_string()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["memory"]["content"], "a local note beside it", "{v}");
    assert_eq!(pg_holds(&pg, "a shared note, committed late"), 1);
}

/// One session's view of what it asked and what memd answered.
#[derive(Default)]
struct Ledger {
    /// content → (uid, local id) of acknowledged adds.
    added: BTreeMap<String, (String, i64)>,
    /// Contents of adds refused as not written.
    refused_adds: BTreeSet<String>,
    /// Contents of acknowledged updates.
    updated: BTreeSet<String>,
    /// Contents of updates refused as not written.
    refused_updates: BTreeSet<String>,
    /// uids whose forget was acknowledged.
    forgotten: BTreeSet<String>,
    /// uids whose forget was refused as not written.
    refused_forgets: BTreeSet<String>,
    /// uids a write with an unknown outcome touched.
    unknown: BTreeSet<String>,
    /// Answers by kind.
    counts: BTreeMap<&'static str, usize>,
}

enum Answer {
    Refused,
    Unknown,
}

fn classify(e: &memd_client::Error) -> Answer {
    use memd_client::Error;
    match e {
        Error::Drift(_) | Error::Conflict(_) => Answer::Refused,
        Error::Daemon(b) if b.code == memd_client::proto::ErrorCode::TeamUnavailable => {
            Answer::Refused
        }
        Error::Daemon(b) if b.code == memd_client::proto::ErrorCode::TeamOutcomeUnknown => {
            assert!(b.operation_id.is_some(), "{}", b.message);
            Answer::Unknown
        }
        other => panic!("an answer that is none of the three truths: {other}"),
    }
}

/// Adds, updates and forgets its own shared rows until `stop`; checks that
/// each acknowledged add's id reads back as that add's row.
async fn shared_writer(d: &Daemon, name: String, stop: Instant) -> Ledger {
    use memd_client::proto::{AddRequest, UpdateRequest};
    let mut opts = d.opts();
    opts.namespace = "team-load".into();
    let mut c = memd_client::Client::connect(opts).await.unwrap();
    let mut l = Ledger::default();
    let mut mine: Vec<(String, i64)> = Vec::new();
    let mut k = 0u64;
    while Instant::now() < stop {
        k += 1;
        let pick = k % 4;
        if pick == 0 && !mine.is_empty() {
            let (uid, id) = mine[(k as usize / 4) % mine.len()].clone();
            let text = format!("{name} rewrites {uid} ({k})");
            let read = c.get(id).await;
            let Ok(_) = read else { continue };
            match c
                .update(UpdateRequest {
                    id,
                    content: Some(text.clone()),
                    ..UpdateRequest::default()
                })
                .await
            {
                Ok(r) => {
                    assert_eq!(r.memory.content, text);
                    assert_eq!(r.memory.uid, uid, "the update answers its own row");
                    l.updated.insert(text);
                    *l.counts.entry("update acknowledged").or_default() += 1;
                }
                Err(e) => match classify(&e) {
                    Answer::Refused => {
                        l.refused_updates.insert(text);
                        *l.counts.entry("update refused").or_default() += 1;
                    }
                    Answer::Unknown => {
                        l.unknown.insert(uid);
                        *l.counts.entry("update unknown").or_default() += 1;
                    }
                },
            }
        } else if pick == 1 && mine.len() > 2 {
            let (uid, id) = mine.remove(0);
            let _ = c.get(id).await;
            match c.forget(id, None).await {
                Ok(_) => {
                    l.forgotten.insert(uid);
                    *l.counts.entry("forget acknowledged").or_default() += 1;
                }
                Err(e) => match classify(&e) {
                    Answer::Refused => {
                        l.refused_forgets.insert(uid);
                        *l.counts.entry("forget refused").or_default() += 1;
                    }
                    Answer::Unknown => {
                        l.unknown.insert(uid);
                        *l.counts.entry("forget unknown").or_default() += 1;
                    }
                },
            }
        } else {
            let text = format!("{name} adds note {k}");
            match c
                .add(AddRequest {
                    content: text.clone(),
                    ..AddRequest::default()
                })
                .await
            {
                Ok(r) => {
                    let id = r.id.expect("an acknowledged add names its row");
                    // The id answered is this add's row, here and now.
                    let m = c.get(id).await.unwrap();
                    assert_eq!(
                        m.content, text,
                        "add answered id {id}, which holds another row"
                    );
                    l.added.insert(text, (m.uid.clone(), id));
                    mine.push((m.uid, id));
                    *l.counts.entry("add acknowledged").or_default() += 1;
                }
                Err(e) => match classify(&e) {
                    Answer::Refused => {
                        l.refused_adds.insert(text);
                        *l.counts.entry("add refused").or_default() += 1;
                    }
                    Answer::Unknown => {
                        *l.counts.entry("add unknown").or_default() += 1;
                    }
                },
            }
        }
    }
    l
}

/// Adds to a local namespace beside the shared writers: never refused,
/// never slowed by PostgreSQL, each id its own row.
async fn local_writer(d: &Daemon, stop: Instant) -> Vec<(i64, String)> {
    use memd_client::proto::AddRequest;
    let mut opts = d.opts();
    opts.namespace = "local-notes".into();
    let mut c = memd_client::Client::connect(opts).await.unwrap();
    let mut out = Vec::new();
    let mut k = 0;
    while Instant::now() < stop {
        k += 1;
        let text = format!("local note {k} beside the team");
        let r = c
            .add(AddRequest {
                content: text.clone(),
                ..AddRequest::default()
            })
            .await
            .unwrap();
        out.push((r.id.unwrap(), text));
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn slow_and_late_commits_under_load_get_only_true_answers() {
    let Some(pg) = Pg::start() else { return };
    let _boot = init(&pg);
    let a = machine(&pg, "a", 600);
    let b = machine(&pg, "b", 600);
    // A fifth of the commits sleep past the timeout inside COMMIT (they
    // never land: memd ends them), and every other second the standby
    // lags (every commit lands, late).
    slow_commits(&pg, 0.2, 0.9);
    let stop = Instant::now() + Duration::from_secs(6);
    let toggler = async {
        let mut on = false;
        while Instant::now() < stop {
            tokio::time::sleep(Duration::from_millis(900)).await;
            on = !on;
            tokio::task::block_in_place(|| lagging_standby(&pg, on));
        }
        tokio::task::block_in_place(|| lagging_standby(&pg, false));
    };
    let writers = async {
        let (w1, w2, w3, w4) = tokio::join!(
            shared_writer(&a, "a1".into(), stop),
            shared_writer(&a, "a2".into(), stop),
            shared_writer(&b, "b1".into(), stop),
            shared_writer(&b, "b2".into(), stop),
        );
        vec![w1, w2, w3, w4]
    };
    let locals = async { tokio::join!(local_writer(&a, stop), local_writer(&b, stop)) };
    let (ledgers, (local_a, local_b), ()) = tokio::join!(writers, locals, toggler);
    fast_commits(&pg);
    lagging_standby(&pg, false);

    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for l in &ledgers {
        for (k, n) in &l.counts {
            *counts.entry(k).or_default() += n;
        }
        for text in l.added.keys() {
            assert!(
                pg_holds(&pg, text) >= 1,
                "an acknowledged add is missing: {text}"
            );
        }
        for text in &l.refused_adds {
            assert_eq!(
                pg_holds(&pg, text),
                0,
                "a refused add was committed: {text}"
            );
        }
        for text in &l.updated {
            assert!(
                pg_holds(&pg, text) >= 1,
                "an acknowledged update is missing: {text}"
            );
        }
        for text in &l.refused_updates {
            assert_eq!(
                pg_holds(&pg, text),
                0,
                "a refused update was committed: {text}"
            );
        }
        for uid in &l.forgotten {
            assert_eq!(
                pg.psql(&format!(
                    "SELECT deleted FROM memd.memories WHERE uid = '{uid}'"
                )),
                "t",
                "an acknowledged forget is missing: {uid}"
            );
        }
        for uid in l.refused_forgets.difference(&l.forgotten) {
            if l.unknown.contains(uid) {
                continue;
            }
            assert_eq!(
                pg.psql(&format!(
                    "SELECT deleted FROM memd.memories WHERE uid = '{uid}'"
                )),
                "f",
                "a refused forget was committed: {uid}"
            );
        }
    }
    // Every machine equals PostgreSQL.
    converge(&pg, &[&a, &b]);
    // The local writers were never refused and each id is its own row.
    for (d, written) in [(&a, &local_a), (&b, &local_b)] {
        for (id, text) in written {
            let (v, code) = d.json(&["--namespace", "local-notes", "get", &id.to_string()]);
            assert_eq!(code, 0, "{v}");
            assert_eq!(v["memory"]["content"], text.as_str(), "{v}");
        }
    }
    eprintln!(
        "slow and late commits under load: {counts:?}; local adds beside them: {}",
        local_a.len() + local_b.len()
    );
    let n = |k: &str| counts.get(k).copied().unwrap_or(0);
    assert!(
        n("add acknowledged") > 5,
        "too few acknowledged adds: {counts:?}"
    );
    assert!(
        n("add refused") + n("update refused") > 0,
        "no slow commit was refused: {counts:?}"
    );
}

#[test]
fn a_write_whose_outcome_cannot_be_learned_says_so_with_its_operation_id() {
    let Some(pg) = Pg::start() else { return };
    let _boot = init(&pg);
    let a = machine(&pg, "a", 1000);
    // The COMMIT goes out and sleeps; meanwhile the server freezes (a
    // partition), so memd can neither end that transaction nor ask about
    // it: the one honest answer is that it may have been applied.
    slow_commits(&pg, 1.0, 3.0);
    let out = std::thread::scope(|s| {
        let shell = s.spawn(|| {
            a.cli_stdin(
                &["--json", "--namespace", "team-load", "shell"],
                Some(b"add \"a write lost in a partition\"\n"),
            )
        });
        commit_in_flight(&pg);
        pg.freeze();
        let out = shell.join().unwrap();
        pg.thaw();
        out
    });
    assert_eq!(
        out.code, 0,
        "the shell goes on after an error: {}",
        out.stderr
    );
    let v = out.json();
    assert_eq!(v["code"], "team_outcome_unknown", "{v}");
    let op = v["operation_id"]
        .as_str()
        .expect("the operation id")
        .to_string();
    assert!(v["error"].as_str().unwrap().contains(&op), "{v}");
    // Whatever PostgreSQL did, the op id and the row agree, and the
    // machine follows PostgreSQL.
    std::thread::sleep(Duration::from_secs(2));
    let ops = pg.psql(&format!(
        "SELECT count(*) FROM memd.ops WHERE op_id = '{op}'"
    ));
    let rows = pg_holds(&pg, "a write lost in a partition");
    assert_eq!(ops, rows.to_string(), "memd.ops and the rows agree");
    fast_commits(&pg);
    converge(&pg, &[&a]);
    // The CLI exits 5 for it, like an unreachable team.
    slow_commits(&pg, 1.0, 3.0);
    let cli = std::thread::scope(|s| {
        let cli = s.spawn(|| add(&a, "another write lost in a partition"));
        commit_in_flight(&pg);
        pg.freeze();
        let out = cli.join().unwrap();
        pg.thaw();
        out
    });
    let (v, code) = cli;
    assert!(not_acknowledged(&v, code), "{v}");
}
