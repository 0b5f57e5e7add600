//! Ways in and out: export, import, online backup, the MEMORY.md sidecar.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::common::{Daemon, sqlite3};
use serde_json::{Value, json};

fn mode(p: &std::path::Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

fn export(d: &Daemon, args: &[&str]) -> Value {
    let path = d.dir.path().join(format!("export-{}.json", rand_suffix()));
    let mut all = vec!["export", "--out", path.to_str().unwrap()];
    all.extend_from_slice(args);
    let (v, code) = d.json(&all);
    assert_eq!(code, 0, "{v}");
    assert_eq!(mode(&path), 0o600);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

fn populate(d: &Daemon) {
    d.json(&[
        "add",
        "the first answer",
        "--tag",
        "A",
        "--tag",
        "b",
        "--meta",
        "k=1",
    ]);
    d.json(&[
        "add",
        "the better answer",
        "--supersedes",
        "1",
        "--category",
        "fact",
    ]);
    d.json(&[
        "add",
        "a pinned preference",
        "--category",
        "preference",
        "--pin",
        "--tier",
        "1",
    ]);
    d.json(&["--namespace", "other", "add", "in another namespace"]);
    d.json(&["update", "3", "--importance", "high"]);
    d.json(&["confirm", "2"]);
    // Age one row so timestamps are not all alike.
    sqlite3(
        &d.db(),
        "UPDATE memories SET created_at = '2025-03-04T05:06:07.089Z' WHERE id = 1",
    );
}

#[test]
fn export_import_round_trip_gives_identical_rows() {
    let a = Daemon::start();
    populate(&a);
    let out = export(&a, &["--all-namespaces"]);
    assert_eq!(out["entries"].as_array().unwrap().len(), 4);
    for key in ["timestamp", "generation", "entries"] {
        assert!(out.get(key).is_some(), "{key}");
    }
    let file = a.dir.path().join("all.json");
    std::fs::write(&file, serde_json::to_vec(&out).unwrap()).unwrap();

    let b = Daemon::start();
    let (report, code) = b.json(&["import", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["inserted"], 4);
    assert_eq!(report["links"], 1);
    let back = export(&b, &["--all-namespaces"]);
    // `changed_generation` counts in the database that holds the row: it
    // is the only column that differs.
    let local = |v: &Value| {
        let mut v = v.clone();
        for e in v.as_array_mut().unwrap() {
            assert!(e["changed_generation"].as_i64().unwrap() > 0, "{e}");
            e.as_object_mut().unwrap().remove("changed_generation");
        }
        v
    };
    assert_eq!(
        local(&back["entries"]),
        local(&out["entries"]),
        "every column of every row"
    );
    // Twice adds nothing.
    let (report, _) = b.json(&["import", file.to_str().unwrap()]);
    assert_eq!(report["inserted"], 0);
    assert_eq!(report["skipped"], 4);
    assert_eq!(b.status()["counts"]["memories"], 4);
    // The link works as a link.
    let (h, _) = b.json(&["history", "2"]);
    assert_eq!(crate::common::ids(&h, "chain"), vec![1, 2]);
}

#[test]
fn identical_memories_with_other_uids_both_survive() {
    let d = Daemon::start();
    let file = d.dir.path().join("twins.json");
    let entry = |uid: &str| json!({"uid": uid, "content": "the same words", "namespace": "default", "tags": ["x"]});
    let doc = json!({"entries": [entry("u1"), entry("u2"), {"content": "no uid"}]});
    std::fs::write(&file, doc.to_string()).unwrap();
    let (report, code) = d.json(&["import", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["inserted"], 2);
    assert_eq!(report["invalid"], 1);
    assert!(report["errors"][0].as_str().unwrap().contains("no uid"));
    let (l, _) = d.json(&["list"]);
    assert_eq!(l["count"], 2);
}

/// An entry without a namespace goes to the importing session's; a replace
/// never takes a row of another namespace than the file names.
#[test]
fn imports_stay_in_the_namespaces_they_name() {
    let d = Daemon::start();
    let file = d.dir.path().join("ns.json");
    let doc = json!({"entries": [{"uid": "n1", "content": "no namespace given"}]});
    std::fs::write(&file, doc.to_string()).unwrap();
    let (report, code) = d.json(&["--namespace", "team", "import", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["inserted"], 1);
    let (l, _) = d.json(&["--namespace", "team", "list"]);
    assert_eq!(l["count"], 1, "{l}");
    let (l, _) = d.json(&["list"]);
    assert_eq!(l["count"], 0, "{l}");
    // The same uid claimed for another namespace: skipped, even with
    // --replace; the row in `team` is untouched.
    let doc = json!({"entries": [{"uid": "n1", "content": "hijacked", "namespace": "default"}]});
    std::fs::write(&file, doc.to_string()).unwrap();
    let (report, code) = d.json(&["import", "--replace", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(
        (report["replaced"].clone(), report["skipped"].clone()),
        (json!(0), json!(1))
    );
    let (l, _) = d.json(&["--namespace", "team", "list"]);
    assert_eq!(l["memories"][0]["content"], "no namespace given");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_drift_backup_imports_and_replace_is_guarded() {
    let d = Daemon::start();
    let mut s = d.client().await;
    for i in 0..3 {
        s.add(memd_client::AddRequest {
            content: format!("row {i}"),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    s.list(memd_client::ListRequest {
        filter: Default::default(),
        limit: 10,
        offset: 0,
    })
    .await
    .unwrap();
    sqlite3(
        &d.db(),
        "UPDATE memories SET content = 'edited outside' WHERE id = 1",
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while d.status()["drift"]["external_epoch"].is_null() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(5));
    }
    let err = s.forget(2, None).await.unwrap_err();
    let memd_client::Error::Drift(body) = &err else {
        panic!("{err:?}")
    };
    let backup = body.drift.as_ref().unwrap().drift_backup.clone();
    // The backup restores what the refused session meant to keep.
    sqlite3(&d.db(), "DELETE FROM memories WHERE id = 3");
    let (report, code) = d.json(&["import", &backup]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["inserted"], 1, "{report}");
    assert_eq!(report["skipped"], 2);
    // --replace overwrites, and is refused on a stale view.
    let file = std::fs::File::open(&backup).unwrap();
    let err = s.import(file, true).await.unwrap_err();
    assert!(matches!(err, memd_client::Error::Drift(_)), "{err:?}");
    let (report, code) = d.json(&["import", "--replace", &backup]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["replaced"], 3);
    let (got, _) = d.json(&["get", "1"]);
    assert_eq!(got["memory"]["content"], "edited outside");
}

#[test]
fn markdown_export_is_a_readable_bootstrap() {
    let d = Daemon::start();
    populate(&d);
    let out = d.cli(&["export", "--format", "markdown"]);
    assert_eq!(out.code, 0, "{out:?}");
    let md = out.stdout;
    assert!(md.starts_with("# Memory\n"), "{md}");
    assert!(md.contains("## Namespace `default`"));
    assert!(
        md.contains("### Preference\n\n- a pinned preference (#3)"),
        "{md}"
    );
    assert!(md.contains("the better answer"));
    assert!(
        !md.contains("the first answer"),
        "superseded rows are left out"
    );
    assert!(
        !md.contains("another namespace"),
        "only the session's namespace"
    );
    let out = d.cli(&["export", "--format", "markdown", "--all-namespaces"]);
    assert!(out.stdout.contains("## Namespace `other`"));
    // Under --json, one object on one line that carries the text.
    let out = d.cli(&["--json", "export", "--format", "markdown"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    let v = out.json();
    assert_eq!(v["success"], true);
    assert!(
        v["markdown"].as_str().unwrap().starts_with("# Memory\n"),
        "{v}"
    );
    let (v, code) = d.json(&["export", "--format", "xml"]);
    assert_eq!(code, 2, "{v}");
}

#[test]
fn export_to_stdout_is_the_document() {
    let d = Daemon::start();
    populate(&d);
    let out = d.cli(&["--json", "export"]);
    assert_eq!(out.code, 0);
    let v = out.json();
    assert_eq!(v["entries"].as_array().unwrap().len(), 3);
    assert_eq!(v["namespaces"], json!(["default"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn backup_under_write_load_is_consistent() {
    let d = Daemon::start();
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..4 {
        let (opts, stop) = (d.opts(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut c = memd_client::Client::connect(opts).await.unwrap();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                c.add(memd_client::AddRequest {
                    content: format!("writer {w} row {n}"),
                    ..Default::default()
                })
                .await
                .unwrap();
                n += 1;
            }
            n
        }));
    }
    // The backup starts once writes are committing.
    let mut reader = d.client().await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while reader
        .list(memd_client::proto::ListRequest {
            filter: memd_client::proto::Filter::default(),
            limit: 1,
            offset: 0,
        })
        .await
        .unwrap()
        .memories
        .is_empty()
    {
        assert!(std::time::Instant::now() < deadline, "no write committed");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let path = d.dir.path().join("backup.db");
    let out = tokio::task::spawn_blocking({
        let path = path.clone();
        let data = d.data_dir();
        let home = d.dir.path().to_path_buf();
        move || {
            crate::common::memd_command(&home)
                .arg("--data-dir")
                .arg(&data)
                .args(["--json", "backup"])
                .arg(&path)
                .output()
                .unwrap()
        }
    })
    .await
    .unwrap();
    stop.store(true, Ordering::Relaxed);
    let mut written = 0;
    for w in writers {
        written += w.await.unwrap();
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(mode(&path), 0o600);
    let check = sqlite3(
        &path,
        "PRAGMA integrity_check; SELECT count(*) FROM memories;",
    );
    let mut lines = check.lines();
    assert_eq!(lines.next(), Some("ok"));
    let rows: u64 = lines.next().unwrap().parse().unwrap();
    assert!(rows > 0 && rows <= written, "{rows} of {written}");
    let fts = sqlite3(
        &path,
        "INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check');",
    );
    assert_eq!(fts.trim(), "");
    // It restores.
    let (r, code) = d.json(&["restore", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{r}");
}

#[test]
fn the_sidecar_is_never_seen_half_written() {
    let dir = tempfile::tempdir().unwrap();
    let sidecar = dir.path().join("MEMORY.md");
    let config = dir.path().join("c.toml");
    std::fs::write(
        &config,
        format!(
            "[sidecar]\ndebounce_ms = 20\n[sidecar.files]\ndefault = \"{}\"\n",
            sidecar.display()
        ),
    )
    .unwrap();
    let d = Daemon::start_with(&["--config", config.to_str().unwrap()]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !sidecar.exists() {
        assert!(Instant::now() < deadline, "no sidecar");
        std::thread::sleep(Duration::from_millis(10));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let (path, stop) = (sidecar.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !stop.load(Ordering::Relaxed) {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(text.starts_with("# Memory\n"), "torn start: {text:?}");
                assert!(
                    text.ends_with("<!-- end of memd memory -->\n"),
                    "torn end: {text:?}"
                );
                reads += 1;
            }
            reads
        })
    };
    let mut script = String::new();
    for i in 0..150 {
        script.push_str(&format!("add \"sidecar memory number {i}\"\n"));
    }
    d.cli_stdin(&["shell"], Some(script.as_bytes()));
    // The last rewrite shows the last memory.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(&sidecar)
        .unwrap()
        .contains("sidecar memory number 149")
    {
        assert!(Instant::now() < deadline, "the sidecar did not catch up");
        std::thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    let reads = reader.join().unwrap();
    assert!(reads > 10, "{reads}");
    assert_eq!(mode(&sidecar), 0o600);
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty());
}

/// An export or backup that fails leaves the file it would have replaced as
/// it was, and no partial file beside it.
#[test]
fn a_failed_download_keeps_the_existing_file() {
    let d = Daemon::start();
    d.cli(&["add", "one memory"]);
    let dir = d.data_dir().with_file_name("out");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("export.json");
    std::fs::write(&path, "the previous export").unwrap();
    let (err, code) = d.json(&["export", "--format", "xml", "--out", path.to_str().unwrap()]);
    assert_ne!(code, 0, "{err}");
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "the previous export"
    );
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().collect();
    assert_eq!(left.len(), 1, "{left:?}");
    // A good export replaces it, mode 0600.
    let (v, code) = d.json(&["export", "--out", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["entries"].as_array().unwrap().len(), 1);
    assert_eq!(mode(&path), 0o600);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
}
