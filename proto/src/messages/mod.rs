//! Requests, responses and the records they carry: the two enums and
//! the rules on them here; the payloads in `requests`, `replies`,
//! `memory`, `errors` and `events`.
//!
//! bincode encodes enum variants by index and struct fields by position:
//! variants are only ever appended, never reordered or removed, and any
//! change of a struct's fields bumps [`crate::PROTOCOL_VERSION`]. Free-form
//! JSON (metadata, status) travels as JSON text, because bincode cannot carry
//! `serde_json::Value`.

use serde::{Deserialize, Serialize};

mod errors;
mod events;
mod memory;
mod replies;
mod requests;

pub use errors::*;
pub use events::*;
pub use memory::*;
pub use replies::*;
pub use requests::*;

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
