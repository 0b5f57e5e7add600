//! `perf`: request latency and throughput over the real socket.

use std::time::Instant;

use memd_client::{AddRequest, Client, ConnectOptions, Filter, ListRequest};
use serde_json::json;

use crate::corpus;
use crate::daemon::{BenchDaemon, file_mb};
use crate::stats::{Summary, summarize};

/// Flags of `perf`.
#[derive(Debug, clap::Args)]
pub struct PerfArgs {
    /// Memories to load
    #[arg(long, default_value_t = 1_000)]
    pub memories: usize,
    /// Queries to run
    #[arg(long, default_value_t = 1_000)]
    pub queries: usize,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
}

struct Row {
    op: &'static str,
    s: Summary,
}

pub fn run(args: PerfArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run_async(args))
}

async fn run_async(args: PerfArgs) -> anyhow::Result<()> {
    let vocab = corpus::vocabulary(20_000);
    let items = corpus::memories(args.memories, &vocab, 42);
    let queries = corpus::queries(args.queries, &vocab, 7);
    let mut daemon = BenchDaemon::start(None)?;
    let mut client = Client::connect(ConnectOptions::new(daemon.socket())).await?;
    let mut rows = Vec::new();

    // Single-session adds: every add is acknowledged only once committed
    // (synchronous = FULL).
    let mut samples = Vec::with_capacity(items.len());
    let wall = Instant::now();
    for item in &items {
        let t = Instant::now();
        client
            .add(AddRequest {
                content: item.content.clone(),
                category: Some(item.category.to_string()),
                tags: item.tags.clone(),
                ..Default::default()
            })
            .await?;
        samples.push(t.elapsed());
    }
    rows.push(Row {
        op: "add_1_session",
        s: summarize(&mut samples, wall.elapsed()),
    });
    let rss_after_load = daemon.rss_mb();

    let mut samples = Vec::with_capacity(queries.len());
    let wall = Instant::now();
    for q in &queries {
        let t = Instant::now();
        client.search_text(q, 10).await?;
        samples.push(t.elapsed());
    }
    rows.push(Row {
        op: "search_lexical",
        s: summarize(&mut samples, wall.elapsed()),
    });

    let mut rng = corpus::Rng::new(3);
    let mut samples = Vec::new();
    let wall = Instant::now();
    for _ in 0..args.queries {
        let id = 1 + rng.below(items.len()) as i64;
        let t = Instant::now();
        client.get(id).await?;
        samples.push(t.elapsed());
    }
    rows.push(Row {
        op: "get",
        s: summarize(&mut samples, wall.elapsed()),
    });

    let mut samples = Vec::new();
    let wall = Instant::now();
    for i in 0..args.queries.min(500) {
        let t = Instant::now();
        client
            .list(ListRequest {
                filter: Filter {
                    category: Some(corpus::CATEGORIES[i % corpus::CATEGORIES.len()].into()),
                    tags: vec![format!("t{}", i % 50)],
                    ..Default::default()
                },
                limit: 20,
                offset: 0,
            })
            .await?;
        samples.push(t.elapsed());
    }
    rows.push(Row {
        op: "list_filtered",
        s: summarize(&mut samples, wall.elapsed()),
    });
    let rss_after_queries = daemon.rss_mb();
    let db_mb = file_mb(&daemon.data_dir().join("memory.db"))
        + file_mb(&daemon.data_dir().join("memory.db-wal"));
    drop(client);
    daemon.stop()?;

    let machine = machine_facts();
    if args.json {
        let results: Vec<_> = rows
            .iter()
            .map(|r| {
                json!({"op": r.op, "n": r.s.n, "p50_us": r.s.p50_us, "p95_us": r.s.p95_us,
                       "p99_us": r.s.p99_us, "per_sec": r.s.per_sec})
            })
            .collect();
        println!(
            "{}",
            json!({"memories": args.memories, "results": results,
                   "rss_mb": rss_after_queries, "rss_after_load_mb": rss_after_load,
                   "db_mb": db_mb, "machine": machine})
        );
    } else {
        println!(
            "memd perf: {} memories, {} queries; {}",
            args.memories, args.queries, machine
        );
        println!();
        println!("| op | n | p50 µs | p95 µs | p99 µs | per s |");
        println!("|---|---|---|---|---|---|");
        for r in &rows {
            println!(
                "| {} | {} | {:.0} | {:.0} | {:.0} | {:.0} |",
                r.op, r.s.n, r.s.p50_us, r.s.p95_us, r.s.p99_us, r.s.per_sec
            );
        }
        println!();
        println!(
            "daemon RSS {:.1} MiB after load, {:.1} MiB after queries; database {:.1} MiB",
            rss_after_load.unwrap_or(0.0),
            rss_after_queries.unwrap_or(0.0),
            db_mb
        );
    }
    Ok(())
}

/// Cores and load average, recorded with every run.
pub fn machine_facts() -> String {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "?".into());
    format!("{cores} cores, load {load}")
}
