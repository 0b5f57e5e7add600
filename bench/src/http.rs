//! `memd-bench http`: the HTTP API against the binary protocol, in one run
//! on one daemon — search and add latency over each (an HTTP client that
//! keeps its connection alive, as the binary session does), and how long
//! an event takes to reach an `/v1/events` stream after the commit that
//! caused it.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use memd_client::proto::{AddRequest, Filter, QuerySyntax, SearchMode, SearchRequest};
use memd_client::{Client, ConnectOptions};
use serde_json::{Value, json};

use crate::corpus;
use crate::corpus::export_doc;
use crate::daemon::BenchDaemon;
use crate::stats::{Summary, summarize};

/// Flags of `http`.
#[derive(Debug, clap::Args)]
pub struct HttpArgs {
    /// Memories to load before measuring (one or more sizes)
    #[arg(long, value_delimiter = ',', default_value = "10000,100000")]
    pub memories: Vec<usize>,
    /// Searches per protocol
    #[arg(long, default_value_t = 1_000)]
    pub queries: usize,
    /// Adds per protocol
    #[arg(long, default_value_t = 500)]
    pub adds: usize,
    /// Commits whose event is timed on the stream
    #[arg(long, default_value_t = 300)]
    pub events: usize,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
}

const CONFIG: &str = "[lifecycle]\ninterval_hours = 0\n\
    [lifecycle.limits]\nproject = 100000000\nagent = 100000000\nsession = 100000000\n\
    [embed]\nprovider = \"none\"\n";

/// A keep-alive HTTP/1.1 connection over the socket: raw bytes, as any
/// language's client sends them.
struct Http {
    w: UnixStream,
    r: BufReader<UnixStream>,
}

impl Http {
    fn connect(daemon: &BenchDaemon) -> anyhow::Result<Http> {
        let s = UnixStream::connect(daemon.socket())?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        Ok(Http {
            w: s.try_clone()?,
            r: BufReader::new(s),
        })
    }

    /// One request; the status and the body.
    fn call(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&str>,
    ) -> anyhow::Result<(u16, Vec<u8>)> {
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: memd\r\nMemd-Namespace: default\r\nMemd-Agent: memd-bench\r\n"
        );
        if let Some(b) = body {
            req.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                b.len()
            ));
        }
        req.push_str("\r\n");
        if let Some(b) = body {
            req.push_str(b);
        }
        self.w.write_all(req.as_bytes())?;
        let mut line = String::new();
        self.r.read_line(&mut line)?;
        let status: u16 = line
            .split_whitespace()
            .nth(1)
            .ok_or_else(|| anyhow::anyhow!("no status line"))?
            .parse()?;
        let mut len = 0usize;
        loop {
            let mut h = String::new();
            self.r.read_line(&mut h)?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                len = v.trim().parse()?;
            }
        }
        let mut body = vec![0; len];
        self.r.read_exact(&mut body)?;
        Ok((status, body))
    }
}

fn search_req(q: &str) -> SearchRequest {
    SearchRequest {
        query: q.to_string(),
        filter: Filter::default(),
        limit: 10,
        mode: SearchMode::Lexical,
        syntax: QuerySyntax::Plain,
        explain: false,
        offset: 0,
    }
}

fn percent(q: &str) -> String {
    q.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

struct Row {
    op: &'static str,
    memories: usize,
    binary: Summary,
    http: Summary,
}

pub fn run(args: HttpArgs) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut rows = Vec::new();
    let mut events = Vec::new();
    let mut viewer = Vec::new();
    for &size in &args.memories {
        let (r, e) = runtime.block_on(one_size(&args, size, &mut viewer))?;
        rows.extend(r);
        events.push((size, e));
    }
    if args.json {
        let out = json!({
            "machine": crate::stats::machine_facts(),
            "rows": rows.iter().map(|r| json!({
                "op": r.op,
                "memories": r.memories,
                "binary_p50_us": r.binary.p50_us,
                "binary_p99_us": r.binary.p99_us,
                "http_p50_us": r.http.p50_us,
                "http_p99_us": r.http.p99_us,
                "ratio_p50": r.http.p50_us / r.binary.p50_us.max(1e-9),
            })).collect::<Vec<Value>>(),
            "events": events.iter().map(|(m, s)| json!({
                "memories": m, "n": s.n, "p50_us": s.p50_us, "p95_us": s.p95_us, "p99_us": s.p99_us,
            })).collect::<Vec<Value>>(),
            "viewer": viewer.iter().map(|(m, p, k)| json!({
                "memories": m, "start_page_p50_us": p.p50_us, "start_page_p99_us": p.p99_us,
                "keystroke_p50_us": k.p50_us, "keystroke_p99_us": k.p99_us, "keystrokes": k.n,
            })).collect::<Vec<Value>>(),
        });
        println!("{out}");
        return Ok(());
    }
    println!("{}", crate::stats::machine_facts());
    println!(
        "{:<10} {:>9} {:>12} {:>12} {:>12} {:>12} {:>8}",
        "op", "memories", "binary p50", "http p50", "binary p99", "http p99", "ratio"
    );
    for r in &rows {
        println!(
            "{:<10} {:>9} {:>10.0}us {:>10.0}us {:>10.0}us {:>10.0}us {:>7.2}x",
            r.op,
            r.memories,
            r.binary.p50_us,
            r.http.p50_us,
            r.binary.p99_us,
            r.http.p99_us,
            r.http.p50_us / r.binary.p50_us.max(1e-9)
        );
    }
    for (m, p, k) in &viewer {
        println!(
            "viewer ({m} memories): start page p50 {:.1} ms, p99 {:.1} ms; keystroke p50 {:.1} ms, p99 {:.1} ms ({} keystrokes)",
            p.p50_us / 1e3,
            p.p99_us / 1e3,
            k.p50_us / 1e3,
            k.p99_us / 1e3,
            k.n
        );
    }
    for (m, s) in &events {
        println!(
            "event after an add was sent ({m} memories, {} adds): p50 {:.0} us, p95 {:.0} us, p99 {:.0} us",
            s.n, s.p50_us, s.p95_us, s.p99_us
        );
    }
    Ok(())
}

async fn one_size(
    args: &HttpArgs,
    size: usize,
    viewer: &mut Vec<(usize, Summary, Summary)>,
) -> anyhow::Result<(Vec<Row>, Summary)> {
    let vocab = corpus::vocabulary(20_000);
    let items = corpus::memories(size, &vocab, 42);
    let queries = corpus::queries(args.queries.max(10), &vocab, 7);
    let daemon = BenchDaemon::start(Some(CONFIG))?;
    let mut o = ConnectOptions::new(daemon.socket());
    o.agent_id = "memd-bench".into();
    let mut client = Client::connect(o).await?;
    for (k, chunk) in items.chunks(20_000).enumerate() {
        client
            .import(&export_doc(chunk, k * 20_000)[..], false)
            .await?;
    }
    // Warm both paths over every query once.
    let mut http = Http::connect(&daemon)?;
    for q in &queries {
        client.search(search_req(q)).await?;
        http.call(
            "GET",
            &format!("/v1/memories?q={}&mode=lexical&limit=10", percent(q)),
            None,
        )?;
    }
    let mut rows = Vec::new();
    // Search: the two protocols alternate in blocks of 50 so that the
    // machine's noise falls on both.
    let (mut bin, mut web) = (Vec::new(), Vec::new());
    let wall = Instant::now();
    for block in queries.chunks(50) {
        for q in block {
            let t = Instant::now();
            client.search(search_req(q)).await?;
            bin.push(t.elapsed());
        }
        for q in block {
            let path = format!("/v1/memories?q={}&mode=lexical&limit=10", percent(q));
            let t = Instant::now();
            let (status, _) = http.call("GET", &path, None)?;
            web.push(t.elapsed());
            anyhow::ensure!(status == 200, "search over HTTP answered {status}");
        }
    }
    let elapsed = wall.elapsed() / 2;
    rows.push(Row {
        op: "search",
        memories: size,
        binary: summarize(&mut bin, elapsed),
        http: summarize(&mut web, elapsed),
    });
    // Get of one memory: the fixed cost of each protocol, a small answer.
    let (mut bin, mut web) = (Vec::new(), Vec::new());
    for block in 0..(args.queries / 50).max(1) {
        for k in 0..50 {
            let id = 1 + ((block * 50 + k) * 7919 % size) as i64;
            let t = Instant::now();
            client.get(id).await?;
            bin.push(t.elapsed());
            let t = Instant::now();
            let (status, _) = http.call("GET", &format!("/v1/memories/{id}"), None)?;
            web.push(t.elapsed());
            anyhow::ensure!(status == 200, "get over HTTP answered {status}");
        }
    }
    rows.push(Row {
        op: "get",
        memories: size,
        binary: summarize(&mut bin, Duration::ZERO),
        http: summarize(&mut web, Duration::ZERO),
    });
    // Adds (durable, through the write gate), alternating likewise.
    let (mut bin, mut web) = (Vec::new(), Vec::new());
    let mut n = 0;
    while n < args.adds {
        for _ in 0..25 {
            n += 1;
            let content = format!("bench add over the binary protocol number {n} of {size}");
            let t = Instant::now();
            client
                .add(AddRequest {
                    content,
                    ..AddRequest::default()
                })
                .await?;
            bin.push(t.elapsed());
            let body =
                json!({"content": format!("bench add over http number {n} of {size}")}).to_string();
            let t = Instant::now();
            let (status, _) = http.call("POST", "/v1/memories", Some(&body))?;
            web.push(t.elapsed());
            anyhow::ensure!(status == 201, "add over HTTP answered {status}");
        }
    }
    rows.push(Row {
        op: "add",
        memories: size,
        binary: summarize(&mut bin, Duration::ZERO),
        http: summarize(&mut web, Duration::ZERO),
    });
    // The viewer: the start page (the newest memories, the namespaces and
    // counts) and a search-as-you-type keystroke (the results fragment for
    // a growing prefix of a query), as the browser asks for them.
    let mut page = Vec::new();
    for _ in 0..(args.queries / 10).max(20) {
        let t = Instant::now();
        let (status, _) = http.call("GET", "/", None)?;
        page.push(t.elapsed());
        anyhow::ensure!(status == 200, "the start page answered {status}");
    }
    let mut keys = Vec::new();
    for q in queries.iter().take((args.queries / 10).max(20)) {
        let word = q.split_whitespace().next().unwrap_or("a");
        for n in 1..=word.len().min(6) {
            let path = format!("/?q={}&fragment=results", percent(&word[..n]));
            let t = Instant::now();
            let (status, _) = http.call("GET", &path, None)?;
            keys.push(t.elapsed());
            anyhow::ensure!(status == 200, "a keystroke answered {status}");
        }
    }
    viewer.push((
        size,
        summarize(&mut page, Duration::ZERO),
        summarize(&mut keys, Duration::ZERO),
    ));
    let events = event_latency(&daemon, &mut client, args.events).await?;
    Ok((rows, events))
}

/// Time from sending an add to the `change` event that carries its
/// generation on an open `/v1/events` stream (an upper bound of the time
/// from the commit: it includes the add's own round trip and commit).
async fn event_latency(
    daemon: &BenchDaemon,
    client: &mut Client,
    n: usize,
) -> anyhow::Result<Summary> {
    let s = UnixStream::connect(daemon.socket())?;
    let mut w = s.try_clone()?;
    w.write_all(b"GET /v1/events HTTP/1.1\r\nHost: memd\r\n\r\n")?;
    let (tx, rx) = std::sync::mpsc::channel::<(u64, Instant)>();
    let reader = std::thread::spawn(move || {
        let mut r = BufReader::new(s);
        let mut event = String::new();
        let mut line = String::new();
        loop {
            line.clear();
            if r.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let l = line.trim_end();
            if let Some(e) = l.strip_prefix("event:") {
                event = e.trim().to_string();
            } else if let Some(d) = l.strip_prefix("data:")
                && event == "change"
                && let Ok(v) = serde_json::from_str::<Value>(d.trim())
                && let Some(g) = v["generation"].as_u64()
                && tx.send((g, Instant::now())).is_err()
            {
                return;
            }
        }
    });
    // The stream's first event (the generation now) says it is open.
    let _ = rx.recv_timeout(Duration::from_secs(10))?;
    let mut samples = Vec::with_capacity(n);
    for i in 0..n {
        let sent = Instant::now();
        let r = client
            .add(AddRequest {
                content: format!("an add whose event is timed, number {i}"),
                ..AddRequest::default()
            })
            .await?;
        loop {
            let (g, at) = rx.recv_timeout(Duration::from_secs(10))?;
            if g >= r.generation {
                samples.push(at.saturating_duration_since(sent));
                break;
            }
        }
    }
    drop(rx);
    drop(w);
    let _ = reader;
    Ok(summarize(&mut samples, Duration::ZERO))
}
