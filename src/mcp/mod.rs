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

use crate::commands::args::Global;
use crate::commands::{connect, init_logging_with, resolve_namespace};

/// Runs the MCP server until the host closes stdin; returns the exit code.
///
/// The session opens in the namespace every command gets (see
/// [`resolve_namespace`]).
pub fn run(mut g: Global) -> i32 {
    resolve_namespace(&mut g, true);
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
            return 1;
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
            Ok(()) => 0,
            Err(message) => {
                eprintln!("memd mcp: {message}");
                1
            }
        }
    });
    // A blocking stdin read cannot be cancelled: do not wait for it.
    runtime.shutdown_background();
    code
}
