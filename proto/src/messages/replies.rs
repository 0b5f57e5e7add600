//! What the daemon answers: the payload of each [`Response`](super::Response)
//! kind but errors and pushes.

use serde::{Deserialize, Serialize};

use super::errors::{ChangedBy, DriftNotice};
use super::memory::Memory;
use super::requests::{DriftPolicy, SearchMode};

/// A download prepared by the daemon, read with [`Request::Fetch`](crate::Request::Fetch).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DownloadInfo {
    /// Total size in bytes.
    pub size: u64,
    /// What it is, as a JSON object text (counts, generation).
    pub info: String,
}

/// Bytes of a download.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// The bytes.
    pub data: Vec<u8>,
    /// No more bytes after these.
    pub eof: bool,
}

/// A supersession made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SupersedeResult {
    /// The replaced memory.
    pub old: i64,
    /// The replacing memory.
    pub new: i64,
    /// Generation after the write.
    pub generation: u64,
}

/// A supersession chain, oldest first, and the old values of its members.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct History {
    /// The chain, from the first superseded memory to the active one.
    pub chain: Vec<Memory>,
    /// Earlier versions of the chain's memories (updates, deletes), oldest
    /// first.
    pub revisions: Vec<Revision>,
    /// Generation of the read transaction.
    pub generation: u64,
    /// Who made each version memd recorded (a session here or on another
    /// machine, a writer on the team's PostgreSQL); a version without an
    /// entry was made by another tool or by memd's own upkeep.
    pub authors: Vec<VersionAuthor>,
}

/// Who made one version of a memory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionAuthor {
    /// The memory.
    pub memory_id: i64,
    /// The version (its rev).
    pub rev: i64,
    /// Who.
    pub changed_by: ChangedBy,
}

/// An earlier version of a memory, kept by a trigger on every meaningful
/// update or delete (external ones included).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Revision {
    /// Revision row id.
    pub rev_id: i64,
    /// The memory.
    pub memory_id: i64,
    /// `update`, `delete` or `replace`.
    pub op: String,
    /// The memory's rev at the time.
    pub rev: Option<i64>,
    /// Tags at the time (`None` when the revision predates their record).
    pub tags: Option<Vec<String>>,
    /// Content at the time.
    pub content: Option<String>,
    /// Subject at the time.
    pub subject: Option<String>,
    /// Category at the time.
    pub category: Option<String>,
    /// Tier at the time.
    pub tier: Option<i64>,
    /// Status at the time.
    pub status: Option<String>,
    /// Metadata at the time.
    pub metadata: Option<String>,
    /// Supersession at the time.
    pub superseded_by: Option<i64>,
    /// The memory's `updated_at` at the time.
    pub updated_at: Option<String>,
    /// When the revision was recorded.
    pub recorded_at: String,
    /// Generation before the change.
    pub generation: Option<i64>,
}

/// What prune deleted (or would delete).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PruneResult {
    /// Ids of expired memories.
    pub ids: Vec<i64>,
    /// Nothing was deleted.
    pub dry_run: bool,
    /// Generation after the write.
    pub generation: u64,
}

/// The session's frozen memory block: the same bytes at every inject until
/// the session writes, compacts or refreshes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Injection {
    /// The block to put in the prompt.
    pub block: String,
    /// FNV-1a 64 of the block, 16 hex digits.
    pub hash: String,
    /// Generation of the read that built it.
    pub built_at_generation: u64,
    /// Figures about the block (not part of it).
    pub stats: InjectStats,
}

/// Figures about a block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InjectStats {
    /// Memories in the block.
    pub included: u32,
    /// Memories eligible (promoted, active, visible) when it was built.
    pub eligible: u32,
    /// Length in characters.
    pub chars: u32,
    /// The character budget.
    pub budget: u32,
    /// Served from the snapshot (no database read).
    pub cached: bool,
}

/// Bytes received so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UploadAck {
    /// Total bytes in the session's upload.
    pub received: u64,
}

/// The database's health: SQLite's integrity check, the search index's
/// integrity and sync, the schema's required objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckReport {
    /// Every finding below is clean.
    pub ok: bool,
    /// `PRAGMA integrity_check`'s lines: `["ok"]` alone when sound.
    pub integrity: Vec<String>,
    /// The full-text index's own findings (lines starting `fts5`); empty
    /// when sound.
    pub fts_integrity: Vec<String>,
    /// Rows in `memories`.
    pub memories: u64,
    /// Rows in the full-text index.
    pub fts_rows: u64,
    /// Rows whose index entry is missing or differs.
    pub fts_out_of_sync: u64,
    /// Index entries without a row.
    pub fts_orphans: u64,
    /// Required triggers and indexes that are missing.
    pub missing_objects: Vec<String>,
    /// The schema version.
    pub schema_version: i64,
    /// The generation read.
    pub generation: u64,
}

/// What a lifecycle sweep did (or, dry, would do).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SweepReport {
    /// `start`, `schedule` or `manual`.
    pub trigger: String,
    /// Only counted; nothing changed.
    pub dry_run: bool,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// When it ended.
    pub ended_at: String,
    /// Rows touched, by step.
    pub counts: SweepCounts,
}

/// Rows a sweep touched, by step.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SweepCounts {
    /// Rows whose access score decayed.
    pub decayed: u64,
    /// Rows moved down a tier.
    pub demoted: u64,
    /// Rows archived from tier 3.
    pub archived: u64,
    /// Candidates promoted.
    pub promoted: u64,
    /// Rows archived by scope limits.
    pub limited: u64,
    /// Expired rows deleted.
    pub expired: u64,
    /// Session-scope rows of ended sessions archived.
    pub sessions: u64,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImportReport {
    /// Entries in the file.
    pub read: u64,
    /// Entries stored as new rows.
    pub inserted: u64,
    /// Entries whose uid already existed (kept as they were).
    pub skipped: u64,
    /// Existing rows replaced (`--replace`).
    pub replaced: u64,
    /// Supersession links restored.
    pub links: u64,
    /// Links to rows neither in the file nor in the database.
    pub dangling_links: u64,
    /// Entries that did not parse.
    pub invalid: u64,
    /// The first few of those, with their byte offset.
    pub errors: Vec<String>,
}

/// What a restore did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestoreReport {
    /// Size of the restored file.
    pub bytes: u64,
    /// The generation recorded in the file.
    pub generation_in_file: u64,
    /// The generation after the restore (above every earlier one).
    pub generation: u64,
}

/// A re-embedding that has started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReembedReport {
    /// The model now locked.
    pub model: String,
    /// Its dimension.
    pub dim: u64,
    /// The model locked before, if any.
    pub previous_model: Option<String>,
    /// Its dimension.
    pub previous_dim: Option<u64>,
    /// Memories to embed, in the background.
    pub pending: u64,
}

/// The named sessions of a namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionList {
    /// One entry per named session.
    pub sessions: Vec<NamedSessionInfo>,
}

/// One named session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamedSessionInfo {
    /// Its namespace.
    pub namespace: String,
    /// Its name (`<host>:<id>` for agent runtimes).
    pub name: String,
    /// The agent id that opened it.
    pub agent: String,
    /// Connections open on it now.
    pub connections: u64,
    /// Seconds since a connection last opened or closed.
    pub idle_secs: u64,
    /// The generation it has seen.
    pub seen_generation: u64,
    /// Whether its memory block is frozen.
    pub has_block: bool,
}

/// A named session and the block it was given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionDetail {
    /// What the list shows of it.
    pub info: NamedSessionInfo,
    /// Its drift policy.
    pub policy: DriftPolicy,
    /// Its block serves a hook-driven host (changes only at compaction,
    /// clear or refresh).
    pub hold_block: bool,
    /// Its frozen block, byte for byte, once built.
    pub block: Option<Injection>,
    /// When the block was built (RFC 3339), when known.
    pub built_at: Option<String>,
    /// The memories in the block, in its order: (id, rev).
    pub block_rows: Vec<(i64, i64)>,
    /// Rows in its read set.
    pub read_set_rows: u64,
}

/// Where the viewer listens and a one-time code that logs a browser in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UiReport {
    /// `127.0.0.1:PORT` (or `[::1]:PORT`).
    pub address: String,
    /// The login code (`/login?code=`): opens one browser session, once.
    pub code: String,
    /// Seconds the code stays valid.
    pub expires_secs: u64,
}

/// What a capture stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureReport {
    /// Turns stored now.
    pub stored: u64,
    /// Turns stored before (by their identity).
    pub existing: u64,
    /// Secrets replaced by `[redacted:<kind>]`.
    pub redactions: u64,
    /// Turns the write gate would have refused (a stack trace, their
    /// size), stored marked and cut.
    pub marked: u64,
    /// The capture offset now (where the next capture starts).
    pub offset: u64,
    /// The stretch did not start at the capture offset (another hook moved
    /// it first): nothing was stored.
    pub stale: bool,
}

/// One session's capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CaptureState {
    /// The host.
    pub host: String,
    /// The host's session id.
    pub session: String,
    /// The namespace its turns go to.
    pub namespace: String,
    /// The transcript's identity.
    pub file: String,
    /// Its path.
    pub path: String,
    /// Where the next capture starts.
    pub offset: u64,
    /// Turns stored.
    pub turns: u64,
    /// Bytes of their text.
    pub bytes: u64,
    /// Secrets redacted.
    pub redactions: u64,
    /// Turns stored marked (the gate would have refused them).
    pub marked: u64,
    /// Lines that were not JSON.
    pub invalid_lines: u64,
    /// When it last captured.
    pub last_at: Option<String>,
    /// The last error a hook reported.
    pub last_error: Option<String>,
}

/// Where capture stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureStates {
    /// One entry per host and session.
    pub sessions: Vec<CaptureState>,
}

/// What [`ForgetWhereRequest`](crate::ForgetWhereRequest) deleted (or would delete).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ForgottenWhere {
    /// The memories' ids.
    pub ids: Vec<i64>,
    /// Nothing was deleted.
    pub dry_run: bool,
    /// Generation after the write (of the read for a dry run).
    pub generation: u64,
}

/// The namespace a memory lives in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocateReply {
    /// The memory's id.
    pub id: i64,
    /// Its namespace.
    pub namespace: String,
}

/// One memory a purge erases (or would).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeTarget {
    /// The live row's id; `None` for a memory already forgotten whose
    /// revisions still hold the text.
    pub id: Option<i64>,
    /// Its uid.
    pub uid: String,
    /// Its namespace.
    pub namespace: String,
    /// The start of its text (the newest version), to recognise it.
    pub preview: String,
    /// Versions kept in its history.
    pub revisions: u64,
}

/// What a purge erased.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeReport {
    /// The memories.
    pub targets: Vec<PurgeTarget>,
    /// They were erased (`false`: listed only).
    pub purged: bool,
    /// Frozen blocks that held one of them, dropped (each session gets a
    /// new block at its next inject).
    pub blocks_rebuilt: u64,
    /// Drift backups rewritten without them.
    pub backups_rewritten: u64,
    /// Files in the data directory that may still hold the text and that
    /// memd does not rewrite (copies made before a schema migration).
    pub not_rewritten: Vec<String>,
    /// The database files were compacted and the WAL emptied (`false`: a
    /// reader held the WAL; the next purge or a restart finishes it).
    pub scrubbed: bool,
    /// Generation after the purge.
    pub generation: u64,
}

/// What a capture forget removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CaptureForgotten {
    /// Captured turns deleted.
    pub turns: u64,
}

/// A named session that ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEnded {
    /// Its name.
    pub ended: String,
    /// Connections that were still open on it.
    pub connections: u64,
}

/// What a push did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamPushReport {
    /// The namespace.
    pub namespace: String,
    /// Memories uploaded now.
    pub pushed: u64,
    /// Memories PostgreSQL held already (by uid).
    pub already: u64,
    /// Memories PostgreSQL held as another row with the same text (by
    /// dedup key): this machine takes that row instead.
    pub merged: u64,
}

/// What a wake of the team pull found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TeamSyncReport {
    /// Whether the daemon has team memory configured at all.
    pub configured: bool,
    /// Whether every shared namespace is pulled: shared writes may go.
    pub synced: bool,
    /// The last error of the connection, when not synced.
    pub last_error: Option<String>,
}

/// One result per search of a [`SearchBatchRequest`](crate::SearchBatchRequest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchBatchResult {
    /// Results, in the order of the searches.
    pub results: Vec<SearchResult>,
}

/// Session opened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Welcome {
    /// Session key: owner of `session`-scope memories.
    pub session_id: String,
    /// Generation at the handshake (the session's first seen generation).
    pub generation: u64,
    /// Version string of the daemon.
    pub server_version: String,
    /// Protocol version of the daemon.
    pub protocol: u32,
}

/// Outcome of an add (ARCHITECTURE.md "Write gate").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AddResult {
    /// The memory is stored (possibly merged into an existing one).
    pub accepted: bool,
    /// The row that now holds the memory.
    pub id: Option<i64>,
    /// Merged into an exact duplicate.
    pub deduped: bool,
    /// Merged into this near-duplicate.
    pub merged_into: Option<i64>,
    /// A similar memory that was not merged.
    pub similar_to: Option<i64>,
    /// Reason code of the gate's decision, if any.
    pub reason: Option<String>,
    /// Set when the add went through although the session's view is stale.
    pub drift: Option<DriftNotice>,
    /// Generation after the write.
    pub generation: u64,
    /// The namespace requires review (team memory): the add is this
    /// proposal, not a memory yet (`reason` is `proposed`, `id` is `None`).
    pub proposal: Option<i64>,
}

/// One memory and the generation of the read (or write) that produced it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryReply {
    /// The memory.
    pub memory: Memory,
    /// Generation of the read transaction or after the write.
    pub generation: u64,
    /// An update where review is required (team memory): the change is
    /// this proposal, `memory` as proposed; the stored memory is unchanged
    /// until a reviewer approves it.
    pub proposal: Option<i64>,
}

/// A page of memories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryList {
    /// The memories, newest first.
    pub memories: Vec<Memory>,
    /// Generation of the read transaction.
    pub generation: u64,
}

/// A memory was deleted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ForgetResult {
    /// The deleted row's id.
    pub id: i64,
    /// Generation after the delete.
    pub generation: u64,
    /// Where review is required (team memory): the forget is this
    /// proposal; the memory stays until a reviewer approves it.
    pub proposal: Option<i64>,
}

/// How a hit matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MatchKind {
    /// FTS5 BM25.
    Lexical,
    /// Typo/substring matching.
    Fuzzy,
    /// Embedding similarity.
    Semantic,
    /// Lexical and semantic.
    Hybrid,
}

impl MatchKind {
    /// The kind's name.
    pub fn as_str(self) -> &'static str {
        match self {
            MatchKind::Lexical => "lexical",
            MatchKind::Fuzzy => "fuzzy",
            MatchKind::Semantic => "semantic",
            MatchKind::Hybrid => "hybrid",
        }
    }
}

/// One search hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hit {
    /// The memory.
    pub memory: Memory,
    /// Rank among this search's hits; higher is better. Relative: the
    /// best match of any search scores near 1, however weak it is.
    pub score: f64,
    /// How it matched.
    pub matched: MatchKind,
    /// The parts of the score as a JSON object text, when asked for.
    pub explain: Option<String>,
    /// Absolute relevance: the cosine of the query's and the memory's
    /// vectors (0..1, comparable across searches of one embedding model);
    /// `None` when the search ran without a query vector (lexical or fuzzy
    /// search, or no embedder).
    pub relevance: Option<f64>,
}

/// Search results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchResult {
    /// Hits, best first.
    pub hits: Vec<Hit>,
    /// Generation of the read transaction.
    pub generation: u64,
    /// The mode that produced the hits.
    pub mode: SearchMode,
}

/// The daemon's status as a JSON object text (its keys grow with features;
/// docs/commands.md "Output" lists them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusReply {
    /// JSON object text.
    pub json: String,
}
