//! The few libc calls std does not wrap. Each is a plain syscall without
//! memory-safety preconditions.
#![allow(unsafe_code)]

/// Sets the process umask, returning the old one. memd runs with 0o077 so
/// every file it creates (database, WAL, backups, socket) is owner-only even
/// before an explicit chmod.
pub fn set_umask(mask: u32) -> u32 {
    // SAFETY: umask(2) only swaps the process file-mode mask; it cannot fail.
    unsafe { libc::umask(mask as libc::mode_t) as u32 }
}

/// The effective uid of this process.
pub fn euid() -> u32 {
    // SAFETY: geteuid(2) has no arguments and cannot fail.
    unsafe { libc::geteuid() }
}

/// The login name of `uid`, when the user database knows it.
pub fn user_name(uid: u32) -> Option<String> {
    let mut buf: Vec<libc::c_char> = vec![0; 1024];
    loop {
        // SAFETY: passwd is plain data (integers and pointers), for which
        // all zeroes is a valid value; getpwuid_r fills it.
        let mut pwd: libc::passwd = unsafe { std::mem::zeroed() };
        let mut found: *mut libc::passwd = std::ptr::null_mut();
        // SAFETY: pwd, buf and found are live locals and buf's length is
        // the one given; on success found points at pwd, whose strings
        // lie in buf.
        let rc = unsafe {
            libc::getpwuid_r(
                uid,
                &raw mut pwd,
                buf.as_mut_ptr(),
                buf.len(),
                &raw mut found,
            )
        };
        if rc == libc::ERANGE && buf.len() < 1 << 20 {
            buf.resize(buf.len() * 4, 0);
            continue;
        }
        if rc != 0 || found.is_null() || pwd.pw_name.is_null() {
            return None;
        }
        // SAFETY: pw_name is a NUL-terminated string inside buf, alive here.
        let name = unsafe { std::ffi::CStr::from_ptr(pwd.pw_name) };
        return Some(name.to_string_lossy().into_owned());
    }
}

/// 16 random bytes from the kernel (`getrandom(2)`, else `/dev/urandom`).
///
/// # Errors
/// When the kernel gives none (a sandbox that forbids both): memd makes
/// tokens and session keys from these bytes, so it fails rather than make
/// guessable ones.
pub fn random_bytes() -> std::io::Result<[u8; 16]> {
    let mut buf = [0u8; 16];
    getrandom::fill(&mut buf).map_err(|e| {
        std::io::Error::other(format!(
            "cannot read random bytes from the kernel ({e}); memd makes no token or key \
             without them"
        ))
    })?;
    Ok(buf)
}

/// Raises the soft limit on open files to the hard limit, so that
/// `limits.max_connections` sessions fit even where the default soft limit
/// is 1,024. Returns the limit in force afterwards.
pub fn raise_open_file_limit() -> std::io::Result<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit(2) writes one rlimit into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &raw mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        let wanted = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit(2) only reads the struct; raising the soft limit
        // up to the hard one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raw const wanted) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        lim = wanted;
    }
    Ok(lim.rlim_cur)
}

/// Takes over a listening socket inherited from the service manager (socket
/// activation): checks that `fd` is an open stream socket in the listening
/// state, marks it close-on-exec and wraps it.
///
/// # Errors
/// `InvalidInput` when `fd` is not open, not a socket, not a stream socket
/// or not listening; the OS error otherwise.
pub fn adopt_listener(fd: i32) -> std::io::Result<std::os::unix::net::UnixListener> {
    use std::io::{Error, ErrorKind};
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: fcntl(F_GETFD) only reads the descriptor flags; an invalid fd
    // is reported as -1/EBADF.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    if flags < 0 {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("descriptor {fd} is not open"),
        ));
    }
    let sock_type = getsockopt_int(fd, libc::SO_TYPE)
        .map_err(|e| Error::new(ErrorKind::InvalidInput, format!("descriptor {fd}: {e}")))?;
    if sock_type != libc::SOCK_STREAM {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("descriptor {fd} is not a stream socket"),
        ));
    }
    if getsockopt_int(fd, libc::SO_ACCEPTCONN)? != 1 {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!("descriptor {fd} is not a listening socket"),
        ));
    }
    // SAFETY: as above; setting FD_CLOEXEC keeps the listener out of any
    // process this one might start.
    if unsafe { libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC) } < 0 {
        return Err(Error::last_os_error());
    }
    // SAFETY: the service manager handed this descriptor to this process
    // (LISTEN_PID is our pid) and nothing else in memd owns or closes it:
    // ownership moves into the listener here, exactly once.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    Ok(std::os::unix::net::UnixListener::from(owned))
}

fn getsockopt_int(fd: i32, opt: libc::c_int) -> std::io::Result<i32> {
    let mut value: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: value and len point to live locals of the sizes given.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            opt,
            (&raw mut value).cast(),
            &raw mut len,
        )
    };
    if rc < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(value)
}

/// CLOCK_MONOTONIC in microseconds (for `MONOTONIC_USEC=` in a reload
/// notification).
pub fn monotonic_usec() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a live timespec; CLOCK_MONOTONIC always exists.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &raw mut ts) };
    (ts.tv_sec as u64) * 1_000_000 + (ts.tv_nsec as u64) / 1_000
}

/// The supplementary groups of the peer of a connected Unix socket, as the
/// kernel recorded them at connect time (`SO_PEERGROUPS`, Linux 4.13+).
/// Elsewhere, or on an older kernel, the list is empty.
#[cfg(target_os = "linux")]
pub fn peer_groups(fd: i32) -> Vec<u32> {
    let mut groups: Vec<libc::gid_t> = vec![0; 64];
    loop {
        let mut len = (groups.len() * std::mem::size_of::<libc::gid_t>()) as libc::socklen_t;
        // SAFETY: the buffer and len describe the same live allocation.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_PEERGROUPS,
                groups.as_mut_ptr().cast(),
                &raw mut len,
            )
        };
        let n = len as usize / std::mem::size_of::<libc::gid_t>();
        if rc == 0 {
            groups.truncate(n);
            return groups;
        }
        // ERANGE: len now says how much is needed.
        if std::io::Error::last_os_error().raw_os_error() == Some(libc::ERANGE) && n > groups.len()
        {
            groups.resize(n, 0);
            continue;
        }
        return Vec::new();
    }
}

/// See the Linux version: no supplementary groups are known here.
#[cfg(not(target_os = "linux"))]
pub fn peer_groups(_fd: i32) -> Vec<u32> {
    Vec::new()
}

/// Whether a process is running (signal 0: nothing is sent). A zombie (an
/// exited process its parent has not reaped yet) is not running.
pub fn alive(pid: u32) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    // SAFETY: kill with signal 0 only checks that the process exists.
    let rc = unsafe { libc::kill(raw, 0) };
    let exists = rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return false;
    }
    // /proc/<pid>/stat: "pid (comm) S ...", the state after the last ')'.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !matches!(
            stat.rsplit_once(')')
                .map(|(_, rest)| rest.trim_start().chars().next()),
            Some(Some('Z' | 'X'))
        ),
        Err(_) => true,
    }
}

/// Gives memory the allocator holds but no longer uses back to the system
/// (after a large import, say, glibc keeps the freed pages). A no-op where
/// the C library has no `malloc_trim`.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Caps glibc's malloc arenas at two. By default glibc gives each thread
/// that allocates under contention its own arena (up to eight per core),
/// and the daemon's many short-lived blocking-pool threads then keep freed
/// memory spread over arenas it never gives back: idle RSS at 100K memories
/// was 33-50 MiB, 27 MiB with two arenas (memd-bench perf). A no-op where
/// the C library is not glibc.
pub fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets an allocator parameter; called at start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, 2);
    }
}

/// Opens a file of the daemon's own in its data dir for reading and
/// writing: created with mode 0600 when missing, never truncated, never
/// through a symlink planted at the path.
///
/// # Errors
/// I/O errors (a symlink at the path is one: `ELOOP`).
pub fn open_private(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_names_come_from_the_user_database() {
        assert_eq!(user_name(0).as_deref(), Some("root"));
        assert_eq!(user_name(4_000_000_123), None);
    }

    #[test]
    fn random_bytes_come_from_the_kernel_and_differ_each_time() {
        let a = random_bytes().unwrap();
        let b = random_bytes().unwrap();
        assert_ne!(a, b);
        assert_ne!(a, [0; 16]);
        // Not the time-and-pid mix of earlier versions: no call carries
        // this process's id where that mix put it.
        let pid = std::process::id().to_le_bytes();
        let with_pid = (0..64)
            .filter(|_| random_bytes().unwrap()[8..12] == pid)
            .count();
        assert_eq!(with_pid, 0);
    }
}
