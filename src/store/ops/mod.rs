//! The store's named operations: what handlers and jobs ask of the
//! database, each one a function with typed inputs and outputs. No caller
//! outside the store sees a connection, a transaction or a closure over
//! one (ARCHITECTURE.md "The life of a request"): the store alone decides
//! where and how a write runs.
//!
//! # Layout
//! - [`read`]: reads for requests and jobs (`get`, `list`, `history`, the
//!   inject read, export, status facts, the integrity check, the online
//!   backup, every row for a drift backup).
//! - [`search`]: one or more searches in one read transaction.
//! - [`add`]: an add, with its dedup, merge and supersession.
//! - [`change`]: `update`, a task move, `confirm`.
//! - [`citations`]: the cited memories, the verdicts clients report.
//! - [`remove`]: `forget`, `prune`, `supersede`.
//! - [`import`]: one chunk of an import.
//! - `guarded`: a session's write under the drift guard, and its
//!   write-through to the team.
//! - [`vectors`]: what the embedding worker and `reembed` read and write.
//!
//! A session's write runs under the drift guard ([`Guard`](super::Guard)): the rules on
//! the session's whole view run first inside the write transaction, then
//! the operation checks each row it changes; the answer is a [`Written`].

pub mod add;
pub mod capture;
pub mod change;
pub mod citations;
mod guarded;
pub mod import;
pub mod namespace;
pub mod purge;
pub mod read;
pub mod remove;
pub mod search;
pub mod vectors;

/// What a session's write left: the operation's answer, the rows it wrote
/// (id, rev now) for the session's read set, and the generation after it.
#[derive(Debug)]
pub struct Written<T> {
    /// The operation's answer.
    pub value: T,
    /// The rows the write changed or created that still exist, at their
    /// revs after it.
    pub rows: Vec<(i64, i64)>,
    /// The generation after the write (inside its transaction).
    pub generation: u64,
    /// Where review is required (team memory): the proposals the write
    /// became instead, by number (nothing else of it was written).
    pub proposals: Vec<i64>,
}
