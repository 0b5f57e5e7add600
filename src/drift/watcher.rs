//! Watches the data dir for changes to `memory.db`, `-wal` and `-shm`
//! (including renames) and wakes the writer thread, which does the actual
//! check through SQLite.
//!
//! Path watches only: the watcher never opens the database files (closing
//! any descriptor on the file would drop SQLite's POSIX locks). A WAL commit
//! by another process arrives as a burst of events; they are debounced into
//! one wake-up. The daemon's own commits wake the writer too; that check is
//! a `stat` and a `PRAGMA data_version`, which tells them apart.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use crate::store::writer::CheckHandle;

/// Keeps the watch alive; dropping it stops watching.
pub struct DataDirWatcher {
    _watcher: notify::RecommendedWatcher,
}

fn is_database_file(name: &OsStr, db_name: &OsStr) -> bool {
    let Some(name) = name.to_str() else {
        return false;
    };
    let Some(db) = db_name.to_str() else {
        return false;
    };
    name == db
        || name
            .strip_prefix(db)
            .is_some_and(|s| s == "-wal" || s == "-shm")
}

/// Starts watching the directory of `db`.
///
/// # Errors
/// When the platform watcher cannot be created or the directory watched.
pub fn spawn(db: &Path, writer: CheckHandle, debounce: Duration) -> notify::Result<DataDirWatcher> {
    let dir = db.parent().unwrap_or(Path::new(".")).to_path_buf();
    let db_name = db.file_name().unwrap_or_default().to_os_string();
    let (tx, rx) = mpsc::channel::<()>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        match event {
            Ok(event) => {
                if event
                    .paths
                    .iter()
                    .any(|p| p.file_name().is_some_and(|n| is_database_file(n, &db_name)))
                {
                    let _ = tx.send(());
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "file watcher error");
                // Check anyway: an overflowed queue may have hidden events.
                let _ = tx.send(());
            }
        }
    })?;
    watcher.watch(&dir, RecursiveMode::NonRecursive)?;
    std::thread::Builder::new()
        .name("memd-watch".into())
        .spawn(move || {
            while rx.recv().is_ok() {
                std::thread::sleep(debounce);
                while rx.try_recv().is_ok() {}
                if !writer.check() {
                    break;
                }
            }
        })
        .map_err(|e| notify::Error::generic(&e.to_string()))?;
    Ok(DataDirWatcher { _watcher: watcher })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_database_files_count() {
        let db = OsStr::new("memory.db");
        for (name, want) in [
            ("memory.db", true),
            ("memory.db-wal", true),
            ("memory.db-shm", true),
            ("memory.db-journal", false),
            ("memory.bak.1.json", false),
            ("memd.sock", false),
            ("memd.lock", false),
        ] {
            assert_eq!(is_database_file(OsStr::new(name), db), want, "{name}");
        }
    }
}
