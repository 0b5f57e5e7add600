//! A failed request's answer: error codes, the drift guard's rules and
//! details, the error body.

use serde::{Deserialize, Serialize};

use super::memory::Memory;

/// An add that went through on a stale view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DriftNotice {
    /// The session's seen generation.
    pub generation_observed: u64,
    /// The generation when the add was committed.
    pub generation_actual: u64,
}

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
