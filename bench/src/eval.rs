//! `eval`: retrieval quality on conversation benchmarks, through the real
//! daemon and its real search path.
//!
//! Each `--data DIR` holds `memories.jsonl` (one dialog turn per line:
//! `conv`, `id`, `speaker`, `text`, `session`, `session_iso`,
//! `image_caption`) and `queries.jsonl` (`conv`, `qid`, `question`,
//! `category` and, to be scored, `evidence` — the ids of the turns that
//! answer it; any other field, such as an answer, is never read). Each
//! conversation is loaded into its own namespace the way a user loads a
//! transcript: as memd's turn lines (thread `session N`, speaker, text, time,
//! caption, turn id) through `memd ingest`'s own code, one memory per turn.
//! The daemon runs with a gate configuration any user can set — `[gate]
//! dedup = false, code_derivable = false, secrets = "allow"` — so no turn is
//! merged or refused. Every question is then searched in its namespace.
//! Each data set gets its own daemon (its own index statistics).
//!
//! `--rankings FILE` writes each question's ranking as JSON lines (`qid`,
//! `ids`: the data set's own turn ids, best first), so a scorer that is not
//! memd's can score the run; a queries file without `evidence` is then
//! ranked and not scored.
//!
//! `--loco` chooses settings the honest way, over every data set given at
//! once: every configuration of a grid answers every question; for each
//! conversation (of any set), the configuration best on all the other
//! conversations (by (R@5 + R@10) / 2, the mean over each set's
//! conversations, the sets weighted equally) is scored on it. The report
//! gives, per set, that held-out figure per conversation and its mean, per
//! category, next to plain FTS5 BM25 over the same `Speaker: text` content
//! (one index per conversation, in this process); and every setting fixed,
//! with its gain over the default and a 95% bootstrap interval that
//! resamples whole conversations, and its worst conversation.

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
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
    /// Directory with memories.jsonl and queries.jsonl (repeat for several
    /// data sets: each gets its own daemon; `--loco` chooses over all)
    #[arg(long, required = true)]
    pub data: Vec<PathBuf>,
    /// Search mode: auto, lexical, fuzzy, semantic or hybrid
    #[arg(long, default_value = "auto")]
    pub mode: String,
    /// Hits asked for per question (at least 10 with --rankings)
    #[arg(long, default_value_t = 10)]
    pub limit: u32,
    /// Print JSON (one object per data set, or one for --loco) instead of
    /// tables
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
    /// Config text appended for one run on the same loaded data (repeat:
    /// each is evaluated after every `--fusion` value), e.g. `--variant
    /// $'[search]\nlong_exponent = 0.3'`
    #[arg(long)]
    pub variant: Vec<String>,
    /// Leave one conversation out: choose settings from a grid on the other
    /// conversations of every data set, score each on the one left out
    #[arg(long)]
    pub loco: bool,
    /// The `--loco` grid: `lexical` (the lexical settings), `hybrid` (the
    /// fusion's lexical weight and the length rule; needs an embedder) or
    /// `threads` (thread vectors with the fusion's weights; needs an
    /// embedder) [default: hybrid with a ready embedder and mode auto or
    /// hybrid, else lexical]
    #[arg(long)]
    pub grid: Option<String>,
    /// Load each conversation this many times (copies in namespaces
    /// `CONV~2`, `CONV~3`, …; questions are asked in the first): latency
    /// on a larger index of the same kind of memories
    #[arg(long, default_value_t = 1)]
    pub copies: usize,
    /// With --copies: this many copies share one namespace, each as threads
    /// of its own (namespaces as large as a long chat's; the questions'
    /// namespace then holds duplicates, so recall says little: latency)
    #[arg(long, default_value_t = 1)]
    pub per_namespace: usize,
    /// Run the daemon on DIR instead of a new temporary data dir. When DIR
    /// already holds as many memories as this run loads (an earlier run
    /// with the same --data, --copies and --per-namespace, kept with
    /// MEMD_BENCH_KEEP=1), they are not loaded again: repeated latency runs
    /// on one large database. One data set only
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Write each question's ranking to FILE as JSON lines: `qid`, `ids`
    /// (the data set's own turn ids, best first)
    #[arg(long, value_name = "FILE")]
    pub rankings: Option<PathBuf>,
    /// With --loco: write every question's scores under every setting (and
    /// under lexical search and BM25) to FILE as JSON lines, so any two
    /// can be compared afterwards
    #[arg(long, value_name = "FILE")]
    pub scores: Option<PathBuf>,
    /// Load the conversations as a host's hooks capture them: each session
    /// written out as a Claude Code transcript and stored by `memd hook
    /// claude-code` (the real binary, `Stop` events) instead of `memd
    /// ingest`
    #[arg(long)]
    pub via_capture: bool,
    /// Captured turns beside the memories: the chats of data set DIR
    /// written out as Claude Code sessions and captured through the hook
    /// into every conversation's namespace, cycled to --beside-turns turns
    /// per namespace (the questions still ask about the memories)
    #[arg(long, value_name = "DIR")]
    pub beside: Option<PathBuf>,
    /// Curated memories beside the conversations: the turns of data set
    /// DIR stored by `memd ingest` (as people's kept memories) into every
    /// conversation's namespace, in threads of their own (the questions
    /// still ask about the conversations)
    #[arg(long, value_name = "DIR")]
    pub beside_curated: Option<PathBuf>,
    /// With --beside: captured turns per namespace (a year of one
    /// project's sessions: 250 days of 60 turns)
    #[arg(long, default_value_t = 15_000)]
    pub beside_turns: usize,
    /// The memd binary the hooks run [default: `memd` next to this one]
    #[arg(long)]
    pub memd: Option<PathBuf>,
}

/// How a run loads its memories besides `memd ingest`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Via {
    /// The memd binary, when the conversations are captured through its
    /// hook.
    capture: Option<PathBuf>,
    /// Captured turns added beside each conversation (already cycled).
    beside: Vec<Turn>,
    /// Memories ingested beside each conversation.
    curated: Vec<Turn>,
}

/// `t` in a session of its own beside the evaluated conversations:
/// `LABEL-CONV-SESSION[-PASS]` (its thread never meets theirs).
fn in_own_session(mut t: Turn, label: &str, pass: &str) -> Turn {
    let session = t.session.as_ref().map(Value::to_string).unwrap_or_default();
    let mut name = format!("{label}-{}-{session}", t.conv);
    if !pass.is_empty() {
        name.push('-');
        name.push_str(pass);
    }
    t.session = Some(Value::String(name));
    t
}

impl Via {
    fn of(args: &EvalArgs) -> anyhow::Result<Via> {
        let mut via = Via::default();
        if args.via_capture || args.beside.is_some() {
            via.capture = Some(crate::daemon::memd_binary(args.memd.as_deref())?);
        }
        if let Some(dir) = &args.beside {
            let set = DataSet::read(dir)?;
            via.beside = set
                .turns
                .iter()
                .cycle()
                .take(args.beside_turns)
                .enumerate()
                .map(|(i, t)| {
                    // Each pass over the chats is sessions of its own.
                    let pass = i / set.turns.len().max(1);
                    in_own_session(t.clone(), "beside", &pass.to_string())
                })
                .collect();
        }
        if let Some(dir) = &args.beside_curated {
            via.curated = DataSet::read(dir)?
                .turns
                .into_iter()
                .map(|t| in_own_session(t, "curated", ""))
                .collect();
        }
        Ok(via)
    }

    fn ingests(&self) -> bool {
        self.capture.is_none() || !self.beside.is_empty()
    }
}

/// The sessions of `turns` as Claude Code transcripts: session → its
/// lines (a `user` line for the user, an `assistant` line for anyone
/// else; the turn id is the line's uuid, the session's date its time).
fn transcripts(turns: &[&Turn]) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = BTreeMap::new();
    for t in turns {
        let session = match &t.session {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => "0".into(),
            Some(other) => other.to_string(),
        };
        let mut text = t.text.clone();
        if let Some(c) = &t.image_caption {
            text.push_str(&format!(" [image: {c}]"));
        }
        let at = t.session_iso.as_ref().map(|d| format!("{d}T00:00:00.000Z"));
        let line = if t.speaker.eq_ignore_ascii_case("user") {
            json!({"type": "user", "uuid": t.id, "timestamp": at,
                   "message": {"role": "user", "content": text}})
        } else {
            json!({"type": "assistant", "uuid": t.id, "timestamp": at,
                   "message": {"id": format!("m-{}", t.id), "role": "assistant",
                               "content": [{"type": "text", "text": text}]}})
        };
        let file = out.entry(session).or_default();
        file.push_str(&line.to_string());
        file.push('\n');
    }
    out
}

/// Captures `turns` into namespace `ns` through `memd hook claude-code`:
/// each session a transcript file in `dir`, `Stop` hooks until it is all
/// read. Returns the hooks run.
fn capture_turns(
    memd: &Path,
    daemon: &BenchDaemon,
    ns: &str,
    turns: &[&Turn],
    dir: &Path,
) -> anyhow::Result<usize> {
    let mut hooks = 0;
    for (session, text) in transcripts(turns) {
        let id: String = format!("{ns}-{session}")
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let path = dir.join(format!("{id}.jsonl"));
        std::fs::write(&path, text)?;
        loop {
            let event = json!({"hook_event_name": "Stop", "session_id": id, "cwd": "/",
                               "transcript_path": path});
            let mut child = std::process::Command::new(memd)
                .arg("--socket")
                .arg(daemon.socket())
                .arg("--data-dir")
                .arg(daemon.data_dir())
                .args(["--namespace", ns, "hook", "claude-code"])
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()?;
            child
                .stdin
                .take()
                .context("stdin")?
                .write_all(event.to_string().as_bytes())?;
            let out = child.wait_with_output()?;
            hooks += 1;
            let err = String::from_utf8_lossy(&out.stderr);
            if err.contains("memd hook:") && !err.contains("the rest at the next hook") {
                bail!("the hook failed on {}: {err}", path.display());
            }
            if !err.contains("the rest at the next hook") {
                break;
            }
        }
    }
    Ok(hooks)
}

/// The daemon's configuration for an evaluation: nothing merged or refused.
pub const EVAL_CONFIG: &str = "[gate]\ndedup = false\ncode_derivable = false\n\
    secrets = \"allow\"\n[limits]\nmax_content_bytes = 65536\n";

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Turn {
    pub(crate) conv: String,
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

/// A plain-text search of `query`: the first page of `limit` hits, no filter.
pub(crate) fn request(query: &str, mode: SearchMode, limit: u32) -> SearchRequest {
    SearchRequest {
        query: query.to_string(),
        filter: Filter::default(),
        limit,
        mode,
        syntax: QuerySyntax::Plain,
        explain: false,
        offset: 0,
    }
}

/// A question: the fields read (a line's other fields, such as its answer,
/// are skipped unread).
#[derive(Debug, Deserialize)]
pub(crate) struct Question {
    pub(crate) conv: String,
    #[serde(default)]
    qid: Option<Value>,
    pub(crate) question: String,
    #[serde(default)]
    evidence: Option<Vec<String>>,
    #[serde(default)]
    category: Value,
}

impl Question {
    fn category(&self) -> String {
        match &self.category {
            Value::String(s) => s.clone(),
            Value::Null => "-".into(),
            other => other.to_string(),
        }
    }

    pub(crate) fn evidence(&self) -> &[String] {
        self.evidence.as_deref().unwrap_or_default()
    }
}

fn read_jsonl<T: for<'de> Deserialize<'de>>(path: &Path) -> anyhow::Result<Vec<T>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{}:{}: bad line", path.display(), i + 1))
        })
        .collect()
}

/// One question's result.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Score {
    r1: f64,
    r5: f64,
    pub(crate) r10: f64,
    any10: f64,
    rr10: f64,
}

impl Score {
    pub(crate) fn of(evidence: &[String], ranked: &[String]) -> Score {
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
        json!({
            "n": self.n,
            "recall@1": r3(self.sum.r1 / n),
            "recall@5": r3(self.sum.r5 / n),
            "recall@10": r3(self.sum.r10 / n),
            "any@10": r3(self.sum.any10 / n),
            "mrr@10": r3(self.sum.rr10 / n),
        })
    }
}

pub(crate) fn r3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Names of the LoCoMo categories (other data sets name theirs).
fn category_name(c: &str) -> &'static str {
    match c {
        "1" => "multi-hop",
        "2" => "temporal",
        "3" => "open-domain",
        "4" => "single-hop",
        "5" => "adversarial",
        _ => "",
    }
}

pub fn run(args: EvalArgs) -> anyhow::Result<()> {
    crate::block_on(run_async(args))
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

/// The turn id a hit carries (metadata `turn`, set by the ingest; a
/// captured turn's `capture.line`).
pub(crate) fn turn_of(hit: &memd_client::Hit) -> Option<String> {
    let meta: Value = serde_json::from_str(&hit.memory.metadata).ok()?;
    meta.get("turn")
        .or_else(|| meta.get("capture")?.get("line"))?
        .as_str()
        .map(str::to_string)
}

/// The daemon, how to reach it, and what the load did.
pub(crate) struct Setup {
    daemon: BenchDaemon,
    memories: usize,
    load_time: Duration,
    embed_time: Duration,
    embedder: Value,
}

impl Setup {
    pub(crate) async fn connect(&self, ns: &str) -> memd_client::Result<Client> {
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
    pub(crate) async fn reconfigure(&mut self, config: &str) -> anyhow::Result<()> {
        self.daemon.stop()?;
        std::fs::write(self.daemon.dir.path().join("config.toml"), config)?;
        self.daemon.spawn()?;
        self.embedded().await?;
        Ok(())
    }
}

/// Where copy `k` (1 = the original) of a conversation goes: its namespace
/// (`CONV`, `CONV~2`, …, one per `per_namespace` copies) and the suffix of
/// its threads (none for the original).
fn copy_place(conv: &str, k: usize, per_namespace: usize) -> (String, String) {
    let group = (k - 1) / per_namespace.max(1) + 1;
    let ns = if group == 1 {
        conv.to_string()
    } else {
        format!("{conv}~{group}")
    };
    let suffix = if k == 1 {
        String::new()
    } else {
        format!("~{k}")
    };
    (ns, suffix)
}

/// Starts a daemon and loads every conversation into its own namespace.
pub(crate) async fn load(
    turns: &[Turn],
    copies: usize,
    per_namespace: usize,
    data_dir: Option<&Path>,
    config: &str,
    via: &Via,
) -> anyhow::Result<Setup> {
    let daemon = BenchDaemon::start_in(data_dir.map(Path::to_path_buf), Some(config))?;
    let mut setup = Setup {
        daemon,
        memories: 0,
        load_time: Duration::ZERO,
        embed_time: Duration::ZERO,
        embedder: Value::Null,
    };
    // Each copy is loaded as its own transcript (one ingest run) into its
    // namespace; copies sharing a namespace get threads of their own.
    let mut by_conv: BTreeMap<(String, String), Vec<Turn>> = BTreeMap::new();
    for t in turns {
        for k in 1..=copies.max(1) {
            let (ns, suffix) = copy_place(&t.conv, k, per_namespace);
            let mut copy = t.clone();
            if !suffix.is_empty() {
                copy.session = Some(Value::String(format!(
                    "{}{suffix}",
                    match &t.session {
                        Some(Value::String(s)) => s.clone(),
                        Some(Value::Null) | None => String::new(),
                        Some(other) => other.to_string(),
                    }
                )));
            }
            by_conv.entry((ns, suffix)).or_default().push(copy);
        }
    }
    setup.memories = by_conv.values().map(Vec::len).sum::<usize>()
        + (via.beside.len() + via.curated.len()) * by_conv.len();
    let held = setup.connect("default").await?.status().await?["counts"]["memories"].as_u64();
    if held == Some(setup.memories as u64) {
        // Loaded by an earlier run on this data dir.
        setup.embedder = setup.embedded().await?;
        return Ok(setup);
    }
    if held.is_some_and(|n| n > 0) {
        bail!(
            "{} holds {} memories, not the {} this run loads",
            setup.daemon.data_dir().display(),
            held.unwrap_or(0),
            setup.memories
        );
    }
    let started = Instant::now();
    let setup_convs: Vec<(String, String)> = by_conv.keys().cloned().collect();
    if let Some(memd) = &via.capture {
        let dir = setup.daemon.dir.path().join("transcripts");
        std::fs::create_dir_all(&dir)?;
        let mut hooks = 0;
        for (conv, _) in by_conv.keys() {
            let beside: Vec<&Turn> = via.beside.iter().collect();
            hooks += capture_turns(memd, &setup.daemon, conv, &beside, &dir)?;
        }
        if !via.ingests() {
            for ((conv, _), turns) in &by_conv {
                let turns: Vec<&Turn> = turns.iter().collect();
                hooks += capture_turns(memd, &setup.daemon, conv, &turns, &dir)?;
            }
        }
        eprintln!("captured through {hooks} hook runs");
    }
    let mut loads = Vec::new();
    for ((conv, _), turns) in by_conv.into_iter().filter(|_| via.ingests()) {
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
    for (conv, _) in via.curated.iter().take(1).flat_map(|_| setup_convs.iter()) {
        let mut client = setup.connect(conv).await?;
        let parsed = ingest::parse(
            &turn_lines(&via.curated),
            Some(ingest::Format::Turns),
            conv,
            None,
        );
        let counts = ingest::send(&mut client, parsed).await?;
        if counts.added != via.curated.len() {
            bail!(
                "{conv}: {} of {} curated turns stored ({:?})",
                counts.added,
                via.curated.len(),
                counts.errors
            );
        }
    }
    setup.load_time = started.elapsed();
    // Semantic search needs every turn embedded (the worker runs in the
    // background after each add returns).
    let embed_started = Instant::now();
    setup.embedder = setup.embedded().await?;
    setup.embed_time = embed_started.elapsed();
    Ok(setup)
}

/// Each question's ranking (turn ids, best first) and the latencies.
async fn ask_all(
    setup: &Setup,
    limit: u32,
    mode: SearchMode,
    questions: &[Question],
) -> anyhow::Result<(Vec<Vec<String>>, Vec<Duration>)> {
    let mut clients: HashMap<String, Client> = HashMap::new();
    let mut rankings = Vec::with_capacity(questions.len());
    let mut latencies = Vec::with_capacity(questions.len());
    for q in questions {
        if !clients.contains_key(&q.conv) {
            clients.insert(q.conv.clone(), setup.connect(&q.conv).await?);
        }
        let client = clients.get_mut(&q.conv).expect("inserted above");
        let t = Instant::now();
        let result = client.search(request(&q.question, mode, limit)).await?;
        latencies.push(t.elapsed());
        rankings.push(result.hits.iter().filter_map(turn_of).collect());
    }
    Ok((rankings, latencies))
}

fn scores(questions: &[Question], rankings: &[Vec<String>]) -> Vec<Score> {
    questions
        .iter()
        .zip(rankings)
        .map(|(q, r)| Score::of(q.evidence(), r))
        .collect()
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

/// One data set: its name (the directory's), turns and questions.
pub(crate) struct DataSet {
    pub(crate) name: String,
    pub(crate) turns: Vec<Turn>,
    pub(crate) questions: Vec<Question>,
}

impl DataSet {
    pub(crate) fn read(dir: &Path) -> anyhow::Result<DataSet> {
        let turns: Vec<Turn> = read_jsonl(&dir.join("memories.jsonl"))?;
        let questions: Vec<Question> = read_jsonl(&dir.join("queries.jsonl"))?;
        if turns.is_empty() || questions.is_empty() {
            bail!("no turns or no questions in {}", dir.display());
        }
        let name = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Ok(DataSet {
            name,
            turns,
            questions,
        })
    }

    /// Whether every question names its evidence (only then is it scored).
    fn scored(&self) -> bool {
        self.questions.iter().all(|q| q.evidence.is_some())
    }
}

/// Writes the rankings as JSON lines: `qid` (the question's own, else
/// `CONV/N`) and `ids`.
fn write_rankings(
    out: &mut impl Write,
    set: &DataSet,
    rankings: &[Vec<String>],
) -> anyhow::Result<()> {
    for (i, (q, ids)) in set.questions.iter().zip(rankings).enumerate() {
        let qid = q
            .qid
            .clone()
            .unwrap_or_else(|| Value::String(format!("{}/{i}", q.conv)));
        writeln!(out, "{}", json!({"qid": qid, "ids": ids}))?;
    }
    Ok(())
}

async fn run_async(args: EvalArgs) -> anyhow::Result<()> {
    let mode =
        SearchMode::parse(&args.mode).with_context(|| format!("unknown mode {}", args.mode))?;
    let sets: Vec<DataSet> = args
        .data
        .iter()
        .map(|d| DataSet::read(d))
        .collect::<anyhow::Result<_>>()?;
    if args.data_dir.is_some() && sets.len() > 1 {
        bail!("--data-dir takes one --data");
    }
    let mut config = EVAL_CONFIG.to_string();
    if args.no_embedder {
        config.push_str("[embed]\nprovider = \"none\"\n");
    }
    if args.loco {
        if let Some(s) = sets.iter().find(|s| !s.scored()) {
            bail!(
                "--loco needs every question's evidence; {} has questions without",
                s.name
            );
        }
        return loco(&args, mode, &sets, &config).await;
    }
    let mut rankings_out = match &args.rankings {
        Some(path) => Some(std::io::BufWriter::new(
            std::fs::File::create(path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        )),
        None => None,
    };
    let limit = if args.rankings.is_some() {
        args.limit.max(10)
    } else {
        args.limit
    };
    let fusions: Vec<Option<String>> = if args.fusion.is_empty() {
        vec![None]
    } else {
        args.fusion.iter().cloned().map(Some).collect()
    };
    let extras: Vec<Option<&String>> = if args.variant.is_empty() {
        vec![None]
    } else {
        args.variant.iter().map(Some).collect()
    };
    // Each fusion with each variant: the config's tail and a label.
    let mut variants: Vec<(String, Option<String>)> = Vec::new();
    for f in &fusions {
        for extra in &extras {
            let mut tail = match f {
                Some(f) => fusion_config(f)?,
                None => String::new(),
            };
            if let Some(extra) = extra {
                tail.push_str(extra);
                tail.push('\n');
            }
            let flat = |e: &String| e.replace('\n', " ");
            let label = match (f, extra) {
                (None, None) => None,
                (Some(f), None) => Some(f.clone()),
                (None, Some(e)) => Some(flat(e)),
                (Some(f), Some(e)) => Some(format!("{f}, {}", flat(e))),
            };
            variants.push((tail, label));
        }
    }
    let with_fusion =
        |v: &(String, Option<String>)| -> anyhow::Result<String> { Ok(format!("{config}{}", v.0)) };
    let via = Via::of(&args)?;
    for set in &sets {
        let mut setup = load(
            &set.turns,
            args.copies,
            args.per_namespace,
            args.data_dir.as_deref(),
            &with_fusion(&variants[0])?,
            &via,
        )
        .await?;
        for (k, variant) in variants.iter().enumerate() {
            if k > 0 {
                setup.reconfigure(&with_fusion(variant)?).await?;
            }
            let (rankings, mut latencies) = ask_all(&setup, limit, mode, &set.questions).await?;
            if let Some(out) = rankings_out.as_mut() {
                write_rankings(out, set, &rankings)?;
            }
            report(
                &args,
                mode,
                variant.1.as_ref(),
                set,
                &rankings,
                &mut latencies,
                &setup,
            );
        }
    }
    if let Some(mut out) = rankings_out {
        out.flush()?;
    }
    Ok(())
}

fn report(
    args: &EvalArgs,
    mode: SearchMode,
    variant: Option<&String>,
    set: &DataSet,
    rankings: &[Vec<String>],
    latencies: &mut [Duration],
    setup: &Setup,
) {
    let lat = summarize(latencies, Duration::ZERO);
    let scored = set.scored();
    let mut all = Totals::default();
    let mut by_cat: BTreeMap<String, Totals> = BTreeMap::new();
    let mut by_conv: BTreeMap<String, Totals> = BTreeMap::new();
    if scored {
        for (q, s) in set.questions.iter().zip(scores(&set.questions, rankings)) {
            all.add(&s);
            by_cat.entry(q.category()).or_default().add(&s);
            by_conv.entry(q.conv.clone()).or_default().add(&s);
        }
    }
    let by_category: serde_json::Map<String, Value> =
        by_cat.iter().map(|(c, t)| (c.clone(), t.json())).collect();
    let mut report = json!({
        "data": set.name,
        "questions": set.questions.len(),
        "latency_ms": {"p50": lat.p50_us / 1e3, "p95": lat.p95_us / 1e3, "p99": lat.p99_us / 1e3},
        "mode": mode.as_str(),
        "variant": variant,
        "limit": args.limit,
        "memories": setup.memories,
        "load_secs": setup.load_time.as_secs_f64(),
        "embed_wait_secs": setup.embed_time.as_secs_f64(),
        "embedder": setup.embedder,
    });
    if scored {
        report["all"] = all.json();
        report["by_category"] = Value::Object(by_category);
        report["by_conversation"] = by_conv.iter().map(|(c, t)| (c.clone(), t.json())).collect();
    }
    if args.json {
        println!("{report}");
        return;
    }
    println!(
        "memd eval {}: {} questions, {} memories, mode {}; {}",
        set.name,
        set.questions.len(),
        report["memories"],
        mode.as_str(),
        crate::stats::machine_facts()
    );
    if let Some(v) = variant {
        println!("variant: {v}");
    }
    println!(
        "embedder: {} ({} embedded; waited {:.1} s after the load)",
        report["embedder"]["model"].as_str().unwrap_or("none"),
        report["embedder"]["embedded"],
        setup.embed_time.as_secs_f64()
    );
    println!();
    if scored {
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
        for (c, t) in &by_cat {
            row(format!("{c} {}", category_name(c)).trim_end(), &t.json());
        }
        println!();
    } else {
        println!("the questions name no evidence: ranked, not scored");
    }
    println!(
        "query latency: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms ({} queries)",
        lat.p50_us / 1e3,
        lat.p95_us / 1e3,
        lat.p99_us / 1e3,
        lat.n
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
        let words = memd::facade::search::query_words(&q.question);
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
        out.push(Score::of(q.evidence(), &ranked));
    }
    Ok(out)
}

/// One configuration of the `--loco` grid.
struct Setting {
    name: String,
    config: String,
    default: bool,
}

/// The `--loco` grid, the default settings first (a tie goes to them).
///
/// - `lexical`: the length rule (`long_words` 0 = off, 50, 100, 200 ×
///   `long_exponent` 0.25, 0.5, 1), the thread context's weight (0.5, 0.7,
///   1) and pseudo-relevance feedback (0, 0.2).
/// - `hybrid`: the fusion's lexical weight (0.5, 0.6, 0.7) × when the
///   semantic ranking counts (always, or from `semantic_from` to
///   `semantic_full` standard deviations) × the length rule (100 or 50
///   words at exponent 0.5).
/// - `threads`: thread vectors (off, or neighbours' weights and the length
///   up to which a memory borrows fully) × the lexical weight (0.6, 0.7) ×
///   the semantic confidence (2.5–3.5, 2–3).
fn grid(kind: &str) -> anyhow::Result<Vec<Setting>> {
    let d = memd::facade::search::RankConfig::default();
    let same = |a: f64, b: f64| (a - b).abs() < 1e-9;
    let mut out = Vec::new();
    let long = |words: usize, exp: f64| {
        if words == 0 {
            "length rule off".to_string()
        } else {
            format!("long {words}^{exp}")
        }
    };
    match kind {
        "lexical" => {
            let mut lengths = vec![(0usize, 0.5)];
            for w in [50, 100, 200] {
                for e in [0.25, 0.5, 1.0] {
                    lengths.push((w, e));
                }
            }
            for (words, exp) in lengths {
                for context in [0.5, 0.7, 1.0] {
                    for feedback in [0.0, 0.2] {
                        out.push(Setting {
                            name: format!(
                                "{}, context {context}, feedback {feedback}",
                                long(words, exp)
                            ),
                            config: format!(
                                "[search]\nlong_words = {words}\nlong_exponent = {exp:?}\n\
                                 context_weight = {context:?}\nfeedback_weight = {feedback:?}\n"
                            ),
                            default: words == d.long_words
                                && (words == 0 || same(exp, d.long_exponent))
                                && same(context, d.context_weight)
                                && same(feedback, d.feedback_weight),
                        });
                    }
                }
            }
        }
        "hybrid" => {
            for (words, exp) in [(100usize, 0.5), (50, 0.5)] {
                for (from, full) in [
                    (0.0, 0.0),
                    (1.5, 2.5),
                    (2.0, 3.0),
                    (2.5, 3.5),
                    (2.0, 4.0),
                    (3.0, 3.0),
                ] {
                    for w in [0.5, 0.6, 0.7] {
                        let confidence = if full > 0.0 {
                            format!("confidence {from}-{full}")
                        } else {
                            "always".to_string()
                        };
                        out.push(Setting {
                            name: format!(
                                "{}, lexical weight {w}, semantic {confidence}",
                                long(words, exp)
                            ),
                            config: format!(
                                "[search]\nlong_words = {words}\nlong_exponent = {exp:?}\n\
                                 [search.hybrid]\nfusion = \"minmax\"\nlexical_weight = {w:?}\n\
                                 semantic_from = {from:?}\nsemantic_full = {full:?}\n"
                            ),
                            default: words == d.long_words
                                && same(exp, d.long_exponent)
                                && d.hybrid.fusion == memd::facade::search::Fusion::Minmax
                                && same(w, d.hybrid.lexical_weight)
                                && same(from, d.hybrid.semantic_from)
                                && same(full, d.hybrid.semantic_full),
                        });
                    }
                }
            }
        }
        "threads" => {
            let h = &d.hybrid;
            for (near, far, short) in [
                (0.0, 0.0, 0usize),
                (0.25, 0.1, 100),
                (0.25, 0.1, 200),
                (0.25, 0.1, 0),
                (0.5, 0.25, 200),
            ] {
                for (from, full) in [(2.5, 3.5), (2.0, 3.0)] {
                    for w in [0.6, 0.7] {
                        let threads = if near > 0.0 {
                            let upto = if short > 0 {
                                format!(" up to {short} bytes")
                            } else {
                                String::new()
                            };
                            format!("thread vectors {near}/{far}{upto}")
                        } else {
                            "own vectors".to_string()
                        };
                        out.push(Setting {
                            name: format!(
                                "{threads}, lexical weight {w}, semantic confidence {from}-{full}"
                            ),
                            config: format!(
                                "[search.hybrid]\nlexical_weight = {w:?}\n\
                                 semantic_from = {from:?}\nsemantic_full = {full:?}\n\
                                 thread_near = {near:?}\nthread_far = {far:?}\n\
                                 thread_short = {short}\n"
                            ),
                            default: same(near, h.thread_near)
                                && same(far, h.thread_far)
                                && (near == 0.0 || short == h.thread_short)
                                && same(w, h.lexical_weight)
                                && same(from, h.semantic_from)
                                && same(full, h.semantic_full),
                        });
                    }
                }
            }
        }
        other => bail!("unknown grid {other}: expected lexical, hybrid or threads"),
    }
    out.sort_by_key(|s| !s.default);
    Ok(out)
}

/// A data set's questions by conversation (its folds), in a fixed order.
fn folds(questions: &[Question]) -> BTreeMap<String, Vec<usize>> {
    let mut f: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (i, q) in questions.iter().enumerate() {
        f.entry(q.conv.clone()).or_default().push(i);
    }
    f
}

/// Each fold's mean of `x` over its questions.
fn fold_means(folds: &BTreeMap<String, Vec<usize>>, x: impl Fn(usize) -> f64) -> Vec<f64> {
    folds
        .values()
        .map(|idx| idx.iter().map(|&i| x(i)).sum::<f64>() / idx.len().max(1) as f64)
        .collect()
}

pub(crate) fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len().max(1) as f64
}

/// The mean over folds of a per-question difference `d`, its 95% bootstrap
/// interval resampling whole conversations (2,000 times; a conversation's
/// questions move together), its worst conversation and the folds where it
/// is positive.
fn gain(folds: &BTreeMap<String, Vec<usize>>, d: &[f64]) -> Value {
    let per_fold = fold_means(folds, |i| d[i]);
    let mut rng = Rng::new(0x6d65_6d64);
    let k = per_fold.len().max(1);
    let mut samples: Vec<f64> = (0..2000)
        .map(|_| (0..k).map(|_| per_fold[rng.below(k)]).sum::<f64>() / k as f64)
        .collect();
    samples.sort_by(f64::total_cmp);
    let worst = per_fold.iter().copied().fold(f64::INFINITY, f64::min);
    json!({
        "mean": r3(mean(&per_fold)),
        "ci95": [r3(samples[49]), r3(samples[1949])],
        "worst_fold": r3(if worst.is_finite() { worst } else { 0.0 }),
        "folds_positive": per_fold.iter().filter(|x| **x > 0.0).count(),
        "folds": per_fold.len(),
    })
}

fn gain_text(g: &Value) -> String {
    format!(
        "{:+.3} [{:+.3}, {:+.3}] worst {:+.3}, {}/{} up",
        g["mean"].as_f64().unwrap_or(0.0),
        g["ci95"][0].as_f64().unwrap_or(0.0),
        g["ci95"][1].as_f64().unwrap_or(0.0),
        g["worst_fold"].as_f64().unwrap_or(0.0),
        g["folds_positive"],
        g["folds"]
    )
}

/// A loaded data set of a `--loco` run and every setting's scores on it.
struct Loaded<'a> {
    set: &'a DataSet,
    setup: Setup,
    folds: BTreeMap<String, Vec<usize>>,
    baseline: Vec<Score>,
    /// `runs[setting][question]`.
    runs: Vec<Vec<Score>>,
    latency_ms: Vec<f64>,
    /// The default configuration searched lexically (with an embedder: the
    /// row the model's default must not fall below).
    lexical: Option<Vec<Score>>,
}

impl Loaded<'_> {
    /// Mean over this set's folds (but `skip`) of setting `k`'s objective.
    fn train(&self, k: usize, skip: Option<&str>) -> Option<f64> {
        let means: Vec<f64> = self
            .folds
            .iter()
            .filter(|(c, _)| Some(c.as_str()) != skip)
            .map(|(_, idx)| {
                idx.iter()
                    .map(|&i| self.runs[k][i].objective())
                    .sum::<f64>()
                    / idx.len().max(1) as f64
            })
            .collect();
        (!means.is_empty()).then(|| mean(&means))
    }
}

/// Every question's scores under every setting, lexical search and BM25,
/// as JSON lines.
fn write_scores(path: &Path, loaded: &[Loaded<'_>], settings: &[Setting]) -> anyhow::Result<()> {
    let mut out = std::io::BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?,
    );
    for l in loaded {
        let mut runs: Vec<(&str, bool, &Vec<Score>)> = settings
            .iter()
            .zip(&l.runs)
            .map(|(s, r)| (s.name.as_str(), s.default, r))
            .collect();
        if let Some(x) = &l.lexical {
            runs.push(("lexical search, default settings", false, x));
        }
        runs.push(("FTS5 BM25", false, &l.baseline));
        for (name, default, scores) in runs {
            for (i, (q, sc)) in l.set.questions.iter().zip(scores).enumerate() {
                let line = json!({
                    "set": l.set.name,
                    "setting": name,
                    "default": default,
                    "conv": q.conv,
                    "qid": q.qid.clone().unwrap_or_else(|| json!(i)),
                    "category": q.category(),
                    "r1": sc.r1,
                    "r5": sc.r5,
                    "r10": sc.r10,
                });
                writeln!(out, "{line}")?;
            }
        }
    }
    out.flush()?;
    Ok(())
}

async fn loco(
    args: &EvalArgs,
    mode: SearchMode,
    sets: &[DataSet],
    base_config: &str,
) -> anyhow::Result<()> {
    let mut loaded = Vec::with_capacity(sets.len());
    for set in sets {
        let baseline = bm25_baseline(&set.turns, &set.questions, args.limit)?;
        let setup = load(
            &set.turns,
            args.copies,
            args.per_namespace,
            args.data_dir.as_deref(),
            base_config,
            &Via::of(args)?,
        )
        .await?;
        loaded.push(Loaded {
            set,
            setup,
            folds: folds(&set.questions),
            baseline,
            runs: Vec::new(),
            latency_ms: Vec::new(),
            lexical: None,
        });
    }
    let embedder_ready = loaded.iter().all(|l| l.setup.embedder["state"] == "ready");
    let kind = args.grid.clone().unwrap_or_else(|| {
        if embedder_ready && matches!(mode, SearchMode::Auto | SearchMode::Hybrid) {
            "hybrid".into()
        } else {
            "lexical".into()
        }
    });
    if kind != "lexical" && !embedder_ready {
        bail!("the {kind} grid needs an embedder, and none is ready");
    }
    let settings = grid(&kind)?;
    // Every setting answers every question of every set.
    for l in &mut loaded {
        for s in &settings {
            l.setup
                .reconfigure(&format!("{base_config}{}", s.config))
                .await?;
            let (rankings, mut lat) = ask_all(&l.setup, args.limit, mode, &l.set.questions).await?;
            l.latency_ms
                .push(summarize(&mut lat, Duration::ZERO).p50_us / 1e3);
            l.runs.push(scores(&l.set.questions, &rankings));
        }
        if kind == "hybrid" {
            l.setup.reconfigure(base_config).await?;
            let (rankings, _) =
                ask_all(&l.setup, args.limit, SearchMode::Lexical, &l.set.questions).await?;
            l.lexical = Some(scores(&l.set.questions, &rankings));
        }
    }
    if let Some(path) = &args.scores {
        write_scores(path, &loaded, &settings)?;
    }
    let default = settings.iter().position(|s| s.default);
    // Per fold: the setting best on every other conversation of every set.
    let choose = |set: usize, conv: &str| -> usize {
        let train = |k: usize| {
            let per_set: Vec<f64> = loaded
                .iter()
                .enumerate()
                .filter_map(|(j, l)| l.train(k, (j == set).then_some(conv)))
                .collect();
            mean(&per_set)
        };
        (0..settings.len())
            .max_by(|&a, &b| train(a).total_cmp(&train(b)).then_with(|| b.cmp(&a)))
            .unwrap_or(0)
    };
    let mut set_reports = Vec::new();
    for (j, l) in loaded.iter().enumerate() {
        let questions = &l.set.questions;
        let mut chosen = vec![0usize; questions.len()];
        let mut fold_rows = Vec::new();
        for (conv, idx) in &l.folds {
            let best = choose(j, conv);
            let mut t = Totals::default();
            let mut b = Totals::default();
            let mut lex = Totals::default();
            for &i in idx {
                chosen[i] = best;
                t.add(&l.runs[best][i]);
                b.add(&l.baseline[i]);
                if let Some(x) = &l.lexical {
                    lex.add(&x[i]);
                }
            }
            let mut row = json!({
                "conv": conv,
                "chosen": settings[best].name,
                "held_out": t.json(),
                "baseline": b.json(),
            });
            if let Some(d) = default {
                let mut fixed = Totals::default();
                for &i in idx {
                    fixed.add(&l.runs[d][i]);
                }
                row["default"] = fixed.json();
            }
            if l.lexical.is_some() {
                row["lexical"] = lex.json();
            }
            fold_rows.push(row);
        }
        let held = |i: usize| l.runs[chosen[i]][i];
        let metric = |f: &dyn Fn(usize) -> f64| r3(mean(&fold_means(&l.folds, f)));
        let mut by_cat: BTreeMap<String, (Totals, Totals, Totals)> = BTreeMap::new();
        for (i, q) in questions.iter().enumerate() {
            let e = by_cat.entry(q.category()).or_default();
            e.0.add(&held(i));
            e.1.add(&l.baseline[i]);
            if let Some(d) = default {
                e.2.add(&l.runs[d][i]);
            }
        }
        let diff = |f: &dyn Fn(usize) -> f64| -> Vec<f64> { (0..questions.len()).map(f).collect() };
        let fixed: Vec<Value> = settings
            .iter()
            .enumerate()
            .map(|(k, s)| {
                let mut v = json!({
                    "setting": s.name,
                    "default": s.default,
                    "recall@1": metric(&|i| l.runs[k][i].r1),
                    "recall@5": metric(&|i| l.runs[k][i].r5),
                    "recall@10": metric(&|i| l.runs[k][i].r10),
                    "latency_p50_ms": r3(l.latency_ms[k]),
                });
                if let Some(d) = default.filter(|d| *d != k) {
                    v["recall@10_vs_default"] =
                        gain(&l.folds, &diff(&|i| l.runs[k][i].r10 - l.runs[d][i].r10));
                    v["recall@5_vs_default"] =
                        gain(&l.folds, &diff(&|i| l.runs[k][i].r5 - l.runs[d][i].r5));
                }
                v
            })
            .collect();
        let mut report = json!({
            "data": l.set.name,
            "questions": questions.len(),
            "memories": l.setup.memories,
            "held_out": {
                "recall@1": metric(&|i| held(i).r1),
                "recall@5": metric(&|i| held(i).r5),
                "recall@10": metric(&|i| held(i).r10),
            },
            "baseline": {
                "what": "FTS5 BM25 over Speaker: text, one index per conversation, stopwords dropped",
                "recall@1": metric(&|i| l.baseline[i].r1),
                "recall@5": metric(&|i| l.baseline[i].r5),
                "recall@10": metric(&|i| l.baseline[i].r10),
            },
            "gain": {
                "recall@5": gain(&l.folds, &diff(&|i| held(i).r5 - l.baseline[i].r5)),
                "recall@10": gain(&l.folds, &diff(&|i| held(i).r10 - l.baseline[i].r10)),
            },
            "folds": fold_rows,
            "by_category": by_cat.iter().map(|(c, (t, b, d))| {
                (c.clone(), json!({"held_out": t.json(), "baseline": b.json(), "default": d.json()}))
            }).collect::<serde_json::Map<_, _>>(),
            "fixed": fixed,
            "embedder": l.setup.embedder,
        });
        if let Some(d) = default {
            report["default"] = json!({
                "recall@1": metric(&|i| l.runs[d][i].r1),
                "recall@5": metric(&|i| l.runs[d][i].r5),
                "recall@10": metric(&|i| l.runs[d][i].r10),
                "gain_over_bm25": {
                    "recall@5": gain(&l.folds, &diff(&|i| l.runs[d][i].r5 - l.baseline[i].r5)),
                    "recall@10": gain(&l.folds, &diff(&|i| l.runs[d][i].r10 - l.baseline[i].r10)),
                },
            });
            if let Some(x) = &l.lexical {
                report["lexical"] = json!({
                    "recall@1": metric(&|i| x[i].r1),
                    "recall@5": metric(&|i| x[i].r5),
                    "recall@10": metric(&|i| x[i].r10),
                });
                report["default"]["gain_over_lexical"] = json!({
                    "recall@5": gain(&l.folds, &diff(&|i| l.runs[d][i].r5 - x[i].r5)),
                    "recall@10": gain(&l.folds, &diff(&|i| l.runs[d][i].r10 - x[i].r10)),
                });
            }
        }
        set_reports.push(report);
    }
    let report = json!({
        "mode": mode.as_str(),
        "grid": kind,
        "settings": settings.len(),
        "sets": set_reports,
    });
    if args.json {
        println!("{report}");
        return Ok(());
    }
    println!(
        "memd eval --loco: {} data sets, mode {}, {} settings ({} grid), chosen over every \
         other conversation of every set; {}",
        sets.len(),
        mode.as_str(),
        settings.len(),
        kind,
        crate::stats::machine_facts()
    );
    for r in &set_reports {
        print_set(r);
    }
    Ok(())
}

fn print_set(r: &Value) {
    let f = |v: &Value| v.as_f64().unwrap_or(0.0);
    println!();
    println!(
        "## {}: {} questions, {} memories",
        r["data"].as_str().unwrap_or(""),
        r["questions"],
        r["memories"]
    );
    println!();
    let lexical = !r["lexical"].is_null();
    println!(
        "| held out | n | chosen on the others | R@1 | R@5 | R@10 | default R@5 / R@10 |{} BM25 R@5 / R@10 |",
        if lexical { " lexical R@5 / R@10 |" } else { "" }
    );
    println!(
        "|---|---|---|---|---|---|---|{}---|",
        if lexical { "---|" } else { "" }
    );
    for row in r["folds"].as_array().into_iter().flatten() {
        let h = &row["held_out"];
        println!(
            "| {} | {} | {} | {:.3} | {:.3} | {:.3} | {:.3} / {:.3} |{} {:.3} / {:.3} |",
            row["conv"].as_str().unwrap_or(""),
            h["n"],
            row["chosen"].as_str().unwrap_or(""),
            f(&h["recall@1"]),
            f(&h["recall@5"]),
            f(&h["recall@10"]),
            f(&row["default"]["recall@5"]),
            f(&row["default"]["recall@10"]),
            if lexical {
                format!(
                    " {:.3} / {:.3} |",
                    f(&row["lexical"]["recall@5"]),
                    f(&row["lexical"]["recall@10"])
                )
            } else {
                String::new()
            },
            f(&row["baseline"]["recall@5"]),
            f(&row["baseline"]["recall@10"]),
        );
    }
    let (h, d, b) = (&r["held_out"], &r["default"], &r["baseline"]);
    println!(
        "| **mean over folds** | {} | | {:.3} | {:.3} | {:.3} | {:.3} / {:.3} |{} {:.3} / {:.3} |",
        r["questions"],
        f(&h["recall@1"]),
        f(&h["recall@5"]),
        f(&h["recall@10"]),
        f(&d["recall@5"]),
        f(&d["recall@10"]),
        if lexical {
            format!(
                " {:.3} / {:.3} |",
                f(&r["lexical"]["recall@5"]),
                f(&r["lexical"]["recall@10"])
            )
        } else {
            String::new()
        },
        f(&b["recall@5"]),
        f(&b["recall@10"]),
    );
    println!();
    for k in ["recall@5", "recall@10"] {
        println!("held out over BM25, {k}: {}", gain_text(&r["gain"][k]));
    }
    for k in ["recall@5", "recall@10"] {
        println!(
            "the default over BM25, {k}: {}",
            gain_text(&r["default"]["gain_over_bm25"][k])
        );
    }
    if lexical {
        for k in ["recall@5", "recall@10"] {
            println!(
                "the default over lexical search, {k}: {}",
                gain_text(&r["default"]["gain_over_lexical"][k])
            );
        }
    }
    println!();
    println!("| category | n | held out R@5 / R@10 | default R@5 / R@10 | BM25 R@5 / R@10 |");
    println!("|---|---|---|---|---|");
    for (c, t) in r["by_category"].as_object().into_iter().flatten() {
        println!(
            "| {} | {} | {:.3} / {:.3} | {:.3} / {:.3} | {:.3} / {:.3} |",
            format!("{c} {}", category_name(c)).trim_end(),
            t["held_out"]["n"],
            f(&t["held_out"]["recall@5"]),
            f(&t["held_out"]["recall@10"]),
            f(&t["default"]["recall@5"]),
            f(&t["default"]["recall@10"]),
            f(&t["baseline"]["recall@5"]),
            f(&t["baseline"]["recall@10"]),
        );
    }
    println!();
    println!(
        "each setting fixed, mean over folds (no choice made); gains over the default with the 95% interval resampling whole conversations and the worst conversation:"
    );
    println!();
    println!("| setting | R@1 | R@5 | R@10 | ΔR@5 vs default | ΔR@10 vs default | p50 ms |");
    println!("|---|---|---|---|---|---|---|");
    for s in r["fixed"].as_array().into_iter().flatten() {
        let delta = |k: &str| {
            let g = &s[k];
            if g.is_null() {
                "(default)".to_string()
            } else {
                gain_text(g)
            }
        };
        println!(
            "| {} | {:.3} | {:.3} | {:.3} | {} | {} | {:.2} |",
            s["setting"].as_str().unwrap_or(""),
            f(&s["recall@1"]),
            f(&s["recall@5"]),
            f(&s["recall@10"]),
            delta("recall@5_vs_default"),
            delta("recall@10_vs_default"),
            f(&s["latency_p50_ms"]),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_fill_namespaces_of_the_asked_size() {
        let places: Vec<(String, String)> = (1..=5).map(|k| copy_place("c", k, 2)).collect();
        let ns: Vec<&str> = places.iter().map(|p| p.0.as_str()).collect();
        assert_eq!(ns, ["c", "c", "c~2", "c~2", "c~3"]);
        let suffixes: Vec<&str> = places.iter().map(|p| p.1.as_str()).collect();
        assert_eq!(suffixes, ["", "~2", "~3", "~4", "~5"]);
        // One copy per namespace, as before.
        assert_eq!(copy_place("c", 3, 1), ("c~3".to_string(), "~3".to_string()));
    }

    #[test]
    fn the_bootstrap_resamples_whole_conversations() {
        // Two conversations: one gains 0.2 on each of its 3 questions,
        // the other loses 0.1 on its single question.
        let mut f = BTreeMap::new();
        f.insert("a".to_string(), vec![0, 1, 2]);
        f.insert("b".to_string(), vec![3]);
        let g = gain(&f, &[0.2, 0.2, 0.2, -0.1]);
        assert_eq!(g["mean"], 0.05);
        assert_eq!(g["worst_fold"], -0.1);
        assert_eq!(g["folds_positive"], 1);
        // Resampling conversations, the extremes are all-a and all-b.
        assert_eq!(g["ci95"], json!([-0.1, 0.2]));
    }
}
