//! People's rights on the team's namespaces: each person or machine
//! connects as its own PostgreSQL login role, and `memd.grants` gives a
//! role `read`, `write`, `review` or `admin` (each includes the ones
//! before it) on the namespaces a glob matches. PostgreSQL's row-level
//! security enforces them, for memd and `psql` alike (schema version 2);
//! these are the operations of `memd team grant|revoke|members`, and the
//! rights a daemon's role holds.

use serde::Serialize;
use tokio_postgres::Client;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;

use super::super::TeamError;
use super::super::conn::config::Target;
use super::super::conn::pg::{self, describe};

/// The rights, weakest first.
pub const RIGHTS: [&str; 4] = ["read", "write", "review", "admin"];

/// One grant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Grant {
    /// The role.
    pub role: String,
    /// The namespaces (a glob: `*` and `?`; `_` and `%` literal).
    pub glob: String,
    /// `read`, `write`, `review` or `admin`.
    pub access: String,
    /// Who granted it.
    pub granted_by: String,
    /// When.
    pub granted_at: String,
    /// The role can log in (`false`: a group role, or a role since
    /// dropped).
    pub login: bool,
    /// The role is above row-level security (a superuser, BYPASSRLS).
    pub unbound: bool,
}

/// What the role of a connection may do with each configured glob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Right {
    /// The configured glob.
    pub glob: String,
    /// The highest right on every namespace it matches; `partly` when it
    /// holds rights on some of them only (a narrower grant); `none`.
    pub access: String,
}

pub(super) fn fail(e: &tokio_postgres::Error) -> TeamError {
    match e.code() {
        Some(c) if *c == SqlState::INSUFFICIENT_PRIVILEGE => TeamError::Forbidden(describe(e)),
        Some(c) if *c == SqlState::NO_DATA_FOUND => TeamError::NotFound(describe(e)),
        Some(c) if c.code().starts_with("22") || c.code().starts_with("23") => {
            TeamError::Invalid(describe(e))
        }
        _ => super::super::conn::pg::classify(e),
    }
}

fn check_access(access: &str) -> Result<(), TeamError> {
    if RIGHTS.contains(&access) {
        Ok(())
    } else {
        Err(TeamError::Invalid(format!(
            "unknown right {access:?}: one of read, write, review, admin"
        )))
    }
}

pub(super) async fn connect(
    target: &Target,
    timeout: std::time::Duration,
) -> Result<pg::Link, TeamError> {
    let link = pg::connect(target, timeout, false).await?;
    super::schema::check(&link.client).await?;
    Ok(link)
}

/// Whether the connection's role administers `glob`; a refusal saying it
/// may not be `doing` (`change grants on team-*`) otherwise.
pub(super) async fn require_admin(
    client: &Client,
    glob: &str,
    doing: &str,
) -> Result<(), TeamError> {
    let row = client
        .query_one(
            "SELECT current_user::text, memd.admin_of(current_user, $1)",
            &[&glob],
        )
        .await
        .map_err(|e| fail(&e))?;
    let (me, admin): (String, bool) = (row.get(0), row.get(1));
    if admin {
        Ok(())
    } else {
        Err(TeamError::Forbidden(format!(
            "role {me} may not {doing}: that needs the admin right on a glob covering it"
        )))
    }
}

/// `memd team grant ROLE GLOB RIGHT`: gives `role` `access` on `glob`
/// (replacing the grant it held on that glob). Needs `admin` on a glob
/// covering `glob`.
///
/// # Errors
/// [`TeamError::Forbidden`], [`TeamError::Invalid`] (an unknown right or
/// role), [`TeamError::Unavailable`].
pub async fn grant(
    target: &Target,
    timeout: std::time::Duration,
    role: &str,
    glob: &str,
    access: &str,
) -> Result<Grant, TeamError> {
    check_access(access)?;
    if glob.is_empty() {
        return Err(TeamError::Invalid("the glob is empty".into()));
    }
    bounded(timeout, async {
        let link = connect(target, timeout).await?;
        let client = &link.client;
        let exists: bool = client
            .query_one(
                "SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)",
                &[&role],
            )
            .await
            .map_err(|e| fail(&e))?
            .get(0);
        if !exists {
            return Err(TeamError::Invalid(format!(
                "there is no role {role} in the team's PostgreSQL: create it first \
                 (CREATE ROLE \"{role}\" LOGIN PASSWORD '…')"
            )));
        }
        require_admin(client, glob, &format!("change grants on {glob}")).await?;
        client
            .execute(
                "INSERT INTO memd.grants (role, glob, access) VALUES ($1, $2, $3) \
                 ON CONFLICT (role, glob) DO UPDATE SET access = EXCLUDED.access, \
                 granted_by = session_user, granted_at = now()",
                &[&role, &glob, &access],
            )
            .await
            .map_err(|e| fail(&e))?;
        let all = list(client).await?;
        all.into_iter()
            .find(|g| g.role == role && g.glob == glob)
            .ok_or_else(|| TeamError::Invalid("the grant was not recorded".into()))
    })
    .await
}

/// `memd team revoke ROLE GLOB`: takes the grant `role` holds on exactly
/// `glob` away. Needs `admin` on a glob covering `glob`.
///
/// # Errors
/// [`TeamError::Forbidden`], [`TeamError::Invalid`] (no such grant),
/// [`TeamError::Unavailable`].
pub async fn revoke(
    target: &Target,
    timeout: std::time::Duration,
    role: &str,
    glob: &str,
) -> Result<String, TeamError> {
    bounded(timeout, async {
        let link = connect(target, timeout).await?;
        let client = &link.client;
        require_admin(client, glob, &format!("change grants on {glob}")).await?;
        let gone = client
            .query_opt(
                "DELETE FROM memd.grants WHERE role = $1 AND glob = $2 RETURNING access",
                &[&role, &glob],
            )
            .await
            .map_err(|e| fail(&e))?;
        gone.map(|r| r.get(0)).ok_or_else(|| {
            TeamError::Invalid(format!(
                "role {role} holds no grant on exactly {glob} (see `memd team members`)"
            ))
        })
    })
    .await
}

/// What `memd team cleanup` removed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cleaned {
    /// Tombstones (forgotten rows) removed.
    pub tombstones: i64,
    /// Revisions of those rows removed.
    pub revisions: i64,
    /// Operation ids removed.
    pub ops: i64,
    /// Decided proposals removed.
    pub proposals: i64,
    /// Machines that applied less than this number resync.
    pub cleaned_through: i64,
}

/// `memd team cleanup`: removes what is older than `older_than`
/// (`memd.cleanup`; admin on `*`). Bounded by a minute at least: the
/// deletes may take longer than a write.
///
/// # Errors
/// [`TeamError::Forbidden`] without admin on `*`; [`TeamError::Unavailable`].
pub async fn cleanup(
    target: &Target,
    timeout: std::time::Duration,
    older_than: std::time::Duration,
) -> Result<Cleaned, TeamError> {
    let limit = timeout.max(std::time::Duration::from_secs(60));
    bounded(limit, async {
        let link = connect(target, timeout).await?;
        let secs = older_than.as_secs_f64();
        let row = link
            .client
            .query_one(
                "SELECT * FROM memd.cleanup(make_interval(secs => $1))",
                &[&secs],
            )
            .await
            .map_err(|e| fail(&e))?;
        Ok(Cleaned {
            tombstones: row.get(0),
            revisions: row.get(1),
            ops: row.get(2),
            proposals: row.get(3),
            cleaned_through: row.get(4),
        })
    })
    .await
}

/// Cleans team memory up every `[team] cleanup_every` (when set) until the
/// daemon stops: what is older than `[team] retention` goes
/// ([`cleanup`]). Only a role with admin on `*` may; another is told
/// once, in the log.
pub async fn clean_up_every(team: &super::super::Team) {
    let Some(every) = team.config().cleanup_every() else {
        return;
    };
    let mut told = false;
    loop {
        tokio::time::sleep(every).await;
        let config = team.config();
        match cleanup(team.target(), config.timeout(), config.retention()).await {
            Ok(c) => tracing::info!(
                tombstones = c.tombstones,
                ops = c.ops,
                proposals = c.proposals,
                cleaned_through = c.cleaned_through,
                "team memory: cleaned up"
            ),
            Err(TeamError::Forbidden(m)) if !told => {
                told = true;
                tracing::info!(reason = %m, "team memory: this machine's role may not clean up");
            }
            Err(TeamError::Forbidden(_)) => {}
            Err(e) => tracing::warn!(error = %e, "team memory: the cleanup failed; next time"),
        }
    }
}

/// `memd team members`: the grants the connection's role may see (an
/// admin sees those of the namespaces it administers; anyone else its
/// own), and the role itself.
///
/// # Errors
/// [`TeamError::Unavailable`].
pub async fn members(
    target: &Target,
    timeout: std::time::Duration,
) -> Result<(String, Vec<Grant>), TeamError> {
    bounded(timeout, async {
        let link = connect(target, timeout).await?;
        let client = &link.client;
        let me: String = client
            .query_one("SELECT current_user::text", &[])
            .await
            .map_err(|e| fail(&e))?
            .get(0);
        Ok((me, list(client).await?))
    })
    .await
}

async fn list(client: &Client) -> Result<Vec<Grant>, TeamError> {
    let rows = client
        .query(
            "SELECT g.role, g.glob, g.access, g.granted_by, \
                    to_char(g.granted_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"'), \
                    coalesce(r.rolcanlogin, false), \
                    coalesce(r.rolsuper OR r.rolbypassrls, false) \
             FROM memd.grants g LEFT JOIN pg_roles r ON r.rolname = g.role \
             ORDER BY g.role, g.glob",
            &[],
        )
        .await
        .map_err(|e| fail(&e))?;
    Ok(rows
        .iter()
        .map(|r| Grant {
            role: r.get(0),
            glob: r.get(1),
            access: r.get(2),
            granted_by: r.get(3),
            granted_at: r.get(4),
            login: r.get(5),
            unbound: r.get(6),
        })
        .collect())
}

/// What the connection's role may do with each of `globs`. This and the
/// two below run on the pull's connection: unnamed and typed, as a pooler
/// in transaction mode needs (`engine::pull`).
///
/// # Errors
/// [`TeamError::Unavailable`].
pub async fn rights(client: &Client, globs: &[String]) -> Result<Vec<Right>, TeamError> {
    let rows = client
        .query_typed(
            "SELECT t, CASE WHEN a <> 'none' THEN a \
                 WHEN EXISTS (SELECT 1 FROM memd.grants g JOIN pg_roles r ON r.rolname = g.role \
                     WHERE pg_has_role(current_user, r.oid, 'MEMBER') AND memd.covers(t, g.glob)) \
                 THEN 'partly' ELSE 'none' END \
             FROM (SELECT t, memd.access_of(current_user, t) AS a FROM unnest($1::text[]) t) x",
            &[(&globs, Type::TEXT_ARRAY)],
        )
        .await
        .map_err(|e| fail(&e))?;
    Ok(rows
        .iter()
        .map(|r| Right {
            glob: r.get(0),
            access: r.get(1),
        })
        .collect())
}

/// The LIKE patterns of the namespaces the connection's role may read
/// (`%` for a role above row-level security), sorted.
///
/// # Errors
/// [`TeamError::Unavailable`].
pub async fn readable(client: &Client) -> Result<Vec<String>, TeamError> {
    client
        .query_typed_one("SELECT memd.patterns(current_user, 'read')", &[])
        .await
        .map(|r| r.get(0))
        .map_err(|e| fail(&e))
}

/// Which of `namespaces` the connection's role may not read.
///
/// # Errors
/// [`TeamError::Unavailable`].
pub async fn unreadable(client: &Client, namespaces: &[String]) -> Result<Vec<String>, TeamError> {
    client
        .query_typed(
            "SELECT n FROM unnest($1::text[]) n \
             WHERE NOT n LIKE ANY (memd.patterns(current_user, 'read'))",
            &[(&namespaces, Type::TEXT_ARRAY)],
        )
        .await
        .map(|rows| rows.iter().map(|r| r.get(0)).collect())
        .map_err(|e| fail(&e))
}

pub(super) async fn bounded<T>(
    limit: std::time::Duration,
    call: impl Future<Output = Result<T, TeamError>>,
) -> Result<T, TeamError> {
    tokio::time::timeout(limit, call).await.map_err(|_| {
        TeamError::Unavailable(format!(
            "the team's PostgreSQL did not answer within {} ms (team.timeout_ms)",
            limit.as_millis()
        ))
    })?
}
