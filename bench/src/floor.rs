//! `floor`: the relevance floor of the embedding model, chosen by
//! leave-one-conversation-out.
//!
//! Every conversation of every `--data` set is loaded into its own
//! namespace of one daemon (as `eval` loads them) with no floor
//! (`[search.floor]` empty), and asked three kinds of searches:
//!
//! - in-store: each question in its own conversation's namespace, in the
//!   default mode, 10 hits, each hit's turn id and relevance kept;
//! - out-of-store: each question in a namespace of another data set (the
//!   conversations of that set in turn), in semantic mode, 50 hits: the
//!   highest relevance there is, which decides whether a floor returns
//!   anything at all (every hit of any mode has a cosine at most that);
//! - nonsense: `--nonsense` made-up strings in every namespace, the same
//!   way.
//!
//! For each conversation, the floor is the highest of a grid (0 to 0.8 by
//! 0.01) whose loss of R@10 on the in-store questions of every *other*
//! conversation (the mean over each set's conversations, the sets weighted
//! equally) stays within `--budget`; it is then scored on the conversation
//! left out: its R@10 loss, the share of its questions that return nothing
//! in the other set's namespace, the share of nonsense strings that return
//! nothing in its namespace. The loss is counted without the hits a floor
//! lets in below the tenth (an upper bound of the real loss). The floor
//! chosen on every conversation is then set on the daemon and measured
//! for real. A question's answer is never read (`eval::Question`).
//!
//! It also counts the bytes of each in-store search's `memory_search`
//! result as `memd mcp` returns it (the JSON as text content and as
//! structured content) with full hits and with compact ones, per hit.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::bail;
use memd_client::SearchMode;
use serde_json::{Value, json};

use crate::corpus::Rng;
use crate::eval::{self, DataSet, EVAL_CONFIG, Question, Score, r3, request};

/// Flags of `floor`.
#[derive(Debug, clap::Args)]
pub struct FloorArgs {
    /// Directory with memories.jsonl and queries.jsonl (at least two data
    /// sets: out-of-store questions are asked in another set's namespace)
    #[arg(long, required = true)]
    pub data: Vec<PathBuf>,
    /// Questions per conversation, the first ones (0: all)
    #[arg(long, default_value_t = 0)]
    pub per_conv: usize,
    /// Made-up strings asked in every conversation's namespace
    #[arg(long, default_value_t = 40)]
    pub nonsense: usize,
    /// Most R@10 a floor may lose on the conversations it is chosen on
    #[arg(long, default_value_t = 0.005)]
    pub budget: f64,
    /// The model's `[search.nothing_below]` in the real run (the shipped
    /// one, chosen from `--dump` by leaving one conversation out)
    #[arg(long, default_value_t = 0.32)]
    pub nothing_below: f64,
    /// The model's id in `[search.floor]` for the real run
    #[arg(long, default_value = "local:all-MiniLM-L6-v2")]
    pub model: String,
    /// Print JSON instead of tables
    #[arg(long)]
    pub json: bool,
    /// Only write, as JSON lines, every search's cosines (the hits'
    /// relevance in the default mode; the count, mean, deviation and top
    /// 50 of a semantic search of the whole namespace), to study another
    /// rule than a floor
    #[arg(long)]
    pub dump: Option<PathBuf>,
}

/// The most relevant hit's relevance (`None`: no hit); a hit without one
/// (no vector) is never cut by a floor.
fn best(hits: &[memd_client::Hit]) -> Option<f64> {
    hits.iter()
        .map(|h| h.relevance.unwrap_or(f64::INFINITY))
        .reduce(f64::max)
}

/// Whether a floor `f` leaves nothing of a search whose best hit is `top`.
fn nothing(top: Option<f64>, f: f64) -> bool {
    top.is_none_or(|t| t < f)
}

/// One in-store question.
struct InStore {
    set: usize,
    conv: String,
    evidence: Vec<String>,
    hits: Vec<(String, Option<f64>)>,
    /// The best relevance in the other set's namespace.
    away: Option<f64>,
}

impl InStore {
    fn r10(&self, f: f64) -> f64 {
        let kept: Vec<String> = self
            .hits
            .iter()
            .filter(|(_, r)| r.is_none_or(|r| r >= f))
            .map(|(id, _)| id.clone())
            .collect();
        Score::of(&self.evidence, &kept).r10
    }
}

/// The bytes of a `memory_search` result as `memd mcp` returns it: the
/// command's JSON as the text content and as the structured content.
fn tool_bytes(hits: Vec<Value>, mode: &str) -> usize {
    let count = hits.len();
    let value = json!({"success": true, "hits": hits, "count": count, "mode": mode,
        "generation": 1_000_000});
    json!({
        "content": [{"type": "text", "text": value.to_string()}],
        "structuredContent": value,
        "isError": false,
    })
    .to_string()
    .len()
}

/// The result's bytes with full hits and with compact ones.
fn result_bytes(r: &memd_client::proto::SearchResult, query: &str) -> (usize, usize) {
    use memd_client::proto::json;
    let full: Vec<Value> = r.hits.iter().map(json::hit).collect();
    let compact: Vec<Value> = full.iter().map(|h| json::compact_hit(h, query)).collect();
    (
        tool_bytes(full, r.mode.as_str()),
        tool_bytes(compact, r.mode.as_str()),
    )
}

/// Made-up strings: letters in syllables no language uses together, one to
/// three words.
fn nonsense(n: usize) -> Vec<String> {
    const ONSETS: [&str; 12] = [
        "zz", "qx", "vr", "kj", "bl", "gw", "xt", "pf", "dr", "zq", "ww", "hx",
    ];
    const NUCLEI: [&str; 6] = ["a", "e", "i", "o", "u", "y"];
    let mut rng = Rng::new(53);
    (0..n)
        .map(|_| {
            let words = 1 + rng.below(3);
            (0..words)
                .map(|_| {
                    (0..2 + rng.below(2))
                        .map(|_| {
                            format!(
                                "{}{}",
                                ONSETS[rng.below(ONSETS.len())],
                                NUCLEI[rng.below(NUCLEI.len())]
                            )
                        })
                        .collect::<String>()
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// The cosines of a semantic search of the whole namespace: count, mean,
/// standard deviation and the 50 highest.
async fn cosines(c: &mut memd_client::Client, query: &str) -> anyhow::Result<Value> {
    let hits = c
        .search(request(query, SearchMode::Semantic, 1_000_000))
        .await?
        .hits;
    let all: Vec<f64> = hits.iter().filter_map(|h| h.relevance).collect();
    let n = all.len().max(1) as f64;
    let mean = all.iter().sum::<f64>() / n;
    let sd = (all.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let mut top = all.clone();
    top.sort_by(|a, b| b.total_cmp(a));
    top.truncate(50);
    Ok(json!({"n": all.len(), "mean": mean, "sd": sd, "top": top}))
}

/// `--dump`: each in-store question (its default-mode hits and the
/// namespace's cosines), each question asked in another set's namespace,
/// each nonsense string in each namespace, one JSON line each.
async fn dump(
    setup: &eval::Setup,
    sets: &[DataSet],
    args: &FloorArgs,
    junk: &[String],
    path: &std::path::Path,
) -> anyhow::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    let convs = conversations(sets);
    for (si, set) in sets.iter().enumerate() {
        let others = others(&convs, si);
        for (n, q) in sampled(set, args.per_conv).into_iter().enumerate() {
            let mut home = setup.connect(&q.conv).await?;
            let hits: Vec<Value> = home
                .search(request(&q.question, SearchMode::Auto, 10))
                .await?
                .hits
                .iter()
                .map(|h| json!([eval::turn_of(h), h.relevance]))
                .collect();
            let own = cosines(&mut home, &q.question).await?;
            let away_ns = others[n % others.len()];
            let away = cosines(&mut setup.connect(away_ns).await?, &q.question).await?;
            writeln!(
                out,
                "{}",
                json!({"kind": "in", "set": si, "conv": q.conv,
                "evidence": q.evidence(), "hits": hits, "own": own})
            )?;
            writeln!(
                out,
                "{}",
                json!({"kind": "away", "set": si, "conv": q.conv,
                "ns": away_ns, "own": away})
            )?;
        }
        for conv in &convs[si] {
            let mut c = setup.connect(conv).await?;
            for (i, s) in junk.iter().enumerate() {
                let own = cosines(&mut c, s).await?;
                writeln!(
                    out,
                    "{}",
                    json!({"kind": "junk", "set": si, "conv": conv,
                    "junk": i, "own": own})
                )?;
            }
        }
        eprintln!("dumped {}", set.name);
    }
    out.flush()?;
    Ok(())
}

/// Runs `floor`.
///
/// # Errors
/// Unreadable data, a daemon that does not start or answer.
pub fn run(args: FloorArgs) -> anyhow::Result<()> {
    crate::block_on(run_async(args))
}

/// Every set's conversations, in a fixed order.
fn conversations(sets: &[DataSet]) -> Vec<Vec<String>> {
    sets.iter()
        .map(|s| {
            let mut c: Vec<String> = s.turns.iter().map(|t| t.conv.clone()).collect();
            c.sort();
            c.dedup();
            c
        })
        .collect()
}

/// The conversations of every set but set `si`: where its questions are
/// asked as questions about nothing the namespace holds.
fn others(convs: &[Vec<String>], si: usize) -> Vec<&String> {
    convs
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != si)
        .flat_map(|(_, c)| c)
        .collect()
}

/// The set's questions, at most `per_conv` of each conversation (the first
/// ones; 0: all).
fn sampled(set: &DataSet, per_conv: usize) -> Vec<&Question> {
    let mut per: BTreeMap<&str, usize> = BTreeMap::new();
    set.questions
        .iter()
        .filter(|q| {
            let n = per.entry(q.conv.as_str()).or_default();
            *n += 1;
            per_conv == 0 || *n <= per_conv
        })
        .collect()
}

struct Asked {
    questions: Vec<InStore>,
    /// Per set: bytes of `memory_search` results with full hits, with
    /// compact hits, and the hits they held.
    bytes: Vec<(usize, usize, usize)>,
    /// Per conversation, the best relevance of each nonsense string.
    nonsense: BTreeMap<String, Vec<Option<f64>>>,
}

async fn ask(
    setup: &eval::Setup,
    sets: &[DataSet],
    args: &FloorArgs,
    junk: &[String],
) -> anyhow::Result<Asked> {
    let convs = conversations(sets);
    let mut questions = Vec::new();
    let mut bytes = vec![(0, 0, 0); sets.len()];
    for (si, set) in sets.iter().enumerate() {
        let others = others(&convs, si);
        for q in sampled(set, args.per_conv) {
            let mut home = setup.connect(&q.conv).await?;
            let found = home
                .search(request(&q.question, SearchMode::Auto, 10))
                .await?;
            let (full, compact) = result_bytes(&found, &q.question);
            bytes[si].0 += full;
            bytes[si].1 += compact;
            bytes[si].2 += found.hits.len();
            let hits = found.hits;
            let away_ns = others[questions.len() % others.len()];
            let mut away = setup.connect(away_ns).await?;
            let far = away
                .search(request(&q.question, SearchMode::Semantic, 50))
                .await?;
            questions.push(InStore {
                set: si,
                conv: q.conv.clone(),
                evidence: q.evidence().to_vec(),
                hits: hits
                    .iter()
                    .filter_map(|h| Some((eval::turn_of(h)?, h.relevance)))
                    .collect(),
                away: best(&far.hits),
            });
        }
    }
    let mut nonsense = BTreeMap::new();
    for conv in convs.iter().flatten() {
        let mut c = setup.connect(conv).await?;
        let mut tops = Vec::with_capacity(junk.len());
        for s in junk {
            tops.push(best(
                &c.search(request(s, SearchMode::Semantic, 50)).await?.hits,
            ));
        }
        nonsense.insert(conv.clone(), tops);
    }
    Ok(Asked {
        questions,
        bytes,
        nonsense,
    })
}

/// The floors tried.
fn grid() -> Vec<f64> {
    (0..=80).map(|i| f64::from(i) / 100.0).collect()
}

/// The mean R@10 lost at floor `f` over each set's conversations but
/// `skip`, the sets weighted equally.
fn loss(a: &Asked, sets: usize, f: f64, skip: Option<&str>) -> f64 {
    let per_set: Vec<f64> = (0..sets)
        .filter_map(|s| {
            let mut by_conv: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
            for q in a
                .questions
                .iter()
                .filter(|q| q.set == s && Some(q.conv.as_str()) != skip)
            {
                by_conv
                    .entry(&q.conv)
                    .or_default()
                    .push(q.r10(0.0) - q.r10(f));
            }
            let means: Vec<f64> = by_conv.values().map(|v| eval::mean(v)).collect();
            (!means.is_empty()).then(|| eval::mean(&means))
        })
        .collect();
    eval::mean(&per_set)
}

/// The highest floor of the grid within the budget, chosen without `skip`.
fn choose(a: &Asked, sets: usize, budget: f64, skip: Option<&str>) -> f64 {
    grid()
        .into_iter()
        .filter(|&f| loss(a, sets, f, skip) <= budget)
        .fold(0.0, f64::max)
}

/// Per held-out conversation: the floor chosen without it and its figures.
fn held_out(a: &Asked, sets: &[DataSet], budget: f64) -> Vec<Value> {
    let mut rows = Vec::new();
    for (si, convs) in conversations(sets).iter().enumerate() {
        for conv in convs {
            let f = choose(a, sets.len(), budget, Some(conv));
            let qs: Vec<&InStore> = a.questions.iter().filter(|q| &q.conv == conv).collect();
            let share = |xs: &mut dyn Iterator<Item = bool>| {
                let v: Vec<f64> = xs.map(|b| if b { 1.0 } else { 0.0 }).collect();
                eval::mean(&v)
            };
            rows.push(json!({
                "set": sets[si].name,
                "conv": conv,
                "floor": f,
                "questions": qs.len(),
                "r10_loss": r3(eval::mean(&qs.iter().map(|q| q.r10(0.0) - q.r10(f)).collect::<Vec<_>>())),
                "out_of_store_nothing": r3(share(&mut qs.iter().map(|q| nothing(q.away, f)))),
                "nonsense_nothing": r3(share(&mut a.nonsense[conv].iter().map(|t| nothing(*t, f)))),
            }));
        }
    }
    rows
}

/// Means over each set's held-out conversations.
fn summary(rows: &[Value], sets: &[DataSet]) -> Vec<Value> {
    sets.iter()
        .map(|s| {
            let of = |key: &str| {
                let v: Vec<f64> = rows
                    .iter()
                    .filter(|r| r["set"] == s.name.as_str())
                    .filter_map(|r| r[key].as_f64())
                    .collect();
                r3(eval::mean(&v))
            };
            json!({
                "set": s.name,
                "floor": of("floor"),
                "r10_loss": of("r10_loss"),
                "out_of_store_nothing": of("out_of_store_nothing"),
                "nonsense_nothing": of("nonsense_nothing"),
            })
        })
        .collect()
}

/// The real daemon at `floor`: in-store R@10, and the shares of
/// out-of-store questions and nonsense strings it returns nothing for, in
/// the default mode.
async fn measured(
    setup: &eval::Setup,
    sets: &[DataSet],
    args: &FloorArgs,
    junk: &[String],
) -> anyhow::Result<Value> {
    let convs = conversations(sets);
    let mut out = Vec::new();
    for (si, set) in sets.iter().enumerate() {
        let others = others(&convs, si);
        let (mut r10, mut away_nothing, mut n) = (0.0, 0usize, 0usize);
        for q in sampled(set, args.per_conv) {
            let mut home = setup.connect(&q.conv).await?;
            let hits = home
                .search(request(&q.question, SearchMode::Auto, 10))
                .await?
                .hits;
            let ids: Vec<String> = hits.iter().filter_map(eval::turn_of).collect();
            r10 += Score::of(q.evidence(), &ids).r10;
            let mut away = setup.connect(others[n % others.len()]).await?;
            let far = away
                .search(request(&q.question, SearchMode::Auto, 10))
                .await?;
            away_nothing += usize::from(far.hits.is_empty());
            n += 1;
        }
        let mut junk_nothing = 0usize;
        for conv in &convs[si] {
            let mut c = setup.connect(conv).await?;
            for s in junk {
                junk_nothing += usize::from(
                    c.search(request(s, SearchMode::Auto, 10))
                        .await?
                        .hits
                        .is_empty(),
                );
            }
        }
        let asked = (convs[si].len() * junk.len()).max(1) as f64;
        out.push(json!({
            "set": set.name,
            "questions": n,
            "recall@10 (pooled)": r3(r10 / n.max(1) as f64),
            "out_of_store_nothing": r3(away_nothing as f64 / n.max(1) as f64),
            "nonsense_nothing": r3(junk_nothing as f64 / asked),
        }));
    }
    Ok(Value::Array(out))
}

async fn run_async(args: FloorArgs) -> anyhow::Result<()> {
    let sets: Vec<DataSet> = args
        .data
        .iter()
        .map(|d| DataSet::read(d))
        .collect::<anyhow::Result<_>>()?;
    if sets.len() < 2 {
        bail!("floor needs two data sets or more: out-of-store questions ask another set");
    }
    let turns: Vec<_> = sets.iter().flat_map(|s| s.turns.iter().cloned()).collect();
    // Every row of a namespace in one semantic search (`--dump`).
    let open =
        format!("{EVAL_CONFIG}max_results = 1000000\n[search.floor]\n[search.nothing_below]\n");
    let mut setup = eval::load(&turns, 1, 1, None, &open, &eval::Via::default()).await?;
    eprintln!("loaded {} turns", turns.len());
    let junk = nonsense(args.nonsense);
    if let Some(path) = &args.dump {
        return dump(&setup, &sets, &args, &junk, path).await;
    }
    let asked = ask(&setup, &sets, &args, &junk).await?;
    let rows = held_out(&asked, &sets, args.budget);
    let chosen = choose(&asked, sets.len(), args.budget, None);
    let unfloored = measured(&setup, &sets, &args, &junk).await?;
    setup
        .reconfigure(&format!(
            "{EVAL_CONFIG}[search.floor]\n\"{m}\" = {chosen}\n\
             [search.nothing_below]\n\"{m}\" = {}\n",
            args.nothing_below,
            m = args.model
        ))
        .await?;
    let floored = measured(&setup, &sets, &args, &junk).await?;
    let report = json!({
        "budget": args.budget,
        "nonsense_strings": junk.len(),
        "per_conv": args.per_conv,
        "held_out": rows,
        "held_out_means": summary(&rows, &sets),
        "chosen_on_all": chosen,
        "nothing_below": args.nothing_below,
        "memory_search_bytes_per_hit": sets.iter().zip(&asked.bytes).map(|(s, (full, compact, hits))| json!({
            "set": s.name,
            "hits": hits,
            "full": r3(*full as f64 / (*hits).max(1) as f64),
            "compact": r3(*compact as f64 / (*hits).max(1) as f64),
        })).collect::<Vec<_>>(),
        "daemon_without_floor": unfloored,
        "daemon_at_chosen": floored,
    });
    if args.json {
        println!("{report}");
    } else {
        print(&report);
    }
    Ok(())
}

fn print(r: &Value) {
    println!(
        "| set | held-out conversation | floor | R@10 lost | out-of-store: nothing | nonsense: nothing |"
    );
    println!("|---|---|---|---|---|---|");
    for row in r["held_out"].as_array().into_iter().flatten() {
        println!(
            "| {} | {} | {} | {} | {} | {} |",
            row["set"].as_str().unwrap_or(""),
            row["conv"].as_str().unwrap_or(""),
            row["floor"],
            row["r10_loss"],
            row["out_of_store_nothing"],
            row["nonsense_nothing"]
        );
    }
    for row in r["held_out_means"].as_array().into_iter().flatten() {
        println!(
            "| {} | **mean** | {} | {} | {} | {} |",
            row["set"].as_str().unwrap_or(""),
            row["floor"],
            row["r10_loss"],
            row["out_of_store_nothing"],
            row["nonsense_nothing"]
        );
    }
    println!(
        "\nfloor chosen on every conversation: {}",
        r["chosen_on_all"]
    );
    println!("daemon without a floor: {}", r["daemon_without_floor"]);
    println!("daemon at that floor:   {}", r["daemon_at_chosen"]);
    println!(
        "memory_search bytes per hit: {}",
        r["memory_search_bytes_per_hit"]
    );
}
