//! `memd-bench team`: team memory against a real PostgreSQL started here
//! (the distribution's server, `initdb` in a temporary directory, a private
//! socket directory; as root it runs as the `postgres` user). Measured over
//! the real daemons' sockets, each figure next to its baseline in the same
//! run:
//! - a shared add (written through PostgreSQL) next to a local add, the two
//!   interleaved on one daemon;
//! - propagation: an add on machine A until machine B's list shows it;
//! - the initial pull of N rows by a new machine (rows/s), from its start
//!   to its `READY=1`;
//! - lexical search on that replica next to the same rows held locally;
//! - a partition (PostgreSQL frozen with SIGSTOP): local adds during it next
//!   to before, and how long a shared add takes to be refused.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use clap::Args;
use memd_client::proto::{AddRequest, Filter, ListRequest, SearchMode, SearchRequest};
use memd_client::{Client, ConnectOptions};
use serde_json::{Value, json};

use crate::corpus;
use crate::daemon::BenchDaemon;
use crate::stats::{Summary, summarize};

#[derive(Debug, Args)]
pub struct TeamArgs {
    /// Rows the new machine pulls.
    #[arg(long, default_value_t = 100_000)]
    pub rows: usize,
    /// Samples per latency figure.
    #[arg(long, default_value_t = 300)]
    pub samples: usize,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// A PostgreSQL server of this run (the fleet benchmark's too).
pub(crate) struct Pg {
    pub(crate) dir: PathBuf,
    bin: PathBuf,
}

pub(crate) fn is_root() -> bool {
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
    fn start() -> anyhow::Result<Pg> {
        Pg::start_with(100)
    }

    /// A new server taking `max_connections` connections.
    pub(crate) fn start_with(max_connections: u32) -> anyhow::Result<Pg> {
        let pg = Pg::new_dir("pg")?;
        let data = pg.dir.join("data").display().to_string();
        pg.run(
            "initdb",
            &["-D", &data, "-A", "trust", "-U", "postgres", "--no-sync"],
        )?;
        pg.start_server(max_connections)?;
        Ok(pg)
    }

    /// A streaming replica of this server (`pg_basebackup -R`), a hot
    /// standby on a socket directory of its own.
    pub(crate) fn replica(&self, max_connections: u32) -> anyhow::Result<Pg> {
        let replica = Pg::new_dir("replica")?;
        let data = replica.dir.join("data").display().to_string();
        self.run(
            "pg_basebackup",
            &[
                "-h",
                &self.dir.display().to_string(),
                "-U",
                "postgres",
                "-D",
                &data,
                "-R",
                "-X",
                "stream",
                "--no-sync",
            ],
        )?;
        replica.start_server(max_connections)?;
        Ok(replica)
    }

    /// An empty directory of this run, the `postgres` user's when root.
    fn new_dir(what: &str) -> anyhow::Result<Pg> {
        let mut bins: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .context("PostgreSQL is not installed (apt-get install postgresql)")?
            .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
            .filter(|p| p.join("initdb").is_file())
            .collect();
        bins.sort();
        let bin = bins.pop().context("no initdb under /usr/lib/postgresql")?;
        let dir = std::env::temp_dir().join(format!("memd-bench-{what}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)?;
        let pg = Pg { dir, bin };
        pg.own(&pg.dir)?;
        Ok(pg)
    }

    /// Gives `path` to the `postgres` user, when root (the server's tools
    /// refuse to run as root).
    pub(crate) fn own(&self, path: &Path) -> anyhow::Result<()> {
        if is_root() {
            ensure!(
                Command::new("chown")
                    .args(["-R", "postgres:postgres"])
                    .arg(path)
                    .status()?
                    .success(),
                "chown failed"
            );
        }
        Ok(())
    }

    fn start_server(&self, max_connections: u32) -> anyhow::Result<()> {
        let data = self.dir.join("data").display().to_string();
        let opts = format!(
            "-k {} -p 5432 -c listen_addresses='' -c max_connections={max_connections}",
            self.dir.display()
        );
        let log = self.dir.join("server.log").display().to_string();
        self.run(
            "pg_ctl",
            &["-D", &data, "-o", &opts, "-l", &log, "-w", "start"],
        )?;
        Ok(())
    }

    /// The text `sql` returns through `psql -At` (as `postgres`).
    pub(crate) fn query(&self, sql: &str) -> anyhow::Result<String> {
        let dir = self.dir.display().to_string();
        let out = self.run(
            "psql",
            &[
                "-h",
                &dir,
                "-U",
                "postgres",
                "-X",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-c",
                sql,
            ],
        )?;
        Ok(out.trim().to_string())
    }

    /// The CPU time of the server's processes so far, in seconds.
    pub(crate) fn cpu_seconds(&self) -> f64 {
        let tick = 100.0; // USER_HZ on Linux
        self.processes()
            .iter()
            .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
            .filter_map(|stat| {
                let rest = stat
                    .rsplit_once(')')?
                    .1
                    .split_whitespace()
                    .collect::<Vec<_>>();
                let user: f64 = rest.get(11)?.parse().ok()?;
                let system: f64 = rest.get(12)?.parse().ok()?;
                Some((user + system) / tick)
            })
            .sum()
    }

    pub(crate) fn run(&self, program: &str, args: &[&str]) -> anyhow::Result<String> {
        let path = if program.starts_with('/') {
            PathBuf::from(program)
        } else {
            self.bin.join(program)
        };
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(path);
            c
        } else {
            Command::new(path)
        };
        let out = cmd.args(args).current_dir(&self.dir).output()?;
        if !out.status.success() {
            bail!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn url(&self) -> String {
        self.url_as("postgres")
    }

    /// A key=value URL of the server as `user`.
    pub(crate) fn url_as(&self, user: &str) -> String {
        format!(
            "host={} port=5432 user={user} dbname=postgres sslmode=disable",
            self.dir.display()
        )
    }

    fn psql(&self, sql_file: &Path) -> anyhow::Result<()> {
        self.run(
            "psql",
            &[
                "-h",
                &self.dir.display().to_string(),
                "-U",
                "postgres",
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-f",
                &sql_file.display().to_string(),
            ],
        )?;
        Ok(())
    }

    /// The postmaster and its backends.
    fn processes(&self) -> Vec<u32> {
        let Some(root) = std::fs::read_to_string(self.dir.join("data/postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<u32>().ok()))
        else {
            return Vec::new();
        };
        let mut out = vec![root];
        for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
                continue;
            };
            let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
            if stat
                .rsplit_once(')')
                .and_then(|(_, r)| r.split_whitespace().nth(1))
                .and_then(|p| p.parse::<u32>().ok())
                == Some(root)
            {
                out.push(pid);
            }
        }
        out
    }

    pub(crate) fn signal(&self, name: &str) {
        for pid in self.processes() {
            let _ = Command::new("kill")
                .arg(format!("-{name}"))
                .arg(pid.to_string())
                .output();
        }
    }
}

impl Drop for Pg {
    fn drop(&mut self) {
        self.signal("CONT");
        let data = self.dir.join("data").display().to_string();
        let _ = self.run("pg_ctl", &["-D", &data, "-m", "immediate", "-w", "stop"]);
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A machine sharing `pattern` (machines a and b share `team-*`; the new
/// machine c shares `pull-*` alone, so only it pulls the bulk rows).
fn team_config(pg: &Pg, machine: &str, pattern: &str) -> String {
    format!(
        "[team]\nurl = \"{}\"\nnamespaces = [\"{pattern}\"]\nmachine = \"{machine}\"\ntimeout_ms = 1000\n\
         [lifecycle]\ninterval_hours = 0\n[lifecycle.limits]\nproject = 1000000\n",
        pg.url()
    )
}

pub(crate) async fn session(d: &BenchDaemon, namespace: &str) -> anyhow::Result<Client> {
    let mut o = ConnectOptions::new(d.socket());
    o.agent_id = "memd-bench".into();
    o.namespace = namespace.into();
    Ok(Client::connect(o).await?)
}

pub(crate) fn add(text: String) -> AddRequest {
    AddRequest {
        content: text,
        ..AddRequest::default()
    }
}

fn sql_text(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

#[derive(Debug, serde::Serialize)]
struct Row {
    op: String,
    note: String,
    n: usize,
    p50_us: f64,
    p95_us: f64,
    p99_us: f64,
    per_sec: f64,
}

impl Row {
    fn of(op: &str, note: &str, s: &Summary) -> Row {
        Row {
            op: op.into(),
            note: note.into(),
            n: s.n,
            p50_us: s.p50_us,
            p95_us: s.p95_us,
            p99_us: s.p99_us,
            per_sec: s.per_sec,
        }
    }
}

pub fn run(args: TeamArgs) -> anyhow::Result<()> {
    crate::block_on(run_async(args))
}

async fn run_async(args: TeamArgs) -> anyhow::Result<()> {
    let pg = Pg::start()?;
    {
        let target =
            memd::facade::team::Target::parse(&pg.url()).map_err(|e| anyhow::anyhow!(e))?;
        let mut link = memd::facade::team::connect(&target, Duration::from_secs(5), false).await?;
        memd::facade::team::init(&mut link.client).await?;
    }
    let a = BenchDaemon::start(Some(&team_config(&pg, "a", "team-*")))?;
    let b = BenchDaemon::start(Some(&team_config(&pg, "b", "team-*")))?;
    let mut rows = Vec::new();
    let n = args.samples;

    // 1. Shared and local adds, interleaved on machine a.
    let mut shared = session(&a, "team-bench").await?;
    let mut local = session(&a, "local-bench").await?;
    let (mut s_shared, mut s_local) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let wall = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        local
            .add(add(format!("local note {i} of the bench run")))
            .await?;
        s_local.push(t.elapsed());
        let t = Instant::now();
        shared
            .add(add(format!("shared note {i} of the bench run")))
            .await?;
        s_shared.push(t.elapsed());
    }
    let wall = wall.elapsed();
    let local_add = summarize(&mut s_local, wall);
    rows.push(Row::of(
        "add, local namespace",
        "machine a, interleaved",
        &local_add,
    ));
    rows.push(Row::of(
        "add, shared namespace",
        "machine a, written through PostgreSQL",
        &summarize(&mut s_shared, wall),
    ));

    // 2. Propagation a → b.
    let mut reader = session(&b, "team-bench").await?;
    let newest = ListRequest {
        filter: Filter::default(),
        limit: 1,
        offset: 0,
    };
    let mut samples = Vec::with_capacity(n);
    let wall = Instant::now();
    for i in 0..n {
        let text = format!("propagated note {i}");
        let t = Instant::now();
        shared.add(add(text.clone())).await?;
        loop {
            let page = reader.list(newest.clone()).await?;
            if page.memories.first().is_some_and(|m| m.content == text) {
                break;
            }
            ensure!(
                t.elapsed() < Duration::from_secs(10),
                "note {i} never reached b"
            );
            tokio::time::sleep(Duration::from_micros(200)).await;
        }
        samples.push(t.elapsed());
    }
    rows.push(Row::of(
        "propagation a → b",
        "add on a until b's list shows it",
        &summarize(&mut samples, wall.elapsed()),
    ));

    // 3. The initial pull of a new machine.
    let vocab = corpus::vocabulary(20_000);
    let items = corpus::memories(args.rows, &vocab, 7);
    let sql = pg.dir.join("seed.sql");
    {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(&sql)?);
        for chunk in items.chunks(1_000) {
            write!(
                f,
                "INSERT INTO memd.memories (namespace, content, category, tags, source) VALUES "
            )?;
            for (i, it) in chunk.iter().enumerate() {
                if i > 0 {
                    write!(f, ",")?;
                }
                write!(
                    f,
                    "('pull-bench', {}, {}, ARRAY[{}], 'import')",
                    sql_text(&it.content),
                    sql_text(it.category),
                    it.tags
                        .iter()
                        .map(|t| sql_text(t))
                        .collect::<Vec<_>>()
                        .join(",")
                )?;
            }
            writeln!(f, ";")?;
        }
    }
    if is_root() {
        let _ = Command::new("chown").arg("postgres").arg(&sql).status();
    }
    pg.psql(&sql)?;
    let t = Instant::now();
    let c = BenchDaemon::start(Some(&team_config(&pg, "c", "pull-*")))?;
    let pulled = t.elapsed();
    rows.push(Row {
        op: format!("initial pull, {} rows", args.rows),
        note: "a new machine from start to READY=1".into(),
        n: args.rows,
        p50_us: pulled.as_secs_f64() * 1e6,
        p95_us: 0.0,
        p99_us: 0.0,
        per_sec: args.rows as f64 / pulled.as_secs_f64(),
    });

    // 4. Search on the replica next to the same rows held locally.
    let d = BenchDaemon::start(Some(
        "[lifecycle]\ninterval_hours = 0\n[lifecycle.limits]\nproject = 1000000\n",
    ))?;
    {
        let mut c = session(&d, "pull-bench").await?;
        let t = Instant::now();
        for (k, chunk) in items.chunks(10_000).enumerate() {
            let doc = local_doc(chunk, k * 10_000);
            c.import(&doc[..], false).await?;
        }
        let took = t.elapsed();
        rows.push(Row {
            op: format!("import, {} rows", args.rows),
            note: "the same rows into a local namespace (the pull's baseline)".into(),
            n: args.rows,
            p50_us: took.as_secs_f64() * 1e6,
            p95_us: 0.0,
            p99_us: 0.0,
            per_sec: args.rows as f64 / took.as_secs_f64(),
        });
    }
    let queries = corpus::queries(n, &vocab, 11);
    let mut on_replica = session(&c, "pull-bench").await?;
    let mut on_local = session(&d, "pull-bench").await?;
    let (mut s_rep, mut s_loc) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let wall = Instant::now();
    for q in &queries {
        let req = SearchRequest {
            query: q.clone(),
            filter: Filter::default(),
            limit: 10,
            mode: SearchMode::Lexical,
            syntax: Default::default(),
            explain: false,
            offset: 0,
        };
        let t = Instant::now();
        on_replica.search(req.clone()).await?;
        s_rep.push(t.elapsed());
        let t = Instant::now();
        on_local.search(req).await?;
        s_loc.push(t.elapsed());
    }
    let wall = wall.elapsed();
    rows.push(Row::of(
        "search lexical, replica",
        &format!("{} pulled rows", args.rows),
        &summarize(&mut s_rep, wall),
    ));
    rows.push(Row::of(
        "search lexical, local",
        &format!("the same {} rows imported", args.rows),
        &summarize(&mut s_loc, wall),
    ));

    // 5. A partition: PostgreSQL frozen.
    pg.signal("STOP");
    let mut samples = Vec::with_capacity(n);
    let wall = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        local
            .add(add(format!("local note {i} during the partition")))
            .await?;
        samples.push(t.elapsed());
    }
    rows.push(Row::of(
        "add, local namespace, PostgreSQL frozen",
        "machine a during SIGSTOP (compare: add, local namespace)",
        &summarize(&mut samples, wall.elapsed()),
    ));
    let mut samples = Vec::new();
    let wall = Instant::now();
    for i in 0..5 {
        let t = Instant::now();
        let r = shared
            .add(add(format!("shared note {i} during the partition")))
            .await;
        ensure!(r.is_err(), "a shared add passed during the partition");
        samples.push(t.elapsed());
    }
    rows.push(Row::of(
        "shared add refused, PostgreSQL frozen",
        "time to team_unavailable (timeout_ms 1000)",
        &summarize(&mut samples, wall.elapsed()),
    ));
    pg.signal("CONT");

    crate::perf::report(&rows, args.json, print_table);
    drop((a, b, c, d));
    Ok(())
}

fn local_doc(items: &[corpus::Item], from: usize) -> Vec<u8> {
    let entries: Vec<Value> = items
        .iter()
        .enumerate()
        .map(|(i, it)| {
            json!({
                "uid": format!("{:032x}", from + i),
                "content": it.content,
                "category": it.category,
                "tags": it.tags,
                "namespace": "pull-bench",
                "source": "import",
            })
        })
        .collect();
    serde_json::to_vec(&json!({"entries": entries})).unwrap_or_default()
}

fn print_table(report: &Value) {
    println!("{}", report["machine"].as_str().unwrap_or_default());
    println!(
        "{:<42} {:>10} {:>10} {:>10} {:>10}  note",
        "op", "p50 µs", "p95 µs", "p99 µs", "per s"
    );
    for r in report["rows"].as_array().into_iter().flatten() {
        println!(
            "{:<42} {:>10.0} {:>10.0} {:>10.0} {:>10.0}  {}",
            r["op"].as_str().unwrap_or_default(),
            r["p50_us"].as_f64().unwrap_or_default(),
            r["p95_us"].as_f64().unwrap_or_default(),
            r["p99_us"].as_f64().unwrap_or_default(),
            r["per_sec"].as_f64().unwrap_or_default(),
            r["note"].as_str().unwrap_or_default(),
        );
    }
}
