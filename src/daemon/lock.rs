//! One daemon per data dir: an exclusive lock on `<data_dir>/memd.lock`.
//!
//! The lock is held for the daemon's lifetime and released by the kernel when
//! the process exits, however it exits. The file also records the holder's
//! pid and socket, so a second daemon can name the running one.

use std::fs::{File, TryLockError};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

use super::DaemonError;
use crate::store::Cause;

/// The held lock; dropping it releases the lock.
#[derive(Debug)]
pub struct DataDirLock {
    _file: File,
}

/// Takes the lock or reports who holds it.
///
/// # Errors
/// [`DaemonError::AlreadyRunning`] when another process holds it;
/// [`DaemonError::Io`] when the file cannot be opened.
pub fn acquire(path: &Path, socket: &Path) -> Result<DataDirLock, DaemonError> {
    let mut file = crate::sys::open_private(path).map_err(|e| {
        DaemonError::Io(Cause::context(
            format!("cannot open lock file {}", path.display()),
            e,
        ))
    })?;
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => {
            let mut holder = String::new();
            let _ = file.read_to_string(&mut holder);
            let mut lines = holder.lines();
            let pid = lines.next().unwrap_or("?").to_string();
            let socket = lines.next().unwrap_or("?").to_string();
            return Err(DaemonError::AlreadyRunning {
                pid,
                socket,
                lock: path.to_path_buf(),
            });
        }
        Err(TryLockError::Error(e)) => {
            return Err(DaemonError::Io(Cause::context(
                format!("cannot lock {}", path.display()),
                e,
            )));
        }
    }
    let info = format!("{}\n{}\n", std::process::id(), socket.display());
    let written = file
        .set_len(0)
        .and_then(|()| file.rewind())
        .and_then(|()| file.write_all(info.as_bytes()))
        .and_then(|()| file.flush());
    if let Err(e) = written {
        tracing::warn!(error = %e, "cannot record the pid in the lock file");
    }
    Ok(DataDirLock { _file: file })
}

/// The running daemon of a data dir, as its lock file records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    /// Its process id.
    pub pid: u32,
    /// The socket it listens on.
    pub socket: PathBuf,
}

/// The daemon that holds the lock at `path`, when the file names one that
/// is running: a client given only a data dir finds that data dir's daemon
/// wherever it listens (a daemon started by systemd or with `--socket`).
/// Reads the file without locking it (a lock, even shared, taken at the
/// moment a daemon starts would make that daemon fail). A file of another
/// user names nobody: its socket could be anyone's.
pub fn holder(path: &Path) -> Option<Holder> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::symlink_metadata(path).ok()?;
    if meta.uid() != crate::sys::euid() || !meta.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines();
    let pid: u32 = lines.next()?.trim().parse().ok()?;
    let socket = PathBuf::from(lines.next()?.trim());
    if socket.as_os_str().is_empty() || !crate::sys::alive(pid) {
        return None;
    }
    Some(Holder { pid, socket })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_is_named_only_while_it_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memd.lock");
        assert_eq!(holder(&path), None, "no file");
        let lock = acquire(&path, Path::new("/run/elsewhere/memd.sock")).unwrap();
        assert_eq!(
            holder(&path),
            Some(Holder {
                pid: std::process::id(),
                socket: "/run/elsewhere/memd.sock".into()
            })
        );
        drop(lock);
        // A pid that no longer runs: nothing.
        std::fs::write(&path, "999999999\n/run/x.sock\n").unwrap();
        assert_eq!(holder(&path), None);
        std::fs::write(&path, "garbage").unwrap();
        assert_eq!(holder(&path), None);
        // Another user's file names nobody, even a running daemon (root
        // can make one here; others cannot, and their run skips this).
        std::fs::write(&path, format!("{}\n/run/x.sock\n", std::process::id())).unwrap();
        assert!(holder(&path).is_some());
        if crate::sys::euid() == 0 {
            std::os::unix::fs::chown(&path, Some(65534), Some(65534)).unwrap();
            assert_eq!(holder(&path), None);
        }
    }
}
