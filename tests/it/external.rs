//! External writers: the `sqlite3` shell (a separate process with none of
//! memd's code) writes the live database while the daemon runs.

use crate::common::{Daemon, ids, sqlite3};

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

/// A shell's `INSERT OR REPLACE` that clashes on `uid` (not on `id`)
/// removes the old row: its old values become a revision and nothing of it
/// stays in the index, the tags or `check`. An `INSERT OR IGNORE` over an
/// existing id keeps that row whole, tags included.
#[test]
fn shell_replace_on_uid_and_ignore_on_id_lose_nothing() {
    let d = Daemon::start();
    d.cli(&[
        "add",
        "the staging cluster runs in eu-west",
        "--tag",
        "infra",
    ]);
    d.cli(&[
        "add",
        "the release train leaves on thursdays",
        "--tag",
        "release",
    ]);
    let uid = sqlite3(&d.db(), "SELECT uid FROM memories WHERE id = 1");
    let uid = uid.trim();
    sqlite3(
        &d.db(),
        &format!(
            "INSERT OR REPLACE INTO memories(uid, content) VALUES ('{uid}', 'the staging cluster moved to us-east')"
        ),
    );
    let (v, _) = d.json(&["search", "eu-west"]);
    assert!(ids(&v, "hits").is_empty(), "{v}");
    let (v, _) = d.json(&["search", "us-east"]);
    assert_eq!(ids(&v, "hits"), vec![3]);
    let (v, code) = d.json(&["list", "--tag", "infra"]);
    assert_eq!(code, 0);
    assert!(ids(&v, "memories").is_empty(), "{v}");
    let history = sqlite3(
        &d.db(),
        "SELECT op || ':' || content FROM memory_revisions WHERE memory_id = 1",
    );
    assert_eq!(
        history.trim(),
        "replace:the staging cluster runs in eu-west"
    );
    let (check, code) = d.json(&["check"]);
    assert_eq!(code, 0, "{check}");
    assert_eq!(check["ok"], true, "{check}");
    assert_eq!(check["fts_orphans"], 0, "{check}");

    sqlite3(
        &d.db(),
        "INSERT OR IGNORE INTO memories(id, content) VALUES (2, 'never stored')",
    );
    let (got, _) = d.json(&["get", "2"]);
    assert_eq!(
        got["memory"]["content"],
        "the release train leaves on thursdays"
    );
    assert_eq!(got["memory"]["tags"], serde_json::json!(["release"]));
    let ops = sqlite3(
        &d.db(),
        "SELECT count(*) FROM memory_revisions WHERE memory_id = 2",
    );
    assert_eq!(ops.trim(), "0");
    // A plain INSERT on a taken uid fails and changes nothing.
    let uid2 = sqlite3(&d.db(), "SELECT uid FROM memories WHERE id = 2");
    let out = std::process::Command::new("sqlite3")
        .args(["-batch", "-cmd", ".timeout 5000"])
        .arg(d.db())
        .arg(format!(
            "INSERT INTO memories(uid, content) VALUES ('{}', 'clash')",
            uid2.trim()
        ))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("UNIQUE"), "{err}");
    let (got, _) = d.json(&["get", "2"]);
    assert_eq!(got["memory"]["tags"], serde_json::json!(["release"]));
    let (check, _) = d.json(&["check"]);
    assert_eq!(check["ok"], true, "{check}");
}

/// Index entries of rows that are gone (left by a tool that writes the index
/// itself, or deletes rows without the triggers) are found by `check`.
#[test]
fn check_counts_index_entries_without_a_row() {
    let d = Daemon::start();
    d.cli(&["add", "a row with its index entry"]);
    sqlite3(
        &d.db(),
        "INSERT INTO memories_fts(rowid, content) VALUES (99, 'an entry without a row')",
    );
    let (check, code) = d.json(&["check"]);
    assert_ne!(code, 0, "{check}");
    assert_eq!(check["fts_orphans"], 1, "{check}");
    assert_eq!(check["ok"], false, "{check}");
}
