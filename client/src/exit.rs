//! The exit codes of the `memd` command line (ARCHITECTURE.md "CLI
//! contract"), in one place: the constants, and [`of`], which gives the
//! code of each error code the daemon answers with. [`crate::Error::exit_code`]
//! and the CLI's own failures both use them, so a code cannot differ
//! between the library and the command line.

use memd_proto::ErrorCode;

/// Success.
pub const OK: i32 = 0;
/// Any other failure (a memory not found, a failed `check` included).
pub const ERROR: i32 = 1;
/// Usage or invalid input (a mode that needs an embedder the daemon does
/// not have ready included).
pub const USAGE: i32 = 2;
/// Refused by the drift guard: the session's view is stale.
pub const DRIFT: i32 = 3;
/// A rev mismatch, double supersession or invalid task transition.
pub const CONFLICT: i32 = 4;
/// The daemon cannot be reached or speaks another protocol; or the team's
/// PostgreSQL cannot be reached, or stopped answering after a shared write
/// was sent.
pub const UNREACHABLE: i32 = 5;
/// Rejected by the write gate.
pub const REJECTED: i32 = 6;
/// Not allowed: the role this machine connects to the team's PostgreSQL
/// as lacks the right (its grants).
pub const FORBIDDEN: i32 = 7;

/// The exit code of a failure the daemon reported with `code`.
///
/// Exhaustive on purpose: a new [`ErrorCode`] does not compile until it
/// has an exit code.
pub fn of(code: ErrorCode) -> i32 {
    match code {
        ErrorCode::Drift => DRIFT,
        ErrorCode::Conflict => CONFLICT,
        ErrorCode::Rejected => REJECTED,
        ErrorCode::Forbidden => FORBIDDEN,
        ErrorCode::InvalidInput | ErrorCode::NotConfigured => USAGE,
        ErrorCode::ProtocolMismatch
        | ErrorCode::TeamUnavailable
        | ErrorCode::TeamOutcomeUnknown => UNREACHABLE,
        ErrorCode::NotFound
        | ErrorCode::Internal
        | ErrorCode::MalformedFrame
        | ErrorCode::FrameTooLarge
        | ErrorCode::UnknownRequest
        | ErrorCode::HandshakeRequired
        | ErrorCode::ShuttingDown
        | ErrorCode::PermissionDenied
        | ErrorCode::StorageFull
        | ErrorCode::ReadOnly
        | ErrorCode::Busy
        | ErrorCode::TeamUnpushed => ERROR,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_contract_s_codes() {
        for (code, exit) in [
            (ErrorCode::NotFound, 1),
            (ErrorCode::Internal, 1),
            (ErrorCode::InvalidInput, 2),
            (ErrorCode::NotConfigured, 2),
            (ErrorCode::Drift, 3),
            (ErrorCode::Conflict, 4),
            (ErrorCode::ProtocolMismatch, 5),
            (ErrorCode::TeamUnavailable, 5),
            (ErrorCode::TeamOutcomeUnknown, 5),
            (ErrorCode::Forbidden, 7),
            (ErrorCode::Rejected, 6),
            (ErrorCode::PermissionDenied, 1),
        ] {
            assert_eq!(of(code), exit, "{code:?}");
        }
        assert_eq!((OK, FORBIDDEN), (0, 7));
    }
}
