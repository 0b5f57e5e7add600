//! Watches the data dir and wakes the writer thread, which does the actual
//! external-change check through SQLite (`store::writer`).
//!
//! Path watches only: the watcher never opens the database files (closing
//! any descriptor on the file would drop SQLite's POSIX locks). On Linux it
//! uses inotify for the events that matter — a database file created,
//! deleted, renamed over, or closed after writing (a tool that exits) —
//! and not for every write: an event per WAL page written cost the daemon
//! about a tenth of its write path. A writer that keeps its connection open
//! is caught by the writer thread's idle poll of `PRAGMA data_version`
//! (`[drift] poll_ms`, 50 ms), and in any case at the start of the next
//! write transaction. Elsewhere the `notify` crate watches the directory.
//! Bursts of events are debounced into one wake-up.

use std::ffi::OsStr;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// Keeps the watch alive.
pub struct DataDirWatcher {
    #[cfg(not(target_os = "linux"))]
    _watcher: notify::RecommendedWatcher,
}

fn is_database_file(name: &OsStr, db_name: &OsStr) -> bool {
    let (Some(name), Some(db)) = (name.to_str(), db_name.to_str()) else {
        return false;
    };
    name == db
        || name
            .strip_prefix(db)
            .is_some_and(|s| s == "-wal" || s == "-shm")
}

/// Starts watching the directory of `db`; after each burst of changes
/// (and `debounce`), calls `check` (the writer's external-change check)
/// until it returns `false`.
///
/// # Errors
/// When the platform watcher cannot be created or the directory watched.
pub fn spawn(
    db: &Path,
    check: impl Fn() -> bool + Send + 'static,
    debounce: Duration,
) -> std::io::Result<DataDirWatcher> {
    let dir = db.parent().unwrap_or(Path::new(".")).to_path_buf();
    let db_name = db.file_name().unwrap_or_default().to_os_string();
    let (tx, rx) = mpsc::channel::<()>();
    let watcher = platform::watch(&dir, db_name, tx)?;
    std::thread::Builder::new()
        .name("memd-watch".into())
        .spawn(move || {
            while rx.recv().is_ok() {
                std::thread::sleep(debounce);
                while rx.try_recv().is_ok() {}
                if !check() {
                    break;
                }
            }
        })?;
    Ok(watcher)
}

#[cfg(target_os = "linux")]
mod platform {
    use super::{DataDirWatcher, Path, is_database_file, mpsc};
    use inotify::{Inotify, WatchMask};

    pub(super) fn watch(
        dir: &Path,
        db_name: std::ffi::OsString,
        tx: mpsc::Sender<()>,
    ) -> std::io::Result<DataDirWatcher> {
        let mut inotify = Inotify::init()?;
        inotify.watches().add(
            dir,
            WatchMask::CREATE
                | WatchMask::DELETE
                | WatchMask::CLOSE_WRITE
                | WatchMask::MOVED_FROM
                | WatchMask::MOVED_TO
                | WatchMask::DELETE_SELF
                | WatchMask::MOVE_SELF,
        )?;
        std::thread::Builder::new()
            .name("memd-inotify".into())
            .spawn(move || {
                let mut buf = [0u8; 4096];
                loop {
                    let events = match inotify.read_events_blocking(&mut buf) {
                        Ok(e) => e,
                        Err(e) => {
                            tracing::warn!(error = %e, "file watcher stopped");
                            return;
                        }
                    };
                    let relevant = events.into_iter().any(|e| match e.name {
                        Some(name) => is_database_file(name, &db_name),
                        // The directory itself moved or went away.
                        None => true,
                    });
                    if relevant && tx.send(()).is_err() {
                        return;
                    }
                }
            })?;
        Ok(DataDirWatcher {})
    }
}

#[cfg(not(target_os = "linux"))]
mod platform {
    use super::*;
    use notify::{RecursiveMode, Watcher};

    pub(super) fn watch(
        dir: &Path,
        db_name: std::ffi::OsString,
        tx: mpsc::Sender<()>,
    ) -> std::io::Result<DataDirWatcher> {
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let relevant = match event {
                    Ok(event) => event
                        .paths
                        .iter()
                        .any(|p| p.file_name().is_some_and(|n| is_database_file(n, &db_name))),
                    // Check anyway: an overflowed queue may have hidden events.
                    Err(_) => true,
                };
                if relevant {
                    let _ = tx.send(());
                }
            })
            .map_err(std::io::Error::other)?;
        watcher
            .watch(dir, RecursiveMode::NonRecursive)
            .map_err(std::io::Error::other)?;
        Ok(DataDirWatcher { _watcher: watcher })
    }
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
