//! Threads through the real binary: `memd ingest` stores a transcript one
//! memory per turn in its thread; search reads each turn with its
//! neighbours and its date; the neighbours' text follows adds, edits and
//! deletes, memd's own and the `sqlite3` shell's.

use crate::common::{Daemon, ids, sqlite3};
use serde_json::Value;

fn search(d: &Daemon, query: &str) -> Vec<i64> {
    let (v, code) = d.json(&["search", query]);
    assert_eq!(code, 0, "{v}");
    ids(&v, "hits")
}

fn ingest(d: &Daemon, name: &str, text: &str) -> Value {
    let path = d.dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    let (v, code) = d.json(&["ingest", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    v
}

const BAKING: &str = r#"{"thread": "s1", "speaker": "Gina", "text": "Look what came out of my oven this morning!", "time": "2023-05-08T09:30", "id": "D1:1"}
{"thread": "s1", "speaker": "Hugo", "text": "That sourdough looks amazing.", "time": "2023-05-08T09:30", "id": "D1:2"}
{"thread": "s2", "speaker": "Gina", "text": "The marathon starts at nine.", "time": "2023-06-20T08:00", "id": "D2:1"}
"#;

#[test]
fn ingest_stores_each_turn_in_its_thread_once() {
    let d = Daemon::start();
    let v = ingest(&d, "talk.jsonl", BAKING);
    assert_eq!(
        (v["turns"].as_u64(), v["added"].as_u64()),
        (Some(3), Some(3)),
        "{v}"
    );
    let (m, _) = d.json(&["get", "2"]);
    let m = &m["memory"];
    assert_eq!(m["content"], "Hugo: That sourdough looks amazing.");
    assert_eq!(
        (m["thread"].as_str(), m["thread_pos"].as_i64()),
        (Some("s1"), Some(2))
    );
    assert_eq!(m["occurred_at"], "2023-05-08T09:30:00.000Z");
    assert_eq!(m["category"], "episode");
    assert_eq!(m["metadata"]["turn"], "D1:2");
    // Again: every thread position holds its turn already.
    let v = ingest(&d, "talk.jsonl", BAKING);
    assert_eq!(
        (v["added"].as_u64(), v["existing"].as_u64()),
        (Some(0), Some(3)),
        "{v}"
    );
    let (list, _) = d.json(&["list", "--source", "ingest"]);
    assert_eq!(ids(&list, "memories").len(), 3);
}

fn forgotten(v: &Value) -> Vec<i64> {
    v["forgotten"]
        .as_array()
        .unwrap_or_else(|| panic!("no forgotten in {v}"))
        .iter()
        .map(|i| i.as_i64().unwrap())
        .collect()
}

fn listed(d: &Daemon, args: &[&str]) -> Vec<i64> {
    let mut all = vec!["list"];
    all.extend_from_slice(args);
    let (v, code) = d.json(&all);
    assert_eq!(code, 0, "{v}");
    let mut got = ids(&v, "memories");
    got.sort_unstable();
    got
}

#[test]
fn ingested_turns_are_a_kind_of_their_own_and_leave_the_notes_listed() {
    let d = Daemon::start();
    let (note, _) = d.json(&["add", "The oven runs at 250 degrees for sourdough"]);
    let note = note["id"].as_i64().unwrap();
    ingest(&d, "talk.jsonl", BAKING);
    let (m, _) = d.json(&["get", "2"]);
    let m = &m["memory"];
    assert_eq!(m["source"], "ingest", "{m}");
    assert_eq!(m["provenance"]["trust"], "low", "{m}");
    assert_eq!(m["provenance"]["sources"][0]["via"], "ingest", "{m}");
    // Newest first, the three turns would come before the note: a plain
    // list leaves them out, a source brings them back.
    assert_eq!(listed(&d, &[]), [note]);
    assert_eq!(listed(&d, &["--limit", "1"]), [note]);
    assert_eq!(listed(&d, &["--source", "ingest"]), [2, 3, 4]);
    assert_eq!(listed(&d, &["--source", "!ingest"]), [note]);
    assert_eq!(listed(&d, &["--source", "any"]), [note, 2, 3, 4]);
    // The search still finds both kinds.
    assert!(search(&d, "sourdough").contains(&note));
    assert!(search(&d, "sourdough").contains(&3));
}

#[test]
fn forget_thread_removes_exactly_one_thread() {
    let d = Daemon::start();
    let (note, _) = d.json(&["add", "The marathon route passes the bakery"]);
    let note = note["id"].as_i64().unwrap();
    ingest(&d, "talk.jsonl", BAKING);
    // The same transcript in another namespace: its thread `s1` stays.
    let path = d.dir.path().join("talk.jsonl");
    let (v, code) = d.json(&["--namespace", "other", "ingest", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = d.json(&["forget", "--thread", "s1", "--dry-run"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(forgotten(&v), [2, 3]);
    assert_eq!(listed(&d, &["--source", "any"]), [note, 2, 3, 4]);
    let (v, code) = d.json(&["forget", "--thread", "s1"]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(
        (forgotten(&v), v["dry_run"].as_bool()),
        (vec![2, 3], Some(false))
    );
    assert_eq!(listed(&d, &["--source", "any"]), [note, 4]);
    assert_eq!(
        listed(&d, &["--namespace", "other", "--source", "any"]),
        [5, 6, 7]
    );
    // By source: the rest of the namespace's ingested turns, not the note.
    let (v, _) = d.json(&["forget", "--source", "ingest"]);
    assert_eq!(forgotten(&v), [4]);
    assert_eq!(listed(&d, &["--source", "any"]), [note]);
    // Neither a thread nor a source: a usage error, nothing deleted.
    let (_, code) = d.json(&["forget"]);
    assert_ne!(code, 0);
    assert_eq!(
        listed(&d, &["--namespace", "other", "--source", "any"]),
        [5, 6, 7]
    );
}

#[test]
fn a_turn_is_found_by_its_neighbours_words_after_the_turn_that_says_them() {
    let d = Daemon::start();
    ingest(&d, "talk.jsonl", BAKING);
    // A memory with no thread has no neighbours.
    let (v, code) = d.json(&["add", "A sourdough starter needs feeding daily"]);
    assert_eq!(code, 0, "{v}");
    let lone = v["id"].as_i64().unwrap();
    let hits = search(&d, "who baked the sourdough");
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert!(
        hits.contains(&1),
        "Gina's turn, through Hugo's words: {hits:?}"
    );
    let pos = |id| hits.iter().position(|h| *h == id).unwrap();
    assert!(pos(2) < pos(1) && pos(lone) < pos(1), "{hits:?}");
    // The other thread is not a neighbour.
    assert!(!search(&d, "marathon").contains(&1));
}

#[test]
fn the_date_of_a_turn_is_searchable_as_words() {
    let d = Daemon::start();
    ingest(&d, "talk.jsonl", BAKING);
    let (v, code) = d.json(&["add", "Dentist appointment moved", "--at", "2024-02-29"]);
    assert_eq!(code, 0, "{v}");
    let hits = search(&d, "June 2023");
    assert_eq!(hits.first(), Some(&3), "{hits:?}");
    assert_eq!(search(&d, "29 February"), vec![4]);
    // A bad date is a clear error, nothing stored.
    let (v, code) = d.json(&["add", "later", "--at", "8 May 2023"]);
    assert_eq!(code, 2, "{v}");
    let (list, _) = d.json(&["list", "--source", "any"]);
    assert_eq!(ids(&list, "memories").len(), 4);
}

#[test]
fn neighbours_follow_adds_edits_deletes_and_the_sqlite3_shell() {
    let d = Daemon::start();
    ingest(&d, "talk.jsonl", BAKING);
    // An add at the end of the thread is the last turn's neighbour.
    let (v, code) = d.json(&["add", "Ivan: the crumb is perfect", "--thread", "s1"]);
    assert_eq!(code, 0, "{v}");
    let ivan = v["id"].as_i64().unwrap();
    let (m, _) = d.json(&["get", &ivan.to_string()]);
    assert_eq!(m["memory"]["thread_pos"], 3);
    assert!(search(&d, "crumb").contains(&2));
    // An edit of a neighbour moves the words.
    let (v, code) = d.json(&[
        "update",
        "2",
        "--content",
        "Hugo: That rye looks amazing.",
        "--expect-rev",
        "1",
    ]);
    assert_eq!(code, 0, "{v}");
    assert!(!search(&d, "sourdough").contains(&1));
    assert!(search(&d, "rye").contains(&1));
    // A deleted neighbour's words leave the turns around it.
    let (v, code) = d.json(&["forget", &ivan.to_string()]);
    assert_eq!(code, 0, "{v}");
    assert!(search(&d, "crumb").is_empty());
    // The sqlite3 shell's rows are threaded by the same triggers.
    sqlite3(
        &d.db(),
        "INSERT INTO memories(content, thread, thread_pos) VALUES ('Jo: baguettes next time', 's1', 4)",
    );
    // Its neighbours are the two turns before it (Ivan's place is empty).
    let hits = search(&d, "baguettes");
    assert_eq!(hits.len(), 3, "{hits:?}");
    assert!(hits.contains(&1) && hits.contains(&2), "{hits:?}");
    let (check, _) = d.json(&["check"]);
    assert_eq!(check["ok"], true, "{check}");
}

#[test]
fn a_claude_code_transcript_keeps_the_conversation_and_the_gate_still_applies() {
    let d = Daemon::start();
    let text = r#"{"type":"user","uuid":"u1","sessionId":"abc","timestamp":"2026-11-01T10:00:00Z","message":{"role":"user","content":"Where do the deploy scripts live?"}}
{"type":"assistant","uuid":"a1","sessionId":"abc","timestamp":"2026-11-01T10:00:02Z","message":{"role":"assistant","content":[{"type":"text","text":"They live in ops/deploy.sh."},{"type":"tool_use","id":"t1","name":"Bash","input":{"command":"ls ops"}}]}}
{"type":"user","uuid":"u2","sessionId":"abc","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"deploy.sh"}]}}
{"type":"user","uuid":"u3","sessionId":"abc","timestamp":"2026-11-01T10:01:00Z","message":{"role":"user","content":"my key is AKIAIOSFODNN7EXAMPLE, keep it"}}
not json
"#;
    let v = ingest(&d, "session.jsonl", text);
    assert_eq!(v["added"], 2, "{v}");
    assert_eq!(v["rejected"], 1, "the secret: {v}");
    assert_eq!(
        (v["skipped"].as_u64(), v["invalid"].as_u64()),
        (Some(1), Some(1)),
        "{v}"
    );
    let (m, _) = d.json(&["get", "2"]);
    assert_eq!(
        m["memory"]["content"],
        "Assistant: They live in ops/deploy.sh."
    );
    assert_eq!(m["memory"]["thread"], "abc");
    let hits = search(&d, "where do the deploy scripts live");
    assert_eq!(hits.first(), Some(&1), "{hits:?}");
}

/// Feedback lifts a match that shares words with the best hits over one
/// that does not, and never brings in a row that says no query word.
#[test]
fn feedback_reorders_matches_but_adds_no_row_without_a_query_word() {
    let rows = [
        "garden tomatoes basil",
        "garden basil tomatoes",
        "garden fence paint shed",
        "garden tomatoes basil harvest with friends today",
        "tomatoes basil soup recipe",
    ];
    let order = |weight: f64| {
        let d = Daemon::with_config(&format!(
            "[search]\nfeedback_docs = 2\nfeedback_weight = {weight:?}\n"
        ));
        for text in rows {
            let (v, code) = d.json(&["add", text]);
            assert_eq!(code, 0, "{v}");
        }
        for n in 0..10 {
            let (v, code) = d.json(&["add", &format!("filler number {n} about the weather")]);
            assert_eq!(code, 0, "{v}");
        }
        search(&d, "garden")
    };
    let plain = order(0.0);
    assert_eq!(
        &plain[2..],
        [3, 4],
        "by BM25 alone, the longest row last: {plain:?}"
    );
    let fed = order(0.5);
    assert_eq!(fed.len(), 4, "the soup says no query word: {fed:?}");
    assert_eq!(
        &fed[2..],
        [4, 3],
        "the fence shares no word with the best hits: {fed:?}"
    );
}
