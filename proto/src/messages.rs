//! Requests, responses and the records they carry.
//!
//! bincode encodes enum variants by index and struct fields by position:
//! variants are only ever appended, never reordered or removed, and any
//! change of a struct's fields bumps [`crate::PROTOCOL_VERSION`]. Free-form
//! JSON (metadata, status) travels as JSON text, because bincode cannot carry
//! `serde_json::Value`.

use serde::{Deserialize, Serialize};

/// One message on the wire. `id` pairs a response with its request; `0` is
/// reserved for pushes from the daemon ([`Response::Event`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Frame<B> {
    /// Request id chosen by the client (never 0), echoed in the response.
    pub id: u64,
    /// The message.
    pub body: B,
}

/// Frame id of pushes from the daemon.
pub const PUSH_ID: u64 = 0;

/// Everything a client can ask. Append only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Request {
    /// First request of every connection: opens the session.
    Hello(Hello),
    /// Store a memory through the write gate.
    Add(AddRequest),
    /// Read one memory by id.
    Get(GetRequest),
    /// List memories with filters, newest first.
    List(ListRequest),
    /// Change fields of a memory.
    Update(UpdateRequest),
    /// Delete a memory.
    Forget(ForgetRequest),
    /// Full-text search.
    Search(SearchRequest),
    /// Daemon status (JSON).
    Status(StatusRequest),
    /// Ask the daemon to shut down gracefully.
    Stop(StopRequest),
    /// Receive drift events as pushes (frame id 0) from now on.
    Subscribe(SubscribeRequest),
    /// Integrity report: SQLite, FTS, triggers.
    Check(CheckRequest),
    /// Append bytes to this session's upload (for restore and import).
    Upload(UploadChunk),
    /// Replace the database with the uploaded SQLite file.
    Restore(RestoreRequest),
    /// The session's frozen memory block.
    Inject(InjectRequest),
    /// The agent compacted its context: rebuild the block at the next inject.
    Compacted(CompactedRequest),
    /// Rebuild the block at the next inject.
    Refresh(RefreshRequest),
    /// Mark a memory as replaced by another.
    Supersede(SupersedeRequest),
    /// A memory's supersession chain and revisions.
    History(HistoryRequest),
    /// Count a confirmation of a memory.
    Confirm(ConfirmRequest),
    /// Delete expired memories.
    Prune(PruneRequest),
    /// Move a task to another state.
    Task(TaskRequest),
    /// Run a lifecycle sweep now.
    Sweep(SweepRequest),
    /// Prepare an export for download.
    Export(ExportRequest),
    /// Prepare an online backup (a SQLite file) for download.
    Backup(BackupRequest),
    /// Read the next bytes of the prepared download.
    Fetch(FetchRequest),
    /// Import the uploaded export or drift backup.
    Import(ImportRequest),
    /// Rebuild every stored vector with the daemon's embedder.
    Reembed(ReembedRequest),
    /// Several searches in one request (their queries embedded in one batch).
    SearchBatch(SearchBatchRequest),
    /// The named sessions of the session's namespace.
    SessionList(SessionListRequest),
    /// End a named session of the namespace.
    SessionEnd(SessionEndRequest),
    /// Share a local namespace with the team: upload its memories
    /// (idempotent by uid).
    TeamPush(TeamPushRequest),
    /// Wake the team pull now (after `memd team init`, a server back): it
    /// reconnects and catches up; answered once it did or failed.
    TeamSync(TeamSyncRequest),
    /// What a named session was told (its block and the memories in it).
    SessionShow(SessionShowRequest),
    /// Open the viewer's loopback listener (when it is not open) and name
    /// its address and token.
    Ui(UiRequest),
    /// Store a stretch of an agent host's transcript (captured turns) and
    /// move its capture offset, in one transaction.
    Capture(CaptureRequest),
    /// Where capture stands, per host and session.
    CaptureStatus(CaptureStatusRequest),
    /// Remove a session's captured turns and its capture state.
    CaptureForget(CaptureForgetRequest),
    /// Erase memories and every trace of their text this machine keeps
    /// (or, unconfirmed, list what would be erased).
    Purge(PurgeRequest),
    /// The namespace a memory lives in, whichever namespace the session
    /// is in (a person's by-id commands act on a memory wherever it lives;
    /// an agent's tools never ask).
    Locate(LocateRequest),
    /// Delete every memory of a thread, of a source, or of both, in the
    /// session's namespace (`memd forget --thread T`, `--source ingest`).
    ForgetWhere(ForgetWhereRequest),
    /// The live memories that cite code, of the session's namespace (and
    /// the person's own): a client checks them in its checkout.
    Citations(crate::cite::CitationsRequest),
    /// Record the verdicts a client computed on citations in its checkout.
    Verdicts(crate::cite::VerdictReport),
}

impl Request {
    /// Every kind, in the enum's order (a kind's position is its tag on the
    /// wire): a tag past the end is a kind this side does not know.
    pub const KINDS: &[&str] = &[
        "hello",
        "add",
        "get",
        "list",
        "update",
        "forget",
        "search",
        "status",
        "stop",
        "subscribe",
        "check",
        "upload",
        "restore",
        "inject",
        "compacted",
        "refresh",
        "supersede",
        "history",
        "confirm",
        "prune",
        "task",
        "sweep",
        "export",
        "backup",
        "fetch",
        "import",
        "reembed",
        "search_batch",
        "session_list",
        "session_end",
        "team_push",
        "team_sync",
        "session_show",
        "ui",
        "capture",
        "capture_status",
        "capture_forget",
        "purge",
        "locate",
        "forget_where",
        "citations",
        "verdicts",
    ];

    /// The request's kind: a stable snake_case name, for logs and for
    /// naming its handler (`handler/<kind>.rs` in the daemon).
    pub fn kind(&self) -> &'static str {
        match self {
            Request::Hello(_) => "hello",
            Request::Add(_) => "add",
            Request::Get(_) => "get",
            Request::List(_) => "list",
            Request::Update(_) => "update",
            Request::Forget(_) => "forget",
            Request::Search(_) => "search",
            Request::Status(_) => "status",
            Request::Stop(_) => "stop",
            Request::Subscribe(_) => "subscribe",
            Request::Check(_) => "check",
            Request::Upload(_) => "upload",
            Request::Restore(_) => "restore",
            Request::Inject(_) => "inject",
            Request::Compacted(_) => "compacted",
            Request::Refresh(_) => "refresh",
            Request::Supersede(_) => "supersede",
            Request::History(_) => "history",
            Request::Confirm(_) => "confirm",
            Request::Prune(_) => "prune",
            Request::Task(_) => "task",
            Request::Sweep(_) => "sweep",
            Request::Export(_) => "export",
            Request::Backup(_) => "backup",
            Request::Fetch(_) => "fetch",
            Request::Import(_) => "import",
            Request::Reembed(_) => "reembed",
            Request::SearchBatch(_) => "search_batch",
            Request::SessionList(_) => "session_list",
            Request::SessionEnd(_) => "session_end",
            Request::TeamPush(_) => "team_push",
            Request::TeamSync(_) => "team_sync",
            Request::SessionShow(_) => "session_show",
            Request::Ui(_) => "ui",
            Request::Capture(_) => "capture",
            Request::CaptureStatus(_) => "capture_status",
            Request::CaptureForget(_) => "capture_forget",
            Request::Purge(_) => "purge",
            Request::Locate(_) => "locate",
            Request::ForgetWhere(_) => "forget_where",
            Request::Citations(_) => "citations",
            Request::Verdicts(_) => "verdicts",
        }
    }
}

/// The requests whose reply shows the session rows of the database: their
/// reply's generation becomes what the session has seen (see
/// [`Response::seen_generation`]).
pub const READ_KINDS: &[&str] = &[
    "get",
    "list",
    "search",
    "search_batch",
    "history",
    "inject",
    "export",
];

impl Response {
    /// The generation a session has seen once it receives this reply to a
    /// request of kind `kind` ([`Request::kind`]): the one rule the daemon
    /// and the client share for moving a session's seen generation
    /// (forward only; ARCHITECTURE.md "Drift").
    ///
    /// - a read ([`READ_KINDS`]) moves it to the generation of its read
    ///   transaction — for a warm `inject`, to the block's
    ///   `built_at_generation`, never to a newer one, since the prompt
    ///   still shows the old block;
    /// - a refusal on the whole view (external or strict rule) moves it to
    ///   the generation the refusal saw (see [`ErrorBody::seen_generation`]);
    /// - anything else, the session's own writes included, moves nothing.
    pub fn seen_generation(&self, kind: &str) -> Option<u64> {
        if let Response::Error(body) = self {
            return body.seen_generation();
        }
        if !READ_KINDS.contains(&kind) {
            return None;
        }
        match self {
            Response::Memory(r) => Some(r.generation),
            Response::Memories(l) => Some(l.generation),
            Response::Hits(r) => Some(r.generation),
            Response::HitsBatch(b) => b.results.iter().map(|r| r.generation).max(),
            Response::History(h) => Some(h.generation),
            Response::Injected(i) => Some(i.built_at_generation),
            Response::Download(d) => serde_json::from_str::<serde_json::Value>(&d.info)
                .ok()?
                .get("generation")?
                .as_u64(),
            _ => None,
        }
    }
}

/// Everything the daemon answers. Append only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Response {
    /// Answer to [`Request::Hello`].
    Welcome(Welcome),
    /// Answer to [`Request::Add`].
    Added(AddResult),
    /// One memory: answer to [`Request::Get`] and [`Request::Update`].
    Memory(Box<MemoryReply>),
    /// Answer to [`Request::List`].
    Memories(MemoryList),
    /// Answer to [`Request::Forget`].
    Forgotten(ForgetResult),
    /// Answer to [`Request::Search`].
    Hits(SearchResult),
    /// Answer to [`Request::Status`].
    Status(StatusReply),
    /// Answer to [`Request::Stop`]: the daemon is shutting down.
    Stopping,
    /// The request failed; nothing was changed.
    Error(ErrorBody),
    /// Answer to [`Request::Subscribe`].
    Subscribed,
    /// Answer to [`Request::Check`] (the slot of v6's JSON `Report`).
    Checked(CheckReport),
    /// Answer to [`Request::Upload`].
    Uploaded(UploadAck),
    /// A push from the daemon (frame id 0).
    Event(Event),
    /// Answer to [`Request::Inject`].
    Injected(Injection),
    /// Answer to [`Request::Compacted`] and [`Request::Refresh`]: the
    /// session's snapshot is dropped.
    Invalidated,
    /// Answer to [`Request::Supersede`].
    Superseded(SupersedeResult),
    /// Answer to [`Request::History`].
    History(History),
    /// Answer to [`Request::Prune`].
    Pruned(PruneResult),
    /// Answer to [`Request::Export`] and [`Request::Backup`]: a download is
    /// ready.
    Download(DownloadInfo),
    /// Answer to [`Request::Fetch`].
    Chunk(Chunk),
    /// Answer to [`Request::SearchBatch`]: one result per search, in order.
    HitsBatch(SearchBatchResult),
    /// Answer to [`Request::Sweep`].
    Swept(SweepReport),
    /// Answer to [`Request::Import`].
    Imported(ImportReport),
    /// Answer to [`Request::Restore`].
    Restored(RestoreReport),
    /// Answer to [`Request::Reembed`]: the re-embedding has started.
    Reembedding(ReembedReport),
    /// Answer to [`Request::SessionList`].
    Sessions(SessionList),
    /// Answer to [`Request::SessionEnd`].
    SessionEnded(SessionEnded),
    /// Answer to [`Request::TeamPush`].
    TeamPushed(TeamPushReport),
    /// Answer to [`Request::TeamSync`].
    TeamSynced(TeamSyncReport),
    /// Answer to [`Request::SessionShow`].
    SessionShown(Box<SessionDetail>),
    /// Answer to [`Request::Ui`].
    UiOpened(UiReport),
    /// Answer to [`Request::Capture`].
    Captured(CaptureReport),
    /// Answer to [`Request::CaptureStatus`].
    CaptureStates(CaptureStates),
    /// Answer to [`Request::CaptureForget`].
    CaptureForgotten(CaptureForgotten),
    /// Answer to [`Request::Purge`].
    Purged(PurgeReport),
    /// Answer to [`Request::Locate`].
    Located(LocateReply),
    /// Answer to [`Request::ForgetWhere`].
    ForgottenWhere(ForgottenWhere),
    /// Answer to [`Request::Citations`].
    Citations(crate::cite::CitationList),
    /// Answer to [`Request::Verdicts`].
    VerdictsRecorded(crate::cite::VerdictsRecorded),
}

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

/// A download prepared by the daemon, read with [`Request::Fetch`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DownloadInfo {
    /// Total size in bytes.
    pub size: u64,
    /// What it is, as a JSON object text (counts, generation).
    pub info: String,
}

/// Read bytes of the download.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FetchRequest {
    /// Offset in the download.
    pub offset: u64,
    /// At most this many bytes (capped by the daemon).
    pub len: u32,
}

/// Bytes of a download.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Chunk {
    /// The bytes.
    pub data: Vec<u8>,
    /// No more bytes after these.
    pub eof: bool,
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

/// Ask for a memory's history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HistoryRequest {
    /// Any member of the chain.
    pub id: i64,
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

/// Bytes received so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UploadAck {
    /// Total bytes in the session's upload.
    pub received: u64,
}

/// Restore the uploaded SQLite file into the live database.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct RestoreRequest {}

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

/// Show what a named session was told: its frozen block and the
/// memories in it (read only: nothing is built, the session is not joined).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SessionShowRequest {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
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

/// Open the viewer's listener and log a browser in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct UiRequest {
    /// Make a new token first: every browser session and login code given
    /// before ends.
    pub new_token: bool,
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

/// Ask where capture stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CaptureStatusRequest {
    /// Only this host.
    pub host: Option<String>,
    /// Only this session.
    pub session: Option<String>,
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

/// What [`ForgetWhereRequest`] deleted (or would delete).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ForgottenWhere {
    /// The memories' ids.
    pub ids: Vec<i64>,
    /// Nothing was deleted.
    pub dry_run: bool,
    /// Generation after the write (of the read for a dry run).
    pub generation: u64,
}

/// Where a memory lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct LocateRequest {
    /// The memory's id.
    pub id: i64,
}

/// The namespace a memory lives in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LocateReply {
    /// The memory's id.
    pub id: i64,
    /// Its namespace.
    pub namespace: String,
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

/// Upload a namespace's memories to the team's PostgreSQL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TeamPushRequest {
    /// The namespace (it must match `[team] namespaces`).
    pub namespace: String,
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

/// Wake the team pull and wait until it reconnected and caught up (or
/// failed to).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct TeamSyncRequest {}

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

/// One result per search of a [`SearchBatchRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchBatchResult {
    /// Results, in the order of the searches.
    pub results: Vec<SearchResult>,
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

/// A stored memory: the SQL columns of `memories` plus its tags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct Memory {
    /// Row id; never reused.
    pub id: i64,
    /// Stable identity across export and import.
    pub uid: String,
    /// Namespace.
    pub namespace: String,
    /// `project`, `agent` or `session`.
    pub scope: String,
    /// Agent id or session key for `agent`/`session` scope.
    pub scope_owner: Option<String>,
    /// The text.
    pub content: String,
    /// Optional subject line.
    pub subject: Option<String>,
    /// Category from the allowlist.
    pub category: String,
    /// 1 (hot) to 3 (cold).
    pub tier: i64,
    /// `low`, `medium` or `high`.
    pub importance: String,
    /// 0.0 to 1.0.
    pub confidence: f64,
    /// Pinned memories sort first and skip decay.
    pub pinned: bool,
    /// `candidate`, `promoted` or `archived`.
    pub status: String,
    /// A JSON object, as text.
    pub metadata: String,
    /// Lower-cased tags, sorted.
    pub tags: Vec<String>,
    /// Id of the memory that replaced this one.
    pub superseded_by: Option<i64>,
    /// When it was superseded.
    pub superseded_at: Option<String>,
    /// Normalized content used for exact dedup.
    pub dedupe_key: Option<String>,
    /// How many times this memory was written (dedup merges count).
    pub observation_count: i64,
    /// How many times it was confirmed.
    pub confirmed_count: i64,
    /// Last confirmation time.
    pub last_confirmed_at: Option<String>,
    /// How many times it was returned by a read.
    pub use_count: i64,
    /// Last time it was returned by a read.
    pub last_used_at: Option<String>,
    /// Decayed access score.
    pub access_score: f64,
    /// `agent`, `user`, `system`, `import` or `external`.
    pub source: String,
    /// Agent id that created it.
    pub created_by: Option<String>,
    /// Expiry time (RFC 3339), if any.
    pub expires_at: Option<String>,
    /// Creation time (RFC 3339, UTC, milliseconds).
    pub created_at: String,
    /// Time of the last meaningful change.
    pub updated_at: String,
    /// Row version: +1 on every meaningful change (tags included).
    pub rev: i64,
    /// Generation of the row's last meaningful change: it moves exactly
    /// when `rev` moves, whoever made the change.
    pub changed_generation: i64,
    /// The conversation or session the memory comes from, if any.
    pub thread: Option<String>,
    /// Its position in the thread.
    pub thread_pos: Option<i64>,
    /// When what it tells happened (RFC 3339), if not when it was stored.
    pub occurred_at: Option<String>,
    /// For a turn captured from an agent host's conversation: where it came
    /// from (`<host>:<session>:<line id>`), unique.
    pub turn: Option<String>,
    /// Where it came from, and every source a merge added (`None` for a row
    /// not read from this machine's database: a team row in transit).
    #[serde(default)]
    pub provenance: Option<Provenance>,
}

/// Where a memory came from: its origin, then each source a merge of a
/// duplicate added, and the lowest trust among them (a merge never raises
/// it: an agent's guess merged into a person's note stays marked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Provenance {
    /// `high` (a person), `medium` (an agent, an import, memd itself) or
    /// `low` (another tool, a captured turn): the lowest of `sources`.
    pub trust: String,
    /// The origin first, then the merged sources, oldest first.
    pub sources: Vec<Origin>,
}

/// One source of a memory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Origin {
    /// `user` (a person), `agent`, `capture`, `import`, `external` (another
    /// tool) or `system` (memd).
    pub source: String,
    /// How it came: `cli`, `viewer`, `http`, `mcp`, `hook`, `agent-cli`
    /// (the CLI run by an agent), `client` (another program through the
    /// client library), `team` (another machine, through PostgreSQL);
    /// `None` when not known (another tool's insert, an older row).
    pub via: Option<String>,
    /// The agent.
    pub agent: Option<String>,
    /// The session.
    pub session: Option<String>,
    /// Another machine (team memory).
    pub machine: Option<String>,
    /// The PostgreSQL role that wrote it (team memory).
    pub role: Option<String>,
    /// When (RFC 3339, UTC).
    pub at: String,
}

impl Origin {
    /// The source on one line: `agent via mcp (claude-code, session …) on
    /// bob-laptop as role bob at …`.
    pub fn line(&self) -> String {
        let mut s = self.source.clone();
        if let Some(via) = &self.via {
            s.push_str(&format!(" via {via}"));
        }
        let who: Vec<String> = [
            self.agent.clone(),
            self.session.as_ref().map(|x| format!("session {x}")),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !who.is_empty() {
            s.push_str(&format!(" ({})", who.join(", ")));
        }
        if let Some(m) = &self.machine {
            s.push_str(&format!(" on {m}"));
        }
        if let Some(r) = &self.role {
            s.push_str(&format!(" as role {r}"));
        }
        s.push_str(&format!(" at {}", self.at));
        s
    }

    /// How far a source is trusted: 3 a person, 2 an agent, an import or
    /// memd, 1 another tool, a captured turn or an ingested one (`ingest`:
    /// what was said in a conversation, not what someone chose to keep).
    pub fn trust_rank(&self) -> u8 {
        match self.source.as_str() {
            "user" => 3,
            "agent" | "import" | "system" => 2,
            _ => 1,
        }
    }
}

impl Provenance {
    /// The provenance of `sources` (origin first): trust is the lowest.
    pub fn of(sources: Vec<Origin>) -> Provenance {
        let rank = sources.iter().map(Origin::trust_rank).min().unwrap_or(1);
        let trust = match rank {
            3 => "high",
            2 => "medium",
            _ => "low",
        };
        Provenance {
            trust: trust.into(),
            sources,
        }
    }
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

/// An add that went through on a stale view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftNotice {
    /// The session's seen generation.
    pub generation_observed: u64,
    /// The generation when the add was committed.
    pub generation_actual: u64,
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

/// A page of memories.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryList {
    /// The memories, newest first.
    pub memories: Vec<Memory>,
    /// Generation of the read transaction.
    pub generation: u64,
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

/// Ask for the daemon's status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StatusRequest {}

/// The daemon's status as a JSON object text (its keys grow with features;
/// docs/commands.md "Output" lists them).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusReply {
    /// JSON object text.
    pub json: String,
}

/// Ask the daemon to stop.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct StopRequest {}

/// Stable error codes. Append only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ErrorCode {
    /// A bug or an unexpected storage failure.
    Internal,
    /// The request's arguments are invalid.
    InvalidInput,
    /// No such memory (or not visible to this session).
    NotFound,
    /// `expect_rev` mismatch, double supersession, invalid transition.
    Conflict,
    /// Refused because the session's view is stale.
    Drift,
    /// Rejected by the write gate.
    Rejected,
    /// Client and daemon speak different protocol versions.
    ProtocolMismatch,
    /// A frame that did not decode.
    MalformedFrame,
    /// A frame over the size limit.
    FrameTooLarge,
    /// A request kind the daemon does not know.
    UnknownRequest,
    /// A request before `Hello`, or a second `Hello`.
    HandshakeRequired,
    /// The daemon is shutting down.
    ShuttingDown,
    /// A feature that is not configured (e.g. semantic search without an
    /// embedder).
    NotConfigured,
    /// The peer is not allowed.
    PermissionDenied,
    /// The disk is full.
    StorageFull,
    /// The database is read-only.
    ReadOnly,
    /// Too many connections or requests.
    Busy,
    /// A write to a shared namespace while the team's PostgreSQL cannot be
    /// reached (nothing was written, nothing is queued).
    TeamUnavailable,
    /// A write to a namespace that became shared while it holds memories
    /// never pushed to the team (`memd team push NAMESPACE`).
    TeamUnpushed,
    /// A shared write whose outcome could not be learned: PostgreSQL may
    /// have committed it (the error's `operation_id` names it).
    TeamOutcomeUnknown,
    /// A shared write the role this machine connects to the team's
    /// PostgreSQL as may not make (its grants): nothing was written.
    Forbidden,
}

impl ErrorCode {
    /// The code's name in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::Internal => "internal",
            ErrorCode::InvalidInput => "invalid_input",
            ErrorCode::NotFound => "not_found",
            ErrorCode::Conflict => "conflict",
            ErrorCode::Drift => "drift",
            ErrorCode::Rejected => "rejected",
            ErrorCode::ProtocolMismatch => "protocol_mismatch",
            ErrorCode::MalformedFrame => "malformed_frame",
            ErrorCode::FrameTooLarge => "frame_too_large",
            ErrorCode::UnknownRequest => "unknown_request",
            ErrorCode::HandshakeRequired => "handshake_required",
            ErrorCode::ShuttingDown => "shutting_down",
            ErrorCode::NotConfigured => "not_configured",
            ErrorCode::PermissionDenied => "permission_denied",
            ErrorCode::StorageFull => "storage_full",
            ErrorCode::ReadOnly => "read_only",
            ErrorCode::Busy => "busy",
            ErrorCode::TeamUnavailable => "team_unavailable",
            ErrorCode::TeamUnpushed => "team_unpushed",
            ErrorCode::TeamOutcomeUnknown => "team_outcome_unknown",
            ErrorCode::Forbidden => "forbidden",
        }
    }
}

/// Which rule of the drift guard refused a request. Append only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum DriftRule {
    /// An external change (another tool wrote the file) newer than the
    /// session's view.
    External,
    /// The target row changed after the version this session last saw.
    Row,
    /// `strict`: another session's commit in the namespace newer than the
    /// session's view.
    Strict,
}

impl DriftRule {
    /// The rule's name in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            DriftRule::External => "external",
            DriftRule::Row => "row",
            DriftRule::Strict => "strict",
        }
    }
}

/// Who made a change. Append only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChangeKind {
    /// A session of the daemon.
    Session,
    /// The daemon itself: sweeps, expiry, automatic supersession.
    Daemon,
    /// A writer outside memd (a generation the daemon did not commit).
    External,
    /// The daemon's commit log no longer reaches back that far.
    Unknown,
}

impl ChangeKind {
    /// The kind's name in JSON output.
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Session => "session",
            ChangeKind::Daemon => "daemon",
            ChangeKind::External => "external",
            ChangeKind::Unknown => "unknown",
        }
    }
}

/// The author of a change, as far as the daemon knows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChangedBy {
    /// Session, daemon, external or unknown.
    pub kind: ChangeKind,
    /// The session's agent id (kind `session`).
    pub agent: Option<String>,
    /// The session's id or name (kind `session`).
    pub session: Option<String>,
    /// The machine of another machine's session (team memory; `None`: this
    /// machine).
    pub machine: Option<String>,
}

/// Details of a row-rule refusal: the row as it is now and who changed it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RowDrift {
    /// The row as it is now. Showing it is not a read: the same write is
    /// refused again until the session reads the row.
    pub current: Memory,
    /// Who made the row's last change.
    pub changed_by: ChangedBy,
    /// When (the row's `updated_at`).
    pub changed_at: String,
    /// The rev this session last saw (`None`: it never read the row).
    pub rev_seen: Option<i64>,
    /// The row's rev now.
    pub rev_now: i64,
}

/// Details of a drift refusal (the drift guard).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftDetails {
    /// Absolute path of the backup holding every row (empty for a row-rule
    /// refusal, which needs none: the row is still in the database).
    pub drift_backup: String,
    /// What to do next.
    pub remediation: String,
    /// The session's seen generation.
    pub generation_observed: u64,
    /// The current generation.
    pub generation_actual: u64,
    /// The rule that refused.
    pub rule: DriftRule,
    /// The row, for a row-rule refusal.
    pub row: Option<Box<RowDrift>>,
}

/// A failed request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// Stable code.
    pub code: ErrorCode,
    /// Human-readable explanation, including what to do.
    pub message: String,
    /// Reason code of a write-gate rejection (`too_large`, `secret`, …).
    pub reason: Option<String>,
    /// The row's current rev, for a rev conflict.
    pub current_rev: Option<i64>,
    /// Details of a drift refusal.
    pub drift: Option<DriftDetails>,
    /// The operation id of a shared write whose outcome is unknown
    /// (`team_outcome_unknown`): what to look for in `memd.ops`.
    pub operation_id: Option<String>,
}

impl ErrorBody {
    /// The generation a refusal moves the session's seen generation to: a
    /// refusal on the whole view (the session reviewed what changed, so
    /// the retry passes that rule) moves it to the generation it saw; a
    /// row-rule refusal moves nothing (the session must read the row
    /// again).
    pub fn seen_generation(&self) -> Option<u64> {
        self.drift
            .as_ref()
            .filter(|d| d.rule != DriftRule::Row)
            .map(|d| d.generation_actual)
    }

    /// An error with only a code and a message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ErrorBody {
            code,
            message: message.into(),
            reason: None,
            current_rev: None,
            drift: None,
            operation_id: None,
        }
    }
}
