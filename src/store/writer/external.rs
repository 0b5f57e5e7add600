//! The external-change check: between batches, and when the file watcher
//! wakes the writer, the file's generation is compared with the daemon's
//! own; a write by another process becomes an external epoch, dropped
//! triggers or tables are recreated (ARCHITECTURE.md "Drift").

use std::sync::atomic::Ordering;

use memd_proto::DriftEvent;
use rusqlite::Connection;

use crate::drift::log::Committer;
use crate::store::{Cause, StoreError, memories, meta, read_generation, schema};
use crate::sync;

use super::Thread;

pub(super) fn data_version(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("PRAGMA data_version", [], |r| r.get(0))?)
}

/// Recreates required triggers and tables that are missing (and triggers
/// another tool altered) and, when any was, rebuilds the search index (writes may have bypassed the triggers).
/// Returns what was repaired.
pub(super) fn repair_schema(conn: &Connection) -> Result<Vec<String>, StoreError> {
    let missing = schema::missing_objects(conn)?;
    if missing.is_empty() {
        return Ok(missing);
    }
    for object in &missing {
        let name = schema::object_name(object);
        let sql = schema::definition_of(name).ok_or_else(|| {
            StoreError::Sqlite(Cause::msg(format!(
                "{object} is missing and memd cannot recreate it"
            )))
        })?;
        if object.starts_with("trigger ") {
            conn.execute_batch(&format!("DROP TRIGGER IF EXISTS {name}"))?;
        }
        conn.execute_batch(&sql)?;
    }
    conn.execute_batch(&format!(
        "DELETE FROM memories_fts; {};",
        memories::INDEX_FROM_SOURCE
    ))?;
    Ok(missing)
}

impl Thread {
    /// A check woken by the file watcher: cheap when nothing changed (the
    /// file is the same and no other connection committed).
    pub(super) fn watcher_check(&mut self) {
        if let Err(e) = self.ensure_file() {
            tracing::warn!(error = %e, "external-change check failed");
            return;
        }
        if self.broken.is_some() {
            return;
        }
        match data_version(&self.conn) {
            Ok(v) if v == self.last_data_version => return,
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "cannot read data_version");
                return;
            }
        }
        // Look first in a read transaction: a plain external write needs no
        // write lock from memd (a tool without a busy timeout would fail).
        let needs_write = self
            .conn
            .execute_batch("BEGIN")
            .map_err(StoreError::from)
            .and_then(|()| self.check_external(false));
        let _ = self.conn.execute_batch("COMMIT");
        let checked = match needs_write {
            Ok(false) => Ok(()),
            Ok(true) => self
                .conn
                .execute_batch("BEGIN IMMEDIATE")
                .map_err(StoreError::from)
                .and_then(|()| self.check_external(true))
                .and_then(|_| Ok(self.conn.execute_batch("COMMIT")?)),
            Err(e) => Err(e),
        };
        if let Err(e) = checked {
            if !self.conn.is_autocommit() {
                let _ = self.conn.execute_batch("ROLLBACK");
            }
            tracing::warn!(error = %e, "external-change check failed");
        }
    }

    /// Inside a transaction: compares the file's generation with the
    /// daemon's own last one, repairs dropped triggers or tables, and records
    /// an external epoch when someone else wrote. With `can_write` false (a
    /// read transaction) it returns `Ok(true)` instead of writing when a
    /// repair or a generation move is needed.
    pub(super) fn check_external(&mut self, can_write: bool) -> Result<bool, StoreError> {
        let own = self.generations.own_last.load(Ordering::Acquire);
        let dv = data_version(&self.conn)?;
        let g = read_generation(&self.conn)?;
        if g == own && dv == self.last_data_version {
            return Ok(false);
        }
        // Another connection committed: it may have dropped what memd relies
        // on (then its writes may have bypassed the triggers).
        let missing = schema::missing_objects(&self.conn)?;
        if !can_write && (!missing.is_empty() || g < own) {
            return Ok(true);
        }
        self.last_data_version = dv;
        let repaired = if missing.is_empty() {
            missing
        } else {
            repair_schema(&self.conn)?
        };
        if g == own && repaired.is_empty() {
            // Only columns that are not edits changed (e.g. access tracking).
            return Ok(false);
        }
        let known = own.max(self.generations.current());
        let mut epoch = g;
        if !repaired.is_empty() || g < own {
            // A repair is a change; a generation that went back (an older
            // file restored) moves forward: generations never go back.
            epoch = known.max(g) + 1;
            meta::set_generation(&self.conn, epoch)?;
        }
        if g < own {
            tracing::warn!(
                found = g,
                known,
                now = epoch,
                "the database generation went back (an older file was restored); moved it forward"
            );
        }
        if !repaired.is_empty() {
            tracing::warn!(
                repaired = ?repaired,
                "memd's triggers or tables were dropped outside memd: recreated them and rebuilt the search index"
            );
        }
        let reason = if repaired.is_empty() {
            "external write".to_string()
        } else {
            format!("external write; repaired {}", repaired.join(", "))
        };
        self.log.push(own, epoch, Committer::External);
        self.record_external(own, epoch, &reason);
        Ok(false)
    }

    /// Records an external epoch and tells subscribed sessions. It reaches
    /// `memory_meta` with the next commit (or at shutdown).
    pub(super) fn record_external(&mut self, own: u64, epoch: u64, reason: &str) {
        tracing::warn!(
            own_generation = own,
            generation = epoch,
            reason,
            "external change detected: the database was written outside memd"
        );
        let at = crate::clock::now();
        self.generations
            .external_epoch
            .store(epoch, Ordering::Release);
        *sync::lock(&self.generations.last_drift_at) = Some(at.clone());
        self.generations.observe(epoch);
        self.generations.own_last.store(epoch, Ordering::Release);
        self.highwater.record(epoch);
        self.generations.drifted(DriftEvent {
            generation: epoch,
            external_epoch: epoch,
            at,
            reason: reason.to_string(),
        });
    }

    /// Writes the daemon's generation (and the external epoch) to
    /// `memory_meta` inside the current write transaction.
    pub(super) fn persist_generations(&self, own: u64) -> Result<(), StoreError> {
        meta::set_number(&self.conn, "daemon_generation", own)?;
        let epoch = self.generations.external_epoch.load(Ordering::Acquire);
        if epoch > 0 {
            meta::set_number(&self.conn, "external_epoch", epoch)?;
        }
        Ok(())
    }
}
