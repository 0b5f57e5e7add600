//! Team memory's connection as libpq users know it, against a real
//! PostgreSQL that takes only TLS over TCP with SCRAM passwords: `sslmode`
//! up to `verify-full` (rustls), `sslrootcert`, the password from
//! `PGPASSWORD` or `PGPASSFILE` (ignored when others may read it), never
//! from the URL.

use std::path::Path;
use std::process::Command;

use crate::common::Daemon;
use crate::common::pg::Pg;

/// A CA and a server certificate for `localhost` only, with openssl.
fn certificates(dir: &Path) -> bool {
    if !crate::common::tool("openssl", "makes the test's certificates") {
        return false;
    }
    let run = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-days",
        "2",
        "-subj",
        "/CN=memd test CA",
    ]);
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "server.key",
        "-out",
        "server.csr",
        "-subj",
        "/CN=localhost",
    ]);
    std::fs::write(dir.join("san.ext"), "subjectAltName=DNS:localhost\n").unwrap();
    run(&[
        "x509",
        "-req",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "server.crt",
        "-days",
        "2",
        "-extfile",
        "san.ext",
    ]);
    // Another CA, which signed nothing of this server.
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "other.key",
        "-out",
        "other.crt",
        "-days",
        "2",
        "-subj",
        "/CN=another CA",
    ]);
    true
}

/// `memd team init` with this URL and environment: exit code, output.
fn init(home: &Path, url: &str, env: &[(&str, &str)]) -> (i32, serde_json::Value) {
    let out = crate::common::memd_command(home)
        .args(["--json", "team", "init"])
        .env("MEMD_TEAM_URL", url)
        .env_remove("PGPASSWORD")
        .env_remove("PGPASSFILE")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "not JSON: {} {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), v)
}

#[test]
fn tls_up_to_verify_full_and_passwords_where_libpq_keeps_them() {
    let certs = tempfile::tempdir().unwrap();
    if !certificates(certs.path()) {
        return;
    }
    let Some(pg) = Pg::start_tls(certs.path()) else {
        return;
    };
    let port = pg.tcp.unwrap();
    let home = tempfile::tempdir().unwrap();
    let ca = certs.path().join("ca.crt").display().to_string();
    let other = certs.path().join("other.crt").display().to_string();
    let url = |host: &str, mode: &str, root: &str| {
        format!("postgresql://memd@{host}:{port}/postgres?sslmode={mode}&sslrootcert={root}")
    };
    let pw = [("PGPASSWORD", "sekret")];

    // verify-full: the chain and the name.
    let (code, v) = init(home.path(), &url("localhost", "verify-full", &ca), &pw);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["to"], 6);
    // A server certificate no trusted root signed: refused, exit 5.
    let (code, v) = init(home.path(), &url("localhost", "verify-full", &other), &pw);
    assert_eq!(
        (code, v["code"].as_str()),
        (5, Some("team_unavailable")),
        "{v}"
    );
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains("certificate")
            && v["error"]
                .as_str()
                .unwrap()
                .contains("TLS failed: check sslmode"),
        "{v}"
    );
    // The name: the certificate is for localhost, not 127.0.0.1.
    let (code, v) = init(home.path(), &url("127.0.0.1", "verify-full", &ca), &pw);
    assert_eq!(code, 5, "verify-full checks the name: {v}");
    let (code, v) = init(home.path(), &url("127.0.0.1", "verify-ca", &ca), &pw);
    assert_eq!(code, 0, "verify-ca checks only the chain: {v}");
    // require: encrypted, whatever signed it.
    let (code, v) = init(home.path(), &url("localhost", "require", &other), &pw);
    assert_eq!(code, 0, "{v}");
    // The server takes only TLS: disable is refused by it (its pg_hba.conf
    // refuses the login: forbidden, naming pg_hba.conf).
    let (code, v) = init(home.path(), &url("localhost", "disable", &ca), &pw);
    assert_eq!(code, 7, "{v}");
    assert!(v["error"].as_str().unwrap().contains("pg_hba.conf"), "{v}");

    // The password: no password, a wrong one, a password file (only when
    // others may not read it), never in the URL.
    let good = url("localhost", "verify-full", &ca);
    let (code, v) = init(home.path(), &good, &[]);
    assert_eq!(code, 5, "{v}");
    // A wrong password is the server's refusal of the login: forbidden,
    // saying where the password comes from.
    let (code, v) = init(home.path(), &good, &[("PGPASSWORD", "wrong")]);
    assert_eq!((code, v["code"].as_str()), (7, Some("forbidden")), "{v}");
    assert!(
        v["error"].as_str().unwrap().contains("refused the login"),
        "{v}"
    );
    let passfile = home.path().join("pgpass");
    std::fs::write(
        &passfile,
        format!("localhost:{port}:postgres:memd:sekret\n"),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    let file = passfile.display().to_string();
    let (code, v) = init(home.path(), &good, &[("PGPASSFILE", &file)]);
    assert_eq!(code, 0, "{v}");
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o644)).unwrap();
    let (code, _) = init(home.path(), &good, &[("PGPASSFILE", &file)]);
    assert_eq!(code, 5, "a password file others may read is ignored");
    std::fs::set_permissions(&passfile, std::fs::Permissions::from_mode(0o600)).unwrap();
    let (code, v) = init(
        home.path(),
        &format!(
            "postgresql://memd:sekret@localhost:{port}/postgres?sslmode=verify-full&sslrootcert={ca}"
        ),
        &[],
    );
    assert_ne!(code, 0, "a URL with a password is refused: {v}");

    // Two daemons share a namespace over that connection.
    let config = |machine: &str| {
        format!("[team]\nurl = \"{good}\"\nnamespaces = [\"team-*\"]\nmachine = \"{machine}\"\n")
    };
    let start = |machine: &str| {
        let dir = tempfile::Builder::new().prefix("memd").tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, config(machine)).unwrap();
        let mut d = Daemon::prepare(dir);
        d.extra = vec!["--config".into(), path.display().to_string()];
        d.env.push(("PGPASSFILE".into(), file.clone()));
        d.spawn();
        d
    };
    let a = start("a");
    let b = start("b");
    let (v, code) = a.json(&["--namespace", "team-tls", "add", "sent over TLS"]);
    assert_eq!(code, 0, "{v}");
    Pg::wait_for(std::time::Duration::from_secs(10), "the row on b", || {
        let (v, _) = b.json(&["--namespace", "team-tls", "list"]);
        v["memories"][0]["content"] == "sent over TLS"
    });
    let status = b.status();
    assert_eq!(status["team"]["connected"], true, "{status}");
    assert!(
        !b.log().contains("sekret") && !a.log().contains("sekret"),
        "the password never reaches a log"
    );
}
