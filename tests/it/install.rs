//! Installing without a clone, through the real release files: `scripts/dist`
//! packages the debug binary under test (the release archive is the same
//! command with the release profile); `install.sh`, fetched and run as
//! `curl … | sh` from a loopback HTTP server, installs it into a fresh HOME,
//! where `memd --version`, `add`, `search` and `man` work; a tampered
//! archive is refused; a running daemon of another build is stopped. The
//! Debian package installs with `dpkg -i` (as root), upgrades an old
//! database, refuses a newer one, and is removed and purged cleanly. Both
//! scripts are shellcheck-clean.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{BIN, require, sqlite3, tool};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The build line of the binary under test (`0.1.0 (commit …, built …)`).
fn build_line() -> String {
    let out = Command::new(BIN).arg("--version").output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .trim_start_matches("memd ")
        .to_string()
}

/// The tools the release files need, each one required.
fn tools(names: &[&str]) -> bool {
    names
        .iter()
        .all(|t| tool(t, "the release files are made and installed with it"))
}

/// `scripts/dist --binary <the binary under test> --out <dir>/dist`.
fn dist(dir: &Path, extra: &[&str]) -> PathBuf {
    let out_dir = dir.join("dist");
    let out = Command::new(root().join("scripts/dist"))
        .arg("--binary")
        .arg(BIN)
        .arg("--out")
        .arg(&out_dir)
        .args(extra)
        .output()
        .unwrap();
    assert!(out.status.success(), "scripts/dist failed:\n{}", text(&out));
    eprintln!("{}", text(&out));
    out_dir
}

/// The one file of `dir` whose name ends with `suffix`.
fn file_ending(dir: &Path, suffix: &str) -> PathBuf {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    assert_eq!(found.len(), 1, "{suffix} in {}: {found:?}", dir.display());
    found.into_iter().next().unwrap()
}

/// The newest GLIBC_ symbol version a binary needs, measured here.
fn glibc_needed(binary: &Path) -> String {
    let out = Command::new("objdump")
        .arg("-T")
        .arg(binary)
        .output()
        .unwrap();
    let dump = String::from_utf8_lossy(&out.stdout);
    let mut versions: Vec<Vec<u32>> = dump
        .split("GLIBC_")
        .skip(1)
        .filter_map(|s| {
            let v: String = s
                .chars()
                .take_while(|c| c.is_ascii_digit() || *c == '.')
                .collect();
            let parts: Vec<u32> = v.split('.').filter_map(|p| p.parse().ok()).collect();
            (!parts.is_empty()).then_some(parts)
        })
        .collect();
    versions.sort();
    let newest = versions.last().expect("the binary names GLIBC_ versions");
    newest
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// `python3 -m http.server` on a free loopback port, serving `dir`.
struct Server {
    child: Child,
    url: String,
}

impl Server {
    fn start(dir: &Path) -> Server {
        let mut child = Command::new("python3")
            .args(["-u", "-m", "http.server", "0", "--bind", "127.0.0.1"])
            .arg("--directory")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "Serving HTTP on 127.0.0.1 port 41234 (http://127.0.0.1:41234/) ..."
        let port = line
            .split_whitespace()
            .skip_while(|w| *w != "port")
            .nth(1)
            .unwrap_or_else(|| panic!("no port in {line:?}"))
            .to_string();
        Server {
            child,
            url: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A command in a fresh HOME of `home`: nothing of this machine's user,
/// `PATH` with `extra` first, and the runtime dir inside it.
fn fresh(program: &str, home: &Path, extra: Option<&Path>) -> Command {
    let mut cmd = Command::new(program);
    let path = match extra {
        Some(dir) => format!("{}:/usr/local/bin:/usr/bin:/bin", dir.display()),
        None => "/usr/local/bin:/usr/bin:/bin".to_string(),
    };
    let run = home.join("run");
    std::fs::create_dir_all(&run).unwrap();
    cmd.env_clear()
        .env("PATH", path)
        .env("HOME", home)
        .env("XDG_RUNTIME_DIR", &run)
        .env("LANG", "C.UTF-8")
        .current_dir(home)
        .stdin(Stdio::null());
    cmd
}

/// `curl -fsSL <server>/install.sh | sh -s -- --base-url <server>`, as the
/// README gives it, in the fresh HOME `home`.
fn install_with_curl(home: &Path, server: &Server) -> Output {
    fresh("sh", home, None)
        .arg("-c")
        .arg(format!(
            "curl -fsSL {0}/install.sh | sh -s -- --base-url {0}",
            server.url
        ))
        .output()
        .unwrap()
}

#[test]
fn the_release_archive_installs_with_the_script_from_a_loopback_server() {
    if !tools(&[
        "tar",
        "gzip",
        "sha256sum",
        "strip",
        "objdump",
        "rustc",
        "python3",
        "curl",
        "man",
    ]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dist(dir.path(), &["--no-deb"]);
    let archive = file_ending(&out_dir, "-linux-gnu.tar.gz");
    let name = archive.file_name().unwrap().to_string_lossy().into_owned();
    let version = env!("CARGO_PKG_VERSION");
    assert!(name.starts_with(&format!("memd-{version}-")), "{name}");

    // The checksum file verifies, and names the archive.
    let check = Command::new("sha256sum")
        .args(["-c", "SHA256SUMS"])
        .current_dir(&out_dir)
        .output()
        .unwrap();
    assert!(check.status.success(), "{}", text(&check));
    assert!(
        String::from_utf8_lossy(&check.stdout).contains(&format!("{name}: OK")),
        "{}",
        text(&check)
    );

    // What the archive holds.
    let listing = Command::new("tar")
        .arg("-tzf")
        .arg(&archive)
        .output()
        .unwrap();
    let listing = String::from_utf8_lossy(&listing.stdout).into_owned();
    let top = name.trim_end_matches(".tar.gz");
    for file in [
        "bin/memd",
        "share/man/man1/memd.1",
        "share/man/man1/memd-search.1",
        "share/man/man1/memd-task-add.1",
        "share/bash-completion/completions/memd",
        "share/zsh/site-functions/_memd",
        "share/fish/vendor_completions.d/memd.fish",
        "share/systemd/user/memd.socket",
        "share/systemd/user/memd.service",
        "share/launchd/dev.memd.memd.plist",
        "LICENSE-MIT",
        "LICENSE-APACHE",
        "README.md",
        "CHANGELOG.md",
        "PLATFORM",
    ] {
        assert!(
            listing.lines().any(|l| l == format!("{top}/{file}")),
            "{file} is not in {name}:\n{listing}"
        );
    }

    let server = Server::start(&out_dir);
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = install_with_curl(&home, &server);
    let said = text(&out);
    assert!(out.status.success(), "install.sh failed:\n{said}");
    let bin_dir = home.join(".local/bin");
    let bin = bin_dir.join("memd");
    for line in [
        "checksum verified".to_string(),
        format!("installed memd {} into {}", build_line(), bin.display()),
        format!("{} is not on your PATH", bin_dir.display()),
        format!("export PATH=\"{}:$PATH\"", bin_dir.display()),
        "next: memd setup claude-code".to_string(),
    ] {
        assert!(said.contains(&line), "no {line:?} in:\n{said}");
    }
    assert!(!said.contains("stopped"), "no daemon was running:\n{said}");

    // The archive states the oldest glibc the binary runs on: the newest
    // GLIBC_ version the installed binary needs.
    let platform = std::fs::read_to_string(home.join(".local/share/doc/memd/PLATFORM")).unwrap();
    assert!(
        platform.contains(&format!("glibc: {} or newer", glibc_needed(&bin))),
        "{platform}"
    );

    // From the fresh HOME, with ~/.local/bin on PATH.
    let memd = |args: &[&str]| {
        let out = fresh("memd", &home, Some(&bin_dir))
            .args(args)
            .output()
            .unwrap();
        (out.status.code(), text(&out))
    };
    let (code, version_line) = memd(&["--version"]);
    assert_eq!(code, Some(0));
    assert_eq!(version_line.trim(), format!("memd {}", build_line()));
    assert!(version_line.contains("(commit "), "{version_line}");
    let (code, said) = memd(&["add", "Deploys go through ops/ship.sh"]);
    assert_eq!(code, Some(0), "{said}");
    let (code, said) = memd(&["search", "deploys"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("ops/ship.sh"), "{said}");
    // man finds the pages from PATH (~/.local/bin → ~/.local/share/man).
    let (code, said) = memd(&["status", "--json"]);
    assert_eq!(code, Some(0), "{said}");
    let page = fresh("man", &home, Some(&bin_dir))
        .args(["-w", "memd-search"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&page.stdout).trim(),
        home.join(".local/share/man/man1/memd-search.1")
            .display()
            .to_string(),
        "{}",
        text(&page)
    );
    // The user units name the binary the script installed.
    let unit_dir = home.join(".local/share/systemd/user");
    let unit = std::fs::read_to_string(unit_dir.join("memd.service")).unwrap();
    assert!(
        unit.contains(&format!("\nExecStart={} daemon ", bin.display())),
        "{unit}"
    );
    if tool("systemd-analyze", "apt-get install systemd") {
        let verify = fresh("systemd-analyze", &home, Some(&bin_dir))
            .args(["--user", "verify"])
            .arg(unit_dir.join("memd.socket"))
            .arg(unit_dir.join("memd.service"))
            .output()
            .unwrap();
        assert!(verify.status.success(), "{}", text(&verify));
    }
    for file in [
        ".local/share/bash-completion/completions/memd",
        ".local/share/zsh/site-functions/_memd",
        ".local/share/fish/vendor_completions.d/memd.fish",
    ] {
        assert!(home.join(file).is_file(), "{file}");
    }

    // Installing again over a daemon of this very build leaves it running.
    let out = install_with_curl(&home, &server);
    assert!(out.status.success(), "{}", text(&out));
    assert!(!text(&out).contains("stopped"), "{}", text(&out));
    assert_eq!(memd(&["--no-autostart", "status"]).0, Some(0));
    // A daemon of another build (a fault point makes the running one report
    // another) is stopped, and the script says so.
    assert_eq!(memd(&["stop"]).0, Some(0));
    let older = fresh("memd", &home, Some(&bin_dir))
        .env("MEMD_FAULT", "other-build")
        .args(["add", "written through the older daemon"])
        .output()
        .unwrap();
    assert!(older.status.success(), "{}", text(&older));
    let (_, status) = memd(&["--no-autostart", "status", "--json"]);
    assert!(status.contains("\"build\":\"0.0.0 "), "{status}");
    let out = install_with_curl(&home, &server);
    let said = text(&out);
    assert!(out.status.success(), "{said}");
    assert!(
        said.contains("stopped the running memd daemon (pid ")
            && said.contains("memd 0.0.0 (commit 000000000000")
            && said.contains("the next memd command starts this one"),
        "{said}"
    );
    let (code, said) = memd(&["--no-autostart", "status"]);
    assert_eq!(code, Some(5), "the older daemon is gone: {said}");
    let (code, said) = memd(&["search", "older"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("written through the older daemon"), "{said}");
    assert_eq!(memd(&["stop"]).0, Some(0));

    // A tampered archive is refused, from a local directory as well, and
    // nothing is installed.
    let tampered = dir.path().join("tampered");
    std::fs::create_dir_all(&tampered).unwrap();
    for file in std::fs::read_dir(&out_dir).unwrap() {
        let file = file.unwrap().path();
        std::fs::copy(&file, tampered.join(file.file_name().unwrap())).unwrap();
    }
    let mut bytes = std::fs::read(tampered.join(&name)).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x01;
    std::fs::write(tampered.join(&name), bytes).unwrap();
    let other_home = dir.path().join("other-home");
    std::fs::create_dir_all(&other_home).unwrap();
    let out = fresh("sh", &other_home, None)
        .arg(root().join("install.sh"))
        .arg("--base-url")
        .arg(&tampered)
        .output()
        .unwrap();
    let said = text(&out);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains(&format!("error: checksum mismatch for {name}"))
            && said.contains("Refusing to install it (nothing was changed)"),
        "{said}"
    );
    assert!(!other_home.join(".local").exists(), "{said}");
}

/// `dpkg` with its lock waited for (another test run may hold it).
fn dpkg(args: &[&str]) -> Output {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = Command::new("dpkg").args(args).output().unwrap();
        let busy = String::from_utf8_lossy(&out.stderr).contains("lock");
        if out.status.success() || !busy || Instant::now() > deadline {
            return out;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

fn installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("ok installed"))
}

/// Purges the package when the test ends, however it ends.
struct Purge;

impl Drop for Purge {
    fn drop(&mut self) {
        if installed("memd") {
            let _ = dpkg(&["--purge", "memd"]);
        }
    }
}

/// The newest schema version this build knows, as `current.sql` states.
fn latest_schema() -> String {
    let sql = std::fs::read_to_string(root().join("src/store/schema/current.sql")).unwrap();
    sql.lines()
        .next()
        .and_then(|l| l.split("at version ").nth(1))
        .and_then(|r| r.split(',').next())
        .expect("current.sql names its version")
        .to_string()
}

#[test]
fn the_debian_package_installs_upgrades_refuses_a_newer_database_and_removes() {
    let root_user = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if !require(root_user, "dpkg -i needs root")
        || !tools(&[
            "dpkg",
            "dpkg-deb",
            "tar",
            "gzip",
            "sha256sum",
            "strip",
            "objdump",
            "rustc",
            "man",
            "sqlite3",
        ])
    {
        return;
    }
    // One such test at a time on a machine (another checkout's run may be
    // installing its own package): a lock file all of them take.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open("/var/lock/memd-deb-test.lock")
        .unwrap();
    lock.lock().unwrap();
    assert!(
        !installed("memd"),
        "a memd package is installed on this machine (dpkg -s memd): the test installs and \
         removes its own; remove it first (dpkg -P memd)"
    );
    let dir = tempfile::tempdir().unwrap();
    let out_dir = dist(dir.path(), &[]);
    let deb = file_ending(&out_dir, "_amd64.deb");
    let sums = std::fs::read_to_string(out_dir.join("SHA256SUMS")).unwrap();
    assert!(
        sums.contains(&*deb.file_name().unwrap().to_string_lossy()),
        "{sums}"
    );

    let _purge = Purge;
    let out = dpkg(&["-i", deb.to_str().unwrap()]);
    assert!(out.status.success(), "dpkg -i failed:\n{}", text(&out));
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let run = |program: &str, args: &[&str]| {
        let out = fresh(program, &home, None).args(args).output().unwrap();
        (out.status.code(), text(&out))
    };
    let (_, found) = run("sh", &["-c", "command -v memd"]);
    assert_eq!(found.trim(), "/usr/bin/memd");
    let (code, version) = run("memd", &["--version"]);
    assert_eq!(code, Some(0));
    assert_eq!(version.trim(), format!("memd {}", build_line()));
    for page in ["memd", "memd-add", "memd-task-add"] {
        let (code, path) = run("man", &["-w", page]);
        assert_eq!(code, Some(0), "{path}");
        assert_eq!(path.trim(), format!("/usr/share/man/man1/{page}.1.gz"));
    }
    let (code, page) = run("man", &["-P", "cat", "memd-search"]);
    assert_eq!(code, Some(0), "{page}");
    assert!(page.contains("--mode"), "{page}");
    for file in [
        "/usr/share/bash-completion/completions/memd",
        "/usr/share/zsh/vendor-completions/_memd",
        "/usr/share/fish/vendor_completions.d/memd.fish",
        "/usr/share/doc/memd/copyright",
    ] {
        assert!(Path::new(file).is_file(), "{file}");
    }
    // The user units name /usr/bin/memd and are not enabled.
    let unit = std::fs::read_to_string("/usr/lib/systemd/user/memd.service").unwrap();
    assert!(unit.contains("\nExecStart=/usr/bin/memd daemon "), "{unit}");
    assert!(Path::new("/usr/lib/systemd/user/memd.socket").is_file());
    assert!(!Path::new("/etc/systemd/user/sockets.target.wants/memd.socket").exists());

    // A newer binary over an older data dir: the installed memd upgrades a
    // v1 database (a copy first) and finds what it held.
    let data = home.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let db = data.join("memory.db");
    let v1 = std::fs::read_to_string(root().join("src/store/fixtures/v1.sql")).unwrap();
    sqlite3(&db, &v1);
    let data_arg = data.to_str().unwrap();
    let (code, said) = run("memd", &["--data-dir", data_arg, "search", "deploys"]);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains("A fixture memory about deploys"), "{said}");
    let latest = latest_schema();
    assert_eq!(
        sqlite3(&db, "SELECT max(version) FROM memd_schema").trim(),
        latest
    );
    let copies: Vec<String> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("memory.db.v1.") && n.ends_with(".bak"))
        .collect();
    assert_eq!(copies.len(), 1, "a copy of the v1 file: {copies:?}");
    let (code, said) = run("memd", &["--data-dir", data_arg, "stop"]);
    assert_eq!(code, Some(0), "{said}");

    // An older binary on a newer database: refused with the reason, the
    // file untouched — by the daemon, and by a command that starts one.
    sqlite3(
        &db,
        "INSERT INTO memd_schema (version, name) VALUES (999, 'from a newer memd')",
    );
    let refusal = format!(
        "the database has schema version 999, newer than the {latest} this memd supports; \
         upgrade memd (the file was left untouched)"
    );
    let (code, said) = run("memd", &["daemon", "--data-dir", data_arg]);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains(&refusal), "{said}");
    let (code, said) = run("memd", &["--data-dir", data_arg, "search", "deploys"]);
    assert_eq!(code, Some(5), "{said}");
    assert!(said.contains(&refusal), "{said}");
    assert_eq!(
        sqlite3(&db, "SELECT count(*) FROM memories").trim(),
        "2",
        "nothing was lost"
    );

    // Removed cleanly, then purged.
    let out = dpkg(&["-r", "memd"]);
    assert!(out.status.success(), "dpkg -r failed:\n{}", text(&out));
    for file in [
        "/usr/bin/memd",
        "/usr/share/man/man1/memd.1.gz",
        "/usr/share/bash-completion/completions/memd",
        "/usr/lib/systemd/user/memd.service",
        "/usr/share/doc/memd",
    ] {
        assert!(!Path::new(file).exists(), "{file} is left after dpkg -r");
    }
    let (_, found) = run("sh", &["-c", "command -v memd || echo none"]);
    assert_eq!(found.trim(), "none");
    let out = dpkg(&["-P", "memd"]);
    assert!(out.status.success(), "dpkg -P failed:\n{}", text(&out));
    assert!(!installed("memd"));
    let (code, said) = run("dpkg", &["-s", "memd"]);
    assert_eq!(code, Some(1), "{said}");
}

#[test]
fn the_install_and_release_scripts_are_shellcheck_clean() {
    if !tool("shellcheck", "apt-get install shellcheck") {
        return;
    }
    let out = Command::new("shellcheck")
        .args(["--shell=sh", "--severity=style"])
        .arg(root().join("install.sh"))
        .arg(root().join("scripts/dist"))
        .output()
        .unwrap();
    assert!(out.status.success(), "shellcheck:\n{}", text(&out));
    // The check can fail: a classic mistake is reported.
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.sh");
    std::fs::write(&bad, "#!/bin/sh\nrm -rf $1/*\n").unwrap();
    let out = Command::new("shellcheck").arg(&bad).output().unwrap();
    assert!(!out.status.success(), "{}", text(&out));
}
