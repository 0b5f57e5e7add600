//! External writers: the `sqlite3` shell (a separate process with none of
//! memd's code) writes the live database while the daemon runs.

mod common;

use common::{Daemon, ids, sqlite3};

#[test]
fn shell_insert_is_searchable_and_moves_the_generation() {
    let d = Daemon::start();
    d.cli(&["add", "written through memd"]);
    let before = d.status()["generation"].as_u64().unwrap();
    sqlite3(
        &d.db(),
        "INSERT INTO memories(content, category) VALUES ('The backup job runs at 02:00 from cron', 'fact')",
    );
    let status = d.status();
    let after = status["generation"].as_u64().unwrap();
    assert!(after > before, "generation {before} -> {after}");
    let (found, code) = d.json(&["search", "backup cron"]);
    assert_eq!(code, 0);
    assert_eq!(ids(&found, "hits"), vec![2]);
    let hit = &found["hits"][0];
    assert_eq!(hit["source"], "external");
    assert_eq!(hit["category"], "fact");
    assert_eq!(hit["namespace"], "default");
    assert_eq!(hit["rev"], 1);
    // The minimal insert works too.
    sqlite3(&d.db(), "INSERT INTO memories(content) VALUES ('x')");
    let (got, code) = d.json(&["get", "3"]);
    assert_eq!(code, 0, "{got}");
    assert_eq!(got["memory"]["category"], "note");
    // The daemon's next write notices the external change.
    d.cli(&["add", "after the external insert"]);
    let status = d.status();
    assert!(status["drift"]["external_epoch"].as_u64().unwrap() >= after);
    assert!(d.log().contains("external change detected"), "{}", d.log());
}

#[test]
fn shell_update_replace_and_delete_keep_fts_and_generation_right() {
    let d = Daemon::start();
    d.cli(&["add", "original words here", "--tag", "t"]);
    let g0 = d.status()["generation"].as_u64().unwrap();
    // Access tracking is not an edit.
    sqlite3(
        &d.db(),
        "UPDATE memories SET use_count = use_count + 5, last_used_at = 'x'",
    );
    assert_eq!(d.status()["generation"].as_u64().unwrap(), g0);
    sqlite3(
        &d.db(),
        "UPDATE memories SET content = 'replacement text' WHERE id = 1",
    );
    let g1 = d.status()["generation"].as_u64().unwrap();
    assert!(g1 > g0);
    let (got, _) = d.json(&["get", "1"]);
    assert_eq!(got["memory"]["rev"], 2);
    let (v, _) = d.json(&["search", "original"]);
    assert!(ids(&v, "hits").is_empty());
    let (v, _) = d.json(&["search", "replacement"]);
    assert_eq!(ids(&v, "hits"), vec![1]);
    sqlite3(
        &d.db(),
        "INSERT OR REPLACE INTO memories(id, content) VALUES (1, 'wholly new row')",
    );
    let (v, _) = d.json(&["search", "replacement"]);
    assert!(ids(&v, "hits").is_empty());
    let (v, _) = d.json(&["search", "wholly"]);
    assert_eq!(ids(&v, "hits"), vec![1]);
    sqlite3(&d.db(), "DELETE FROM memories WHERE id = 1");
    let (v, _) = d.json(&["search", "wholly"]);
    assert!(ids(&v, "hits").is_empty());
    let check = sqlite3(
        &d.db(),
        "INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check'); \
         SELECT count(*) FROM memory_tags; PRAGMA integrity_check;",
    );
    assert_eq!(check.trim(), "0\nok");
    // History kept every old value, external edits included.
    let ops = sqlite3(
        &d.db(),
        "SELECT group_concat(op) FROM memory_revisions WHERE memory_id = 1",
    );
    assert_eq!(ops.trim(), "update,replace,delete");
}
