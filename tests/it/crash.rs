//! Crash safety: 16 sessions add and update while the daemon is killed with
//! SIGKILL at random moments — in the middle of group commits, which hold
//! several sessions' writes — round after round on the same data dir. After
//! each restart every acknowledged write must be there, SQLite's and the
//! search index's integrity checks must pass, the generation must not have
//! gone back, and the socket and lock must be taken over by the new daemon.
//!
//! CI runs `MEMD_CRASH_ROUNDS` rounds (default 10). The long run:
//! `MEMD_CRASH_ROUNDS=200 cargo test --release --test it crash -- --nocapture`
//! (`MEMD_CRASH_SEED` replays one sequence of kill times).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::common::Daemon;
use memd_client::{AddRequest, Client, UpdateRequest};

/// Sessions writing at once: enough that the writer's batches hold several
/// of them, so kills land in the middle of group commits.
const SESSIONS: usize = 16;

/// xorshift64*: a small deterministic generator for kill times and words.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// What one session did in one round.
#[derive(Default)]
struct Log {
    /// Acknowledged adds: id → content.
    added: Vec<(i64, String)>,
    /// Acknowledged updates: id → new content, in order.
    updated: Vec<(i64, String)>,
    /// The update that was in flight when the daemon died, if any: it may
    /// or may not have committed.
    in_flight: Option<(i64, String)>,
    /// The highest generation an acknowledged write reported.
    generation: u64,
}

/// Text unlikely to be merged with another memory by the write gate: the
/// numbers differ, so near-duplicates are never merged.
fn text(rng: &mut Rng, round: usize, session: usize, n: usize) -> String {
    const WORDS: &[&str] = &[
        "deploy", "staging", "cache", "queue", "schema", "token", "backup", "lambda", "kernel",
        "socket", "parser", "vector", "ledger", "budget", "harbor", "signal", "orbit", "meadow",
    ];
    let words: Vec<&str> = (0..6)
        .map(|_| WORDS[rng.below(WORDS.len() as u64) as usize])
        .collect();
    format!(
        "round {round} session {session} note {n} mentions {} and {}",
        words.join(" "),
        rng.next()
    )
}

async fn write_until_killed(
    opts: memd_client::ConnectOptions,
    round: usize,
    session: usize,
    seed: u64,
    acks: Arc<AtomicUsize>,
) -> Log {
    let mut rng = Rng(seed | 1);
    let mut log = Log::default();
    let Ok(mut client) = Client::connect(opts).await else {
        return log;
    };
    for n in 0.. {
        // Two adds for one update of a row this session added.
        if log.added.is_empty() || rng.below(3) != 0 {
            let content = text(&mut rng, round, session, n);
            match client
                .add(AddRequest {
                    content: content.clone(),
                    ..Default::default()
                })
                .await
            {
                Ok(r) => {
                    assert!(r.accepted && r.merged_into.is_none(), "{r:?}");
                    log.added.push((r.id.unwrap(), content));
                    acks.fetch_add(1, Ordering::Relaxed);
                    log.generation = log.generation.max(r.generation);
                }
                Err(e) => {
                    killed(e);
                    break;
                }
            }
        } else {
            let id = log.added[rng.below(log.added.len() as u64) as usize].0;
            let content = text(&mut rng, round, session, n);
            log.in_flight = Some((id, content.clone()));
            match client
                .update(UpdateRequest {
                    id,
                    content: Some(content.clone()),
                    ..Default::default()
                })
                .await
            {
                Ok(r) => {
                    log.in_flight = None;
                    log.updated.push((id, content));
                    log.generation = log.generation.max(r.generation);
                }
                Err(e) => {
                    killed(e);
                    break;
                }
            }
        }
    }
    log
}

/// A write failed: only the kill may end a session's load (the connection
/// went), never a refusal or another error the daemon answered.
fn killed(e: memd_client::Error) {
    assert!(
        matches!(
            e,
            memd_client::Error::Closed
                | memd_client::Error::Io(_)
                | memd_client::Error::Protocol(_)
                | memd_client::Error::Frame(_)
        ),
        "a write failed for another reason than the kill: {e}"
    );
}

/// Every row as the `sqlite3` shell sees it: id → content.
fn rows(d: &Daemon) -> HashMap<i64, String> {
    crate::common::sqlite3(&d.db(), "SELECT id, content FROM memories")
        .lines()
        .map(|l| {
            let (id, content) = l.split_once('|').unwrap();
            (id.parse().unwrap(), content.to_string())
        })
        .collect()
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().map(|v| {
        v.parse()
            .unwrap_or_else(|_| panic!("{name} must be a number, got {v:?}"))
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_kill_9() {
    let rounds = env_u64("MEMD_CRASH_ROUNDS").unwrap_or(10) as usize;
    let seed = env_u64("MEMD_CRASH_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64
    });
    eprintln!("crash harness: {rounds} rounds, MEMD_CRASH_SEED={seed}");
    let mut rng = Rng(seed | 1);
    let mut d = Daemon::start();
    // id → the content an acknowledged write left, and the content of an
    // update that was in flight at the kill (either may be there).
    let mut expected: HashMap<i64, (String, Option<String>)> = HashMap::new();
    let mut highest_generation = 0u64;
    let mut acknowledged = 0usize;
    let mut updates = 0usize;
    // Writes that shared a commit with another (writes minus commits, seen
    // just before each kill).
    let mut shared_commits = 0u64;
    for round in 0..rounds {
        let acks = Arc::new(AtomicUsize::new(0));
        let writers: Vec<_> = (0..SESSIONS)
            .map(|s| {
                let seed = rng.next();
                tokio::spawn(write_until_killed(d.opts(), round, s, seed, acks.clone()))
            })
            .collect();
        // Kill at a random moment of the load: 0 to 400 ms after the first
        // acknowledged write (a busy machine may take a while to get there).
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while acks.load(Ordering::Relaxed) == 0 {
            assert!(
                std::time::Instant::now() < deadline,
                "round {round}: no write acknowledged"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tokio::time::sleep(Duration::from_millis(rng.below(400))).await;
        if let Ok(mut c) = Client::connect(d.opts()).await
            && let Ok(status) = c.status().await
        {
            let n = |k: &str| status["stats"][k].as_u64().unwrap_or(0);
            shared_commits += n("writes").saturating_sub(n("commits"));
        }
        d.kill();
        let mut logs = Vec::new();
        for w in writers {
            logs.push(w.await.unwrap());
        }
        for log in &logs {
            acknowledged += log.added.len() + log.updated.len();
            updates += log.updated.len();
            highest_generation = highest_generation.max(log.generation);
            for (id, content) in &log.added {
                assert!(
                    expected.insert(*id, (content.clone(), None)).is_none(),
                    "id {id} acknowledged twice"
                );
            }
            for (id, content) in &log.updated {
                expected.insert(*id, (content.clone(), None));
            }
            if let Some((id, content)) = &log.in_flight {
                expected.get_mut(id).unwrap().1 = Some(content.clone());
            }
        }

        // The new daemon takes over the stale socket and the lock.
        d.spawn();
        assert!(
            d.log().contains("removing a stale socket"),
            "round {round}: {}",
            d.log()
        );
        let mut client = d.client().await;
        let status = client.status().await.unwrap();
        let generation = status["generation"].as_u64().unwrap();
        assert!(
            generation >= highest_generation,
            "round {round}: generation went back from {highest_generation} to {generation}"
        );
        let on_disk = crate::common::sqlite3(
            &d.db(),
            "SELECT value FROM memory_meta WHERE key = 'generation'",
        );
        assert_eq!(on_disk.trim().parse::<u64>().unwrap(), generation);
        highest_generation = generation;
        let check = client.check().await.unwrap();
        assert!(check.ok, "round {round}: {check:?}");

        let now = rows(&d);
        for (id, (content, maybe)) in &mut expected {
            let found = now
                .get(id)
                .unwrap_or_else(|| panic!("round {round}: acknowledged memory {id} is gone"));
            if found != content {
                assert_eq!(
                    Some(found),
                    maybe.as_ref(),
                    "round {round}: memory {id} lost its acknowledged content"
                );
                *content = found.clone();
            }
            *maybe = None;
        }
        drop(client);
    }
    assert!(
        updates > 0,
        "no update was acknowledged: the harness tested adds only"
    );
    assert!(
        shared_commits > 0,
        "no commit held more than one write: the kills never met a group commit"
    );
    let status = d.status();
    eprintln!(
        "crash harness: {rounds} rounds, {acknowledged} acknowledged writes ({updates} updates), {} memories verified, generation {}",
        expected.len(),
        status["generation"]
    );
}
