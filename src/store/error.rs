//! [`StoreError`]: what can go wrong in the store, and [`Cause`], the
//! failure from below it keeps.

use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// A failure from below the store — SQLite, the file system, a task — as a
/// message and, when there was one, the original error.
///
/// The message is the whole story a client reads (the wire carries text
/// only), so it includes the original error's own message; `source()` hands
/// the original error itself to code that inspects it (a `rusqlite::Error`
/// and its extended code, an `io::Error` and its kind). Shared behind an
/// `Arc`, so a [`StoreError`] stays `Clone`.
#[derive(Clone)]
pub struct Cause {
    message: String,
    source: Option<Arc<dyn Error + Send + Sync>>,
}

impl Cause {
    /// A failure with no error below it.
    pub fn msg(message: impl Into<String>) -> Cause {
        Cause {
            message: message.into(),
            source: None,
        }
    }

    /// An error, kept whole.
    pub fn of(source: impl Error + Send + Sync + 'static) -> Cause {
        Cause {
            message: source.to_string(),
            source: Some(Arc::new(source)),
        }
    }

    /// An error told in other words (`message`), kept whole as the source.
    pub fn described(
        message: impl Into<String>,
        source: impl Error + Send + Sync + 'static,
    ) -> Cause {
        Cause {
            message: message.into(),
            source: Some(Arc::new(source)),
        }
    }

    /// An error, with what was being done: `"{what}: {source}"`.
    pub fn context(what: impl fmt::Display, source: impl Error + Send + Sync + 'static) -> Cause {
        Cause {
            message: format!("{what}: {source}"),
            source: Some(Arc::new(source)),
        }
    }
}

impl fmt::Debug for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Cause");
        d.field("message", &self.message);
        if let Some(source) = &self.source {
            d.field("source", source);
        }
        d.finish()
    }
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl Error for Cause {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        self.source.as_deref().map(|e| e as &(dyn Error + 'static))
    }
}

/// What can go wrong in the store. Cloneable, so one commit failure can be
/// reported to every request of its batch: a failure from below (SQLite,
/// the file system, a task) travels as a [`Cause`], which keeps the
/// original error behind an `Arc` as its `source()`.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// No such row, or not visible to the session.
    #[error("memory {0} not found")]
    NotFound(i64),
    /// The memory was erased by `memd purge`: only that fact is kept.
    #[error(
        "memory {id} was erased by memd purge at {at} ({by}): nothing of it is kept, its history \
         included"
    )]
    Purged {
        /// Its id.
        id: i64,
        /// When.
        at: String,
        /// By whom.
        by: String,
    },
    /// `expect_rev` mismatch and similar.
    #[error("{message}")]
    Conflict {
        /// What conflicted.
        message: String,
        /// The row's current rev.
        current_rev: Option<i64>,
    },
    /// Refused by the write gate.
    #[error("{message}")]
    Rejected {
        /// Reason code (`too_large`, `category`, …).
        reason: &'static str,
        /// Explanation.
        message: String,
    },
    /// Invalid request arguments.
    #[error("{0}")]
    InvalidInput(String),
    /// A feature that is not configured or not ready (semantic search
    /// without an embedder, or with vectors of another model).
    #[error("{0}")]
    NotConfigured(String),
    /// The disk is full.
    #[error(
        "the disk holding the database is full ({0}); nothing was written, reads keep working; \
         free some space and retry"
    )]
    StorageFull(#[source] Cause),
    /// The database cannot be written.
    #[error(
        "the database is read-only ({0}); nothing was written, reads keep working; check the \
         permissions of memory.db and its directory, and that the file system is writable"
    )]
    ReadOnly(#[source] Cause),
    /// Another process holds the database lock for too long.
    #[error("the database is locked by another process: {0}")]
    Busy(#[source] Cause),
    /// A write to a shared namespace while the team's PostgreSQL cannot be
    /// reached: nothing was written anywhere, nothing is queued.
    #[error(
        "the team's PostgreSQL cannot be reached ({0}); nothing was written and nothing is \
         queued. Reads and local namespaces keep working; retry once it is back (`memd team \
         status` shows the connection)"
    )]
    TeamUnavailable(String),
    /// A shared write whose COMMIT was sent and whose outcome could not be
    /// learned since (PostgreSQL stopped answering): it may have been
    /// applied.
    #[error(
        "the outcome of this shared write is unknown ({message}): PostgreSQL may have committed \
         it as operation {operation_id}. If it did, memd applies it here once PostgreSQL answers \
         again; look for it (get, search, or `SELECT * FROM memd.ops WHERE op_id = \
         '{operation_id}'`) before writing it again"
    )]
    TeamOutcomeUnknown {
        /// The operation id carried in the write (`memd.ops.op_id`).
        operation_id: String,
        /// What failed.
        message: String,
    },
    /// A shared write the role this machine connects to the team's
    /// PostgreSQL as may not make (row-level security): nothing was
    /// written anywhere.
    #[error("{0}")]
    Forbidden(String),
    /// A write to a shared namespace that holds rows never pushed.
    #[error(
        "namespace `{0}` is shared with the team but holds memories that were never pushed; \
         run `memd team push {0}` first (it uploads them, once)"
    )]
    TeamUnpushed(String),
    /// The file's schema is newer than this binary.
    #[error(
        "the database has schema version {found}, newer than the {supported} this memd supports; \
         upgrade memd (the file was left untouched)"
    )]
    SchemaTooNew {
        /// On-disk version.
        found: i64,
        /// Newest version this binary knows.
        supported: i64,
    },
    /// The file is a SQLite database but not memd's.
    #[error("the file is a SQLite database that memd did not create (no memd_schema table)")]
    NotMemd,
    /// Any other SQLite failure.
    #[error("sqlite: {0}")]
    Sqlite(#[source] Cause),
    /// A file-system failure.
    #[error("{0}")]
    Io(#[source] Cause),
    /// The writer has stopped (the daemon is shutting down).
    #[error("the store is closed")]
    Closed,
    /// Refused by the drift guard: the session's view is stale.
    #[error("{}", .0.message())]
    Drift(Box<crate::drift::refusal::Refusal>),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode as C;
        let code = match &e {
            rusqlite::Error::SqliteFailure(f, _)
            | rusqlite::Error::SqlInputError { error: f, .. } => Some(f.code),
            _ => None,
        };
        // SQLite's message without the statement rusqlite appends to it
        // (`… in SELECT … at offset N`): the text reaches clients and the
        // log, and memd's SQL is no business of theirs.
        let cause = match &e {
            rusqlite::Error::SqlInputError { msg, .. } => Cause::described(msg.clone(), e),
            _ => Cause::of(e),
        };
        match code {
            Some(C::DiskFull) => StoreError::StorageFull(cause),
            Some(C::ReadOnly) => StoreError::ReadOnly(cause),
            Some(C::DatabaseBusy | C::DatabaseLocked) => StoreError::Busy(cause),
            _ => StoreError::Sqlite(cause),
        }
    }
}

impl From<crate::embed::service::NotReady> for StoreError {
    fn from(e: crate::embed::service::NotReady) -> Self {
        StoreError::NotConfigured(e.0)
    }
}

impl From<crate::gate::GateError> for StoreError {
    fn from(e: crate::gate::GateError) -> Self {
        use crate::gate::GateError;
        match e {
            GateError::Rejected { reason, message } => StoreError::Rejected { reason, message },
            GateError::InvalidInput(message) => StoreError::InvalidInput(message),
            GateError::Conflict {
                message,
                current_rev,
            } => StoreError::Conflict {
                message,
                current_rev,
            },
        }
    }
}

impl From<std::io::Error> for StoreError {
    fn from(e: std::io::Error) -> Self {
        StoreError::Io(Cause::of(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sqlite_failure_keeps_its_error_as_the_source() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let e: StoreError = conn.execute("SELEC 1", []).unwrap_err().into();
        let StoreError::Sqlite(cause) = &e else {
            panic!("{e:?}");
        };
        let source = e.source().expect("the variant names its cause");
        assert_eq!(source.to_string(), cause.to_string());
        let below = source.source().expect("the cause keeps the SQLite error");
        assert!(
            below.downcast_ref::<rusqlite::Error>().is_some(),
            "{below:?}"
        );
        assert!(e.to_string().starts_with("sqlite: "), "{e}");
        assert!(e.to_string().contains("SELEC"), "{e}");
        // Cloned for every request of a batch: the source is shared.
        let copy = e.clone();
        assert!(copy.source().and_then(Error::source).is_some());
    }

    #[test]
    fn a_statement_never_reaches_the_message() {
        let conn = rusqlite::Connection::open_in_memory().unwrap();
        let args = vec!["1"; 1001].join(", ");
        let raw = conn
            .prepare(&format!("SELECT max({args}) AS secret_column"))
            .unwrap_err();
        assert!(
            matches!(raw, rusqlite::Error::SqlInputError { .. }),
            "{raw:?}"
        );
        assert!(raw.to_string().contains("secret_column"), "{raw}");
        let e = StoreError::from(raw);
        assert_eq!(e.to_string(), "sqlite: too many arguments on function max");
        // The statement stays in the source, for a debugger.
        let below = e.source().and_then(Error::source).unwrap();
        assert!(below.to_string().contains("secret_column"));
    }

    #[test]
    fn an_io_failure_keeps_its_kind() {
        let e: StoreError = std::io::Error::from(std::io::ErrorKind::PermissionDenied).into();
        let io = e
            .source()
            .and_then(Error::source)
            .and_then(|s| s.downcast_ref::<std::io::Error>())
            .expect("the io::Error below");
        assert_eq!(io.kind(), std::io::ErrorKind::PermissionDenied);
        assert!(Cause::msg("plain").source().is_none());
        assert_eq!(
            Cause::context("reading x", std::io::Error::other("boom")).to_string(),
            "reading x: boom"
        );
    }
}
