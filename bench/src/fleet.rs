//! `memd-bench fleet`: many machines on one team server. `--machines`
//! real daemons (separate processes and data directories on this machine,
//! without the embedder) share one namespace through one PostgreSQL
//! started here, logging in as one ordinary role with `write` on it (row-
//! level security in force, as on a managed server), in each of these
//! setups:
//!
//! - `direct`: every daemon connects to PostgreSQL (a writer and the pull's
//!   `LISTEN` connection each);
//! - `pooler`: writes through PgBouncer in transaction mode (`--pool`
//!   server connections), the pull on PostgreSQL (`listen_url`);
//! - `pooler-polling`: everything through PgBouncer: the pull's `LISTEN`
//!   carries nothing there, so it finds commits by polling (every 2 s);
//! - `replica`: direct, the pull reading its pages from a streaming
//!   replica (`replica_url`);
//! - `pooler-replica`: the pooler and the replica together.
//!
//! Per setup: the server's client connections (and the replica's), the
//! server's CPU and transactions per second with every machine idle (the
//! pulls' own load), the server's CPU and transactions per shared add (its
//! own and the pulls it wakes on every machine), a shared add's latency (one at a time, from machine
//! after machine), and propagation: after an add, `--watch` machines
//! (others each time) are asked every `--poll-ms` whether their list shows
//! it (the time per machine), every other machine every `--sweep-ms` (the
//! time until all have it; asking 200 daemons every few milliseconds would
//! take the CPU the pulls need).

use std::time::{Duration, Instant};

use anyhow::{Context, ensure};
use clap::Args;
use memd_client::Client;
use memd_client::proto::{Filter, ListRequest};
use serde_json::{Value, json};

use crate::daemon::BenchDaemon;
use crate::stats::summarize;
use crate::team::{Pg, add, session};

/// The login role every machine uses.
const ROLE: &str = "fleet";

#[derive(Debug, Args)]
pub struct FleetArgs {
    /// Machines (daemons) sharing the namespace
    #[arg(long, default_value_t = 200)]
    pub machines: usize,
    /// Shared adds timed, one at a time, each from the next machine
    #[arg(long, default_value_t = 200)]
    pub adds: usize,
    /// Adds whose propagation to every machine is timed
    #[arg(long, default_value_t = 20)]
    pub spreads: usize,
    /// Machines watched closely for the time per machine
    #[arg(long, default_value_t = 20)]
    pub watch: usize,
    /// How often a watched machine is asked whether an add reached it
    #[arg(long, default_value_t = 5)]
    pub poll_ms: u64,
    /// How often every other machine is asked
    #[arg(long, default_value_t = 100)]
    pub sweep_ms: u64,
    /// Seconds the idle load is measured over
    #[arg(long, default_value_t = 10)]
    pub idle_secs: u64,
    /// PgBouncer's server connections (its `default_pool_size`)
    #[arg(long, default_value_t = 20)]
    pub pool: usize,
    /// Setups, in order: direct, pooler, pooler-polling, replica, pooler-replica
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "direct,pooler,pooler-polling,replica,pooler-replica"
    )]
    pub setups: Vec<String>,
    /// Print JSON
    #[arg(long)]
    pub json: bool,
}

/// PgBouncer (Debian's package) in front of a [`Pg`], in transaction mode,
/// on a socket directory of its own; as root it runs as `postgres`.
struct Bouncer<'a> {
    pg: &'a Pg,
    dir: std::path::PathBuf,
}

impl<'a> Bouncer<'a> {
    fn start(pg: &'a Pg, pool: usize, clients: usize) -> anyhow::Result<Bouncer<'a>> {
        let bin = "/usr/sbin/pgbouncer";
        ensure!(
            std::path::Path::new(bin).is_file(),
            "PgBouncer is not installed (apt-get install pgbouncer)"
        );
        let dir = pg.dir.join("bouncer");
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("users.txt"), format!("\"{ROLE}\" \"\"\n"))?;
        std::fs::write(
            dir.join("pgbouncer.ini"),
            format!(
                "[databases]\n* = host={pg} port=5432\n\n[pgbouncer]\nlisten_addr =\n\
                 listen_port = 6432\nunix_socket_dir = {d}\nauth_type = trust\n\
                 auth_file = {d}/users.txt\npool_mode = transaction\n\
                 default_pool_size = {pool}\nmax_client_conn = {max}\n\
                 logfile = {d}/pgbouncer.log\npidfile = {d}/pgbouncer.pid\n",
                pg = pg.dir.display(),
                d = dir.display(),
                max = clients + 100,
            ),
        )?;
        pg.own(&dir)?;
        pg.run(
            bin,
            &["-d", &dir.join("pgbouncer.ini").display().to_string()],
        )?;
        let socket = dir.join(".s.PGSQL.6432");
        let t = Instant::now();
        while !socket.exists() {
            ensure!(
                t.elapsed() < Duration::from_secs(10),
                "PgBouncer did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(Bouncer { pg, dir })
    }

    fn url(&self) -> String {
        format!(
            "host={} port=6432 user={ROLE} dbname=postgres sslmode=disable",
            self.dir.display()
        )
    }
}

impl Drop for Bouncer<'_> {
    fn drop(&mut self) {
        if let Ok(pid) = std::fs::read_to_string(self.dir.join("pgbouncer.pid")) {
            let _ = self.pg.run("/bin/kill", &["-TERM", pid.trim()]);
        }
    }
}

/// Where one setup's machines connect.
struct Urls {
    url: String,
    listen_url: Option<String>,
    replica_url: Option<String>,
}

fn machine_config(urls: &Urls, namespace: &str, machine: usize) -> String {
    let mut team = format!(
        "[team]\nurl = \"{}\"\nnamespaces = [\"{namespace}\"]\nmachine = \"m{machine}\"\n\
         timeout_ms = 10000\n",
        urls.url
    );
    if let Some(u) = &urls.listen_url {
        team.push_str(&format!("listen_url = \"{u}\"\n"));
    }
    if let Some(u) = &urls.replica_url {
        team.push_str(&format!("replica_url = \"{u}\"\n"));
    }
    format!(
        "{team}[embed]\nprovider = \"none\"\n[lifecycle]\ninterval_hours = 0\n\
         [lifecycle.limits]\nproject = 1000000\n"
    )
}

/// Starts `n` daemons, a few at a time.
fn start_all(
    n: usize,
    config: impl Fn(usize) -> String + Sync,
) -> anyhow::Result<Vec<BenchDaemon>> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let started = std::sync::Mutex::new(Vec::with_capacity(n));
    std::thread::scope(|s| -> anyhow::Result<()> {
        let workers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| -> anyhow::Result<()> {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i >= n {
                            return Ok(());
                        }
                        let d = BenchDaemon::start(Some(&config(i)))
                            .with_context(|| format!("machine {i}"))?;
                        started.lock().expect("not poisoned").push((i, d));
                    }
                })
            })
            .collect();
        for w in workers {
            w.join().expect("a starter thread")?;
        }
        Ok(())
    })?;
    let mut all = started.into_inner().expect("not poisoned");
    all.sort_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, d)| d).collect())
}

/// The client connections a server holds (this query's own left out).
fn connections(pg: &Pg) -> anyhow::Result<i64> {
    let n: i64 = pg
        .query("SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'client backend'")?
        .parse()?;
    Ok(n - 1)
}

fn commits(pg: &Pg) -> anyhow::Result<i64> {
    Ok(pg
        .query("SELECT sum(xact_commit + xact_rollback)::bigint FROM pg_stat_database")?
        .parse()?)
}

/// Polls every machine until its newest memory is `text` (those `watched`
/// says every `poll`, the others every `sweep`); each one's time, from
/// `t0`.
async fn spread(
    clients: Vec<Client>,
    text: &str,
    t0: Instant,
    watched: impl Fn(usize) -> bool,
    (poll, sweep): (Duration, Duration),
) -> anyhow::Result<(Vec<Client>, Vec<Duration>)> {
    let newest = ListRequest {
        filter: Filter::default(),
        limit: 1,
        offset: 0,
    };
    let mut set = tokio::task::JoinSet::new();
    for (i, mut c) in clients.into_iter().enumerate() {
        let (text, newest) = (text.to_string(), newest.clone());
        let every = if watched(i) { poll } else { sweep };
        set.spawn(async move {
            loop {
                let page = c.list(newest.clone()).await?;
                if page.memories.first().is_some_and(|m| m.content == text) {
                    return Ok::<_, anyhow::Error>((i, c, t0.elapsed()));
                }
                ensure!(
                    t0.elapsed() < Duration::from_secs(60),
                    "machine {i} did not get the add within 60 s"
                );
                tokio::time::sleep(every).await;
            }
        });
    }
    let mut got = Vec::new();
    while let Some(r) = set.join_next().await {
        got.push(r??);
    }
    got.sort_by_key(|(i, _, _)| *i);
    let times = got.iter().map(|(_, _, t)| *t).collect();
    Ok((got.into_iter().map(|(_, c, _)| c).collect(), times))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

async fn one_setup(
    args: &FleetArgs,
    name: &str,
    urls: &Urls,
    pg: &Pg,
    replica: Option<&Pg>,
) -> anyhow::Result<Value> {
    let namespace = format!("fleet-{name}");
    let t = Instant::now();
    let daemons = start_all(args.machines, |i| machine_config(urls, &namespace, i))?;
    let start_all_s = t.elapsed().as_secs_f64();
    let mut clients = Vec::with_capacity(daemons.len());
    for d in &daemons {
        clients.push(session(d, &namespace).await?);
    }
    // Settle: every pull connected and caught up.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let server_connections = connections(pg)?;
    let replica_connections = replica.map(connections).transpose()?;

    // The idle load: every machine following, nothing written.
    let (cpu0, tx0, t0) = (pg.cpu_seconds(), commits(pg)?, Instant::now());
    tokio::time::sleep(Duration::from_secs(args.idle_secs)).await;
    let (cpu1, tx1, idle) = (pg.cpu_seconds(), commits(pg)?, t0.elapsed().as_secs_f64());
    let idle_cpu_pct = (cpu1 - cpu0) / idle * 100.0;
    // psql's own two transactions per reading left out.
    let idle_tx_per_s = ((tx1 - tx0) as f64 - 2.0).max(0.0) / idle;
    let idle_rep_cpu_pct = match replica {
        Some(r) => {
            let c0 = r.cpu_seconds();
            tokio::time::sleep(Duration::from_secs(args.idle_secs)).await;
            Some((r.cpu_seconds() - c0) / args.idle_secs as f64 * 100.0)
        }
        None => None,
    };

    // Shared adds, machine after machine, and what they cost the server:
    // each one's transaction and the pulls it wakes on every machine.
    let (cpu0, tx0) = (pg.cpu_seconds(), commits(pg)?);
    let mut samples = Vec::with_capacity(args.adds);
    let wall = Instant::now();
    for i in 0..args.adds {
        let k = i % clients.len();
        let t = Instant::now();
        clients[k]
            .add(add(format!("fleet {name} add {i} from machine {k}")))
            .await?;
        samples.push(t.elapsed());
    }
    let adds = summarize(&mut samples, wall.elapsed());
    let add_server_cpu_ms = (pg.cpu_seconds() - cpu0) / args.adds as f64 * 1e3;
    let add_server_tx = (commits(pg)? - tx0) as f64 / args.adds as f64;

    // Propagation.
    let n = clients.len();
    let pace = (
        Duration::from_millis(args.poll_ms),
        Duration::from_millis(args.sweep_ms),
    );
    let (mut each, mut all) = (Vec::new(), Vec::new());
    let wall = Instant::now();
    for i in 0..args.spreads {
        let k = (i * 7 + 3) % n;
        let text = format!("fleet {name} spread {i} from machine {k}");
        // The watched machines: `watch` of them from a place that moves
        // with each add, never the writer.
        let first = (i * args.watch + k + 1) % n;
        let watched = |m: usize| m != k && (m + n - first) % n < args.watch;
        let t0 = Instant::now();
        clients[k].add(add(text.clone())).await?;
        let (back, times) = spread(std::mem::take(&mut clients), &text, t0, watched, pace).await?;
        clients = back;
        all.push(*times.iter().max().expect("machines"));
        each.extend(
            times
                .iter()
                .enumerate()
                .filter(|(m, _)| watched(*m))
                .map(|(_, t)| *t),
        );
        // Let the last pulls finish before the next add.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let spread_wall = wall.elapsed();
    let each = summarize(&mut each, spread_wall);
    let all = summarize(&mut all, spread_wall);
    let rss: f64 = daemons.iter().filter_map(BenchDaemon::rss_mb).sum();
    drop(clients);
    drop(daemons);
    Ok(json!({
        "setup": name,
        "machines": args.machines,
        "start_all_s": start_all_s,
        "server_connections": server_connections,
        "replica_connections": replica_connections,
        "idle_server_cpu_pct": idle_cpu_pct,
        "idle_server_tx_per_s": idle_tx_per_s,
        "idle_replica_cpu_pct": idle_rep_cpu_pct,
        "add_p50_ms": adds.p50_us / 1e3,
        "add_p99_ms": adds.p99_us / 1e3,
        "adds_per_s": adds.per_sec,
        "add_server_cpu_ms": add_server_cpu_ms,
        "add_server_tx": add_server_tx,
        "spread_each_p50_ms": each.p50_us / 1e3,
        "spread_each_p99_ms": each.p99_us / 1e3,
        "spread_all_p50_ms": all.p50_us / 1e3,
        "spread_all_p99_ms": all.p99_us / 1e3,
        "daemons_rss_mb": rss,
        "poll_ms": ms(pace.0),
        "sweep_ms": ms(pace.1),
        "watched": args.watch,
    }))
}

pub fn run(args: FleetArgs) -> anyhow::Result<()> {
    crate::block_on(run_async(args))
}

async fn run_async(args: FleetArgs) -> anyhow::Result<()> {
    // Two connections a machine at most, the pooler's, psql's, a margin.
    let max = u32::try_from(args.machines * 2 + args.pool + 50)?;
    let pg = Pg::start_with(max)?;
    {
        let admin = memd::facade::team::Target::parse(&pg.url_as("postgres"))
            .map_err(|e| anyhow::anyhow!(e))?;
        let mut link = memd::facade::team::connect(&admin, Duration::from_secs(5), false).await?;
        memd::facade::team::init(&mut link.client).await?;
        pg.query(&format!("CREATE ROLE {ROLE} LOGIN"))?;
        memd::facade::team::grant(&admin, Duration::from_secs(5), ROLE, "fleet-*", "write").await?;
    }
    let wants = |s: &str| args.setups.iter().any(|x| x.contains(s));
    let replica = if wants("replica") {
        Some(pg.replica(max)?)
    } else {
        None
    };
    let bouncer = if wants("pooler") {
        Some(Bouncer::start(&pg, args.pool, args.machines * 2)?)
    } else {
        None
    };
    let direct = pg.url_as(ROLE);
    let mut rows = Vec::new();
    for name in &args.setups {
        let pooled = || {
            bouncer
                .as_ref()
                .map(Bouncer::url)
                .context("no pooler started")
        };
        let replica_url = || replica.as_ref().map(|r| r.url_as(ROLE));
        let urls = match name.as_str() {
            "direct" => Urls {
                url: direct.clone(),
                listen_url: None,
                replica_url: None,
            },
            "pooler" => Urls {
                url: pooled()?,
                listen_url: Some(direct.clone()),
                replica_url: None,
            },
            "pooler-polling" => Urls {
                url: pooled()?,
                listen_url: None,
                replica_url: None,
            },
            "replica" => Urls {
                url: direct.clone(),
                listen_url: None,
                replica_url: replica_url(),
            },
            "pooler-replica" => Urls {
                url: pooled()?,
                listen_url: Some(direct.clone()),
                replica_url: replica_url(),
            },
            other => anyhow::bail!("unknown setup {other}"),
        };
        eprintln!("fleet: {name}, {} machines", args.machines);
        let on_replica = if name.contains("replica") {
            replica.as_ref()
        } else {
            None
        };
        rows.push(one_setup(&args, name, &urls, &pg, on_replica).await?);
    }
    crate::perf::report(&rows, args.json, print_table);
    drop(bouncer);
    drop(replica);
    Ok(())
}

fn print_table(report: &Value) {
    println!("{}", report["machine"].as_str().unwrap_or_default());
    println!(
        "{:<15} {:>5} {:>6} {:>6} {:>7} {:>7} {:>7} {:>6} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "setup",
        "conns",
        "rconns",
        "cpu%",
        "tx/s",
        "start s",
        "cpu/add",
        "tx/add",
        "add p50",
        "add p99",
        "each p50",
        "each p99",
        "all p50",
        "all p99"
    );
    for r in report["rows"].as_array().into_iter().flatten() {
        let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:<15} {:>5} {:>6} {:>6.1} {:>7.1} {:>7.1} {:>7.1} {:>6.1} {:>8.1} {:>8.1} {:>8.0} {:>8.0} {:>8.0} {:>8.0}",
            r["setup"].as_str().unwrap_or_default(),
            r["server_connections"],
            r["replica_connections"],
            f("idle_server_cpu_pct"),
            f("idle_server_tx_per_s"),
            f("start_all_s"),
            f("add_server_cpu_ms"),
            f("add_server_tx"),
            f("add_p50_ms"),
            f("add_p99_ms"),
            f("spread_each_p50_ms"),
            f("spread_each_p99_ms"),
            f("spread_all_p50_ms"),
            f("spread_all_p99_ms"),
        );
    }
    let r0 = &report["rows"][0];
    println!(
        "(times in ms; each: {} watched machines asked every {} ms; all: every other every {} ms)",
        r0["watched"], r0["poll_ms"], r0["sweep_ms"]
    );
}
