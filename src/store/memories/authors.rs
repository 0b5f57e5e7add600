//! Who changed a row, and the rows changed since a generation.

use rusqlite::{Connection, OptionalExtension, params_from_iter};

use super::write::change_mark;
use crate::store::StoreError;

/// The author memd recorded for a row's last change, if the record still
/// names that change.
///
/// # Errors
/// SQLite errors.
pub fn author(
    conn: &Connection,
    id: i64,
    changed_generation: u64,
) -> Result<Option<RecordedAuthor>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT session, agent, machine, external FROM memory_authors \
             WHERE memory_id = ?1 AND generation = ?2",
        )?
        .query_row((id, changed_generation as i64), |r| {
            Ok(RecordedAuthor {
                session: r.get(0)?,
                agent: r.get(1)?,
                machine: r.get(2)?,
                external: r.get(3)?,
            })
        })
        .optional()?)
}

/// Who made each recorded version of rows `ids`, by memory and rev.
///
/// # Errors
/// SQLite errors.
pub fn authors_of(
    conn: &Connection,
    ids: &[i64],
) -> Result<Vec<memd_proto::VersionAuthor>, StoreError> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let marks = vec!["?"; ids.len()].join(", ");
    let sql = format!(
        "SELECT memory_id, rev, session, agent, machine, external FROM memory_authors \
         WHERE memory_id IN ({marks}) AND rev IS NOT NULL ORDER BY memory_id, rev"
    );
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt
        .query_map(params_from_iter(ids), |r| {
            let recorded = RecordedAuthor {
                session: r.get(2)?,
                agent: r.get(3)?,
                machine: r.get(4)?,
                external: r.get(5)?,
            };
            Ok(memd_proto::VersionAuthor {
                memory_id: r.get(0)?,
                rev: r.get(1)?,
                changed_by: recorded.changed_by(),
            })
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

impl RecordedAuthor {
    /// As the wire names an author.
    pub fn changed_by(&self) -> memd_proto::ChangedBy {
        if self.external {
            return memd_proto::ChangedBy {
                kind: memd_proto::ChangeKind::External,
                agent: None,
                session: None,
                machine: self.machine.clone(),
            };
        }
        memd_proto::ChangedBy {
            kind: memd_proto::ChangeKind::Session,
            agent: Some(self.agent.clone()).filter(|a| !a.is_empty()),
            session: Some(self.session.clone()).filter(|s| !s.is_empty()),
            machine: self.machine.clone(),
        }
    }
}

/// The author memd recorded for a row's change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedAuthor {
    /// The session (empty for an external change).
    pub session: String,
    /// Its agent.
    pub agent: String,
    /// Another machine (team memory), `None` for this one.
    pub machine: Option<String>,
    /// A writer outside memd, on the team's PostgreSQL.
    pub external: bool,
}

/// Records `who` as the author of row `id`'s last change if that change
/// came after generation `since` (a change of the current write job);
/// returns the row's rev, if the row exists.
///
/// # Errors
/// SQLite errors.
pub fn record_author(
    conn: &Connection,
    id: i64,
    since: u64,
    who: Option<(&str, &str)>,
) -> Result<Option<i64>, StoreError> {
    if let Some((session, agent)) = who {
        // The record holds the row's rev: one statement when it is made.
        let recorded = conn
            .prepare_cached(
                "INSERT OR REPLACE INTO memory_authors (memory_id, generation, session, agent, rev) \
                 SELECT id, changed_generation, ?3, ?4, rev FROM memories \
                 WHERE id = ?1 AND changed_generation > ?2 RETURNING rev",
            )?
            .query_row((id, since as i64, session, agent), |r| r.get::<_, i64>(0))
            .optional()?;
        if recorded.is_some() {
            return Ok(recorded);
        }
    }
    Ok(change_mark(conn, id)?.map(|(rev, _)| rev))
}

/// A row changed (or deleted) after some generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Changed {
    /// The row.
    pub id: i64,
    /// The generation of the change.
    pub generation: u64,
    /// The change was its deletion.
    pub deleted: bool,
}

/// At most `limit` rows changed or deleted after generation `after`,
/// newest first (for the words of a drift refusal; it scans the table, and
/// refusals are rare).
///
/// # Errors
/// SQLite errors.
pub fn changed_since(
    conn: &Connection,
    after: u64,
    limit: usize,
) -> Result<Vec<Changed>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, g, deleted FROM ( \
             SELECT id, changed_generation AS g, 0 AS deleted FROM memories \
             WHERE changed_generation > ?1 \
             UNION ALL \
             SELECT memory_id, generation + 1, 1 FROM memory_revisions \
             WHERE op = 'delete' AND generation >= ?1) \
         ORDER BY g DESC LIMIT ?2",
    )?;
    let rows = stmt.query_map((after as i64, limit as i64), |r| {
        Ok(Changed {
            id: r.get(0)?,
            generation: r.get::<_, i64>(1)?.max(0) as u64,
            deleted: r.get(2)?,
        })
    })?;
    Ok(rows.collect::<Result<_, _>>()?)
}
