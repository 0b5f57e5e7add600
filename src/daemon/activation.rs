//! Socket activation: a service manager (systemd's `memd.socket`,
//! `systemd-socket-activate`) binds the socket and passes it as descriptor 3
//! with `LISTEN_PID` (our pid) and `LISTEN_FDS` (how many). The daemon then
//! serves on that listener instead of binding, and never removes the socket
//! file: it belongs to the manager, which keeps it across restarts.

use super::DaemonError;
use super::socket::Bound;

/// The first inherited descriptor (`SD_LISTEN_FDS_START`).
pub const LISTEN_FDS_START: i32 = 3;

/// What the environment says about inherited sockets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inherit {
    /// Nothing is passed to this process.
    None,
    /// `count` descriptors starting at [`LISTEN_FDS_START`].
    Fds {
        /// How many.
        count: i32,
    },
}

/// Reads `LISTEN_PID` and `LISTEN_FDS` (pure: the values and our pid are
/// given). Variables meant for another process (a different pid) are
/// ignored, as `sd_listen_fds` does.
///
/// # Errors
/// A message when the variables are addressed to us but malformed.
pub fn decide(
    listen_pid: Option<&str>,
    listen_fds: Option<&str>,
    own_pid: u32,
) -> Result<Inherit, String> {
    let Some(pid) = listen_pid else {
        return Ok(Inherit::None);
    };
    match pid.trim().parse::<u32>() {
        Ok(p) if p == own_pid => {}
        Ok(_) => return Ok(Inherit::None),
        Err(_) => return Err(format!("LISTEN_PID `{pid}` is not a process id")),
    }
    let fds = listen_fds.unwrap_or("0");
    match fds.trim().parse::<i32>() {
        Ok(0) => Ok(Inherit::None),
        Ok(n) if n > 0 => Ok(Inherit::Fds { count: n }),
        _ => Err(format!("LISTEN_FDS `{fds}` is not a count of descriptors")),
    }
}

/// The inherited listener, when the service manager passed one.
///
/// # Errors
/// [`DaemonError::SocketPath`] when the variables are malformed or the
/// descriptor is not a listening Unix stream socket.
pub fn take() -> Result<Option<Bound>, DaemonError> {
    let pid = std::env::var("LISTEN_PID").ok();
    let fds = std::env::var("LISTEN_FDS").ok();
    let count = match decide(pid.as_deref(), fds.as_deref(), std::process::id())
        .map_err(|m| DaemonError::SocketPath(format!("socket activation: {m}")))?
    {
        Inherit::None => return Ok(None),
        Inherit::Fds { count } => count,
    };
    if count > 1 {
        tracing::warn!(
            count,
            "the service manager passed several sockets; serving on the first only"
        );
    }
    let listener = crate::sys::adopt_listener(LISTEN_FDS_START).map_err(|e| {
        DaemonError::SocketPath(format!(
            "socket activation: cannot use the inherited socket: {e}"
        ))
    })?;
    let bound = super::socket::inherited(listener)?;
    tracing::info!(socket = %bound.path.display(), "serving on the socket passed by the service manager");
    Ok(Some(bound))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listen_variables_decide() {
        type Case<'a> = (Option<&'a str>, Option<&'a str>, Result<Inherit, ()>);
        let cases: &[Case] = &[
            (None, None, Ok(Inherit::None)),
            (None, Some("1"), Ok(Inherit::None)),
            (Some("42"), Some("1"), Ok(Inherit::Fds { count: 1 })),
            (Some("42"), Some("2"), Ok(Inherit::Fds { count: 2 })),
            (Some("42"), Some("0"), Ok(Inherit::None)),
            (Some("42"), None, Ok(Inherit::None)),
            // For another process (e.g. inherited through a fork): ignored.
            (Some("7"), Some("1"), Ok(Inherit::None)),
            (Some("x"), Some("1"), Err(())),
            (Some("42"), Some("-1"), Err(())),
            (Some("42"), Some("many"), Err(())),
        ];
        for (pid, fds, want) in cases {
            let got = decide(*pid, *fds, 42).map_err(|_| ());
            assert_eq!(&got, want, "LISTEN_PID={pid:?} LISTEN_FDS={fds:?}");
        }
    }
}
