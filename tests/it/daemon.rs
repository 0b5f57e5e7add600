//! Daemon lifecycle through the real binary: graceful shutdown under load,
//! one daemon per data dir, socket hygiene, file permissions.

use std::os::unix::fs::PermissionsExt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::common::{Daemon, memd_command};
use memd_client::{AddRequest, Client};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigterm_under_write_load_loses_no_acknowledged_write() {
    let mut d = Daemon::start();
    let stop = Arc::new(AtomicBool::new(false));
    let acks = Arc::new(AtomicUsize::new(0));
    let mut writers = Vec::new();
    for w in 0..8 {
        let opts = d.opts();
        let stop = stop.clone();
        let acks = acks.clone();
        writers.push(tokio::spawn(async move {
            let mut client = Client::connect(opts).await.unwrap();
            let mut acked = Vec::new();
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) || n < 5 {
                let content = format!("writer {w} memory {n}");
                match client
                    .add(AddRequest {
                        content: content.clone(),
                        ..Default::default()
                    })
                    .await
                {
                    Ok(r) => {
                        acked.push((r.id.unwrap(), content));
                        acks.fetch_add(1, Ordering::Relaxed);
                    }
                    // Refused or cut off by the shutdown: not acknowledged.
                    Err(_) => break,
                }
                n += 1;
            }
            acked
        }));
    }
    // Let the load run (at least 40 writes acknowledged, however busy the
    // machine), then SIGTERM in the middle of it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while acks.load(Ordering::Relaxed) < 40 {
        assert!(
            std::time::Instant::now() < deadline,
            "the write load never got going"
        );
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    let status = tokio::task::spawn_blocking({
        let pid = d.child.as_ref().unwrap().id();
        move || crate::common::signal(pid, "TERM")
    });
    status.await.unwrap();
    stop.store(true, Ordering::Relaxed);
    let mut acked = Vec::new();
    for w in writers {
        acked.extend(w.await.unwrap());
    }
    let exit = d.child.take().unwrap().wait().unwrap();
    assert!(exit.success(), "exit status {exit}:\n{}", d.log());
    assert!(!d.socket().exists(), "socket removed on shutdown");
    assert!(
        acked.len() >= 40,
        "only {} writes acknowledged",
        acked.len()
    );
    assert!(d.log().contains("memd stopped"));

    d.spawn();
    let mut client = d.client().await;
    for (id, content) in &acked {
        let m = client
            .get(*id)
            .await
            .unwrap_or_else(|e| panic!("acked {id} lost: {e}"));
        assert_eq!(&m.content, content);
    }
}

#[test]
fn second_daemon_on_the_same_data_dir_is_refused() {
    let d = Daemon::start();
    let pid = d.child.as_ref().unwrap().id();
    let out = d.daemon_command().output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let log = d.log();
    assert!(
        log.contains(&format!("another memd (pid {pid}) is already running")),
        "{log}"
    );
    // The first one still serves.
    let (v, code) = d.json(&["add", "still here"]);
    assert_eq!(code, 0, "{v}");
}

#[test]
fn a_live_socket_is_never_replaced() {
    // Two data dirs, one socket path: the second daemon must not steal it.
    let d = Daemon::start();
    let other = tempfile::tempdir().unwrap();
    let out = memd_command(other.path())
        .arg("daemon")
        .arg("--data-dir")
        .arg(other.path().join("data"))
        .arg("--socket")
        .arg(d.socket())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("already answers"), "{err}");
    let (_, code) = d.json(&["list"]);
    assert_eq!(code, 0);
}

#[test]
fn stale_socket_is_cleaned_up() {
    let mut d = Daemon::start();
    d.kill(); // SIGKILL: the socket file stays behind.
    assert!(d.socket().exists());
    let out = d.cli(&["list"]);
    assert_eq!(out.code, 5, "nothing answers on a stale socket");
    d.spawn();
    assert!(d.log().contains("removing a stale socket"), "{}", d.log());
    let (_, code) = d.json(&["add", "after a crash"]);
    assert_eq!(code, 0);
}

#[test]
fn something_else_at_the_socket_path_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let target = dir.path().join("precious.txt");
    std::fs::write(&target, "keep").unwrap();
    std::os::unix::fs::symlink(&target, data.join("memd.sock")).unwrap();
    let out = memd_command(dir.path())
        .arg("daemon")
        .arg("--data-dir")
        .arg(&data)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("is a symlink, not a socket"), "{err}");
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    assert!(data.join("memd.sock").is_symlink());
}

#[test]
fn files_are_owner_only() {
    let d = Daemon::start();
    d.cli(&["add", "x"]);
    let mode = |p: std::path::PathBuf| std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(d.data_dir()), 0o700);
    assert_eq!(mode(d.socket()), 0o600);
    assert_eq!(mode(d.db()), 0o600);
    assert_eq!(mode(d.data_dir().join("memory.db-wal")), 0o600);
    assert_eq!(mode(d.data_dir().join("memd.lock")), 0o600);
}

#[test]
fn stop_request_shuts_down_cleanly_and_checkpoints() {
    let mut d = Daemon::start();
    for i in 0..20 {
        d.cli(&["add", &format!("memory {i}")]);
    }
    let (v, code) = d.json(&["stop"]);
    assert_eq!(code, 0, "{v}");
    let exit = d.child.take().unwrap().wait().unwrap();
    assert!(exit.success());
    assert!(!d.socket().exists());
    // The WAL was checkpointed into the main file and removed.
    assert!(!d.data_dir().join("memory.db-wal").exists());
    let n = crate::common::sqlite3(&d.db(), "SELECT count(*) FROM memories");
    assert_eq!(n.trim(), "20");
}

#[test]
fn a_newer_schema_is_refused_and_the_file_kept() {
    let mut d = Daemon::start();
    d.cli(&["add", "precious"]);
    d.terminate();
    // The newest version this binary knows: the one it migrated the file to.
    let latest = crate::common::sqlite3(&d.db(), "SELECT max(version) FROM memd_schema");
    crate::common::sqlite3(
        &d.db(),
        "INSERT INTO memd_schema (version, name) VALUES (42, 'from the future')",
    );
    let out = d.daemon_command().output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        d.log().contains(&format!(
            "schema version 42, newer than the {}",
            latest.trim()
        )),
        "{}",
        d.log()
    );
    let n = crate::common::sqlite3(&d.db(), "SELECT content FROM memories");
    assert_eq!(n.trim(), "precious");
}

#[test]
fn invalid_config_stops_the_daemon_with_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(&config, "[limits]\nmax_content_bytes = \"lots\"\n").unwrap();
    let out = memd_command(dir.path())
        .arg("daemon")
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("line 2, column 21"), "{err}");
}

#[test]
fn config_limits_apply() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.toml");
    std::fs::write(
        &config,
        "[limits]\nmax_content_bytes = 20\n[memory]\ncategories = [\"note\", \"recipe\"]\n",
    )
    .unwrap();
    let d = Daemon::start_with(&["--config", config.to_str().unwrap()]);
    let (v, code) = d.json(&["add", "this text is longer than twenty bytes"]);
    assert_eq!(code, 6, "{v}");
    assert_eq!(v["reason"], "too_large");
    let (v, code) = d.json(&["add", "short", "--category", "recipe"]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = d.json(&["add", "short", "--category", "fact"]);
    assert_eq!(code, 6, "{v}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_wal_is_copied_back_when_the_writer_is_idle() {
    let d = Daemon::start();
    let mut c = d.client().await;
    let db_size = || std::fs::metadata(d.db()).unwrap().len();
    let empty = db_size();
    // About 1.5 MB of text: well over the 1,000 WAL frames that make a
    // checkpoint due.
    for i in 0..500 {
        let words: Vec<String> = (0..400).map(|w| format!("w{i}x{w}")).collect();
        c.add(AddRequest {
            content: words.join(" ").chars().take(3_000).collect(),
            ..Default::default()
        })
        .await
        .unwrap();
    }
    // Once the writer idles, the WAL's pages reach the database file.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while db_size() < empty + 1_000_000 {
        assert!(
            std::time::Instant::now() < deadline,
            "no checkpoint: memory.db is {} bytes",
            db_size()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}
