//! The viewer's loopback listener: a TCP port on 127.0.0.1 (or ::1) for
//! browsers, off until `[http] listen` names one or `memd ui` asks for one
//! (then on a free port). Its connections are the HTTP API's with the
//! browser rules of `http::guard` (the token and its cookie, Host and
//! Origin checks). The token lives in `<data_dir>/ui.token` (0600), made on
//! first use and rotated by `memd ui --new-token`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::task::JoinSet;

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
    match token(&path, false) {
        Ok(t) => web.set_token(&t),
        Err(e) => {
            fail(
                &shared,
                format!("cannot write the viewer's token {}: {e}", path.display()),
            );
            return;
        }
    }
    let address = configured.unwrap_or_else(|| SocketAddr::from(([127, 0, 0, 1], 0)));
    let listener = match TcpListener::bind(address).await {
        Ok(l) => l,
        Err(e) => {
            fail(&shared, format!("cannot listen on {address}: {e}"));
            return;
        }
    };
    let Ok(local) = listener.local_addr() else {
        fail(&shared, "the listener has no address".into());
        return;
    };
    tracing::info!(address = %local, "the viewer listens (loopback only; a token opens it)");
    web.bound.send_replace(Bound {
        address: Some(local),
        rotations,
        error: None,
    });
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = triggered(&mut stop) => break,
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
            r = ask.changed() => {
                if r.is_err() {
                    break;
                }
                let wanted = ask.borrow_and_update().rotations;
                if wanted != rotations {
                    match token(&path, true) {
                        Ok(t) => {
                            web.set_token(&t);
                            tracing::info!("the viewer's token was rotated: old links and cookies no longer open it");
                        }
                        Err(e) => tracing::error!(error = %e, "cannot rotate the viewer's token"),
                    }
                    rotations = wanted;
                    web.bound.send_modify(|b| b.rotations = rotations);
                }
            }
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) if peer.ip().is_loopback() => {
                    let shared = shared.clone();
                    connections.spawn(async move {
                        crate::http::serve(
                            stream,
                            Vec::new(),
                            shared,
                            crate::http::Door::Loopback { port: local.port() },
                        )
                        .await;
                    });
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

fn fail(shared: &Shared, message: String) {
    tracing::error!("{message}");
    shared.web.bound.send_modify(|b| b.error = Some(message));
}
