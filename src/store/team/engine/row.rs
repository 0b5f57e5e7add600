//! A shared row as PostgreSQL holds it, and how it reads from a query.

use memd_proto::Memory;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

/// Who made a change, as PostgreSQL recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RemoteAuthor {
    /// `session`, `daemon` or `external`.
    pub kind: String,
    /// The machine (memd's writes only).
    pub machine: Option<String>,
    /// The agent (a session's writes only).
    pub agent: Option<String>,
    /// The session (a session's writes only).
    pub session: Option<String>,
    /// The PostgreSQL role that made it (`session_user`).
    pub role: Option<String>,
}

impl RemoteAuthor {
    /// A change made outside memd.
    pub fn is_external(&self) -> bool {
        self.kind == "external"
    }
}

/// A shared row as PostgreSQL holds it: the memory row (one shape,
/// `memd_proto::Memory`: its local-only fields — `id`, use counts,
/// `changed_generation`, `turn` — left at their defaults), plus what only
/// PostgreSQL keeps: the superseding row by uid, the tombstone, the number
/// of the transaction that last changed it and who made that change. It
/// derefs to the memory, so `row.content` reads as on any row.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TeamRow {
    /// The row's columns (`rev`: PostgreSQL's).
    pub memory: Memory,
    /// The row that supersedes it, by uid.
    pub superseded_by_uid: Option<String>,
    /// A tombstone.
    pub deleted: bool,
    /// The number of the transaction that last changed it.
    pub changed_seq: i64,
    /// Who changed it last.
    pub author: RemoteAuthor,
}

impl std::ops::Deref for TeamRow {
    type Target = Memory;

    fn deref(&self) -> &Memory {
        &self.memory
    }
}

impl std::ops::DerefMut for TeamRow {
    fn deref_mut(&mut self) -> &mut Memory {
        &mut self.memory
    }
}

/// The columns of [`TeamRow`], in the order [`TeamRow::from_pg`] reads.
pub const COLUMNS: &str = "uid, namespace, scope, scope_owner, content, subject, category, \
    tier, importance, confidence, pinned, status, metadata, tags, superseded_by_uid, \
    superseded_at, dedupe_key, observation_count, confirmed_count, last_confirmed_at, source, \
    created_by, expires_at, created_at, updated_at, thread, thread_pos, occurred_at, rev, \
    deleted, changed_seq, changed_kind, changed_machine, changed_agent, changed_session, \
    changed_role";

/// How many columns [`COLUMNS`] names (a query may select more after
/// them).
pub const COLUMN_COUNT: usize = 36;

impl TeamRow {
    /// Reads a row selected with [`COLUMNS`].
    ///
    /// # Errors
    /// When a column does not have the expected type.
    pub fn from_pg(r: &Row) -> Result<TeamRow, tokio_postgres::Error> {
        Ok(TeamRow {
            memory: Memory {
                uid: r.try_get(0)?,
                namespace: r.try_get(1)?,
                scope: r.try_get(2)?,
                scope_owner: r.try_get(3)?,
                content: r.try_get(4)?,
                subject: r.try_get(5)?,
                category: r.try_get(6)?,
                tier: i64::from(r.try_get::<_, i32>(7)?),
                importance: r.try_get(8)?,
                confidence: r.try_get(9)?,
                pinned: r.try_get(10)?,
                status: r.try_get(11)?,
                metadata: r.try_get(12)?,
                tags: r.try_get(13)?,
                superseded_at: r.try_get(15)?,
                dedupe_key: r.try_get(16)?,
                observation_count: i64::from(r.try_get::<_, i32>(17)?),
                confirmed_count: i64::from(r.try_get::<_, i32>(18)?),
                last_confirmed_at: r.try_get(19)?,
                source: r.try_get(20)?,
                created_by: r.try_get(21)?,
                expires_at: r.try_get(22)?,
                created_at: r.try_get(23)?,
                updated_at: r.try_get(24)?,
                thread: r.try_get(25)?,
                thread_pos: r.try_get(26)?,
                occurred_at: r.try_get(27)?,
                rev: r.try_get(28)?,
                ..Memory::default()
            },
            superseded_by_uid: r.try_get(14)?,
            deleted: r.try_get(29)?,
            changed_seq: r.try_get(30)?,
            author: RemoteAuthor {
                kind: r.try_get(31)?,
                machine: r.try_get(32)?,
                agent: r.try_get(33)?,
                session: r.try_get(34)?,
                role: r.try_get(35)?,
            },
        })
    }
}

/// The `INSERT` of a row into `memd.memories`, every column memd writes,
/// `$1` … `$28` in the order of [`Insert::params`]; the caller appends its
/// `ON CONFLICT` and `RETURNING`.
pub const INSERT: &str = "INSERT INTO memd.memories (uid, namespace, scope, scope_owner, \
    content, subject, category, tier, importance, confidence, pinned, status, metadata, tags, \
    superseded_by_uid, superseded_at, dedupe_key, observation_count, confirmed_count, \
    last_confirmed_at, source, created_by, expires_at, created_at, thread, thread_pos, \
    occurred_at, rev) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, \
    $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28)";

/// A row's values for [`INSERT`] (PostgreSQL's integers are 32-bit where
/// SQLite's are 64).
pub struct Insert<'a> {
    row: &'a TeamRow,
    tier: i32,
    observations: i32,
    confirmations: i32,
}

impl<'a> Insert<'a> {
    /// The values of `row`.
    pub fn of(row: &'a TeamRow) -> Insert<'a> {
        Insert {
            row,
            tier: i32::try_from(row.tier).unwrap_or(2),
            observations: i32::try_from(row.observation_count).unwrap_or(1),
            confirmations: i32::try_from(row.confirmed_count).unwrap_or(0),
        }
    }

    /// `$1` … `$28`.
    pub fn params(&self) -> [&(dyn ToSql + Sync); 28] {
        let a = self.row;
        [
            &a.uid,
            &a.namespace,
            &a.scope,
            &a.scope_owner,
            &a.content,
            &a.subject,
            &a.category,
            &self.tier,
            &a.importance,
            &a.confidence,
            &a.pinned,
            &a.status,
            &a.metadata,
            &a.tags,
            &a.superseded_by_uid,
            &a.superseded_at,
            &a.dedupe_key,
            &self.observations,
            &self.confirmations,
            &a.last_confirmed_at,
            &a.source,
            &a.created_by,
            &a.expires_at,
            &a.created_at,
            &a.thread,
            &a.thread_pos,
            &a.occurred_at,
            &a.rev,
        ]
    }
}

/// Whether a row stays on its machine whatever its namespace: a captured
/// turn (session-scope rows are the namespace rule's, `Team::shares`).
pub fn never_shared(row: &TeamRow) -> bool {
    row.source == "capture"
}
