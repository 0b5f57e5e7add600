//! memd: a daemon that gives AI agents a shared, persistent memory.
//!
//! One process owns one SQLite database; many agent sessions talk to it over
//! a Unix socket. See `DESIGN.md` for the contract and the README for use.
//!
//! # Layout
//! - [`config`]: paths (data dir, socket, config file) and settings.
//! - [`daemon`]: lock, socket hygiene, accept loop, connections, shutdown.
//! - [`handler`]: one file per request kind; [`handler::dispatch`] matches
//!   every request exhaustively.
//! - [`session`]: a connection's identity and view.
//! - [`store`]: schema and migrations, the writer thread, the reader pool,
//!   queries, search, the write gate.
//! - [`embed`]: the embedder (local model or HTTP provider), vectors, the
//!   background embedding worker.
//! - [`commands`]: the client commands shared by the command line and the
//!   MCP server: their arguments, connecting, running one over a session,
//!   their output and errors.
//! - [`cli`]: the `memd` command line, `memd shell`, hooks, `setup`,
//!   `config show` and `service install|uninstall|status`.
//! - [`mcp`]: `memd mcp`, a stdio MCP server that is one session.
//! - [`clock`]: the stored time format.
//! - [`fuzzing`]: the bodies of the fuzz targets (`fuzz/`), replayed by a
//!   stable test.
//! - `sys`: the few libc calls std does not wrap.

pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod daemon;
pub mod drift;
pub mod embed;
pub mod fuzzing;
pub mod handler;
pub mod jobs;
pub mod mcp;
pub mod session;
pub mod state;
pub mod store;
mod sys;
