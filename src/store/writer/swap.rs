//! File swaps: a restore through SQLite's backup API, or a file renamed over
//! `memory.db` (the old inode is never written again). Either way every row
//! counts as changed, and the generation moves above everything seen.

use std::path::Path;
use std::sync::atomic::Ordering;

use rusqlite::Connection;

use crate::drift::log::Committer;
use crate::store::{Cause, StoreError, memories, read_generation, schema};

use super::checkpoint::watch_wal;

use super::external::{data_version, repair_schema};

use super::{Restored, Thread};

/// (device, inode) of a path, without opening it.
pub(super) fn file_id(path: &Path) -> Result<(u64, u64), StoreError> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path)?;
    Ok((meta.dev(), meta.ino()))
}

/// Checks that `path` is a memd database this binary can use, without
/// changing it; returns its generation.
pub(super) fn check_restorable(path: &Path) -> Result<u64, StoreError> {
    let conn = Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| StoreError::InvalidInput(format!("not a SQLite database: {e}")))?;
    let check: String = conn
        .query_row("PRAGMA quick_check", [], |r| r.get(0))
        .map_err(|e| StoreError::InvalidInput(format!("not a SQLite database: {e}")))?;
    if check != "ok" {
        return Err(StoreError::InvalidInput(format!(
            "the file fails SQLite's quick_check: {check}"
        )));
    }
    let version = schema::current_version(&conn).map_err(|e| match e {
        StoreError::NotMemd => {
            StoreError::InvalidInput("the file is a SQLite database but not memd's".into())
        }
        other => other,
    })?;
    if version == 0 {
        return Err(StoreError::InvalidInput(
            "the file is an empty database, not a memd backup".into(),
        ));
    }
    if version > schema::latest_version() {
        return Err(StoreError::SchemaTooNew {
            found: version,
            supported: schema::latest_version(),
        });
    }
    read_generation(&conn)
}

impl Thread {
    /// Makes sure the connection has the file at the path open: reopens it
    /// when another file was renamed over it.
    pub(super) fn ensure_file(&mut self) -> Result<(), StoreError> {
        match file_id(&self.path) {
            Ok(id) if id == self.file_id && self.broken.is_none() => Ok(()),
            Ok(_) => self.reopen(),
            Err(e) => {
                let msg = format!(
                    "the database file {} is gone ({e}); put it back or restart memd",
                    self.path.display()
                );
                if self.broken.as_deref() != Some(msg.as_str()) {
                    tracing::error!("{msg}");
                }
                self.broken = Some(msg);
                Ok(())
            }
        }
    }

    /// Swaps the connection to the file now at the path (renamed over the
    /// old one). The old connections are checkpointed and closed first; the
    /// old inode is never written again.
    fn reopen(&mut self) -> Result<(), StoreError> {
        let readers = self.readers.clone();
        readers.exclusive(|| {
            let placeholder = Connection::open_in_memory()?;
            let old = std::mem::replace(&mut self.conn, placeholder);
            if self.broken.is_none() {
                let _ = old.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |r| {
                    r.get::<_, i64>(0)
                });
            }
            let _ = old.close();
            match self.open_current_file() {
                Ok(()) => {
                    self.broken = None;
                    Ok(())
                }
                Err(e) => {
                    let msg = format!(
                        "the database file {} was replaced by an unusable file: {e}",
                        self.path.display()
                    );
                    tracing::error!("{msg}");
                    self.broken = Some(msg);
                    Ok(())
                }
            }
        })
    }

    fn open_current_file(&mut self) -> Result<(), StoreError> {
        let mut conn = super::super::open_write_connection(&self.path, &self.storage)?;
        watch_wal(&mut conn, &self.wal_frames)?;
        let dir = self.path.parent().unwrap_or(Path::new("."));
        schema::migrate(&mut conn, dir)?;
        self.file_id = file_id(&self.path)?;
        self.conn = conn;
        let own = self.generations.own_last.load(Ordering::Acquire);
        self.conn.execute_batch("BEGIN IMMEDIATE")?;
        let done = self.after_swap(own, "database file replaced");
        match done {
            Ok(()) => Ok(self.conn.execute_batch("COMMIT")?),
            Err(e) => {
                let _ = self.conn.execute_batch("ROLLBACK");
                Err(e)
            }
        }
    }

    /// After the file's content was swapped: repair, move the generation
    /// above everything seen, record it as external.
    fn after_swap(&mut self, own: u64, reason: &str) -> Result<(), StoreError> {
        repair_schema(&self.conn)?;
        let g = read_generation(&self.conn)?;
        let epoch = g.max(own).max(self.generations.current()) + 1;
        crate::store::meta::set_generation(&self.conn, epoch)?;
        // Every row of the new file counts as changed by it: a session's
        // reads of the old file say nothing about the new one.
        memories::mark_all_changed(&self.conn, epoch)?;
        self.log.reset(epoch - 1);
        self.log.push(epoch - 1, epoch, Committer::External);
        self.record_external(own, epoch, reason);
        self.persist_generations(epoch)?;
        self.last_data_version = data_version(&self.conn)?;
        Ok(())
    }

    pub(super) fn restore(&mut self, path: &Path) -> Result<Restored, StoreError> {
        if let Some(msg) = &self.broken {
            return Err(StoreError::Io(Cause::msg(msg.clone())));
        }
        let generation_in_file = check_restorable(path)?;
        let readers = self.readers.clone();
        readers.exclusive(|| {
            let own = self.generations.own_last.load(Ordering::Acquire);
            self.conn.restore(
                rusqlite::MAIN_DB,
                path,
                None::<fn(rusqlite::backup::Progress)>,
            )?;
            let dir = self.path.parent().unwrap_or(Path::new("."));
            schema::migrate(&mut self.conn, dir)?;
            self.conn.execute_batch("BEGIN IMMEDIATE")?;
            match self.after_swap(own, "restored from a backup") {
                Ok(()) => self.conn.execute_batch("COMMIT")?,
                Err(e) => {
                    let _ = self.conn.execute_batch("ROLLBACK");
                    return Err(e);
                }
            }
            Ok(Restored {
                generation_in_file,
                generation: self.generations.own_last.load(Ordering::Acquire),
            })
        })
    }
}
