//! memd: a daemon that gives AI agents a shared, persistent memory.
//!
//! One process owns one SQLite database; many agent sessions talk to it over
//! a Unix socket. ARCHITECTURE.md describes the layers below (each imports
//! only lower ones; `tests/it/structure.rs` checks it) and docs/ the use.
//!
//! The top-level modules are layered: ARCHITECTURE.md's "Layers" table is
//! the one statement of their order (and of what each holds), which
//! `tests/it/structure.rs` reads and checks. Modules the binary, the
//! benchmarks and the fuzz targets use are public; the daemon's insides
//! (`drift`, `handler`, `jobs`, `state`, `store`) are the crate's own, so
//! rustc reports what nothing calls in them. `memd-bench` reaches the
//! store through a small façade, `facade`, with the `bench` feature.

pub mod cite;
pub mod cli;
pub mod clock;
pub mod commands;
pub mod config;
pub mod daemon;
pub(crate) mod drift;
pub mod embed;
pub mod fuzzing;
pub mod gate;
pub(crate) mod handler;
pub(crate) mod http;
pub(crate) mod jobs;
pub mod mcp;
pub mod session;
pub(crate) mod state;
pub(crate) mod store;
mod sync;
mod sys;
pub mod version;

#[cfg(feature = "bench")]
pub use store::facade;
