//! memd with the real Claude Code CLI (the npm package `.ci/run` installs
//! under `target/claude-code`), driven with `claude -p` against a loopback
//! stand-in for the Messages API that records every request the CLI sends,
//! in a network namespace where only loopback exists.
//!
//! What a user of `memd setup claude-code` gets: the memory block in the
//! model's request at the session's start; the same bytes, once, at every
//! `--resume` — a daemon restart included; memd's MCP tools callable
//! without a prompt, writing as `claude-code`; a new block after
//! `/compact`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::model_api::{Dialect, ModelApi};
use crate::common::netns::{can_isolate, isolate_network};
use crate::common::{BIN, Daemon, memd_json_in, require, tool};
use serde_json::Value;

/// What the hook's context is prefixed with in the request.
const HOOK_PREFIX: &str = "SessionStart hook additional context: ";

/// The `claude` binary: `MEMD_TEST_CLAUDE`, else the one `.ci/run` installs
/// under `target/claude-code`.
fn claude_binary() -> Option<PathBuf> {
    let path = std::env::var_os("MEMD_TEST_CLAUDE").map_or_else(
        || {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/claude-code/node_modules/.bin/claude")
        },
        PathBuf::from,
    );
    let runs = Command::new(&path)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    require(
        runs,
        &format!(
            "the Claude Code CLI is not at {} (`.ci/run` installs it; or set MEMD_TEST_CLAUDE)",
            path.display()
        ),
    )
    .then_some(path)
}

/// One user's machine: a home, a project (a git repository), a daemon,
/// the stand-in API and the CLI.
struct World {
    claude: PathBuf,
    home: PathBuf,
    project: PathBuf,
    daemon: Daemon,
    api: ModelApi,
}

impl World {
    /// `claude -p --output-format json ARGS` in the project: its result
    /// object.
    fn claude(&self, args: &[&str]) -> Value {
        let bin_dir = Path::new(BIN).parent().unwrap();
        let path = format!(
            "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            bin_dir.display()
        );
        let out = Command::new(&self.claude)
            .args(["-p", "--output-format", "json"])
            .args(args)
            .current_dir(&self.project)
            .env_clear()
            .env("PATH", path)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join("xdg-config"))
            .env("XDG_RUNTIME_DIR", self.home.join("xdg-run"))
            .env("MEMD_DATA_DIR", self.daemon.data_dir())
            .env("ANTHROPIC_BASE_URL", &self.api.url)
            .env("ANTHROPIC_API_KEY", "sk-ant-standin")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("DISABLE_AUTOUPDATER", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "claude {args:?}: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let result: Value = stdout
            .lines()
            .rev()
            .find_map(|l| serde_json::from_str(l).ok())
            .unwrap_or_else(|| panic!("no JSON result from claude {args:?}: {stdout}"));
        assert_eq!(result["is_error"], false, "{result}");
        result
    }

    /// A memd command run in the project (its namespace derived there, as
    /// the hooks and the MCP server derive it).
    fn memd(&self, args: &[&str]) -> Value {
        memd_json_in(&self.home, &self.project, &self.daemon.data_dir(), args)
    }

    /// The frozen block of Claude Code session `id`, as memd holds it.
    fn block(&self, id: &str) -> String {
        let v = self.memd(&["--session", &format!("claude-code:{id}"), "inject"]);
        v["block"].as_str().unwrap().to_string()
    }

    /// The last model request, as text.
    fn last_request(&self) -> String {
        let all = self.api.model_requests();
        all.last().expect("no model request").to_string()
    }
}

/// The texts of a request's messages (system prompt left out), as JSON
/// strings are written in the request: where memory blocks are counted.
fn message_texts(request: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for m in request["messages"].as_array().unwrap() {
        match &m["content"] {
            Value::String(s) => out.push(s.clone()),
            Value::Array(blocks) => out.extend(
                blocks
                    .iter()
                    .filter_map(|b| b["text"].as_str().map(String::from)),
            ),
            _ => {}
        }
    }
    out
}

/// How many memory blocks the request carries, and whether `block` is one
/// of them, byte for byte.
fn blocks_in(request: &Value, block: &str) -> (usize, bool) {
    let texts = message_texts(request);
    let count = texts.iter().map(|t| t.matches(HOOK_PREFIX).count()).sum();
    let exact = format!("{HOOK_PREFIX}{block}");
    (count, texts.iter().any(|t| t.contains(&exact)))
}

fn run(claude: PathBuf) {
    isolate_network();
    let daemon = Daemon::start();
    let home = daemon.dir.path().join("home");
    let project = home.join("shop");
    std::fs::create_dir_all(&project).unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&project)
        .status()
        .unwrap();
    assert!(git.success());
    let api = ModelApi::start(Dialect::Anthropic);
    let mut w = World {
        claude,
        home,
        project,
        daemon,
        api,
    };

    // Setup, as a user runs it.
    let setup = w.memd(&["setup", "claude-code"]);
    assert_eq!(setup["success"], true, "{setup}");
    w.memd(&["add", "--category", "convention", "prices are in cents"]);

    // The session's first request carries the block.
    let first = w.claude(&["remember the house rules"]);
    let id = first["session_id"].as_str().unwrap().to_string();
    let block = w.block(&id);
    assert!(block.contains("prices are in cents"), "{block}");
    let request: Value = serde_json::from_str(&w.last_request()).unwrap();
    assert_eq!(blocks_in(&request, &block), (1, true), "{request}");

    // Another session writes; a resume gets the same bytes, once.
    w.memd(&["add", "--category", "fact", "deploys happen on fridays"]);
    w.claude(&["--resume", &id, "second turn"]);
    let request: Value = serde_json::from_str(&w.last_request()).unwrap();
    assert_eq!(blocks_in(&request, &block), (1, true), "{request}");
    assert!(!w.last_request().contains("deploys happen on fridays"));

    // The daemon stops (an upgrade, a crash, a reboot) and starts again;
    // more is written meanwhile. The resume still gets the same bytes, and
    // so Claude Code adds no second block.
    w.memd(&["stop"]);
    let stopped = w.daemon.child.take().unwrap().wait().unwrap();
    assert!(stopped.success(), "{stopped}");
    w.daemon.spawn();
    w.memd(&[
        "add",
        "--category",
        "fact",
        "the staging database is rebuilt nightly",
    ]);
    w.claude(&["--resume", &id, "third turn"]);
    let request: Value = serde_json::from_str(&w.last_request()).unwrap();
    assert_eq!(
        blocks_in(&request, &block),
        (1, true),
        "one memory block, byte for byte the one before the restart: {request}"
    );
    assert_eq!(w.block(&id), block);

    // The model calls memd's tool; no --allowedTools: setup's rule lets it
    // run, and the row is Claude Code's.
    let stored = w.claude(&["--resume", &id, "STORE: the CI machines have two cores"]);
    assert_eq!(
        stored["permission_denials"],
        serde_json::json!([]),
        "{stored}"
    );
    assert!(
        stored["result"]
            .as_str()
            .unwrap()
            .contains(r#"\"accepted\":true"#),
        "{stored}"
    );
    let rows = w.memd(&["--agent", "claude-code", "list", "--scope", "agent"]);
    assert_eq!(rows["count"], 1, "{rows}");
    assert_eq!(
        rows["memories"][0]["content"],
        "the CI machines have two cores"
    );
    assert_eq!(rows["memories"][0]["created_by"], "claude-code", "{rows}");
    assert_eq!(rows["memories"][0]["scope_owner"], "claude-code", "{rows}");
    // The server joined the hooks' session: one session, and its write
    // left the block Claude Code holds as it was.
    let sessions = w.memd(&["session", "list"]);
    assert_eq!(
        sessions["sessions"].as_array().unwrap().len(),
        1,
        "{sessions}"
    );
    assert_eq!(sessions["sessions"][0]["name"], format!("claude-code:{id}"));
    w.claude(&["--resume", &id, "fourth turn"]);
    let request: Value = serde_json::from_str(&w.last_request()).unwrap();
    assert_eq!(blocks_in(&request, &block), (1, true), "{request}");

    // `/compact`: Claude Code rewrites its history; the block after it is
    // new and holds what was written meanwhile, the agent's own fact too.
    // (Claude Code compacts only a conversation of some length: a few
    // more turns until it does.)
    let mut turns = 0;
    loop {
        let compacted = w.claude(&["--resume", &id, "/compact"]);
        if compacted["result"] != "Not enough messages to compact." {
            break;
        }
        turns += 1;
        assert!(turns < 8, "Claude Code never compacted: {compacted}");
        w.claude(&["--resume", &id, &format!("filler turn {turns}")]);
    }
    w.claude(&["--resume", &id, "after the compaction"]);
    let request: Value = serde_json::from_str(&w.last_request()).unwrap();
    let new_block = w.block(&id);
    assert_ne!(new_block, block);
    for fact in [
        "prices are in cents",
        "deploys happen on fridays",
        "the staging database is rebuilt nightly",
        "the CI machines have two cores",
    ] {
        assert!(new_block.contains(fact), "{fact}: {new_block}");
    }
    assert_eq!(blocks_in(&request, &new_block), (1, true), "{request}");
    assert!(
        !request.to_string().contains(&block),
        "the old block is gone with the history it was in"
    );

    capture(&w, &id);
}

/// The conversation captured by the hooks `setup` installed (`Stop`,
/// `PreCompact`, `SessionEnd`): every prompt of the session above once —
/// the daemon's restart in the middle lost none — and the stand-in's
/// replies; a new session's prompt and reply found by search, its private
/// span and key on no disk; a resume adds only its new turns.
fn capture(w: &World, id: &str) {
    let thread = format!("claude-code:{id}");
    let db = w.daemon.db();
    let captured = |thread: &str| -> Vec<String> {
        crate::common::sqlite3(
            &db,
            &format!(
                "SELECT content FROM memories WHERE source = 'capture' AND thread = '{thread}' \
                 ORDER BY thread_pos"
            ),
        )
        .lines()
        .map(str::to_string)
        .collect()
    };
    let turns = captured(&thread);
    for prompt in [
        "User: remember the house rules",
        "User: second turn",
        "User: third turn",
        "User: fourth turn",
        "User: after the compaction",
    ] {
        assert_eq!(
            turns.iter().filter(|t| *t == prompt).count(),
            1,
            "{prompt} once in {turns:#?}"
        );
    }
    assert!(turns.iter().any(|t| t == "Assistant: ok."), "{turns:#?}");
    assert!(
        turns.iter().any(|t| t.contains("[mcp__memd__memory_store")),
        "the tool call as one line: {turns:#?}"
    );
    assert!(
        !turns
            .iter()
            .any(|t| t.contains("SessionStart hook") || t.contains("## Memory")),
        "memd's own block is not a turn: {turns:#?}"
    );

    // A new session: its prompt and the reply are found.
    let said = w.claude(&[
        "ECHO: the kiln fires at dawn <private>kiln password opal-7731</private> \
         with key AKIAIOSFODNN7EXAMPLE",
    ]);
    let new_id = said["session_id"].as_str().unwrap().to_string();
    let hits = w.memd(&["search", "kiln fires at dawn"]);
    let contents: Vec<&str> = hits["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["content"].as_str().unwrap())
        .collect();
    assert!(
        contents
            .iter()
            .any(|c| c.starts_with("User: ECHO: the kiln fires at dawn")),
        "{contents:?}"
    );
    assert!(
        contents
            .iter()
            .any(|c| c.starts_with("Assistant: heard: the kiln")),
        "{contents:?}"
    );
    let export = w.home.join("export.json");
    w.memd(&["export", "--out", export.to_str().unwrap()]);
    let mut files = vec![export];
    for e in std::fs::read_dir(w.daemon.data_dir()).unwrap() {
        files.push(e.unwrap().path());
    }
    for f in files.iter().filter(|f| f.is_file()) {
        let bytes = std::fs::read(f).unwrap();
        for secret in ["opal-7731", "AKIAIOSFODNN7EXAMPLE"] {
            assert!(
                !bytes.windows(secret.len()).any(|x| x == secret.as_bytes()),
                "{secret} in {}",
                f.display()
            );
        }
    }

    // A resume adds only its new turns.
    let before = captured(&format!("claude-code:{new_id}"));
    w.claude(&["--resume", &new_id, "ECHO: glaze the second batch"]);
    let after = captured(&format!("claude-code:{new_id}"));
    assert_eq!(after.len(), before.len() + 2, "{before:#?}\n{after:#?}");
    assert_eq!(after[..before.len()], before[..]);
}

#[test]
fn claude_code_gets_its_block_keeps_it_across_resumes_and_restarts_and_stores_through_mcp() {
    if !tool("git", "the project is a git repository")
        || !tool(
            "ip",
            "loopback is brought up in the test's network namespace",
        )
        || !can_isolate()
    {
        return;
    }
    let Some(claude) = claude_binary() else {
        return;
    };
    // A thread of its own: the network namespace is the thread's.
    std::thread::spawn(move || run(claude)).join().unwrap();
}
