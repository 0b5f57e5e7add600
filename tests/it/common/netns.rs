//! A network namespace of the test's own, for running an agent CLI with
//! only loopback reachable.

use std::process::Command;

use super::require;

/// Moves the calling thread into a network namespace of its own with only
/// `lo`, up: processes it starts reach nothing but loopback, and a
/// listener it binds is reachable only from them.
#[allow(unsafe_code)]
pub fn isolate_network() {
    // SAFETY: unshare(2) with CLONE_NEWNET takes no pointers; it moves only
    // the calling thread (a thread of its own, see the test) into a new
    // network namespace.
    let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
    assert_eq!(
        rc,
        0,
        "unshare(CLONE_NEWNET): {}",
        std::io::Error::last_os_error()
    );
    let up = Command::new("ip")
        .args(["link", "set", "lo", "up"])
        .status()
        .unwrap();
    assert!(up.success(), "ip link set lo up");
}

/// Whether this process may make a network namespace (root).
pub fn can_isolate() -> bool {
    #[allow(unsafe_code)]
    // SAFETY: geteuid(2) cannot fail and takes no arguments.
    let root = unsafe { libc::geteuid() } == 0;
    require(
        root,
        "running the Claude Code CLI with only loopback reachable needs root (unshare -n)",
    )
}
