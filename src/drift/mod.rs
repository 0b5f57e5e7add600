//! The drift guard (DESIGN.md "Drift"): nothing written on a stale view may
//! silently discard a change the session did not see.
//!
//! # Layout
//! - [`policy`]: the decision as pure rules (`external`, `strict`, `off`)
//!   and the log of session commits.
//! - [`backup`]: the JSON backup written when a request is refused, and
//!   backup retention.
//! - [`highwater`]: the highest generation the data dir has shown, kept
//!   outside the database so an older file put in place is found.
//! - [`watcher`]: file-system events on the data dir wake the writer
//!   thread, which runs every external-change check
//!   (`store::writer`).

pub mod backup;
pub mod highwater;
pub mod policy;
pub mod watcher;
