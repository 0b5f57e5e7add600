//! Rows of `memories`: mapping, writes, visibility and filters.
//!
//! Every read that serves a session goes through [`View`]: the session's
//! namespace (unless the request names others explicitly), project scope plus
//! the session's own agent and session scope, and — unless asked — no
//! archived, superseded or expired rows.

use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, Row, params_from_iter};

use memd_proto::Memory;

use super::StoreError;
use crate::gate::{Changes, MetaMatch, Namespaces, NewMemory, View};

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

/// The insert of a new row: the [`CHOSEN`] columns of [`WRITTEN`], where
/// a threaded memory without a position goes after the thread's last.
static INSERT_NEW: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    let columns = &WRITTEN[..CHOSEN];
    let mark = |c: &str| {
        let at = columns.iter().position(|x| *x == c);
        format!("?{}", at.expect("a chosen column") + 1)
    };
    let values: Vec<String> = columns
        .iter()
        .map(|c| match *c {
            "thread_pos" => format!(
                "CASE WHEN {thread} IS NULL THEN NULL ELSE coalesce({pos}, \
                 (SELECT coalesce(max(thread_pos), 0) + 1 FROM memories \
                 WHERE namespace = {namespace} AND thread = {thread})) END",
                thread = mark("thread"),
                pos = mark("thread_pos"),
                namespace = mark("namespace"),
            ),
            "uid" => format!(
                "coalesce(nullif({}, ''), lower(hex(randomblob(16))))",
                mark("uid")
            ),
            c => mark(c),
        })
        .collect();
    format!(
        "INSERT INTO memories ({}) VALUES ({})",
        columns.join(", "),
        values.join(", ")
    )
});

/// Inserts a memory and its tags; returns the new id.
///
/// # Errors
/// SQLite errors.
pub fn insert(conn: &Connection, m: &NewMemory) -> Result<i64, StoreError> {
    let values = written(&m.row);
    conn.prepare_cached(&INSERT_NEW)?
        .execute(params_from_iter(&values[..CHOSEN]))?;
    let id = conn.last_insert_rowid();
    tags_of_new_row(conn, id, &m.row.tags)?;
    if let Some(p) = &m.row.provenance {
        // What memd knows of the origin beyond the row's own columns (the
        // insert trigger's row 0), and the sources an exported row had.
        for (n, origin) in p.sources.iter().enumerate() {
            write_source(conn, id, n, origin)?;
        }
    }
    match &m.sketch {
        Some(sketch) => store_sketch(conn, id, sketch)?,
        // A captured turn is never a merge target: no sketch.
        None if m.row.source == "capture" => {}
        None => set_sketch(conn, id, &m.row.content)?,
    }
    Ok(id)
}

/// Indexes rows for search as the index triggers do (a `WHERE` on `id`
/// may follow).
pub const INDEX_FROM_SOURCE: &str = "INSERT INTO memories_fts (rowid, content, subject, ctx, date, ns) \
     SELECT id, content, subject, ctx, date, ns FROM memories_fts_source";

/// Holds the search index's inserts of new rows outside a thread until
/// [`index_held`] (schema v18): a large job then writes the index once
/// instead of one segment per row. Only inside a job, which must end with
/// [`index_held`] ([`crate::store::WriteCtx::hold_index`] sees to it).
///
/// # Errors
/// SQLite errors.
pub fn hold_index(conn: &Connection) -> Result<(), StoreError> {
    conn.prepare_cached("INSERT OR IGNORE INTO memory_fts_hold (id) VALUES (1)")?
        .execute([])?;
    Ok(())
}

/// Ends [`hold_index`]: indexes every row held, in one statement.
///
/// # Errors
/// SQLite errors.
pub fn index_held(conn: &Connection) -> Result<(), StoreError> {
    for sql in [
        "DELETE FROM memory_fts_hold",
        // A held row a later statement of the job indexed already (its
        // content changed) is indexed again, once.
        "DELETE FROM memories_fts WHERE rowid IN (SELECT memory_id FROM memory_fts_pending)",
        &format!("{INDEX_FROM_SOURCE} WHERE id IN (SELECT memory_id FROM memory_fts_pending)"),
        "DELETE FROM memory_fts_pending",
    ] {
        conn.prepare_cached(sql)?.execute([])?;
    }
    Ok(())
}

/// Stores the near-duplicate sketch of a row's content (see schema v4).
///
/// # Errors
/// SQLite errors.
pub fn set_sketch(conn: &Connection, id: i64, content: &str) -> Result<(), StoreError> {
    let sketch = crate::gate::similar::sketch(&crate::gate::similar::profile(content));
    store_sketch(conn, id, &sketch)
}

fn store_sketch(conn: &Connection, id: i64, sketch: &[i64]) -> Result<(), StoreError> {
    let mut stmt = conn
        .prepare_cached("INSERT OR IGNORE INTO memory_sketch (hash, memory_id) VALUES (?1, ?2)")?;
    for h in sketch {
        stmt.execute((h, id))?;
    }
    Ok(())
}

/// Computes, for the rows `ids`, a near-duplicate sketch where there is none
/// and the dedup key where there is none (rows written by other tools, or
/// whose content another tool changed), from their content as it is now;
/// returns how many rows got either. Neither is an edit: no generation move.
///
/// # Errors
/// SQLite errors.
pub fn backfill(conn: &Connection, ids: &[i64]) -> Result<usize, StoreError> {
    let mut read = conn.prepare_cached(
        "SELECT content, dedupe_key IS NULL, \
         NOT EXISTS (SELECT 1 FROM memory_sketch s WHERE s.memory_id = m.id) \
         FROM memories m WHERE id = ?1",
    )?;
    let mut set_key = conn.prepare_cached("UPDATE memories SET dedupe_key = ?1 WHERE id = ?2")?;
    let mut n = 0;
    for id in ids {
        let Some((content, no_key, no_sketch)) = read
            .query_row([id], |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?.unwrap_or_default(),
                    r.get::<_, bool>(1)?,
                    r.get::<_, bool>(2)?,
                ))
            })
            .optional()?
        else {
            continue;
        };
        if no_key {
            set_key.execute((crate::gate::dedupe_key(&content), id))?;
        }
        if no_sketch {
            set_sketch(conn, *id, &content)?;
        }
        n += usize::from(no_key || no_sketch);
    }
    Ok(n)
}

/// The memory at a thread position, if one is there (any status): a
/// transcript turn added again is the same memory.
///
/// # Errors
/// SQLite errors.
pub fn at_thread_position(
    conn: &Connection,
    namespace: &str,
    thread: &str,
    pos: i64,
) -> Result<Option<i64>, StoreError> {
    Ok(conn
        .prepare_cached(
            "SELECT id FROM memories WHERE namespace = ?1 AND thread = ?2 AND thread_pos = ?3 \
             ORDER BY id LIMIT 1",
        )?
        .query_row((namespace, thread, pos), |r| r.get(0))
        .optional()?)
}

/// Rows that count for dedup: active (not superseded, not archived, not
/// expired) in the same namespace, scope and owner. `?1` namespace, `?2`
/// scope, `?3` owner, `?4` now.
const SAME_PLACE: &str = "m.namespace = ?1 AND m.scope = ?2 AND m.scope_owner IS ?3 \
    AND m.superseded_by IS NULL AND m.status <> 'archived' AND m.source <> 'capture' \
    AND (m.expires_at IS NULL OR m.expires_at > ?4)";

/// The active row with the same dedup key in the same namespace, scope and
/// owner, if any. A stored key is only trusted when the row's content still
/// gives it (another tool may have changed the content).
///
/// # Errors
/// SQLite errors.
pub fn find_duplicate(
    conn: &Connection,
    m: &NewMemory,
    now: &str,
) -> Result<Option<i64>, StoreError> {
    let sql = format!(
        "SELECT m.id, m.content FROM memories m WHERE {SAME_PLACE} AND m.dedupe_key = ?5 \
         ORDER BY m.id LIMIT 8"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let m = &m.row;
    let mut rows = stmt.query((&m.namespace, &m.scope, &m.scope_owner, now, &m.dedupe_key))?;
    while let Some(row) = rows.next()? {
        let content: String = row.get(1)?;
        if m.dedupe_key.as_deref() == Some(crate::gate::dedupe_key(&content).as_str()) {
            return Ok(Some(row.get(0)?));
        }
    }
    Ok(None)
}

/// Rows sharing one sketch hash looked at per add, at most.
const SKETCH_WALK: u32 = 512;

/// Candidates for the near-duplicate check: active rows of the same
/// namespace, scope and owner sharing a sketch hash, at most `limit` per
/// hash — a few index lookups, never a scan of the namespace. Each hash has
/// its own limit, so a common shingle shared by thousands of rows cannot
/// crowd out a near duplicate found through the others.
///
/// # Errors
/// SQLite errors.
pub fn sketch_candidates(
    conn: &Connection,
    m: &NewMemory,
    sketch: &[i64],
    now: &str,
    limit: u32,
) -> Result<Vec<(i64, String)>, StoreError> {
    // Sketch-first, streaming: stops at `limit` rows for each hash, and
    // looks at no more than the newest SKETCH_WALK rows sharing it (rows of
    // other namespaces, scopes or owners included): a hash common across
    // the whole database costs a bounded walk, and a near duplicate it
    // leaves out is still found through the sketch's other hashes.
    let sql = format!(
        "SELECT m.id, m.content FROM \
         (SELECT memory_id FROM memory_sketch WHERE hash = ?6 \
          ORDER BY memory_id DESC LIMIT {SKETCH_WALK}) s \
         CROSS JOIN memories m ON m.id = s.memory_id WHERE {SAME_PLACE} LIMIT ?5"
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut out: Vec<(i64, String)> = Vec::new();
    let m = &m.row;
    for h in sketch {
        let rows = stmt.query_map(
            (
                &m.namespace,
                &m.scope,
                &m.scope_owner,
                now,
                i64::from(limit),
                h,
            ),
            |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                ))
            },
        )?;
        for row in rows {
            let (id, content) = row?;
            if !out.iter().any(|(seen, _)| *seen == id) {
                out.push((id, content));
            }
        }
    }
    Ok(out)
}

/// Merges an add into an existing row: `observation_count + 1`, tags
/// united (new tags are one change of the row). The content never changes.
///
/// # Errors
/// SQLite errors.
pub fn merge_into(conn: &Connection, id: i64, new: &Memory) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE memories SET observation_count = observation_count + 1 WHERE id = ?1",
    )?
    .execute([id])?;
    // The merged add is one more source of the row (its trust is the
    // lowest of them).
    let origin = new
        .provenance
        .as_ref()
        .and_then(|p| p.sources.first().cloned())
        .unwrap_or_else(|| memd_proto::Origin {
            source: new.source.clone(),
            agent: new.created_by.clone(),
            at: new.created_at.clone(),
            ..memd_proto::Origin::default()
        });
    let n: i64 = conn
        .prepare_cached("SELECT coalesce(max(n) + 1, 0) FROM memory_sources WHERE memory_id = ?1")?
        .query_row([id], |r| r.get(0))?;
    write_source(conn, id, usize::try_from(n).unwrap_or(0), &origin)?;
    tag_edit(conn, id, true, |conn| add_tags(conn, id, &new.tags))
}

/// Makes `sources` (origin first) row `id`'s sources, replacing what it
/// held (an imported row).
///
/// # Errors
/// SQLite errors.
pub fn set_sources(
    conn: &Connection,
    id: i64,
    sources: &[memd_proto::Origin],
) -> Result<(), StoreError> {
    if sources.is_empty() {
        return Ok(());
    }
    conn.prepare_cached("DELETE FROM memory_sources WHERE memory_id = ?1")?
        .execute([id])?;
    for (n, o) in sources.iter().enumerate() {
        write_source(conn, id, n, o)?;
    }
    Ok(())
}

/// Records the sources of `sources` (origin first) that row `id` does not
/// hold yet (a merge's added one).
///
/// # Errors
/// SQLite errors.
pub fn add_sources(
    conn: &Connection,
    id: i64,
    sources: &[memd_proto::Origin],
) -> Result<(), StoreError> {
    let held: i64 = conn
        .prepare_cached("SELECT count(*) FROM memory_sources WHERE memory_id = ?1")?
        .query_row([id], |r| r.get(0))?;
    let held = usize::try_from(held).unwrap_or(0);
    for (n, o) in sources.iter().enumerate().skip(held.max(1)) {
        write_source(conn, id, n, o)?;
    }
    Ok(())
}

/// Records source `n` of row `id` (0: its origin).
///
/// # Errors
/// SQLite errors.
pub fn write_source(
    conn: &Connection,
    id: i64,
    n: usize,
    o: &memd_proto::Origin,
) -> Result<(), StoreError> {
    let n = i64::try_from(n).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "INSERT OR REPLACE INTO memory_sources \
         (memory_id, n, source, via, agent, session, machine, role, at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, \
         coalesce(nullif(?9, ''), (SELECT created_at FROM memories WHERE id = ?1), \
             strftime('%Y-%m-%dT%H:%M:%fZ', 'now')))",
    )?
    .execute(rusqlite::params![
        id, n, o.source, o.via, o.agent, o.session, o.machine, o.role, o.at
    ])?;
    Ok(())
}

/// Runs `f`, which changes the tags of row `id`, as one change of the row
/// (schema v10's `memory_tag_edit`): the row's rev moves once if any tag
/// changed and nothing else in the group moved it already — or never, when
/// `counts` is false (the first tags of a row being created).
///
/// # Errors
/// SQLite errors.
pub fn tag_edit<T>(
    conn: &Connection,
    id: i64,
    counts: bool,
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO memory_tag_edit (memory_id, rev, tags, generation, counts) \
         SELECT id, rev, coalesce((SELECT group_concat(tag, char(10)) FROM \
             (SELECT tag FROM memory_tags WHERE memory_id = ?1 ORDER BY tag)), ''), \
         (SELECT CAST(value AS INTEGER) FROM memory_meta WHERE key = 'generation'), ?2 \
         FROM memories WHERE id = ?1",
    )?
    .execute((id, counts))?;
    let out = f(conn);
    conn.prepare_cached("DELETE FROM memory_tag_edit WHERE memory_id = ?1")?
        .execute([id])?;
    out
}

/// Closes tag-edit groups left open (only a crash between statements of
/// one transaction could leave one, and SQLite rolls those back; this is
/// the belt to those braces): with a group open, other tools' tag changes of
/// the row would not move its rev.
///
/// # Errors
/// SQLite errors.
pub fn close_stale_tag_edits(conn: &Connection) -> Result<(), StoreError> {
    // Read first: a read-only database must still open.
    let open: bool = conn.query_row("SELECT EXISTS (SELECT 1 FROM memory_tag_edit)", [], |r| {
        r.get(0)
    })?;
    if open {
        conn.execute("DELETE FROM memory_tag_edit", [])?;
    }
    Ok(())
}

/// The tags of a row being created (or wholly replaced): part of its
/// creation, not a change of it.
///
/// # Errors
/// SQLite errors.
pub fn tags_of_new_row(conn: &Connection, id: i64, tags: &[String]) -> Result<(), StoreError> {
    if tags.is_empty() {
        return Ok(());
    }
    tag_edit(conn, id, false, |conn| add_tags(conn, id, tags))
}

/// Adds tags to a memory (existing ones are kept). Each new tag is a change
/// of the row unless the caller groups them with [`tag_edit`].
///
/// # Errors
/// SQLite errors.
fn add_tags(conn: &Connection, id: i64, tags: &[String]) -> Result<(), StoreError> {
    let mut stmt =
        conn.prepare_cached("INSERT OR IGNORE INTO memory_tags (memory_id, tag) VALUES (?1, ?2)")?;
    for tag in tags {
        stmt.execute((id, tag))?;
    }
    Ok(())
}

/// Replaces a memory's tag set, touching only the tags that change. Call it
/// inside a [`tag_edit`] group.
///
/// # Errors
/// SQLite errors.
pub(crate) fn set_tags(conn: &Connection, id: i64, tags: &[String]) -> Result<(), StoreError> {
    let current = tags_of(conn, id)?;
    let mut del =
        conn.prepare_cached("DELETE FROM memory_tags WHERE memory_id = ?1 AND tag = ?2")?;
    for old in current.iter().filter(|t| !tags.contains(t)) {
        del.execute((id, old))?;
    }
    let added: Vec<String> = tags
        .iter()
        .filter(|t| !current.contains(t))
        .cloned()
        .collect();
    add_tags(conn, id, &added)
}

fn tags_of(conn: &Connection, id: i64) -> Result<Vec<String>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT tag FROM memory_tags WHERE memory_id = ?1 ORDER BY tag")?;
    let tags = stmt
        .query_map([id], |r| r.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(tags)
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

impl View {
    /// Appends the view's conditions (each starting with ` AND `) to `sql`,
    /// with their parameters, for a `memories m` alias.
    pub fn push_conditions(&self, sql: &mut String, params: &mut Vec<Value>) {
        let p = |v: Value, params: &mut Vec<Value>| {
            params.push(v);
            format!("?{}", params.len())
        };
        match &self.namespaces {
            Namespaces::All => {}
            Namespaces::Only(list) => {
                let marks: Vec<String> = list
                    .iter()
                    .map(|ns| p(Value::Text(ns.clone()), params))
                    .collect();
                // With a tag filter, the tag index is the selective one: a
                // bare `namespace` term would make the planner walk the
                // whole namespace through its index (15 ms at 100K rows,
                // 0.8 ms from the tags); `+` keeps that index out.
                let column = if self.tags.is_empty() {
                    "m.namespace"
                } else {
                    "+m.namespace"
                };
                sql.push_str(&format!(" AND {column} IN ({})", marks.join(", ")));
            }
        }
        if !self.every_owner {
            let agent = p(Value::Text(self.agent.clone()), params);
            let session = p(Value::Text(self.session.clone()), params);
            sql.push_str(&format!(
                " AND (m.scope = 'project' OR (m.scope = 'agent' AND m.scope_owner = {agent}) \
                 OR (m.scope = 'session' AND m.scope_owner = {session}))"
            ));
        }
        if let Some(scope) = &self.scope {
            let mark = p(Value::Text(scope.clone()), params);
            sql.push_str(&format!(" AND m.scope = {mark}"));
        }
        if let Some(category) = &self.category {
            let mark = p(Value::Text(category.clone()), params);
            sql.push_str(&format!(" AND m.category = {mark}"));
        }
        if let Some(agent) = &self.created_by {
            let mark = p(Value::Text(agent.clone()), params);
            sql.push_str(&format!(" AND m.created_by = {mark}"));
        }
        if let Some(tier) = self.tier {
            let mark = p(Value::Integer(tier), params);
            sql.push_str(&format!(" AND m.tier = {mark}"));
        }
        // `!NAME`: every source but that one.
        if let Some(source) = &self.source {
            let (op, name) = match source.strip_prefix('!') {
                Some(name) => ("<>", name),
                None => ("=", source.as_str()),
            };
            let mark = p(Value::Text(name.trim().to_string()), params);
            sql.push_str(&format!(" AND m.source {op} {mark}"));
        }
        if let Some(subject) = &self.subject {
            let mark = p(Value::Text(subject.clone()), params);
            sql.push_str(&format!(" AND m.subject = {mark}"));
        }
        if !self.tags.is_empty() {
            let marks: Vec<String> = self
                .tags
                .iter()
                .map(|t| p(Value::Text(t.clone()), params))
                .collect();
            // An IN subquery the planner can drive from the tag index,
            // instead of a count per row of the namespace.
            if self.tags_any {
                sql.push_str(&format!(
                    " AND m.id IN (SELECT memory_id FROM memory_tags WHERE tag IN ({}))",
                    marks.join(", ")
                ));
            } else {
                sql.push_str(&format!(
                    " AND m.id IN (SELECT memory_id FROM memory_tags WHERE tag IN ({}) \
                     GROUP BY memory_id HAVING count(*) = {})",
                    marks.join(", "),
                    self.tags.len()
                ));
            }
        }
        for MetaMatch { key, value } in &self.meta {
            let key = p(Value::Text(key.clone()), params);
            let cond = match value {
                serde_json::Value::Null => "j.type = 'null'".to_string(),
                serde_json::Value::Bool(true) => "j.type = 'true'".to_string(),
                serde_json::Value::Bool(false) => "j.type = 'false'".to_string(),
                serde_json::Value::Number(n) => {
                    let v = match n.as_i64() {
                        Some(i) => Value::Integer(i),
                        None => Value::Real(n.as_f64().unwrap_or(f64::NAN)),
                    };
                    let mark = p(v, params);
                    format!("j.type IN ('integer', 'real') AND j.value = {mark}")
                }
                serde_json::Value::String(s) => {
                    let mark = p(Value::Text(s.clone()), params);
                    format!("j.type = 'text' AND j.value = {mark}")
                }
                other => {
                    let mark = p(Value::Text(other.to_string()), params);
                    format!("j.type IN ('object', 'array') AND json(j.value) = json({mark})")
                }
            };
            // CASE keeps json_each away from metadata an external writer left
            // invalid (it would fail the whole query).
            sql.push_str(&format!(
                " AND CASE WHEN json_valid(m.metadata) THEN EXISTS (SELECT 1 FROM \
                 json_each(m.metadata) j WHERE j.key = {key} AND {cond}) ELSE 0 END"
            ));
        }
        if let Some(since) = &self.since {
            let mark = p(Value::Text(since.clone()), params);
            sql.push_str(&format!(" AND m.created_at >= {mark}"));
        }
        if let Some(until) = &self.until {
            let mark = p(Value::Text(until.clone()), params);
            sql.push_str(&format!(" AND m.created_at < {mark}"));
        }
        if let Some(since) = &self.updated_since {
            let mark = p(Value::Text(since.clone()), params);
            sql.push_str(&format!(" AND m.updated_at >= {mark}"));
        }
        if let Some(until) = &self.updated_until {
            let mark = p(Value::Text(until.clone()), params);
            sql.push_str(&format!(" AND m.updated_at < {mark}"));
        }
        if !self.include_superseded {
            sql.push_str(" AND m.superseded_by IS NULL");
        }
        if let Some(status) = &self.status {
            let mark = p(Value::Text(status.clone()), params);
            sql.push_str(&format!(" AND m.status = {mark}"));
        } else if !self.include_archived {
            sql.push_str(" AND m.status <> 'archived'");
        }
        let now = p(Value::Text(self.now.clone()), params);
        sql.push_str(&format!(
            " AND (m.expires_at IS NULL OR m.expires_at > {now})"
        ));
    }
}

/// Reads one row if the view may see it.
///
/// # Errors
/// SQLite errors.
pub fn get_visible(conn: &Connection, id: i64, view: &View) -> Result<Option<Memory>, StoreError> {
    let mut sql = format!("SELECT {COLUMNS} FROM memories m WHERE m.id = ?1");
    let mut params = vec![Value::Integer(id)];
    view.push_conditions(&mut sql, &mut params);
    Ok(conn
        .prepare_cached(&sql)?
        .query_row(params_from_iter(params), row_to_memory)
        .optional()?)
}

/// Lists visible rows, newest first.
///
/// # Errors
/// SQLite errors.
pub fn list(
    conn: &Connection,
    view: &View,
    limit: u32,
    offset: u32,
) -> Result<Vec<Memory>, StoreError> {
    let mut sql = format!("SELECT {COLUMNS} FROM memories m WHERE 1");
    let mut params = Vec::new();
    view.push_conditions(&mut sql, &mut params);
    params.push(Value::Integer(i64::from(limit)));
    params.push(Value::Integer(i64::from(offset)));
    sql.push_str(&format!(
        " ORDER BY m.id DESC LIMIT ?{} OFFSET ?{}",
        params.len() - 1,
        params.len()
    ));
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt
        .query_map(params_from_iter(params), row_to_memory)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Applies changes to a row. Unchanged values are not written, so an update
/// that changes nothing moves neither `rev` nor the generation.
///
/// # Errors
/// SQLite errors.
pub fn apply(conn: &Connection, current: &Memory, c: &Changes) -> Result<(), StoreError> {
    match &c.tags {
        // One change of the row: the columns and the tags together move the
        // rev once.
        Some(tags) => tag_edit(conn, current.id, true, |conn| {
            apply_columns(conn, current, c)?;
            set_tags(conn, current.id, tags)
        })?,
        None => apply_columns(conn, current, c)?,
    }
    if let Some((content, _)) = &c.content
        && content != &current.content
    {
        set_sketch(conn, current.id, content)?;
    }
    Ok(())
}

fn apply_columns(conn: &Connection, current: &Memory, c: &Changes) -> Result<(), StoreError> {
    let mut sets: Vec<String> = Vec::new();
    let mut params: Vec<Value> = Vec::new();
    let set = |col: &str, v: Value, sets: &mut Vec<String>, params: &mut Vec<Value>| {
        params.push(v);
        sets.push(format!("{col} = ?{}", params.len()));
    };
    let opt = |v: &Option<String>| match v {
        Some(s) => Value::Text(s.clone()),
        None => Value::Null,
    };
    if let Some((content, key)) = &c.content {
        set(
            "content",
            Value::Text(content.clone()),
            &mut sets,
            &mut params,
        );
        set(
            "dedupe_key",
            Value::Text(key.clone()),
            &mut sets,
            &mut params,
        );
    }
    if let Some(v) = &c.category {
        set("category", Value::Text(v.clone()), &mut sets, &mut params);
    }
    if let Some(v) = &c.subject {
        set("subject", opt(v), &mut sets, &mut params);
    }
    if let Some((scope, owner)) = &c.scope {
        set("scope", Value::Text(scope.clone()), &mut sets, &mut params);
        set("scope_owner", opt(owner), &mut sets, &mut params);
    }
    if let Some(v) = c.tier {
        set("tier", Value::Integer(v), &mut sets, &mut params);
    }
    if let Some(v) = c.pinned {
        set(
            "pinned",
            Value::Integer(i64::from(v)),
            &mut sets,
            &mut params,
        );
    }
    if let Some(v) = &c.importance {
        set("importance", Value::Text(v.clone()), &mut sets, &mut params);
    }
    if let Some(v) = &c.status {
        set("status", Value::Text(v.clone()), &mut sets, &mut params);
    }
    if let Some(v) = c.confidence {
        set("confidence", Value::Real(v), &mut sets, &mut params);
    }
    if let Some(v) = &c.expires_at {
        set("expires_at", opt(v), &mut sets, &mut params);
    }
    if let Some(keys) = &c.metadata {
        let original = match serde_json::from_str::<serde_json::Value>(&current.metadata) {
            Ok(serde_json::Value::Object(m)) => Some(m),
            _ => None,
        };
        let mut merged = original.clone().unwrap_or_default();
        for (k, v) in keys {
            // `null` removes a key (e.g. a closed task's `surface`).
            if v.is_null() {
                merged.remove(k);
            } else {
                merged.insert(k.clone(), v.clone());
            }
        }
        // Same keys and values: leave the stored text (and rev) alone.
        if original.as_ref() != Some(&merged) {
            let text = serde_json::Value::Object(merged).to_string();
            set("metadata", Value::Text(text), &mut sets, &mut params);
        }
    }
    if !sets.is_empty() {
        params.push(Value::Integer(current.id));
        let sql = format!(
            "UPDATE memories SET {} WHERE id = ?{}",
            sets.join(", "),
            params.len()
        );
        conn.execute(&sql, params_from_iter(params))?;
    }
    Ok(())
}

/// Marks `old` as superseded by `new`, now, unless something supersedes it
/// already; returns whether it did.
///
/// # Errors
/// SQLite errors.
pub fn supersede(conn: &Connection, old: i64, new: i64) -> Result<bool, StoreError> {
    let n = conn
        .prepare_cached(
            "UPDATE memories SET superseded_by = ?1, superseded_at = ?2 \
             WHERE id = ?3 AND superseded_by IS NULL",
        )?
        .execute((new, crate::clock::now(), old))?;
    Ok(n > 0)
}

/// A row's rev and the generation of its last change, if the row exists.
///
/// # Errors
/// SQLite errors.
pub fn change_mark(conn: &Connection, id: i64) -> Result<Option<(i64, u64)>, StoreError> {
    Ok(conn
        .prepare_cached("SELECT rev, changed_generation FROM memories WHERE id = ?1")?
        .query_row([id], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?.max(0) as u64))
        })
        .optional()?)
}

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

/// Sets every row's last change to `generation` (after the database file
/// was swapped: what sessions read of the old one says nothing of it).
/// Not an edit: rev and the generation do not move.
///
/// # Errors
/// SQLite errors.
pub fn mark_all_changed(conn: &Connection, generation: u64) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE memories SET changed_generation = ?1",
        [generation as i64],
    )?;
    Ok(())
}

/// Deletes a row (its tags and FTS entry go with it, by trigger).
///
/// # Errors
/// SQLite errors.
pub fn delete(conn: &Connection, id: i64) -> Result<bool, StoreError> {
    let n = conn
        .prepare_cached("DELETE FROM memories WHERE id = ?1")?
        .execute([id])?;
    Ok(n > 0)
}

/// Ids of the rows visible in `view` (its namespace, source and other
/// filters), of `thread` when one is given, by id.
///
/// # Errors
/// SQLite errors.
pub fn ids_where(
    conn: &Connection,
    view: &View,
    thread: Option<&str>,
) -> Result<Vec<i64>, StoreError> {
    let mut sql = "SELECT m.id FROM memories m WHERE 1 = 1".to_string();
    let mut params = Vec::new();
    if let Some(thread) = thread {
        params.push(Value::Text(thread.to_string()));
        sql.push_str(" AND m.thread = ?1");
    }
    view.push_conditions(&mut sql, &mut params);
    sql.push_str(" ORDER BY m.id");
    let mut stmt = conn.prepare(&sql)?;
    let ids = stmt
        .query_map(rusqlite::params_from_iter(params), |r| r.get(0))?
        .collect::<Result<Vec<i64>, _>>()?;
    Ok(ids)
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

/// `confirm`: one more confirmation, now. Not an edit: `rev` and the
/// generation do not move.
///
/// # Errors
/// SQLite errors.
pub fn confirm(conn: &Connection, id: i64, now: &str) -> Result<(), StoreError> {
    conn.execute(
        "UPDATE memories SET confirmed_count = confirmed_count + 1, last_confirmed_at = ?1 \
         WHERE id = ?2",
        (now, id),
    )?;
    Ok(())
}

/// Ids of the rows expired at `now`, of one namespace or of all, by id.
///
/// # Errors
/// SQLite errors.
pub fn expired_ids(
    conn: &Connection,
    now: &str,
    namespace: Option<&str>,
    shared: bool,
) -> Result<Vec<i64>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ?1 \
         AND (?2 IS NULL OR namespace = ?2) AND (team_rev IS NOT NULL) = ?3 ORDER BY id",
    )?;
    let ids = stmt
        .query_map((now, namespace, shared), |r| r.get::<_, i64>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ids)
}

/// How many rows there are.
///
/// # Errors
/// SQLite errors.
pub fn count(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("SELECT count(*) FROM memories", [], |r| r.get(0))?)
}

/// Row counts by status, by status name.
///
/// # Errors
/// SQLite errors.
pub fn count_by_status(conn: &Connection) -> Result<Vec<(String, i64)>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT status, count(*) FROM memories GROUP BY status ORDER BY status")?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Row counts by namespace, the largest first, at most `limit` of them.
///
/// # Errors
/// SQLite errors.
pub fn count_by_namespace(conn: &Connection, limit: u32) -> Result<Vec<(String, i64)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT namespace, count(*) AS n FROM memories GROUP BY namespace \
         ORDER BY n DESC, namespace LIMIT ?1",
    )?;
    let rows = stmt
        .query_map([limit], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Moves every memory of namespace `from` to `to` (a checkout's memories
/// follow it to its new namespace); returns how many moved.
///
/// # Errors
/// SQLite errors.
pub fn move_namespace(conn: &Connection, from: &str, to: &str) -> Result<usize, StoreError> {
    Ok(conn
        .prepare_cached("UPDATE memories SET namespace = ?2 WHERE namespace = ?1")?
        .execute(rusqlite::params![from, to])?)
}

/// Rows that were written through or pulled (team memory): id, uid,
/// namespace.
///
/// # Errors
/// SQLite errors.
pub fn synced_rows(conn: &Connection) -> Result<Vec<(i64, String, String)>, StoreError> {
    let mut stmt =
        conn.prepare("SELECT id, uid, namespace FROM memories WHERE team_rev IS NOT NULL")?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// The namespaces that hold rows written through or pulled.
///
/// # Errors
/// SQLite errors.
pub fn synced_namespaces(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn
        .prepare("SELECT DISTINCT namespace FROM memories WHERE team_rev IS NOT NULL ORDER BY 1")?;
    let rows = stmt
        .query_map([], |r| r.get(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Drops the rows of `namespace` written through or pulled, with every
/// revision of them (the one their delete just wrote included): what this
/// machine may no longer read leaves no text here and is not taken for a
/// delete to write through. Rows never pushed stay. How many went.
///
/// # Errors
/// SQLite errors.
pub fn drop_synced(conn: &Connection, namespace: &str) -> Result<usize, StoreError> {
    let ids: Vec<i64> = conn
        .prepare("SELECT id FROM memories WHERE namespace = ?1 AND team_rev IS NOT NULL")?
        .query_map([namespace], |r| r.get(0))?
        .collect::<Result<Vec<_>, _>>()?;
    for id in &ids {
        delete(conn, *id)?;
        conn.prepare_cached("DELETE FROM memory_revisions WHERE memory_id = ?1")?
            .execute([id])?;
    }
    Ok(ids.len())
}

/// Whether `namespace` holds a row (not session-scope) that was never
/// written through or pulled, other than the rows `created` (those the
/// write being decided created).
///
/// # Errors
/// SQLite errors.
pub fn has_unpushed(
    conn: &Connection,
    namespace: &str,
    created: &[i64],
) -> Result<bool, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id FROM memories WHERE namespace = ?1 AND team_rev IS NULL \
         AND scope != 'session' AND source != 'capture' LIMIT ?2",
    )?;
    let ids = stmt
        .query_map((namespace, created.len() as i64 + 1), |r| {
            r.get::<_, i64>(0)
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ids.iter().any(|id| !created.contains(id)))
}

/// The rows of `namespace` (not local by rule: session-scope, captured)
/// never written through or
/// pulled, by id.
///
/// # Errors
/// SQLite errors.
pub fn unpushed_ids(conn: &Connection, namespace: &str) -> Result<Vec<i64>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT id FROM memories WHERE namespace = ?1 AND team_rev IS NULL \
         AND scope != 'session' AND source != 'capture' ORDER BY id",
    )?;
    let ids = stmt
        .query_map([namespace], |r| r.get::<_, i64>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ids)
}

/// Records PostgreSQL's rev of a row pushed to it (team memory).
///
/// # Errors
/// SQLite errors.
pub fn set_team_rev(conn: &Connection, uid: &str, rev: i64) -> Result<(), StoreError> {
    conn.prepare_cached("UPDATE memories SET team_rev = ?2 WHERE uid = ?1 AND team_rev IS NULL")?
        .execute(rusqlite::params![uid, rev])?;
    Ok(())
}

/// Shared rows (team memory) whose rev moved past the `team_rev` they
/// hold: another tool changed them here. Id and `team_rev`.
///
/// # Errors
/// SQLite errors.
pub fn edited_here(conn: &Connection) -> Result<Vec<(i64, i64)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT id, team_rev FROM memories WHERE team_rev IS NOT NULL AND rev <> team_rev",
    )?;
    let rows = stmt
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// A row deleted here: uid, namespace, scope, rev at the delete.
pub type DeletedHere = (String, String, String, i64);

/// Rows deleted here after revision `since` whose uid is gone: uid,
/// namespace, scope, rev at the delete; and the newest revision id read.
///
/// # Errors
/// SQLite errors.
pub fn deleted_here_since(
    conn: &Connection,
    since: i64,
) -> Result<(Vec<DeletedHere>, i64), StoreError> {
    let through: i64 = conn
        .prepare_cached("SELECT coalesce(max(rev_id), 0) FROM memory_revisions")?
        .query_row([], |r| r.get(0))?;
    let mut stmt = conn.prepare_cached(
        "SELECT r.uid, r.namespace, r.scope, r.rev FROM memory_revisions r \
         WHERE r.rev_id > ?1 AND r.rev_id <= ?2 AND r.op = 'delete' AND r.uid IS NOT NULL \
         AND NOT EXISTS (SELECT 1 FROM memories m WHERE m.uid = r.uid)",
    )?;
    let rows = stmt
        .query_map((since, through), |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok((rows, through))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> (tempfile::TempDir, Connection) {
        crate::store::test_db()
    }

    fn memory(content: &str, sketch: Vec<i64>) -> NewMemory {
        NewMemory {
            sketch: Some(sketch),
            ..NewMemory::plain(content)
        }
    }

    const NOW: &str = "2026-01-01T00:00:00.000Z";

    #[test]
    fn a_common_sketch_hash_does_not_crowd_out_a_near_duplicate() {
        let (_dir, conn) = db();
        for i in 0..100 {
            insert(&conn, &memory(&format!("common row {i}"), vec![1])).unwrap();
        }
        let target = insert(&conn, &memory("the near duplicate", vec![1, 7, 8, 9])).unwrap();
        let new = memory("the near duplicate!", vec![1, 7, 8, 9]);
        let found = sketch_candidates(&conn, &new, &[1, 7, 8, 9], NOW, 24).unwrap();
        assert!(found.iter().any(|(id, _)| *id == target), "{found:?}");
        assert!(found.len() <= 4 * 24);
    }

    #[test]
    fn a_key_another_tool_left_stale_is_never_merged_into() {
        let (_dir, conn) = db();
        let id = insert(&conn, &memory("the staging port is 5432", vec![1])).unwrap();
        // Another tool changes the content and leaves the key alone.
        conn.execute(
            "UPDATE memories SET content = 'the staging database moved to another host' \
             WHERE id = ?1",
            [id],
        )
        .unwrap();
        let again = memory("the staging port is 5432", vec![1]);
        assert_eq!(find_duplicate(&conn, &again, NOW).unwrap(), None);
        // The trigger dropped the stale key; the backfill computes the new one.
        assert_eq!(backfill(&conn, &[id]).unwrap(), 1);
        assert_eq!(backfill(&conn, &[id]).unwrap(), 0);
        let moved = memory("The staging database moved to another host.", vec![1]);
        assert_eq!(find_duplicate(&conn, &moved, NOW).unwrap(), Some(id));
        // A key written with stale content is still not trusted.
        conn.execute(
            "UPDATE memories SET dedupe_key = 'the staging port is 5432' WHERE id = ?1",
            [id],
        )
        .unwrap();
        assert_eq!(find_duplicate(&conn, &again, NOW).unwrap(), None);
    }

    #[test]
    fn a_shell_replace_leaves_no_old_tags_or_sketch() {
        let (_dir, conn) = db();
        let mut m = memory("tagged row", vec![42]);
        m.row.tags = vec!["old".into()];
        let id = insert(&conn, &m).unwrap();
        conn.execute(
            "INSERT OR REPLACE INTO memories (id, content) VALUES (?1, 'replaced row')",
            [id],
        )
        .unwrap();
        let tags: i64 = conn
            .query_row("SELECT count(*) FROM memory_tags", [], |r| r.get(0))
            .unwrap();
        let sketches: i64 = conn
            .query_row("SELECT count(*) FROM memory_sketch", [], |r| r.get(0))
            .unwrap();
        assert_eq!((tags, sketches), (0, 0));
    }
}
