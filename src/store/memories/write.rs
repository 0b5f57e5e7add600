//! Writes of rows: insert (and the search index held for a bulk job),
//! update, supersede, delete, confirm, a namespace's move.

use memd_proto::Memory;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params_from_iter};

use super::dedup::{set_sketch, store_sketch};
use super::row::{CHOSEN, WRITTEN, written};
use super::sources::write_source;
use super::tags::{set_tags, tag_edit, tags_of_new_row};
use crate::gate::{Changes, NewMemory};
use crate::store::StoreError;

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
