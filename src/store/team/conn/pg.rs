//! Connections to the team's PostgreSQL: TLS as `sslmode` asks, the
//! password where libpq keeps it, every call bounded by `timeout_ms`, and
//! the notifications of `LISTEN` handed to the pull.

use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_postgres::{AsyncMessage, Client, NoTls};

use super::super::TeamError;
use super::config::{SslMode, Target, password_for, tls_config};

/// One open connection: the client, the task that drives it, and (for the
/// pull's connection) the notifications it received.
pub struct Link {
    /// The client.
    pub client: Client,
    driver: JoinHandle<()>,
    /// `pg_notify` payloads, when the link listens.
    pub notices: Option<mpsc::UnboundedReceiver<String>>,
}

/// A server process (backend), told apart from a later one that reuses its
/// pid by its start time: what an abandoned transaction is concluded by
/// (learned inside that transaction: through a pooler, each transaction
/// may run on another one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    /// `pg_backend_pid()`.
    pub pid: i32,
    /// `backend_start` in `pg_stat_activity`, as text.
    pub started: String,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

impl Link {
    /// Whether the connection has ended (the server went away).
    pub fn is_closed(&self) -> bool {
        self.client.is_closed() || self.driver.is_finished()
    }
}

/// Opens a connection within `timeout`. With `listen`, its notifications
/// are collected (the caller sends `LISTEN`).
///
/// # Errors
/// [`TeamError::Unavailable`] when the server cannot be reached, refuses
/// the login or does not answer in time, with the reason.
pub async fn connect(target: &Target, timeout: Duration, listen: bool) -> Result<Link, TeamError> {
    let mut pg = target.pg.clone();
    if let Some(password) = password_for(target, |k| std::env::var(k).ok()) {
        pg.password(password);
    }
    pg.connect_timeout(timeout);
    let (tx, rx) = mpsc::unbounded_channel();
    let tx = listen.then_some(tx);
    let attempt = async {
        if target.ssl == SslMode::Disable {
            let (client, conn) = pg.connect(NoTls).await.map_err(|e| unavailable(&e))?;
            Ok::<_, TeamError>((client, tokio::spawn(drive(conn, tx))))
        } else {
            let tls = tls_config(target, |k| std::env::var(k).ok())
                .map_err(|e| TeamError::Unavailable(format!("TLS settings: {e}")))?;
            let connector = tokio_postgres_rustls::MakeRustlsConnect::new((*tls).clone());
            let (client, conn) = pg.connect(connector).await.map_err(|e| unavailable(&e))?;
            Ok((client, tokio::spawn(drive(conn, tx))))
        }
    };
    let (client, driver) = tokio::time::timeout(timeout, attempt).await.map_err(|_| {
        TeamError::Unavailable(format!(
            "{} did not answer within {} ms (team.timeout_ms)",
            target.display(),
            timeout.as_millis()
        ))
    })??;
    Ok(Link {
        client,
        driver,
        notices: listen.then_some(rx),
    })
}

/// Drives a connection until it ends, forwarding notifications.
async fn drive<S, T>(
    mut conn: tokio_postgres::Connection<S, T>,
    notices: Option<mpsc::UnboundedSender<String>>,
) where
    S: AsyncRead + AsyncWrite + Unpin,
    T: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        match std::future::poll_fn(|cx| conn.poll_message(cx)).await {
            Some(Ok(AsyncMessage::Notification(n))) => {
                if let Some(tx) = &notices {
                    let _ = tx.send(n.payload().to_string());
                }
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => {
                tracing::debug!(error = %describe(&e), "team connection ended");
                break;
            }
            None => break,
        }
    }
}

/// A PostgreSQL error as a person reads it: the server's message and code,
/// or the client's reason with its cause.
pub fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = format!("{} ({})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            s.push_str(": ");
            s.push_str(detail);
        }
        return s;
    }
    let mut s = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        s.push_str(": ");
        s.push_str(&cause.to_string());
        source = cause.source();
    }
    s
}

fn unavailable(e: &tokio_postgres::Error) -> TeamError {
    classify(e)
}

/// What memd makes of a PostgreSQL failure, by its cause — the one table:
/// a refused privilege or login is [`TeamError::Forbidden`] (a person
/// must act: a grant, a password); everything else is
/// [`TeamError::Unavailable`] (nothing was written), its message naming
/// the cause and what fixes it: no such database, no connection slot left,
/// a read-only server (a standby), TLS, the network.
pub fn classify(e: &tokio_postgres::Error) -> TeamError {
    use tokio_postgres::error::SqlState;
    let text = describe(e);
    let Some(code) = e.code() else {
        return TeamError::Unavailable(cause_of_client_error(&text));
    };
    let (forbidden, hint) = match code {
        c if *c == SqlState::INSUFFICIENT_PRIVILEGE => (
            true,
            "the role lacks a privilege PostgreSQL requires; an administrator grants it \
             (docs/team.md, \"People and rights\")",
        ),
        c if *c == SqlState::INVALID_PASSWORD
            || *c == SqlState::INVALID_AUTHORIZATION_SPECIFICATION =>
        {
            (
                true,
                "PostgreSQL refused the login: check the role's password (PGPASSWORD, \
                 PGPASSFILE or ~/.pgpass) and the server's pg_hba.conf",
            )
        }
        c if *c == SqlState::INVALID_CATALOG_NAME => (
            false,
            "no such database on the server: create it (createdb -O ROLE NAME) or fix the \
             database in [team] url",
        ),
        c if *c == SqlState::TOO_MANY_CONNECTIONS => (
            false,
            "the server has no connection slot left: raise max_connections, or put a pooler \
             in front (docs/team.md)",
        ),
        c if *c == SqlState::READ_ONLY_SQL_TRANSACTION => (
            false,
            "the server takes no writes (a standby, or default_transaction_read_only): point \
             [team] url at the primary",
        ),
        c if c.code().starts_with("08") || c.code().starts_with("57") => (
            false,
            "the connection failed or the server is shutting down",
        ),
        _ => return TeamError::Unavailable(text),
    };
    let message = format!("{text} — {hint}");
    if forbidden {
        TeamError::Forbidden(message)
    } else {
        TeamError::Unavailable(message)
    }
}

/// A failure the client met itself (no SQLSTATE): TLS, the network, a
/// closed connection — said so.
fn cause_of_client_error(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    if lower.contains("tls") || lower.contains("certificate") || lower.contains("handshake") {
        format!(
            "{text} — TLS failed: check sslmode, sslrootcert and the server's certificate \
             (docs/team.md, \"Connecting\")"
        )
    } else {
        text.to_string()
    }
}
