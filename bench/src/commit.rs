//! `memd-bench commit`: group commit under concurrent sessions. A real
//! daemon (default write gate, `synchronous = FULL`) on a temp dir, loaded
//! with `--memories`; then, in each of `--runs` runs, the same number of
//! durable adds through 1, 4 and 16 concurrent sessions (the client
//! crate over the socket). Each level is reported as acknowledged adds per
//! second and as a ratio against one session's rate in the same run, with
//! the writer's mean batch (writes per commit), its own time per add
//! before the commit and the commit's time per add (all from `status`'s
//! counters), the machine's load and the time one `fsync` takes on the
//! data dir's file system. Each run ends with `--shell` adds through one
//! `memd shell --json` (one session as a script drives it).

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
    /// Adds per run through one `memd shell --json` (one session, one
    /// memory per line, each answered before the next is read); 0 skips
    #[arg(long, default_value_t = 2_000)]
    pub shell: usize,
    /// The `memd` binary for `--shell` (default: next to this executable)
    #[arg(long)]
    pub memd: Option<std::path::PathBuf>,
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
    /// The writer's counters while the level ran.
    writer: Writer,
}

/// What the writer did while a level ran (`status`'s counters, their
/// change).
#[derive(Debug, Clone, Copy, Default)]
struct Writer {
    commits: u64,
    writes: u64,
    work_us: u64,
    commit_us: u64,
}

impl Writer {
    fn since(self, before: Writer) -> Writer {
        Writer {
            commits: self.commits - before.commits,
            writes: self.writes - before.writes,
            work_us: self.work_us - before.work_us,
            commit_us: self.commit_us - before.commit_us,
        }
    }

    /// Writes per commit.
    fn batch(self) -> f64 {
        self.writes as f64 / self.commits.max(1) as f64
    }

    /// The writer's own work per write, before the commit (µs).
    fn work_per_write(self) -> f64 {
        self.work_us as f64 / self.writes.max(1) as f64
    }

    /// The commit's time per write (µs).
    fn commit_per_write(self) -> f64 {
        self.commit_us as f64 / self.writes.max(1) as f64
    }
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
        .import(&crate::corpus::export_doc(&items, 0)[..], false)
        .await?;
    anyhow::ensure!(report.inserted == items.len() as u64, "import: {report:?}");
    let memd = if args.shell > 0 {
        Some(crate::daemon::memd_binary(args.memd.as_deref())?)
    } else {
        None
    };
    let fsync = fsync_us(&daemon.data_dir(), 200)?;
    let machine_before = crate::stats::machine_facts();

    let mut runs: Vec<Vec<Level>> = Vec::new();
    let mut shells: Vec<(f64, Writer)> = Vec::new();
    for run in 0..args.runs.max(1) {
        let mut levels = Vec::new();
        for &sessions in &args.sessions {
            let before = counters(&mut client).await?;
            let s = perf::adds(
                &daemon,
                sessions,
                args.adds.max(sessions),
                &format!("r{run}s{sessions}"),
            )
            .await?;
            let writer = counters(&mut client).await?.since(before);
            levels.push(Level {
                sessions,
                s,
                writer,
            });
        }
        runs.push(levels);
        if let Some(memd) = &memd {
            let before = counters(&mut client).await?;
            let rate = shell_adds(memd, &daemon, args.shell, run)?;
            shells.push((rate, counters(&mut client).await?.since(before)));
        }
    }
    let machine_after = crate::stats::machine_facts();
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
            let batch: Vec<f64> = runs.iter().map(|r| r[i].writer.batch()).collect();
            let work: Vec<f64> = runs.iter().map(|r| r[i].writer.work_per_write()).collect();
            let commit: Vec<f64> = runs
                .iter()
                .map(|r| r[i].writer.commit_per_write())
                .collect();
            debug_assert!(runs.iter().all(|r| r[i].sessions == sessions));
            json!({
                "sessions": sessions,
                "adds_per_sec": spread(&rate),
                "ratio": spread(&ratio),
                "p50_us": spread(&p50),
                "batch": spread(&batch),
                "writer_work_us": spread(&work),
                "writer_commit_us": spread(&commit),
            })
        })
        .collect();
    let shell = (!shells.is_empty()).then(|| {
        let rate: Vec<f64> = shells.iter().map(|(r, _)| *r).collect();
        let work: Vec<f64> = shells.iter().map(|(_, w)| w.work_per_write()).collect();
        let commit: Vec<f64> = shells.iter().map(|(_, w)| w.commit_per_write()).collect();
        json!({
            "adds": args.shell,
            "adds_per_sec": spread(&rate),
            "writer_work_us": spread(&work),
            "writer_commit_us": spread(&commit),
        })
    });
    let out = json!({
        "memories": items.len(),
        "adds": args.adds,
        "runs": runs.len(),
        "fsync_us": fsync,
        "machine_before": machine_before,
        "machine_after": machine_after,
        "levels": rows,
        "shell": shell,
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
        "| sessions | adds/s median | range | × first median | range | p50 µs | writes per \
         commit | writer work µs per add | commit µs per add |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    for r in &rows {
        let f = |k: &str, i: usize| r[k][i].as_f64().unwrap_or(0.0);
        println!(
            "| {} | {:.0} | {:.0}–{:.0} | {:.2} | {:.2}–{:.2} | {:.0} | {:.1} | {:.0} | {:.0} |",
            r["sessions"],
            f("adds_per_sec", 0),
            f("adds_per_sec", 1),
            f("adds_per_sec", 2),
            f("ratio", 0),
            f("ratio", 1),
            f("ratio", 2),
            f("p50_us", 0),
            f("batch", 0),
            f("writer_work_us", 0),
            f("writer_commit_us", 0),
        );
    }
    if let Some(shell) = &out["shell"].as_object() {
        let f = |k: &str, i: usize| shell[k][i].as_f64().unwrap_or(0.0);
        println!();
        println!(
            "one `memd shell --json`, {} adds per run: {:.0} adds/s median ({:.0}–{:.0}); \
             writer work {:.0} µs, commit {:.0} µs per add",
            args.shell,
            f("adds_per_sec", 0),
            f("adds_per_sec", 1),
            f("adds_per_sec", 2),
            f("writer_work_us", 0),
            f("writer_commit_us", 0),
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

/// The writer's counters so far (`status`).
async fn counters(c: &mut Client) -> anyhow::Result<Writer> {
    let status = c.status().await?;
    let n = |k: &str| status["stats"][k].as_u64().unwrap_or(0);
    Ok(Writer {
        commits: n("commits"),
        writes: n("writes"),
        work_us: n("writer_work_us"),
        commit_us: n("writer_commit_us"),
    })
}

/// Acknowledged adds per second of one `memd shell --json` given `n` add
/// lines at once: the shell answers each line before it reads the next,
/// so this is one session's durable adds back to back, with the CLI's
/// parsing and printing in the loop.
fn shell_adds(memd: &Path, daemon: &BenchDaemon, n: usize, run: usize) -> anyhow::Result<f64> {
    use std::io::{BufRead, BufReader};
    use std::process::{Command, Stdio};
    let mut child = Command::new(memd)
        .arg("--socket")
        .arg(daemon.socket())
        .arg("--data-dir")
        .arg(daemon.data_dir())
        .args(["--namespace", "bench-shell", "--json", "shell"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()?;
    let mut stdin = child.stdin.take().ok_or_else(|| anyhow::anyhow!("stdin"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| anyhow::anyhow!("stdout"))?;
    let mut lines = String::with_capacity(n * 64);
    for i in 0..n {
        let k = corpus::Rng::new((run * 1_000_000 + i) as u64).next_u64() % 1_000_000;
        lines.push_str(&format!(
            "add \"shell run {run} wrote note {i} about {k} things\"\n"
        ));
    }
    let started = Instant::now();
    let feeder = std::thread::spawn(move || stdin.write_all(lines.as_bytes()));
    let mut ok = 0;
    for line in BufReader::new(stdout).lines() {
        let v: Value = serde_json::from_str(&line?)?;
        anyhow::ensure!(v["success"] == true, "shell add failed: {v}");
        ok += 1;
    }
    let took = started.elapsed();
    feeder
        .join()
        .map_err(|_| anyhow::anyhow!("the feeder panicked"))??;
    anyhow::ensure!(child.wait()?.success(), "memd shell failed");
    anyhow::ensure!(ok == n, "{ok} of {n} adds answered");
    Ok(n as f64 / took.as_secs_f64())
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
