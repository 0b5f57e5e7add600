//! `semantic`: what embeddings cost. Embedding throughput of the daemon's
//! embedder in this process (batches of 1 and 32), then semantic, hybrid and
//! lexical query latency through the real daemon at each scale, with the
//! memory the vector index holds.
//!
//! Embedding 100K memories takes the local model ~10 minutes on 2 cores, so
//! the scales are built from `--distinct` real embeddings: memory i gets the
//! vector of text `i mod distinct` plus a little noise (unit length again),
//! written into `memory_vectors` while the daemon is stopped, with the model
//! lock of the embedder. A brute-force scan costs the same whatever the
//! vectors hold; queries are embedded for real, per request.

use std::time::{Duration, Instant};

use anyhow::Context;
use memd::embed::vectors::{Index, Probe, to_blob};
use memd::embed::{EmbedConfig, EmbedService, Embedder};
use memd_client::{Client, ConnectOptions, Filter, QuerySyntax, SearchMode, SearchRequest};
use rusqlite::Connection;
use serde_json::{Value, json};

use crate::corpus::{self, Rng};
use crate::daemon::BenchDaemon;
use crate::stats::{Summary, summarize};

/// Flags of `semantic`.
#[derive(Debug, clap::Args)]
pub struct SemanticArgs {
    /// Scales, in memories
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    pub scales: Vec<usize>,
    /// Queries per measurement
    #[arg(long, default_value_t = 200)]
    pub queries: usize,
    /// Texts embedded for the throughput figures
    #[arg(long, default_value_t = 256)]
    pub texts: usize,
    /// Take the throughput texts from this file instead of the synthetic
    /// corpus: one per line, or the `text` field of JSON lines (e.g. a
    /// benchmark's memories.jsonl)
    #[arg(long)]
    pub texts_from: Option<std::path::PathBuf>,
    /// Distinct real embeddings the scales are built from
    #[arg(long, default_value_t = 1_000)]
    pub distinct: usize,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
}

const CONFIG: &str = "[lifecycle]\ninterval_hours = 0\n\
    [lifecycle.limits]\nproject = 100000000\nagent = 100000000\nsession = 100000000\n";

pub fn run(args: SemanticArgs) -> anyhow::Result<()> {
    crate::block_on(run_async(args))
}

/// The daemon's default embedder (the local model when its files exist).
pub(crate) fn embedder() -> anyhow::Result<std::sync::Arc<dyn Embedder>> {
    let config = EmbedConfig::default();
    let dir = memd::embed::model_dir(&config, |k| std::env::var_os(k));
    let svc = EmbedService::new(config, dir);
    memd::embed::build(&svc)?.context("no embedder configured")
}

fn search_req(q: &str, mode: SearchMode) -> SearchRequest {
    SearchRequest {
        query: q.to_string(),
        filter: Filter::default(),
        limit: 10,
        mode,
        syntax: QuerySyntax::Plain,
        explain: false,
        offset: 0,
    }
}

fn ms(s: &Summary) -> Value {
    json!({"p50_ms": s.p50_us / 1e3, "p95_ms": s.p95_us / 1e3, "p99_ms": s.p99_us / 1e3})
}

async fn run_async(args: SemanticArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let e = embedder()?;
    let load_ms = started.elapsed().as_secs_f64() * 1e3;
    let vocab = corpus::vocabulary(20_000);
    let max = args.scales.iter().copied().max().unwrap_or(10_000);
    let items = corpus::memories(max, &vocab, 42);
    let queries = corpus::queries(args.queries.max(10), &vocab, 7);

    // Throughput: the same texts one by one and in batches of 32.
    let from_file: Vec<String> = match &args.texts_from {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("reading {}", path.display()))?
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| match serde_json::from_str::<Value>(l) {
                Ok(v) if v["text"].is_string() => v["text"].as_str().unwrap_or("").to_string(),
                _ => l.to_string(),
            })
            .take(args.texts)
            .collect(),
        None => Vec::new(),
    };
    let texts: Vec<&str> = if from_file.is_empty() {
        items
            .iter()
            .take(args.texts)
            .map(|i| i.content.as_str())
            .collect()
    } else {
        from_file.iter().map(String::as_str).collect()
    };
    let t = Instant::now();
    for chunk in texts.chunks(1) {
        e.embed(chunk)?;
    }
    let one = texts.len() as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    for chunk in texts.chunks(32) {
        e.embed(chunk)?;
    }
    let batch = texts.len() as f64 / t.elapsed().as_secs_f64();
    let mut query_embed = Vec::new();
    for q in queries.iter().take(100) {
        let t = Instant::now();
        e.embed(&[q])?;
        query_embed.push(t.elapsed());
    }
    let query_embed = summarize(&mut query_embed, Duration::ZERO);

    let distinct = distinct_vectors(&*e, &items[..args.distinct.min(max)])?;
    // What int8 costs in ranking: over the distinct real vectors, the top
    // 10 by quantized cosine against the top 10 by exact f32 cosine, for
    // real query vectors.
    let int8_overlap = {
        let mut index = Index::new(e.dim());
        for (i, v) in distinct.iter().enumerate() {
            index.upsert(i as i64, "default", v, None);
        }
        let probes: Vec<&String> = queries.iter().take(100).collect();
        let mut overlap = 0usize;
        for q in &probes {
            let v = e.embed(&[q.as_str()])?.remove(0);
            let approx: Vec<i64> = index
                .top(&Probe::new(&v), None, 10)
                .iter()
                .map(|x| x.0)
                .collect();
            let want = memd::embed::vectors::top_k(
                distinct
                    .iter()
                    .enumerate()
                    .map(|(i, x)| (i as i64, memd::embed::vectors::dot(&v, x))),
                10,
            );
            overlap += want.iter().filter(|(id, _)| approx.contains(id)).count();
        }
        overlap as f64 / (probes.len() * 10).max(1) as f64
    };
    let mut scales = Vec::new();
    for &n in &args.scales {
        scales.push(scale(args.queries, &*e, &items[..n], &distinct, &queries).await?);
    }
    let report = json!({
        "model": e.model_id(),
        "dim": e.dim(),
        "model_load_ms": load_ms,
        "texts": texts.len(),
        "mean_words": texts.iter().map(|t| t.split_whitespace().count()).sum::<usize>() as f64 / texts.len().max(1) as f64,
        "embed_per_sec_batch_1": one,
        "embed_per_sec_batch_32": batch,
        "query_embed": ms(&query_embed),
        "int8_top10_overlap": int8_overlap,
        "scales": scales,
        "machine": crate::stats::machine_facts(),
    });
    if args.json {
        println!("{report}");
        return Ok(());
    }
    println!(
        "memd-bench semantic: {} (dim {}), {}",
        report["model"].as_str().unwrap_or("?"),
        report["dim"],
        report["machine"].as_str().unwrap_or("")
    );
    println!(
        "embedding: {:.0} texts/s one by one, {:.0} texts/s in batches of 32 ({} texts, {:.0} words on average); one query {:.1} ms p50; model load {:.0} ms",
        one,
        batch,
        texts.len(),
        report["mean_words"].as_f64().unwrap_or(0.0),
        query_embed.p50_us / 1e3,
        load_ms
    );
    println!(
        "int8 index: {:.3} of the exact f32 top 10 found in its own top 10 ({} real vectors, 100 queries)",
        int8_overlap,
        distinct.len()
    );
    println!();
    println!(
        "| memories | semantic p50 / p95 | hybrid p50 / p95 | lexical p50 / p95 | scan only p50 | index | f32 would be | daemon RSS |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for s in &report["scales"].as_array().cloned().unwrap_or_default() {
        let f = |k: &str, p: &str| s[k][p].as_f64().unwrap_or(0.0);
        println!(
            "| {} | {:.1} / {:.1} ms | {:.1} / {:.1} ms | {:.2} / {:.2} ms | {:.2} ms | {:.1} MiB | {:.1} MiB | {:.0} MiB |",
            s["memories"],
            f("semantic", "p50_ms"),
            f("semantic", "p95_ms"),
            f("hybrid", "p50_ms"),
            f("hybrid", "p95_ms"),
            f("lexical", "p50_ms"),
            f("lexical", "p95_ms"),
            f("scan", "p50_ms"),
            s["index_mib"].as_f64().unwrap_or(0.0),
            s["f32_mib"].as_f64().unwrap_or(0.0),
            s["rss_mib"].as_f64().unwrap_or(0.0),
        );
    }
    Ok(())
}

async fn connect(d: &BenchDaemon) -> anyhow::Result<Client> {
    let mut o = ConnectOptions::new(d.socket());
    o.agent_id = "memd-bench".into();
    Ok(Client::connect(o).await?)
}

/// Real embeddings of `items`, which the scales repeat with noise.
pub(crate) fn distinct_vectors(
    e: &dyn Embedder,
    items: &[corpus::Item],
) -> anyhow::Result<Vec<Vec<f32>>> {
    let mut out = Vec::with_capacity(items.len());
    for chunk in items.chunks(32) {
        let t: Vec<&str> = chunk.iter().map(|i| i.content.as_str()).collect();
        out.extend(e.embed(&t)?);
    }
    Ok(out)
}

/// One scale: load, write vectors, restart with the embedder, measure. The
/// floor is the same work in this process: the query's embedding and a
/// scan of the same index, no socket, no daemon.
pub(crate) async fn scale(
    n_queries: usize,
    e: &dyn Embedder,
    items: &[corpus::Item],
    distinct: &[Vec<f32>],
    queries: &[String],
) -> anyhow::Result<Value> {
    let n = items.len();
    // Load without an embedder, so nothing is embedded meanwhile.
    let mut d = BenchDaemon::start(Some(&format!("{CONFIG}[embed]\nprovider = \"none\"\n")))?;
    let mut c = connect(&d).await?;
    let report = c
        .import(&crate::corpus::export_doc(items, 0)[..], false)
        .await?;
    anyhow::ensure!(report.inserted == n as u64, "{report:?}");
    drop(c);
    d.stop()?;

    // Vectors: real embeddings, repeated with noise.
    let db = d.data_dir().join("memory.db");
    let mut index = Index::new(e.dim());
    {
        let mut conn = Connection::open(&db)?;
        let tx = conn.transaction()?;
        {
            let mut stmt =
                tx.prepare("INSERT INTO memory_vectors (memory_id, vector) VALUES (?1, ?2)")?;
            let ids: Vec<i64> = {
                let mut s = tx.prepare("SELECT id FROM memories ORDER BY id")?;
                s.query_map([], |r| r.get(0))?.collect::<Result<_, _>>()?
            };
            let mut rng = Rng::new(11);
            for (i, id) in ids.iter().enumerate() {
                let mut v = distinct[i % distinct.len()].clone();
                for x in &mut v {
                    *x += (rng.unit() as f32 - 0.5) * 0.02;
                }
                memd::embed::normalize(&mut v);
                stmt.execute((id, to_blob(&v)))?;
                index.upsert(*id, "default", &v, None);
            }
        }
        tx.execute(
            "INSERT OR REPLACE INTO memory_meta (key, value) VALUES ('embed_model', ?1), ('embed_dim', ?2)",
            (e.model_id(), e.dim().to_string()),
        )?;
        tx.commit()?;
    }
    std::fs::write(d.dir.path().join("config.toml"), CONFIG)?;
    let spawned = Instant::now();
    let start = d.spawn()?;
    let mut c = connect(&d).await?;
    let status = loop {
        let s = c.status().await?;
        match s["embedder"]["state"].as_str() {
            Some("ready") if s["embedder"]["pending"] == 0 => break s,
            Some("ready" | "loading") => {}
            other => anyhow::bail!("the embedder is not ready: {other:?} {s}"),
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    // Serving at READY=1, semantic once the model and the vectors are in.
    let index_ready = spawned.elapsed();
    anyhow::ensure!(
        status["embedder"]["embedded"].as_u64() == Some(n as u64),
        "{status}"
    );
    let mut measure = async |mode| -> anyhow::Result<Summary> {
        let mut samples = Vec::with_capacity(queries.len());
        for q in queries {
            let t = Instant::now();
            c.search(search_req(q, mode)).await?;
            samples.push(t.elapsed());
        }
        Ok(summarize(&mut samples, Duration::ZERO))
    };
    let semantic = measure(SearchMode::Semantic).await?;
    let hybrid = measure(SearchMode::Hybrid).await?;
    let lexical = measure(SearchMode::Lexical).await?;
    // The scan alone, in this process: every vector scored, top 30 kept.
    let probe = Probe::new(&distinct[0]);
    let mut scan = Vec::new();
    for _ in 0..n_queries.min(100) {
        let t = Instant::now();
        std::hint::black_box(index.top(&probe, None, 30));
        scan.push(t.elapsed());
    }
    let scan = summarize(&mut scan, Duration::ZERO);
    let mut floor = Vec::new();
    for q in queries.iter().take(n_queries.min(100)) {
        let t = Instant::now();
        let v = e.embed(&[q.as_str()])?.remove(0);
        std::hint::black_box(index.top(&Probe::new(&v), None, 30));
        floor.push(t.elapsed());
    }
    let floor = summarize(&mut floor, Duration::ZERO);
    let rss = d.rss_mb();
    d.stop()?;
    Ok(json!({
        "memories": n,
        "semantic": ms(&semantic),
        "hybrid": ms(&hybrid),
        "lexical": ms(&lexical),
        "scan": ms(&scan),
        "floor": ms(&floor),
        "ready_ms": start.as_secs_f64() * 1e3,
        "index_ready_ms": index_ready.as_secs_f64() * 1e3,
        "index_mib": status["embedder"]["index_bytes"].as_f64().unwrap_or(0.0) / 1_048_576.0,
        "f32_mib": (n * e.dim() * 4) as f64 / 1_048_576.0,
        "rss_mib": rss,
    }))
}
