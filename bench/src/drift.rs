//! `drift`: how fast an external write becomes a recorded external epoch,
//! and what the guard costs an `add`.

use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memd_client::{AddRequest, Client, ConnectOptions, DriftPolicy};
use serde_json::json;

use crate::daemon::BenchDaemon;
use crate::stats::summarize;

/// Flags of `drift`.
#[derive(Debug, clap::Args)]
pub struct DriftArgs {
    /// External writes to time
    #[arg(long, default_value_t = 100)]
    pub trials: usize,
    /// Adds per policy for the guard's cost
    #[arg(long, default_value_t = 2_000)]
    pub adds: usize,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: DriftArgs) -> anyhow::Result<()> {
    crate::block_on(run_async(args))
}

fn epoch(status: &serde_json::Value) -> u64 {
    status["drift"]["external_epoch"].as_u64().unwrap_or(0)
}

/// Polls `status` from now until the external epoch passes `before`: the
/// time it took (an error after 10 s).
async fn until_epoch_passes(
    client: &mut Client,
    before: u64,
    what: &str,
) -> anyhow::Result<Duration> {
    let committed = Instant::now();
    loop {
        if epoch(&client.status().await?) > before {
            return Ok(committed.elapsed());
        }
        if committed.elapsed() > Duration::from_secs(10) {
            bail!("{what} not detected within 10 s");
        }
    }
}

async fn run_async(args: DriftArgs) -> anyhow::Result<()> {
    let daemon = BenchDaemon::start(None)?;
    let db = daemon.data_dir().join("memory.db");
    let mut client = Client::connect(ConnectOptions::new(daemon.socket())).await?;
    client
        .add(AddRequest {
            content: "seed".into(),
            ..Default::default()
        })
        .await?;

    // Detection latency: from the end of an external commit (the sqlite3
    // shell exits after committing) to `status` showing the new epoch.
    let mut detect = Vec::with_capacity(args.trials);
    for i in 0..args.trials {
        let before = epoch(&client.status().await?);
        let out = Command::new("sqlite3")
            .args(["-cmd", ".timeout 5000"])
            .arg(&db)
            .arg(format!(
                "INSERT INTO memories(content) VALUES ('external {i}')"
            ))
            .output()
            .context("the sqlite3 shell is needed (apt-get install sqlite3)")?;
        if !out.status.success() {
            bail!("sqlite3 failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        detect.push(until_epoch_passes(&mut client, before, "external write").await?);
    }
    let detect = summarize(&mut detect, Duration::ZERO);

    // The same from a writer that keeps its connection open (a plain SQLite
    // connection in this process): no file is closed, so no file event
    // wakes the daemon; its idle poll of `data_version` (`[drift]
    // poll_ms`, 50 ms) finds the commit.
    let mut held = Vec::with_capacity(args.trials);
    {
        let conn = rusqlite::Connection::open(&db)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        for i in 0..args.trials {
            let before = epoch(&client.status().await?);
            conn.execute(
                "INSERT INTO memories(content) VALUES (?1)",
                [format!("external on a held connection {i}")],
            )?;
            held.push(
                until_epoch_passes(&mut client, before, "external write on a held connection")
                    .await?,
            );
        }
    }
    let held = summarize(&mut held, Duration::ZERO);

    // The guard's cost: the same adds under each policy. The external-change
    // check at the start of each write transaction runs under every policy;
    // `off` skips only the decision.
    let mut adds = Vec::new();
    for policy in [
        DriftPolicy::Off,
        DriftPolicy::External,
        DriftPolicy::Standard,
        DriftPolicy::Strict,
    ] {
        let mut opts = ConnectOptions::new(daemon.socket());
        opts.policy = Some(policy);
        let mut c = Client::connect(opts).await?;
        let mut samples = Vec::with_capacity(args.adds);
        let wall = Instant::now();
        for i in 0..args.adds {
            let t = Instant::now();
            c.add(AddRequest {
                content: format!("{} guard cost sample {i}", policy.as_str()),
                ..Default::default()
            })
            .await?;
            samples.push(t.elapsed());
        }
        adds.push((policy.as_str(), summarize(&mut samples, wall.elapsed())));
    }

    // The check itself, the same two statements the writer runs at the start
    // of each write transaction, timed alone on a connection to the same
    // file: what an add pays for the guard, next to its whole latency.
    let check = {
        let conn = rusqlite::Connection::open(&db)?;
        let mut samples = Vec::with_capacity(10_000);
        let mut version = conn.prepare("PRAGMA data_version")?;
        let mut generation = conn
            .prepare("SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'")?;
        for _ in 0..10_000 {
            let t = Instant::now();
            let v: i64 = version.query_row([], |r| r.get(0))?;
            let g: i64 = generation.query_row([], |r| r.get(0))?;
            std::hint::black_box((v, g));
            samples.push(t.elapsed());
        }
        summarize(&mut samples, Duration::ZERO)
    };

    if args.json {
        println!(
            "{}",
            json!({
                "check_us": {"p50": check.p50_us, "p99": check.p99_us},
                "detection_ms": {"n": detect.n, "p50": detect.p50_us / 1e3, "p95": detect.p95_us / 1e3, "p99": detect.p99_us / 1e3},
                "detection_held_connection_ms": {"n": held.n, "p50": held.p50_us / 1e3, "p95": held.p95_us / 1e3, "p99": held.p99_us / 1e3},
                "add_us_by_policy": adds.iter().map(|(p, s)| json!({"policy": p, "p50_us": s.p50_us, "p99_us": s.p99_us})).collect::<Vec<_>>(),
                "machine": crate::stats::machine_facts(),
            })
        );
    } else {
        println!(
            "memd drift: {} trials; {}",
            detect.n,
            crate::stats::machine_facts()
        );
        println!();
        println!(
            "external write → external epoch visible: p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms",
            detect.p50_us / 1e3,
            detect.p95_us / 1e3,
            detect.p99_us / 1e3
        );
        println!(
            "the same, the writer keeping its connection open (the idle poll): p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms",
            held.p50_us / 1e3,
            held.p95_us / 1e3,
            held.p99_us / 1e3
        );
        println!();
        println!("| add, policy | p50 µs | p99 µs |");
        println!("|---|---|---|");
        for (p, s) in &adds {
            println!("| {p} | {:.0} | {:.0} |", s.p50_us, s.p99_us);
        }
        println!();
        println!(
            "the external-change check alone (data_version and the generation): p50 {:.1} µs, p99 {:.1} µs per write transaction",
            check.p50_us, check.p99_us
        );
    }
    Ok(())
}
