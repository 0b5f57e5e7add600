//! The schema and its versioned migrations.
//!
//! `current.sql` is the schema as every migration leaves it, in one file for
//! a reader (tables, then indexes, views and triggers); a test checks it
//! against a freshly migrated database (`MEMD_BLESS=1 cargo test -p memd-daemon
//! --lib schema` rewrites it after a new migration). Databases are made and
//! upgraded by the migrations alone.
//!
//! Migrations live in `memd_schema(version, name, applied_at)`. Pending ones
//! are applied in one immediate transaction; before an existing database is
//! upgraded, a copy is taken with the SQLite backup API. A database whose
//! version is newer than this binary knows is an error, never a reset: the
//! database is the source of truth.

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior};

use super::StoreError;

/// One schema step. Never edit a shipped migration: add one.
pub struct Migration {
    /// Version this step produces.
    pub version: i64,
    /// Short description.
    pub name: &'static str,
    /// The SQL.
    pub sql: &'static str,
}

/// Every migration, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "initial schema",
        sql: include_str!("v1.sql"),
    },
    Migration {
        version: 2,
        name: "index in inject order",
        sql: include_str!("v2.sql"),
    },
    Migration {
        version: 3,
        name: "sweep log",
        sql: include_str!("v3.sql"),
    },
    Migration {
        version: 4,
        name: "near-duplicate sketches",
        sql: include_str!("v4.sql"),
    },
    Migration {
        version: 5,
        name: "embeddings",
        sql: include_str!("v5.sql"),
    },
    Migration {
        version: 6,
        name: "status index",
        sql: include_str!("v6.sql"),
    },
    Migration {
        version: 7,
        name: "replace and content-edit cleanup",
        sql: include_str!("v7.sql"),
    },
    Migration {
        version: 8,
        name: "rows replaced on id or uid",
        sql: include_str!("v8.sql"),
    },
    Migration {
        version: 9,
        name: "session ends",
        sql: include_str!("v9.sql"),
    },
    Migration {
        version: 10,
        name: "rev moves on every change; the generation of each row's last change",
        sql: include_str!("v10.sql"),
    },
    Migration {
        version: 11,
        name: "threads, event time, context and date in the search index",
        sql: include_str!("v11.sql"),
    },
    Migration {
        version: 12,
        name: "team memory: PostgreSQL's rev, remote authors, numbers applied",
        sql: include_str!("v12.sql"),
    },
    Migration {
        version: 13,
        name: "search index: neighbours' text capped, the namespace as a token",
        sql: include_str!("v13.sql"),
    },
    Migration {
        version: 14,
        name: "the author of every version of a memory",
        sql: include_str!("v14.sql"),
    },
    Migration {
        version: 15,
        name: "captured conversations: the turn a memory came from, capture offsets",
        sql: include_str!("v15.sql"),
    },
    Migration {
        version: 16,
        name: "the purge log: which memory was erased, when, by whom (never its text)",
        sql: include_str!("v16.sql"),
    },
    Migration {
        version: 17,
        name: "provenance: where each memory came from, and every source a merge added",
        sql: include_str!("v17.sql"),
    },
    Migration {
        version: 18,
        name: "the search index written once per bulk job",
        sql: include_str!("v18.sql"),
    },
    Migration {
        version: 19,
        name: "captured turns marked in the search index",
        sql: include_str!("v19.sql"),
    },
    Migration {
        version: 20,
        name: "ingested conversation turns, a kind of their own",
        sql: include_str!("v20.sql"),
    },
    Migration {
        version: 21,
        name: "every version of a memory found by its uid (purge)",
        sql: include_str!("v21.sql"),
    },
    Migration {
        version: 22,
        name: "an insert writes no page of the empty replace stage",
        sql: include_str!("v22.sql"),
    },
    Migration {
        version: 23,
        name: "code citations: the cited memories indexed, the last verdicts kept",
        sql: include_str!("v23.sql"),
    },
];

/// The schema version this binary produces.
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Tables and triggers memd relies on, by kind and name (checked by
/// `memd check` and after external changes).
pub const REQUIRED_OBJECTS: &[(&str, &str)] = &[
    ("table", "memory_meta"),
    ("table", "memories"),
    ("table", "memory_tags"),
    ("table", "memory_revisions"),
    ("table", "memories_fts"),
    ("trigger", "memories_ai"),
    ("trigger", "memories_ai_fts"),
    ("trigger", "memories_ai_fts_held"),
    ("table", "memory_fts_hold"),
    ("table", "memory_fts_pending"),
    ("trigger", "memories_au"),
    ("trigger", "memories_au_fts"),
    ("trigger", "memories_au_fts_class"),
    ("trigger", "memories_ad"),
    ("trigger", "memory_tags_ai"),
    ("trigger", "memory_tags_au"),
    ("trigger", "memory_tags_ad"),
    ("table", "memory_sketch"),
    ("trigger", "memories_ad_sketch"),
    ("trigger", "memories_au_sketch"),
    ("table", "memory_vectors"),
    ("table", "memory_similar"),
    ("trigger", "memories_ad_vector"),
    ("trigger", "memories_au_vector"),
    ("trigger", "memories_au_dedupe"),
    ("table", "memory_replace_stage"),
    ("trigger", "memories_bi_stage"),
    ("trigger", "memories_ai_replaced"),
    ("table", "memory_session_ends"),
    ("table", "memory_tag_edit"),
    ("trigger", "memory_tag_edit_ad"),
    ("table", "memory_authors"),
    ("trigger", "memories_ad_author"),
    ("view", "memories_fts_source"),
    ("table", "memory_team_seq"),
    ("table", "citation_checks"),
    ("trigger", "memories_ad_citation_checks"),
];

/// The on-disk schema version: 0 for an empty database.
///
/// # Errors
/// [`StoreError::NotMemd`] for a database with tables but no memd version
/// table.
pub fn current_version(conn: &Connection) -> Result<i64, StoreError> {
    let has_table: bool = conn.query_row(
        "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'memd_schema')",
        [],
        |r| r.get(0),
    )?;
    if !has_table {
        let objects: i64 = conn.query_row(
            "SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'",
            [],
            |r| r.get(0),
        )?;
        if objects > 0 {
            return Err(StoreError::NotMemd);
        }
        return Ok(0);
    }
    let v: Option<i64> = conn
        .query_row("SELECT max(version) FROM memd_schema", [], |r| r.get(0))
        .optional()?
        .flatten();
    Ok(v.unwrap_or(0))
}

/// Brings the database to [`latest_version`].
///
/// `backup_dir` receives a copy of an existing database before it is
/// upgraded. Returns the path of that copy, if one was taken.
///
/// # Errors
/// [`StoreError::SchemaTooNew`] when the file is newer than this binary;
/// SQLite errors roll the whole upgrade back.
pub fn migrate(conn: &mut Connection, backup_dir: &Path) -> Result<Option<PathBuf>, StoreError> {
    let current = current_version(conn)?;
    let latest = latest_version();
    if current > latest {
        return Err(StoreError::SchemaTooNew {
            found: current,
            supported: latest,
        });
    }
    if current == latest {
        return Ok(None);
    }
    let copy = if current > 0 {
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let path = backup_dir.join(format!("memory.db.v{current}.{stamp}.bak"));
        conn.backup(
            rusqlite::MAIN_DB,
            &path,
            None::<fn(rusqlite::backup::Progress)>,
        )?;
        Some(path)
    } else {
        None
    };
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS memd_schema (
            version    INTEGER PRIMARY KEY,
            name       TEXT NOT NULL,
            applied_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
        );",
    )?;
    for m in MIGRATIONS.iter().filter(|m| m.version > current) {
        tx.execute_batch(m.sql)?;
        tx.execute(
            "INSERT INTO memd_schema (version, name) VALUES (?1, ?2)",
            (m.version, m.name),
        )?;
        tracing::info!(
            version = m.version,
            name = m.name,
            "applied schema migration"
        );
    }
    tx.commit()?;
    Ok(copy)
}

/// Required tables and triggers that are missing, as `"kind name"`, and
/// triggers whose definition differs from the shipped one (a trigger
/// recreated by another tool without, say, its generation bump), as
/// `"trigger name (altered)"`.
///
/// # Errors
/// SQLite errors.
pub fn missing_objects(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let mut stmt =
        conn.prepare_cached("SELECT sql FROM sqlite_master WHERE type = ?1 AND name = ?2")?;
    let mut missing = Vec::new();
    for (kind, name) in REQUIRED_OBJECTS {
        let sql: Option<Option<String>> = stmt.query_row((kind, name), |r| r.get(0)).optional()?;
        match sql {
            None => missing.push(format!("{kind} {name}")),
            Some(sql) if *kind == "trigger" => {
                let shipped = definition_of(name).map(|d| normalized_sql(&d));
                if shipped.is_some() && shipped != sql.as_deref().map(normalized_sql) {
                    missing.push(format!("{kind} {name} (altered)"));
                }
            }
            Some(_) => {}
        }
    }
    Ok(missing)
}

/// The name in an entry of [`missing_objects`].
pub fn object_name(entry: &str) -> &str {
    entry.split_whitespace().nth(1).unwrap_or_default()
}

/// SQL text compared without its layout: whitespace runs as one space, no
/// trailing semicolon.
fn normalized_sql(sql: &str) -> String {
    sql.trim()
        .trim_end_matches(';')
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The `CREATE` statement of a table or trigger in the shipped schema, for
/// recreating one that was dropped outside memd.
pub fn definition_of(name: &str) -> Option<String> {
    for m in MIGRATIONS.iter().rev() {
        for prefix in [
            "CREATE TRIGGER ",
            "CREATE VIRTUAL TABLE ",
            "CREATE TABLE ",
            "CREATE VIEW ",
        ] {
            let start = format!("{prefix}{name} ");
            let Some(at) = m.sql.find(&start) else {
                continue;
            };
            let rest = &m.sql[at..];
            let end = if prefix == "CREATE TRIGGER " {
                rest.find("\nEND;").map(|i| i + "\nEND;".len())
            } else {
                rest.find(";\n").map(|i| i + 1)
            }?;
            return Some(rest[..end].to_string());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_database_reaches_latest_version() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join("m.db")).unwrap();
        assert_eq!(current_version(&conn).unwrap(), 0);
        assert!(migrate(&mut conn, dir.path()).unwrap().is_none());
        assert_eq!(current_version(&conn).unwrap(), latest_version());
        assert_eq!(missing_objects(&conn).unwrap(), Vec::<String>::new());
        // Idempotent.
        assert!(migrate(&mut conn, dir.path()).unwrap().is_none());
    }

    fn schema_of(conn: &Connection) -> Vec<(String, String, Option<String>)> {
        let mut stmt = conn
            .prepare(
                "SELECT type, name, sql FROM sqlite_master \
                 WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
            )
            .unwrap();
        stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    /// The schema a database holds, as `current.sql` writes it: every
    /// object but SQLite's own and FTS5's shadow tables, tables first, then
    /// indexes, views and triggers, each in creation order.
    fn render(conn: &Connection) -> String {
        let mut stmt = conn
            .prepare(
                "SELECT sql FROM sqlite_master m WHERE sql IS NOT NULL \
                 AND name NOT LIKE 'sqlite_%' \
                 AND name NOT IN (SELECT name FROM pragma_table_list WHERE type = 'shadow') \
                 ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 \
                 WHEN 'view' THEN 2 ELSE 3 END, rowid",
            )
            .unwrap();
        let objects: Vec<String> = stmt
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut out = format!(
            "-- memd's SQLite schema at version {}, as the migrations (v1.sql …) leave\n\
             -- it. Generated by a test from a fresh database; do not edit: add a\n\
             -- migration, then run `MEMD_BLESS=1 cargo test -p memd-daemon --lib schema`.\n\n",
            latest_version()
        );
        for sql in objects {
            out.push_str(&sql);
            out.push_str(";\n\n");
        }
        out
    }

    /// `current.sql` is what a fresh migration makes, and it makes the
    /// same database itself.
    #[test]
    fn current_sql_is_the_migrated_schema() {
        let dir = tempfile::tempdir().unwrap();
        let mut fresh = Connection::open(dir.path().join("fresh.db")).unwrap();
        migrate(&mut fresh, dir.path()).unwrap();
        let now = render(&fresh);
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store/schema/current.sql");
        if std::env::var_os("MEMD_BLESS").is_some() {
            std::fs::write(&path, &now).unwrap();
        }
        assert_eq!(
            include_str!("current.sql"),
            now,
            "src/store/schema/current.sql is not the migrated schema: run \
             MEMD_BLESS=1 cargo test -p memd-daemon --lib schema"
        );
        let made = Connection::open(dir.path().join("made.db")).unwrap();
        made.execute_batch(include_str!("current.sql")).unwrap();
        let tables = |c: &Connection| {
            schema_of(c)
                .into_iter()
                .filter(|(_, name, _)| name != "memd_schema")
                .collect::<Vec<_>>()
        };
        assert_eq!(tables(&made), tables(&fresh));
    }

    /// A v1 database as shipped (a `sqlite3 .dump` of a file memd wrote)
    /// is upgraded, keeps its rows, and ends with exactly the schema of a
    /// fresh one: the alarm for an edited shipped migration.
    #[test]
    fn shipped_v1_fixture_upgrades_to_a_fresh_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        Connection::open(&path)
            .unwrap()
            .execute_batch(include_str!("../fixtures/v1.sql"))
            .unwrap();
        // A new connection reads the schema the dump wrote directly.
        let mut old = Connection::open(&path).unwrap();
        assert_eq!(current_version(&old).unwrap(), 1);
        let copy = migrate(&mut old, dir.path()).unwrap();
        assert!(
            copy.is_some_and(|c| c.exists()),
            "a copy is taken before an upgrade"
        );
        assert_eq!(current_version(&old).unwrap(), latest_version());
        let mut fresh = Connection::open(dir.path().join("fresh.db")).unwrap();
        migrate(&mut fresh, dir.path()).unwrap();
        assert_eq!(schema_of(&old), schema_of(&fresh));
        let n: i64 = old
            .query_row("SELECT count(*) FROM memories", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 2);
        let found: i64 = old
            .query_row(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'deploys'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(found, 1);
        let fts_ok =
            old.execute_batch("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')");
        assert!(fts_ok.is_ok(), "{fts_ok:?}");
    }

    /// Schema v19 marks the captured turns a v18 database already holds in
    /// the search index, and only those.
    #[test]
    fn captured_turns_of_an_older_database_are_marked() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = database_at(&dir.path().join("v18.db"), 18);
        for source in ["capture", "user", "capture"] {
            conn.execute(
                "INSERT INTO memories (namespace, content, source) VALUES ('p', 'deploy notes', ?1)",
                [source],
            )
            .unwrap();
        }
        let marked = |conn: &Connection| -> Vec<i64> {
            conn.prepare("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'ns : nscapture0' ORDER BY rowid")
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        assert!(marked(&conn).is_empty());
        migrate(&mut conn, dir.path()).unwrap();
        assert_eq!(current_version(&conn).unwrap(), latest_version());
        assert_eq!(marked(&conn), [1, 3]);
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'ns : ns700 AND deploy'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 3, "the namespace token is still there");
        conn.execute_batch("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
            .unwrap();
    }

    /// The b-trees whose pages the WAL holds, by name (the WAL's frames'
    /// page numbers, named by `dbstat`).
    fn written_in_wal(conn: &Connection, path: &Path) -> std::collections::BTreeSet<String> {
        let wal = std::fs::read(format!("{}-wal", path.display())).unwrap();
        let page_size = u32::from_be_bytes(wal[8..12].try_into().unwrap()) as usize;
        let names: std::collections::HashMap<u32, String> = conn
            .prepare("SELECT pageno, name FROM dbstat")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        wal[32..]
            .chunks_exact(24 + page_size)
            .map(|frame| u32::from_be_bytes(frame[..4].try_into().unwrap()))
            .filter_map(|page| names.get(&page).cloned())
            .collect()
    }

    /// The b-trees one insert and the daemon's generation record write in
    /// their commit, on a database at `version`.
    fn one_insert_writes(version: i64) -> std::collections::BTreeSet<String> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pages.db");
        let conn = database_at(&path, version);
        conn.pragma_update(None, "journal_mode", "wal").unwrap();
        conn.pragma_update(None, "wal_autocheckpoint", 0).unwrap();
        crate::store::meta::set(&conn, "daemon_generation", "1").unwrap();
        conn.execute("INSERT INTO memories (content) VALUES ('the first')", [])
            .unwrap();
        conn.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        conn.execute_batch("BEGIN").unwrap();
        conn.execute("INSERT INTO memories (content) VALUES ('the second')", [])
            .unwrap();
        crate::store::meta::set(&conn, "daemon_generation", "2").unwrap();
        conn.execute_batch("COMMIT").unwrap();
        written_in_wal(&conn, &path)
    }

    /// Schema v22 and `meta::set`: an insert's commit writes no page of
    /// the empty replace stage, and the daemon's generation record no page
    /// of the meta key index (a commit's cost is the pages it writes).
    #[test]
    fn an_insert_writes_no_page_of_the_empty_stage_or_the_meta_key_index() {
        let before = one_insert_writes(21);
        let now = one_insert_writes(latest_version());
        for written in [&before, &now] {
            assert!(written.contains("memories"), "{written:?}");
            assert!(written.contains("memory_meta"), "{written:?}");
        }
        assert!(before.contains("memory_replace_stage"), "{before:?}");
        assert!(!now.contains("memory_replace_stage"), "{now:?}");
        assert!(!now.contains("sqlite_autoindex_memory_meta_1"), "{now:?}");
        assert_eq!(before.len(), now.len() + 1, "{before:?} {now:?}");
    }

    /// A database at `version`, by the migrations up to it.
    fn database_at(path: &Path, version: i64) -> Connection {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch(
            "CREATE TABLE memd_schema (version INTEGER PRIMARY KEY, name TEXT NOT NULL, \
             applied_at TEXT NOT NULL DEFAULT 'then');",
        )
        .unwrap();
        for m in MIGRATIONS.iter().filter(|m| m.version <= version) {
            conn.execute_batch(m.sql).unwrap();
            conn.execute(
                "INSERT INTO memd_schema (version, name) VALUES (?1, ?2)",
                (m.version, m.name),
            )
            .unwrap();
        }
        conn
    }

    /// Schema v20 marks the turns `memd ingest` stored before it (a
    /// person's rows in a thread), and only those: their source, their
    /// provenance's origin and their mark in the search index.
    #[test]
    fn ingested_turns_of_an_older_database_are_marked() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = database_at(&dir.path().join("v19.db"), 19);
        let rows = [
            ("user", Some("s1"), Some(1)),     // an ingested turn
            ("user", None, None),              // a person's note
            ("agent", Some("s1"), Some(2)),    // an agent's row in a thread
            ("user", Some("s2"), Some(1)),     // an ingested turn
            ("capture", Some("h:1"), Some(1)), // a captured turn
        ];
        for (source, thread, pos) in rows {
            conn.execute(
                "INSERT INTO memories (namespace, content, source, thread, thread_pos) \
                 VALUES ('p', 'deploy notes', ?1, ?2, ?3)",
                (source, thread, pos),
            )
            .unwrap();
        }
        let column = |conn: &Connection, sql: &str| -> Vec<String> {
            conn.prepare(sql)
                .unwrap()
                .query_map([], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap()
        };
        let marked = |conn: &Connection| -> Vec<i64> {
            conn.prepare(
                "SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'ns : nscapture0' \
                 ORDER BY rowid",
            )
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
        };
        assert_eq!(marked(&conn), [5]);
        migrate(&mut conn, dir.path()).unwrap();
        assert_eq!(current_version(&conn).unwrap(), latest_version());
        assert_eq!(
            column(&conn, "SELECT source FROM memories ORDER BY id"),
            ["ingest", "user", "agent", "ingest", "capture"]
        );
        assert_eq!(
            column(
                &conn,
                "SELECT source FROM memory_sources WHERE n = 0 ORDER BY memory_id"
            ),
            ["ingest", "user", "agent", "ingest", "capture"]
        );
        assert_eq!(marked(&conn), [1, 4, 5]);
        // Rows stored after the upgrade are indexed by the new view too.
        conn.execute(
            "INSERT INTO memories (namespace, content, source, thread, thread_pos) \
             VALUES ('p', 'deploy again', 'ingest', 's3', 1)",
            [],
        )
        .unwrap();
        assert_eq!(marked(&conn), [1, 4, 5, 6]);
        conn.execute_batch("INSERT INTO memories_fts(memories_fts) VALUES ('integrity-check')")
            .unwrap();
    }

    #[test]
    fn every_required_object_can_be_recreated() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join("m.db")).unwrap();
        migrate(&mut conn, dir.path()).unwrap();
        for (kind, name) in REQUIRED_OBJECTS {
            if *name == "memories" || *name == "memory_meta" {
                continue;
            }
            let drop = match *kind {
                "trigger" => "TRIGGER",
                "view" => "VIEW",
                _ => "TABLE",
            };
            conn.execute_batch(&format!("DROP {drop} {name}")).unwrap();
            let missing = missing_objects(&conn).unwrap();
            assert!(missing.contains(&format!("{kind} {name}")), "{missing:?}");
            for object in missing {
                let n = object_name(&object);
                let sql = definition_of(n).unwrap_or_else(|| panic!("{n}"));
                assert!(sql.ends_with(';'), "{sql}");
                conn.execute_batch(&sql).unwrap();
            }
            assert!(missing_objects(&conn).unwrap().is_empty(), "{name}");
        }
    }

    #[test]
    fn an_altered_trigger_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join("m.db")).unwrap();
        migrate(&mut conn, dir.path()).unwrap();
        // The same name, no generation bump.
        conn.execute_batch(
            "DROP TRIGGER memories_ai;
             CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
                 INSERT OR REPLACE INTO memories_fts (rowid, content, subject, ctx, date)
                     VALUES (NEW.id, NEW.content, NEW.subject);
             END;",
        )
        .unwrap();
        assert_eq!(
            missing_objects(&conn).unwrap(),
            ["trigger memories_ai (altered)"]
        );
        // Layout alone is no alteration.
        let shipped = definition_of("memories_ai").unwrap();
        conn.execute_batch("DROP TRIGGER memories_ai").unwrap();
        conn.execute_batch(&shipped.replace('\n', "\n\n    "))
            .unwrap();
        assert!(missing_objects(&conn).unwrap().is_empty());
    }

    #[test]
    fn newer_schema_is_refused_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join("m.db")).unwrap();
        migrate(&mut conn, dir.path()).unwrap();
        conn.execute(
            "INSERT INTO memd_schema (version, name) VALUES (99, 'future')",
            [],
        )
        .unwrap();
        conn.execute("INSERT INTO memories (content) VALUES ('keep me')", [])
            .unwrap();
        let err = migrate(&mut conn, dir.path()).unwrap_err();
        assert!(matches!(err, StoreError::SchemaTooNew { found: 99, .. }));
        let n: i64 = conn
            .query_row("SELECT count(*) FROM memories", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, 1);
    }

    #[test]
    fn foreign_database_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join("m.db")).unwrap();
        conn.execute_batch("CREATE TABLE notes (x TEXT)").unwrap();
        assert!(matches!(
            migrate(&mut conn, dir.path()),
            Err(StoreError::NotMemd)
        ));
    }
}
