//! What a client asks: the payload of each [`Request`](super::Request)
//! kind, and what requests share (the handshake, filters, search modes,
//! drift policies).

use serde::{Deserialize, Serialize};

/// Run a sweep.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SweepRequest {
    /// Only count what would change.
    pub dry_run: bool,
}

/// What to export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ExportRequest {
    /// `json` (every column, the drift backup's shape) or `markdown`.
    pub format: String,
    /// Namespaces to export instead of the session's.
    pub namespaces: Vec<String>,
    /// Every namespace.
    pub all_namespaces: bool,
    /// Markdown: memories per category per namespace.
    pub top: u32,
}

/// Prepare a backup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct BackupRequest {}

/// Read bytes of the download.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchRequest {
    /// Offset in the download.
    pub offset: u64,
    /// At most this many bytes (capped by the daemon).
    pub len: u32,
}

/// Import the session's upload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ImportRequest {
    /// Overwrite rows whose uid exists (destructive, guarded by the drift
    /// rules); otherwise they are skipped.
    pub replace: bool,
}

/// `old` is replaced by `new`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SupersedeRequest {
    /// The memory that is replaced.
    pub old: i64,
    /// The memory that replaces it.
    pub new: i64,
}

/// Ask for a memory's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRequest {
    /// Any member of the chain.
    pub id: i64,
}

/// Count a confirmation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfirmRequest {
    /// Row id.
    pub id: i64,
}

/// Delete expired memories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct PruneRequest {
    /// Only list what would be deleted.
    pub dry_run: bool,
    /// Every namespace instead of the session's.
    pub all_namespaces: bool,
}

/// Move a task (a memory of category `task`) to another state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRequest {
    /// Row id.
    pub id: i64,
    /// `pending`, `in_progress`, `completed` or `cancelled`.
    pub status: String,
    /// Refuse with a conflict unless the row is at this rev.
    pub expect_rev: Option<i64>,
}

/// Ask for the session's memory block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct InjectRequest {}

/// The agent compacted its context.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CompactedRequest {}

/// Drop the session's snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RefreshRequest {}

/// Subscribe to drift events.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SubscribeRequest {}

/// Ask for an integrity report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct CheckRequest {}

/// A piece of a file the client sends (the daemon never opens a path a
/// client names: the client reads the file and streams it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct UploadChunk {
    /// The next bytes (at most [`UPLOAD_CHUNK`] per frame).
    pub data: Vec<u8>,
    /// Discard what was uploaded before and start over.
    pub reset: bool,
}

/// Largest upload chunk a client sends in one frame.
pub const UPLOAD_CHUNK: usize = 1024 * 1024;

/// Restore the uploaded SQLite file into the live database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RestoreRequest {}

/// Show what a named session was told: its frozen block and the
/// memories in it (read only: nothing is built, the session is not joined).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SessionShowRequest {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
}

/// Open the viewer's listener and log a browser in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct UiRequest {
    /// Make a new token first: every browser session and login code given
    /// before ends.
    pub new_token: bool,
}

/// One turn of a conversation, as a host's transcript holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CapturedTurn {
    /// The line's own id in the transcript (its `uuid`): with the host and
    /// the session, the turn's identity — it is never stored twice.
    pub id: String,
    /// `User` or `Assistant`.
    pub speaker: String,
    /// The text (private spans already left out by the client).
    pub text: String,
    /// When it was said (RFC 3339), when the transcript says.
    pub at: Option<String>,
}

/// A stretch of a transcript: its turns, and the offsets it spans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CaptureRequest {
    /// The host (`claude-code`).
    pub host: String,
    /// The host's session id.
    pub session: String,
    /// The transcript's identity (device and inode): another file starts
    /// over from offset 0.
    pub file: String,
    /// The transcript's path (for `capture status`; never opened by the
    /// daemon).
    pub path: String,
    /// The offset the stretch starts at: the capture state's, or 0 for
    /// another file.
    pub from: u64,
    /// The offset after its last complete line.
    pub to: u64,
    /// Its turns, in order.
    pub turns: Vec<CapturedTurn>,
    /// Lines of the stretch that were not JSON (counted, not stored).
    pub invalid_lines: u64,
    /// What the hook could not read (a missing file, a line too long to
    /// read): kept as the session's last error, shown by `capture status`.
    pub error: Option<String>,
}

/// Ask where capture stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CaptureStatusRequest {
    /// Only this host.
    pub host: Option<String>,
    /// Only this session.
    pub session: Option<String>,
}

/// Remove a session's captured turns.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CaptureForgetRequest {
    /// The host (`claude-code`); empty: every host's session of that id.
    pub host: String,
    /// The host's session id.
    pub session: String,
}

/// The namespace of a person's own memories (`memd add --personal`): shown
/// in the block of every session, in every namespace, under its own
/// heading; never matched by a team glob but `@me` itself.
pub const PERSONAL_NAMESPACE: &str = "@me";

/// Delete the memories of a thread, of a source, or of both (at least one
/// given), in the session's namespace: each is a `forget` (its versions
/// stay in the history; `purge` erases text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ForgetWhereRequest {
    /// Only the memories of this thread (`memd ingest`'s thread).
    pub thread: Option<String>,
    /// Only the memories of this source (`ingest`, `capture`, `agent`…).
    pub source: Option<String>,
    /// Only list what would be deleted.
    pub dry_run: bool,
}

/// Where a memory lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LocateRequest {
    /// The memory's id.
    pub id: i64,
}

/// Erase memories: one by id, or every memory whose text (now or in any
/// earlier version) holds `matching`, case-insensitively — of the
/// session's namespace, or of every namespace with `all_namespaces`.
/// Without `confirm`, nothing is erased: the answer lists what would be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct PurgeRequest {
    /// The memory's id (a live row).
    pub id: Option<i64>,
    /// Text to look for in every memory and every revision.
    pub matching: Option<String>,
    /// Erase (otherwise only list).
    pub confirm: bool,
    /// Every namespace, not only the session's.
    #[serde(default)]
    pub all_namespaces: bool,
}

/// Upload a namespace's memories to the team's PostgreSQL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TeamPushRequest {
    /// The namespace (it must match `[team] namespaces`).
    pub namespace: String,
}

/// Wake the team pull and wait until it reconnected and caught up (or
/// failed to).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TeamSyncRequest {}

/// Rebuild every vector with the daemon's embedder (in the background).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ReembedRequest {}

/// Several searches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SearchBatchRequest {
    /// The searches, answered in order.
    pub searches: Vec<SearchRequest>,
}

/// List the named sessions of the namespace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SessionListRequest {
    /// Every namespace's named sessions, not only the session's own
    /// namespace's.
    pub all_namespaces: bool,
}

/// End a named session: its snapshot and read set are dropped.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct SessionEndRequest {
    /// Its name.
    pub name: String,
}

/// Drift policy of a session (the drift guard). Append only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DriftPolicy {
    /// Refuse destructive requests made on a view older than the last
    /// external change (the external rule alone).
    External,
    /// Refuse every mutating request made on a stale view, counting other
    /// sessions' commits in the same namespace too.
    Strict,
    /// Never refuse (only `expect_rev` protects).
    Off,
    /// The default: the external rule, plus the row rule — a destructive
    /// request is refused when its target row was changed by anyone but this
    /// session after the version of it this session last saw.
    Standard,
}

impl DriftPolicy {
    /// The policy's name as used in config files, flags and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftPolicy::External => "external",
            DriftPolicy::Strict => "strict",
            DriftPolicy::Off => "off",
            DriftPolicy::Standard => "standard",
        }
    }

    /// Parses a policy name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "external" => Some(DriftPolicy::External),
            "strict" => Some(DriftPolicy::Strict),
            "off" => Some(DriftPolicy::Off),
            "standard" => Some(DriftPolicy::Standard),
            _ => None,
        }
    }
}

/// Opens a session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// The client's protocol version (also in the preamble).
    pub protocol: u32,
    /// Version string of the client software, for logs and mismatch messages.
    pub client_version: String,
    /// Agent id: owner of `agent`-scope memories.
    pub agent_id: String,
    /// Namespace every request of this session is confined to.
    pub namespace: String,
    /// Drift policy for this session; `None` takes the daemon's default.
    pub policy: Option<DriftPolicy>,
    /// Inject character budget for this session; `None` takes the default.
    pub budget: Option<u32>,
    /// Generation the client saw before reconnecting; `None` for a new view.
    pub seen_generation: Option<u64>,
    /// A session name: every connection that gives it in the same namespace
    /// is one session (snapshot, seen generation, read set); `None` for a
    /// session of this connection alone.
    pub session: Option<String>,
    /// The session serves a hook-driven host (Claude Code, Codex), whose
    /// conversation keeps the block from its start on: a named session
    /// created with it changes its block only at compaction, clear or
    /// refresh, never because of a write.
    pub hold_block: bool,
    /// When the client derived `namespace` from the project: the names
    /// earlier derivations gave this checkout (oldest last). Their memories,
    /// named sessions and capture state move to `namespace` once.
    pub previous_namespaces: Vec<String>,
}

/// Store a memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct AddRequest {
    /// The text (non-empty, within the daemon's size limit).
    pub content: String,
    /// Category; `None` for the default (`note`).
    pub category: Option<String>,
    /// Subject line.
    pub subject: Option<String>,
    /// Tags (lower-cased by the daemon).
    pub tags: Vec<String>,
    /// Scope name or alias; `None` for `project`.
    pub scope: Option<String>,
    /// Tier 1..3; `None` for 2.
    pub tier: Option<i64>,
    /// Pin it.
    pub pinned: bool,
    /// `low` | `medium` | `high`; `None` for medium.
    pub importance: Option<String>,
    /// `candidate` | `promoted` | `archived`; `None` lets the gate decide.
    pub status: Option<String>,
    /// Confidence 0..1; `None` for 1.0.
    pub confidence: Option<f64>,
    /// Expiry: a duration like `7d` or an RFC 3339 time.
    pub expires: Option<String>,
    /// Id of a memory this one supersedes.
    pub supersedes: Option<i64>,
    /// Metadata as a JSON object text; `None` for `{}`.
    pub metadata: Option<String>,
    /// The conversation or session it comes from (a thread id): search
    /// reads it with its neighbours in the thread.
    pub thread: Option<String>,
    /// Its position in the thread; `None` puts it after the thread's last.
    /// A thread position that already holds a memory is not added again.
    pub position: Option<i64>,
    /// When what it tells happened: an RFC 3339 time or a date
    /// (`2023-05-08`, `2023-05-08T13:56`, UTC).
    pub occurred_at: Option<String>,
}

/// Filters shared by list and search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Filter {
    /// Namespaces to read besides none: empty means the session's own. Naming
    /// other namespaces is the explicit opt-in to cross-namespace reads.
    pub namespaces: Vec<String>,
    /// Every namespace.
    pub all_namespaces: bool,
    /// Only this scope (name or alias).
    pub scope: Option<String>,
    /// Only this category.
    pub category: Option<String>,
    /// Only this subject (exact).
    pub subject: Option<String>,
    /// Tags to match.
    pub tags: Vec<String>,
    /// Match any of `tags` instead of all of them.
    pub tags_any: bool,
    /// Metadata `key=value` pairs that must all match.
    pub meta: Vec<(String, String)>,
    /// Created at or after this time (RFC 3339 or a duration ago like `7d`).
    pub since: Option<String>,
    /// Created before this time (RFC 3339 or a duration ago).
    pub until: Option<String>,
    /// Changed at or after this time (RFC 3339 or a duration ago).
    pub updated_since: Option<String>,
    /// Changed before this time (RFC 3339 or a duration ago).
    pub updated_until: Option<String>,
    /// Include superseded memories.
    pub include_superseded: bool,
    /// Include archived memories.
    pub include_archived: bool,
    /// Only this status.
    pub status: Option<String>,
    /// Only memories this agent created (`created_by`).
    pub created_by: Option<String>,
    /// Only this tier (1..3).
    pub tier: Option<i64>,
    /// Only this source (`agent`, `user`, `system`, `import`, `ingest`,
    /// `capture`, `external`…); `!NAME`: every source but that one.
    pub source: Option<String>,
}

/// Read one memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetRequest {
    /// Row id.
    pub id: i64,
    /// Return it even when superseded or archived.
    pub include_inactive: bool,
}

/// List memories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListRequest {
    /// Filters.
    pub filter: Filter,
    /// At most this many (the daemon caps it).
    pub limit: u32,
    /// Skip this many.
    pub offset: u32,
}

/// Change a memory. `None` fields are left as they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct UpdateRequest {
    /// Row id.
    pub id: i64,
    /// New text.
    pub content: Option<String>,
    /// New category.
    pub category: Option<String>,
    /// New subject (`Some("")` clears it).
    pub subject: Option<String>,
    /// Replace the tag set.
    pub tags: Option<Vec<String>>,
    /// New scope.
    pub scope: Option<String>,
    /// New tier.
    pub tier: Option<i64>,
    /// Pin or unpin.
    pub pinned: Option<bool>,
    /// New importance.
    pub importance: Option<String>,
    /// New status.
    pub status: Option<String>,
    /// New confidence.
    pub confidence: Option<f64>,
    /// New expiry (`Some("")` clears it).
    pub expires: Option<String>,
    /// Metadata keys to set (a JSON object text, merged into the existing one).
    pub metadata: Option<String>,
    /// Refuse with a conflict unless the row is at this rev.
    pub expect_rev: Option<i64>,
}

/// Delete a memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForgetRequest {
    /// Row id.
    pub id: i64,
    /// Refuse with a conflict unless the row is at this rev.
    pub expect_rev: Option<i64>,
}

/// Search mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum SearchMode {
    /// Lexical, falling back to fuzzy when lexical finds little.
    #[default]
    Auto,
    /// FTS5 BM25 only.
    Lexical,
    /// Typo- and substring-tolerant matching only.
    Fuzzy,
    /// Cosine over embeddings.
    Semantic,
    /// Lexical and semantic merged.
    Hybrid,
}

impl SearchMode {
    /// The mode's name.
    pub fn as_str(self) -> &'static str {
        match self {
            SearchMode::Auto => "auto",
            SearchMode::Lexical => "lexical",
            SearchMode::Fuzzy => "fuzzy",
            SearchMode::Semantic => "semantic",
            SearchMode::Hybrid => "hybrid",
        }
    }

    /// Parses a mode name.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "auto" => Some(SearchMode::Auto),
            "lexical" => Some(SearchMode::Lexical),
            "fuzzy" => Some(SearchMode::Fuzzy),
            "semantic" => Some(SearchMode::Semantic),
            "hybrid" => Some(SearchMode::Hybrid),
            _ => None,
        }
    }
}

/// How the query text is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum QuerySyntax {
    /// Every word is literal.
    #[default]
    Plain,
    /// FTS5 query syntax (operators, phrases, prefixes).
    Fts,
}

/// Search memories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchRequest {
    /// The query text.
    pub query: String,
    /// Filters.
    pub filter: Filter,
    /// At most this many hits.
    pub limit: u32,
    /// Mode.
    pub mode: SearchMode,
    /// Query syntax.
    pub syntax: QuerySyntax,
    /// Return the parts of each score.
    pub explain: bool,
    /// Skip this many of the best hits first (paging with `limit`).
    pub offset: u32,
}

/// Ask for the daemon's status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StatusRequest {}

/// Ask the daemon to stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StopRequest {}
