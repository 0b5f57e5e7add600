//! The drift guard: nothing written on a stale view may silently discard a
//! change the session did not see — made by another session, by memd
//! itself, or by another tool.
//!
//! # Layout
//! - [`policy`]: the decision as pure rules: the external rule, `strict`'s
//!   rule on other sessions, and the row rule.
//! - [`log`]: who made each recent generation (sessions, the daemon,
//!   external writers).
//! - [`refusal`]: a refused write, and the words of its error.
//! - [`backup`]: the JSON backup written when a request is refused on the
//!   external rule, and backup retention.
//! - [`highwater`]: the highest generation the data dir has shown, kept
//!   outside the database so an older file put in place is found.
//! - [`watcher`]: file-system events on the data dir wake the writer
//!   thread, which runs every external-change check
//!   (`store::writer`).

pub mod backup;
pub mod highwater;
pub mod log;
pub mod policy;
pub mod refusal;
pub mod watcher;
