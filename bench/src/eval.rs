//! `eval`: retrieval quality on a conversation benchmark, through the real
//! daemon and its real search path.
//!
//! `DIR` holds `memories.jsonl` (one dialog turn per line: `conv`, `id`,
//! `speaker`, `text`, …) and `queries.jsonl` (`conv`, `question`,
//! `evidence` — the ids of the turns that answer it — and `category`). Each
//! conversation is loaded into its own namespace, one memory per turn with
//! content `Speaker: text` and the turn id in metadata (`dia_id`). The daemon
//! runs with a gate configuration any user can set — `[gate] dedup = false,
//! code_derivable = false, secrets = "allow"` — so no turn is merged or
//! refused. Every question is then searched in its namespace.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memd_client::{
    AddRequest, Client, ConnectOptions, Filter, QuerySyntax, SearchMode, SearchRequest,
};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::daemon::BenchDaemon;
use crate::stats::summarize;

/// Flags of `eval`.
#[derive(Debug, clap::Args)]
pub struct EvalArgs {
    /// Directory with memories.jsonl and queries.jsonl
    #[arg(long)]
    pub data: PathBuf,
    /// Search mode: auto, lexical, fuzzy, semantic or hybrid
    #[arg(long, default_value = "auto")]
    pub mode: String,
    /// Hits asked for per question
    #[arg(long, default_value_t = 10)]
    pub limit: u32,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
    /// Run the daemon without an embedder (`auto` is then lexical with the
    /// fuzzy fallback)
    #[arg(long)]
    pub no_embedder: bool,
    /// How hybrid search merges rankings: `rrf`, `rrf:K`, `weighted` or
    /// `weighted:W` (W: lexical weight). Several, comma-separated, are each
    /// evaluated on the same loaded and embedded data (the daemon restarts
    /// with each).
    #[arg(long, value_delimiter = ',')]
    pub fusion: Vec<String>,
}

/// The daemon's configuration for an evaluation: nothing merged or refused.
pub const EVAL_CONFIG: &str = "[gate]\ndedup = false\ncode_derivable = false\n\
    secrets = \"allow\"\n[limits]\nmax_content_bytes = 65536\n";

#[derive(Debug, Deserialize)]
struct Turn {
    conv: String,
    id: String,
    speaker: String,
    text: String,
    #[serde(default)]
    session: Option<Value>,
    #[serde(default)]
    session_date: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Question {
    conv: String,
    question: String,
    evidence: Vec<String>,
    category: Value,
}

fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &PathBuf) -> anyhow::Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{}:{}: bad line", path.display(), i + 1))
        })
        .collect()
}

/// Metrics over a set of questions.
#[derive(Debug, Default, Clone)]
struct Totals {
    n: usize,
    r1: f64,
    r5: f64,
    r10: f64,
    any10: f64,
    mrr10: f64,
}

impl Totals {
    fn add(&mut self, evidence: &[String], ranked: &[String]) {
        let recall = |k: usize| {
            let top = &ranked[..ranked.len().min(k)];
            evidence.iter().filter(|e| top.contains(e)).count() as f64 / evidence.len() as f64
        };
        self.n += 1;
        self.r1 += recall(1);
        self.r5 += recall(5);
        self.r10 += recall(10);
        let first = ranked.iter().take(10).position(|id| evidence.contains(id));
        if let Some(pos) = first {
            self.any10 += 1.0;
            self.mrr10 += 1.0 / (pos as f64 + 1.0);
        }
    }

    fn json(&self) -> Value {
        let n = self.n.max(1) as f64;
        let r = |x: f64| (x / n * 1000.0).round() / 1000.0;
        json!({
            "n": self.n,
            "recall@1": r(self.r1),
            "recall@5": r(self.r5),
            "recall@10": r(self.r10),
            "any@10": r(self.any10),
            "mrr@10": r(self.mrr10),
        })
    }
}

/// Names of the LoCoMo categories.
fn category_name(c: &str) -> &'static str {
    match c {
        "1" => "multi-hop",
        "2" => "temporal",
        "3" => "open-domain",
        "4" => "single-hop",
        "5" => "adversarial",
        _ => "other",
    }
}

pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run_async(args))
}

async fn run_async(args: EvalArgs) -> anyhow::Result<()> {
    let mode =
        SearchMode::parse(&args.mode).with_context(|| format!("unknown mode {}", args.mode))?;
    let turns: Vec<Turn> = read_jsonl(&args.data.join("memories.jsonl"))?;
    let questions: Vec<Question> = read_jsonl(&args.data.join("queries.jsonl"))?;
    if turns.is_empty() || questions.is_empty() {
        bail!("no turns or no questions in {}", args.data.display());
    }
    let mut config = EVAL_CONFIG.to_string();
    if args.no_embedder {
        config.push_str("[embed]\nprovider = \"none\"\n");
    }
    let variants: Vec<Option<String>> = if args.fusion.is_empty() {
        vec![None]
    } else {
        args.fusion.iter().cloned().map(Some).collect()
    };
    let with_fusion = |v: &Option<String>| -> anyhow::Result<String> {
        let mut c = config.clone();
        if let Some(v) = v {
            let (name, param) = v.split_once(':').unwrap_or((v.as_str(), ""));
            c.push_str(&format!("[search.hybrid]\nfusion = \"{name}\"\n"));
            if !param.is_empty() {
                let x: f64 = param.parse().with_context(|| format!("bad fusion {v}"))?;
                let key = if name == "rrf" {
                    "rrf_k"
                } else {
                    "lexical_weight"
                };
                c.push_str(&format!("{key} = {x}\n"));
            }
        }
        Ok(c)
    };
    let mut daemon = BenchDaemon::start(Some(&with_fusion(&variants[0])?))?;
    let socket = daemon.socket();
    let connect = |ns: &str| {
        let mut o = ConnectOptions::new(socket.clone());
        o.namespace = ns.to_string();
        o.agent_id = "memd-bench".into();
        Client::connect(o)
    };

    // Load: one namespace per conversation, conversations in parallel.
    let mut by_conv: BTreeMap<String, Vec<Turn>> = BTreeMap::new();
    for t in turns {
        by_conv.entry(t.conv.clone()).or_default().push(t);
    }
    let started = Instant::now();
    let mut loads = Vec::new();
    for (conv, turns) in by_conv {
        let mut client = connect(&conv).await?;
        loads.push(tokio::spawn(async move {
            let mut ids = HashMap::new();
            for t in turns {
                let meta =
                    json!({"dia_id": t.id, "session": t.session, "session_date": t.session_date});
                let r = client
                    .add(AddRequest {
                        content: format!("{}: {}", t.speaker, t.text),
                        metadata: Some(meta.to_string()),
                        ..Default::default()
                    })
                    .await?;
                if r.deduped || r.merged_into.is_some() {
                    anyhow::bail!("turn {} {} was merged", conv, t.id);
                }
                ids.insert(r.id.unwrap_or_default(), t.id);
            }
            Ok::<_, anyhow::Error>((conv, ids))
        }));
    }
    let mut dia: HashMap<String, HashMap<i64, String>> = HashMap::new();
    for l in loads {
        let (conv, ids) = l.await??;
        dia.insert(conv, ids);
    }
    let load_time = started.elapsed();
    // Semantic search needs every turn embedded (the worker runs in the
    // background after each add returns).
    let embed_started = Instant::now();
    let mut status_client = connect("default").await?;
    let embedder = loop {
        let status = status_client.status().await?;
        let e = status["embedder"].clone();
        match e["state"].as_str() {
            Some("loading") => {}
            Some("ready") if e["pending"] == 0 => break e,
            Some("ready") => {}
            _ => break e,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let embed_time = embed_started.elapsed();
    drop(status_client);

    for (k, variant) in variants.iter().enumerate() {
        if k > 0 {
            daemon.stop()?;
            std::fs::write(daemon.dir.path().join("config.toml"), with_fusion(variant)?)?;
            daemon.spawn()?;
            let mut c = connect("default").await?;
            loop {
                let e = c.status().await?["embedder"].clone();
                if e["state"] != "loading" && (e["state"] != "ready" || e["pending"] == 0) {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
        ask(
            &args, mode, variant, &questions, &dia, &connect, &embedder, load_time, embed_time,
        )
        .await?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
async fn ask<F, Fut>(
    args: &EvalArgs,
    mode: SearchMode,
    variant: &Option<String>,
    questions: &[Question],
    dia: &HashMap<String, HashMap<i64, String>>,
    connect: &F,
    embedder: &Value,
    load_time: Duration,
    embed_time: Duration,
) -> anyhow::Result<()>
where
    F: Fn(&str) -> Fut,
    Fut: std::future::Future<Output = memd_client::Result<Client>>,
{
    // Ask.
    let mut clients: HashMap<String, Client> = HashMap::new();
    let mut all = Totals::default();
    let mut by_cat: BTreeMap<String, Totals> = BTreeMap::new();
    let mut latencies = Vec::with_capacity(questions.len());
    for q in questions {
        if !clients.contains_key(&q.conv) {
            clients.insert(q.conv.clone(), connect(&q.conv).await?);
        }
        let client = clients.get_mut(&q.conv).expect("inserted above");
        let t = Instant::now();
        let result = client
            .search(SearchRequest {
                query: q.question.clone(),
                filter: Filter::default(),
                limit: args.limit,
                mode,
                syntax: QuerySyntax::Plain,
                explain: false,
                offset: 0,
            })
            .await?;
        latencies.push(t.elapsed());
        let ids = dia.get(&q.conv);
        let ranked: Vec<String> = result
            .hits
            .iter()
            .filter_map(|h| ids.and_then(|m| m.get(&h.memory.id)).cloned())
            .collect();
        let cat = match &q.category {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        all.add(&q.evidence, &ranked);
        by_cat.entry(cat).or_default().add(&q.evidence, &ranked);
    }
    let lat = summarize(&mut latencies, Duration::ZERO);

    let by_category: serde_json::Map<String, Value> =
        by_cat.iter().map(|(c, t)| (c.clone(), t.json())).collect();
    let report = json!({
        "all": all.json(),
        "by_category": by_category,
        "latency_ms": {"p50": lat.p50_us / 1e3, "p95": lat.p95_us / 1e3},
        "mode": mode.as_str(),
        "fusion": variant,
        "limit": args.limit,
        "memories": dia.values().map(HashMap::len).sum::<usize>(),
        "load_secs": load_time.as_secs_f64(),
        "embed_wait_secs": embed_time.as_secs_f64(),
        "embedder": embedder,
    });
    if args.json {
        println!("{report}");
        return Ok(());
    }
    println!(
        "memd eval: {} questions, {} memories, mode {}; {}",
        all.n,
        report["memories"],
        mode.as_str(),
        crate::perf::machine_facts()
    );
    if let Some(v) = variant {
        println!("hybrid fusion: {v}");
    }
    println!(
        "embedder: {} ({} embedded; waited {:.1} s after the load)",
        report["embedder"]["model"].as_str().unwrap_or("none"),
        report["embedder"]["embedded"],
        embed_time.as_secs_f64()
    );
    println!();
    println!("| set | n | R@1 | R@5 | R@10 | any@10 | MRR@10 |");
    println!("|---|---|---|---|---|---|---|");
    let row = |name: &str, t: &Value| {
        println!(
            "| {name} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
            t["n"],
            t["recall@1"].as_f64().unwrap_or(0.0),
            t["recall@5"].as_f64().unwrap_or(0.0),
            t["recall@10"].as_f64().unwrap_or(0.0),
            t["any@10"].as_f64().unwrap_or(0.0),
            t["mrr@10"].as_f64().unwrap_or(0.0),
        )
    };
    row("all categories", &report["all"]);
    for (c, t) in &by_category {
        row(&format!("{c} {}", category_name(c)), t);
    }
    println!();
    println!(
        "query latency: p50 {:.2} ms, p95 {:.2} ms",
        lat.p50_us / 1e3,
        lat.p95_us / 1e3
    );
    Ok(())
}
