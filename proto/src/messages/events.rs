//! Pushes from the daemon (frame id 0): drift, purge, near-duplicate
//! events.

use serde::{Deserialize, Serialize};

/// Pushes from the daemon. Append only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Event {
    /// An external change was detected.
    Drift(DriftEvent),
    /// A memory turned out to be a semantic near duplicate of another one
    /// (found after the add, once its embedding was computed).
    Similar(SimilarEvent),
    /// Memories were purged; when the session's frozen block showed one,
    /// the block is dropped and the next inject builds a new one (the one
    /// case where a frozen block changes).
    Purged(PurgedEvent),
}

/// A purge, as a session hears of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgedEvent {
    /// The erased memories' ids here.
    pub ids: Vec<i64>,
    /// The session's frozen block held one of them and was dropped.
    pub block_dropped: bool,
    /// Generation after the purge.
    pub generation: u64,
}

/// A semantic near duplicate: a newer memory close to an older one in the
/// same namespace, scope and owner. A notice, never a merge.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SimilarEvent {
    /// Namespace of both memories.
    pub namespace: String,
    /// The newer memory.
    pub id: i64,
    /// The older memory it is close to.
    pub similar_to: i64,
    /// Their cosine similarity.
    pub cosine: f64,
    /// The existing memory was superseded by the new one
    /// (`[embed] auto_supersede`).
    pub superseded: bool,
}

/// An external change: the database was written outside memd (or restored,
/// or replaced).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftEvent {
    /// Generation after the change.
    pub generation: u64,
    /// The new external epoch.
    pub external_epoch: u64,
    /// When it was detected.
    pub at: String,
    /// What happened.
    pub reason: String,
}
