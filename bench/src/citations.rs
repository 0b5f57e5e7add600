//! `citations`: what checking code citations adds to a session's block
//! build. A git repository of `--files` files (committed), a namespace whose
//! `--memories` memories cite `--cited` of them (lines 10–14 each), and the
//! same memories without citations in another namespace: each round asks for
//! a new block (`refresh`) and times the hook's path to it — the
//! namespace's citations listed, each cited file read and judged, the
//! verdicts reported, the block built (`memd::commands::cites::inject`) —
//! against a plain `inject` of the other namespace, alternated in one run.
//! Then the same with every cited file edited (a line inserted at its top:
//! each citation `moved`, found by its hash further down).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use memd::cite::Checkout;
use memd_client::proto::cite::Cite;
use memd_client::{AddRequest, Client, ConnectOptions};
use serde_json::json;

use crate::daemon::BenchDaemon;
use crate::stats::summarize;

/// Flags of `citations`.
#[derive(Debug, clap::Args)]
pub struct CitationsArgs {
    /// Files in the repository
    #[arg(long, default_value_t = 10_000)]
    pub files: usize,
    /// Memories that cite a file each
    #[arg(long, default_value_t = 200)]
    pub cited: usize,
    /// Memories in each namespace (the cited ones among them)
    #[arg(long, default_value_t = 1_000)]
    pub memories: usize,
    /// Block builds timed per variant
    #[arg(long, default_value_t = 200)]
    pub runs: usize,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
}

/// A source file of about 40 lines, different in every file.
fn source(i: usize) -> String {
    let mut s = format!("//! Module {i}.\n\nuse std::collections::HashMap;\n\n");
    for f in 0..6 {
        s.push_str(&format!(
            "pub fn handler_{i}_{f}(input: &str) -> usize {{\n    let limit = {};\n    input.len().min(limit)\n}}\n\n",
            i * 7 + f
        ));
    }
    s
}

fn path_of(i: usize) -> String {
    format!("src/m{:03}/file_{i}.rs", i / 100)
}

fn git(dir: &Path, args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args([
            "-c",
            "user.name=bench",
            "-c",
            "user.email=bench@example.invalid",
        ])
        .args(args)
        .output()
        .context("git")?;
    if !out.status.success() {
        bail!("git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    Ok(())
}

/// The repository: `files` files, committed.
fn repository(root: &Path, files: usize) -> anyhow::Result<()> {
    for i in 0..files {
        let p = root.join(path_of(i));
        std::fs::create_dir_all(p.parent().context("parent")?)?;
        std::fs::write(p, source(i))?;
    }
    git(root, &["init", "-q"])?;
    git(root, &["add", "."])?;
    git(root, &["commit", "-q", "-m", "bench"])?;
    Ok(())
}

async fn session(socket: &Path, namespace: &str) -> anyhow::Result<Client> {
    let mut o = ConnectOptions::new(socket);
    o.namespace = namespace.into();
    o.session = Some(format!("bench-{namespace}"));
    Ok(Client::connect(o).await?)
}

/// `memories` notes in `namespace`, the first `cited` citing lines 10–14
/// of a file each (pinned in `checkout`) when `checkout` is given.
async fn fill(
    c: &mut Client,
    memories: usize,
    cited: usize,
    files: usize,
    checkout: Option<&Checkout>,
) -> anyhow::Result<()> {
    for i in 0..memories {
        let file = i * files.max(1) / memories.max(1);
        let metadata = match checkout {
            Some(co) if i < cited => {
                let spec =
                    Cite::parse(&format!("{}:10-14", path_of(file))).map_err(anyhow::Error::msg)?;
                let pinned = co.pin(&spec, None).map_err(anyhow::Error::msg)?;
                Some(json!({"cites": [pinned.to_json()]}).to_string())
            }
            _ => None,
        };
        c.add(AddRequest {
            content: format!(
                "handler {file} caps its input at a limit set in its module, note {i}"
            ),
            category: Some("fact".into()),
            metadata,
            ..Default::default()
        })
        .await?;
    }
    Ok(())
}

/// Median and p99 of the two alternated variants, in µs.
struct Pair {
    checked: crate::stats::Summary,
    plain: crate::stats::Summary,
    /// The citations listed and judged, without the report or the block.
    judging: crate::stats::Summary,
    block_chars: usize,
}

async fn time_pair(
    cited: &mut Client,
    plain: &mut Client,
    repo: &Path,
    runs: usize,
) -> anyhow::Result<Pair> {
    let (mut a, mut b, mut j) = (
        Vec::with_capacity(runs),
        Vec::with_capacity(runs),
        Vec::with_capacity(runs),
    );
    let wall = Instant::now();
    let mut block_chars = 0;
    for _ in 0..runs {
        cited.refresh().await?;
        let t = Instant::now();
        let block = memd::commands::cites::inject(cited, Some(repo))
            .await
            .map_err(|e| anyhow::anyhow!(e.message()))?;
        a.push(t.elapsed());
        block_chars = block.block.chars().count();
        plain.refresh().await?;
        let t = Instant::now();
        plain.inject().await?;
        b.push(t.elapsed());
        let t = Instant::now();
        memd::commands::cites::check_namespace(cited, Some(repo), false)
            .await
            .map_err(|e| anyhow::anyhow!(e.message()))?;
        j.push(t.elapsed());
    }
    let wall = wall.elapsed();
    Ok(Pair {
        checked: summarize(&mut a, wall),
        plain: summarize(&mut b, wall),
        judging: summarize(&mut j, wall),
        block_chars,
    })
}

pub fn run(args: CitationsArgs) -> anyhow::Result<()> {
    let dir = tempfile::Builder::new()
        .prefix("memd-bench-cites")
        .tempdir()?;
    let repo: PathBuf = dir.path().join("repo");
    std::fs::create_dir_all(&repo)?;
    let made = Instant::now();
    repository(&repo, args.files)?;
    let setup = made.elapsed();
    let checkout = Checkout::find(&repo).context("the repository")?;
    // No embedder: its background work would share the two cores with
    // what is timed (the block is built from the same rows either way).
    let daemon = BenchDaemon::start(Some("[embed]\nprovider = \"none\"\n"))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut cited = session(&daemon.socket(), "bench-cited").await?;
        let mut plain = session(&daemon.socket(), "bench-plain").await?;
        fill(&mut cited, args.memories, args.cited, args.files, Some(&checkout)).await?;
        fill(&mut plain, args.memories, 0, args.files, None).await?;
        // Warm both paths once.
        time_pair(&mut cited, &mut plain, &repo, 3).await?;
        let fresh = time_pair(&mut cited, &mut plain, &repo, args.runs).await?;
        // Every cited file edited: each citation moved one line down.
        for i in 0..args.cited {
            let file = i * args.files.max(1) / args.memories.max(1);
            let p = repo.join(path_of(file));
            let text = std::fs::read_to_string(&p)?;
            std::fs::write(&p, format!("// edited\n{text}"))?;
        }
        let moved = time_pair(&mut cited, &mut plain, &repo, args.runs).await?;
        let row = |name: &str, p: &Pair| {
            json!({
                "variant": name,
                "with_citations_p50_us": p.checked.p50_us, "with_citations_p99_us": p.checked.p99_us,
                "without_p50_us": p.plain.p50_us, "without_p99_us": p.plain.p99_us,
                "added_p50_us": p.checked.p50_us - p.plain.p50_us,
                "judging_p50_us": p.judging.p50_us, "judging_p99_us": p.judging.p99_us,
                "ratio_p50": p.checked.p50_us / p.plain.p50_us.max(1.0),
                "block_chars": p.block_chars,
            })
        };
        let report = json!({
            "files": args.files, "cited": args.cited, "memories": args.memories, "runs": args.runs,
            "repository_setup_s": setup.as_secs_f64(),
            "results": [row("fresh", &fresh), row("moved", &moved)],
        });
        if args.json {
            println!("{report}");
        } else {
            println!(
                "block build, {} memories of which {} cite a file of a {}-file repository, {} runs each, alternated",
                args.memories, args.cited, args.files, args.runs
            );
            println!(
                "variant  with citations p50 / p99 (ms)   without p50 / p99 (ms)   added p50   ratio   judging alone p50 / p99 (ms)"
            );
            for (name, p) in [("fresh", &fresh), ("moved", &moved)] {
                println!(
                    "{name:<8} {:>10.2} / {:>7.2}              {:>7.2} / {:>7.2}        {:>6.2} ms   {:>4.1}×   {:>7.2} / {:>7.2}",
                    p.checked.p50_us / 1e3,
                    p.checked.p99_us / 1e3,
                    p.plain.p50_us / 1e3,
                    p.plain.p99_us / 1e3,
                    (p.checked.p50_us - p.plain.p50_us) / 1e3,
                    p.checked.p50_us / p.plain.p50_us.max(1.0),
                    p.judging.p50_us / 1e3,
                    p.judging.p99_us / 1e3,
                );
            }
        }
        Ok::<_, anyhow::Error>(())
    })?;
    drop(daemon);
    Ok(())
}
