//! Typed client errors.

use std::path::PathBuf;

use memd_proto::{CodecError, ErrorBody, ErrorCode};

use crate::exit;

/// Everything a client call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No daemon answers on the socket (or it may not be opened: then the
    /// message says whose it is likely to be).
    #[error("{}", unreachable_message(socket, source))]
    Unreachable {
        /// The socket tried.
        socket: PathBuf,
        /// The connect error.
        source: std::io::Error,
    },
    /// The daemon speaks another protocol version.
    #[error(
        "protocol mismatch: this client speaks memd protocol {client}, the daemon speaks {daemon}; \
         restart the daemon with the same memd version as the client: `memd stop` (the next \
         command starts the new one), or `systemctl --user restart memd` when it runs as a \
         service"
    )]
    ProtocolMismatch {
        /// Our version.
        client: u32,
        /// The daemon's version.
        daemon: u32,
    },
    /// The memory does not exist or is not visible to this session.
    #[error("{}", .0.message)]
    NotFound(Box<ErrorBody>),
    /// A rev mismatch, double supersession or invalid transition.
    #[error("{}", .0.message)]
    Conflict(Box<ErrorBody>),
    /// Refused because this session's view is stale.
    #[error("{}", .0.message)]
    Drift(Box<ErrorBody>),
    /// Invalid arguments.
    #[error("{}", .0.message)]
    InvalidInput(Box<ErrorBody>),
    /// Rejected by the write gate; `reason` says why.
    #[error("{}", .0.message)]
    Rejected(Box<ErrorBody>),
    /// Any other error the daemon reported.
    #[error("{}", .0.message)]
    Daemon(Box<ErrorBody>),
    /// The peer broke the protocol (not memd, or a malformed frame).
    #[error("protocol error: {0}")]
    Protocol(String),
    /// A frame from the daemon that the codec refused (malformed, too
    /// large, empty); the codec's error is its source.
    #[error("protocol error: {0}")]
    Frame(#[source] CodecError),
    /// The connection closed before the answer arrived.
    #[error("the daemon closed the connection")]
    Closed,
    /// An I/O error on the connection.
    #[error("I/O error talking to the daemon: {0}")]
    Io(#[from] std::io::Error),
    /// The daemon could not be started.
    #[error("cannot start the memd daemon: {0}")]
    Autostart(String),
}

fn unreachable_message(socket: &std::path::Path, source: &std::io::Error) -> String {
    if source.kind() == std::io::ErrorKind::PermissionDenied {
        format!(
            "cannot open the memd socket {}: {source}; it belongs to another user's daemon \
             (its owner can allow you with `[socket] allow_uids` and `mode`), or use your own \
             with --socket / --data-dir",
            socket.display()
        )
    } else {
        format!("no memd daemon answers on {}: {source}", socket.display())
    }
}

impl From<ErrorBody> for Error {
    fn from(body: ErrorBody) -> Self {
        match body.code {
            ErrorCode::NotFound => Error::NotFound(Box::new(body)),
            ErrorCode::Conflict => Error::Conflict(Box::new(body)),
            ErrorCode::Drift => Error::Drift(Box::new(body)),
            ErrorCode::InvalidInput => Error::InvalidInput(Box::new(body)),
            ErrorCode::Rejected => Error::Rejected(Box::new(body)),
            _ => Error::Daemon(Box::new(body)),
        }
    }
}

impl From<CodecError> for Error {
    fn from(e: CodecError) -> Self {
        match e {
            CodecError::VersionMismatch { ours, theirs } => Error::ProtocolMismatch {
                client: ours,
                daemon: theirs,
            },
            CodecError::TooLarge { len, max } => Error::InvalidInput(Box::new(ErrorBody::new(
                ErrorCode::InvalidInput,
                format!("the request is {len} bytes, over the {max}-byte frame limit"),
            ))),
            other => Error::Frame(other),
        }
    }
}

impl Error {
    /// The daemon's error body, or one made up for a local error, so every
    /// error has the same JSON shape.
    pub fn body(&self) -> ErrorBody {
        match self {
            Error::NotFound(b)
            | Error::Conflict(b)
            | Error::Drift(b)
            | Error::InvalidInput(b)
            | Error::Rejected(b)
            | Error::Daemon(b) => (**b).clone(),
            Error::Unreachable { .. } | Error::Autostart(_) => {
                ErrorBody::new(ErrorCode::Busy, self.to_string())
            }
            Error::ProtocolMismatch { .. } => {
                ErrorBody::new(ErrorCode::ProtocolMismatch, self.to_string())
            }
            Error::Protocol(_) | Error::Frame(_) | Error::Closed | Error::Io(_) => {
                ErrorBody::new(ErrorCode::Internal, self.to_string())
            }
        }
    }

    /// The JSON `code` of this error.
    pub fn code(&self) -> &'static str {
        match self {
            Error::Unreachable { .. } | Error::Autostart(_) => "unreachable",
            Error::Protocol(_) | Error::Frame(_) | Error::Closed | Error::Io(_) => "connection",
            _ => self.body().code.as_str(),
        }
    }

    /// The CLI's exit code (ARCHITECTURE.md "CLI contract"; the table is
    /// [`crate::exit`]): a failure the daemon reported has its code's exit
    /// code; a daemon that cannot be reached, or a connection that breaks,
    /// [`exit::UNREACHABLE`].
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::NotFound(b)
            | Error::Conflict(b)
            | Error::Drift(b)
            | Error::InvalidInput(b)
            | Error::Rejected(b)
            | Error::Daemon(b) => exit::of(b.code),
            Error::Unreachable { .. }
            | Error::ProtocolMismatch { .. }
            | Error::Autostart(_)
            | Error::Protocol(_)
            | Error::Frame(_)
            | Error::Closed
            | Error::Io(_) => exit::UNREACHABLE,
        }
    }
}

/// Result of a client call.
pub type Result<T, E = Error> = std::result::Result<T, E>;
