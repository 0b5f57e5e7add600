//! The SQLite side of team memory: shared rows as they are here (what a
//! write-through sends), and PostgreSQL's rows applied here (a pull, or the
//! local apply of a write PostgreSQL committed). Runs on the writer thread,
//! inside its transaction.
//!
//! memd's apply is the one writer of `rev` and `updated_at` besides the
//! triggers: a row takes PostgreSQL's, and only when PostgreSQL's rev is
//! newer than the `team_rev` it holds.

use rusqlite::{Connection, OptionalExtension, params};

use super::row::{RemoteAuthor, TeamRow};
use crate::store::{StoreError, memories};

/// What a row was before a job changed it: the base of the write-through's
/// compare-and-set, and of its count deltas.
#[derive(Debug, Clone, PartialEq)]
pub struct Before {
    /// The row's identity.
    pub uid: String,
    /// Its namespace.
    pub namespace: String,
    /// PostgreSQL's rev it holds (`None`: never written through or pulled).
    pub team_rev: Option<i64>,
    /// Its local rev.
    pub rev: i64,
    /// Counts (shared, written as deltas).
    pub observation_count: i64,
    /// Confirmations.
    pub confirmed_count: i64,
    /// Local by rule (a session-scope row, a captured turn): never shared
    /// whatever its namespace.
    pub local: bool,
}

/// Row `id` as PostgreSQL would hold it (its supersession by uid), with its
/// local rev; `None` when it is gone.
///
/// # Errors
/// SQLite errors.
pub fn after(conn: &Connection, id: i64) -> Result<Option<TeamRow>, StoreError> {
    let Some(m) = memories::fetch(conn, id)? else {
        return Ok(None);
    };
    let superseded_by_uid = match m.superseded_by {
        Some(by) => uid_of(conn, by)?,
        None => None,
    };
    let mut memory = m;
    memory.tags.sort();
    memory.tags.dedup();
    // What only this machine keeps is not PostgreSQL's.
    let memory = memd_proto::Memory {
        id: 0,
        superseded_by: None,
        use_count: 0,
        last_used_at: None,
        access_score: 0.0,
        changed_generation: 0,
        turn: None,
        ..memory
    };
    Ok(Some(TeamRow {
        memory,
        superseded_by_uid,
        deleted: false,
        changed_seq: 0,
        author: RemoteAuthor::default(),
    }))
}

fn uid_of(conn: &Connection, id: i64) -> Result<Option<String>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT uid FROM memories WHERE id = ?1")?
        .query_row([id], |r| r.get(0))
        .optional()?)
}

/// The local id of `uid`.
///
/// # Errors
/// SQLite errors.
pub fn id_of(conn: &Connection, uid: &str) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT id FROM memories WHERE uid = ?1")?
        .query_row([uid], |r| r.get(0))
        .optional()?)
}

/// A row as held here: id, PostgreSQL's rev, the counts, its own rev.
type Held = (i64, Option<i64>, i64, i64, Option<String>, i64);

/// What applying a row did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Inserted as this local id.
    Inserted(i64),
    /// This local row now holds PostgreSQL's version.
    Updated(i64),
    /// Only its counts changed (no edit: the generation does not move).
    Counts(i64),
    /// The local row was deleted (a tombstone).
    Deleted,
    /// Nothing to do: the local row is as new, or a tombstone of a row
    /// this machine never had.
    Unchanged(Option<i64>),
}

impl Outcome {
    /// The local row it left, if any.
    pub fn id(self) -> Option<i64> {
        match self {
            Outcome::Inserted(id) | Outcome::Updated(id) | Outcome::Counts(id) => Some(id),
            Outcome::Unchanged(id) => id,
            Outcome::Deleted => None,
        }
    }

    /// Whether the row's meaningful columns changed here.
    pub fn edited(self) -> bool {
        matches!(
            self,
            Outcome::Inserted(_) | Outcome::Updated(_) | Outcome::Deleted
        )
    }
}

/// Applies PostgreSQL's `row` here: inserted when new, replaced when
/// PostgreSQL's rev is newer than the one held, deleted for a tombstone;
/// counts follow PostgreSQL's whatever the rev. With `force`, a row whose
/// held rev is newer than PostgreSQL's is replaced too (a resync after
/// PostgreSQL's history went back). Its supersession link is resolved when
/// the row it names is here (see [`link`]).
///
/// # Errors
/// SQLite errors.
pub fn apply(conn: &Connection, row: &TeamRow, force: bool) -> Result<Outcome, StoreError> {
    apply_keeping(conn, row, force, &mut Vec::new())
}

/// As [`apply`]; a local version another tool made here (its rev past the
/// `team_rev` it held) that PostgreSQL's row replaces goes into `lost`
/// (for a drift backup).
///
/// # Errors
/// SQLite errors.
pub fn apply_keeping(
    conn: &Connection,
    row: &TeamRow,
    force: bool,
    lost: &mut Vec<memd_proto::Memory>,
) -> Result<Outcome, StoreError> {
    let local: Option<Held> = conn
        .prepare_cached(
            "SELECT id, team_rev, observation_count, confirmed_count, last_confirmed_at, rev \
             FROM memories WHERE uid = ?1",
        )?
        .query_row([&row.uid], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
            ))
        })
        .optional()?;
    if let Some((id, Some(team_rev), .., rev)) = local
        && rev != team_rev
        && (force || row.rev > team_rev)
        && let Some(m) = memories::fetch(conn, id)?
    {
        lost.push(m);
    }
    if row.deleted {
        return match local {
            Some((id, team_rev, ..)) if force || team_rev.is_none_or(|t| t <= row.rev) => {
                memories::delete(conn, id)?;
                Ok(Outcome::Deleted)
            }
            Some((id, ..)) => Ok(Outcome::Unchanged(Some(id))),
            None => Ok(Outcome::Unchanged(None)),
        };
    }
    let superseded_by = match &row.superseded_by_uid {
        Some(uid) => id_of(conn, uid)?,
        None => None,
    };
    let Some((id, team_rev, observations, confirmations, confirmed_at, _)) = local else {
        return insert(conn, row, superseded_by).map(Outcome::Inserted);
    };
    if !force && team_rev.is_some_and(|t| t >= row.rev) {
        if (observations, confirmations, confirmed_at.as_deref())
            == (
                row.observation_count,
                row.confirmed_count,
                row.last_confirmed_at.as_deref(),
            )
        {
            return Ok(Outcome::Unchanged(Some(id)));
        }
        conn.prepare_cached(
            "UPDATE memories SET observation_count = ?2, confirmed_count = ?3, \
             last_confirmed_at = ?4 WHERE id = ?1",
        )?
        .execute(params![
            id,
            row.observation_count,
            row.confirmed_count,
            row.last_confirmed_at
        ])?;
        return Ok(Outcome::Counts(id));
    }
    let content_changed: bool = conn
        .prepare_cached("SELECT content IS NOT ?2 FROM memories WHERE id = ?1")?
        .query_row(params![id, row.content], |r| r.get(0))?;
    memories::tag_edit(conn, id, true, |conn| {
        conn.prepare_cached(
            "UPDATE memories SET namespace = ?2, scope = ?3, scope_owner = ?4, content = ?5, \
             subject = ?6, category = ?7, tier = ?8, importance = ?9, confidence = ?10, \
             pinned = ?11, status = ?12, metadata = ?13, \
             superseded_by = coalesce(?14, CASE WHEN ?15 IS NULL THEN NULL ELSE superseded_by END), \
             superseded_at = ?16, observation_count = ?17, confirmed_count = ?18, \
             last_confirmed_at = ?19, expires_at = ?20, thread = ?21, thread_pos = ?22, \
             occurred_at = ?23 WHERE id = ?1",
        )?
        .execute(params![
            id,
            row.namespace,
            row.scope,
            row.scope_owner,
            row.content,
            row.subject,
            row.category,
            row.tier,
            row.importance,
            row.confidence,
            i64::from(row.pinned),
            row.status,
            row.metadata,
            superseded_by,
            row.superseded_by_uid,
            row.superseded_at,
            row.observation_count,
            row.confirmed_count,
            row.last_confirmed_at,
            row.expires_at,
            row.thread,
            row.thread_pos,
            row.occurred_at,
        ])?;
        memories::set_tags(conn, id, &row.tags)
    })?;
    finish(conn, id, row)?;
    if content_changed {
        memories::set_sketch(conn, id, &row.content)?;
    }
    Ok(Outcome::Updated(id))
}

fn insert(conn: &Connection, row: &TeamRow, superseded_by: Option<i64>) -> Result<i64, StoreError> {
    // PostgreSQL's rev and time go in with the row: no trigger moves them
    // on an insert.
    conn.prepare_cached(
        "INSERT INTO memories (uid, namespace, scope, scope_owner, content, subject, category, \
         tier, importance, confidence, pinned, status, metadata, superseded_by, superseded_at, \
         dedupe_key, observation_count, confirmed_count, last_confirmed_at, source, created_by, \
         expires_at, created_at, updated_at, thread, thread_pos, occurred_at, rev, team_rev) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
         ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?28)",
    )?
    .execute(params![
        row.uid,
        row.namespace,
        row.scope,
        row.scope_owner,
        row.content,
        row.subject,
        row.category,
        row.tier,
        row.importance,
        row.confidence,
        i64::from(row.pinned),
        row.status,
        row.metadata,
        superseded_by,
        row.superseded_at,
        row.dedupe_key,
        row.observation_count,
        row.confirmed_count,
        row.last_confirmed_at,
        row.source,
        row.created_by,
        row.expires_at,
        row.created_at,
        row.updated_at,
        row.thread,
        row.thread_pos,
        row.occurred_at,
        row.rev,
    ])?;
    let id = conn.last_insert_rowid();
    memories::tags_of_new_row(conn, id, &row.tags)?;
    memories::set_sketch(conn, id, &row.content)?;
    Ok(id)
}

/// PostgreSQL's rev, time and dedup key: the triggers moved the local rev
/// and time by their own count.
fn finish(conn: &Connection, id: i64, row: &TeamRow) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE memories SET rev = ?2, updated_at = ?3, team_rev = ?2, dedupe_key = ?4 \
         WHERE id = ?1",
    )?
    .execute(params![id, row.rev, row.updated_at, row.dedupe_key])?;
    Ok(())
}

/// Links rows whose supersession names a row that arrived after them (in
/// the same page or a later one): `superseded_by` from the uid.
///
/// # Errors
/// SQLite errors.
pub fn link(conn: &Connection, row: &TeamRow) -> Result<(), StoreError> {
    let Some(target) = &row.superseded_by_uid else {
        return Ok(());
    };
    let Some(by) = id_of(conn, target)? else {
        return Ok(());
    };
    let changed = conn
        .prepare_cached(
            "UPDATE memories SET superseded_by = ?2 WHERE uid = ?1 AND superseded_by IS NOT ?2",
        )?
        .execute(params![row.uid, by])?;
    if changed > 0 {
        // The link is PostgreSQL's, not a new edit here: its rev stays.
        conn.prepare_cached("UPDATE memories SET rev = ?2, updated_at = ?3 WHERE uid = ?1")?
            .execute(params![row.uid, row.rev, row.updated_at])?;
    }
    Ok(())
}

/// Records who made the change of row `id` (at the generation it last
/// changed here) as PostgreSQL names them: a session of this machine
/// (`own` is its name) or of another, or a writer there that is not memd.
///
/// # Errors
/// SQLite errors.
/// Records where a row this machine just inserted from PostgreSQL came
/// from (its provenance's origin): the machine and role PostgreSQL names
/// (none for this machine's own), and `job`'s way in when this machine's
/// session wrote it.
///
/// # Errors
/// SQLite errors.
pub fn record_origin(
    conn: &Connection,
    id: i64,
    row: &TeamRow,
    own: &str,
    job: Option<&memd_proto::Origin>,
) -> Result<(), StoreError> {
    // PostgreSQL names who made the row's last change: the creator while
    // the row is at its first version.
    let first = row.rev <= 1;
    let machine = row.author.machine.clone().filter(|m| m != own && first);
    let via = match (job, &machine) {
        (Some(j), _) => j.via.clone(),
        (None, Some(_)) => Some("team".to_string()),
        (None, None) if !first => Some("team".to_string()),
        (None, None) => None,
    };
    let origin = memd_proto::Origin {
        source: row.source.clone(),
        via,
        agent: row
            .author
            .agent
            .clone()
            .filter(|_| first)
            .or_else(|| row.created_by.clone()),
        session: row.author.session.clone().filter(|_| first),
        machine,
        role: row.author.role.clone().filter(|_| first),
        at: row.created_at.clone(),
    };
    memories::write_source(conn, id, 0, &origin)
}

pub fn record_author(
    conn: &Connection,
    id: i64,
    author: &RemoteAuthor,
    own: &str,
) -> Result<(), StoreError> {
    let machine = author.machine.as_deref().filter(|m| *m != own);
    conn.prepare_cached(
        "INSERT OR REPLACE INTO memory_authors (memory_id, generation, session, agent, machine, \
         external, rev) SELECT id, changed_generation, ?2, ?3, ?4, ?5, rev FROM memories \
         WHERE id = ?1",
    )?
    .execute(params![
        id,
        author.session.clone().unwrap_or_default(),
        author.agent.clone().unwrap_or_default(),
        machine,
        author.is_external(),
    ])?;
    Ok(())
}

/// Records that the PostgreSQL number `seq` is applied at local generation
/// `g` (a session's view, translated).
///
/// # Errors
/// SQLite errors.
pub fn record_seq(conn: &Connection, g: u64, seq: i64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO memory_team_seq (generation, seq) VALUES (?1, ?2)",
    )?
    .execute(params![g as i64, seq])?;
    Ok(())
}

/// The highest PostgreSQL number applied at or before local generation `g`
/// (0 when none).
///
/// # Errors
/// SQLite errors.
pub fn seq_at(conn: &Connection, g: u64) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached("SELECT coalesce(max(seq), 0) FROM memory_team_seq WHERE generation <= ?1")?
        .query_row([g as i64], |r| r.get(0))?)
}
