//! A real PostgreSQL for the team-memory tests: the distribution's server
//! (`postgresql` package), a cluster made by `initdb` in a temporary
//! directory, listening only on a private Unix socket directory. As root,
//! the server runs as the `postgres` user the package creates (PostgreSQL
//! refuses to run as root).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// One PostgreSQL server.
pub struct Pg {
    /// Holds the cluster and the socket directory.
    pub dir: PathBuf,
    port: u16,
    /// Also listening on 127.0.0.1 (TLS only, passwords): its port.
    pub tcp: Option<u16>,
}

/// The directory of the server's programs (`initdb`, `pg_ctl`, `psql`).
fn bin_dir() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|p| p.join("initdb").is_file())
        .collect();
    dirs.sort();
    dirs.pop()
}

fn is_root() -> bool {
    // SAFETY-free: the effective uid from /proc.
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

impl Pg {
    /// Starts a new server, or `None` (the test is skipped, or fails under
    /// `MEMD_REQUIRE_TOOLS=1`) when PostgreSQL is not installed.
    pub fn start() -> Option<Pg> {
        Self::start_with(None)
    }

    /// Starts a server that also listens on 127.0.0.1 with TLS only
    /// (`hostssl`, passwords by SCRAM): `tls` holds `server.crt` and
    /// `server.key`. Role `memd` (superuser) has the password `sekret`.
    pub fn start_tls(tls: &Path) -> Option<Pg> {
        Self::start_with(Some(tls))
    }

    fn start_with(tls: Option<&Path>) -> Option<Pg> {
        let bin = bin_dir();
        if !super::require(
            bin.is_some(),
            "PostgreSQL is not installed (apt-get install postgresql)",
        ) {
            return None;
        }
        let (n, dir) = new_dir();
        let tcp = tls.map(|_| {
            std::net::TcpListener::bind("127.0.0.1:0")
                .unwrap()
                .local_addr()
                .unwrap()
                .port()
        });
        let pg = Pg {
            dir,
            port: 5432 + n % 1000,
            tcp,
        };
        own_by_postgres(&pg.dir);
        let out = pg.run(
            "initdb",
            &[
                "-D",
                &pg.data().display().to_string(),
                "-A",
                "trust",
                "-U",
                "postgres",
                "--no-sync",
                "-E",
                "UTF8",
            ],
        );
        assert!(out.status.success(), "initdb failed: {}", text(&out));
        if let Some(tls) = tls {
            let data = pg.data();
            for f in ["server.crt", "server.key"] {
                std::fs::copy(tls.join(f), data.join(f)).unwrap();
            }
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(
                data.join("server.key"),
                std::fs::Permissions::from_mode(0o600),
            )
            .unwrap();
            let hba = std::fs::read_to_string(data.join("pg_hba.conf")).unwrap();
            std::fs::write(
                data.join("pg_hba.conf"),
                format!(
                    "hostssl all all 127.0.0.1/32 scram-sha-256\n\
                     host all all 127.0.0.1/32 reject\n{hba}"
                ),
            )
            .unwrap();
            let mut conf = std::fs::OpenOptions::new()
                .append(true)
                .open(data.join("postgresql.conf"))
                .unwrap();
            use std::io::Write;
            writeln!(
                conf,
                "ssl = on\nssl_cert_file = 'server.crt'\nssl_key_file = 'server.key'\n\
                 password_encryption = 'scram-sha-256'"
            )
            .unwrap();
            if is_root() {
                let _ = Command::new("chown")
                    .args(["-R", "postgres:postgres"])
                    .arg(&data)
                    .status();
            }
        }
        pg.start_server();
        if tls.is_some() {
            pg.psql("CREATE ROLE memd LOGIN SUPERUSER PASSWORD 'sekret'");
        }
        Some(pg)
    }

    fn data(&self) -> PathBuf {
        self.dir.join("data")
    }

    /// The socket directory.
    pub fn socket_dir(&self) -> &Path {
        &self.dir
    }

    /// The server's pid (from its pid file).
    pub fn pid(&self) -> u32 {
        std::fs::read_to_string(self.data().join("postmaster.pid"))
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    }

    /// The server's processes: the postmaster and every backend it forked.
    fn processes(&self) -> Vec<u32> {
        let root = self.pid();
        let mut out = vec![root];
        if let Ok(dir) = std::fs::read_dir("/proc") {
            for e in dir.flatten() {
                let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                    continue;
                };
                let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
                // pid (comm) state ppid …: the comm may hold spaces.
                let ppid = stat
                    .rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1))
                    .and_then(|p| p.parse::<u32>().ok());
                if ppid == Some(root) {
                    out.push(pid);
                }
            }
        }
        out
    }

    /// Freezes the server and all its backends (SIGSTOP): a partition.
    pub fn freeze(&self) {
        for pid in self.processes() {
            send(pid, "STOP");
        }
    }

    /// Thaws it (SIGCONT).
    pub fn thaw(&self) {
        for pid in self.processes() {
            send(pid, "CONT");
        }
    }

    /// A key=value URL memd takes (no password: trust on the socket).
    pub fn url(&self) -> String {
        format!(
            "host={} port={} user=postgres dbname=postgres sslmode=disable",
            self.dir.display(),
            self.sock_port()
        )
    }

    /// The same server as a URL over its Unix socket, without `sslmode`
    /// (append `&sslmode=…`).
    pub fn socket_url(&self) -> String {
        format!(
            "postgresql://postgres@/postgres?host={}&port={}",
            self.dir.display(),
            self.sock_port()
        )
    }

    /// The port the Unix socket is named after.
    fn sock_port(&self) -> u16 {
        self.tcp.unwrap_or(self.port)
    }

    fn run(&self, program: &str, args: &[&str]) -> Output {
        let path = bin_dir().unwrap().join(program);
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        cmd.args(args).current_dir(&self.dir).output().unwrap()
    }

    /// Starts the server (again) and waits until it accepts connections.
    pub fn start_server(&self) {
        let listen = if self.tcp.is_some() { "127.0.0.1" } else { "" };
        let port = self.tcp.unwrap_or(self.port);
        let options = format!(
            // A crash of the server (`-m immediate`) keeps what it
            // acknowledged (synchronous commits); the machine itself does not
            // crash, so its page cache needs no fsync.
            "-k {} -p {port} -c listen_addresses='{listen}' -c fsync=off \
             -c full_page_writes=off -c max_connections=200",
            self.dir.display(),
        );
        let log = self.dir.join("server.log").display().to_string();
        let out = self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data().display().to_string(),
                "-o",
                &options,
                "-l",
                &log,
                "-w",
                "start",
            ],
        );
        assert!(
            out.status.success(),
            "pg_ctl start failed: {}\n{}",
            text(&out),
            std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
        );
    }

    /// Stops the server: `fast` or `immediate` (a crash, as
    /// `pg_ctl stop -m immediate`).
    pub fn stop(&self, mode: &str) {
        let out = self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data().display().to_string(),
                "-m",
                mode,
                "-w",
                "stop",
            ],
        );
        assert!(out.status.success(), "pg_ctl stop failed: {}", text(&out));
    }

    /// `psql` on this server as `postgres`, stopping at the first error,
    /// with `extra` arguments.
    fn psql_run(&self, extra: &[&str]) -> Output {
        let (host, port) = (self.dir.display().to_string(), self.sock_port().to_string());
        let mut args = vec![
            "-h",
            &host,
            "-p",
            &port,
            "-U",
            "postgres",
            "-d",
            "postgres",
            "-X",
            "-q",
            "-v",
            "ON_ERROR_STOP=1",
        ];
        args.extend_from_slice(extra);
        self.run("psql", &args)
    }

    /// Runs SQL with `psql` (another writer, not memd); its output.
    pub fn psql(&self, sql: &str) -> String {
        let out = self.psql_run(&["-t", "-A", "-c", sql]);
        assert!(out.status.success(), "psql failed: {}", text(&out));
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Runs SQL with `psql`, expecting it to fail; the error.
    pub fn psql_err(&self, sql: &str) -> String {
        let out = self.psql_run(&["-c", sql]);
        assert!(!out.status.success(), "psql should have failed");
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// `pg_dump` of the `memd` schema, as a file (plain SQL).
    pub fn dump(&self, to: &Path) {
        let out = self.run(
            "pg_dump",
            &[
                "-h",
                &self.dir.display().to_string(),
                "-p",
                &self.sock_port().to_string(),
                "-U",
                "postgres",
                "-n",
                "memd",
                "-f",
                &to.display().to_string(),
                "postgres",
            ],
        );
        assert!(out.status.success(), "pg_dump failed: {}", text(&out));
    }

    /// The `memd` schema's definition as `pg_dump --schema-only` writes it
    /// (objects, owners, grants, policies), without its comments, session
    /// settings and `\restrict` guard: what `memd team init` made.
    pub fn schema_sql(&self) -> String {
        let out = self.run(
            "pg_dump",
            &[
                "-h",
                &self.dir.display().to_string(),
                "-p",
                &self.sock_port().to_string(),
                "-U",
                "postgres",
                "--schema-only",
                "-n",
                "memd",
                "postgres",
            ],
        );
        assert!(out.status.success(), "pg_dump failed: {}", text(&out));
        let mut sql = String::new();
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            // `\restrict KEY` (pg_dump's guard, a new key each run).
            if line.starts_with("--")
                || line.starts_with("\\restrict")
                || line.starts_with("\\unrestrict")
                || line.starts_with("SET ")
                || line.starts_with("SELECT pg_catalog.set_config")
                || (line.is_empty() && (sql.is_empty() || sql.ends_with("\n\n")))
            {
                continue;
            }
            sql.push_str(line);
            sql.push('\n');
        }
        sql
    }

    /// Drops the `memd` schema and loads a dump (a restore from backup).
    pub fn restore(&self, from: &Path) {
        self.psql("DROP SCHEMA memd CASCADE");
        let out = self.psql_run(&["-f", &from.display().to_string()]);
        assert!(out.status.success(), "restore failed: {}", text(&out));
    }

    /// Waits until `f` holds (polling), or panics after `limit`.
    pub fn wait_for(limit: Duration, what: &str, mut f: impl FnMut() -> bool) {
        let deadline = Instant::now() + limit;
        while !f() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        if self.data().join("postmaster.pid").exists() {
            self.thaw();
        }
        let _ = self.run(
            "pg_ctl",
            &[
                "-D",
                &self.data().display().to_string(),
                "-m",
                "immediate",
                "-w",
                "stop",
            ],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// As root, gives `dir` (and everything in it) to `postgres`, the user
/// the server, its tools and PgBouncer run as.
fn own_by_postgres(dir: &Path) {
    if is_root() {
        let ok = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "chown to postgres failed");
    }
}

/// A new directory for a server, and its number (which names its port).
fn new_dir() -> (u16, PathBuf) {
    static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("memd-pg-{}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    (n, dir)
}

impl Pg {
    /// A streaming replica of this server (`pg_basebackup -R`), started
    /// as a hot standby on a socket of its own.
    pub fn replica(&self) -> Pg {
        let (n, dir) = new_dir();
        let replica = Pg {
            dir,
            port: 5432 + n % 1000,
            tcp: None,
        };
        own_by_postgres(&replica.dir);
        let out = self.run(
            "pg_basebackup",
            &[
                "-h",
                &self.dir.display().to_string(),
                "-p",
                &self.sock_port().to_string(),
                "-U",
                "postgres",
                "-D",
                &replica.data().display().to_string(),
                "-R",
                "-X",
                "stream",
                "--no-sync",
            ],
        );
        assert!(out.status.success(), "pg_basebackup failed: {}", text(&out));
        replica.start_server();
        replica
    }

    /// Pauses (`true`) or resumes replaying the primary's changes, on a
    /// replica: a replica that falls behind.
    pub fn pause_replay(&self, pause: bool) {
        let f = if pause { "pause" } else { "resume" };
        self.psql(&format!("SELECT pg_wal_replay_{f}()"));
    }
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Sends a signal; a process that exited meanwhile is no error.
fn send(pid: u32, name: &str) {
    let _ = Command::new("kill")
        .arg(format!("-{name}"))
        .arg(pid.to_string())
        .output();
}

/// PgBouncer (Debian's `pgbouncer` package) in front of a [`Pg`], on a
/// Unix socket of its own, in transaction mode: each transaction may run
/// on another server connection, nothing of a session is carried between
/// them (no `LISTEN`, no named statement, no `SET`). As root it runs as
/// `postgres` (PgBouncer refuses root).
pub struct Bouncer {
    dir: PathBuf,
    port: u16,
    child: std::process::Child,
}

impl Bouncer {
    /// Starts one for `users` (trusted, as the server trusts its socket),
    /// with at most `pool` server connections per user; `None` (skipped,
    /// or a failure under `MEMD_REQUIRE_TOOLS=1`) without PgBouncer.
    pub fn start(pg: &Pg, users: &[&str], pool: usize) -> Option<Bouncer> {
        let bin = Path::new("/usr/sbin/pgbouncer");
        if !super::require(
            bin.is_file(),
            "PgBouncer is not installed (apt-get install pgbouncer)",
        ) {
            return None;
        }
        let dir = pg.dir.join("bouncer");
        std::fs::create_dir_all(&dir).unwrap();
        let port = pg.sock_port() + 1000;
        let list: String = users.iter().map(|u| format!("\"{u}\" \"\"\n")).collect();
        std::fs::write(dir.join("users.txt"), list).unwrap();
        std::fs::write(
            dir.join("pgbouncer.ini"),
            format!(
                "[databases]\n* = host={} port={}\n\n[pgbouncer]\nlisten_addr =\n\
                 listen_port = {port}\nunix_socket_dir = {d}\nauth_type = trust\n\
                 auth_file = {d}/users.txt\npool_mode = transaction\n\
                 default_pool_size = {pool}\nmax_client_conn = 1000\n\
                 logfile = {d}/pgbouncer.log\npidfile = {d}/pgbouncer.pid\n",
                pg.dir.display(),
                pg.sock_port(),
                d = dir.display()
            ),
        )
        .unwrap();
        own_by_postgres(&dir);
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(bin);
            c
        } else {
            Command::new(bin)
        };
        let child = cmd
            .arg(dir.join("pgbouncer.ini"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let b = Bouncer { dir, port, child };
        let socket = b.dir.join(format!(".s.PGSQL.{port}"));
        Pg::wait_for(Duration::from_secs(10), "PgBouncer's socket", || {
            socket.exists()
        });
        Some(b)
    }

    /// A key=value URL through the pooler as `user`.
    pub fn url(&self, user: &str) -> String {
        format!(
            "host={} port={} user={user} dbname=postgres sslmode=disable",
            self.dir.display(),
            self.port
        )
    }

    /// Its log (errors it met, connections it made).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("pgbouncer.log")).unwrap_or_default()
    }
}

impl Drop for Bouncer {
    fn drop(&mut self) {
        let pid = std::fs::read_to_string(self.dir.join("pgbouncer.pid"));
        if let Some(pid) = pid.ok().and_then(|p| p.trim().parse::<u32>().ok()) {
            send(pid, "TERM");
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
