//! Service integration: the units `memd service install` writes pass
//! `systemd-analyze verify`; socket activation serves the first request
//! through the inherited socket and leaves it in place; the launchd plist
//! is a valid property list.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{BIN, Daemon, memd_command, tool};

/// Runs `memd service …` with `home` as HOME and XDG dirs.
fn service(home: &Path, args: &[&str]) -> crate::common::CliOut {
    let out = memd_command(home)
        .arg("--json")
        .arg("service")
        .args(args)
        .output()
        .unwrap();
    crate::common::CliOut {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn verify(home: &Path, user: bool, units: &[&Path]) -> (bool, String) {
    let run = home.join("verify-run");
    std::fs::create_dir_all(&run).unwrap();
    let mut cmd = Command::new("systemd-analyze");
    if user {
        cmd.arg("--user").env("XDG_RUNTIME_DIR", &run);
    }
    let out = cmd.arg("verify").args(units).output().unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn installed_units_pass_systemd_analyze_verify() {
    if !tool("systemd-analyze", "apt-get install systemd") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    // A MEMORY.md sidecar outside the data dir: its directory must be
    // writable under ProtectSystem=strict.
    let project = home.path().join("project");
    std::fs::create_dir_all(home.path().join("xdg-config/memd")).unwrap();
    std::fs::write(
        home.path().join("xdg-config/memd/config.toml"),
        format!(
            "[sidecar.files]\ndefault = \"{}\"\n",
            project.join("MEMORY.md").display()
        ),
    )
    .unwrap();
    let out = service(home.path(), &["install", "--no-start"]);
    assert_eq!(out.code, 0, "{out:?}");
    let v = out.json();
    let unit_dir = home.path().join("xdg-config/systemd/user");
    let socket_unit = unit_dir.join("memd.socket");
    let service_unit = unit_dir.join("memd.service");
    assert_eq!(v["files"], serde_json::json!([socket_unit, service_unit]));
    let text = std::fs::read_to_string(&service_unit).unwrap();
    let exe = Path::new(BIN).canonicalize().unwrap();
    assert!(
        text.contains(&format!("ExecStart={} daemon --data-dir ", exe.display())),
        "{text}"
    );
    assert!(
        home.path().join("xdg-data/memd").is_dir(),
        "install creates the data dir ReadWritePaths names"
    );
    assert!(
        text.contains(&format!(
            "\nReadWritePaths={} -{}\n",
            home.path().join("xdg-data/memd").display(),
            project.display()
        )),
        "{text}"
    );

    for user in [false, true] {
        let (ok, stderr) = verify(home.path(), user, &[&socket_unit, &service_unit]);
        assert!(ok, "systemd-analyze verify (user={user}) failed:\n{stderr}");
        let ours: Vec<&str> = stderr.lines().filter(|l| l.contains("memd.")).collect();
        assert!(
            ours.is_empty(),
            "warnings about our units (user={user}):\n{stderr}"
        );
    }

    // The check can fail: a misspelt key is reported.
    // (The service is looked up next to the socket unit: both are copied.)
    let broken = home.path().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::copy(&socket_unit, broken.join("memd.socket")).unwrap();
    std::fs::write(
        broken.join("memd.service"),
        text.replace("Restart=", "Restrat="),
    )
    .unwrap();
    let (_, stderr) = verify(
        home.path(),
        true,
        &[&broken.join("memd.socket"), &broken.join("memd.service")],
    );
    assert!(stderr.contains("Restrat"), "{stderr}");

    let out = service(home.path(), &["status", "--no-start"]);
    assert_eq!(out.code, 0, "{out:?}");
    let v = out.json();
    assert_eq!(v["files"][0]["installed"], true);
    assert_eq!(v["daemon"]["answers"], false);

    let out = service(home.path(), &["uninstall", "--no-start"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!socket_unit.exists() && !service_unit.exists());

    // An explicit data dir: clients look for the socket in it, so the
    // units put it there too.
    let data = home.path().join("elsewhere");
    let out = service(
        home.path(),
        &[
            "--data-dir",
            data.to_str().unwrap(),
            "install",
            "--no-start",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let sock = data.join("memd.sock");
    let text = std::fs::read_to_string(&service_unit).unwrap();
    assert!(
        text.contains(&format!("--socket {}", sock.display())),
        "{text}"
    );
    let text = std::fs::read_to_string(&socket_unit).unwrap();
    assert!(
        text.contains(&format!("ListenStream={}", sock.display())),
        "{text}"
    );
}

#[test]
fn checked_in_units_pass_systemd_analyze_verify_with_a_real_binary() {
    if !tool("systemd-analyze", "apt-get install systemd") {
        return;
    }
    // The files in systemd/ as a user copies them, with ExecStart pointing
    // at an existing binary (verify checks that it is executable).
    let dir = tempfile::tempdir().unwrap();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd");
    let socket_unit = dir.path().join("memd.socket");
    let service_unit = dir.path().join("memd.service");
    std::fs::copy(root.join("memd.socket"), &socket_unit).unwrap();
    let text = std::fs::read_to_string(root.join("memd.service")).unwrap();
    assert!(
        text.contains("ExecStart=%h/.cargo/bin/memd daemon"),
        "{text}"
    );
    std::fs::write(
        &service_unit,
        text.replace("%h/.cargo/bin/memd", &Path::new(BIN).display().to_string()),
    )
    .unwrap();
    let (ok, stderr) = verify(dir.path(), true, &[&socket_unit, &service_unit]);
    assert!(ok && !stderr.contains("memd."), "{stderr}");
}

#[test]
fn socket_activation_serves_through_the_inherited_socket_and_leaves_it() {
    if !tool("systemd-socket-activate", "apt-get install systemd") {
        return;
    }
    let d = Daemon::prepare(tempfile::tempdir().unwrap());
    let socket = d.dir.path().join("act/memd.sock");
    std::fs::create_dir_all(socket.parent().unwrap()).unwrap();
    let log = std::fs::File::create(d.log_path()).unwrap();
    // systemd-socket-activate binds, waits for the first connection, then
    // execs memd with the listener as fd 3 (LISTEN_FDS=1, LISTEN_PID).
    let mut activator = Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&socket)
        .args(["-E", "MEMD_LOG=info"])
        .arg(BIN)
        .arg("daemon")
        .arg("--data-dir")
        .arg(d.data_dir())
        .arg("--socket")
        .arg(&socket)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(log))
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !socket.exists() {
        assert!(
            Instant::now() < deadline,
            "the activator never bound the socket"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(
        !d.data_dir().join("memory.db").exists(),
        "memd must not run before the first connection"
    );

    // The first request starts the daemon and is served by it.
    let cli = |args: &[&str]| {
        let out = memd_command(d.dir.path())
            .arg("--socket")
            .arg(&socket)
            .arg("--data-dir")
            .arg(d.data_dir())
            .args(["--no-autostart", "--json"])
            .args(args)
            .output()
            .unwrap();
        crate::common::CliOut {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    };
    let out = cli(&["add", "served through an inherited socket"]);
    assert_eq!(out.code, 0, "{out:?}\n{}", d.log());
    assert_eq!(out.json()["accepted"], true);
    let status = cli(&["status"]).json();
    assert_eq!(status["socket_inherited"], true, "{status}");
    // HTTP on the inherited socket, too.
    let r = crate::common::http::get(&socket, "/v1/memories", &[]);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.json()["memories"][0]["content"],
        "served through an inherited socket"
    );
    assert_eq!(
        status["pid"],
        activator.id(),
        "the activated process itself serves"
    );
    assert_eq!(status["paths"]["socket"], socket.display().to_string());
    assert!(
        d.log()
            .contains("serving on the socket passed by the service manager")
    );

    // `memd stop`: returns once the daemon is gone (not waiting for the
    // socket file, which stays), a clean exit that leaves the manager's
    // socket in place.
    let started = Instant::now();
    let out = cli(&["stop"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "stop waited for a socket that stays"
    );
    let status = activator.wait().unwrap();
    assert!(status.success(), "exit {status}:\n{}", d.log());
    assert!(
        socket.exists(),
        "an inherited socket is never removed by the daemon"
    );
    assert!(
        d.log()
            .contains("leaving the inherited socket to the service manager")
    );
}

#[test]
fn launchd_plist_is_a_valid_property_list() {
    if !tool("python3", "its plistlib reads the plist") {
        return;
    }
    let home = tempfile::tempdir().unwrap();
    let out = service(
        home.path(),
        &["install", "--manager", "launchd", "--no-start"],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let plist = home.path().join("Library/LaunchAgents/dev.memd.memd.plist");
    let script = "import json, plistlib, sys\n\
                  print(json.dumps(plistlib.load(open(sys.argv[1], 'rb'))))";
    let parsed = Command::new("python3")
        .args(["-c", script])
        .arg(&plist)
        .output()
        .unwrap();
    assert!(
        parsed.status.success(),
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&parsed.stdout).unwrap();
    let exe = Path::new(BIN).canonicalize().unwrap();
    assert_eq!(v["Label"], "dev.memd.memd");
    assert_eq!(v["ProgramArguments"][0], exe.display().to_string());
    assert_eq!(v["ProgramArguments"][1], "daemon");
    assert_eq!(v["ProgramArguments"][2], "--data-dir");
    assert_eq!(v["KeepAlive"]["SuccessfulExit"], false);
    assert_eq!(v["RunAtLoad"], true);
    assert_eq!(v["Umask"], 63, "0077");
    // The checked-in file parses too.
    let checked_in = Path::new(env!("CARGO_MANIFEST_DIR")).join("systemd/dev.memd.memd.plist");
    let parsed = Command::new("python3")
        .args(["-c", script])
        .arg(&checked_in)
        .output()
        .unwrap();
    assert!(
        parsed.status.success(),
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
}
