//! What the gate lets through: a validated memory to insert
//! ([`NewMemory`]), the validated changes of an update ([`Changes`]), and
//! what a session may see with one request's filters ([`View`]). The store
//! takes these as they are; building them is the gate's job.

use memd_proto::Memory;

/// A validated memory ready to insert (built by the write gate). The row
/// is a [`Memory`], the one shape of a memory row (the wire's, below every
/// layer): the gate fills what a writer chooses; what the store assigns to
/// a new row (id, uid, counts, times, rev, generation) stays as
/// [`blank_row`] leaves it, and the insert does not read it.
#[derive(Debug, Clone, PartialEq)]
pub struct NewMemory {
    /// The row to insert.
    pub row: Memory,
    /// The gate replaced a secret with `[REDACTED]` (not stored).
    pub redacted: bool,
    /// The near-duplicate sketch of the content when it was computed
    /// already (off the writer thread); `insert` computes it otherwise.
    pub sketch: Option<Vec<i64>>,
}

impl NewMemory {
    /// A promoted project-scope note in `default` with every other field at
    /// its default (the gate builds real ones; tests and benchmarks start
    /// from this).
    pub fn plain(content: &str) -> NewMemory {
        NewMemory {
            row: Memory {
                content: content.into(),
                dedupe_key: Some(super::dedupe_key(content)),
                ..blank_row()
            },
            redacted: false,
            sketch: None,
        }
    }
}

/// A memory row with no content, every field a writer chooses at its
/// default (a promoted project-scope note of tier 2 in `default`, written
/// by an agent), and what the store assigns empty. The one place a memory
/// row is built field by field: every other starts from it.
pub fn blank_row() -> Memory {
    Memory {
        id: 0,
        uid: String::new(),
        namespace: "default".into(),
        scope: "project".into(),
        scope_owner: None,
        content: String::new(),
        subject: None,
        category: "note".into(),
        tier: 2,
        importance: "medium".into(),
        confidence: 1.0,
        pinned: false,
        status: "promoted".into(),
        metadata: "{}".into(),
        tags: Vec::new(),
        superseded_by: None,
        superseded_at: None,
        dedupe_key: None,
        observation_count: 1,
        confirmed_count: 0,
        last_confirmed_at: None,
        use_count: 0,
        last_used_at: None,
        access_score: 0.0,
        source: "agent".into(),
        created_by: None,
        expires_at: None,
        created_at: String::new(),
        updated_at: String::new(),
        rev: 0,
        changed_generation: 0,
        thread: None,
        thread_pos: None,
        occurred_at: None,
        turn: None,
        provenance: None,
    }
}

/// Which namespaces a read covers.
#[derive(Debug, Clone, PartialEq)]
pub enum Namespaces {
    /// These (the session's own, or ones the request named).
    Only(Vec<String>),
    /// Every namespace (explicit opt-in).
    All,
}

/// What a session may see, and the filters of one request.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// Namespaces covered.
    pub namespaces: Namespaces,
    /// The session's agent id (owner of agent-scope rows it sees).
    pub agent: String,
    /// The session key (owner of session-scope rows it sees).
    pub session: String,
    /// Every agent's and session's rows, not only this session's own
    /// (a person's view through the HTTP API).
    pub every_owner: bool,
    /// Only this scope.
    pub scope: Option<String>,
    /// Only this category.
    pub category: Option<String>,
    /// Only this subject.
    pub subject: Option<String>,
    /// Tags to match.
    pub tags: Vec<String>,
    /// Match any tag instead of all.
    pub tags_any: bool,
    /// Metadata conditions.
    pub meta: Vec<MetaMatch>,
    /// Created at or after (stored time format).
    pub since: Option<String>,
    /// Created before (stored time format).
    pub until: Option<String>,
    /// Updated at or after (stored time format).
    pub updated_since: Option<String>,
    /// Updated before (stored time format).
    pub updated_until: Option<String>,
    /// Include superseded rows.
    pub include_superseded: bool,
    /// Only rows this agent created.
    pub created_by: Option<String>,
    /// Only this tier.
    pub tier: Option<i64>,
    /// Only this source.
    pub source: Option<String>,
    /// Include archived rows.
    pub include_archived: bool,
    /// Only this status.
    pub status: Option<String>,
    /// "Now" for expiry (stored time format).
    pub now: String,
}

/// One `key=value` metadata condition, typed as JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct MetaMatch {
    /// Top-level key.
    pub key: String,
    /// The value as JSON.
    pub value: serde_json::Value,
}

impl View {
    /// A view of one namespace with no filters.
    pub fn namespace(namespace: &str, agent: &str, session: &str) -> View {
        View {
            namespaces: Namespaces::Only(vec![namespace.to_string()]),
            agent: agent.to_string(),
            session: session.to_string(),
            every_owner: false,
            created_by: None,
            tier: None,
            source: None,
            scope: None,
            category: None,
            subject: None,
            tags: Vec::new(),
            tags_any: false,
            meta: Vec::new(),
            since: None,
            until: None,
            updated_since: None,
            updated_until: None,
            include_superseded: false,
            include_archived: false,
            status: None,
            now: crate::clock::now(),
        }
    }
}

/// Column changes of an update, validated by the gate.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Changes {
    /// New content and its dedup key.
    pub content: Option<(String, String)>,
    /// New category.
    pub category: Option<String>,
    /// New subject (`Some(None)` clears it).
    pub subject: Option<Option<String>>,
    /// New scope and owner.
    pub scope: Option<(String, Option<String>)>,
    /// New tier.
    pub tier: Option<i64>,
    /// New pinned flag.
    pub pinned: Option<bool>,
    /// New importance.
    pub importance: Option<String>,
    /// New status.
    pub status: Option<String>,
    /// New confidence.
    pub confidence: Option<f64>,
    /// New expiry (`Some(None)` clears it).
    pub expires_at: Option<Option<String>>,
    /// Metadata keys to merge in (a JSON object).
    pub metadata: Option<serde_json::Map<String, serde_json::Value>>,
    /// New tag set.
    pub tags: Option<Vec<String>>,
}
