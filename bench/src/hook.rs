//! `hook`: the wall time of `memd hook claude-code` as Claude Code runs it —
//! a new process per event, on a warm daemon — next to the same binary's
//! bare start (`memd --version`) measured in the same run.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use memd_client::{AddRequest, Client, ConnectOptions};
use serde_json::json;

use crate::daemon::BenchDaemon;
use crate::stats::summarize;

/// Flags of `hook`.
#[derive(Debug, clap::Args)]
pub struct HookArgs {
    /// Hook runs timed
    #[arg(long, default_value_t = 200)]
    pub runs: usize,
    /// The memd binary [default: `memd` next to this one]
    #[arg(long)]
    pub memd: Option<PathBuf>,
    /// Print one JSON object instead of a table
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: HookArgs) -> anyhow::Result<()> {
    let memd = crate::daemon::memd_binary(args.memd.as_deref())?;
    let daemon = BenchDaemon::start(None)?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut o = ConnectOptions::new(daemon.socket());
        o.namespace = "bench".into();
        let mut c = Client::connect(o).await?;
        for i in 0..20 {
            c.add(AddRequest {
                content: format!("convention {i}: the build runs through the make target {i}"),
                category: Some("convention".into()),
                ..Default::default()
            })
            .await?;
        }
        Ok::<_, anyhow::Error>(())
    })?;
    let event = json!({
        "session_id": "bench", "cwd": "/", "hook_event_name": "SessionStart", "source": "resume",
    })
    .to_string();
    let time = |args: &[&str], input: Option<&str>| -> anyhow::Result<(Duration, Vec<u8>)> {
        let started = Instant::now();
        let mut child = Command::new(&memd)
            .arg("--socket")
            .arg(daemon.socket())
            .arg("--data-dir")
            .arg(daemon.data_dir())
            .args(["--namespace", "bench"])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut stdin = child.stdin.take().context("stdin")?;
        if let Some(i) = input {
            stdin.write_all(i.as_bytes())?;
        }
        drop(stdin);
        let out = child.wait_with_output()?;
        Ok((started.elapsed(), out.stdout))
    };
    let (_, first) = time(&["hook", "claude-code"], Some(&event))?;
    let v: serde_json::Value = serde_json::from_slice(&first)
        .with_context(|| format!("the hook printed {:?}", String::from_utf8_lossy(&first)))?;
    let chars = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .map_or(0, |b| b.chars().count());
    let mut hooks = Vec::with_capacity(args.runs);
    let mut bare = Vec::with_capacity(args.runs);
    for _ in 0..args.runs {
        let (t, out) = time(&["hook", "claude-code"], Some(&event))?;
        if out != first {
            bail!("the block changed between two starts");
        }
        hooks.push(t);
        bare.push(time(&["--version"], None)?.0);
    }
    let h = summarize(&mut hooks, Duration::ZERO);
    let b = summarize(&mut bare, Duration::ZERO);
    let report = json!({
        "runs": args.runs,
        "block_chars": chars,
        "hook_ms": {"p50": h.p50_us / 1e3, "p95": h.p95_us / 1e3, "p99": h.p99_us / 1e3},
        "bare_start_ms": {"p50": b.p50_us / 1e3, "p95": b.p95_us / 1e3},
        "machine": crate::stats::machine_facts(),
    });
    if args.json {
        println!("{report}");
    } else {
        println!(
            "memd hook claude-code (SessionStart, {chars}-char block, the same bytes each run), {} runs; {}",
            args.runs,
            crate::stats::machine_facts()
        );
        println!(
            "hook: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms; `memd --version` (process start): p50 {:.2} ms, p95 {:.2} ms",
            h.p50_us / 1e3,
            h.p95_us / 1e3,
            h.p99_us / 1e3,
            b.p50_us / 1e3,
            b.p95_us / 1e3
        );
    }
    Ok(())
}
