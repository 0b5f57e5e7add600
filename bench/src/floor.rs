//! `floor`: the relevance rules of the embedding model — the floor of a
//! hit, `nothing_below` and `related_words` — chosen by
//! leave-one-conversation-out.
//!
//! Every conversation of every `--data` set is loaded into its own
//! namespace of one daemon (as `eval` loads them) with no rules
//! (`[search.floor]` and `[search.nothing_below]` empty), and asked three
//! kinds of searches:
//!
//! - in-store: each question in its own conversation's namespace, in the
//!   default mode, 10 hits, each hit's turn id, relevance and share of the
//!   question's words kept;
//! - out-of-store: each question in a namespace of another data set (the
//!   conversations of that set in turn);
//! - nonsense: `--nonsense` made-up strings in every namespace.
//!
//! Of every question and string, in each namespace it is asked in, what
//! the rules read: the best relevance there (a semantic search), and the
//! largest share of its words one of the default mode's 10 hits holds.
//!
//! For each conversation, rules are chosen on every *other* one: first the
//! floor, the highest of a grid (0 to 0.8 by 0.01) whose loss of R@10 on
//! the in-store questions (the mean over each set's conversations, the sets
//! weighted equally) stays within `--budget`; then over it `nothing_below`
//! (0.2 to 0.6 by 0.01) and `related_words` (0 — off — or a share from a
//! third to three quarters): of the pairs with which no set loses more than
//! the budget, the one under which the worse set gets nothing for most
//! out-of-store questions (ties: most nonsense strings). They are scored on
//! the conversation left out: its R@10 loss, the share of its questions
//! that return nothing in the other set's namespace, the share of nonsense
//! strings that return nothing in its namespace. The loss is counted
//! without the hits a rule lets in below the tenth (an upper bound of the
//! real loss). The rules chosen on every conversation are then set on the
//! daemon and measured for real. A question's answer is never read
//! (`eval::Question`).
//!
//! It also counts the bytes of each in-store search's `memory_search`
//! result as `memd mcp` returns it (the JSON as text content and as
//! structured content) with full hits and with compact ones, per hit.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::bail;
use memd_client::SearchMode;
use serde_json::{Value, json};

use memd::facade::search::{share_held, significant_words};

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
    /// The model's id in `[search.floor]` and `[search.nothing_below]` for
    /// the real run
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

/// What a namespace tells the rules about a query: the best cosine of its
/// semantic ranking, and the largest share of the query's words one of
/// the hits a 10-hit search would return holds.
#[derive(Debug, Clone, Copy)]
struct Evidence {
    best: Option<f64>,
    words: f64,
}

/// The daemon's relevance rules (`[search.floor]`, `[search.nothing_below]`,
/// `[search] related_words`), as `store::search` applies them.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Rule {
    hit: f64,
    nothing_below: f64,
    related_words: f64,
}

impl Rule {
    /// A hit floor alone.
    fn floor(hit: f64) -> Rule {
        Rule {
            hit,
            nothing_below: 0.0,
            related_words: 0.0,
        }
    }

    /// Whether a memory holding `share` of the query's words is related
    /// to it by its words.
    fn related(&self, share: f64) -> bool {
        self.related_words > 0.0 && share >= self.related_words
    }

    /// Whether the search returns nothing: no cosine reaches the floor or
    /// `nothing_below`, and no candidate is related by its words.
    fn nothing(&self, e: &Evidence) -> bool {
        e.best.is_none_or(|b| b < self.hit.max(self.nothing_below)) && !self.related(e.words)
    }

    fn json(&self) -> Value {
        json!({"floor": self.hit, "nothing_below": self.nothing_below,
            "related_words": self.related_words})
    }
}

/// One in-store question.
struct InStore {
    set: usize,
    conv: String,
    evidence: Vec<String>,
    /// The default mode's hits without rules: turn id, relevance, share
    /// of the query's words held.
    hits: Vec<(String, Option<f64>, f64)>,
    /// Its own namespace.
    here: Evidence,
    /// The other set's namespace it is asked in.
    away: Evidence,
}

impl InStore {
    /// R@10 under `rule` (without the hits it would let in below the
    /// tenth: an upper bound of what it costs).
    fn r10(&self, rule: &Rule) -> f64 {
        if rule.nothing(&self.here) {
            return 0.0;
        }
        let kept: Vec<String> = self
            .hits
            .iter()
            .filter(|(_, r, share)| r.is_none_or(|r| r >= rule.hit) || rule.related(*share))
            .map(|(id, _, _)| id.clone())
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

/// A lexical search of the namespace: its 10 best hits' content and raw
/// score (BM25 with memd's coverage and length rule), to study rules that
/// weigh the query's words against the namespace's.
async fn lexical(c: &mut memd_client::Client, query: &str) -> anyhow::Result<Value> {
    let mut asked = request(query, SearchMode::Lexical, 10);
    asked.explain = true;
    let hits = c.search(asked).await?.hits;
    Ok(Value::Array(
        hits.iter()
            .map(|h| {
                let raw = h
                    .explain
                    .as_deref()
                    .and_then(|e| serde_json::from_str::<Value>(e).ok())
                    .map_or(Value::Null, |e| e["raw"].clone());
                json!([h.memory.content, raw])
            })
            .collect(),
    ))
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
            let own_lexical = lexical(&mut home, &q.question).await?;
            let away_ns = others[n % others.len()];
            let mut far = setup.connect(away_ns).await?;
            let away = cosines(&mut far, &q.question).await?;
            let away_lexical = lexical(&mut far, &q.question).await?;
            writeln!(
                out,
                "{}",
                json!({"kind": "in", "set": si, "conv": q.conv,
                "evidence": q.evidence(), "question": q.question, "hits": hits,
                "own": own, "lexical": own_lexical})
            )?;
            writeln!(
                out,
                "{}",
                json!({"kind": "away", "set": si, "conv": q.conv,
                "ns": away_ns, "question": q.question, "own": away,
                "lexical": away_lexical})
            )?;
        }
        for conv in &convs[si] {
            let mut c = setup.connect(conv).await?;
            for (i, s) in junk.iter().enumerate() {
                let own = cosines(&mut c, s).await?;
                let lexical = lexical(&mut c, s).await?;
                writeln!(
                    out,
                    "{}",
                    json!({"kind": "junk", "set": si, "conv": conv,
                    "junk": i, "question": s, "own": own, "lexical": lexical})
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
    /// Per conversation, what its namespace tells of each nonsense string.
    nonsense: BTreeMap<String, Vec<Evidence>>,
}

/// A namespace's [`Evidence`] about `query`: the best relevance of a
/// semantic search, and the largest share of the query's words one of the
/// default mode's 10 hits holds (the hits the search would return).
async fn evidence(c: &mut memd_client::Client, query: &str) -> anyhow::Result<Evidence> {
    let shown = c.search(request(query, SearchMode::Auto, 10)).await?.hits;
    seen(c, query, &shown).await
}

/// [`Evidence`] with the default mode's hits already asked for.
async fn seen(
    c: &mut memd_client::Client,
    query: &str,
    shown: &[memd_client::Hit],
) -> anyhow::Result<Evidence> {
    let words = significant_words(query);
    let semantic = c
        .search(request(query, SearchMode::Semantic, 1))
        .await?
        .hits;
    Ok(Evidence {
        best: best(&semantic),
        words: shown
            .iter()
            .map(|h| share_held(&words, &h.memory.content))
            .fold(0.0, f64::max),
    })
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
            let words = significant_words(&q.question);
            let here = seen(&mut home, &q.question, &found.hits).await?;
            let away_ns = others[questions.len() % others.len()];
            let away = evidence(&mut setup.connect(away_ns).await?, &q.question).await?;
            questions.push(InStore {
                set: si,
                conv: q.conv.clone(),
                evidence: q.evidence().to_vec(),
                hits: found
                    .hits
                    .iter()
                    .filter_map(|h| {
                        let share = share_held(&words, &h.memory.content);
                        Some((eval::turn_of(h)?, h.relevance, share))
                    })
                    .collect(),
                here,
                away,
            });
        }
    }
    let mut nonsense = BTreeMap::new();
    for conv in convs.iter().flatten() {
        let mut c = setup.connect(conv).await?;
        let mut told = Vec::with_capacity(junk.len());
        for s in junk {
            told.push(evidence(&mut c, s).await?);
        }
        nonsense.insert(conv.clone(), told);
    }
    Ok(Asked {
        questions,
        bytes,
        nonsense,
    })
}

/// The hit floors tried.
fn grid() -> Vec<f64> {
    (0..=80).map(|i| f64::from(i) / 100.0).collect()
}

/// The `nothing_below` and `related_words` pairs tried over a hit floor
/// (`related_words` 0: the words rule off).
fn rules(hit: f64) -> Vec<Rule> {
    let mut out = Vec::new();
    for related_words in [0.0, 0.34, 0.4, 0.5, 0.6, 0.67, 0.75] {
        for i in 20..=60 {
            out.push(Rule {
                hit,
                nothing_below: f64::from(i) / 100.0,
                related_words,
            });
        }
    }
    out
}

/// Per conversation under one rule: R@10 lost, and the shares of its
/// questions asked elsewhere and of nonsense strings that get nothing.
type Figures = BTreeMap<String, (usize, [f64; 3])>;

fn figures(a: &Asked, rule: &Rule) -> Figures {
    let mut per: BTreeMap<String, (usize, Vec<[f64; 2]>)> = BTreeMap::new();
    for q in &a.questions {
        let e = per.entry(q.conv.clone()).or_insert((q.set, Vec::new()));
        e.1.push([
            q.r10(&Rule::floor(0.0)) - q.r10(rule),
            f64::from(u8::from(rule.nothing(&q.away))),
        ]);
    }
    per.into_iter()
        .map(|(conv, (set, v))| {
            let junk: Vec<f64> = a.nonsense[&conv]
                .iter()
                .map(|e| f64::from(u8::from(rule.nothing(e))))
                .collect();
            let col = |i: usize| eval::mean(&v.iter().map(|x| x[i]).collect::<Vec<_>>());
            (conv, (set, [col(0), col(1), eval::mean(&junk)]))
        })
        .collect()
}

/// Each set's means over its conversations but `skip`.
fn set_means(f: &Figures, sets: usize, skip: Option<&str>) -> Vec<[f64; 3]> {
    (0..sets)
        .map(|s| {
            let v: Vec<&[f64; 3]> = f
                .iter()
                .filter(|(c, (set, _))| *set == s && Some(c.as_str()) != skip)
                .map(|(_, (_, x))| x)
                .collect();
            [0, 1, 2].map(|i| eval::mean(&v.iter().map(|x| x[i]).collect::<Vec<_>>()))
        })
        .collect()
}

/// Each rule's figures, computed when first asked for (only the rules over
/// the floors chosen are).
struct Table<'a> {
    asked: &'a Asked,
    known: std::cell::RefCell<BTreeMap<[u32; 3], Figures>>,
}

impl<'a> Table<'a> {
    fn of(asked: &'a Asked) -> Table<'a> {
        Table {
            asked,
            known: Default::default(),
        }
    }

    /// The figures of `rule` (its values are hundredths).
    fn figures(&self, rule: &Rule) -> Figures {
        let key =
            [rule.hit, rule.nothing_below, rule.related_words].map(|x| (x * 100.0).round() as u32);
        self.known
            .borrow_mut()
            .entry(key)
            .or_insert_with(|| figures(self.asked, rule))
            .clone()
    }

    /// The highest hit floor whose mean loss over the sets stays within
    /// the budget, chosen without `skip`; then the rule over it whose worse
    /// set gets nothing for most out-of-store questions (and then most
    /// nonsense strings) while no set loses more than the budget.
    fn choose(&self, sets: usize, budget: f64, skip: Option<&str>) -> Rule {
        let hit = grid()
            .into_iter()
            .filter(|&h| {
                let m = set_means(&self.figures(&Rule::floor(h)), sets, skip);
                eval::mean(&m.iter().map(|x| x[0]).collect::<Vec<_>>()) <= budget
            })
            .fold(0.0, f64::max);
        let worst = |m: &[[f64; 3]], i: usize| m.iter().map(|x| x[i]).fold(f64::INFINITY, f64::min);
        let mut chosen = (f64::NEG_INFINITY, Rule::floor(hit));
        for r in rules(hit) {
            let m = set_means(&self.figures(&r), sets, skip);
            if m.iter().any(|x| x[0] > budget) {
                continue;
            }
            let score = worst(&m, 1) + 0.1 * worst(&m, 2);
            if score > chosen.0 + 1e-12 {
                chosen = (score, r);
            }
        }
        chosen.1
    }
}

/// Per held-out conversation: the rule chosen without it and its figures.
fn held_out(a: &Asked, table: &Table, sets: &[DataSet], budget: f64) -> Vec<Value> {
    let mut rows = Vec::new();
    for (si, convs) in conversations(sets).iter().enumerate() {
        for conv in convs {
            let rule = table.choose(sets.len(), budget, Some(conv));
            let (_, [loss, away, junk]) = table.figures(&rule)[conv];
            let mut row = rule.json();
            row["set"] = json!(sets[si].name);
            row["conv"] = json!(conv);
            row["questions"] = json!(a.questions.iter().filter(|q| &q.conv == conv).count());
            row["r10_loss"] = json!(r3(loss));
            row["out_of_store_nothing"] = json!(r3(away));
            row["nonsense_nothing"] = json!(r3(junk));
            rows.push(row);
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
                "nothing_below": of("nothing_below"),
                "related_words": of("related_words"),
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
    let table = Table::of(&asked);
    let rows = held_out(&asked, &table, &sets, args.budget);
    let chosen = table.choose(sets.len(), args.budget, None);
    let unfloored = measured(&setup, &sets, &args, &junk).await?;
    setup
        .reconfigure(&format!(
            "{EVAL_CONFIG}[search]\nrelated_words = {}\n[search.floor]\n\"{m}\" = {}\n\
             [search.nothing_below]\n\"{m}\" = {}\n",
            chosen.related_words,
            chosen.hit,
            chosen.nothing_below,
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
        "chosen_on_all": chosen.json(),
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
        "| set | held-out conversation | floor | nothing below | related words | R@10 lost | out-of-store: nothing | nonsense: nothing |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let rows = r["held_out"].as_array().into_iter().flatten();
    let means = r["held_out_means"].as_array().into_iter().flatten();
    for (row, mean) in rows.map(|x| (x, false)).chain(means.map(|x| (x, true))) {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            row["set"].as_str().unwrap_or(""),
            if mean {
                "**mean**"
            } else {
                row["conv"].as_str().unwrap_or("")
            },
            row["floor"],
            row["nothing_below"],
            row["related_words"],
            row["r10_loss"],
            row["out_of_store_nothing"],
            row["nonsense_nothing"]
        );
    }
    println!(
        "\nrules chosen on every conversation: {}",
        r["chosen_on_all"]
    );
    println!("daemon without rules: {}", r["daemon_without_floor"]);
    println!("daemon at those rules: {}", r["daemon_at_chosen"]);
    println!(
        "memory_search bytes per hit: {}",
        r["memory_search_bytes_per_hit"]
    );
}
