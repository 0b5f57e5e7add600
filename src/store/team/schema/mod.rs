//! The PostgreSQL schema `memd` and its versioned migrations, applied by
//! `memd team init` in one transaction under an advisory lock (two inits
//! at once do not race). A schema newer than this binary knows is an
//! error, never a reset.

use tokio_postgres::Client;

use super::TeamError;
use super::pg::describe;

/// One schema step. Never edit a shipped migration: add one.
pub struct Migration {
    /// Version this step produces.
    pub version: i32,
    /// Short description.
    pub name: &'static str,
    /// The SQL.
    pub sql: &'static str,
}

/// Every migration, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "shared rows, revisions, tombstones, commit-ordered numbers, authorship",
        sql: include_str!("v1.sql"),
    },
    Migration {
        version: 2,
        name: "login roles, grants by namespace, row-level security, an owner nobody logs in as",
        sql: include_str!("v2.sql"),
    },
    Migration {
        version: 3,
        name: "purge: a memory erased with its revisions, a record without text",
        sql: include_str!("v3.sql"),
    },
    Migration {
        version: 4,
        name: "review: namespaces that require it, proposals, decided by reviewers",
        sql: include_str!("v4.sql"),
    },
];

/// The version this binary knows.
pub fn latest() -> i32 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// The schema's version: `None` when `memd team init` never ran.
///
/// # Errors
/// [`TeamError::Unavailable`] for a failed query.
pub async fn version(client: &Client) -> Result<Option<i32>, TeamError> {
    let exists: bool = client
        .query_one("SELECT to_regclass('memd.migrations') IS NOT NULL", &[])
        .await
        .map_err(|e| TeamError::Unavailable(describe(&e)))?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let v: Option<i32> = client
        .query_one("SELECT max(version) FROM memd.migrations", &[])
        .await
        .map_err(|e| TeamError::Unavailable(describe(&e)))?
        .get(0);
    Ok(v)
}

/// Checks that the schema is there and not newer than this binary.
///
/// # Errors
/// [`TeamError::NotInitialised`], [`TeamError::SchemaTooNew`].
pub async fn check(client: &Client) -> Result<i32, TeamError> {
    match version(client).await? {
        None => Err(TeamError::NotInitialised),
        Some(v) if v > latest() => Err(TeamError::SchemaTooNew {
            found: v,
            known: latest(),
        }),
        Some(v) if v < latest() => Err(TeamError::Unavailable(format!(
            "the team schema is at version {v}, this memd needs {}: run `memd team init` to \
             migrate it",
            latest()
        ))),
        Some(v) => Ok(v),
    }
}

/// What `memd team init` did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Initialised {
    /// The version before (0: a new schema).
    pub from: i32,
    /// The version now.
    pub to: i32,
    /// The role that ran it (admin of every namespace when it created
    /// the grants).
    pub role: String,
    /// The role is above row-level security (a superuser, BYPASSRLS):
    /// every grant is moot for it.
    pub unbound: bool,
}

/// Connects to `target` and creates or migrates the schema there
/// (`memd team init`).
///
/// # Errors
/// [`TeamError::Unavailable`] when PostgreSQL cannot be reached,
/// [`TeamError::SchemaTooNew`], or the failed statement.
pub async fn init_at(
    target: &super::config::Target,
    timeout: std::time::Duration,
) -> Result<Initialised, TeamError> {
    let mut link = super::pg::connect(target, timeout, false).await?;
    init(&mut link.client).await
}

/// Creates or migrates the schema.
///
/// # Errors
/// [`TeamError::SchemaTooNew`], or the failed statement.
pub async fn init(client: &mut Client) -> Result<Initialised, TeamError> {
    let fail = |e: tokio_postgres::Error| TeamError::Unavailable(describe(&e));
    let who = client
        .query_one(
            "SELECT session_user::text, rolsuper OR rolbypassrls FROM pg_roles \
             WHERE rolname = session_user",
            &[],
        )
        .await
        .map_err(fail)?;
    let (role, unbound): (String, bool) = (who.get(0), who.get(1));
    // Up to date: nothing to create (a role that may not create anything
    // in the schema learns its version too).
    if let Some(v) = version(client).await?
        && v == latest()
    {
        return Ok(Initialised {
            from: v,
            to: v,
            role,
            unbound,
        });
    }
    let tx = client.transaction().await.map_err(fail)?;
    // One init at a time, whoever runs it.
    tx.execute("SELECT pg_advisory_xact_lock(7274031601)", &[])
        .await
        .map_err(fail)?;
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS memd;
         CREATE TABLE IF NOT EXISTS memd.migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         );",
    )
    .await
    .map_err(fail)?;
    let from: i32 = tx
        .query_one("SELECT coalesce(max(version), 0) FROM memd.migrations", &[])
        .await
        .map_err(fail)?
        .get(0);
    if from > latest() {
        return Err(TeamError::SchemaTooNew {
            found: from,
            known: latest(),
        });
    }
    for m in MIGRATIONS.iter().filter(|m| m.version > from) {
        // Recorded first: a migration may hand the schema to its owner,
        // after which the role running it may no longer write there.
        tx.execute(
            "INSERT INTO memd.migrations (version, name) VALUES ($1, $2)",
            &[&m.version, &m.name],
        )
        .await
        .map_err(fail)?;
        tx.batch_execute(m.sql).await.map_err(|e| {
            TeamError::Unavailable(format!("migration {} failed: {}", m.version, describe(&e)))
        })?;
    }
    tx.commit().await.map_err(fail)?;
    Ok(Initialised {
        from,
        to: latest(),
        role,
        unbound,
    })
}
