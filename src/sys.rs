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

/// 16 random bytes from the kernel (`/dev/urandom`), or a mix of time,
/// process id and a counter if that is unavailable.
pub fn random_bytes() -> [u8; 16] {
    use std::io::Read;
    let mut buf = [0u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .is_ok()
    {
        return buf;
    }
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    buf[..8].copy_from_slice(&nanos.to_le_bytes());
    buf[8..12].copy_from_slice(&std::process::id().to_le_bytes());
    buf[12..].copy_from_slice(&(n as u32).to_le_bytes());
    buf
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
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if lim.rlim_cur < lim.rlim_max {
        let wanted = libc::rlimit {
            rlim_cur: lim.rlim_max,
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit(2) only reads the struct; raising the soft limit
        // up to the hard one needs no privilege.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &wanted) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        lim = wanted;
    }
    Ok(lim.rlim_cur)
}
