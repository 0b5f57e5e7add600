//! Who may talk to the daemon: its own uid, plus the uids and gids of the
//! `[socket]` allow list. The kernel reports the peer's credentials for the
//! connection (`SO_PEERCRED`: uid, gid; `SO_PEERGROUPS`: supplementary
//! groups); a client cannot choose them.

use crate::config::SocketConfig;

/// Decides whether a peer is served (pure).
///
/// # Errors
/// The message sent to a refused peer: who is served and how to be added.
pub fn admit(
    own_uid: u32,
    uid: u32,
    gid: u32,
    groups: &[u32],
    socket: &SocketConfig,
) -> Result<(), String> {
    let in_group = std::iter::once(&gid)
        .chain(groups)
        .any(|g| socket.allow_gids.contains(g));
    if uid == own_uid || socket.allow_uids.contains(&uid) || in_group {
        return Ok(());
    }
    Err(format!(
        "permission denied: this memd daemon runs as uid {own_uid} and serves only that user \
         and the uids and gids in its allow list; your uid {uid} (gid {gid}) is not in it. \
         Ask the daemon's owner to add `{uid}` to `[socket] allow_uids` (or your group to \
         `allow_gids`) in its config and reload it (SIGHUP, or `systemctl --user reload memd`), \
         or run your own daemon"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_uid_and_allow_lists_are_served() {
        let none = SocketConfig::default();
        let lists = SocketConfig {
            allow_uids: vec![1001],
            allow_gids: vec![50],
            ..SocketConfig::default()
        };
        /// (own uid, peer uid, peer gid, supplementary groups, config, served)
        type Case<'a> = (u32, u32, u32, &'a [u32], &'a SocketConfig, bool);
        let cases: [Case; 9] = [
            (1000, 1000, 1000, &[], &none, true),
            (1000, 1001, 1001, &[], &none, false),
            (1000, 0, 0, &[], &none, false),
            (1000, 1001, 1001, &[], &lists, true),
            (1000, 1002, 50, &[], &lists, true),
            (1000, 1002, 51, &[], &lists, false),
            (1000, 1002, 51, &[7, 50], &lists, true),
            (1000, 1002, 51, &[7, 8], &lists, false),
            (0, 65534, 65534, &[], &lists, false),
        ];
        for (own, uid, gid, groups, config, served) in cases {
            assert_eq!(
                admit(own, uid, gid, groups, config).is_ok(),
                served,
                "own {own}, peer {uid}:{gid} {groups:?}, {config:?}"
            );
        }
        let message = admit(1000, 1001, 7, &[], &none).unwrap_err();
        assert!(
            message.contains("allow_uids") && message.contains("1001"),
            "{message}"
        );
    }
}
