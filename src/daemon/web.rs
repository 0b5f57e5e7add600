//! The viewer's loopback listener: a TCP port on 127.0.0.1 (or ::1) for
//! browsers, off until `[http] listen` names one or `memd ui` asks for one
//! (then on a free port). Its connections are the HTTP API's with the
//! browser rules of `http::guard` (login codes, browser sessions, the
//! bearer token, Host and Origin checks). The token lives in
//! `<data_dir>/ui.token` (0600), made on first use and rotated by
//! `memd ui --new-token`.
//!
//! Every local user can connect, so the listener holds a bounded share of
//! the daemon's descriptors ([`Admission`]): `[http] max_connections` (and
//! at most a quarter of the open-file limit) and `max_connections_per_peer`;
//! past a bound the oldest connection that never presented a credential is
//! closed to make room, so a flood of idle connections can neither starve
//! the Unix socket nor keep the person's browser out. Each connection has
//! the head timeout (`limits.handshake_timeout_ms`, also the keep-alive
//! idle timeout), the body deadline (`limits.frame_timeout_ms`), and a
//! refusal closes it.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::net::TcpListener;
use tokio::task::{AbortHandle, Id, JoinSet};

use crate::state::Shared;
use crate::state::shutdown::triggered;
use crate::state::web::Bound;

/// Reads the token file, or makes one (or a new one, with `rotate`). A
/// file another user could have written or read — not this user's, open
/// to others, or a symlink — is never used: a new token replaces it.
fn token(path: &Path, rotate: bool) -> std::io::Result<String> {
    if !rotate
        && let Some(text) = own_private_text(path)
        && text.trim().len() >= 32
    {
        return Ok(text.trim().to_string());
    }
    let token: String = [crate::sys::random_bytes()?, crate::sys::random_bytes()?]
        .concat()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let tmp = path.with_extension("token.tmp");
    let _ = std::fs::remove_file(&tmp);
    {
        use std::io::Write;
        let mut f = crate::session::create_private(&tmp)?;
        f.write_all(token.as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    Ok(token)
}

/// The text of `path` when it is a file of this user that no one else may
/// read or write (not followed through a symlink).
fn own_private_text(path: &Path) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() || meta.uid() != crate::sys::euid() || meta.mode() & 0o077 != 0 {
        tracing::warn!(
            path = %path.display(),
            "the viewer's token file is not this user's alone (owner uid {}, mode {:o}); a new \
             token replaces it",
            meta.uid(),
            meta.mode() & 0o7777
        );
        return None;
    }
    let mut text = String::new();
    file.take(4096).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Writes the viewer's token (a new one unless a private one is there)
/// and binds the listener: on `configured`, or a free loopback port.
/// `None` when either failed (said through [`fail`]).
async fn listen(
    shared: &Arc<Shared>,
    path: &Path,
    configured: Option<SocketAddr>,
) -> Option<(TcpListener, SocketAddr)> {
    match token(path, false) {
        Ok(t) => shared.web.set_token(&t),
        Err(e) => {
            fail(
                shared,
                format!("cannot write the viewer's token {}: {e}", path.display()),
            );
            return None;
        }
    }
    let address = configured.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    let listener = match TcpListener::bind(address).await {
        Ok(l) => l,
        Err(e) => {
            fail(shared, format!("cannot listen on {address}: {e}"));
            return None;
        }
    };
    let Ok(local) = listener.local_addr() else {
        fail(shared, "the listener has no address".into());
        return None;
    };
    Some((listener, local))
}

/// A new token for the viewer: old links and cookies no longer open it.
fn rotate(web: &crate::state::web::Web, path: &Path) {
    match token(path, true) {
        Ok(t) => {
            web.set_token(&t);
            tracing::info!(
                "the viewer's token was rotated: old links and cookies no longer open it"
            );
        }
        Err(e) => tracing::error!(error = %e, "cannot rotate the viewer's token"),
    }
}

/// Runs the listener's life: waits until it is asked for, binds, serves,
/// rotates the token when asked, until the daemon stops.
pub async fn run(shared: Arc<Shared>) {
    let web = &shared.web;
    let mut ask = web.ask.subscribe();
    let mut stop = shared.shutdown.subscribe();
    let configured = shared.config().http.address().ok().flatten();
    if configured.is_some() {
        web.ask.send_modify(|a| a.open = true);
    }
    // Wait until a listener is wanted.
    tokio::select! {
        r = ask.wait_for(|a| a.open) => if r.is_err() { return },
        () = triggered(&mut stop) => return,
    }
    let path = shared.paths.ui_token();
    let mut rotations = 0;
    let Some((listener, local)) = listen(&shared, &path, configured).await else {
        return;
    };
    tracing::info!(address = %local, "the viewer listens (loopback only; a token opens it)");
    web.bound.send_replace(Bound {
        address: Some(local),
        rotations,
        error: None,
    });
    let mut admission = Admission::new(&shared);
    tracing::info!(
        max_connections = admission.max_total,
        max_connections_per_peer = admission.max_per_peer,
        "the viewer's connection limits"
    );
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = triggered(&mut stop) => break,
            Some(done) = connections.join_next_with_id(), if !connections.is_empty() => {
                match done {
                    Ok((id, ())) => admission.left(id),
                    Err(e) => admission.left(e.id()),
                }
            }
            r = ask.changed() => {
                if r.is_err() {
                    break;
                }
                let wanted = ask.borrow_and_update().rotations;
                if wanted != rotations {
                    rotate(web, &path);
                    rotations = wanted;
                    web.bound.send_modify(|b| b.rotations = rotations);
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) if peer.ip().is_loopback() => {
                    let Some(evict) = admission.make_room(peer.ip()) else {
                        // Every connection here presented a credential: the
                        // new one waits for none of them to close.
                        tracing::debug!(%peer, "the viewer is at its connection limit; closed a new connection");
                        drop(stream);
                        continue;
                    };
                    for id in evict {
                        admission.close(id);
                    }
                    let shared = shared.clone();
                    let authenticated = Arc::new(AtomicBool::new(false));
                    let mark = authenticated.clone();
                    let handle = connections.spawn(async move {
                        crate::http::serve(
                            stream,
                            Vec::new(),
                            shared,
                            crate::http::Door::Loopback { port: local.port() },
                            mark,
                        )
                        .await;
                    });
                    admission.opened(handle, peer.ip(), authenticated);
                }
                Ok((_, peer)) => tracing::warn!(%peer, "refused a viewer connection that is not from this machine"),
                Err(e) => {
                    tracing::warn!(error = %e, "viewer accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            },
        }
    }
    drop(listener);
    // In-flight requests finish; event streams end at the shutdown signal.
    let _ = tokio::time::timeout(super::DRAIN_DEADLINE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    connections.shutdown().await;
}

/// One open connection of the listener.
struct Open<K> {
    id: K,
    peer: IpAddr,
    /// It carried a credential (never closed to make room).
    authenticated: bool,
    /// Accepted before every connection of a higher number.
    seq: u64,
}

/// Which open connections to close so that one more from `peer` fits
/// within `max_total` and `max_per_peer`: the oldest that never presented
/// a credential, of that peer first. `None` when not enough of them exist
/// (the new connection is closed instead).
fn make_room<K: Copy + PartialEq>(
    open: &[Open<K>],
    peer: IpAddr,
    max_total: usize,
    max_per_peer: usize,
) -> Option<Vec<K>> {
    let mut candidates: Vec<&Open<K>> = open.iter().filter(|o| !o.authenticated).collect();
    candidates.sort_by_key(|o| o.seq);
    let mut evict: Vec<K> = Vec::new();
    let of_peer = open.iter().filter(|o| o.peer == peer).count();
    if of_peer >= max_per_peer {
        let need = of_peer + 1 - max_per_peer;
        let theirs: Vec<K> = candidates
            .iter()
            .filter(|o| o.peer == peer)
            .take(need)
            .map(|o| o.id)
            .collect();
        if theirs.len() < need {
            return None;
        }
        evict.extend(theirs);
    }
    let left = open.len() - evict.len();
    if left >= max_total {
        let need = left + 1 - max_total;
        let more: Vec<K> = candidates
            .iter()
            .filter(|o| !evict.contains(&o.id))
            .take(need)
            .map(|o| o.id)
            .collect();
        if more.len() < need {
            return None;
        }
        evict.extend(more);
    }
    Some(evict)
}

/// The listener's connections and its bounds.
struct Admission {
    open: HashMap<Id, (IpAddr, Arc<AtomicBool>, u64, AbortHandle)>,
    next: u64,
    max_total: usize,
    max_per_peer: usize,
}

impl Admission {
    /// The bounds of `[http]`, the total at most a quarter of the daemon's
    /// open-file limit (the socket keeps the rest).
    fn new(shared: &Shared) -> Admission {
        let http = &shared.config().http;
        let share = crate::sys::raise_open_file_limit().map_or(usize::MAX, |limit| {
            usize::try_from(limit / 4).unwrap_or(usize::MAX)
        });
        let max_total = http.max_connections.min(share).max(1);
        Admission {
            open: HashMap::new(),
            next: 0,
            max_total,
            max_per_peer: http.max_connections_per_peer.min(max_total).max(1),
        }
    }

    /// The connections to close so one more from `peer` fits, or `None`.
    fn make_room(&self, peer: IpAddr) -> Option<Vec<Id>> {
        let open: Vec<Open<Id>> = self
            .open
            .iter()
            .map(|(id, (p, auth, seq, _))| Open {
                id: *id,
                peer: *p,
                authenticated: auth.load(Ordering::Relaxed),
                seq: *seq,
            })
            .collect();
        make_room(&open, peer, self.max_total, self.max_per_peer)
    }

    fn opened(&mut self, handle: AbortHandle, peer: IpAddr, authenticated: Arc<AtomicBool>) {
        self.next += 1;
        self.open
            .insert(handle.id(), (peer, authenticated, self.next, handle));
    }

    /// Closes a connection to make room (its task ends; the stream drops).
    fn close(&mut self, id: Id) {
        if let Some((peer, _, _, handle)) = self.open.remove(&id) {
            tracing::debug!(%peer, "closed an idle viewer connection without a credential to make room");
            handle.abort();
        }
    }

    fn left(&mut self, id: Id) {
        self.open.remove(&id);
    }
}

fn fail(shared: &Shared, message: String) {
    tracing::error!("{message}");
    shared.web.bound.send_modify(|b| b.error = Some(message));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conn(id: u32, peer: &str, authenticated: bool) -> Open<u32> {
        Open {
            id,
            peer: peer.parse().unwrap(),
            authenticated,
            seq: u64::from(id),
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn room_is_made_by_closing_the_oldest_without_a_credential() {
        let open = [
            conn(1, "127.0.0.1", true),
            conn(2, "127.0.0.1", false),
            conn(3, "127.0.0.2", false),
            conn(4, "127.0.0.1", false),
        ];
        // Room left: nothing to close.
        assert_eq!(make_room(&open, ip("127.0.0.1"), 5, 4), Some(vec![]));
        // The listener is full: the oldest one without a credential goes.
        assert_eq!(make_room(&open, ip("127.0.0.3"), 4, 4), Some(vec![2]));
        // The peer is full: its own oldest goes, not another peer's.
        assert_eq!(make_room(&open, ip("127.0.0.1"), 10, 3), Some(vec![2]));
        assert_eq!(make_room(&open, ip("127.0.0.2"), 10, 1), Some(vec![3]));
        // Both: the peer's, then the oldest of the rest.
        assert_eq!(make_room(&open, ip("127.0.0.1"), 3, 2), Some(vec![2, 4]));
        // A credential keeps a connection: when only those are left, the
        // new one is refused.
        let all = [conn(1, "127.0.0.1", true), conn(2, "127.0.0.1", true)];
        assert_eq!(make_room(&all, ip("127.0.0.1"), 2, 8), None);
        assert_eq!(make_room(&all, ip("127.0.0.1"), 8, 2), None);
        assert_eq!(make_room(&all, ip("127.0.0.2"), 8, 2), Some(vec![]));
    }
}
