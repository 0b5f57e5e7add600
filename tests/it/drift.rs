//! The drift guard through the real daemon, with the `sqlite3` shell (a
//! separate process with none of memd's code) as the external writer.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use crate::common::{Daemon, sqlite3};
use memd_client::{
    AddRequest, Client, DriftPolicy, DriftRule, Error, ListRequest, SearchRequest, UpdateRequest,
};
use serde_json::Value;

/// Polls `f` until it returns `Some`, for at most 10 s.
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Waits until the daemon has recorded an external epoch above `than`.
fn wait_for_epoch(d: &Daemon, than: u64) -> u64 {
    wait_for("the external epoch", || {
        d.status()["drift"]["external_epoch"]
            .as_u64()
            .filter(|e| *e > than)
    })
}

fn epoch(d: &Daemon) -> u64 {
    d.status()["drift"]["external_epoch"].as_u64().unwrap_or(0)
}

async fn add(c: &mut Client, text: &str) -> i64 {
    c.add(AddRequest {
        content: text.into(),
        ..Default::default()
    })
    .await
    .unwrap()
    .id
    .unwrap()
}

async fn read_all(c: &mut Client) -> usize {
    c.list(ListRequest {
        filter: Default::default(),
        limit: 1000,
        offset: 0,
    })
    .await
    .unwrap()
    .memories
    .len()
}

fn update(id: i64, content: &str) -> UpdateRequest {
    UpdateRequest {
        id,
        content: Some(content.into()),
        ..Default::default()
    }
}

fn backup_of(e: &Error) -> (PathBuf, Value) {
    let Error::Drift(body) = e else {
        panic!("expected a drift refusal, got {e:?}");
    };
    let d = body.drift.as_ref().expect("drift details");
    assert!(d.generation_actual > d.generation_observed, "{d:?}");
    assert!(!d.remediation.is_empty());
    let path = PathBuf::from(&d.drift_backup);
    assert!(path.is_absolute(), "{}", path.display());
    let doc: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    (path, doc)
}

fn entry<'a>(doc: &'a Value, content: &str) -> Option<&'a Value> {
    doc["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["content"] == content)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_row_added_externally_refuses_a_stale_update_until_read() {
    let d = Daemon::start();
    let mut s = d.client().await;
    let id = add(&mut s, "the team uses tabs").await;
    add(&mut s, "the team ships on fridays").await;
    assert_eq!(read_all(&mut s).await, 2);
    let before = epoch(&d);
    sqlite3(
        &d.db(),
        "INSERT INTO memories(content) VALUES ('added by hand in the shell')",
    );
    wait_for_epoch(&d, before);

    let err = s
        .update(update(id, "the team uses spaces"))
        .await
        .unwrap_err();
    assert_eq!(err.exit_code(), 3);
    let (path, doc) = backup_of(&err);
    assert!(
        entry(&doc, "added by hand in the shell").is_some(),
        "holds the external change"
    );
    assert_eq!(
        doc["entries"].as_array().unwrap().len(),
        3,
        "holds every row"
    );
    assert!(
        entry(&doc, "the team uses tabs").is_some(),
        "the refused update wrote nothing"
    );
    for key in ["timestamp", "generation_observed", "generation_actual"] {
        assert!(doc.get(key).is_some(), "{key}");
    }
    let e = entry(&doc, "added by hand in the shell").unwrap();
    for key in [
        "id",
        "uid",
        "tags",
        "metadata",
        "rev",
        "source",
        "created_at",
    ] {
        assert!(e.get(key).is_some(), "entry lacks {key}");
    }
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(
        std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
        0o600
    );
    let row = sqlite3(
        &d.db(),
        &format!("SELECT content, rev FROM memories WHERE id = {id}"),
    );
    assert_eq!(row.trim(), "the team uses tabs|1");
    // The refusal set seen to now: the retry after review goes through.
    let m = s
        .update(update(id, "the team uses spaces"))
        .await
        .unwrap()
        .memory;
    assert_eq!(m.content, "the team uses spaces");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_row_modified_externally_refuses_update_and_forget() {
    let d = Daemon::start();
    let mut s = d.client().await;
    let a = add(&mut s, "deploys happen from main").await;
    let b = add(&mut s, "the cache is redis").await;
    read_all(&mut s).await;
    for (i, sql) in [
        format!("UPDATE memories SET content = 'deploys happen from release' WHERE id = {a}"),
        format!("UPDATE memories SET category = 'decision' WHERE id = {a}"),
        format!("UPDATE memories SET tier = 1 WHERE id = {b}"),
    ]
    .iter()
    .enumerate()
    {
        let before = epoch(&d);
        sqlite3(&d.db(), sql);
        wait_for_epoch(&d, before);
        let err = if i % 2 == 0 {
            s.forget(b, None).await.unwrap_err()
        } else {
            s.update(update(b, "the cache is memcached"))
                .await
                .unwrap_err()
        };
        let (_, doc) = backup_of(&err);
        // The backup holds the change, and every row.
        assert_eq!(doc["entries"].as_array().unwrap().len(), 2, "{doc}");
        match i {
            0 => assert!(entry(&doc, "deploys happen from release").is_some()),
            1 => assert_eq!(
                entry(&doc, "deploys happen from release").unwrap()["category"],
                "decision"
            ),
            _ => assert_eq!(entry(&doc, "the cache is redis").unwrap()["tier"], 1),
        }
        let row = sqlite3(
            &d.db(),
            &format!("SELECT content FROM memories WHERE id = {b}"),
        );
        assert_eq!(
            row.trim(),
            "the cache is redis",
            "refused request wrote nothing"
        );
        // Reading again makes the next write go through.
        read_all(&mut s).await;
    }
    s.forget(b, None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_row_deleted_externally_refuses_a_stale_forget() {
    let d = Daemon::start();
    let mut s = d.client().await;
    let a = add(&mut s, "keep the changelog updated").await;
    let b = add(&mut s, "use conventional commits").await;
    read_all(&mut s).await;
    let before = epoch(&d);
    sqlite3(&d.db(), &format!("DELETE FROM memories WHERE id = {a}"));
    wait_for_epoch(&d, before);
    let err = s.forget(b, None).await.unwrap_err();
    let (_, doc) = backup_of(&err);
    assert!(
        entry(&doc, "keep the changelog updated").is_none(),
        "the delete is in the backup"
    );
    assert!(entry(&doc, "use conventional commits").is_some());
    assert_eq!(
        sqlite3(&d.db(), "SELECT count(*) FROM memories").trim(),
        "1"
    );
    s.forget(b, None).await.unwrap();
    assert_eq!(
        sqlite3(&d.db(), "SELECT count(*) FROM memories").trim(),
        "0"
    );
}

#[test]
fn the_cli_exits_3_with_the_structured_error() {
    let d = Daemon::start();
    let (added, _) = d.json(&["add", "the api runs on port 8080"]);
    let seen = added["generation"].as_u64().unwrap().to_string();
    let before = epoch(&d);
    sqlite3(
        &d.db(),
        "UPDATE memories SET content = 'the api runs on port 9090'",
    );
    wait_for_epoch(&d, before);
    let (err, code) = d.json(&["--seen-generation", &seen, "forget", "1"]);
    assert_eq!(code, 3, "{err}");
    assert_eq!(err["success"], false);
    assert_eq!(err["code"], "drift");
    for key in [
        "error",
        "drift_backup",
        "remediation",
        "generation_observed",
        "generation_actual",
    ] {
        assert!(err.get(key).is_some(), "{key} in {err}");
    }
    assert!(
        err["error"]
            .as_str()
            .unwrap()
            .contains(err["drift_backup"].as_str().unwrap())
    );
    let out = d.cli(&["--seen-generation", &seen, "forget", "1"]);
    assert_eq!(out.code, 3);
    assert!(out.stderr.contains("refused"), "{out:?}");
    // Without a stale seen generation the CLI's session is current.
    let (_, code) = d.json(&["forget", "1"]);
    assert_eq!(code, 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn add_after_external_drift_passes_with_notice_or_is_refused_under_strict() {
    let d = Daemon::start();
    let mut external = d.client().await;
    let mut strict = Client::connect({
        let mut o = d.opts();
        o.policy = Some(DriftPolicy::Strict);
        o
    })
    .await
    .unwrap();
    add(&mut external, "x").await;
    read_all(&mut external).await;
    read_all(&mut strict).await;
    let before = epoch(&d);
    sqlite3(&d.db(), "INSERT INTO memories(content) VALUES ('external')");
    wait_for_epoch(&d, before);
    let r = external
        .add(AddRequest {
            content: "appended on a stale view".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(r.accepted);
    let notice = r.drift.expect("drift notice on the add");
    assert!(notice.generation_actual > notice.generation_observed);
    let err = strict
        .add(AddRequest {
            content: "strict append".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Drift(_)), "{err:?}");
    // An add on a fresh view has no notice.
    read_all(&mut external).await;
    let r = external
        .add(AddRequest {
            content: "fresh".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(r.drift, None);
}

#[tokio::test(flavor = "multi_thread")]
async fn other_sessions_count_under_strict_only_and_only_in_their_namespace() {
    let d = Daemon::start();
    let connect = |policy, ns: &str| {
        let mut o = d.opts();
        o.policy = Some(policy);
        o.namespace = ns.into();
        Client::connect(o)
    };
    let mut strict = connect(DriftPolicy::Strict, "default").await.unwrap();
    let mut external = connect(DriftPolicy::External, "default").await.unwrap();
    let mut writer = connect(DriftPolicy::External, "default").await.unwrap();
    let mut elsewhere = connect(DriftPolicy::External, "other").await.unwrap();
    let id = add(&mut writer, "shared fact").await;
    read_all(&mut strict).await;
    read_all(&mut external).await;
    // Another namespace's write does not count, even under strict.
    add(&mut elsewhere, "unrelated").await;
    strict.update(update(id, "shared fact, v2")).await.unwrap();
    // Another session's write in the same namespace counts under strict...
    add(&mut writer, "another fact").await;
    let err = strict
        .update(update(id, "shared fact, v3"))
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Drift(_)), "{err:?}");
    // ...and not under external.
    external
        .update(update(id, "shared fact, v3"))
        .await
        .unwrap();
    // The strict session's own writes never count against it.
    read_all(&mut strict).await;
    for i in 0..5 {
        strict
            .update(update(id, &format!("own write {i}")))
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn one_backup_file_for_five_sessions_refused_for_one_change() {
    let d = Daemon::start();
    let mut sessions = Vec::new();
    for _ in 0..5 {
        sessions.push(d.client().await);
    }
    let id = add(&mut sessions[0], "one row").await;
    for s in &mut sessions {
        read_all(s).await;
    }
    let before = epoch(&d);
    sqlite3(
        &d.db(),
        "INSERT INTO memories(content) VALUES ('the change')",
    );
    wait_for_epoch(&d, before);
    let mut paths = Vec::new();
    for s in &mut sessions {
        let err = s.forget(id, None).await.unwrap_err();
        paths.push(backup_of(&err).0);
    }
    paths.dedup();
    assert_eq!(paths.len(), 1, "{paths:?}");
    let files: Vec<_> = std::fs::read_dir(d.data_dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("memory.bak."))
        .collect();
    assert_eq!(files.len(), 1);
    assert_eq!(d.status()["drift"]["backups_kept"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropped_trigger_is_restored_and_flagged() {
    let d = Daemon::start();
    let mut s = d.client().await;
    let id = add(&mut s, "indexed before").await;
    read_all(&mut s).await;
    let before = epoch(&d);
    // A tool that drops a trigger and writes around it.
    sqlite3(
        &d.db(),
        "BEGIN; DROP TRIGGER memories_ai; \
         INSERT INTO memories(content) VALUES ('sneaky unindexed row'); COMMIT;",
    );
    wait_for_epoch(&d, before);
    // The epoch is known as the repair starts; its commit follows.
    wait_for("the recreated trigger", || {
        let present = sqlite3(
            &d.db(),
            "SELECT count(*) FROM sqlite_master WHERE type = 'trigger' AND name = 'memories_ai'",
        );
        (present.trim() == "1").then_some(())
    });
    assert!(d.log().contains("recreated them"), "{}", d.log());
    // The index was rebuilt: the row written around the trigger is found.
    let hits = s
        .search(SearchRequest {
            query: "sneaky".into(),
            filter: Default::default(),
            limit: 5,
            mode: Default::default(),
            syntax: Default::default(),
            explain: false,
            offset: 0,
        })
        .await
        .unwrap();
    assert_eq!(hits.hits.len(), 1);
    let (report, code) = d.json(&["check"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["ok"], true);
    // Counted as drift for a session that had not read since.
    let mut stale = Client::connect({
        let mut o = d.opts();
        o.seen_generation = Some(before);
        o
    })
    .await
    .unwrap();
    assert!(matches!(
        stale.forget(id, None).await.unwrap_err(),
        Error::Drift(_)
    ));
}

/// A trigger recreated by another tool under its own name but without the
/// generation bump: the write it made unseen is still caught, the shipped
/// trigger comes back, and `check` reported the alteration.
#[tokio::test(flavor = "multi_thread")]
async fn an_altered_trigger_is_restored_and_flagged() {
    let d = Daemon::start();
    let mut s = d.client().await;
    add(&mut s, "before the edit").await;
    read_all(&mut s).await;
    let before = epoch(&d);
    sqlite3(
        &d.db(),
        "BEGIN; DROP TRIGGER memories_ai; \
         CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN \
           INSERT OR REPLACE INTO memories_fts (rowid, content, subject) \
             VALUES (NEW.id, NEW.content, NEW.subject); \
         END; \
         INSERT INTO memories(content) VALUES ('written without a generation bump'); COMMIT;",
    );
    wait_for_epoch(&d, before);
    wait_for("the shipped trigger", || {
        let sql = sqlite3(
            &d.db(),
            "SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'memories_ai'",
        );
        sql.contains("generation").then_some(())
    });
    assert!(d.log().contains("memories_ai (altered)"), "{}", d.log());
    let (report, code) = d.json(&["check"]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["missing_objects"], serde_json::json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn restore_of_an_older_copy_moves_generations_forward() {
    let d = Daemon::start();
    let mut s = d.client().await;
    add(&mut s, "in the copy").await;
    let copy = d.dir.path().join("copy.db");
    sqlite3(&d.db(), &format!(".backup '{}'", copy.display()));
    add(&mut s, "after the copy 1").await;
    let id = add(&mut s, "after the copy 2").await;
    read_all(&mut s).await;
    let g_before = d.status()["generation"].as_u64().unwrap();

    let (report, code) = d.json(&["restore", copy.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["restored"], true);
    let g_after = report["generation"].as_u64().unwrap();
    assert!(g_after > g_before, "{g_before} -> {g_after}");
    assert!(report["generation_in_file"].as_u64().unwrap() < g_before);
    assert_eq!(d.status()["generation"].as_u64().unwrap(), g_after);
    let (list, _) = d.json(&["list"]);
    assert_eq!(crate::common::ids(&list, "memories"), vec![1]);
    // A session that read before the restore must read again.
    let err = s.forget(1, None).await.unwrap_err();
    assert!(matches!(err, Error::Drift(_)), "{err:?}");
    assert!(matches!(s.forget(id, None).await, Err(Error::NotFound(_))));
    read_all(&mut s).await;
    s.forget(1, None).await.unwrap();
    // Not a memd file: refused, nothing changed.
    let junk = d.dir.path().join("junk.db");
    std::fs::write(&junk, b"not a database at all, not even close...").unwrap();
    let (err, code) = d.json(&["restore", junk.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    let (report, _) = d.json(&["check"]);
    assert_eq!(report["ok"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_renamed_over_the_live_one_is_reopened() {
    let d = Daemon::start();
    let mut s = d.client().await;
    add(&mut s, "in the old file").await;
    let new = d.data_dir().join("replacement.db");
    sqlite3(&d.db(), &format!(".backup '{}'", new.display()));
    sqlite3(
        &new,
        "INSERT INTO memories(content) VALUES ('only in the new file')",
    );
    let before = epoch(&d);
    std::fs::rename(&new, d.db()).unwrap();
    wait_for_epoch(&d, before);
    assert!(d.log().contains("database file replaced"), "{}", d.log());
    let (added, code) = d.json(&["add", "written after the swap"]);
    assert_eq!(code, 0, "{added}");
    let rows = sqlite3(&d.db(), "SELECT content FROM memories ORDER BY id");
    assert_eq!(
        rows.trim(),
        "in the old file\nonly in the new file\nwritten after the swap"
    );
    let (found, _) = d.json(&["search", "only"]);
    assert_eq!(found["count"], 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn no_false_positive_from_searches_and_own_writes() {
    let d = Daemon::start();
    let mut s = d.client().await;
    let mut ids = Vec::new();
    for i in 0..20 {
        ids.push(add(&mut s, &format!("note number {i} about builds")).await);
    }
    for i in 0..1000 {
        let hits = s
            .search(SearchRequest {
                query: format!("note {}", i % 20),
                filter: Default::default(),
                limit: 3,
                mode: Default::default(),
                syntax: Default::default(),
                explain: false,
                offset: 0,
            })
            .await
            .unwrap();
        assert!(!hits.hits.is_empty());
    }
    for i in 0..1000 {
        let id = ids[i % ids.len()];
        s.update(update(id, &format!("note {i} rewritten")))
            .await
            .unwrap_or_else(|e| panic!("own write {i} refused: {e}"));
    }
    assert_eq!(d.status()["drift"]["external_epoch"], Value::Null);
    assert_eq!(d.status()["drift"]["backups_kept"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn subscribed_sessions_get_a_push_on_external_change() {
    let d = Daemon::start();
    let mut s = d.client().await;
    s.subscribe().await.unwrap();
    sqlite3(&d.db(), "INSERT INTO memories(content) VALUES ('pushed')");
    let event = tokio::time::timeout(Duration::from_secs(10), s.next_event())
        .await
        .expect("a push within 10 s")
        .unwrap();
    let memd_client::proto::Event::Drift(e) = event else {
        panic!("expected a drift event, got {event:?}");
    };
    assert!(e.external_epoch > 0);
    assert_eq!(e.reason, "external write");
    // The session still answers requests after a push.
    assert_eq!(read_all(&mut s).await, 1);
}

#[test]
fn changes_while_the_daemon_was_down_count_as_drift() {
    let mut d = Daemon::start();
    let (added, _) = d.json(&["add", "before the restart"]);
    let seen = added["generation"].as_u64().unwrap().to_string();
    d.terminate();
    sqlite3(
        &d.db(),
        "UPDATE memories SET content = 'edited while memd was down'",
    );
    d.spawn();
    assert!(epoch(&d) > 0);
    let (err, code) = d.json(&["--seen-generation", &seen, "update", "1", "--content", "x"]);
    assert_eq!(code, 3, "{err}");
    // A clean restart with no edit is not drift.
    d.terminate();
    d.spawn();
    let (_, code) = d.json(&["update", "1", "--content", "y"]);
    assert_eq!(code, 0);
}

/// An older copy of the database (with its own matching record of the
/// daemon's generation) put in place while no daemon runs: the restarted
/// daemon moves the generation past every one it handed out, counts the swap
/// as drift, and refuses a destructive write from a session that saw a
/// newer generation than the copy holds.
#[test]
fn an_older_copy_put_in_place_while_down_never_takes_generations_back() {
    let mut d = Daemon::start();
    d.cli(&["add", "kept in the copy"]);
    let copy = d.data_dir().with_file_name("copy.db");
    let (_, code) = d.json(&["backup", copy.to_str().unwrap()]);
    assert_eq!(code, 0);
    let copied: u64 = sqlite3(
        &copy,
        "SELECT value FROM memory_meta WHERE key = 'generation'",
    )
    .trim()
    .parse()
    .unwrap();
    let (added, _) = d.json(&["add", "only in the newer file"]);
    d.cli(&["add", "also only in the newer file"]);
    let seen = added["generation"].as_u64().unwrap();
    let high = d.status()["generation"].as_u64().unwrap();
    assert!(high > copied);
    d.terminate();
    std::fs::copy(&copy, d.db()).unwrap();
    d.spawn();
    let status = d.status();
    let now = status["generation"].as_u64().unwrap();
    assert!(now > high, "generation went back: {high} -> {now}");
    assert!(epoch(&d) > high, "{status}");
    let (err, code) = d.json(&["--seen-generation", &seen.to_string(), "forget", "1"]);
    assert_eq!(code, 3, "{err}");
    let (got, code) = d.json(&["get", "1"]);
    assert_eq!(code, 0, "{got}");
}

/// The policy comes from the CLI flag, `MEMD_DRIFT_POLICY` or the config
/// file; `status` shows the daemon's and the drift bookkeeping.
#[test]
fn the_policy_comes_from_the_flag_the_environment_or_the_config() {
    let stale_add = |d: &Daemon| -> (String, u64) {
        let (added, code) = d.json(&["add", "the cache lives in redis"]);
        assert_eq!(code, 0, "{added}");
        let seen = added["generation"].as_u64().unwrap().to_string();
        let before = epoch(d);
        sqlite3(
            &d.db(),
            "INSERT INTO memories(content) VALUES ('from a shell')",
        );
        (seen, wait_for_epoch(d, before))
    };
    let d = Daemon::start();
    let (seen, _) = stale_add(&d);
    // external (the default): an add goes through and says so.
    let (v, code) = d.json(&["--seen-generation", &seen, "add", "a note"]);
    assert_eq!(code, 0, "{v}");
    assert!(v["drift"].is_object(), "{v}");
    // strict from the flag, placed after the subcommand too.
    let (v, code) = d.json(&[
        "--seen-generation",
        &seen,
        "add",
        "b note",
        "--drift-policy",
        "strict",
    ]);
    assert_eq!(code, 3, "{v}");
    // strict from the environment.
    let out = crate::common::memd_command(d.dir.path())
        .args([
            "--data-dir",
            d.data_dir().to_str().unwrap(),
            "--no-autostart",
            "--json",
        ])
        .args(["--seen-generation", &seen, "add", "c note"])
        .env("MEMD_DRIFT_POLICY", "strict")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let status = d.status();
    let drift = &status["drift"];
    assert_eq!(drift["policy"], "standard", "{status}");
    assert!(drift["last_drift_at"].is_string(), "{status}");
    assert!(status["own_generation"].as_u64().unwrap() <= status["generation"].as_u64().unwrap());

    // strict from the config file: the daemon's default for every session.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("c.toml");
    std::fs::write(&config, "[drift]\npolicy = \"strict\"\n").unwrap();
    let d = Daemon::start_with(&["--config", config.to_str().unwrap()]);
    assert_eq!(d.status()["drift"]["policy"], "strict");
    let (seen, _) = stale_add(&d);
    let (v, code) = d.json(&["--seen-generation", &seen, "add", "d note"]);
    assert_eq!(code, 3, "{v}");
    let (v, code) = d.json(&[
        "--seen-generation",
        &seen,
        "--drift-policy",
        "external",
        "add",
        "e note",
    ]);
    assert_eq!(code, 0, "{v}");
}

/// `own_generation` is the daemon's own last commit: an external change
/// moves the generation and the external epoch, not it.
#[test]
fn own_generation_is_the_daemons_last_commit() {
    let d = Daemon::start();
    let (added, _) = d.json(&["add", "written by memd"]);
    let own = added["generation"].as_u64().unwrap();
    sqlite3(
        &d.db(),
        "INSERT INTO memories(content) VALUES ('from the shell')",
    );
    let epoch = wait_for_epoch(&d, own);
    let status = d.status();
    assert_eq!(status["own_generation"].as_u64(), Some(own), "{status}");
    assert_eq!(status["generation"].as_u64(), Some(epoch), "{status}");
    let (added, _) = d.json(&["add", "written by memd again"]);
    assert_eq!(
        d.status()["own_generation"].as_u64(),
        added["generation"].as_u64()
    );
}

/// With the watcher and the idle poll off, the check at the start of every
/// write transaction still catches an external change: the write on a
/// stale view is refused.
#[test]
fn the_write_transaction_itself_catches_an_external_change() {
    let d = Daemon::with_config("[drift]\nwatch = false\npoll_ms = 0\n");
    let (added, _) = d.json(&["add", "the original text"]);
    let seen = added["generation"].as_u64().unwrap().to_string();
    sqlite3(
        &d.db(),
        "UPDATE memories SET content = 'changed by the shell' WHERE id = 1",
    );
    // Nothing has looked at the file since.
    assert_eq!(d.status()["drift"]["external_epoch"], Value::Null);
    let (err, code) = d.json(&[
        "--seen-generation",
        &seen,
        "update",
        "1",
        "--content",
        "written on a stale view",
    ]);
    assert_eq!(code, 3, "{err}");
    let (got, _) = d.json(&["get", "1"]);
    assert_eq!(got["memory"]["content"], "changed by the shell");
}

/// The client follows the session's seen generation, so a client that
/// connects again can pass it on and keep the guard.
#[tokio::test(flavor = "multi_thread")]
async fn the_client_knows_the_seen_generation_to_pass_on_when_it_connects_again() {
    let d = Daemon::start();
    let mut s = d.client().await;
    let start = s.welcome().generation;
    assert_eq!(s.seen_generation(), start);
    let id = add(&mut s, "the runners use two cores").await;
    assert_eq!(s.seen_generation(), start, "own writes do not move it");
    assert!(s.last_request_written());
    let read = s.get_with(memd_client::GetRequest {
        id,
        include_inactive: false,
    });
    let generation = read.await.unwrap().generation;
    assert!(generation > start);
    assert_eq!(s.seen_generation(), generation, "a read moves it");
    let before = epoch(&d);
    sqlite3(
        &d.db(),
        &format!("UPDATE memories SET content = 'four cores' WHERE id = {id}"),
    );
    wait_for_epoch(&d, before);

    // A new connection that passes it on keeps the guard.
    let mut opts = d.opts();
    opts.seen_generation = Some(s.seen_generation());
    drop(s);
    let mut again = Client::connect(opts).await.unwrap();
    let err = again.update(update(id, "eight cores")).await.unwrap_err();
    let Error::Drift(body) = &err else {
        panic!("{err:?}")
    };
    let actual = body.drift.as_ref().unwrap().generation_actual;
    assert_eq!(again.seen_generation(), actual, "a refusal moves it");
    // The row itself changed outside: a blind retry is refused by the row
    // rule (which moves nothing) until the session reads the row.
    let err = again.update(update(id, "eight cores")).await.unwrap_err();
    let Error::Drift(body) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(body.drift.as_ref().unwrap().rule, DriftRule::Row);
    assert_eq!(
        again.seen_generation(),
        actual,
        "a row refusal moves nothing"
    );
    again.get(id).await.unwrap();
    again.update(update(id, "eight cores")).await.unwrap();
}
