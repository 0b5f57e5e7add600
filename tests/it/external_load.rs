//! External edits under load: `sqlite3` shell processes insert, update and
//! delete rows at random while sessions read and then update or forget
//! them. No session write made on a view older than an external change may
//! go through: every external commit's generation is recorded, and an
//! accepted update or forget whose read came before an external commit that
//! committed before it is a lost change. Each refusal must come with a
//! backup file that holds every row.
//!
//! `MEMD_EXTERNAL_LOAD_SECS=60 cargo test --release --test it external_load --
//! --nocapture` runs it longer and prints the counts.

use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::common::Daemon;
use memd_client::error::Error;
use memd_client::{AddRequest, Client, DriftRule, GetRequest, UpdateRequest};

/// Rows at the start, updated by both sides but never deleted; external
/// inserts add rows that both sides may also delete.
const ROWS: i64 = 24;
/// Sessions reading and writing at once.
const SESSIONS: u64 = 4;
/// How long the load runs: `MEMD_EXTERNAL_LOAD_SECS`, 3 s by default.
fn run_time() -> Duration {
    let secs = std::env::var("MEMD_EXTERNAL_LOAD_SECS")
        .ok()
        .map_or(3, |v| {
            v.parse()
                .expect("MEMD_EXTERNAL_LOAD_SECS is a number of seconds")
        });
    Duration::from_secs(secs)
}

/// xorshift64*.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// A destructive session write that went through.
struct Accepted {
    id: i64,
    /// A forget (otherwise an update).
    forget: bool,
    /// Generation of the read the write was based on.
    seen: u64,
    /// Generation right after the write.
    committed: u64,
}

#[derive(Default)]
struct Outcome {
    accepted: Vec<Accepted>,
    refused: usize,
    /// Refusals by the row rule (another writer changed the row read).
    row_refused: usize,
    /// Each refusal's seen and current generations.
    refusals: Vec<(u64, u64)>,
    vanished: usize,
    backups: HashSet<String>,
}

/// One external commit through the `sqlite3` shell: the statement, then
/// the number of rows it changed and the generation inside the same
/// transaction, so the generation is exactly this commit's.
fn external(db: &std::path::Path, statement: &str) -> Option<u64> {
    let sql = format!(
        "BEGIN IMMEDIATE; {statement}; \
         SELECT changes(), (SELECT value FROM memory_meta WHERE key = 'generation'); COMMIT;"
    );
    let out = crate::common::sqlite3(db, &sql);
    let (changed, generation) = out.trim().split_once('|').unwrap();
    (changed != "0").then(|| generation.parse().unwrap())
}

async fn session(
    d_opts: memd_client::ConnectOptions,
    n: u64,
    stop: Instant,
    max_id: Arc<AtomicI64>,
) -> Outcome {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (n + 1));
    let mut client = Client::connect(d_opts).await.unwrap();
    let mut out = Outcome::default();
    let mut op = 0;
    while Instant::now() < stop {
        op += 1;
        let id = 1 + rng.below(max_id.load(Ordering::Relaxed) as u64) as i64;
        let seen = match client
            .get_with(GetRequest {
                id,
                include_inactive: false,
            })
            .await
        {
            Ok(r) => r.generation,
            Err(Error::NotFound(_)) => continue,
            Err(e) => panic!("get {id}: {e}"),
        };
        // A think time, in which the external writer may strike.
        tokio::time::sleep(Duration::from_millis(rng.below(15))).await;
        // The seeded rows are never deleted, so a long run keeps rows to
        // fight over; inserted ones may be.
        let forget = id > ROWS && rng.below(5) == 0;
        let result = if forget {
            client.forget(id, None).await.map(|r| r.generation)
        } else {
            client
                .update(UpdateRequest {
                    id,
                    content: Some(format!("session {n} write {op} to row {id}")),
                    ..Default::default()
                })
                .await
                .map(|r| r.generation)
        };
        match result {
            Ok(committed) => out.accepted.push(Accepted {
                id,
                forget,
                seen,
                committed,
            }),
            Err(Error::Drift(body)) => {
                let drift = body.drift.expect("drift details");
                if drift.rule == DriftRule::Row {
                    // The row rule: another session (or the shell) changed
                    // this row after the read; no backup, nothing moves.
                    let row = drift.row.expect("a row refusal names the row");
                    assert_eq!(row.current.id, id);
                    assert_ne!(row.rev_seen, Some(row.rev_now));
                    out.row_refused += 1;
                    continue;
                }
                let path = std::path::Path::new(&drift.drift_backup);
                let backup: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
                // Every row: the seeded ones are never deleted.
                let ids: HashSet<i64> = backup["entries"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{backup}"))
                    .iter()
                    .map(|e| e["id"].as_i64().unwrap())
                    .collect();
                assert!((1..=ROWS).all(|i| ids.contains(&i)), "{backup}");
                assert_eq!(drift.generation_observed, seen);
                out.refusals.push((seen, drift.generation_actual));
                out.refused += 1;
                out.backups.insert(drift.drift_backup);
            }
            // Deleted by the other side after our read: nothing to lose.
            Err(Error::NotFound(_)) => out.vanished += 1,
            Err(e) => panic!("write to {id}: {e}"),
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn no_stale_write_discards_an_external_change() {
    let d = Daemon::with_config("[drift]\nbackups_keep = 100000\n");
    let mut seed = d.client().await;
    for i in 0..ROWS {
        seed.add(AddRequest {
            content: format!("shared row {i} about topic {i}"),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    let stop = Instant::now() + run_time();

    // The external writer: a new sqlite3 process per commit.
    let external_generations = Arc::new(Mutex::new(Vec::new()));
    // Only the external writer inserts: ids are handed out in order.
    let max_id = Arc::new(AtomicI64::new(ROWS));
    let writer = {
        let db = d.db();
        let generations = external_generations.clone();
        let max_id = max_id.clone();
        std::thread::spawn(move || {
            let mut rng = Rng(0xD1B5_4A32_D192_ED03);
            let mut counts = [0usize; 3];
            let mut n = 0;
            while Instant::now() < stop {
                n += 1;
                let id = 1 + rng.below(max_id.load(Ordering::Relaxed) as u64);
                let (kind, statement) = match rng.below(10) {
                    0 if id > ROWS as u64 => (2, format!("DELETE FROM memories WHERE id = {id}")),
                    1 | 2 => (
                        1,
                        format!(
                            "INSERT INTO memories(content, category) VALUES ('external insert {n}', 'fact')"
                        ),
                    ),
                    _ => (
                        0,
                        format!(
                            "UPDATE memories SET content = 'external edit {n} of row {id}' WHERE id = {id}"
                        ),
                    ),
                };
                if let Some(g) = external(&db, &statement) {
                    if kind == 1 {
                        max_id.fetch_add(1, Ordering::Relaxed);
                    }
                    counts[kind] += 1;
                    generations.lock().unwrap().push(g);
                }
                std::thread::sleep(Duration::from_millis(5 + rng.below(20)));
            }
            counts
        })
    };
    let sessions: Vec<_> = (0..SESSIONS)
        .map(|n| tokio::spawn(session(d.opts(), n, stop, max_id.clone())))
        .collect();
    let mut all = Outcome::default();
    for s in sessions {
        let o = s.await.unwrap();
        all.accepted.extend(o.accepted);
        all.refused += o.refused;
        all.row_refused += o.row_refused;
        all.refusals.extend(o.refusals);
        all.vanished += o.vanished;
        all.backups.extend(o.backups);
    }
    let [updates, inserts, deletes] = writer.join().unwrap();
    let externals = external_generations.lock().unwrap().clone();

    // The guarantee: no accepted write was based on a read older than an
    // external commit that landed before it.
    for a in &all.accepted {
        if let Some(e) = externals.iter().find(|&&e| a.seen < e && e < a.committed) {
            panic!(
                "a stale write to row {} went through: read at generation {}, an external commit at {e}, \
                 the write at {}",
                a.id, a.seen, a.committed
            );
        }
    }
    // And no refusal without an external commit after the read.
    for (seen, actual) in &all.refusals {
        assert!(
            externals.iter().any(|e| seen < e && e <= actual),
            "refused with no external commit between generations {seen} and {actual}"
        );
    }
    let forgotten = all.accepted.iter().filter(|a| a.forget).count();
    eprintln!(
        "external edits under load: {} external commits ({updates} updates, {inserts} inserts, {deletes} deletes); \
         session writes: {} accepted ({forgotten} forgets), {} refused for drift ({} backup files), \
         {} refused by the row rule, {} found deleted",
        externals.len(),
        all.accepted.len(),
        all.refused,
        all.backups.len(),
        all.row_refused,
        all.vanished
    );
    // The run must have exercised both sides.
    assert!(externals.len() >= 20, "too few external commits");
    assert!(all.refused > 0, "no refusal: the run proved nothing");
    assert!(!all.accepted.is_empty(), "no session write went through");
    // Reconcile: every row is accounted for by the seed, the external
    // inserts and deletes, and the sessions' accepted forgets; the database
    // is intact.
    let check = d.client().await.check().await.unwrap();
    assert!(check.ok, "{check:?}");
    let rows = crate::common::sqlite3(&d.db(), "SELECT count(*) FROM memories");
    assert_eq!(
        rows.trim().parse::<usize>().unwrap(),
        ROWS as usize + inserts - deletes - forgotten,
        "rows: {ROWS} seeded + {inserts} inserted - {deletes} deleted - {forgotten} forgotten"
    );
}
