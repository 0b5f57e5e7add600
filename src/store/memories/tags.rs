//! A row's tags, and the tag edits of an update.

use rusqlite::Connection;

use crate::store::StoreError;

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
pub(super) fn add_tags(conn: &Connection, id: i64, tags: &[String]) -> Result<(), StoreError> {
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
