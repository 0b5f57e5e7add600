//! A row of `memories` as memd reads and writes it: the columns read
//! (`COLUMNS`) and their mapping, the columns a writer chooses (`WRITTEN`),
//! reads by id.

use memd_proto::Memory;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, params_from_iter};

use crate::store::StoreError;

/// The columns of [`Memory`], in [`row_to_memory`] order, for a `memories m`
/// alias. Tags come as a JSON array from a correlated subquery.
pub const COLUMNS: &str = "m.id, m.uid, m.namespace, m.scope, m.scope_owner, m.content, \
    m.subject, m.category, m.tier, m.importance, m.confidence, m.pinned, m.status, m.metadata, \
    (SELECT json_group_array(tag) FROM (SELECT tag FROM memory_tags t \
        WHERE t.memory_id = m.id ORDER BY tag)) AS tags, \
    m.superseded_by, m.superseded_at, m.dedupe_key, m.observation_count, m.confirmed_count, \
    m.last_confirmed_at, m.use_count, m.last_used_at, m.access_score, m.source, m.created_by, \
    m.expires_at, m.created_at, m.updated_at, m.rev, m.changed_generation, m.thread, \
    m.thread_pos, m.occurred_at, m.turn, \
    (SELECT json_group_array(json_array(source, via, agent, session, machine, role, at)) \
        FROM (SELECT * FROM memory_sources s WHERE s.memory_id = m.id ORDER BY n)) AS sources";

/// Maps a row selected with [`COLUMNS`] (starting at column 0).
///
/// # Errors
/// SQLite type errors (a shell can store any type in any column).
pub fn row_to_memory(row: &Row<'_>) -> rusqlite::Result<Memory> {
    let tags: String = row.get(14)?;
    Ok(Memory {
        id: row.get(0)?,
        uid: row.get(1)?,
        namespace: row.get(2)?,
        scope: row.get(3)?,
        scope_owner: row.get(4)?,
        content: text(row, 5)?,
        subject: row.get(6)?,
        category: row.get(7)?,
        tier: row.get(8)?,
        importance: row.get(9)?,
        confidence: row.get(10)?,
        pinned: row.get::<_, i64>(11)? != 0,
        status: row.get(12)?,
        metadata: text(row, 13)?,
        tags: serde_json::from_str(&tags).unwrap_or_default(),
        superseded_by: row.get(15)?,
        superseded_at: row.get(16)?,
        dedupe_key: row.get(17)?,
        observation_count: row.get(18)?,
        confirmed_count: row.get(19)?,
        last_confirmed_at: row.get(20)?,
        use_count: row.get(21)?,
        last_used_at: row.get(22)?,
        access_score: row.get(23)?,
        source: row.get(24)?,
        created_by: row.get(25)?,
        expires_at: row.get(26)?,
        created_at: row.get(27)?,
        updated_at: row.get(28)?,
        rev: row.get(29)?,
        changed_generation: row.get(30)?,
        thread: row.get(31)?,
        thread_pos: row.get(32)?,
        occurred_at: row.get(33)?,
        turn: row.get(34)?,
        provenance: Some(provenance(&row.get::<_, String>(35)?)),
    })
}

/// The provenance of a row from its `memory_sources` as JSON arrays (the
/// origin first).
fn provenance(sources: &str) -> memd_proto::Provenance {
    type Columns = (
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
        String,
    );
    let rows: Vec<Columns> = serde_json::from_str(sources).unwrap_or_default();
    memd_proto::Provenance::of(
        rows.into_iter()
            .map(
                |(source, via, agent, session, machine, role, at)| memd_proto::Origin {
                    source,
                    via,
                    agent,
                    session,
                    machine,
                    role,
                    at,
                },
            )
            .collect(),
    )
}

/// Reads a text column that an external writer may have filled with another
/// type (a number, a blob): it is shown as text rather than failing the read.
fn text(row: &Row<'_>, idx: usize) -> rusqlite::Result<String> {
    Ok(match row.get::<_, Value>(idx)? {
        Value::Text(s) => s,
        Value::Integer(i) => i.to_string(),
        Value::Real(f) => f.to_string(),
        Value::Blob(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::Null => String::new(),
    })
}

/// The columns of `memories` a write sets from a [`Memory`], in
/// [`written`]'s order: first the [`CHOSEN`] a writer chooses for a new
/// row (the store assigns the rest itself), then what an import also
/// keeps from its file. `id` and `superseded_by` are never taken from a
/// row: the store decides them.
pub const WRITTEN: [&str; 31] = [
    "namespace",
    "scope",
    "scope_owner",
    "content",
    "subject",
    "category",
    "tier",
    "importance",
    "confidence",
    "pinned",
    "status",
    "metadata",
    "dedupe_key",
    "source",
    "created_by",
    "expires_at",
    "thread",
    "thread_pos",
    "occurred_at",
    "turn",
    "uid",
    "superseded_at",
    "observation_count",
    "confirmed_count",
    "last_confirmed_at",
    "use_count",
    "last_used_at",
    "access_score",
    "created_at",
    "updated_at",
    "rev",
];

/// How many of [`WRITTEN`] a writer chooses for a new row (the uid only
/// when it is not empty: a captured turn's; SQLite makes the others).
pub const CHOSEN: usize = 21;

/// The values of [`WRITTEN`] in `m`.
pub fn written(m: &Memory) -> [Value; 31] {
    let text = |s: &str| Value::Text(s.to_string());
    let opt = |s: &Option<String>| s.clone().map_or(Value::Null, Value::Text);
    let int = |i: Option<i64>| i.map_or(Value::Null, Value::Integer);
    [
        text(&m.namespace),
        text(&m.scope),
        opt(&m.scope_owner),
        text(&m.content),
        opt(&m.subject),
        text(&m.category),
        Value::Integer(m.tier),
        text(&m.importance),
        Value::Real(m.confidence),
        Value::Integer(i64::from(m.pinned)),
        text(&m.status),
        text(&m.metadata),
        opt(&m.dedupe_key),
        text(&m.source),
        opt(&m.created_by),
        opt(&m.expires_at),
        opt(&m.thread),
        int(m.thread_pos),
        opt(&m.occurred_at),
        opt(&m.turn),
        text(&m.uid),
        opt(&m.superseded_at),
        Value::Integer(m.observation_count),
        Value::Integer(m.confirmed_count),
        opt(&m.last_confirmed_at),
        Value::Integer(m.use_count),
        opt(&m.last_used_at),
        Value::Real(m.access_score),
        text(&m.created_at),
        text(&m.updated_at),
        Value::Integer(m.rev),
    ]
}

/// Reads one row by id, whatever its visibility.
///
/// # Errors
/// SQLite errors.
pub fn fetch(conn: &Connection, id: i64) -> Result<Option<Memory>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM memories m WHERE m.id = ?1");
    Ok(conn
        .prepare_cached(&sql)?
        .query_row([id], row_to_memory)
        .optional()?)
}

/// Full rows by id (those that exist), for the hits of a search.
///
/// # Errors
/// SQLite errors.
pub fn by_ids(
    conn: &Connection,
    ids: &[i64],
) -> Result<std::collections::HashMap<i64, Memory>, StoreError> {
    let mut out = std::collections::HashMap::with_capacity(ids.len());
    if ids.is_empty() {
        return Ok(out);
    }
    let marks = vec!["?"; ids.len()].join(", ");
    let sql = format!("SELECT {COLUMNS} FROM memories m WHERE m.id IN ({marks})");
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map(params_from_iter(ids), row_to_memory)?;
    for m in rows {
        let m = m?;
        out.insert(m.id, m);
    }
    Ok(out)
}

/// Every row, every column, tags included, by id.
///
/// # Errors
/// SQLite errors.
pub fn all_rows(conn: &Connection) -> Result<Vec<memd_proto::Memory>, StoreError> {
    let sql = format!("SELECT {COLUMNS} FROM memories m ORDER BY m.id");
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt
        .query_map([], row_to_memory)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}
