//! Storage faults and file security through the real daemon: a disk that
//! fills up, a database the daemon's user may not write, the integrity
//! check between writes, permissions of every file memd writes, symlinks
//! planted where memd writes, and logs that never carry memory content.
//!
//! The disk-full test mounts a small tmpfs and the read-only test runs the
//! daemon as `nobody` (root ignores permission bits): both need root. On a
//! machine without it they say so and skip; CI (`MEMD_REQUIRE_TOOLS=1`)
//! runs them.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::{Daemon, sqlite3};
use memd_client::AddRequest;
use memd_client::error::Error;

/// Whether a test that needs root may run; panics in CI when it cannot.
fn have_root(test: &str) -> bool {
    if memd_euid() == 0 {
        return true;
    }
    assert!(
        std::env::var_os("MEMD_REQUIRE_TOOLS").is_none(),
        "{test} needs root and MEMD_REQUIRE_TOOLS is set"
    );
    eprintln!("SKIPPED: {test} needs root");
    false
}

fn memd_euid() -> u32 {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

fn add(text: &str) -> AddRequest {
    AddRequest {
        content: text.into(),
        ..Default::default()
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

#[tokio::test(flavor = "multi_thread")]
async fn the_integrity_check_stays_clean_between_writes() {
    let d = Daemon::start();
    let mut c = d.client().await;
    for i in 0..10 {
        c.add(add(&format!(
            "memory {i} about the release train and its cars"
        )))
        .await
        .unwrap();
        c.search_text("release", 5).await.unwrap();
        let check = c.check().await.unwrap();
        assert!(check.ok, "after write {i}: {check:?}");
    }
}

/// A tmpfs of `size` mounted at `at`, unmounted on drop.
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(at: &Path, size: &str) -> Mount {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0700"),
                "tmpfs",
            ])
            .arg(at)
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount tmpfs at {}", at.display());
        Mount(at.to_path_buf())
    }

    fn resize(&self, size: &str) {
        let ok = Command::new("mount")
            .args(["-o", &format!("remount,size={size}")])
            .arg(&self.0)
            .status()
            .unwrap()
            .success();
        assert!(ok, "remount");
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_fails_writes_clearly_and_recovers() {
    if !have_root("a_full_disk_fails_writes_clearly_and_recovers") {
        return;
    }
    let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
    let mut d = Daemon::prepare(dir);
    let mount = Mount::tmpfs(&d.data_dir(), "1m");
    d.spawn();
    let mut c = d.client().await;
    let mut acked = Vec::new();
    let mut full = None;
    for i in 0..2_000 {
        // Distinct words, so nothing is merged as a duplicate.
        let words: Vec<String> = (0..60).map(|w| format!("w{i}x{w}")).collect();
        match c
            .add(add(&format!("filler {i}: {}", words.join(" "))))
            .await
        {
            Ok(r) => acked.push(r.id.unwrap()),
            Err(e) => {
                full = Some(e);
                break;
            }
        }
    }
    let err = full.expect("the 1 MiB disk never filled");
    assert_eq!(err.code(), "storage_full", "{err}");
    assert!(err.to_string().contains("disk"), "{err}");
    assert!(acked.len() > 3, "only {} writes fit", acked.len());

    // Reads keep working, nothing is corrupt, the daemon keeps serving.
    let first = c.get(acked[0]).await.unwrap();
    assert!(first.content.starts_with("filler 0:"));
    let hits = c.search_text("w1x5", 5).await.unwrap();
    assert_eq!(hits.len(), 1);
    let check = c.check().await.unwrap();
    assert!(check.ok, "{check:?}");
    let mut other = d.client().await;
    assert!(other.status().await.is_ok());

    // Space returns: writes go through again, every acknowledged one is there.
    mount.resize("16m");
    let again = c.add(add("written after space came back")).await.unwrap();
    assert!(again.accepted);
    for id in &acked {
        c.get(*id).await.unwrap();
    }
    let check = c.check().await.unwrap();
    assert!(check.ok, "{check:?}");
    drop(c);
    drop(other);
    let exit = d.terminate();
    assert!(exit.success(), "{}", d.log());
    drop(mount);
}

#[test]
fn a_read_only_database_serves_reads_and_refuses_writes_clearly() {
    if !have_root("a_read_only_database_serves_reads_and_refuses_writes_clearly") {
        return;
    }
    let mut d = Daemon::start();
    let (v, code) = d.json(&["add", "written while the file was writable"]);
    assert_eq!(code, 0, "{v}");
    d.terminate();

    // The daemon runs as `nobody`, from a copy of the binary it may execute,
    // on a data dir it owns but a database file it may only read.
    let bin_dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(bin_dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = bin_dir.path().join("memd");
    std::fs::copy(crate::common::BIN, &bin).unwrap();
    std::fs::set_permissions(d.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let chown = Command::new("chown")
        .args(["-R", "nobody:nogroup"])
        .arg(d.data_dir())
        .status()
        .unwrap();
    assert!(chown.success());
    std::fs::set_permissions(d.db(), std::fs::Permissions::from_mode(0o400)).unwrap();
    let as_nobody = |args: &[&str]| {
        let mut cmd = Command::new("setpriv");
        cmd.args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
            .arg(&bin)
            .arg("--data-dir")
            .arg(d.data_dir())
            .env_clear()
            .env("HOME", d.data_dir())
            .env("PATH", "/usr/bin:/bin")
            .current_dir(d.data_dir());
        cmd.args(args);
        cmd
    };
    let mut daemon = as_nobody(&["daemon"])
        .stderr(std::fs::File::create(d.dir.path().join("nobody.log")).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !d.socket().exists() {
        assert!(Instant::now() < deadline, "the daemon did not start");
        assert!(daemon.try_wait().unwrap().is_none(), "the daemon exited");
        std::thread::sleep(Duration::from_millis(20));
    }
    let run = |args: &[&str]| {
        let mut all = vec!["--no-autostart", "--json"];
        all.extend_from_slice(args);
        let out = as_nobody(&all).output().unwrap();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        (v, out.status.code().unwrap_or(-1))
    };
    let (v, code) = {
        // The socket appears just before the daemon answers.
        let mut tries = 0;
        loop {
            let r = run(&["search", "writable"]);
            if r.1 != 5 || tries > 100 {
                break r;
            }
            tries += 1;
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["count"], 1, "{v}");
    let (v, code) = run(&["add", "a new memory"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["code"], "read_only", "{v}");
    assert!(v["error"].as_str().unwrap().contains("permissions"), "{v}");
    let (v, code) = run(&["list"]);
    assert_eq!((code, v["count"].as_u64()), (0, Some(1)), "{v}");
    let (_, code) = run(&["stop"]);
    assert_eq!(code, 0);
    assert!(daemon.wait().unwrap().success());
    assert_eq!(
        sqlite3(&d.db(), "SELECT count(*) FROM memories").trim(),
        "1",
        "nothing was written"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn every_file_memd_writes_is_owner_only() {
    let d = Daemon::start();
    let mut c = d.client().await;
    c.add(add("the api listens on port 8080")).await.unwrap();
    // A drift backup: an external change, then a stale update.
    sqlite3(
        &d.db(),
        "UPDATE memories SET content = 'the api listens on port 9090'",
    );
    let backup = match c.forget(1, None).await {
        Err(Error::Drift(body)) => PathBuf::from(body.drift.unwrap().drift_backup),
        other => panic!("a stale forget went through: {other:?}"),
    };
    assert_eq!(mode(&backup), 0o600);
    assert_eq!(mode(backup.parent().unwrap()), 0o700);
    // Exports and online backups that the CLI writes.
    let export = d.dir.path().join("export.json");
    let copy = d.dir.path().join("copy.db");
    // An existing file others could read is narrowed, not kept as it was.
    std::fs::write(&copy, "old").unwrap();
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (v, code) = d.json(&["export", "--out", export.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    let (v, code) = d.json(&["backup", "--force", copy.to_str().unwrap()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(mode(&export), 0o600);
    assert_eq!(mode(&copy), 0o600);
    for name in [
        "memory.db",
        "memory.db-wal",
        "memory.db-shm",
        "memd.lock",
        "memd.sock",
    ] {
        assert_eq!(mode(&d.data_dir().join(name)), 0o600, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_symlink_planted_at_the_backup_path_is_not_followed() {
    let d = Daemon::start();
    let mut c = d.client().await;
    c.add(add("the cache lives in redis")).await.unwrap();
    // Symlinks at every backup name of the next minute, pointing at a file
    // that must stay as it is.
    let target = d.dir.path().join("precious.txt");
    std::fs::write(&target, "keep me").unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    for ts in now..now + 60 {
        let link = d.data_dir().join(format!("memory.bak.{ts}.json"));
        std::os::unix::fs::symlink(&target, link).unwrap();
    }
    sqlite3(
        &d.db(),
        "UPDATE memories SET content = 'the cache lives in memcached'",
    );
    let backup = match c.forget(1, None).await {
        Err(Error::Drift(body)) => PathBuf::from(body.drift.unwrap().drift_backup),
        other => panic!("{other:?}"),
    };
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep me");
    let meta = std::fs::symlink_metadata(&backup).unwrap();
    assert!(
        meta.file_type().is_file(),
        "the backup is a new regular file"
    );
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&backup).unwrap()).unwrap();
    assert_eq!(doc["entries"][0]["content"], "the cache lives in memcached");
}

#[tokio::test(flavor = "multi_thread")]
async fn logs_at_info_level_carry_no_memory_content() {
    // The harness runs the daemon with MEMD_LOG=info.
    let d = Daemon::start();
    let mut c = d.client().await;
    let marker = "zanzibarquokka";
    c.add(add(&format!("the {marker} deploy key rotates monthly")))
        .await
        .unwrap();
    let secret = "ghp_0123456789abcdefghijABCDEFGHIJ012345";
    assert!(matches!(
        c.add(add(&format!("token {secret}"))).await,
        Err(Error::Rejected(_))
    ));
    c.search_text(marker, 5).await.unwrap();
    c.update(memd_client::UpdateRequest {
        id: 1,
        content: Some(format!("the {marker} key rotates weekly")),
        ..Default::default()
    })
    .await
    .unwrap();
    let _ = c
        .add(add(
            "a diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-zanzibarquokka\n+y",
        ))
        .await;
    sqlite3(
        &d.db(),
        &format!("INSERT INTO memories(content) VALUES ('{marker} external')"),
    );
    c.inject().await.unwrap();
    let _ = c.forget(1, None).await;
    let mut other = d.client().await;
    let mut exported = Vec::new();
    let req = memd_client::proto::ExportRequest {
        format: "json".into(),
        ..Default::default()
    };
    other.export(req, &mut exported).await.unwrap();
    assert!(String::from_utf8_lossy(&exported).contains(marker));
    d.json(&["stop"]);
    let log = d.log();
    assert!(log.contains("memd is serving"), "{log}");
    assert!(!log.contains(marker), "memory content in the log:\n{log}");
    assert!(!log.contains(secret), "a secret in the log:\n{log}");
}

#[test]
fn a_damaged_search_index_fails_the_check() {
    let d = Daemon::start();
    d.cli(&["add", "plain memory about things"]);
    d.cli(&["add", "second memory about stuff"]);
    let (v, code) = d.json(&["check"]);
    assert_eq!((code, &v["ok"]), (0, &serde_json::json!(true)), "{v}");
    // Another tool damages the index's storage behind memd's back.
    sqlite3(
        &d.db(),
        "DELETE FROM memories_fts_data WHERE id = (SELECT max(id) FROM memories_fts_data)",
    );
    let (v, code) = d.json(&["check"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["ok"], false);
    assert!(
        v["fts_integrity"].as_str().unwrap().starts_with("fts5"),
        "{v}"
    );
}

/// A token of 64 hex digits someone else chose.
const PLANTED: &str = "feedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedfacefeedface";

/// Runs `memd daemon` on `d`'s data dir and waits (at most 10 s) for it to
/// exit: it must refuse to start. Its exit code and log.
fn refused_start(d: &Daemon) -> (i32, String) {
    let mut child = d.daemon_command().spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return (status.code().unwrap_or(-1), d.log());
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "the daemon started on a data dir it must refuse:\n{}",
                d.log()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn another_users_data_dir_is_refused_and_its_token_never_used() {
    if !have_root("another_users_data_dir_is_refused_and_its_token_never_used") {
        return;
    }
    let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
    let d = Daemon::prepare(dir);
    let data = d.data_dir();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(data.join("ui.token"), format!("{PLANTED}\n")).unwrap();
    let chown = Command::new("chown")
        .args(["-R", "nobody:nogroup"])
        .arg(&data)
        .status()
        .unwrap();
    assert!(chown.success());
    let (code, log) = refused_start(&d);
    assert_ne!(code, 0, "{log}");
    assert!(
        log.contains(&format!("the data directory {}", data.display()))
            && log.contains("belongs to user nobody")
            && log.contains(&format!("chown -R root: {}", data.display())),
        "{log}"
    );
    assert!(!d.socket().exists());
    // A client does not start a daemon there either: it says why at once,
    // and writes nothing into the directory.
    let started = Instant::now();
    for args in [&["add", "a note"][..], &["ui", "--no-open"]] {
        let out = crate::common::memd_command(d.dir.path())
            .arg("--data-dir")
            .arg(&data)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(5), "{stderr}");
        assert!(stderr.contains("belongs to user nobody"), "{stderr}");
        assert!(!String::from_utf8_lossy(&out.stdout).contains(PLANTED));
    }
    assert!(started.elapsed() < Duration::from_secs(5));
    let mut names: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["ui.token"]);
}

#[test]
fn a_file_of_another_user_in_ones_own_data_dir_is_refused() {
    if !have_root("a_file_of_another_user_in_ones_own_data_dir_is_refused") {
        return;
    }
    let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
    let mut d = Daemon::prepare(dir);
    let data = d.data_dir();
    // Made with a plain mkdir (0755): another user could have put a file
    // in it before memd made it private.
    std::fs::create_dir_all(&data).unwrap();
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o777)).unwrap();
    let token = data.join("ui.token");
    std::fs::write(&token, format!("{PLANTED}\n")).unwrap();
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).unwrap();
    let chown = Command::new("chown")
        .args(["nobody:nogroup"])
        .arg(&token)
        .status()
        .unwrap();
    assert!(chown.success());
    let (code, log) = refused_start(&d);
    assert_ne!(code, 0, "{log}");
    assert!(
        log.contains(&format!("{} in the data directory", token.display()))
            && log.contains("belongs to user nobody"),
        "{log}"
    );
    // Made private before its files were looked at.
    assert_eq!(mode(&data), 0o700);
    // Once it is gone, the daemon starts and the viewer gets a token of
    // its own.
    std::fs::remove_file(&token).unwrap();
    d.spawn();
    let (address, new) = crate::viewer::open(&d, false);
    assert_ne!(new, PLANTED);
    let r =
        crate::common::http::tcp_request(&address, "GET", &format!("/?token={PLANTED}"), &[], None);
    assert_eq!(r.status, 401);
}

/// A token file of this user that others could have written (open to
/// them) or that is a symlink is replaced by a new token, never used.
#[test]
fn a_token_file_others_could_write_is_never_used() {
    let mut d = Daemon::start();
    let data = d.data_dir();
    let (_, first) = crate::viewer::open(&d, false);
    d.terminate();
    let token = data.join("ui.token");
    let elsewhere = d.dir.path().join("planted.token");
    std::fs::write(&elsewhere, format!("{PLANTED}\n")).unwrap();
    std::fs::set_permissions(&elsewhere, std::fs::Permissions::from_mode(0o600)).unwrap();
    for plant in ["open", "symlink"] {
        std::fs::remove_file(&token).unwrap();
        if plant == "open" {
            std::fs::write(&token, format!("{PLANTED}\n")).unwrap();
            std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o666)).unwrap();
        } else {
            std::os::unix::fs::symlink(&elsewhere, &token).unwrap();
        }
        d.spawn();
        let (address, used) = crate::viewer::open(&d, false);
        assert!(used != PLANTED && used != first, "{plant}");
        let r = crate::common::http::tcp_request(
            &address,
            "GET",
            &format!("/?token={PLANTED}"),
            &[],
            None,
        );
        assert_eq!(r.status, 401, "{plant}");
        let meta = std::fs::symlink_metadata(&token).unwrap();
        assert!(meta.is_file(), "{plant}");
        assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{plant}");
        assert!(d.log().contains("a new token replaces it"), "{plant}");
        d.terminate();
    }
}
