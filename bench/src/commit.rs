//! `memd-bench commit`: group commit under concurrent sessions. A real
//! daemon (default write gate, `synchronous = FULL`) on a temp dir, loaded
//! with `--memories`; then, in each of `--runs` runs, the same number of
//! durable adds through 1, 4 and 16 concurrent sessions (the client
//! crate over the socket). Each level is reported as acknowledged adds per
//! second and as a ratio against one session's rate in the same run, with
//! the writer's mean batch (writes per commit, from `status`), the
//! machine's load and the time one `fsync` takes on the data dir's file
//! system.

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use clap::Args;
use memd_client::Client;
use serde_json::{Value, json};

use crate::corpus;
use crate::daemon::BenchDaemon;
use crate::perf;
use crate::stats::Summary;

/// Flags of `commit`.
#[derive(Debug, Args)]
pub struct CommitArgs {
    /// Memories loaded before the adds
    #[arg(long, default_value_t = 10_000)]
    pub memories: usize,
    /// Adds per level and run
    #[arg(long, default_value_t = 2_000)]
    pub adds: usize,
    /// Runs (medians and ranges over them)
    #[arg(long, default_value_t = 3)]
    pub runs: usize,
    /// Concurrency levels (sessions), comma-separated; the first is the
    /// baseline
    #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
    pub sessions: Vec<usize>,
    /// A config file appended to the daemon's (TOML)
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
}

/// One level in one run.
struct Level {
    sessions: usize,
    s: Summary,
    /// Writes per commit while the level ran.
    batch: f64,
}

pub fn run(args: CommitArgs) -> anyhow::Result<()> {
    crate::block_on(run_async(args))
}

async fn run_async(args: CommitArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        !args.sessions.is_empty() && args.sessions.iter().all(|s| *s > 0),
        "--sessions takes one or more counts above 0"
    );
    let mut config = perf::PERF_CONFIG.to_string();
    if let Some(path) = &args.config {
        config.push_str(&std::fs::read_to_string(path)?);
    }
    let daemon = BenchDaemon::start(Some(&config))?;
    let mut client = perf::connect(&daemon).await?;
    let vocab = corpus::vocabulary(20_000);
    let items = corpus::memories(args.memories.max(1), &vocab, 42);
    let report = client
        .import(&perf::export_doc(&items, 0)[..], false)
        .await?;
    anyhow::ensure!(report.inserted == items.len() as u64, "import: {report:?}");
    let fsync = fsync_us(&daemon.data_dir(), 200)?;
    let machine_before = perf::machine_facts();

    let mut runs: Vec<Vec<Level>> = Vec::new();
    for run in 0..args.runs.max(1) {
        let mut levels = Vec::new();
        for &sessions in &args.sessions {
            let (commits0, writes0) = counters(&mut client).await?;
            let s = perf::adds(
                &daemon,
                sessions,
                args.adds.max(sessions),
                &format!("r{run}s{sessions}"),
            )
            .await?;
            let (commits1, writes1) = counters(&mut client).await?;
            let batch = (writes1 - writes0) as f64 / (commits1 - commits0).max(1) as f64;
            levels.push(Level { sessions, s, batch });
        }
        runs.push(levels);
    }
    let machine_after = perf::machine_facts();
    let rows: Vec<Value> = args
        .sessions
        .iter()
        .enumerate()
        .map(|(i, &sessions)| {
            let rate: Vec<f64> = runs.iter().map(|r| r[i].s.per_sec).collect();
            let ratio: Vec<f64> = runs
                .iter()
                .map(|r| r[i].s.per_sec / r[0].s.per_sec.max(1e-9))
                .collect();
            let p50: Vec<f64> = runs.iter().map(|r| r[i].s.p50_us).collect();
            let batch: Vec<f64> = runs.iter().map(|r| r[i].batch).collect();
            debug_assert!(runs.iter().all(|r| r[i].sessions == sessions));
            json!({
                "sessions": sessions,
                "adds_per_sec": spread(&rate),
                "ratio": spread(&ratio),
                "p50_us": spread(&p50),
                "batch": spread(&batch),
            })
        })
        .collect();
    let out = json!({
        "memories": items.len(),
        "adds": args.adds,
        "runs": runs.len(),
        "fsync_us": fsync,
        "machine_before": machine_before,
        "machine_after": machine_after,
        "levels": rows,
        "date": memd::clock::now(),
    });
    if args.json {
        println!("{out}");
        return Ok(());
    }
    println!(
        "memd commit: {} memories, {} adds per level, {} runs; {machine_before} \
         (after: {machine_after}); fsync on the data dir p50 {:.0} µs, p90 {:.0} µs",
        items.len(),
        args.adds,
        runs.len(),
        fsync.0,
        fsync.1
    );
    println!();
    println!(
        "| sessions | adds/s median | range | × first median | range | p50 µs | writes per commit |"
    );
    println!("|---|---|---|---|---|---|---|");
    for r in &rows {
        let f = |k: &str, i: usize| r[k][i].as_f64().unwrap_or(0.0);
        println!(
            "| {} | {:.0} | {:.0}–{:.0} | {:.2} | {:.2}–{:.2} | {:.0} | {:.1} |",
            r["sessions"],
            f("adds_per_sec", 0),
            f("adds_per_sec", 1),
            f("adds_per_sec", 2),
            f("ratio", 0),
            f("ratio", 1),
            f("ratio", 2),
            f("p50_us", 0),
            f("batch", 0),
        );
    }
    Ok(())
}

/// `[median, min, max]`.
fn spread(v: &[f64]) -> [f64; 3] {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let median = if s.is_empty() {
        0.0
    } else if s.len() % 2 == 1 {
        s[s.len() / 2]
    } else {
        f64::midpoint(s[s.len() / 2 - 1], s[s.len() / 2])
    };
    [
        median,
        s.first().copied().unwrap_or(0.0),
        s.last().copied().unwrap_or(0.0),
    ]
}

/// The writer's commits and writes so far (`status`).
async fn counters(c: &mut Client) -> anyhow::Result<(u64, u64)> {
    let status = c.status().await?;
    let n = |k: &str| status["stats"][k].as_u64().unwrap_or(0);
    Ok((n("commits"), n("writes")))
}

/// p50 and p90 of one 4 KiB write and `fsync` of a file in `dir`, in µs.
fn fsync_us(dir: &Path, n: usize) -> anyhow::Result<(f64, f64)> {
    let path = dir.join("fsync.probe");
    let mut f = std::fs::File::create(&path)?;
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        f.write_all(&[7u8; 4096])?;
        let t = Instant::now();
        f.sync_data()?;
        samples.push(t.elapsed());
    }
    drop(f);
    std::fs::remove_file(&path)?;
    // Sorts the samples.
    let s = crate::stats::summarize(&mut samples, Duration::ZERO);
    let p90 = samples[(samples.len() - 1) * 9 / 10].as_secs_f64() * 1e6;
    Ok((s.p50_us, p90))
}
