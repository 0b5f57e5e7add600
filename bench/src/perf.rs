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
    /// A config file for the daemon under test (TOML)
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// Concurrent sessions for the load
    #[arg(long, default_value_t = 16)]
    pub load_sessions: usize,
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
    let config = match &args.config {
        Some(path) => Some(std::fs::read_to_string(path)?),
        None => None,
    };
    let mut daemon = BenchDaemon::start(config.as_deref())?;
    let mut client = Client::connect(ConnectOptions::new(daemon.socket())).await?;
    let mut rows = Vec::new();

    // Load through concurrent sessions (group commit): every add is
    // acknowledged only once committed (synchronous = FULL).
    let wall = Instant::now();
    let per = items.len().div_ceil(args.load_sessions.max(1));
    let mut tasks = Vec::new();
    for chunk in items.chunks(per.max(1)) {
        let chunk: Vec<(String, &'static str, Vec<String>)> = chunk
            .iter()
            .map(|i| (i.content.clone(), i.category, i.tags.clone()))
            .collect();
        let socket = daemon.socket();
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(ConnectOptions::new(socket)).await?;
            let mut samples = Vec::with_capacity(chunk.len());
            for (content, category, tags) in chunk {
                let t = Instant::now();
                c.add(AddRequest {
                    content,
                    category: Some(category.to_string()),
                    tags,
                    ..Default::default()
                })
                .await?;
                samples.push(t.elapsed());
            }
            Ok::<_, memd_client::Error>(samples)
        }));
    }
    let mut samples = Vec::with_capacity(items.len());
    for t in tasks {
        samples.extend(t.await??);
    }
    rows.push(Row {
        op: "add_load_sessions",
        s: summarize(&mut samples, wall.elapsed()),
    });
    let rss_after_load = daemon.rss_mb();

    let mut samples = Vec::new();
    let wall = Instant::now();
    for i in 0..args.queries.min(1000) {
        let t = Instant::now();
        client
            .add(AddRequest {
                content: format!("single session add number {i} for latency"),
                ..Default::default()
            })
            .await?;
        samples.push(t.elapsed());
    }
    rows.push(Row {
        op: "add_1_session",
        s: summarize(&mut samples, wall.elapsed()),
    });

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
    // Inject: a session's first inject builds its block (cold), later
    // ones are served from the snapshot (warm).
    let mut samples = Vec::new();
    let wall = Instant::now();
    for _ in 0..20 {
        let mut c = Client::connect(ConnectOptions::new(daemon.socket())).await?;
        let t = Instant::now();
        c.inject().await?;
        samples.push(t.elapsed());
    }
    rows.push(Row {
        op: "inject_cold",
        s: summarize(&mut samples, wall.elapsed()),
    });
    let mut samples = Vec::new();
    client.inject().await?;
    let wall = Instant::now();
    for _ in 0..args.queries.max(1000) {
        let t = Instant::now();
        client.inject().await?;
        samples.push(t.elapsed());
    }
    rows.push(Row {
        op: "inject_warm",
        s: summarize(&mut samples, wall.elapsed()),
    });
    let block_chars = client.inject().await?.stats.chars;
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
            "daemon RSS {:.1} MiB after load, {:.1} MiB after queries; database {:.1} MiB; \
             inject block {block_chars} chars",
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
