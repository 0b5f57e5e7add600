//! memd's client commands, shared by the command line (`memd …` and `memd
//! shell`) and the MCP server (`memd mcp`, whose tools are these commands
//! over its one session). This module knows neither of them.
//!
//! A command's result is an [`Output`] that carries both of its forms, the
//! `--json` value and the human text, built together from the same response
//! by one function per command in [`output`], so the two cannot disagree.
//! The command line prints one form or the other; the MCP server returns the
//! JSON form as the tool's result and leaves the text unused. Printing
//! (stdout, stderr, the exit code) is the command line's.
//!
//! # Layout
//! - [`args`]: the clap definitions (the CLI contract), which the MCP tools
//!   also build.
//! - [`execute()`]: runs one command over an open session.
//! - [`output`]: a result's JSON and human forms.
//! - [`CommandError`]: a failure, its exit code, message and JSON form.
//! - [`connect()`], [`paths()`], [`client_paths()`], [`resolve_namespace()`]:
//!   from the global flags to a session.
//! - [`ingest`], [`import_md`]: the local files `memd ingest` and `memd
//!   import-md` read.
//! - [`cites`]: code citations pinned when a memory is written, their
//!   verdicts in this checkout for what a command shows.
//! - [`progress`]: bars on stderr for long work, at a terminal only.
//! - [`trust`]: the `.memd.toml` files the person trusts to name a
//!   namespace (`memd trust`, `memd untrust`).
//! - [`init_logging()`]: logs on stderr.

pub mod args;
pub mod cites;
mod client;
mod error;
mod execute;
pub mod import_md;
pub mod ingest;
pub mod output;
pub mod progress;
pub mod trust;

pub use client::{
    NamespaceSource, PROJECT_FILE, Project, Untrusted, apply_project, client_paths, connect,
    normalize_url, parse_project_file, paths, project, project_capture_off, project_namespace,
    repository_root, resolve_namespace,
};
pub use error::CommandError;
pub use execute::execute;
pub use output::Output;

/// Logs to stderr, filtered by `MEMD_LOG` (default `info`).
pub fn init_logging() {
    init_logging_with("info");
}

/// Logs to stderr, filtered by `MEMD_LOG` (default `default`).
pub fn init_logging_with(default: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MEMD_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .try_init();
}
