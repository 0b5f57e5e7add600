//! The PostgreSQL schema `memd` and its versioned migrations, applied by
//! `memd team init` in one transaction under an advisory lock (two inits
//! at once do not race). A schema newer than this binary knows is an
//! error, never a reset.

use tokio_postgres::Client;

use super::super::TeamError;
use super::super::conn::pg::describe;

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
    Migration {
        version: 5,
        name: "renamed namespaces: rows moved once, the old name closed to writers",
        sql: include_str!("v5.sql"),
    },
    Migration {
        version: 6,
        name: "cleanup: tombstones, ops and decided proposals past a retention; resync below it",
        sql: include_str!("v6.sql"),
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
pub async fn version(
    client: &impl tokio_postgres::GenericClient,
) -> Result<Option<i32>, TeamError> {
    let exists: bool = client
        .query_typed_one("SELECT to_regclass('memd.migrations') IS NOT NULL", &[])
        .await
        .map_err(|e| TeamError::Unavailable(describe(&e)))?
        .get(0);
    if !exists {
        return Ok(None);
    }
    let v: Option<i32> = client
        .query_typed_one("SELECT max(version) FROM memd.migrations", &[])
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
    target: &super::super::conn::config::Target,
    timeout: std::time::Duration,
) -> Result<Initialised, TeamError> {
    let mut link = super::super::conn::pg::connect(target, timeout, false).await?;
    init(&mut link.client).await
}

/// Who runs `memd team init`, as PostgreSQL knows the role.
struct Runner {
    role: String,
    /// A superuser: every privilege, membership in every role.
    superuser: bool,
    /// Above row-level security (a superuser or BYPASSRLS).
    unbound: bool,
    /// May create roles and (PostgreSQL 15) grant membership in any role
    /// that is not a superuser.
    createrole: bool,
    /// The database's name.
    database: String,
    /// The role that owns (or will own) every object of the schema.
    owner: String,
    /// Owns the database (or may grant CREATE on it).
    owns_database: bool,
}

/// The role a new schema in `database` belongs to, nobody logging in as
/// it: `memd_owner_<database>`, one per database, so two teams' schemas on
/// one server have two owners (a role an administrator makes a member of
/// one team's owner reaches no other). A name that is not lower-case
/// letters, digits and `_`, or too long for PostgreSQL (63 bytes), keeps
/// 40 such characters and the first 8 hex digits of its FNV-1a 64 hash.
/// The name is then valid bare in SQL, as an identifier or in a string.
pub fn owner_for(database: &str) -> String {
    let plain = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
    if !database.is_empty() && database.chars().all(plain) && database.len() <= 52 {
        return format!("memd_owner_{database}");
    }
    let hash = crate::session::snapshot::hash(database);
    let kept: String = database
        .chars()
        .map(|c| c.to_ascii_lowercase())
        .map(|c| if plain(c) { c } else { '_' })
        .take(40)
        .collect();
    format!("memd_owner_{kept}_{}", &hash[..8])
}

/// The role that owns the schema's objects: the one a migration handed
/// them to (`memd_owner_<database>`, or `memd_owner`, which every
/// database shared before), when the schema has one; else this database's
/// own ([`owner_for`]).
async fn owner_of(
    client: &impl tokio_postgres::GenericClient,
    database: &str,
) -> Result<String, TeamError> {
    let now: Option<String> = client
        .query_typed_opt(
            "SELECT nspowner::regrole::text FROM pg_namespace WHERE nspname = 'memd'",
            &[],
        )
        .await
        .map_err(|e| super::super::conn::pg::classify(&e))?
        .map(|r| r.get(0));
    Ok(match now {
        Some(o) if o == "memd_owner" || o.starts_with("memd_owner_") => o,
        _ => owner_for(database),
    })
}

/// A failed statement of the init: a refused privilege is `forbidden`
/// (with what to do), anything else the server's own message.
fn refused(role: &str, e: &tokio_postgres::Error) -> TeamError {
    if e.code() == Some(&tokio_postgres::error::SqlState::INSUFFICIENT_PRIVILEGE) {
        TeamError::Forbidden(format!(
            "role {role} may not set up the memd schema: {}. See docs/team.md \"Setting up \
             without a superuser\" for what the role needs",
            describe(e)
        ))
    } else {
        super::super::conn::pg::classify(e)
    }
}

/// Creates or migrates the schema.
///
/// A superuser may always. Any other role needs, for a new schema (or one
/// at version 1), to own the database; and for every step, membership in
/// the owner role (`memd_owner_<database>`, [`owner_for`]: the role that
/// owns every object; a schema set up before owner roles were per
/// database keeps `memd_owner`). `init` creates that role when it is
/// missing (`CREATEROLE`) and holds the membership for the transaction
/// only: it grants it when the runner lacks it (possible with `CREATEROLE`)
/// and takes it back at the end, so no login role stays a member. An
/// administrator may instead create the owner role and grant it to the
/// runner; that membership is left as it was. What is missing is
/// refused before anything is written, naming the SQL an administrator
/// runs.
///
/// # Errors
/// [`TeamError::Forbidden`] when the role may not, naming what it lacks;
/// [`TeamError::SchemaTooNew`], or the failed statement.
pub async fn init(client: &mut Client) -> Result<Initialised, TeamError> {
    let fail = |e: tokio_postgres::Error| super::super::conn::pg::classify(&e);
    let runner = runner(client).await?;
    let foreign = if runner.superuser {
        Vec::new()
    } else {
        foreign_owners(client, &runner.owner).await?
    };
    // A schema this role may not even read was made by another: say whose.
    let current = version(client)
        .await
        .map_err(|e| foreign_refusal(&runner, &foreign).unwrap_or(e))?;
    // Up to date: nothing to create (a role that may not create anything
    // in the schema learns its version too).
    if let Some(v) = current
        && v == latest()
    {
        return Ok(Initialised {
            from: v,
            to: v,
            role: runner.role,
            unbound: runner.unbound,
        });
    }
    let tx = client.transaction().await.map_err(fail)?;
    // One init at a time, whoever runs it.
    tx.execute("SELECT pg_advisory_xact_lock(7274031601)", &[])
        .await
        .map_err(fail)?;
    let from = version(&tx).await?.unwrap_or(0);
    if from > latest() {
        return Err(TeamError::SchemaTooNew {
            found: from,
            known: latest(),
        });
    }
    let granted = if runner.superuser {
        false
    } else {
        preflight(&tx, &runner, from, &foreign).await?;
        hold_owner(&tx, &runner).await?
    };
    migrate(&tx, &runner, from).await?;
    if granted {
        tx.batch_execute(&format!(
            "REVOKE {} FROM {}",
            runner.owner,
            quote_ident(&runner.role)
        ))
        .await
        .map_err(|e| refused(&runner.role, &e))?;
    }
    tx.commit().await.map_err(fail)?;
    Ok(Initialised {
        from,
        to: latest(),
        role: runner.role,
        unbound: runner.unbound,
    })
}

/// The role running `init`: what it may do, and the owner role its
/// database's schema is handed to.
async fn runner(client: &Client) -> Result<Runner, TeamError> {
    let fail = |e: tokio_postgres::Error| super::super::conn::pg::classify(&e);
    let who = client
        .query_one(
            "SELECT session_user::text, r.rolsuper, r.rolsuper OR r.rolbypassrls, \
                    r.rolcreaterole, current_database()::text, \
                    d.datdba = r.oid OR has_database_privilege(session_user, \
                        current_database(), 'CREATE WITH GRANT OPTION') \
             FROM pg_roles r, pg_database d \
             WHERE r.rolname = session_user AND d.datname = current_database()",
            &[],
        )
        .await
        .map_err(fail)?;
    let runner = Runner {
        role: who.get(0),
        superuser: who.get(1),
        unbound: who.get(2),
        createrole: who.get(3),
        database: who.get(4),
        owns_database: who.get(5),
        owner: String::new(),
    };
    let runner = Runner {
        owner: owner_of(client, &runner.database).await?,
        ..runner
    };
    Ok(runner)
}

/// Creates the schema and its version table if missing, and applies each
/// migration after `from`, in `tx`.
async fn migrate(
    tx: &tokio_postgres::Transaction<'_>,
    runner: &Runner,
    from: i32,
) -> Result<(), TeamError> {
    tx.batch_execute(
        "CREATE SCHEMA IF NOT EXISTS memd;
         CREATE TABLE IF NOT EXISTS memd.migrations (
             version    integer PRIMARY KEY,
             name       text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now()
         );",
    )
    .await
    .map_err(|e| refused(&runner.role, &e))?;
    for m in MIGRATIONS.iter().filter(|m| m.version > from) {
        tx.execute(
            "INSERT INTO memd.migrations (version, name) VALUES ($1, $2)",
            &[&m.version, &m.name],
        )
        .await
        .map_err(|e| refused(&runner.role, &e))?;
        tx.batch_execute(&m.sql.replace("memd_owner", &runner.owner))
            .await
            .map_err(|e| match refused(&runner.role, &e) {
                TeamError::Unavailable(d) => {
                    TeamError::Unavailable(format!("migration {} failed: {d}", m.version))
                }
                other => other,
            })?;
    }
    Ok(())
}

/// What a role that is not a superuser needs before anything is written:
/// the database (a new schema, or version 1's handed to the owner role),
/// the owner role or the right to create it, and no object of the schema
/// owned by a role it cannot act as. Refused with the SQL an
/// administrator runs.
async fn preflight(
    tx: &tokio_postgres::Transaction<'_>,
    runner: &Runner,
    from: i32,
    foreign: &[String],
) -> Result<(), TeamError> {
    let fail = |e: tokio_postgres::Error| TeamError::Unavailable(describe(&e));
    let role = quote_ident(&runner.role);
    let db = quote_ident(&runner.database);
    if from < 2 && !runner.owns_database {
        return Err(TeamError::Forbidden(format!(
            "role {} does not own database {}: a new memd schema is set up by the database's \
             owner. An administrator runs: ALTER DATABASE {db} OWNER TO {role};",
            runner.role, runner.database
        )));
    }
    let owner = tx
        .query_opt(
            "SELECT pg_has_role(session_user, oid, 'USAGE'), \
                    pg_has_role(session_user, oid, 'USAGE WITH ADMIN OPTION'), \
                    current_setting('server_version_num')::int \
             FROM pg_roles WHERE rolname = $1",
            &[&runner.owner],
        )
        .await
        .map_err(fail)?;
    let member = owner.as_ref().is_some_and(|r| r.get::<_, bool>(0));
    // Who may grant the membership: on PostgreSQL 15 and older, CREATEROLE
    // grants any role that is not a superuser; from 16 on, only a role it
    // holds with ADMIN OPTION (which it gets for a role it creates itself).
    let can_grant = owner
        .as_ref()
        .is_none_or(|r| r.get::<_, bool>(1) || (runner.createrole && r.get::<_, i32>(2) < 160_000))
        && (owner.is_some() || runner.createrole);
    if !member && !can_grant {
        let o = &runner.owner;
        let create = if owner.is_none() {
            format!("CREATE ROLE {o} NOLOGIN; ")
        } else {
            String::new()
        };
        return Err(TeamError::Forbidden(format!(
            "role {} may not act as {o}, the role that owns the memd schema, and may not \
             grant it to itself: an administrator runs either {create}GRANT {o} TO {role}; \
             or{createrole} ALTER ROLE {role} CREATEROLE;",
            runner.role,
            createrole = if owner.is_some() {
                " (PostgreSQL 15 and older; from 16 on, GRANT it WITH ADMIN OPTION)"
            } else {
                ""
            }
        )));
    }
    if let Some(refusal) = foreign_refusal(runner, foreign) {
        return Err(refusal);
    }
    Ok(())
}

/// The owners of the schema's objects (the schema, its tables, its
/// functions) that `session_user` cannot act as, other than the owner
/// role: a superuser (or another role) made them earlier, and only a role
/// that can act as their owner may hand them on.
async fn foreign_owners(
    client: &impl tokio_postgres::GenericClient,
    owner: &str,
) -> Result<Vec<String>, TeamError> {
    Ok(client
        .query(
            "SELECT DISTINCT o::regrole::text FROM (
                 SELECT nspowner AS o FROM pg_namespace WHERE nspname = 'memd'
                 UNION SELECT relowner FROM pg_class WHERE relnamespace = \
                     to_regnamespace('memd')
                 UNION SELECT proowner FROM pg_proc WHERE pronamespace = \
                     to_regnamespace('memd')) owners
             WHERE o::regrole::text <> $1 AND NOT pg_has_role(session_user, o, 'USAGE')
             ORDER BY 1",
            &[&owner],
        )
        .await
        .map_err(|e| TeamError::Unavailable(describe(&e)))?
        .iter()
        .map(|r| r.get(0))
        .collect())
}

/// The refusal for objects owned by roles the runner cannot act as.
fn foreign_refusal(runner: &Runner, foreign: &[String]) -> Option<TeamError> {
    if foreign.is_empty() {
        return None;
    }
    let role = quote_ident(&runner.role);
    Some(TeamError::Forbidden(format!(
        "the memd schema has objects owned by {}, which role {} cannot act as: run `memd team \
         init` as {} (or a superuser), or an administrator runs GRANT {} TO {role};",
        foreign.join(", "),
        runner.role,
        foreign.join(" or "),
        foreign
            .iter()
            .map(|f| quote_ident(f))
            .collect::<Vec<_>>()
            .join(", ")
    )))
}

/// Makes the runner a member of the owner role for this transaction:
/// creates the role when missing, grants the membership when the runner
/// lacks it. Whether it granted (to be taken back at the end).
async fn hold_owner(
    tx: &tokio_postgres::Transaction<'_>,
    runner: &Runner,
) -> Result<bool, TeamError> {
    let fail = |e: tokio_postgres::Error| refused(&runner.role, &e);
    let member: Option<bool> = tx
        .query_opt(
            "SELECT pg_has_role(session_user, oid, 'USAGE') FROM pg_roles WHERE rolname = $1",
            &[&runner.owner],
        )
        .await
        .map_err(fail)?
        .map(|r| r.get(0));
    if member.is_none() {
        tx.batch_execute(&format!("CREATE ROLE {} NOLOGIN", runner.owner))
            .await
            .map_err(fail)?;
    }
    if member == Some(true) {
        return Ok(false);
    }
    tx.batch_execute(&format!(
        "GRANT {} TO {}",
        runner.owner,
        quote_ident(&runner.role)
    ))
    .await
    .map_err(fail)?;
    Ok(true)
}

/// An identifier quoted as SQL needs it (always, so any name is safe).
fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::owner_for;

    #[test]
    fn each_database_has_its_own_owner_role_with_a_bare_name() {
        assert_eq!(owner_for("memd"), "memd_owner_memd");
        assert_eq!(owner_for("team_a"), "memd_owner_team_a");
        assert_ne!(owner_for("team_a"), owner_for("team_b"));
        for odd in ["Team-A", "team a", "", &"x".repeat(60), "équipe"] {
            let o = owner_for(odd);
            assert!(o.len() <= 63, "{o}");
            assert!(
                o.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{o}"
            );
        }
        // Names that fold to the same characters still differ.
        assert_ne!(owner_for("Team-A"), owner_for("team_a"));
        assert_ne!(owner_for("Team-A"), owner_for("team-a"));
    }
}
