//! Progress bars through the real binary: `memd ingest` and `memd export`
//! on a terminal (a pseudo-terminal opened by `script`) show a bar with a
//! rate; under `--json` or with stderr not a terminal nothing but the
//! answer is written.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{Daemon, tool};

/// A transcript of `n` turns.
fn transcript(dir: &Path, n: usize) -> String {
    let text: String = (0..n)
        .map(|i| {
            format!(
                "{{\"thread\": \"t\", \"speaker\": \"Ann\", \"text\": \"Turn number {i} \
                 about the staging deploy window\", \"id\": \"{i}\"}}\n"
            )
        })
        .collect();
    let path = dir.join("talk.jsonl");
    std::fs::write(&path, text).unwrap();
    path.to_string_lossy().into_owned()
}

/// What `cmd` writes on a pseudo-terminal (stdout and stderr both), run by
/// `script`, with its exit code.
fn on_terminal(cmd: &Command) -> (String, i32) {
    let quote = |s: &std::ffi::OsStr| format!("'{}'", s.to_string_lossy().replace('\'', "'\\''"));
    let line: Vec<String> = std::iter::once(quote(cmd.get_program()))
        .chain(cmd.get_args().map(quote))
        .collect();
    let mut script = Command::new("script");
    script
        .args(["-qec", &line.join(" "), "/dev/null"])
        .stdin(Stdio::null());
    if let Some(dir) = cmd.get_current_dir() {
        script.current_dir(dir);
    }
    for (k, v) in cmd.get_envs() {
        match v {
            Some(v) => script.env(k, v),
            None => script.env_remove(k),
        };
    }
    let out = script.output().expect("script runs");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn a_terminal_sees_a_bar_json_and_pipes_see_none() {
    if !tool("script", "a pseudo-terminal for the bar") {
        return;
    }
    let d = Daemon::start();
    let file = transcript(d.dir.path(), 300);

    let mut cmd = d.cmd();
    cmd.args(["ingest", &file]);
    let (seen, code) = on_terminal(&cmd);
    assert_eq!(code, 0, "{seen}");
    assert!(
        seen.contains("ingesting turns"),
        "no bar on a terminal: {seen:?}"
    );
    assert!(seen.contains("/300"), "the bar counts the turns: {seen:?}");
    assert!(seen.contains("300 turns:"), "the answer follows: {seen:?}");

    // Under --json on the same terminal: the JSON line alone.
    let mut cmd = d.cmd();
    cmd.args(["--json", "ingest", &file]);
    let (seen, code) = on_terminal(&cmd);
    assert_eq!(code, 0, "{seen}");
    assert!(!seen.contains("ingesting"), "a bar under --json: {seen:?}");
    let v: serde_json::Value = serde_json::from_str(seen.trim()).expect("one JSON line");
    assert_eq!(v["turns"], 300, "{v}");

    // stderr a pipe: nothing on it.
    let out = d.cli(&["ingest", &file]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stderr.is_empty(),
        "stderr not a terminal: {:?}",
        out.stderr
    );

    // A download counts its bytes on a terminal.
    let to = d.dir.path().join("all.json");
    let mut cmd = d.cmd();
    cmd.args(["export", "--out", to.to_str().unwrap()]);
    let (seen, code) = on_terminal(&cmd);
    assert_eq!(code, 0, "{seen}");
    assert!(seen.contains("exporting to"), "no bar for export: {seen:?}");
    assert!(std::fs::metadata(&to).unwrap().len() > 0);
}
