//! `perf`: latency, throughput and scale of the real daemon over its real
//! socket, each figure next to an in-process floor measured in the same run.
//!
//! The floor runs memd's own store code (schema, the same queries and
//! ranking) on a plain SQLite connection in this process: no socket, no
//! daemon, no writer thread. The ratio of a daemon figure to its floor is
//! what running memd as a separate daemon costs.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use memd::facade::memories;
use memd::facade::search::{self, RankConfig};
use memd::gate::{NewMemory, View};
use memd_client::{
    AddRequest, Client, ConnectOptions, DriftPolicy, Filter, ListRequest, QuerySyntax, SearchMode,
    SearchRequest, UpdateRequest,
};
use rusqlite::Connection;
use serde_json::{Value, json};

use crate::corpus::{self, Item};
use crate::daemon::{BenchDaemon, file_mb};
use crate::stats::{Summary, summarize};

/// Flags of `perf`.
#[derive(Debug, clap::Args)]
pub struct PerfArgs {
    /// Memories to load (search is also measured at 1K and 10K on the way)
    #[arg(long, default_value_t = 10_000)]
    pub memories: usize,
    /// Queries per search measurement
    #[arg(long, default_value_t = 1_000)]
    pub queries: usize,
    /// A config file for the daemon under test (TOML, appended to the
    /// benchmark's own: its tables must not repeat `[lifecycle]`,
    /// `[lifecycle.limits]` or `[embed]`)
    #[arg(long)]
    pub config: Option<std::path::PathBuf>,
    /// Adds per concurrency level (1, 4 and 16 sessions)
    #[arg(long, default_value_t = 1_000)]
    pub adds: usize,
    /// Memories for the semantic and hybrid figures (0: skip them); they
    /// need the local model (scripts/fetch-model.sh)
    #[arg(long, default_value_t = 10_000)]
    pub semantic: usize,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
}

/// The daemon's configuration for a perf run: the default write gate and
/// durability, scope limits lifted, no scheduled sweep, and no embedder (its
/// background work would run through every figure here; `memd-bench
/// semantic` measures semantic and hybrid search).
pub(crate) const PERF_CONFIG: &str = "[lifecycle]\ninterval_hours = 0\n\
    [lifecycle.limits]\nproject = 100000000\nagent = 100000000\nsession = 100000000\n\
    [embed]\nprovider = \"none\"\n";

/// One figure. Latency percentiles, a rate, or both; what does not apply
/// is null in the JSON (and `-` in the table).
struct Row {
    op: String,
    /// Memories in the database when measured.
    memories: usize,
    s: Option<Summary>,
    /// Requests (or memories, for a load) per second.
    per_sec: Option<f64>,
    floor: Option<Summary>,
    note: String,
}

impl Row {
    /// Latencies; a rate when the samples were timed back to back.
    fn new(op: impl Into<String>, memories: usize, s: Summary) -> Row {
        Row {
            op: op.into(),
            memories,
            s: Some(s),
            per_sec: (s.per_sec > 0.0).then_some(s.per_sec),
            floor: None,
            note: String::new(),
        }
    }

    /// A rate only.
    fn rate(op: impl Into<String>, memories: usize, per_sec: f64) -> Row {
        Row {
            op: op.into(),
            memories,
            s: None,
            per_sec: Some(per_sec),
            floor: None,
            note: String::new(),
        }
    }

    fn floor(mut self, f: Summary) -> Row {
        self.floor = Some(f);
        self
    }

    fn note(mut self, n: impl Into<String>) -> Row {
        self.note = n.into();
        self
    }

    fn ratio(&self) -> Option<f64> {
        match (self.s, self.floor) {
            (Some(s), Some(f)) if f.p50_us > 0.0 => Some(s.p50_us / f.p50_us),
            _ => None,
        }
    }

    fn json(&self) -> Value {
        let s = self.s;
        json!({
            "op": self.op,
            "memories": self.memories,
            "n": s.map(|s| s.n),
            "p50_us": s.map(|s| s.p50_us),
            "p95_us": s.map(|s| s.p95_us),
            "p99_us": s.map(|s| s.p99_us),
            "per_sec": self.per_sec,
            "floor_p50_us": self.floor.map(|f| f.p50_us),
            "floor_per_sec": self.floor.map(|f| f.per_sec).filter(|r| *r > 0.0),
            "ratio_to_floor": self.ratio(),
            "note": if self.note.is_empty() { Value::Null } else { json!(self.note) },
        })
    }
}

pub fn run(args: PerfArgs) -> anyhow::Result<()> {
    crate::block_on(run_async(args))
}

/// Times a body run `n` times (`i` is the iteration).
macro_rules! timed {
    ($n:expr, $i:ident => $body:expr) => {{
        let n = $n;
        let mut samples = Vec::with_capacity(n);
        let wall = Instant::now();
        for $i in 0..n {
            let t = Instant::now();
            $body;
            samples.push(t.elapsed());
        }
        summarize(&mut samples, wall.elapsed())
    }};
}

fn timed_sync(n: usize, mut f: impl FnMut(usize) -> anyhow::Result<()>) -> anyhow::Result<Summary> {
    let mut samples = Vec::with_capacity(n);
    let wall = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        f(i)?;
        samples.push(t.elapsed());
    }
    Ok(summarize(&mut samples, wall.elapsed()))
}

/// The in-process floor: memd's schema and store code on a plain
/// connection, `synchronous = FULL`, WAL.
struct Floor {
    conn: Connection,
    _dir: tempfile::TempDir,
}

impl Floor {
    fn new() -> anyhow::Result<Floor> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("floor.db");
        let config = memd::config::Config::default();
        let mut conn = memd::facade::open_write_connection(&path, &config.storage)?;
        memd::facade::schema::migrate(&mut conn, dir.path())?;
        Ok(Floor { conn, _dir: dir })
    }

    fn new_memory(item: &Item) -> NewMemory {
        let mut new = NewMemory::plain(&item.content);
        new.row.category = item.category.to_string();
        new.row.tags.clone_from(&item.tags);
        new
    }

    /// One committed insert per item (the add floor).
    fn add_each(&self, items: &[Item]) -> anyhow::Result<Summary> {
        timed_sync(items.len(), |i| {
            self.conn.execute_batch("BEGIN IMMEDIATE")?;
            memories::insert(&self.conn, &Self::new_memory(&items[i]))?;
            self.conn.execute_batch("COMMIT")?;
            Ok(())
        })
    }

    /// Bulk insert in large transactions.
    fn load(&self, items: &[Item]) -> anyhow::Result<()> {
        for chunk in items.chunks(5_000) {
            self.conn.execute_batch("BEGIN IMMEDIATE")?;
            for it in chunk {
                memories::insert(&self.conn, &Self::new_memory(it))?;
            }
            self.conn.execute_batch("COMMIT")?;
        }
        Ok(())
    }

    fn view() -> View {
        View::namespace("default", "memd-bench", "floor")
    }

    fn search(&self, queries: &[String], mode: SearchMode) -> anyhow::Result<Summary> {
        let view = Self::view();
        let rank = RankConfig::default();
        // The daemon's vocabulary cache, as warm as the daemon's, and its
        // cache of the words' document frequencies.
        let terms = search::load_vocab(&self.conn)?;
        let frequencies = search::Frequencies::default();
        let generation = memd::facade::read_generation(&self.conn)?;
        timed_sync(queries.len(), |i| {
            search::run(
                &self.conn,
                &search::Query {
                    text: &queries[i],
                    syntax: QuerySyntax::Plain,
                    mode,
                    view: &view,
                    limit: 10,
                    offset: 0,
                    explain: false,
                    now: time::OffsetDateTime::now_utc(),
                    rank: &rank,
                    semantic: None,
                    vocab: Some(&terms),
                    frequencies: Some((&frequencies, generation)),
                },
            )?;
            Ok(())
        })
    }
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

pub(crate) async fn connect(daemon: &BenchDaemon) -> anyhow::Result<Client> {
    connect_with(daemon, None).await
}

async fn connect_with(daemon: &BenchDaemon, policy: Option<DriftPolicy>) -> anyhow::Result<Client> {
    let mut o = ConnectOptions::new(daemon.socket());
    o.agent_id = "memd-bench".into();
    o.policy = policy;
    Ok(Client::connect(o).await?)
}

/// Rows a read set holds by default (`[drift] read_set_rows`).
const READ_SET_ROWS: usize = 4096;
/// Sessions whose read sets are filled to measure their memory.
const READ_SET_SESSIONS: usize = 100;

/// Lists the newest [`READ_SET_ROWS`] rows, a page at a time: the session's
/// read set fills. Returns their ids.
async fn read_rows(c: &mut Client, total: usize) -> anyhow::Result<Vec<i64>> {
    let mut ids = Vec::with_capacity(READ_SET_ROWS);
    let mut offset = 0;
    while offset < READ_SET_ROWS.min(total) {
        let page = c
            .list(ListRequest {
                filter: Filter::default(),
                limit: 1_000,
                offset: offset as u32,
            })
            .await?;
        anyhow::ensure!(!page.memories.is_empty(), "list returned nothing");
        offset += page.memories.len();
        ids.extend(page.memories.iter().map(|m| m.id));
    }
    Ok(ids)
}

/// Adds through `sessions` concurrent sessions; summary over every add.
pub(crate) async fn adds(
    daemon: &BenchDaemon,
    sessions: usize,
    total: usize,
    tag: &str,
) -> anyhow::Result<Summary> {
    let per = total.div_ceil(sessions);
    let wall = Instant::now();
    let mut tasks = Vec::new();
    for s in 0..sessions {
        let mut c = connect(daemon).await?;
        let tag = tag.to_string();
        tasks.push(tokio::spawn(async move {
            let mut samples = Vec::with_capacity(per);
            for i in 0..per {
                let t = Instant::now();
                c.add(AddRequest {
                    content: format!(
                        "{tag} session {s} wrote note {i} about {} things",
                        corpus::Rng::new((s * 100_000 + i) as u64).next_u64() % 1_000_000
                    ),
                    ..Default::default()
                })
                .await?;
                samples.push(t.elapsed());
            }
            Ok::<_, memd_client::Error>(samples)
        }));
    }
    let mut samples = Vec::with_capacity(total);
    for t in tasks {
        samples.extend(t.await??);
    }
    Ok(summarize(&mut samples, wall.elapsed()))
}

/// Sizes in MiB of the database's tables and indexes (dbstat).
fn sizes(db: &Path) -> anyhow::Result<Value> {
    let conn = Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    let mut stmt = conn.prepare(
        "SELECT CASE WHEN name LIKE 'memories_fts%' THEN 'fts index' \
         WHEN name IN ('memories') THEN 'memories' \
         WHEN name LIKE 'memories_%' OR name LIKE 'sqlite_autoindex_memories%' THEN 'memories indexes' \
         WHEN name LIKE 'memory_tags%' THEN 'tags' \
         WHEN name LIKE 'memory_revisions%' THEN 'revisions' ELSE 'other' END AS part, \
         sum(pgsize) FROM dbstat GROUP BY part ORDER BY part",
    )?;
    let parts = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    let map: serde_json::Map<String, Value> = parts
        .into_iter()
        .map(|(k, v)| (k, json!((v as f64 / 1_048_576.0 * 100.0).round() / 100.0)))
        .collect();
    Ok(Value::Object(map))
}

/// Writes straight into the database file from this process: an external
/// change, as a tool would make it.
fn external(db: &Path, sql: &str) -> anyhow::Result<()> {
    let conn = Connection::open(db)?;
    conn.busy_timeout(Duration::from_secs(5))?;
    conn.execute_batch(sql)?;
    Ok(())
}

async fn run_async(args: PerfArgs) -> anyhow::Result<()> {
    let total = args.memories.max(100);
    let vocab = corpus::vocabulary(20_000);
    let items = corpus::memories(total, &vocab, 42);
    let queries = corpus::queries(args.queries.max(10), &vocab, 7);
    let fuzzy_queries: Vec<String> = queries.iter().take(200).cloned().collect();
    let mut config = PERF_CONFIG.to_string();
    if let Some(path) = &args.config {
        config.push_str(&std::fs::read_to_string(path).context("reading --config")?);
    }
    let mut daemon = BenchDaemon::start(Some(&config))?;
    let db = daemon.data_dir().join("memory.db");
    let mut client = connect(&daemon).await?;
    let floor = Floor::new()?;
    let mut rows: Vec<Row> = Vec::new();

    // Load in stages through the import path; measure search at each scale.
    let mut scales: Vec<usize> = [1_000, 10_000, 100_000]
        .into_iter()
        .filter(|s| *s < total)
        .collect();
    scales.push(total);
    let mut loaded = 0;
    let mut load_time = Duration::ZERO;
    for scale in &scales {
        let part = &items[loaded..*scale];
        let doc = corpus::export_doc(part, loaded);
        let t = Instant::now();
        let report = client.import(&doc[..], false).await?;
        load_time += t.elapsed();
        anyhow::ensure!(
            report.inserted == part.len() as u64,
            "import inserted {report:?}"
        );
        floor.load(part)?;
        loaded = *scale;
        let q = &queries;
        let s = timed!(q.len(), i => client.search(search_req(&q[i], SearchMode::Lexical)).await?);
        let f = floor.search(q, SearchMode::Lexical)?;
        rows.push(Row::new("search_lexical", *scale, s).floor(f));
        let fq = &fuzzy_queries;
        let s = timed!(fq.len(), i => client.search(search_req(&fq[i], SearchMode::Fuzzy)).await?);
        let f = floor.search(fq, SearchMode::Fuzzy)?;
        rows.push(Row::new("search_fuzzy", *scale, s).floor(f));
    }
    let load = total as f64 / load_time.as_secs_f64().max(1e-9);
    rows.insert(
        0,
        Row::rate("bulk_load_import", total, load).note(format!(
            "{total} memories in {:.1} s",
            load_time.as_secs_f64()
        )),
    );
    let rss_after_load = daemon.rss_mb();

    // Adds with the full write gate, acknowledged when durable.
    let floor_add = floor.add_each(&items[..500.min(total)])?;
    for sessions in [1usize, 4, 16] {
        let s = adds(
            &daemon,
            sessions,
            args.adds.max(sessions),
            &format!("a{sessions}"),
        )
        .await?;
        rows.push(
            Row::new(format!("add_{sessions}_sessions"), total, s)
                .floor(floor_add)
                .note("per_sec: acknowledged adds; floor: one connection, one commit each"),
        );
    }

    // Updates under the row rule: a session whose read set is full updates
    // rows it read; a fresh session updates rows it never read (judged by
    // the read set's floor); the same under `off`, where the row rule does
    // not run (the baseline of this run).
    // A first, unreported pass warms the pages updates touch (the first
    // measured series would otherwise pay for it).
    for (label, policy, read_first) in [
        ("warm-up", DriftPolicy::Off, false),
        ("update_policy_off", DriftPolicy::Off, false),
        ("update_read_rows", DriftPolicy::Standard, true),
        ("update_unread_rows", DriftPolicy::Standard, false),
    ] {
        let mut c = connect_with(&daemon, Some(policy)).await?;
        let mut rng = corpus::Rng::new(11);
        let n = args.adds.clamp(100, READ_SET_ROWS);
        let ids: Vec<i64> = if read_first {
            let read = read_rows(&mut c, total).await?;
            (0..n)
                .map(|_| read[rng.below(read.len()) as usize])
                .collect()
        } else {
            (0..n).map(|_| 1 + rng.below(total) as i64).collect()
        };
        let ids = &ids;
        let s = timed!(ids.len(), i => c
            .update(UpdateRequest {
                id: ids[i],
                importance: Some(["low", "medium", "high"][i % 3].into()),
                ..Default::default()
            })
            .await?);
        if label == "warm-up" {
            continue;
        }
        rows.push(Row::new(label, total, s).note(match label {
            "update_read_rows" => format!("the session read {READ_SET_ROWS} rows first"),
            "update_unread_rows" => "rows the session never read".to_string(),
            _ => "drift policy off: no row rule".to_string(),
        }));
    }
    // The read sets' memory: sessions that each read as many rows as a read
    // set holds, against the same number of idle sessions.
    let idle_before = daemon.rss_mb();
    let mut held = Vec::new();
    for _ in 0..READ_SET_SESSIONS {
        held.push(connect(&daemon).await?);
    }
    let idle_after = daemon.rss_mb();
    for c in &mut held {
        read_rows(c, total).await?;
    }
    let full_after = daemon.rss_mb();
    drop(held);
    let per = |a: Option<f64>, b: Option<f64>| {
        a.zip(b)
            .map(|(a, b)| (b - a) * 1024.0 / READ_SET_SESSIONS as f64)
    };
    let read_set_kib = json!({
        "sessions": READ_SET_SESSIONS,
        "rows_each": READ_SET_ROWS.min(total),
        "idle_session_kib": per(idle_before, idle_after),
        "read_set_kib": per(idle_after, full_after),
    });

    // Reads.
    let mut rng = corpus::Rng::new(3);
    let picks: Vec<i64> = (0..1_000).map(|_| 1 + rng.below(total) as i64).collect();
    let p = &picks;
    let s = timed!(p.len(), i => client.get(p[i]).await?);
    let view = Floor::view();
    let f = timed_sync(p.len(), |i| {
        memories::get_visible(&floor.conn, p[i], &view)?;
        Ok(())
    })?;
    rows.push(Row::new("get", total, s).floor(f));
    let filters: Vec<Filter> = (0..300)
        .map(|i| Filter {
            category: Some(corpus::CATEGORIES[i % corpus::CATEGORIES.len()].into()),
            tags: vec![format!("t{}", i % 50)],
            ..Default::default()
        })
        .collect();
    let fl = &filters;
    let s = timed!(fl.len(), i => client
        .list(ListRequest {
            filter: fl[i].clone(),
            limit: 20,
            offset: 0,
        })
        .await?);
    let f = timed_sync(fl.len(), |i| {
        let mut v = Floor::view();
        v.category.clone_from(&fl[i].category);
        v.tags.clone_from(&fl[i].tags);
        memories::list(&floor.conn, &v, 20, 0)?;
        Ok(())
    })?;
    rows.push(Row::new("list_filtered", total, s).floor(f));

    // Inject: a session's first inject builds its block, later ones are
    // served from the snapshot.
    let mut cold = Vec::new();
    for _ in 0..20 {
        let mut c = connect(&daemon).await?;
        let t = Instant::now();
        c.inject().await?;
        cold.push(t.elapsed());
    }
    let s = summarize(&mut cold, Duration::ZERO);
    let f = timed_sync(20, |_| {
        let now = memd::clock::now();
        let who = memd::facade::inject::For {
            namespace: "default",
            agent: "memd-bench",
            session: "floor",
            now: &now,
        };
        memd::facade::inject::build(
            &floor.conn,
            &who,
            memd::session::snapshot::Builder::new(4_000),
        )?;
        Ok(())
    })?;
    rows.push(Row::new("inject_cold", total, s).floor(f));
    client.inject().await?;
    let reads = |st: Value| st["stats"]["db_reads"].as_u64().unwrap_or(0);
    let before = reads(client.status().await?);
    let s = timed!(args.queries.max(1_000), _i => client.inject().await?);
    let chars = client.inject().await?.stats.chars;
    let read = reads(client.status().await?) - before;
    let rtt = socket_round_trip(daemon.dir.path(), 1_000)?;
    rows.push(Row::new("inject_warm", total, s).floor(rtt).note(format!(
        "{chars}-char block, {read} SQLite reads in {} injects; floor: a bare \
         Unix-socket round trip between two processes",
        s.n + 1
    )));

    // Drift detection: an external commit → the external epoch in status.
    let mut detect = Vec::new();
    for i in 0..20 {
        let before = client.status().await?["drift"]["external_epoch"]
            .as_u64()
            .unwrap_or(0);
        external(
            &db,
            &format!("INSERT INTO memories(content) VALUES ('external write {i}')"),
        )?;
        let t = Instant::now();
        loop {
            let e = client.status().await?["drift"]["external_epoch"]
                .as_u64()
                .unwrap_or(0);
            if e > before {
                detect.push(t.elapsed());
                break;
            }
            anyhow::ensure!(t.elapsed() < Duration::from_secs(10), "not detected");
        }
    }
    rows.push(Row::new(
        "drift_detect",
        total,
        summarize(&mut detect, Duration::ZERO),
    ));

    // A sweep that decays every row, with a client adding meanwhile.
    external(
        &db,
        "UPDATE memories SET access_score = 1; INSERT OR REPLACE INTO memory_meta (key, value) \
         VALUES ('last_decay_at', strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-30 days'));",
    )?;
    let mut sweeper = connect(&daemon).await?;
    let sweep = tokio::spawn(async move {
        let t = Instant::now();
        let r = sweeper.sweep(false).await;
        (r, t.elapsed())
    });
    let mut during = Vec::new();
    let mut writer = connect(&daemon).await?;
    let mut i = 0;
    while !sweep.is_finished() {
        let t = Instant::now();
        writer
            .add(AddRequest {
                content: format!("added during the sweep, number {i}"),
                ..Default::default()
            })
            .await?;
        during.push(t.elapsed());
        i += 1;
    }
    let (report, took) = sweep.await?;
    let report = report?;
    rows.push(
        Row::new(
            "add_during_sweep",
            total,
            summarize(&mut during, Duration::ZERO),
        )
        .note(format!(
            "sweep of {} rows took {:.1} s",
            report.counts.decayed,
            took.as_secs_f64()
        )),
    );
    let rss_after_queries = daemon.rss_mb();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_idle = daemon.rss_mb();
    let rss_file_idle = daemon.rss_file_mb();
    let db_mb = file_mb(&db) + file_mb(&daemon.data_dir().join("memory.db-wal"));
    drop(client);
    drop(writer);

    // Cold start on the loaded database.
    daemon.stop()?;
    let size = sizes(&db)?;
    let mut starts = Vec::new();
    for _ in 0..3 {
        starts.push(daemon.spawn()?);
        daemon.stop()?;
    }
    let start = summarize(&mut starts, Duration::ZERO);
    rows.push(
        Row::new("cold_start", total, start).note("daemon start to READY=1 on the loaded database"),
    );

    // Semantic and hybrid search at `--semantic` memories (10K by default:
    // embedding 100K takes the local model minutes), with the vector index's
    // load time at start; skipped without the model files.
    let mut semantic = Value::Null;
    if args.semantic > 0 {
        match crate::semantic::embedder() {
            Err(e) => {
                semantic = json!({"skipped": e.to_string()});
            }
            Ok(e) => {
                let n = args.semantic.min(total);
                let distinct = crate::semantic::distinct_vectors(&*e, &items[..300.min(n)])?;
                let q: Vec<String> = queries.iter().take(200).cloned().collect();
                let sc = crate::semantic::scale(q.len(), &*e, &items[..n], &distinct, &q).await?;
                let from = |k: &str| Summary {
                    n: q.len(),
                    p50_us: sc[k]["p50_ms"].as_f64().unwrap_or(0.0) * 1e3,
                    p95_us: sc[k]["p95_ms"].as_f64().unwrap_or(0.0) * 1e3,
                    p99_us: sc[k]["p99_ms"].as_f64().unwrap_or(0.0) * 1e3,
                    per_sec: 0.0,
                };
                let floor = from("floor");
                rows.push(Row::new("search_semantic", n, from("semantic")).floor(floor));
                rows.push(
                    Row::new("search_hybrid", n, from("hybrid"))
                        .floor(floor)
                        .note(
                            "floor: the query's embedding and a scan of the same index in-process",
                        ),
                );
                let ready = sc["index_ready_ms"].as_f64().unwrap_or(0.0);
                let mut one = [Duration::from_secs_f64(ready / 1e3)];
                rows.push(
                    Row::new("vector_index_ready", n, summarize(&mut one, Duration::ZERO)).note(
                        format!(
                            "start to semantic search ready (model and {n} vectors; READY=1 at {:.0} ms)",
                            sc["ready_ms"].as_f64().unwrap_or(0.0)
                        ),
                    ),
                );
                semantic = sc;
            }
        }
    }

    let machine = crate::stats::machine_facts();
    let report = json!({
        "memories": total,
        "results": rows.iter().map(Row::json).collect::<Vec<_>>(),
        "rss_mb": rss_idle,
        "rss_file_mb": rss_file_idle,
        "read_set": read_set_kib,
        "rss_after_load_mb": rss_after_load,
        "rss_after_queries_mb": rss_after_queries,
        "db_mb": db_mb,
        "db_parts_mb": size,
        "semantic": semantic,
        "machine": machine,
        "date": memd::clock::now(),
    });
    if args.json {
        println!("{report}");
        return Ok(());
    }
    println!(
        "memd perf: {total} memories, {} queries; {machine}",
        queries.len()
    );
    println!();
    println!(
        "| op | memories | n | p50 µs | p95 µs | p99 µs | per s | floor p50 µs | × floor | note |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let num = |v: Option<f64>| v.map_or("-".to_string(), |x| format!("{x:.0}"));
    for r in &rows {
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.op,
            r.memories,
            r.s.map_or("-".into(), |s| s.n.to_string()),
            num(r.s.map(|s| s.p50_us)),
            num(r.s.map(|s| s.p95_us)),
            num(r.s.map(|s| s.p99_us)),
            num(r.per_sec),
            num(r.floor.map(|f| f.p50_us)),
            r.ratio().map_or("-".into(), |x| format!("{x:.1}")),
            r.note
        );
    }
    println!();
    println!(
        "daemon RSS: {:.1} MiB after load, {:.1} MiB after the run, {:.1} MiB idle \
         ({:.1} MiB of it file pages: the mapped database, the binary); database {:.1} MiB {}",
        rss_after_load.unwrap_or(0.0),
        rss_after_queries.unwrap_or(0.0),
        rss_idle.unwrap_or(0.0),
        rss_file_idle.unwrap_or(0.0),
        db_mb,
        size
    );
    println!("read sets: {read_set_kib}");
    Ok(())
}

/// Answers every read on a Unix socket with the same bytes, one client.
pub fn echo(socket: &Path) -> anyhow::Result<()> {
    use std::io::{Read, Write};
    let listener = std::os::unix::net::UnixListener::bind(socket)?;
    let (mut c, _) = listener.accept()?;
    let mut buf = [0u8; 64];
    loop {
        let n = c.read(&mut buf)?;
        if n == 0 {
            return Ok(());
        }
        c.write_all(&buf[..n])?;
    }
}

/// The bare round trip between two processes over a Unix socket on this
/// machine: 16 bytes out and back, blocking, no runtime, no decoding. No
/// request over memd's socket can be faster.
fn socket_round_trip(dir: &Path, n: usize) -> anyhow::Result<Summary> {
    use std::io::{Read, Write};
    let path = dir.join("echo.sock");
    let mut child = std::process::Command::new(std::env::current_exe()?)
        .arg("echo")
        .arg("--socket")
        .arg(&path)
        .spawn()?;
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut s = loop {
        match std::os::unix::net::UnixStream::connect(&path) {
            Ok(s) => break s,
            Err(e) if Instant::now() > deadline => return Err(e.into()),
            Err(_) => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let mut buf = [0u8; 16];
    let r = timed_sync(n, |_| {
        s.write_all(&[7u8; 16])?;
        s.read_exact(&mut buf)?;
        Ok(())
    });
    drop(s);
    let _ = child.wait();
    r
}

/// Prints `rows` with the date and the machine: as one JSON object when
/// `json`, else through `table`.
pub fn report(rows: impl serde::Serialize, json: bool, table: fn(&serde_json::Value)) {
    let report = serde_json::json!({
        "date": memd::clock::now(),
        "machine": crate::stats::machine_facts(),
        "rows": rows,
    });
    if json {
        println!("{report}");
    } else {
        table(&report);
    }
}
