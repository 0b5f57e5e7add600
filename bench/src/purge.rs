//! `purge`: what `memd purge` costs at a size, against `forget` of the same
//! kind of memory measured in the same run (the baseline: a delete that
//! keeps history). A purge's time is mostly the compaction of the
//! database file (`VACUUM`), so it grows with the database, not with what
//! it erases. With `--matching N`, one `purge --matching` erases N rows of
//! each database at once (the listing and the erasure timed apart): the
//! incident where a leaked value sits in thousands of memories, or a bulk
//! import is undone.

use std::time::{Duration, Instant};

use memd_client::{Client, ConnectOptions};
use serde_json::json;

use crate::corpus;
use crate::corpus::export_doc;
use crate::daemon::BenchDaemon;
use crate::stats::summarize;

const CONFIG: &str = "[lifecycle]\ninterval_hours = 0\n\
    [lifecycle.limits]\nproject = 100000000\nagent = 100000000\nsession = 100000000\n\
    [embed]\nprovider = \"none\"\n";

/// Flags of `purge`.
#[derive(Debug, clap::Args)]
pub struct PurgeArgs {
    /// Database sizes (memories), comma-separated
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    pub memories: Vec<usize>,
    /// Purges (and forgets) timed at each size
    #[arg(long, default_value_t = 9)]
    pub runs: usize,
    /// Instead: one `purge --matching` of this many rows at each size
    #[arg(long)]
    pub matching: Option<usize>,
    /// Print one JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

/// The word every row a `--matching` run erases holds.
const MARK: &str = "qxpurgeable";

/// Runs `purge`.
///
/// # Errors
/// The daemon or a request failed.
pub fn run(args: PurgeArgs) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(run_async(args))
}

async fn run_async(args: PurgeArgs) -> anyhow::Result<()> {
    if let Some(n) = args.matching {
        return run_matching(&args, n).await;
    }
    let vocab = corpus::vocabulary(20_000);
    let mut rows = Vec::new();
    for &size in &args.memories {
        let items = corpus::memories(size, &vocab, 42);
        let daemon = BenchDaemon::start(Some(CONFIG))?;
        let mut o = ConnectOptions::new(daemon.socket());
        o.agent_id = "memd-bench".into();
        let mut client = Client::connect(o).await?;
        for (k, chunk) in items.chunks(20_000).enumerate() {
            client
                .import(&export_doc(chunk, k * 20_000)[..], false)
                .await?;
        }
        let db_mb = crate::daemon::file_mb(&daemon.data_dir().join("memory.db"));
        let (mut forgets, mut purges) = (Vec::new(), Vec::new());
        let wall = Instant::now();
        // Alternate, so the machine's noise falls on both.
        for i in 0..args.runs {
            let add = |text: String| memd_client::proto::AddRequest {
                content: text,
                ..Default::default()
            };
            let a = client
                .add(add(format!(
                    "forget me {i}: a note with the key AKIAQX{i:012}"
                )))
                .await?
                .id
                .unwrap_or_default();
            let b = client
                .add(add(format!(
                    "purge me {i}: a note with the key AKIAQZ{i:012}"
                )))
                .await?
                .id
                .unwrap_or_default();
            let t = Instant::now();
            client.forget(a, None).await?;
            forgets.push(t.elapsed());
            let t = Instant::now();
            let r = client.purge(Some(b), None, true).await?;
            purges.push(t.elapsed());
            anyhow::ensure!(r.purged, "purge {i} did not erase");
        }
        let wall = wall.elapsed();
        let f = summarize(&mut forgets, wall);
        let p = summarize(&mut purges, wall);
        rows.push(json!({
            "memories": size,
            "db_mb": db_mb,
            "forget_p50_ms": f.p50_us / 1e3,
            "purge_p50_ms": p.p50_us / 1e3,
            "purge_min_ms": min_ms(&purges),
            "purge_max_ms": max_ms(&purges),
            "ratio_p50": if f.p50_us > 0.0 { p.p50_us / f.p50_us } else { 0.0 },
            "runs": args.runs,
        }));
    }
    if args.json {
        println!("{}", json!({ "purge": rows }));
    } else {
        println!(
            "| memories | database MB | forget p50 ms | purge p50 ms | purge min–max ms | purge / forget |"
        );
        println!("|---|---|---|---|---|---|");
        for r in &rows {
            println!(
                "| {} | {:.1} | {:.2} | {:.1} | {:.1}–{:.1} | {:.0}× |",
                r["memories"],
                r["db_mb"].as_f64().unwrap_or(0.0),
                r["forget_p50_ms"].as_f64().unwrap_or(0.0),
                r["purge_p50_ms"].as_f64().unwrap_or(0.0),
                r["purge_min_ms"].as_f64().unwrap_or(0.0),
                r["purge_max_ms"].as_f64().unwrap_or(0.0),
                r["ratio_p50"].as_f64().unwrap_or(0.0),
            );
        }
    }
    Ok(())
}

/// One `purge --matching` of `n` rows spread through each database.
async fn run_matching(args: &PurgeArgs, n: usize) -> anyhow::Result<()> {
    let vocab = corpus::vocabulary(20_000);
    let mut rows = Vec::new();
    for &size in &args.memories {
        let mut items = corpus::memories(size, &vocab, 42);
        let every = (size / n.max(1)).max(1);
        for item in items.iter_mut().step_by(every).take(n) {
            item.content.push_str(&format!(" {MARK}"));
        }
        let daemon = BenchDaemon::start(Some(CONFIG))?;
        let mut o = ConnectOptions::new(daemon.socket());
        o.agent_id = "memd-bench".into();
        let mut client = Client::connect(o).await?;
        for (k, chunk) in items.chunks(20_000).enumerate() {
            client
                .import(&export_doc(chunk, k * 20_000)[..], false)
                .await?;
        }
        let db_mb = crate::daemon::file_mb(&daemon.data_dir().join("memory.db"));
        let t = Instant::now();
        let listed = client.purge(None, Some(MARK), false).await?;
        let list = t.elapsed();
        let t = Instant::now();
        let done = client.purge(None, Some(MARK), true).await?;
        let erase = t.elapsed();
        anyhow::ensure!(done.purged, "the purge did not erase");
        let left = client.purge(None, Some(MARK), false).await?;
        anyhow::ensure!(left.targets.is_empty(), "rows left after the purge");
        rows.push(json!({
            "memories": size,
            "matching": listed.targets.len(),
            "db_mb": db_mb,
            "list_s": list.as_secs_f64(),
            "purge_s": erase.as_secs_f64(),
        }));
    }
    if args.json {
        println!("{}", json!({ "purge_matching": rows }));
    } else {
        println!("| memories | matching rows | database MB | list s | purge s |");
        println!("|---|---|---|---|---|");
        for r in &rows {
            println!(
                "| {} | {} | {:.1} | {:.2} | {:.2} |",
                r["memories"],
                r["matching"],
                r["db_mb"].as_f64().unwrap_or(0.0),
                r["list_s"].as_f64().unwrap_or(0.0),
                r["purge_s"].as_f64().unwrap_or(0.0),
            );
        }
    }
    Ok(())
}

fn min_ms(s: &[Duration]) -> f64 {
    s.iter().min().map_or(0.0, |d| d.as_secs_f64() * 1e3)
}

fn max_ms(s: &[Duration]) -> f64 {
    s.iter().max().map_or(0.0, |d| d.as_secs_f64() * 1e3)
}
