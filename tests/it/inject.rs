//! Frozen per-session snapshots through the real daemon.

use std::time::Duration;

use crate::common::{Daemon, sqlite3};
use memd_client::{AddRequest, Client, Error, UpdateRequest};
use serde_json::Value;

fn db_reads(d: &Daemon) -> u64 {
    d.status()["stats"]["db_reads"].as_u64().unwrap()
}

fn builds(d: &Daemon) -> u64 {
    d.status()["stats"]["snapshot_builds"].as_u64().unwrap()
}

async fn add(c: &mut Client, text: &str) -> i64 {
    add_with(c, text, AddRequest::default()).await
}

async fn add_with(c: &mut Client, text: &str, req: AddRequest) -> i64 {
    c.add(AddRequest {
        content: text.into(),
        ..req
    })
    .await
    .unwrap()
    .id
    .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn consecutive_injects_are_identical_and_read_nothing() {
    let d = Daemon::start();
    let mut s = d.client().await;
    add(&mut s, "The user prefers tabs").await;
    add(&mut s, "Deploys go through ops/deploy.sh").await;
    let first = s.inject().await.unwrap();
    assert!(!first.stats.cached);
    assert!(first.block.contains("The user prefers tabs"));
    assert_eq!(first.stats.included, 2);
    let reads = db_reads(&d);
    for _ in 0..50 {
        let again = s.inject().await.unwrap();
        assert_eq!(again.block.as_bytes(), first.block.as_bytes());
        assert_eq!(again.hash, first.hash);
        assert_eq!(again.built_at_generation, first.built_at_generation);
        assert!(again.stats.cached);
    }
    assert_eq!(db_reads(&d), reads, "a snapshot hit runs no SQLite query");
    let status = d.status();
    assert_eq!(status["stats"]["snapshot_builds"], 1);
    assert_eq!(status["stats"]["snapshot_hits"], 50);
    // Another session with the same data builds the same bytes.
    let mut other = d.client().await;
    assert_eq!(other.inject().await.unwrap().block, first.block);
}

#[tokio::test(flavor = "multi_thread")]
async fn own_writes_rebuild_the_block() {
    let d = Daemon::start();
    let mut s = d.client().await;
    let a = add(&mut s, "alpha memory").await;
    let b0 = s.inject().await.unwrap();
    let b = add(&mut s, "beta memory").await;
    let b1 = s.inject().await.unwrap();
    assert!(!b1.stats.cached);
    assert!(b1.block.contains("beta memory") && !b0.block.contains("beta memory"));
    s.update(UpdateRequest {
        id: a,
        content: Some("alpha memory, revised".into()),
        ..Default::default()
    })
    .await
    .unwrap();
    let b2 = s.inject().await.unwrap();
    assert!(b2.block.contains("alpha memory, revised"));
    s.forget(b, None).await.unwrap();
    let b3 = s.inject().await.unwrap();
    assert!(!b3.block.contains("beta memory"));
    assert_eq!(builds(&d), 4);
    // supersede OLD NEW is this session's write too.
    let c = add(&mut s, "gamma memory").await;
    let b4 = s.inject().await.unwrap();
    assert!(b4.block.contains("alpha memory, revised"));
    s.supersede(a, c).await.unwrap();
    let b5 = s.inject().await.unwrap();
    assert!(!b5.stats.cached);
    assert!(!b5.block.contains("alpha memory, revised"), "{}", b5.block);
    assert_eq!(builds(&d), 6);
    // A refused or failed write does not drop the snapshot.
    assert!(s.forget(999, None).await.is_err());
    assert!(s.inject().await.unwrap().stats.cached);
}

#[tokio::test(flavor = "multi_thread")]
async fn compacted_and_refresh_rebuild() {
    let d = Daemon::start();
    let mut s = d.client().await;
    add(&mut s, "gamma").await;
    let first = s.inject().await.unwrap();
    s.compacted().await.unwrap();
    let again = s.inject().await.unwrap();
    assert!(!again.stats.cached);
    assert_eq!(again.block, first.block, "same data, same bytes");
    assert_eq!(builds(&d), 2);
    s.refresh().await.unwrap();
    assert!(!s.inject().await.unwrap().stats.cached);
    assert_eq!(builds(&d), 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn other_writers_leave_the_block_frozen() {
    let d = Daemon::start();
    let mut s = d.client().await;
    let mut other = d.client().await;
    add(&mut s, "delta").await;
    let first = s.inject().await.unwrap();
    add(&mut other, "written by another session").await;
    sqlite3(
        &d.db(),
        "INSERT INTO memories(content) VALUES ('written by the sqlite3 shell')",
    );
    // Let the daemon notice the external write.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while d.status()["drift"]["external_epoch"].is_null() {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    let frozen = s.inject().await.unwrap();
    assert_eq!(frozen.block, first.block);
    assert!(frozen.stats.cached);
    s.refresh().await.unwrap();
    let fresh = s.inject().await.unwrap();
    assert!(fresh.block.contains("written by another session"));
    assert!(fresh.block.contains("written by the sqlite3 shell"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_warm_inject_is_not_a_read_of_new_data() {
    let d = Daemon::start();
    let mut s = d.client().await;
    let id = add(&mut s, "epsilon").await;
    s.inject().await.unwrap();
    sqlite3(
        &d.db(),
        &format!("UPDATE memories SET content = 'epsilon, edited' WHERE id = {id}"),
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while d.status()["drift"]["external_epoch"].is_null() {
        assert!(std::time::Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    assert!(s.inject().await.unwrap().stats.cached);
    let err = s
        .update(UpdateRequest {
            id,
            content: Some("epsilon, mine".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Drift(_)), "{err:?}");
    // A rebuild reads the new data: then the write goes through.
    s.refresh().await.unwrap();
    assert!(s.inject().await.unwrap().block.contains("epsilon, edited"));
    s.update(UpdateRequest {
        id,
        content: Some("epsilon, mine".into()),
        ..Default::default()
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn session_end_drops_the_snapshot() {
    let d = Daemon::start();
    let mut s = d.client().await;
    add(&mut s, "zeta").await;
    s.inject().await.unwrap();
    drop(s);
    let mut again = d.client().await; // same agent id
    assert!(!again.inject().await.unwrap().stats.cached);
    assert_eq!(builds(&d), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn only_promoted_active_visible_memories_are_injected() {
    let d = Daemon::start();
    let mut s = d.client().await;
    let req = |f: fn(&mut AddRequest)| {
        let mut r = AddRequest::default();
        f(&mut r);
        r
    };
    add(&mut s, "visible project memory").await;
    add_with(
        &mut s,
        "a candidate",
        req(|r| r.status = Some("candidate".into())),
    )
    .await;
    add_with(
        &mut s,
        "archived one",
        req(|r| r.status = Some("archived".into())),
    )
    .await;
    add_with(
        &mut s,
        "own agent memory",
        req(|r| r.scope = Some("agent".into())),
    )
    .await;
    add_with(
        &mut s,
        "own session memory",
        req(|r| r.scope = Some("session".into())),
    )
    .await;
    let old = add(&mut s, "superseded fact").await;
    add_with(&mut s, "superseding fact", req(|_| {})).await;
    s.add(AddRequest {
        content: "the new fact".into(),
        supersedes: Some(old),
        ..Default::default()
    })
    .await
    .unwrap();
    add_with(
        &mut s,
        "expiring now",
        req(|r| r.expires = Some("1s".into())),
    )
    .await;
    let mut other_agent = Client::connect({
        let mut o = d.opts();
        o.agent_id = "someone-else".into();
        o
    })
    .await
    .unwrap();
    add_with(
        &mut other_agent,
        "their agent memory",
        req(|r| r.scope = Some("agent".into())),
    )
    .await;
    let mut other_ns = Client::connect({
        let mut o = d.opts();
        o.namespace = "elsewhere".into();
        o
    })
    .await
    .unwrap();
    add(&mut other_ns, "another namespace").await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let block = s.inject().await.unwrap().block;
    for present in [
        "visible project memory",
        "own agent memory",
        "own session memory",
        "the new fact",
    ] {
        assert!(block.contains(present), "{present} missing:\n{block}");
    }
    for absent in [
        "a candidate",
        "archived one",
        "superseded fact",
        "expiring now",
        "their agent memory",
        "another namespace",
    ] {
        assert!(!block.contains(absent), "{absent} present:\n{block}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn pinned_and_tier_come_first() {
    let d = Daemon::start();
    let mut s = d.client().await;
    add(&mut s, "plain note").await;
    add_with(
        &mut s,
        "tier one fact",
        AddRequest {
            tier: Some(1),
            category: Some("fact".into()),
            ..Default::default()
        },
    )
    .await;
    add_with(
        &mut s,
        "pinned preference",
        AddRequest {
            pinned: true,
            category: Some("preference".into()),
            ..Default::default()
        },
    )
    .await;
    let block = s.inject().await.unwrap().block;
    let pos = |t: &str| block.find(t).unwrap();
    assert!(pos("pinned preference") < pos("tier one fact"), "{block}");
    assert!(pos("tier one fact") < pos("plain note"), "{block}");
}

/// Below pinned and tier: importance, then category, then age, then id.
#[tokio::test(flavor = "multi_thread")]
async fn importance_category_age_and_id_break_ties() {
    let d = Daemon::start();
    let mut s = d.client().await;
    let with = |importance: &str, category: &str| AddRequest {
        importance: Some(importance.into()),
        category: Some(category.into()),
        ..Default::default()
    };
    add_with(&mut s, "unimportant note", with("low", "note")).await;
    add_with(&mut s, "older medium note", with("medium", "note")).await;
    add_with(&mut s, "newer medium note", with("medium", "note")).await;
    add_with(&mut s, "important note", with("high", "note")).await;
    add_with(&mut s, "medium decision", with("medium", "decision")).await;
    // Two rows written in the same millisecond: the id decides.
    sqlite3(
        &d.db(),
        "INSERT INTO memories (content, importance, created_at) VALUES \
         ('twin a', 'low', '2020-01-01T00:00:00.000Z'), \
         ('twin b', 'low', '2020-01-01T00:00:00.000Z')",
    );
    let block = s.inject().await.unwrap().block;
    let pos = |t: &str| block.find(t).unwrap_or_else(|| panic!("{t}:\n{block}"));
    let order = [
        "important note",
        "older medium note",
        "newer medium note",
        "twin a",
        "twin b",
        "unimportant note",
    ];
    for pair in order.windows(2) {
        assert!(pos(pair[0]) < pos(pair[1]), "{pair:?}:\n{block}");
    }
    // The note section, opened by the high note, comes first.
    assert!(pos("important note") < pos("medium decision"), "{block}");

    // All else equal, the category decides: a decision added after a note
    // still comes first.
    let mut o = d.opts();
    o.namespace = "ties".into();
    let mut t = Client::connect(o).await.unwrap();
    add_with(&mut t, "a note added first", with("medium", "note")).await;
    add_with(&mut t, "a decision added later", with("medium", "decision")).await;
    let block = t.inject().await.unwrap().block;
    let pos = |t: &str| block.find(t).unwrap_or_else(|| panic!("{t}:\n{block}"));
    assert!(
        pos("a decision added later") < pos("a note added first"),
        "{block}"
    );
}

#[test]
fn budget_is_respected_and_bytes_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[inject]\nbudget_chars = 600\n").unwrap();
    let mut d = Daemon::start_with(&["--config", config.to_str().unwrap()]);
    let mut script = String::new();
    for i in 0..200 {
        let cat = ["fact", "preference", "decision", "note"][i % 4];
        script.push_str(&format!(
            "add \"memory number {i} with some words to take room\" --category {cat}\n"
        ));
    }
    let out = d.cli_stdin(&["shell"], Some(script.as_bytes()));
    assert_eq!(out.code, 0);
    let inject = |d: &Daemon| -> Value {
        let (v, code) = d.json(&["inject"]);
        assert_eq!(code, 0, "{v}");
        v
    };
    let first = inject(&d);
    let block = first["block"].as_str().unwrap();
    assert!(block.chars().count() <= 600, "{}", block.chars().count());
    assert_eq!(first["stats"]["budget"], 600);
    assert_eq!(first["stats"]["eligible"], 200);
    let included = first["stats"]["included"].as_u64().unwrap();
    assert!(included > 5 && included < 200, "{included}");
    // Whole entries only: every line is a complete memory.
    for line in block.lines().filter(|l| l.starts_with("- #")) {
        assert!(line.ends_with("to take room"), "{line}");
    }
    d.terminate();
    d.spawn();
    let second = inject(&d);
    assert_eq!(second["block"], first["block"]);
    assert_eq!(second["hash"], first["hash"]);
}

/// The budget a client asks for in its handshake wins over the config's.
#[tokio::test(flavor = "multi_thread")]
async fn the_handshake_budget_is_the_sessions() {
    let d = Daemon::start();
    let mut s = d.client().await;
    for i in 0..40 {
        add(
            &mut s,
            &format!("a memory long enough to take some room, number {i}"),
        )
        .await;
    }
    let mut opts = d.opts();
    opts.budget = Some(300);
    let mut small = Client::connect(opts).await.unwrap();
    let b = small.inject().await.unwrap();
    assert_eq!(b.stats.budget, 300);
    assert!(
        b.stats.chars <= 300 && b.block.chars().count() <= 300,
        "{b:?}"
    );
    assert!(b.stats.included > 0 && b.stats.included < b.stats.eligible);
    let big = s.inject().await.unwrap();
    assert_eq!(big.stats.budget, 4_000);
    assert!(big.stats.included > b.stats.included);
    // A budget whose block could not fit in a frame is refused at the
    // handshake, clearly.
    let mut opts = d.opts();
    opts.budget = Some(u32::MAX);
    let err = Client::connect(opts).await.unwrap_err();
    assert!(
        err.to_string()
            .contains("inject budget 4294967295 is above the maximum"),
        "{err}"
    );
}

#[test]
fn cli_inject_prints_the_block() {
    let d = Daemon::start();
    d.cli(&["add", "Use tabs", "--category", "preference"]);
    let out = d.cli(&["inject"]);
    assert_eq!(out.code, 0);
    assert_eq!(out.stdout, "## Memory\n\n### Preferences\n- #1 Use tabs\n");
    let (v, _) = d.json(&["compacted"]);
    assert_eq!(v["invalidated"], true);
    let (v, _) = d.json(&["refresh"]);
    assert_eq!(v["invalidated"], true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixty_four_injectors_and_eight_writers() {
    let d = Daemon::start();
    let mut seed = d.client().await;
    for i in 0..30 {
        add(&mut seed, &format!("seed memory {i}")).await;
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..8 {
        let opts = d.opts();
        let stop = stop.clone();
        writers.push(tokio::spawn(async move {
            let mut c = Client::connect(opts).await.unwrap();
            let mut n = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let id = c
                    .add(AddRequest {
                        content: format!("writer {w} adds {n}"),
                        ..Default::default()
                    })
                    .await
                    .unwrap()
                    .id
                    .unwrap();
                // Each writer checks its own block follows its own writes
                // and stays the same until its next one.
                let block = c.inject().await.unwrap();
                assert!(
                    block.block.contains(&format!("#{id} "))
                        || block.stats.included < block.stats.eligible
                );
                let again = c.inject().await.unwrap();
                assert!(again.stats.cached);
                assert_eq!(again.block, block.block);
                n += 1;
            }
            n
        }));
    }
    // MEMD_INJECT_ROUNDS=5000 for a longer stress run.
    let rounds: u64 = std::env::var("MEMD_INJECT_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let mut injectors = Vec::new();
    for _ in 0..64 {
        let opts = d.opts();
        injectors.push(tokio::spawn(async move {
            let mut c = Client::connect(opts).await.unwrap();
            let first = c.inject().await.unwrap();
            for _ in 0..rounds {
                let again = c.inject().await.unwrap();
                assert_eq!(again.block, first.block);
                assert_eq!(again.hash, first.hash);
            }
        }));
    }
    for t in injectors {
        t.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut written = 0;
    for w in writers {
        written += w.await.unwrap();
    }
    assert!(written > 0);
    let status = d.status();
    assert!(status["stats"]["snapshot_hits"].as_u64().unwrap() >= 64 * rounds);
}
