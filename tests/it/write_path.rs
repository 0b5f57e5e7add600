//! The write path under races: sessions adding near duplicates of each
//! other at the same instant, and an add racing another tool's edit of the
//! row it would merge into. Group commit puts such writes in one batch; the
//! gate's merge and the drift guard's row rule must hold inside it.

use std::sync::Arc;

use memd_client::{AddRequest, AddResult, Error};
use tokio::sync::Barrier;

use crate::common::{Daemon, sqlite3};

/// Words for sentences that share nothing with each other's rounds (no
/// digits: the gate never merges texts whose numbers differ).
const WORDS: &[&str] = &[
    "amber", "basil", "cedar", "delta", "ember", "fjord", "garnet", "harbor", "indigo", "juniper",
    "kelp", "lagoon", "maple", "nectar", "onyx", "pepper", "quartz", "raven", "saffron", "tundra",
    "umber", "violet", "willow", "xenon", "yarrow", "zephyr", "anchor", "bramble", "cobalt",
    "dune", "eagle", "falcon", "glacier", "hazel", "iris", "jasper", "kestrel", "lantern",
    "meadow", "nimbus", "orchid", "pebble", "quill", "ridge", "summit", "thistle", "upland",
    "valley", "walnut", "yonder",
];

/// A sentence of 24 words picked by `seed` (xorshift).
fn sentence(seed: u64) -> String {
    let mut x = seed | 1;
    (0..24)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            WORDS[(x % WORDS.len() as u64) as usize]
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The row an add's memory is in.
fn row_of(r: &AddResult) -> i64 {
    r.merged_into
        .or(r.id)
        .expect("an accepted add names its row")
}

/// Sessions adding near duplicates of one text at the same instant (their
/// adds in one group commit, or in consecutive ones) never leave two rows:
/// the first creates the row; each other add merges into it, or — when the
/// row was made after that session's view began — is refused by the row
/// rule (a merge changes the row; docs/drift.md) and merges once the
/// session has read the row. Every observation ends in the one row.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sessions_adding_near_duplicates_at_once_leave_one_row() {
    const SESSIONS: usize = 8;
    const ROUNDS: u64 = 12;
    let d = Daemon::start();
    let mut clients = Vec::new();
    for _ in 0..SESSIONS {
        clients.push(d.client().await);
    }
    let tails = [
        "today", "again", "still", "now", "also", "indeed", "anyway", "later",
    ];
    let mut refusals = 0;
    for round in 0..ROUNDS {
        let base = sentence(round * 7_919 + 13);
        let barrier = Arc::new(Barrier::new(SESSIONS));
        let mut tasks = Vec::new();
        for (s, mut client) in clients.drain(..).enumerate() {
            let content = format!("{base} {}", tails[s]);
            let barrier = barrier.clone();
            tasks.push(tokio::spawn(async move {
                barrier.wait().await;
                let add = |content: String| AddRequest {
                    content,
                    ..Default::default()
                };
                let (row, refused) = match client.add(add(content.clone())).await {
                    Ok(r) => (row_of(&r), false),
                    Err(Error::Drift(body)) => {
                        let row = body
                            .drift
                            .as_ref()
                            .and_then(|d| d.row.as_ref())
                            .map(|r| r.current.id)
                            .expect("a row refusal names the row");
                        // Read it, then the same add merges.
                        client.get(row).await.unwrap();
                        let r = client.add(add(content)).await.unwrap();
                        assert_eq!(r.merged_into, Some(row), "{r:?}");
                        (row, true)
                    }
                    Err(e) => panic!("{e}"),
                };
                (client, row, refused)
            }));
        }
        let mut rows = Vec::new();
        for t in tasks {
            let (client, row, refused) = t.await.unwrap();
            clients.push(client);
            rows.push(row);
            refusals += usize::from(refused);
        }
        rows.sort_unstable();
        rows.dedup();
        assert_eq!(rows.len(), 1, "round {round}: {rows:?}");
        let stored = sqlite3(
            &d.db(),
            &format!(
                "SELECT count(*), max(observation_count) FROM memories WHERE content LIKE '{base} %'"
            ),
        );
        assert_eq!(
            stored.trim(),
            format!("1|{SESSIONS}"),
            "round {round}: one row holding every observation"
        );
    }
    eprintln!("{refusals} adds refused first, then merged");
    // The adds did share commits (a batch held more than one write).
    let stats = &d.status()["stats"];
    assert!(
        stats["writes"].as_u64() > stats["commits"].as_u64(),
        "no group commit happened: {stats}"
    );
}

/// An add whose near duplicate another tool edits at the same moment (the
/// `sqlite3` shell, a separate process) obeys the drift policy: the merge
/// happens before the edit, or the add is refused (the row changed after
/// the session's view) or stored as its own row — never merged on top of
/// an edit the session did not see. The edit itself is never lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_add_racing_an_external_edit_of_its_candidate_obeys_the_drift_guard() {
    const ROUNDS: u64 = 16;
    let d = Daemon::start();
    let mut owner = d.client().await;
    let (mut merged, mut refused, mut separate) = (0, 0, 0);
    for round in 0..ROUNDS {
        let base = sentence(round * 104_729 + 7);
        let a = owner
            .add(AddRequest {
                content: base.clone(),
                ..Default::default()
            })
            .await
            .unwrap();
        let id = a.id.unwrap();
        // A new session: its view is the database as it connects.
        let mut racer = d.client().await;
        let db = d.db();
        // Still a near duplicate of the add's text: a merge into it is
        // what the row rule must judge.
        let edited = format!("{base} by hand");
        let edit_sql = format!("UPDATE memories SET content = '{edited}' WHERE id = {id}");
        let barrier = Arc::new(std::sync::Barrier::new(2));
        let edit_barrier = barrier.clone();
        let editor = std::thread::spawn(move || {
            edit_barrier.wait();
            sqlite3(&db, &edit_sql);
        });
        barrier.wait();
        // The shell takes a few ms to start: some rounds the add goes
        // first, some the edit.
        tokio::time::sleep(std::time::Duration::from_millis((round % 4) * 4)).await;
        let added = racer
            .add(AddRequest {
                content: format!("{base} again"),
                ..Default::default()
            })
            .await;
        editor.join().unwrap();
        let now = sqlite3(
            &d.db(),
            &format!("SELECT content, changed_generation FROM memories WHERE id = {id}"),
        );
        let (content, changed) = now.trim().rsplit_once('|').unwrap();
        assert_eq!(content, edited, "round {round}: the edit is kept");
        let edited_at: u64 = changed.parse().unwrap();
        match added {
            Ok(r) if r.merged_into == Some(id) => {
                merged += 1;
                assert!(
                    r.generation < edited_at,
                    "round {round}: merged at generation {} after the unseen edit at {edited_at}",
                    r.generation
                );
            }
            Ok(r) => {
                separate += 1;
                let own = r.id.unwrap();
                assert_ne!(own, id);
                let stored = sqlite3(
                    &d.db(),
                    &format!("SELECT content FROM memories WHERE id = {own}"),
                );
                assert_eq!(stored.trim(), format!("{base} again"), "round {round}");
            }
            Err(Error::Drift(body)) => {
                refused += 1;
                assert!(
                    body.message.contains(&id.to_string()),
                    "round {round}: the refusal names the row: {}",
                    body.message
                );
            }
            Err(e) => panic!("round {round}: {e}"),
        }
    }
    eprintln!("merged {merged}, refused {refused}, stored apart {separate}");
    assert_eq!(merged + refused + separate, ROUNDS);
}
