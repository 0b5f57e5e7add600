//! Rows of `memories`: mapping, writes, visibility and filters, by concern.
//!
//! Every read that serves a session goes through [`View`](crate::gate::View): the session's
//! namespace (unless the request names others explicitly), project scope plus
//! the session's own agent and session scope, and — unless asked — no
//! archived, superseded or expired rows.
//!
//! # Layout
//! - `row`: the columns read and their mapping (`COLUMNS`), the columns a
//!   writer chooses (`WRITTEN`), reads by id.
//! - `write`: insert (and the search index held for a bulk job), update,
//!   supersede, delete, confirm, a namespace's move.
//! - `dedup`: the dedup key, an add's near-duplicate candidates (sketch),
//!   a thread position already held, a merge into a duplicate.
//! - `sources`: where a row came from (`memory_sources`).
//! - `authors`: who changed a row; the rows changed since a generation.
//! - `tags`: a row's tags, and the tag edits of an update.
//! - `query`: reads through a session's [`View`](crate::gate::View): its conditions, one row,
//!   a page, ids, counts.
//! - `sync`: rows and team memory: synced rows, what is not pushed yet,
//!   what was edited or deleted here since.

mod authors;
mod dedup;
mod query;
mod row;
mod sources;
mod sync;
mod tags;
mod write;

pub use authors::*;
pub use dedup::*;
pub use query::*;
pub use row::*;
pub use sources::*;
pub use sync::*;
pub use tags::*;
pub use write::*;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gate::NewMemory;
    use rusqlite::Connection;

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
