//! systemd readiness notifications (`sd_notify`): `READY=1` once the socket
//! serves, `STOPPING=1` when shutdown starts. A no-op without
//! `NOTIFY_SOCKET`. Tests use the same mechanism to wait for readiness
//! without sleeping.

use std::os::unix::net::UnixDatagram;

/// Sends one notification; failures are logged, never fatal.
pub fn notify(state: &str) {
    let Some(path) = std::env::var_os("NOTIFY_SOCKET") else {
        return;
    };
    let result = UnixDatagram::unbound().and_then(|sock| {
        let bytes = path.as_encoded_bytes();
        if let Some(name) = bytes.strip_prefix(b"@") {
            abstract_send(&sock, name, state)
        } else {
            sock.send_to(state.as_bytes(), &path).map(|_| ())
        }
    });
    if let Err(e) = result {
        tracing::warn!(error = %e, state, "cannot notify the service manager");
    }
}

#[cfg(target_os = "linux")]
fn abstract_send(sock: &UnixDatagram, name: &[u8], state: &str) -> std::io::Result<()> {
    use std::os::linux::net::SocketAddrExt;
    let addr = std::os::unix::net::SocketAddr::from_abstract_name(name)?;
    sock.send_to_addr(state.as_bytes(), &addr).map(|_| ())
}

#[cfg(not(target_os = "linux"))]
fn abstract_send(_: &UnixDatagram, _: &[u8], _: &str) -> std::io::Result<()> {
    Err(std::io::Error::other(
        "abstract sockets exist only on Linux",
    ))
}
