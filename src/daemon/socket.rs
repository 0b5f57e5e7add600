//! Socket hygiene (ARCHITECTURE.md "Files and paths"): the path must fit
//! `sun_path`; the parent directory is created 0700 (a wider existing one is
//! warned about); a socket that answers is never replaced; one nobody answers
//! on is stale and removed; anything else at the path (a file, a symlink) is
//! left alone and refused.

use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::DaemonError;
use crate::config::MAX_SOCKET_PATH;
use crate::store::Cause;

/// A bound listener and the identity of the file it created.
#[derive(Debug)]
pub struct Bound {
    /// The listener.
    pub listener: std::os::unix::net::UnixListener,
    /// The socket path.
    pub path: PathBuf,
    /// (device, inode) of the socket file, so shutdown removes only ours.
    pub id: (u64, u64),
    /// Passed by the service manager (socket activation): never removed,
    /// never chmod-ed by the daemon.
    pub inherited: bool,
}

/// Wraps a listener inherited from the service manager.
///
/// # Errors
/// [`DaemonError::SocketPath`] when it is not a Unix socket bound to a path.
pub fn inherited(listener: std::os::unix::net::UnixListener) -> Result<Bound, DaemonError> {
    let addr = listener.local_addr().map_err(|e| {
        DaemonError::SocketPath(format!("the inherited socket is not a Unix socket: {e}"))
    })?;
    let path = addr.as_pathname().map(Path::to_path_buf).ok_or_else(|| {
        DaemonError::SocketPath(
            "the inherited socket has no path (abstract or unnamed); memd serves a path".into(),
        )
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| DaemonError::Io(Cause::of(e)))?;
    let id = std::fs::symlink_metadata(&path).map_or((0, 0), |m| (m.dev(), m.ino()));
    Ok(Bound {
        listener,
        path,
        id,
        inherited: true,
    })
}

/// Checks the path length.
///
/// # Errors
/// [`DaemonError::SocketPath`] when it does not fit `sun_path`.
pub fn check_path(path: &Path) -> Result<(), DaemonError> {
    let len = path.as_os_str().len();
    if len > MAX_SOCKET_PATH {
        return Err(DaemonError::SocketPath(format!(
            "socket path {} is {len} bytes; Unix sockets allow at most {MAX_SOCKET_PATH}. \
             Choose a shorter --socket (or MEMD_SOCKET)",
            path.display()
        )));
    }
    Ok(())
}

/// Creates `dir` (and parents) with mode 0700; warns when an existing one is
/// open to others.
///
/// # Errors
/// [`DaemonError::Io`] when it cannot be created.
pub fn ensure_private_dir(dir: &Path) -> Result<(), DaemonError> {
    create_private_dir(dir)?;
    if let Some(mode) = open_mode(dir) {
        tracing::warn!(
            dir = %dir.display(),
            mode = format!("{mode:o}"),
            "directory is accessible to other users; memd expects 0700"
        );
    }
    Ok(())
}

/// The data dir: created with mode 0700. One of another user, or holding
/// a file of another user, is refused ([`super::owner`]); one of this user
/// that others may read or write (made with a plain `mkdir`, 0755) is made
/// 0700 first, with a note in the log, so that nothing can be put in it
/// between the check of its files and their use.
///
/// # Errors
/// [`DaemonError::NotOurs`] for another user's directory or file;
/// [`DaemonError::Io`] when it cannot be created.
pub fn ensure_private_data_dir(dir: &Path) -> Result<(), DaemonError> {
    create_private_dir(dir)?;
    super::owner::check_dir(dir).map_err(DaemonError::NotOurs)?;
    if let Some(mode) = open_mode(dir) {
        match std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)) {
            Ok(()) => tracing::info!(
                dir = %dir.display(),
                was = format!("{mode:o}"),
                "data directory made private (0700): it holds every memory"
            ),
            Err(e) => tracing::warn!(
                dir = %dir.display(),
                mode = format!("{mode:o}"),
                error = %e,
                "directory is accessible to other users and cannot be made 0700"
            ),
        }
    }
    super::owner::check_entries(dir).map_err(DaemonError::NotOurs)
}

fn create_private_dir(dir: &Path) -> Result<(), DaemonError> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| {
            DaemonError::Io(Cause::context(
                format!("cannot create {}", dir.display()),
                e,
            ))
        })
}

/// The mode of `dir` when group or others have any access to it.
fn open_mode(dir: &Path) -> Option<u32> {
    let mode = std::fs::metadata(dir).ok()?.permissions().mode() & 0o777;
    (mode & 0o077 != 0).then_some(mode)
}

/// Binds the socket after removing a stale one.
///
/// # Errors
/// [`DaemonError::AlreadyServing`] when a live socket answers at the path,
/// [`DaemonError::SocketPath`] when something that is not a socket is there,
/// [`DaemonError::Io`] for other failures.
pub fn bind(path: &Path, mode: u32) -> Result<Bound, DaemonError> {
    check_path(path)?;
    if let Some(dir) = path.parent() {
        ensure_private_dir(dir)?;
    }
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => {
            match std::os::unix::net::UnixStream::connect(path) {
                Ok(_) => return Err(DaemonError::AlreadyServing(path.to_path_buf())),
                Err(e) => {
                    tracing::info!(path = %path.display(), error = %e, "removing a stale socket");
                    std::fs::remove_file(path).map_err(|e| {
                        DaemonError::Io(Cause::context(
                            format!("cannot remove stale socket {}", path.display()),
                            e,
                        ))
                    })?;
                }
            }
        }
        Ok(meta) => {
            let kind = if meta.file_type().is_symlink() {
                "a symlink"
            } else if meta.is_dir() {
                "a directory"
            } else {
                "a file"
            };
            return Err(DaemonError::SocketPath(format!(
                "{} is {kind}, not a socket; memd will not replace it. Remove it or choose \
                 another --socket",
                path.display()
            )));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => {
            return Err(DaemonError::Io(Cause::context(
                format!("cannot inspect {}", path.display()),
                e,
            )));
        }
    }
    let listener = match staging(path) {
        Some(staged) => {
            let bound = bind_as(&staged, mode).and_then(|listener| {
                std::fs::rename(&staged, path)
                    .map(|()| listener)
                    .map_err(|e| {
                        DaemonError::Io(Cause::context(
                            format!("cannot move the socket to {}", path.display()),
                            e,
                        ))
                    })
            });
            if bound.is_err() {
                let _ = std::fs::remove_file(&staged);
            }
            bound?
        }
        None => bind_as(path, mode)?,
    };
    let meta = std::fs::symlink_metadata(path).map_err(|e| {
        DaemonError::Io(Cause::context(format!("cannot stat {}", path.display()), e))
    })?;
    listener
        .set_nonblocking(true)
        .map_err(|e| DaemonError::Io(Cause::of(e)))?;
    Ok(Bound {
        listener,
        path: path.to_path_buf(),
        id: (meta.dev(), meta.ino()),
        inherited: false,
    })
}

/// Where the socket is bound before it is moved to its path: beside it,
/// so that the rename is atomic and the path names a socket only once it
/// listens with its mode set (a client never meets a socket that refuses,
/// nor one open to others for an instant). `None` when that name would not
/// fit `sun_path` (the socket is bound at its path then) or is taken by
/// something that is not a stale socket.
fn staging(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let staged = path.with_file_name(format!(".{name}.{}", std::process::id()));
    if staged.as_os_str().len() > MAX_SOCKET_PATH {
        return None;
    }
    match std::fs::symlink_metadata(&staged) {
        Ok(meta) if meta.file_type().is_socket() => {
            std::fs::remove_file(&staged).ok()?;
        }
        Ok(_) => return None,
        Err(_) => {}
    }
    Some(staged)
}

/// Binds and listens at `path`, then sets the file's mode.
fn bind_as(path: &Path, mode: u32) -> Result<std::os::unix::net::UnixListener, DaemonError> {
    let listener = std::os::unix::net::UnixListener::bind(path).map_err(|e| {
        DaemonError::Io(Cause::context(format!("cannot bind {}", path.display()), e))
    })?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(|e| {
        DaemonError::Io(Cause::context(
            format!("cannot chmod {}", path.display()),
            e,
        ))
    })?;
    Ok(listener)
}

/// Removes the socket file if it is still the one we bound (another daemon
/// may have replaced a socket we lost).
pub fn remove_if_ours(path: &Path, id: (u64, u64)) {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if (meta.dev(), meta.ino()) == id => {
            if let Err(e) = std::fs::remove_file(path) {
                tracing::warn!(path = %path.display(), error = %e, "cannot remove the socket");
            }
        }
        Ok(_) => tracing::warn!(path = %path.display(), "socket was replaced; leaving it"),
        Err(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_path_appears_listening_with_its_mode_and_nothing_is_left_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memd.sock");
        let bound = bind(&path, 0o600).unwrap();
        assert_eq!(entries(dir.path()), vec!["memd.sock".to_string()]);
        let meta = std::fs::symlink_metadata(&path).unwrap();
        assert_eq!(meta.permissions().mode() & 0o777, 0o600);
        assert_eq!(bound.id, (meta.dev(), meta.ino()));
        std::os::unix::net::UnixStream::connect(&path).unwrap();
        assert!(matches!(
            bind(&path, 0o600),
            Err(DaemonError::AlreadyServing(_))
        ));
    }

    #[test]
    fn a_staging_name_that_is_taken_or_too_long_binds_at_the_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("memd.sock");
        let staged = staging(&path).unwrap();
        std::fs::write(&staged, "not a socket").unwrap();
        assert_eq!(staging(&path), None);
        let _bound = bind(&path, 0o600).unwrap();
        assert_eq!(std::fs::read_to_string(&staged).unwrap(), "not a socket");
        std::os::unix::net::UnixStream::connect(&path).unwrap();

        let room = MAX_SOCKET_PATH - dir.path().as_os_str().len() - 1;
        let long = dir.path().join("s".repeat(room));
        assert_eq!(staging(&long), None);
        let _long = bind(&long, 0o600).unwrap();
        std::os::unix::net::UnixStream::connect(&long).unwrap();
    }
}
