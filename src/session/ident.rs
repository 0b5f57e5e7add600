//! Who a request comes from: a session's identity, and the author of a
//! write (a session or the daemon itself).

use std::sync::Arc;

/// A session's identity: the owner of its agent- and session-scope rows and
/// the namespace every request of it is confined to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Who {
    /// Namespace.
    pub namespace: String,
    /// Agent id.
    pub agent: String,
    /// Session key.
    pub session: String,
    /// How far its reads reach beyond its namespace and its own rows.
    pub reach: Reach,
}

/// How far a session's reads reach. A session of an agent sees its
/// namespace, and of the agent- and session-scope rows only its own; a
/// person looking through the HTTP API (a request that names no namespace,
/// or no agent) sees further. Never set from the binary protocol's
/// handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Reach {
    /// Reads cover every namespace (a change by id acts on its memory
    /// wherever it lives).
    pub every_namespace: bool,
    /// Reads show every agent's and session's rows.
    pub every_owner: bool,
}

/// Who makes a write: it decides what counts as drift for whom, and it is
/// what the commit log remembers of each commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Author {
    /// A client session.
    Session(Arc<Who>),
    /// The daemon itself (sweeps, embeddings, migrations).
    Daemon,
    /// Other machines and PostgreSQL's other writers, as a pull applies
    /// their changes (each row keeps its own author).
    Team,
}
