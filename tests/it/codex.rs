//! memd with the real Codex CLI (the npm package `.ci/run` installs under
//! `target/codex`), driven with `codex exec` against a loopback stand-in
//! for the Responses API that records every request, in a network
//! namespace where only loopback exists.
//!
//! What a user of `memd setup codex` gets: the memory block in the model's
//! request at the session's start; at every `codex exec resume` — a daemon
//! restart included — still exactly that one block (Codex keeps every
//! hook context it is given, so memd gives none when the conversation
//! holds the block); memd's MCP tools writing as `codex`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::model_api::{Dialect, ModelApi};
use crate::common::netns::{can_isolate, isolate_network};
use crate::common::{BIN, Daemon, memd_json_in, require, tool};
use serde_json::Value;

/// The `codex` binary: `MEMD_TEST_CODEX`, else the one `.ci/run` installs
/// under `target/codex`.
fn codex_binary() -> Option<PathBuf> {
    let path = std::env::var_os("MEMD_TEST_CODEX").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/codex/node_modules/.bin/codex"),
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
            "the Codex CLI is not at {} (`.ci/run` installs it; or set MEMD_TEST_CODEX)",
            path.display()
        ),
    )
    .then_some(path)
}

struct World {
    codex: PathBuf,
    home: PathBuf,
    project: PathBuf,
    daemon: Daemon,
    api: ModelApi,
}

impl World {
    /// `codex exec` (`resume ID` when given) with `prompt`: the thread id.
    fn codex(&self, resume: Option<&str>, prompt: &str) -> String {
        let bin_dir = Path::new(BIN).parent().unwrap();
        let path = format!(
            "{}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            bin_dir.display()
        );
        let mut cmd = Command::new(&self.codex);
        cmd.arg("exec");
        if let Some(id) = resume {
            cmd.args(["resume", id]);
        }
        // Codex runs hooks it was not told to trust (an interactive
        // start asks) only with this flag.
        cmd.args([
            "--json",
            "--skip-git-repo-check",
            "--dangerously-bypass-hook-trust",
        ])
        .arg(prompt)
        .current_dir(&self.project)
        .env_clear()
        .env("PATH", path)
        .env("HOME", &self.home)
        .env("CODEX_HOME", self.home.join(".codex"))
        .env("XDG_CONFIG_HOME", self.home.join("xdg-config"))
        .env("XDG_RUNTIME_DIR", self.home.join("xdg-run"))
        .env("MEMD_DATA_DIR", self.daemon.data_dir())
        .env("STANDIN_KEY", "sk-standin")
        .stdin(Stdio::null());
        let out = cmd.output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "codex {prompt:?}: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .find_map(|e| e["thread_id"].as_str().map(String::from))
            .unwrap_or_else(|| resume.map(String::from).expect("no thread id: {stdout}"))
    }

    fn memd(&self, args: &[&str]) -> Value {
        memd_json_in(&self.home, &self.project, &self.daemon.data_dir(), args)
    }

    fn block(&self, id: &str) -> String {
        let v = self.memd(&["--session", &format!("codex:{id}"), "inject"]);
        v["block"].as_str().unwrap().to_string()
    }

    fn last_request(&self) -> Value {
        self.api.model_requests().pop().expect("no model request")
    }
}

/// The texts of a Responses request's input messages.
fn texts(request: &Value) -> Vec<String> {
    request["input"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["content"].as_array())
        .flatten()
        .filter_map(|c| c["text"].as_str().map(String::from))
        .collect()
}

/// How many memory blocks the request carries, and how many of them are
/// `block`, byte for byte.
fn blocks_in(request: &Value, block: &str) -> (usize, usize) {
    let t = texts(request);
    (
        t.iter().filter(|t| t.starts_with("## Memory")).count(),
        t.iter().filter(|t| *t == block).count(),
    )
}

fn run(codex: PathBuf) {
    isolate_network();
    let daemon = Daemon::start();
    let home = daemon.dir.path().join("home");
    let project = home.join("api");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::create_dir_all(home.join(".codex")).unwrap();
    let git = Command::new("git")
        .args(["init", "-q"])
        .current_dir(&project)
        .status()
        .unwrap();
    assert!(git.success());
    let api = ModelApi::start(Dialect::Responses);
    // The user's own settings: a model provider (here, the stand-in).
    std::fs::write(
        home.join(".codex/config.toml"),
        format!(
            "model = \"gpt-standin\"\nmodel_provider = \"standin\"\n\n\
             [model_providers.standin]\nname = \"standin\"\nbase_url = \"{}/v1\"\n\
             wire_api = \"responses\"\nenv_key = \"STANDIN_KEY\"\nsupports_websockets = false\n",
            api.url
        ),
    )
    .unwrap();
    let mut w = World {
        codex,
        home,
        project,
        daemon,
        api,
    };
    let setup = w.memd(&["setup", "codex"]);
    assert_eq!(setup["success"], true, "{setup}");
    w.memd(&[
        "add",
        "--category",
        "convention",
        "handlers return typed errors",
    ]);

    let id = w.codex(None, "remember the house rules");
    let block = w.block(&id);
    assert!(block.contains("handlers return typed errors"), "{block}");
    assert_eq!(blocks_in(&w.last_request(), &block), (1, 1));

    w.memd(&["add", "--category", "fact", "ids are ULIDs"]);
    w.codex(Some(&id), "second turn");
    let request = w.last_request();
    assert_eq!(blocks_in(&request, &block), (1, 1), "{request}");
    assert!(!request.to_string().contains("ids are ULIDs"));

    // A daemon restart between two resumes: still that one block.
    w.memd(&["stop"]);
    let stopped = w.daemon.child.take().unwrap().wait().unwrap();
    assert!(stopped.success(), "{stopped}");
    w.daemon.spawn();
    w.memd(&["add", "--category", "fact", "the API is versioned by date"]);
    w.codex(Some(&id), "third turn");
    let request = w.last_request();
    assert_eq!(blocks_in(&request, &block), (1, 1), "{request}");
    assert_eq!(w.block(&id), block);

    // The model calls memd's tool; the row is Codex's.
    w.codex(Some(&id), "STORE: the CI machines have two cores");
    let request = w.last_request();
    assert!(
        request.to_string().contains(r#"\"accepted\":true"#),
        "{request}"
    );
    let rows = w.memd(&["--agent", "codex", "list", "--scope", "agent"]);
    assert_eq!(rows["count"], 1, "{rows}");
    assert_eq!(rows["memories"][0]["created_by"], "codex", "{rows}");
    assert_eq!(blocks_in(&request, &block), (1, 1), "{request}");

    // The conversation, captured by the `Stop` hook from Codex's rollout:
    // each prompt once (the restart between lost none), the replies, the
    // tool call as one line; a prompt and its reply found by search.
    w.codex(Some(&id), "ECHO: the ledger closes at noon");
    let db = w.daemon.db();
    let turns: Vec<String> = crate::common::sqlite3(
        &db,
        &format!(
            "SELECT content FROM memories WHERE source = 'capture' AND thread = 'codex:{id}' \
             ORDER BY thread_pos"
        ),
    )
    .lines()
    .map(str::to_string)
    .collect();
    for prompt in [
        "User: remember the house rules",
        "User: second turn",
        "User: third turn",
        "User: STORE: the CI machines have two cores",
        "User: ECHO: the ledger closes at noon",
    ] {
        assert_eq!(
            turns.iter().filter(|t| *t == prompt).count(),
            1,
            "{prompt} once in {turns:#?}"
        );
    }
    assert!(
        turns.iter().any(|t| t.contains("[memory_store")),
        "{turns:#?}"
    );
    assert!(
        !turns.iter().any(|t| t.contains("## Memory")),
        "memd's own block is not a turn: {turns:#?}"
    );
    let hits = w.memd(&["search", "ledger closes noon"]);
    let contents: Vec<&str> = hits["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["content"].as_str().unwrap())
        .collect();
    assert!(
        contents.contains(&"Assistant: heard: the ledger closes at"),
        "{contents:?}"
    );
}

#[test]
fn codex_gets_its_block_once_across_resumes_and_restarts_and_stores_through_mcp() {
    if !tool("git", "the project is a git repository")
        || !tool(
            "ip",
            "loopback is brought up in the test's network namespace",
        )
        || !can_isolate()
    {
        return;
    }
    let Some(codex) = codex_binary() else {
        return;
    };
    std::thread::spawn(move || run(codex)).join().unwrap();
}
