//! `capture`: what capture costs, through the real `memd hook claude-code`
//! on a warm daemon.
//!
//! - The incremental `Stop`: a session of `--turns` turns captured, then
//!   one new turn appended before each timed hook — next to the same
//!   binary's bare start (`memd --version`) measured in the same run.
//! - Growth: the database's size (a consistent copy, `memd backup`)
//!   before and after `--growth-turns` captured turns, per 1,000.
//!
//! The turns' text comes from a data set's `memories.jsonl` (`--data`),
//! cycled.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::daemon::BenchDaemon;
use crate::stats::summarize;

/// Flags of `capture`.
#[derive(Debug, clap::Args)]
pub struct CaptureArgs {
    /// Directory with memories.jsonl: the turns' text (cycled)
    #[arg(long)]
    pub data: PathBuf,
    /// Turns of the session before the timed hooks
    #[arg(long, default_value_t = 500)]
    pub turns: usize,
    /// Timed hooks (one new turn each)
    #[arg(long, default_value_t = 100)]
    pub runs: usize,
    /// Turns captured for the growth figure
    #[arg(long, default_value_t = 5_000)]
    pub growth_turns: usize,
    /// The memd binary [default: `memd` next to this one]
    #[arg(long)]
    pub memd: Option<PathBuf>,
    /// Print one JSON object instead of text
    #[arg(long)]
    pub json: bool,
}

/// A Claude Code transcript line for turn `i` with `text`.
fn line(i: usize, text: &str) -> String {
    let v = if i.is_multiple_of(2) {
        json!({"type": "user", "uuid": format!("u{i}"), "timestamp": "2026-11-27T10:00:00.000Z",
               "message": {"role": "user", "content": text}})
    } else {
        json!({"type": "assistant", "uuid": format!("a{i}"), "timestamp": "2026-11-27T10:00:01.000Z",
               "message": {"id": format!("m{i}"), "role": "assistant",
                           "content": [{"type": "text", "text": text}]}})
    };
    v.to_string() + "\n"
}

struct Hook<'a> {
    memd: &'a Path,
    daemon: &'a BenchDaemon,
}

impl Hook<'_> {
    /// One `Stop` of `session` on `path`: its wall time and stderr.
    fn stop(&self, session: &str, path: &Path) -> anyhow::Result<(Duration, String)> {
        let event = json!({"hook_event_name": "Stop", "session_id": session, "cwd": "/",
                           "transcript_path": path})
        .to_string();
        let started = Instant::now();
        let mut child = Command::new(self.memd)
            .arg("--socket")
            .arg(self.daemon.socket())
            .arg("--data-dir")
            .arg(self.daemon.data_dir())
            .args(["--namespace", "bench", "hook", "claude-code"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()?;
        child
            .stdin
            .take()
            .context("stdin")?
            .write_all(event.as_bytes())?;
        let out = child.wait_with_output()?;
        let took = started.elapsed();
        if !out.stdout.is_empty() {
            bail!("Stop printed {:?}", String::from_utf8_lossy(&out.stdout));
        }
        Ok((took, String::from_utf8_lossy(&out.stderr).into_owned()))
    }

    /// `Stop` until the file is read to its end.
    fn until_done(&self, session: &str, path: &Path) -> anyhow::Result<()> {
        loop {
            let (_, err) = self.stop(session, path)?;
            if err.contains("memd hook:") && !err.contains("the rest at the next hook") {
                bail!("the hook failed: {err}");
            }
            if !err.contains("the rest at the next hook") {
                return Ok(());
            }
        }
    }

    fn memd(&self, args: &[&str]) -> anyhow::Result<Value> {
        let out = Command::new(self.memd)
            .arg("--socket")
            .arg(self.daemon.socket())
            .arg("--data-dir")
            .arg(self.daemon.data_dir())
            .args(["--namespace", "bench", "--json"])
            .args(args)
            .output()?;
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// The database's size as a consistent copy holds it.
    fn size(&self) -> anyhow::Result<u64> {
        let copy = self.daemon.dir.path().join("size.db");
        let _ = std::fs::remove_file(&copy);
        let v = self.memd(&["backup", copy.to_str().context("path")?])?;
        if v["success"] != true {
            bail!("backup: {v}");
        }
        Ok(std::fs::metadata(&copy)?.len())
    }
}

pub fn run(args: CaptureArgs) -> anyhow::Result<()> {
    let memd = crate::daemon::memd_binary(args.memd.as_deref())?;
    let texts: Vec<String> = std::fs::read_to_string(args.data.join("memories.jsonl"))?
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(str::to_string))
        .collect();
    if texts.is_empty() {
        bail!("no turns in {}", args.data.display());
    }
    let text = |i: usize| texts[i % texts.len()].as_str();
    let daemon = BenchDaemon::start(None)?;
    let hook = Hook {
        memd: &memd,
        daemon: &daemon,
    };
    let dir = daemon.dir.path().to_path_buf();

    // The incremental Stop.
    let path = dir.join("session.jsonl");
    let mut file = std::fs::File::create(&path)?;
    for i in 0..args.turns {
        file.write_all(line(i, text(i)).as_bytes())?;
    }
    file.flush()?;
    hook.until_done("long", &path)?;
    let mut stops = Vec::with_capacity(args.runs);
    let mut bare = Vec::with_capacity(args.runs);
    for k in 0..args.runs {
        let i = args.turns + k;
        file.write_all(line(i, text(i)).as_bytes())?;
        file.flush()?;
        let (t, err) = hook.stop("long", &path)?;
        if !err.is_empty() {
            bail!("the hook said: {err}");
        }
        stops.push(t);
        let started = Instant::now();
        Command::new(&memd).arg("--version").output()?;
        bare.push(started.elapsed());
    }
    let captured = hook.memd(&["capture", "status", "claude-code:long"])?;
    let stored = captured["sessions"][0]["turns"].as_u64().unwrap_or(0);
    if stored != (args.turns + args.runs) as u64 {
        bail!(
            "{stored} turns captured, not {}: {captured}",
            args.turns + args.runs
        );
    }
    let s = summarize(&mut stops, Duration::ZERO);
    let b = summarize(&mut bare, Duration::ZERO);

    // Growth per 1,000 captured turns.
    let before = hook.size()?;
    let growth = dir.join("growth.jsonl");
    let mut g = std::fs::File::create(&growth)?;
    let mut text_bytes = 0;
    for i in 0..args.growth_turns {
        let t = text(i + 7);
        text_bytes += t.len();
        g.write_all(line(i, t).as_bytes())?;
    }
    g.flush()?;
    let started = Instant::now();
    hook.until_done("growth", &growth)?;
    let capture_secs = started.elapsed().as_secs_f64();
    let after = hook.size()?;
    let per_1000 = (after.saturating_sub(before)) as f64 * 1000.0 / args.growth_turns as f64;

    let report = json!({
        "session_turns": args.turns,
        "runs": args.runs,
        "stop_ms": {"p50": s.p50_us / 1e3, "p95": s.p95_us / 1e3},
        "bare_start_ms": {"p50": b.p50_us / 1e3, "p95": b.p95_us / 1e3},
        "stop_over_bare_p50_ms": (s.p50_us - b.p50_us) / 1e3,
        "growth": {
            "turns": args.growth_turns,
            "text_bytes_per_1000": text_bytes as f64 * 1000.0 / args.growth_turns as f64,
            "db_bytes_per_1000": per_1000,
            "capture_secs": capture_secs,
            "turns_per_sec": args.growth_turns as f64 / capture_secs,
        },
        "machine": crate::stats::machine_facts(),
    });
    if args.json {
        println!("{report}");
    } else {
        println!(
            "capture through `memd hook claude-code`; {}",
            crate::stats::machine_facts()
        );
        println!(
            "Stop after one new turn of a {}-turn session, {} runs: p50 {:.2} ms, p95 {:.2} ms; \
             `memd --version`: p50 {:.2} ms, p95 {:.2} ms; Stop − bare start at p50: {:.2} ms",
            args.turns,
            args.runs,
            s.p50_us / 1e3,
            s.p95_us / 1e3,
            b.p50_us / 1e3,
            b.p95_us / 1e3,
            (s.p50_us - b.p50_us) / 1e3
        );
        println!(
            "growth: {} turns ({:.0} bytes of text per 1,000) grew the database by {:.0} KiB per \
             1,000 turns; captured in {capture_secs:.1} s ({:.0} turns/s)",
            args.growth_turns,
            text_bytes as f64 * 1000.0 / args.growth_turns as f64,
            per_1000 / 1024.0,
            args.growth_turns as f64 / capture_secs
        );
    }
    Ok(())
}
