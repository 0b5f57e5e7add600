//! `memd mcp`: a stdio MCP server that is one memd session.
//!
//! The process connects to the daemon (starting one when none answers, like
//! every client command), opens one session and serves the MCP host over
//! stdin/stdout with the official Rust SDK (`rmcp`):
//!
//! - tools ([`tools`]): each runs the matching CLI command over the session,
//!   so its result is that command's `--json` output; a refusal (drift,
//!   conflict, gate) is a tool error carrying the same JSON;
//! - resources: `memory://inject`, the session's frozen memory block (the
//!   same bytes at every read until `memory_compacted` or a write of this
//!   session), `memory://drift`, the last change made outside memd, and
//!   `memory://similar`, the last semantic near duplicates;
//! - a prompt, `memory`, with the same block;
//! - events pushed by the daemon become `notifications/resources/updated`:
//!   drift for subscribers of `memory://inject` and `memory://drift`, near
//!   duplicates for those of `memory://similar`;
//! - when the daemon goes away, the session connects again (see `server`).
//!
//! # Layout
//! - [`tools`]: tool names, schemas, descriptions, arguments → command (pure).
//! - `server`: the session, the event pump and the rmcp handler.
//!
//! Logs go to stderr (stdout is the protocol).

mod server;
pub mod tools;

use memd_client::exit;

use crate::commands::args::Global;
use crate::commands::{connect, init_logging_with, resolve_namespace};

/// The session id each host gives the MCP servers it starts, by the
/// variable it sets: Claude Code sets `CLAUDE_CODE_SESSION_ID` (the id its
/// hooks get as `session_id`, the same on `--resume`); `CODEX_THREAD_ID`
/// is read the same way for Codex, where a release sets it for MCP servers
/// (its shell commands get it), and `GEMINI_SESSION_ID` for Gemini CLI
/// (its hooks get it).
const HOST_SESSION_VARS: [(&str, &str); 3] = [
    ("claude-code", "CLAUDE_CODE_SESSION_ID"),
    ("codex", "CODEX_THREAD_ID"),
    ("gemini", "GEMINI_SESSION_ID"),
];

/// Joins the host's named session (`<host>:<id>`, as its hooks do) when the
/// host told the server its session id and neither `--session` nor an
/// agent of another host says otherwise: the server then shares the hook
/// session's read set, and its writes leave the hook session's block as it
/// is. The agent is the host's.
fn join_host_session(g: &mut Global, env: impl Fn(&str) -> Option<String>) {
    if g.session.is_some() {
        return;
    }
    for (host, var) in HOST_SESSION_VARS {
        let Some(id) = env(var).filter(|id| !id.trim().is_empty()) else {
            continue;
        };
        // Claude Code's id also reaches a server someone added without an
        // agent; Codex's only the one `setup codex` configured.
        let ours = match g.agent.as_deref() {
            None => host == "claude-code",
            Some(agent) => agent == host,
        };
        if ours {
            g.agent = Some(host.to_string());
            g.session = Some(format!("{host}:{id}"));
            g.hold_block = true;
            return;
        }
    }
}

/// Runs the MCP server until the host closes stdin; returns the exit code.
///
/// The session opens in the namespace every command gets (see
/// [`resolve_namespace`]).
pub fn run(mut g: Global) -> i32 {
    g.via = Some("mcp");
    resolve_namespace(&mut g, true);
    join_host_session(&mut g, |k| std::env::var(k).ok());
    init_logging_with("warn");
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .thread_name("memd-mcp")
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("memd mcp: cannot start the runtime: {e}");
            return exit::ERROR;
        }
    };
    let code = runtime.block_on(async {
        let client = match connect(&g, true).await {
            Ok(c) => c,
            Err(e) => {
                eprintln!("memd mcp: {}", e.message());
                return e.exit_code();
            }
        };
        match server::serve(client, g).await {
            Ok(()) => exit::OK,
            Err(message) => {
                eprintln!("memd mcp: {message}");
                exit::ERROR
            }
        }
    });
    // A blocking stdin read cannot be cancelled: do not wait for it.
    runtime.shutdown_background();
    code
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    fn global(args: &[&str]) -> Global {
        let mut all = vec!["memd"];
        all.extend_from_slice(args);
        all.push("status");
        crate::commands::args::Cli::try_parse_from(all)
            .unwrap()
            .global
    }

    #[test]
    fn the_server_joins_the_session_its_host_names() {
        let claude = |k: &str| (k == "CLAUDE_CODE_SESSION_ID").then(|| "4f1c".to_string());
        let mut g = global(&["--agent", "claude-code"]);
        join_host_session(&mut g, claude);
        assert_eq!(g.session.as_deref(), Some("claude-code:4f1c"));
        assert!(g.hold_block);
        let mut g = global(&[]);
        join_host_session(&mut g, claude);
        assert_eq!(g.agent.as_deref(), Some("claude-code"), "the host's agent");
        let mut g = global(&["--session", "mine"]);
        join_host_session(&mut g, claude);
        assert_eq!(g.session.as_deref(), Some("mine"), "--session wins");
        let mut g = global(&["--agent", "desktop"]);
        join_host_session(&mut g, claude);
        assert_eq!(g.session, None, "another agent: a session of its own");
        let mut g = global(&["--agent", "codex"]);
        join_host_session(&mut g, |_| None);
        assert_eq!(g.session, None, "no id: a session of its own");
        assert!(!g.hold_block);
        let mut g = global(&["--agent", "codex"]);
        join_host_session(&mut g, |k| (k == "CODEX_THREAD_ID").then(|| "019a".into()));
        assert_eq!(g.session.as_deref(), Some("codex:019a"));
    }
}
