//! Peer credentials: a client of another user (run with `setpriv` as
//! `nobody`, the binary copied where that user can execute it) is refused
//! with a clear error and a log line; the allow list admits it after a
//! SIGHUP reload, by uid or by gid.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{BIN, CliOut, Daemon, require, tool};

/// A 0755 directory `nobody` can enter.
fn open_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("memd-peer")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}

fn id_of(args: &[&str]) -> u32 {
    let out = Command::new("id").args(args).output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim().parse().unwrap()
}

/// Runs `memd --json list` as nobody:nogroup (with `groups` as its
/// supplementary groups) against `socket`.
fn as_nobody(bin: &Path, socket: &Path, groups: &[u32]) -> CliOut {
    let groups_arg = if groups.is_empty() {
        "--clear-groups".to_string()
    } else {
        let list: Vec<String> = groups.iter().map(u32::to_string).collect();
        format!("--groups={}", list.join(","))
    };
    let out = Command::new("setpriv")
        .args(["--reuid=nobody", "--regid=nogroup", &groups_arg, "--"])
        .arg(bin)
        .arg("--socket")
        .arg(socket)
        .args(["--no-autostart", "--json", "list"])
        .env("HOME", "/nonexistent")
        .env_remove("MEMD_DATA_DIR")
        .current_dir("/")
        .output()
        .unwrap();
    CliOut {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `GET /v1/status` over the socket as nobody (a plain Perl client — Perl
/// is part of every Debian system — with no code of memd's); the answer's
/// head and body.
fn http_as_nobody(socket: &Path) -> (String, String) {
    let script = r#"use IO::Socket::UNIX;
        my $s = IO::Socket::UNIX->new(Peer => $ARGV[0]) or die "connect: $!";
        print $s "GET /v1/status HTTP/1.1\r\nHost: memd\r\nConnection: close\r\n\r\n";
        binmode STDOUT; print while <$s>;"#;
    let out = Command::new("setpriv")
        .args([
            "--reuid=nobody",
            "--regid=nogroup",
            "--clear-groups",
            "--",
            "perl",
            "-e",
        ])
        .arg(script)
        .arg(socket)
        .current_dir("/")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_string(), body.to_string())
}

fn config(path: &Path, socket_section: &str) {
    std::fs::write(path, format!("[socket]\nmode = \"0666\"\n{socket_section}")).unwrap();
}

#[test]
fn another_user_is_refused_until_the_allow_list_admits_it() {
    if !tool("setpriv", "apt-get install util-linux")
        || !require(
            memd_is_root(),
            "switching to another user needs root (tests run as root in CI)",
        )
    {
        return;
    }
    let (nobody, nogroup) = (id_of(&["-u", "nobody"]), id_of(&["-g", "nobody"]));
    // The binary where nobody may execute it, the socket where nobody may
    // reach it (the data dir stays 0700, root's).
    let bin_dir = open_dir();
    let bin: PathBuf = bin_dir.path().join("memd");
    std::fs::copy(BIN, &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    let sock_dir = open_dir();
    let socket = sock_dir.path().join("memd.sock");

    let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    config(&cfg, "");
    let mut d = Daemon::prepare(dir);
    d.extra = vec![
        "--config".into(),
        cfg.display().to_string(),
        "--socket".into(),
        socket.display().to_string(),
    ];
    d.spawn();
    let mode = std::fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666, "[socket] mode is applied");

    // Refused: a clear error naming the fix, and a log line.
    let out = as_nobody(&bin, &socket, &[]);
    assert_eq!(out.code, 1, "{out:?}");
    let v = out.json();
    assert_eq!(v["code"], "permission_denied", "{v}");
    let message = v["error"].as_str().unwrap();
    assert!(
        message.contains(&format!("your uid {nobody}")) && message.contains("allow_uids"),
        "{message}"
    );
    assert!(
        d.log().contains("refused a client") && d.log().contains(&format!("uid={nobody}")),
        "{}",
        d.log()
    );

    // Over HTTP on the same socket: a problem-JSON 403, never a binary
    // frame.
    let (head, body) = http_as_nobody(&socket);
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    assert!(
        head.to_lowercase()
            .contains("content-type: application/problem+json"),
        "{head}"
    );
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["code"], "permission_denied", "{v}");

    // Admitted by uid after a reload.
    config(&cfg, &format!("allow_uids = [{nobody}]\n"));
    d.reload();
    let out = as_nobody(&bin, &socket, &[]);
    assert_eq!(out.code, 0, "{out:?}\n{}", d.log());
    assert_eq!(out.json()["success"], true);
    let (head, _) = http_as_nobody(&socket);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");

    // Admitted by gid only.
    config(&cfg, &format!("allow_gids = [{nogroup}]\n"));
    d.reload();
    let out = as_nobody(&bin, &socket, &[]);
    assert_eq!(out.code, 0, "{out:?}\n{}", d.log());

    // Admitted by a supplementary group (SO_PEERGROUPS).
    config(&cfg, "allow_gids = [4242]\n");
    d.reload();
    let out = as_nobody(&bin, &socket, &[]);
    assert_eq!(out.json()["code"], "permission_denied", "{out:?}");
    let out = as_nobody(&bin, &socket, &[4242]);
    assert_eq!(out.code, 0, "{out:?}\n{}", d.log());

    // Removed from the list: refused again, without a restart.
    config(&cfg, "");
    d.reload();
    let out = as_nobody(&bin, &socket, &[]);
    assert_eq!(out.json()["code"], "permission_denied", "{out:?}");
    // The daemon's own user was served all along.
    let own = Command::new(BIN)
        .arg("--socket")
        .arg(&socket)
        .args(["--no-autostart", "--json", "list"])
        .output()
        .unwrap();
    assert!(own.status.success());
}

fn memd_is_root() -> bool {
    id_of(&["-u"]) == 0
}
