//! memd: a daemon that gives AI agents a shared, persistent memory.
//!
//! One process owns one SQLite database; many agent sessions talk to it over
//! a Unix socket. ARCHITECTURE.md describes the layers below (each imports
//! only lower ones; `tests/structure.rs` checks it) and the README the use.
//!
//! # Layout, lowest layer first
//! - `sys`, [`clock`]: the few libc calls std does not wrap; the stored time
//!   format.
//! - [`session`]: a session's identity, view, read set and snapshot rules;
//!   [`embed`]: the embedder trait, its backends, vectors and their rules.
//! - [`drift`]: the drift guard's policy, refusals, backups and watcher;
//!   [`gate`]: the write gate, pure rules from a request to what is stored.
//! - [`store`]: every SQL statement — schema, writer thread, readers, named
//!   queries per table or concern, search.
//! - [`config`]: paths and the config file, gathering each owner's settings.
//! - [`state`]: what handlers and jobs share.
//! - [`jobs`]: the embedding worker, sweeps, named-session expiry.
//! - [`handler`]: one file per request; [`handler::dispatch`].
//! - [`daemon`]: lock, socket, accept loop, connections, signals, reload.
//! - [`commands`]: what the CLI and the MCP server share; [`fuzzing`]: the
//!   fuzz target bodies, replayed by a stable test.
//! - [`cli`]: the `memd` command line; [`mcp`]: `memd mcp`, a stdio MCP
//!   server that is one session.

pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod daemon;
pub mod drift;
pub mod embed;
pub mod fuzzing;
pub mod gate;
pub mod handler;
pub mod jobs;
pub mod mcp;
pub mod session;
pub mod state;
pub mod store;
mod sys;
