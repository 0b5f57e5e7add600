//! `eval`: retrieval quality on a conversation benchmark, through the real
//! daemon and its real search path.
//!
//! `DIR` holds `memories.jsonl` (one dialog turn per line: `conv`, `id`,
//! `speaker`, `text`, `session`, `session_iso`, `image_caption`) and
//! `queries.jsonl` (`conv`, `question`, `evidence` — the ids of the turns
//! that answer it — and `category`; any other field, such as an answer, is
//! never read). Each conversation is loaded into its own namespace the way
//! a user loads a transcript: as memd's turn lines (thread `session N`,
//! speaker, text, time, caption, turn id) through `memd ingest`'s own code,
//! one memory per turn. The daemon runs with a gate configuration any user
//! can set — `[gate] dedup = false, code_derivable = false, secrets =
//! "allow"` — so no turn is merged or refused. Every question is then
//! searched in its namespace.
//!
//! `--loco` chooses settings the honest way: every configuration of a small
//! grid answers every question; for each conversation, the configuration
//! best on the other ones (by (R@5 + R@10) / 2) is scored on it. The
//! report gives that held-out figure per conversation and its mean, next to
//! plain FTS5 BM25 over the same `Speaker: text` content (one index per
//! conversation, in this process), with a 95% paired bootstrap interval of
//! the gain (questions resampled within conversations).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memd::commands::ingest;
use memd_client::{Client, ConnectOptions, Filter, QuerySyntax, SearchMode, SearchRequest};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::corpus::Rng;
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
    /// How hybrid search merges rankings: `minmax`, `minmax:W`, `rrf`,
    /// `rrf:K`, `weighted` or `weighted:W` (W: lexical weight). Several,
    /// comma-separated, are each evaluated on the same loaded and embedded
    /// data (the daemon restarts with each).
    #[arg(long, value_delimiter = ',')]
    pub fusion: Vec<String>,
    /// Leave one conversation out: choose settings from a grid on the other
    /// conversations, score each on the one left out (lexical settings; with
    /// an embedder and `auto` or `hybrid`, the fusion's lexical weight)
    #[arg(long)]
    pub loco: bool,
    /// Load each conversation this many times (copies in namespaces
    /// `CONV~2`, `CONV~3`, …; questions are asked in the first): latency
    /// on a larger index of the same kind of memories
    #[arg(long, default_value_t = 1)]
    pub copies: usize,
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
    session_iso: Option<String>,
    #[serde(default)]
    image_caption: Option<String>,
}

/// A question: the fields read (a line's other fields, such as its answer,
/// are skipped unread).
#[derive(Debug, Deserialize)]
struct Question {
    conv: String,
    question: String,
    evidence: Vec<String>,
    category: Value,
}

impl Question {
    fn category(&self) -> String {
        match &self.category {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
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

/// One question's result.
#[derive(Debug, Default, Clone, Copy)]
struct Score {
    r1: f64,
    r5: f64,
    r10: f64,
    any10: f64,
    rr10: f64,
}

impl Score {
    fn of(evidence: &[String], ranked: &[String]) -> Score {
        let recall = |k: usize| {
            let top = &ranked[..ranked.len().min(k)];
            evidence.iter().filter(|e| top.contains(e)).count() as f64
                / evidence.len().max(1) as f64
        };
        let first = ranked.iter().take(10).position(|id| evidence.contains(id));
        Score {
            r1: recall(1),
            r5: recall(5),
            r10: recall(10),
            any10: if first.is_some() { 1.0 } else { 0.0 },
            rr10: first.map_or(0.0, |p| 1.0 / (p as f64 + 1.0)),
        }
    }

    /// What settings are chosen by.
    fn objective(&self) -> f64 {
        f64::midpoint(self.r5, self.r10)
    }
}

/// Metrics over a set of questions.
#[derive(Debug, Default, Clone)]
struct Totals {
    n: usize,
    sum: Score,
}

impl Totals {
    fn add(&mut self, s: &Score) {
        self.n += 1;
        self.sum.r1 += s.r1;
        self.sum.r5 += s.r5;
        self.sum.r10 += s.r10;
        self.sum.any10 += s.any10;
        self.sum.rr10 += s.rr10;
    }

    fn json(&self) -> Value {
        let n = self.n.max(1) as f64;
        let r = |x: f64| (x / n * 1000.0).round() / 1000.0;
        json!({
            "n": self.n,
            "recall@1": r(self.sum.r1),
            "recall@5": r(self.sum.r5),
            "recall@10": r(self.sum.r10),
            "any@10": r(self.sum.any10),
            "mrr@10": r(self.sum.rr10),
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

/// A conversation as memd's turn lines (what `memd ingest` reads).
fn turn_lines(turns: &[Turn]) -> String {
    let mut out = String::new();
    for t in turns {
        let thread = match &t.session {
            Some(Value::Null) | None => "session".to_string(),
            Some(Value::String(s)) => format!("session {s}"),
            Some(other) => format!("session {other}"),
        };
        let line = json!({
            "thread": thread,
            "speaker": t.speaker,
            "text": t.text,
            "time": t.session_iso,
            "caption": t.image_caption,
            "id": t.id,
        });
        out.push_str(&line.to_string());
        out.push('\n');
    }
    out
}

/// The turn id a hit carries (metadata `turn`, set by the ingest).
fn turn_of(hit: &memd_client::Hit) -> Option<String> {
    let meta: Value = serde_json::from_str(&hit.memory.metadata).ok()?;
    meta.get("turn")?.as_str().map(str::to_string)
}

/// The daemon, how to reach it, and what the load did.
struct Setup {
    daemon: BenchDaemon,
    memories: usize,
    load_time: Duration,
    embed_time: Duration,
    embedder: Value,
}

impl Setup {
    async fn connect(&self, ns: &str) -> memd_client::Result<Client> {
        let mut o = ConnectOptions::new(self.daemon.socket());
        o.namespace = ns.to_string();
        o.agent_id = "memd-bench".into();
        Client::connect(o).await
    }

    /// Waits until the embedder (if any) has embedded every memory.
    async fn embedded(&self) -> anyhow::Result<Value> {
        let mut c = self.connect("default").await?;
        loop {
            let e = c.status().await?["embedder"].clone();
            match e["state"].as_str() {
                Some("loading") => {}
                Some("ready") if e["pending"] == 0 => return Ok(e),
                Some("ready") => {}
                _ => return Ok(e),
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Restarts the daemon on the loaded data with another configuration.
    async fn reconfigure(&mut self, config: &str) -> anyhow::Result<()> {
        self.daemon.stop()?;
        std::fs::write(self.daemon.dir.path().join("config.toml"), config)?;
        self.daemon.spawn()?;
        self.embedded().await?;
        Ok(())
    }
}

/// Starts a daemon and loads every conversation into its own namespace.
async fn load(turns: Vec<Turn>, copies: usize, config: &str) -> anyhow::Result<Setup> {
    let daemon = BenchDaemon::start(Some(config))?;
    let mut setup = Setup {
        daemon,
        memories: 0,
        load_time: Duration::ZERO,
        embed_time: Duration::ZERO,
        embedder: Value::Null,
    };
    let mut by_conv: BTreeMap<String, Vec<Turn>> = BTreeMap::new();
    for t in turns {
        for k in 2..=copies {
            let copy = Turn {
                conv: format!("{}~{k}", t.conv),
                id: t.id.clone(),
                speaker: t.speaker.clone(),
                text: t.text.clone(),
                session: t.session.clone(),
                session_iso: t.session_iso.clone(),
                image_caption: t.image_caption.clone(),
            };
            by_conv.entry(copy.conv.clone()).or_default().push(copy);
        }
        by_conv.entry(t.conv.clone()).or_default().push(t);
    }
    setup.memories = by_conv.values().map(Vec::len).sum();
    let started = Instant::now();
    let mut loads = Vec::new();
    for (conv, turns) in by_conv {
        let mut client = setup.connect(&conv).await?;
        loads.push(tokio::spawn(async move {
            let parsed = ingest::parse(
                &turn_lines(&turns),
                Some(ingest::Format::Turns),
                &conv,
                None,
            );
            let counts = ingest::send(&mut client, parsed).await?;
            if counts.added != turns.len() {
                bail!(
                    "{conv}: {} of {} turns stored ({:?})",
                    counts.added,
                    turns.len(),
                    counts.errors
                );
            }
            Ok::<_, anyhow::Error>(())
        }));
    }
    for l in loads {
        l.await??;
    }
    setup.load_time = started.elapsed();
    // Semantic search needs every turn embedded (the worker runs in the
    // background after each add returns).
    let embed_started = Instant::now();
    setup.embedder = setup.embedded().await?;
    setup.embed_time = embed_started.elapsed();
    Ok(setup)
}

/// Every question asked once: each one's score, and the latencies.
async fn ask_all(
    setup: &Setup,
    args: &EvalArgs,
    mode: SearchMode,
    questions: &[Question],
) -> anyhow::Result<(Vec<Score>, Vec<Duration>)> {
    let mut clients: HashMap<String, Client> = HashMap::new();
    let mut scores = Vec::with_capacity(questions.len());
    let mut latencies = Vec::with_capacity(questions.len());
    for q in questions {
        if !clients.contains_key(&q.conv) {
            clients.insert(q.conv.clone(), setup.connect(&q.conv).await?);
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
        let ranked: Vec<String> = result.hits.iter().filter_map(turn_of).collect();
        scores.push(Score::of(&q.evidence, &ranked));
    }
    Ok((scores, latencies))
}

/// The `[search.hybrid]` lines of a `--fusion` value.
fn fusion_config(v: &str) -> anyhow::Result<String> {
    let (name, param) = v.split_once(':').unwrap_or((v, ""));
    let mut c = format!("[search.hybrid]\nfusion = \"{name}\"\n");
    if !param.is_empty() {
        let x: f64 = param.parse().with_context(|| format!("bad fusion {v}"))?;
        let key = if name == "rrf" {
            "rrf_k"
        } else {
            "lexical_weight"
        };
        c.push_str(&format!("{key} = {x}\n"));
    }
    Ok(c)
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
    if args.loco {
        let baseline = bm25_baseline(&turns, &questions, args.limit)?;
        let mut setup = load(turns, args.copies, &config).await?;
        return loco(&args, mode, &questions, &baseline, &config, &mut setup).await;
    }
    let variants: Vec<Option<String>> = if args.fusion.is_empty() {
        vec![None]
    } else {
        args.fusion.iter().cloned().map(Some).collect()
    };
    let with_fusion = |v: &Option<String>| -> anyhow::Result<String> {
        Ok(match v {
            Some(v) => format!("{config}{}", fusion_config(v)?),
            None => config.clone(),
        })
    };
    let mut setup = load(turns, args.copies, &with_fusion(&variants[0])?).await?;
    for (k, variant) in variants.iter().enumerate() {
        if k > 0 {
            setup.reconfigure(&with_fusion(variant)?).await?;
        }
        let (scores, mut latencies) = ask_all(&setup, &args, mode, &questions).await?;
        report(
            &args,
            mode,
            variant.as_ref(),
            &questions,
            &scores,
            &mut latencies,
            &setup,
        );
    }
    Ok(())
}

fn report(
    args: &EvalArgs,
    mode: SearchMode,
    variant: Option<&String>,
    questions: &[Question],
    scores: &[Score],
    latencies: &mut [Duration],
    setup: &Setup,
) {
    let mut all = Totals::default();
    let mut by_cat: BTreeMap<String, Totals> = BTreeMap::new();
    for (q, s) in questions.iter().zip(scores) {
        all.add(s);
        by_cat.entry(q.category()).or_default().add(s);
    }
    let lat = summarize(latencies, Duration::ZERO);
    let by_category: serde_json::Map<String, Value> =
        by_cat.iter().map(|(c, t)| (c.clone(), t.json())).collect();
    let report = json!({
        "all": all.json(),
        "by_category": by_category,
        "latency_ms": {"p50": lat.p50_us / 1e3, "p95": lat.p95_us / 1e3},
        "mode": mode.as_str(),
        "fusion": variant,
        "limit": args.limit,
        "memories": setup.memories,
        "load_secs": setup.load_time.as_secs_f64(),
        "embed_wait_secs": setup.embed_time.as_secs_f64(),
        "embedder": setup.embedder,
    });
    if args.json {
        println!("{report}");
        return;
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
        setup.embed_time.as_secs_f64()
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
        );
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
}

/// Plain FTS5 BM25 over the same `Speaker: text` content, one index per
/// conversation (memd's tokenizer; the question's words but stopwords,
/// OR-ed, as memd builds a plain query): the baseline the gains are
/// measured against.
fn bm25_baseline(turns: &[Turn], questions: &[Question], limit: u32) -> anyhow::Result<Vec<Score>> {
    // One index per conversation: the statistics of its own turns only.
    let convs: Vec<String> = {
        let mut c: Vec<String> = turns.iter().map(|t| t.conv.clone()).collect();
        c.sort();
        c.dedup();
        c
    };
    let mut per_conv = HashMap::new();
    for conv in convs {
        let c = rusqlite::Connection::open_in_memory()?;
        c.execute_batch(
            "CREATE VIRTUAL TABLE t USING fts5(id UNINDEXED, content, \
             tokenize = 'porter unicode61 remove_diacritics 2')",
        )?;
        {
            let mut insert = c.prepare("INSERT INTO t(id, content) VALUES (?1, ?2)")?;
            for turn in turns.iter().filter(|t| t.conv == conv) {
                insert.execute((&turn.id, format!("{}: {}", turn.speaker, turn.text)))?;
            }
        }
        per_conv.insert(conv, c);
    }
    let mut out = Vec::with_capacity(questions.len());
    for q in questions {
        let words = memd::store::search::words::query_words(&q.question);
        let ranked = match per_conv.get(&q.conv) {
            Some(c) if !words.is_empty() => {
                let fts = words
                    .iter()
                    .map(|w| format!("\"{w}\""))
                    .collect::<Vec<_>>()
                    .join(" OR ");
                let mut stmt = c.prepare_cached(
                    "SELECT id FROM t WHERE t MATCH ?1 ORDER BY bm25(t), rowid DESC LIMIT ?2",
                )?;
                stmt.query_map((fts, limit), |r| r.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()?
            }
            _ => Vec::new(),
        };
        out.push(Score::of(&q.evidence, &ranked));
    }
    Ok(out)
}

/// One configuration of the `--loco` grid.
struct Setting {
    name: String,
    config: String,
    default: bool,
}

/// The grid: lexical settings (thread context weight, date weight,
/// feedback weight; at 0 a part adds nothing to a score), or with an
/// embedder the hybrid fusion's lexical weight over the default lexical
/// settings.
fn grid(hybrid: bool) -> Vec<Setting> {
    let rank = memd::store::search::rank::RankConfig::default();
    let mut out = Vec::new();
    if hybrid {
        let d = rank.hybrid.lexical_weight;
        for w in [0.5, 0.6, 0.7, 0.8, 0.9, 1.0] {
            out.push(Setting {
                name: format!("minmax lexical {w}"),
                config: format!("[search.hybrid]\nfusion = \"minmax\"\nlexical_weight = {w:?}\n"),
                default: (w - d).abs() < 1e-9,
            });
        }
        return out;
    }
    for context in [0.0, 0.5, 0.7, 1.0] {
        for date in [0.0, 1.0, 2.0] {
            for feedback in [0.0, 0.1, 0.2] {
                out.push(Setting {
                    name: format!("context {context} date {date} feedback {feedback}"),
                    config: format!(
                        "[search]\ncontext_weight = {context:?}\ndate_weight = {date:?}\n\
                         feedback_weight = {feedback:?}\n"
                    ),
                    default: (context - rank.context_weight).abs() < 1e-9
                        && (date - rank.date_weight).abs() < 1e-9
                        && (feedback - rank.feedback_weight).abs() < 1e-9,
                });
            }
        }
    }
    out
}

/// Questions' indices by conversation, in a fixed order.
fn folds(questions: &[Question]) -> BTreeMap<String, Vec<usize>> {
    let mut f: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, q) in questions.iter().enumerate() {
        f.entry(q.conv.clone()).or_default().push(i);
    }
    f
}

/// Mean over folds of the mean of `x` over each fold's questions.
fn fold_mean(folds: &BTreeMap<String, Vec<usize>>, x: impl Fn(usize) -> f64) -> f64 {
    let means: Vec<f64> = folds
        .values()
        .map(|idx| idx.iter().map(|&i| x(i)).sum::<f64>() / idx.len().max(1) as f64)
        .collect();
    means.iter().sum::<f64>() / means.len().max(1) as f64
}

/// The mean-over-folds gain `d`, its 95% paired bootstrap interval
/// (questions resampled within each conversation, 2,000 times) and the
/// folds where it is positive.
fn gain(folds: &BTreeMap<String, Vec<usize>>, d: &[f64]) -> Value {
    let mean = fold_mean(folds, |i| d[i]);
    let mut rng = Rng::new(0x6d65_6d64);
    let mut samples: Vec<f64> = (0..2000)
        .map(|_| {
            let means: Vec<f64> = folds
                .values()
                .map(|idx| {
                    let n = idx.len().max(1);
                    (0..idx.len()).map(|_| d[idx[rng.below(n)]]).sum::<f64>() / n as f64
                })
                .collect();
            means.iter().sum::<f64>() / means.len().max(1) as f64
        })
        .collect();
    samples.sort_by(f64::total_cmp);
    let positive = folds
        .values()
        .filter(|idx| idx.iter().map(|&i| d[i]).sum::<f64>() > 0.0)
        .count();
    let r = |x: f64| (x * 1000.0).round() / 1000.0;
    json!({
        "mean": r(mean),
        "ci95": [r(samples[49]), r(samples[1949])],
        "folds_positive": positive,
        "folds": folds.len(),
    })
}

async fn loco(
    args: &EvalArgs,
    mode: SearchMode,
    questions: &[Question],
    baseline: &[Score],
    base_config: &str,
    setup: &mut Setup,
) -> anyhow::Result<()> {
    let hybrid =
        setup.embedder["state"] == "ready" && matches!(mode, SearchMode::Auto | SearchMode::Hybrid);
    let settings = grid(hybrid);
    let folds = folds(questions);
    // Every setting answers every question.
    let mut runs: Vec<Vec<Score>> = Vec::with_capacity(settings.len());
    let mut latency_ms = Vec::with_capacity(settings.len());
    for s in &settings {
        setup
            .reconfigure(&format!("{base_config}{}", s.config))
            .await?;
        let (scores, mut lat) = ask_all(setup, args, mode, questions).await?;
        latency_ms.push(summarize(&mut lat, Duration::ZERO).p50_us / 1e3);
        runs.push(scores);
    }
    // Per fold: the setting best on the other conversations.
    let mut chosen = vec![0usize; questions.len()];
    let mut fold_rows = Vec::new();
    for (conv, idx) in &folds {
        let train = |k: usize| {
            let (sum, n) = runs[k]
                .iter()
                .enumerate()
                .filter(|(i, _)| questions[*i].conv != *conv)
                .fold((0.0, 0usize), |(s, n), (_, x)| (s + x.objective(), n + 1));
            sum / n.max(1) as f64
        };
        let best = (0..settings.len())
            .max_by(|&a, &b| train(a).total_cmp(&train(b)).then_with(|| b.cmp(&a)))
            .unwrap_or(0);
        let mut t = Totals::default();
        let mut b = Totals::default();
        for &i in idx {
            chosen[i] = best;
            t.add(&runs[best][i]);
            b.add(&baseline[i]);
        }
        fold_rows.push(json!({
            "conv": conv,
            "chosen": settings[best].name,
            "held_out": t.json(),
            "baseline": b.json(),
        }));
    }
    let held = |i: usize| runs[chosen[i]][i];
    let r = |x: f64| (x * 1000.0).round() / 1000.0;
    let mut by_cat: BTreeMap<String, Totals> = BTreeMap::new();
    let mut by_cat_base: BTreeMap<String, Totals> = BTreeMap::new();
    for (i, q) in questions.iter().enumerate() {
        by_cat.entry(q.category()).or_default().add(&held(i));
        by_cat_base
            .entry(q.category())
            .or_default()
            .add(&baseline[i]);
    }
    let d5: Vec<f64> = (0..questions.len())
        .map(|i| held(i).r5 - baseline[i].r5)
        .collect();
    let d10: Vec<f64> = (0..questions.len())
        .map(|i| held(i).r10 - baseline[i].r10)
        .collect();
    let default = settings.iter().position(|s| s.default);
    // Each fixed setting over all folds, and its gain over the default.
    let fixed: Vec<Value> = settings
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let mut v = json!({
                "setting": s.name,
                "default": s.default,
                "recall@1": r(fold_mean(&folds, |i| runs[k][i].r1)),
                "recall@5": r(fold_mean(&folds, |i| runs[k][i].r5)),
                "recall@10": r(fold_mean(&folds, |i| runs[k][i].r10)),
                "latency_p50_ms": r(latency_ms[k]),
            });
            if let Some(d) = default.filter(|d| *d != k) {
                let diff: Vec<f64> = (0..questions.len())
                    .map(|i| runs[k][i].r10 - runs[d][i].r10)
                    .collect();
                v["recall@10_vs_default"] = gain(&folds, &diff);
            }
            v
        })
        .collect();
    let report = json!({
        "mode": mode.as_str(),
        "grid": if hybrid { "hybrid fusion" } else { "lexical" },
        "settings": settings.len(),
        "held_out": {
            "recall@1": r(fold_mean(&folds, |i| held(i).r1)),
            "recall@5": r(fold_mean(&folds, |i| held(i).r5)),
            "recall@10": r(fold_mean(&folds, |i| held(i).r10)),
        },
        "baseline": {
            "what": "FTS5 BM25 over Speaker: text, one index per conversation, stopwords dropped",
            "recall@1": r(fold_mean(&folds, |i| baseline[i].r1)),
            "recall@5": r(fold_mean(&folds, |i| baseline[i].r5)),
            "recall@10": r(fold_mean(&folds, |i| baseline[i].r10)),
        },
        "gain": {"recall@5": gain(&folds, &d5), "recall@10": gain(&folds, &d10)},
        "folds": fold_rows,
        "by_category": by_cat.iter().map(|(c, t)| {
            (c.clone(), json!({"held_out": t.json(), "baseline": by_cat_base[c].json()}))
        }).collect::<serde_json::Map<_, _>>(),
        "fixed": fixed,
        "memories": setup.memories,
        "embedder": setup.embedder,
    });
    if args.json {
        println!("{report}");
        return Ok(());
    }
    println!(
        "memd eval --loco: {} questions, {} memories, mode {}, {} settings ({} grid); {}",
        questions.len(),
        setup.memories,
        mode.as_str(),
        settings.len(),
        report["grid"].as_str().unwrap_or(""),
        crate::perf::machine_facts()
    );
    println!();
    println!("| held out | n | chosen on the others | R@1 | R@5 | R@10 | BM25 R@10 |");
    println!("|---|---|---|---|---|---|---|");
    for f in &fold_rows {
        println!(
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} |",
            f["conv"].as_str().unwrap_or(""),
            f["held_out"]["n"],
            f["chosen"].as_str().unwrap_or(""),
            f["held_out"]["recall@1"].as_f64().unwrap_or(0.0),
            f["held_out"]["recall@5"].as_f64().unwrap_or(0.0),
            f["held_out"]["recall@10"].as_f64().unwrap_or(0.0),
            f["baseline"]["recall@10"].as_f64().unwrap_or(0.0),
        );
    }
    let h = &report["held_out"];
    let b = &report["baseline"];
    println!(
        "| mean over folds | {} | | {:.3} | {:.3} | {:.3} | {:.3} |",
        questions.len(),
        h["recall@1"].as_f64().unwrap_or(0.0),
        h["recall@5"].as_f64().unwrap_or(0.0),
        h["recall@10"].as_f64().unwrap_or(0.0),
        b["recall@10"].as_f64().unwrap_or(0.0),
    );
    println!();
    for k in ["recall@5", "recall@10"] {
        let g = &report["gain"][k];
        println!(
            "gain over BM25, {k}: {:+.3} [{:+.3}, {:+.3}], positive in {} of {} folds",
            g["mean"].as_f64().unwrap_or(0.0),
            g["ci95"][0].as_f64().unwrap_or(0.0),
            g["ci95"][1].as_f64().unwrap_or(0.0),
            g["folds_positive"],
            g["folds"]
        );
    }
    println!();
    println!("| category | n | R@5 | R@10 | BM25 R@5 | BM25 R@10 |");
    println!("|---|---|---|---|---|---|");
    for (c, t) in &by_cat {
        let (t, b) = (t.json(), by_cat_base[c].json());
        println!(
            "| {c} {} | {} | {:.3} | {:.3} | {:.3} | {:.3} |",
            category_name(c),
            t["n"],
            t["recall@5"].as_f64().unwrap_or(0.0),
            t["recall@10"].as_f64().unwrap_or(0.0),
            b["recall@5"].as_f64().unwrap_or(0.0),
            b["recall@10"].as_f64().unwrap_or(0.0),
        );
    }
    println!();
    println!("each setting fixed, mean over folds (no choice made):");
    println!();
    println!("| setting | R@1 | R@5 | R@10 | ΔR@10 vs default [95% CI] folds | p50 ms |");
    println!("|---|---|---|---|---|---|");
    for f in &fixed {
        let g = &f["recall@10_vs_default"];
        let delta = if g.is_null() {
            "(default)".to_string()
        } else {
            format!(
                "{:+.3} [{:+.3}, {:+.3}] {}/{}",
                g["mean"].as_f64().unwrap_or(0.0),
                g["ci95"][0].as_f64().unwrap_or(0.0),
                g["ci95"][1].as_f64().unwrap_or(0.0),
                g["folds_positive"],
                g["folds"]
            )
        };
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {delta} | {:.2} |",
            f["setting"].as_str().unwrap_or(""),
            f["recall@1"].as_f64().unwrap_or(0.0),
            f["recall@5"].as_f64().unwrap_or(0.0),
            f["recall@10"].as_f64().unwrap_or(0.0),
            f["latency_p50_ms"].as_f64().unwrap_or(0.0),
        );
    }
    Ok(())
}
