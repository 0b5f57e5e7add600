//! The pull: later commits from PostgreSQL, in commit order, in pages that
//! end on a transaction boundary, one local transaction per page; the check
//! that PostgreSQL still holds the last change applied (else a resync by
//! uid and rev, the rows PostgreSQL lacks kept in a drift backup); and the
//! push of a local namespace that starts to be shared.
//!
//! Every statement here is unnamed and typed (`query_typed`: parse, bind
//! and execute in one round trip): the pull may run through a pooler in
//! transaction mode, which may give each statement another server
//! connection, where a named statement would collide with another
//! client's or be missing.

use std::collections::HashSet;

use serde::{Deserialize, Serialize};
use tokio_postgres::Client;
use tokio_postgres::types::{ToSql, Type};

use super::super::conn::config::glob_to_like;
use super::super::{Team, TeamError};
use super::apply::{self, Outcome};
use super::row::{COLUMNS, TeamRow};
use crate::session::ident::Author;
use crate::store::readers::ReadKind;
use crate::store::{Store, StoreError, memories, meta};

/// Rows applied per page (a page may hold more: it ends on a
/// transaction boundary).
pub const PAGE: i64 = 500;

/// Where this machine is in PostgreSQL's history, kept in `memory_meta`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mark {
    /// Every commit up to this number is applied.
    pub applied: i64,
    /// The last row applied (its uid, rev and number): PostgreSQL must still
    /// hold it.
    pub last: Option<(String, i64, i64)>,
    /// The database's identity.
    pub db_uuid: Option<String>,
    /// The namespace patterns the last full pull covered.
    pub patterns: Vec<String>,
    /// The newest local revision looked at for deletes by other tools.
    #[serde(default)]
    pub revisions_checked: i64,
    /// What this machine's role may read, as PostgreSQL said at the last
    /// look (LIKE patterns): a read granted since is backfilled, a read
    /// revoked since is dropped here.
    #[serde(default)]
    pub readable: Vec<String>,
}

const MARK_KEY: &str = "team_mark";

/// One page of later commits.
#[derive(Debug)]
pub struct Page {
    /// The rows, by number.
    pub rows: Vec<TeamRow>,
    /// Everything up to this number is in the page.
    pub through: i64,
    /// PostgreSQL's newest number when the page was read.
    pub head: i64,
}

fn fail(e: &tokio_postgres::Error) -> TeamError {
    super::super::conn::pg::classify(e)
}

/// PostgreSQL's newest number and its identity.
///
/// # Errors
/// [`TeamError::Unavailable`].
pub async fn head(client: &Client) -> Result<(i64, String), TeamError> {
    let row = client
        .query_typed_one(
            "SELECT (SELECT value FROM memd.generation WHERE id = 1), \
                    (SELECT value FROM memd.meta WHERE key = 'db_uuid')",
            &[],
        )
        .await
        .map_err(|e| fail(&e))?;
    Ok((row.get(0), row.get(1)))
}

/// A person's own namespace (`@me`) is pulled only when a pattern names
/// it as is (`$4`: whether one does): no wider glob takes it.
const PERSONAL_RULE: &str = "(namespace <> '@me' OR $4)";
/// [`PERSONAL_RULE`] with its flag as `$2`.
const PERSONAL_RULE_1: &str = "(namespace <> '@me' OR $2)";

/// Whether `patterns` name the person's own namespace as is.
fn personal_of(patterns: &[String]) -> bool {
    patterns.iter().any(|g| g == memd_proto::PERSONAL_NAMESPACE)
}

/// The commits after `after` of the namespaces `patterns` match, up to
/// about [`PAGE`] rows, ending on a transaction boundary — one statement,
/// one snapshot.
///
/// # Errors
/// [`TeamError::Unavailable`].
pub async fn page(client: &Client, after: i64, patterns: &[String]) -> Result<Page, TeamError> {
    let likes: Vec<String> = patterns.iter().map(|g| glob_to_like(g)).collect();
    // The bound is the number of the PAGE-th row: the page holds every row
    // up to it (its whole transaction), or everything when there is none.
    // The head is read in the same snapshot: a snapshot that holds a number
    // holds every number below it.
    let personal = personal_of(patterns);
    let sql = format!(
        "WITH b AS (SELECT changed_seq FROM memd.memories WHERE changed_seq > $1 \
             AND namespace LIKE ANY($2) AND {PERSONAL_RULE} \
             ORDER BY changed_seq OFFSET $3 LIMIT 1) \
         SELECT {COLUMNS}, NULL::bigint AS head FROM memd.memories \
         WHERE changed_seq > $1 AND namespace LIKE ANY($2) AND {PERSONAL_RULE} \
           AND changed_seq <= coalesce((SELECT changed_seq FROM b), 9223372036854775807) \
         UNION ALL SELECT {NULLS}, (SELECT value FROM memd.generation WHERE id = 1) \
         ORDER BY changed_seq NULLS LAST"
    );
    let params: [(&(dyn ToSql + Sync), Type); 4] = [
        (&after, Type::INT8),
        (&likes, Type::TEXT_ARRAY),
        (&(PAGE - 1), Type::INT8),
        (&personal, Type::BOOL),
    ];
    let mut all = client
        .query_typed(&sql, &params)
        .await
        .map_err(|e| fail(&e))?;
    let head: i64 = all
        .pop()
        .and_then(|r| r.get::<_, Option<i64>>(super::row::COLUMN_COUNT))
        .ok_or_else(|| TeamError::Unavailable("the page had no head".into()))?;
    let rows = all
        .iter()
        .map(TeamRow::from_pg)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(&e))?;
    let newest = rows.last().map_or(after, |r| r.changed_seq);
    let through = if rows.len() as i64 >= PAGE {
        newest
    } else {
        head.max(newest)
    };
    Ok(Page {
        rows,
        through,
        head,
    })
}

/// [`COLUMNS`] as typed NULLs (the head's row of a page).
const NULLS: &str = "NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, \
    NULL::text, NULL::integer, NULL::text, NULL::double precision, NULL::boolean, NULL::text, \
    NULL::text, NULL::text[], NULL::text, NULL::text, NULL::text, NULL::integer, \
    NULL::integer, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, NULL::text, \
    NULL::text, NULL::bigint, NULL::text, NULL::bigint, NULL::boolean, NULL::bigint, \
    NULL::text, NULL::text, NULL::text, NULL::text, NULL::text";

/// Whether PostgreSQL still holds the history this machine applied: the
/// same database, a head not below what was applied, and the last row
/// applied at its rev or later — one statement.
///
/// # Errors
/// [`TeamError::Unavailable`].
pub async fn history_holds(client: &Client, mark: &Mark) -> Result<bool, TeamError> {
    let uid = mark.last.as_ref().map(|(u, _, _)| u.clone());
    let row = client
        .query_typed_one(
            "SELECT (SELECT value FROM memd.generation WHERE id = 1), \
                    (SELECT value FROM memd.meta WHERE key = 'db_uuid'), \
                    (SELECT rev FROM memd.memories WHERE uid = $1), \
                    (SELECT changed_seq FROM memd.memories WHERE uid = $1), \
                    (SELECT seq FROM memd.purges WHERE uid = $1), \
                    (SELECT value::bigint FROM memd.meta WHERE key = 'cleaned_through')",
            &[(&uid, Type::TEXT)],
        )
        .await
        .map_err(|e| fail(&e))?;
    let (head, uuid): (i64, String) = (row.get(0), row.get(1));
    if mark.db_uuid.as_deref().is_some_and(|u| u != uuid) || head < mark.applied {
        return Ok(false);
    }
    // Tombstones through `cleaned_through` are gone: a machine that applied
    // less may have missed one of their deletes, and resyncs.
    let cleaned: Option<i64> = row.get(5);
    if cleaned.is_some_and(|c| c > 0 && mark.applied < c) {
        return Ok(false);
    }
    let Some((_, rev, seq)) = &mark.last else {
        return Ok(true);
    };
    // A purged row is not history going back: its record says so.
    if row.get::<_, Option<i64>>(4).is_some() {
        return Ok(true);
    }
    let (r_rev, r_seq): (Option<i64>, Option<i64>) = (row.get(2), row.get(3));
    Ok(matches!((r_rev, r_seq), (Some(r), Some(q)) if r >= *rev && q >= *seq))
}

/// The memories purged in PostgreSQL by the transactions numbered after
/// `after` up to `through` (of the namespaces this role may read).
///
/// # Errors
/// [`TeamError::Unavailable`].
pub async fn purges(client: &Client, after: i64, through: i64) -> Result<Vec<String>, TeamError> {
    client
        .query_typed(
            "SELECT uid FROM memd.purges WHERE seq > $1 AND seq <= $2 ORDER BY seq",
            &[(&after, Type::INT8), (&through, Type::INT8)],
        )
        .await
        .map(|rows| rows.iter().map(|r| r.get(0)).collect())
        .map_err(|e| fail(&e))
}

/// Every shared row PostgreSQL holds (tombstones included), for a resync.
///
/// # Errors
/// [`TeamError::Unavailable`].
pub async fn everything(client: &Client, patterns: &[String]) -> Result<Vec<TeamRow>, TeamError> {
    let likes: Vec<String> = patterns.iter().map(|g| glob_to_like(g)).collect();
    let personal = personal_of(patterns);
    let sql = format!(
        "SELECT {COLUMNS} FROM memd.memories WHERE namespace LIKE ANY($1) \
         AND {PERSONAL_RULE_1} ORDER BY changed_seq"
    );
    client
        .query_typed(&sql, &[(&likes, Type::TEXT_ARRAY), (&personal, Type::BOOL)])
        .await
        .map_err(|e| fail(&e))?
        .iter()
        .map(TeamRow::from_pg)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(&e))
}

/// What applying a page did here.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Applied {
    /// Rows inserted or changed.
    pub changed: u64,
    /// Rows deleted (tombstones).
    pub deleted: u64,
    /// Local versions another tool made here that PostgreSQL's rows
    /// replaced (for a drift backup).
    pub lost: Vec<memd_proto::Memory>,
}

impl Store {
    /// Records the team mark alone.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn set_team_mark(&self, mark: Mark) -> Result<(), StoreError> {
        self.writer
            .call(Author::Team, move |ctx| {
                let text = serde_json::to_string(&mark).unwrap_or_default();
                meta::set(ctx.conn, MARK_KEY, &text)
            })
            .await
    }

    /// The team mark (`Mark::default()` before the first pull).
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn team_mark(&self) -> Result<Mark, StoreError> {
        let read = self
            .readers
            .read(ReadKind::Internal, |conn| meta::text(conn, MARK_KEY))
            .await?;
        Ok(read
            .value
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default())
    }

    /// Applies PostgreSQL's rows in one local transaction and moves the
    /// mark to `mark` (the changes keep their PostgreSQL authors). With
    /// `force`, rows replace local ones whatever their revs (a resync).
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn apply_team_rows(
        &self,
        rows: Vec<TeamRow>,
        mark: Mark,
        force: bool,
    ) -> Result<Applied, StoreError> {
        let own = self.wing.machine().to_string();
        // A page is large: alone, its statement journal stays small.
        self.writer
            .call_alone(Author::Team, move |ctx| {
                ctx.hold_index()?;
                let mut applied = Applied::default();
                for row in &rows {
                    let outcome = apply::apply_keeping(ctx.conn, row, force, &mut applied.lost)?;
                    if let Outcome::Inserted(id) = outcome {
                        apply::record_origin(ctx.conn, id, row, &own, None)?;
                    }
                    match outcome {
                        Outcome::Deleted => applied.deleted += 1,
                        Outcome::Inserted(_) | Outcome::Updated(_) => applied.changed += 1,
                        _ => {}
                    }
                    if outcome.edited()
                        && let Some(id) = outcome.id()
                    {
                        apply::record_author(ctx.conn, id, &row.author, &own)?;
                    }
                }
                for row in &rows {
                    apply::link(ctx.conn, row)?;
                }
                let text = serde_json::to_string(&mark).unwrap_or_default();
                meta::set(ctx.conn, MARK_KEY, &text)?;
                apply::record_seq(ctx.conn, ctx.generation()?, mark.applied)?;
                Ok(applied)
            })
            .await
    }

    /// The local versions another tool made here that applying
    /// PostgreSQL's `rows` (uid, rev) would replace (see
    /// [`apply::to_be_replaced`]).
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn team_rows_to_be_replaced(
        &self,
        rows: Vec<(String, i64)>,
        force: bool,
    ) -> Result<Vec<memd_proto::Memory>, StoreError> {
        let read = self
            .readers
            .read(ReadKind::Internal, move |conn| {
                apply::to_be_replaced(conn, &rows, force)
            })
            .await?;
        Ok(read.value)
    }

    /// After a resync: the local shared rows PostgreSQL does not hold
    /// (`known` holds every uid it does), which were once written through
    /// or pulled — what [`Store::drop_rows_unknown_to_team`] would drop now.
    /// Rows never pushed are not among them.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn rows_unknown_to_team(
        &self,
        team: &Team,
        known: HashSet<String>,
    ) -> Result<Vec<memd_proto::Memory>, StoreError> {
        let config = team.config().clone();
        let read = self
            .readers
            .read(ReadKind::Internal, move |conn| {
                unknown_to_team(conn, &config, &known)
            })
            .await?;
        Ok(read.value)
    }

    /// Deletes the rows [`Store::rows_unknown_to_team`] names, as they are
    /// now, and returns them.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn drop_rows_unknown_to_team(
        &self,
        team: &Team,
        known: HashSet<String>,
    ) -> Result<Vec<memd_proto::Memory>, StoreError> {
        let config = team.config().clone();
        self.writer
            .call(Author::Team, move |ctx| {
                let gone = unknown_to_team(ctx.conn, &config, &known)?;
                for m in &gone {
                    memories::delete(ctx.conn, m.id)?;
                }
                Ok(gone)
            })
            .await
    }
}

/// The synced rows of shared namespaces whose uid is not in `known`.
fn unknown_to_team(
    conn: &rusqlite::Connection,
    config: &super::super::conn::config::TeamConfig,
    known: &HashSet<String>,
) -> Result<Vec<memd_proto::Memory>, StoreError> {
    let mut out = Vec::new();
    for (id, uid, namespace) in memories::synced_rows(conn)? {
        if config.shares(&namespace)
            && !known.contains(&uid)
            && let Some(m) = memories::fetch(conn, id)?
        {
            out.push(m);
        }
    }
    Ok(out)
}

impl Store {
    /// The namespaces holding rows written through or pulled.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn team_namespaces(&self) -> Result<Vec<String>, StoreError> {
        let read = self
            .readers
            .read(ReadKind::Internal, memories::synced_namespaces)
            .await?;
        Ok(read.value)
    }

    /// Drops the rows of `namespaces` this machine's role may no longer
    /// read, with their revisions and without a drift backup (their text
    /// is no longer this machine's to keep). How many went.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn drop_unreadable_team_rows(
        &self,
        namespaces: Vec<String>,
    ) -> Result<usize, StoreError> {
        self.writer
            .call(Author::Team, move |ctx| {
                let mut n = 0;
                for ns in &namespaces {
                    n += memories::drop_synced(ctx.conn, ns)?;
                }
                Ok(n)
            })
            .await
    }
}

/// Another tool's changes of shared rows here (the `sqlite3` shell), to be
/// written through as `external`: rows whose rev moved past the `team_rev`
/// they hold, and rows deleted here (by their `delete` revisions after
/// `since`, the revisions' id) whose uid is gone. Returns them with the
/// newest revision id looked at.
#[derive(Debug, Default)]
pub struct LocalEdits {
    /// The changes.
    pub changes: Vec<super::write::Change>,
    /// The newest revision id read.
    pub through: i64,
}

impl Store {
    /// The shared rows another tool changed here (see [`LocalEdits`]).
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn team_local_edits(
        &self,
        since: i64,
        scan_edits: bool,
    ) -> Result<LocalEdits, StoreError> {
        let Some(team) = self.wing.engine().cloned() else {
            return Ok(LocalEdits::default());
        };
        let read = self
            .readers
            .read(ReadKind::Internal, move |conn| {
                let mut out = LocalEdits {
                    changes: Vec::new(),
                    through: since,
                };
                let edited = if scan_edits {
                    memories::edited_here(conn)?
                } else {
                    Vec::new()
                };
                for (id, team_rev) in edited {
                    let Some(after) = apply::after(conn, id)? else {
                        continue;
                    };
                    if !team.shares_row(&after) {
                        continue;
                    }
                    let before = super::apply::Before {
                        uid: after.uid.clone(),
                        namespace: after.namespace.clone(),
                        team_rev: Some(team_rev),
                        rev: team_rev,
                        observation_count: after.observation_count,
                        confirmed_count: after.confirmed_count,
                        local: false,
                    };
                    out.changes.push(super::write::Change {
                        id,
                        before: Some(before),
                        after: Some(after),
                    });
                }
                let (deleted, through) = memories::deleted_here_since(conn, since)?;
                out.through = through.max(since);
                for (uid, namespace, scope, rev) in deleted {
                    if !team.shares(&namespace, &scope) {
                        continue;
                    }
                    out.changes.push(super::write::Change {
                        id: 0,
                        before: Some(super::apply::Before {
                            uid,
                            namespace,
                            team_rev: Some(rev),
                            rev,
                            observation_count: 0,
                            confirmed_count: 0,
                            local: false,
                        }),
                        after: None,
                    });
                }
                Ok(out)
            })
            .await?;
        Ok(read.value)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_heads_nulls_match_the_row_columns() {
        let count = |s: &str| s.split(',').count();
        assert_eq!(count(super::NULLS), super::super::row::COLUMN_COUNT);
        assert_eq!(
            count(super::super::row::COLUMNS),
            super::super::row::COLUMN_COUNT
        );
    }
}
