//! The accept loop: each accepted client is checked (its uid, its groups)
//! and, within the connection limit, served by its own task
//! ([`connection::serve`]); the loop ends when the daemon is told to stop,
//! and [`Listener::drain`] lets the connections finish.

use std::sync::Arc;
use std::time::Duration;

use memd_proto::ErrorCode;
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;
use tokio::task::JoinSet;

use super::{connection, peer};
use crate::state::Shared;
use crate::state::shutdown::triggered;

/// The listening socket and the connections it accepted.
pub struct Listener {
    listener: UnixListener,
    shared: Arc<Shared>,
    /// One permit per connection: `limits.max_connections`.
    permits: Arc<Semaphore>,
    max_connections: usize,
    connections: JoinSet<()>,
    own_uid: u32,
}

impl Listener {
    /// Serves `listener` for `shared`, with at most `max_connections` at
    /// once.
    pub fn new(listener: UnixListener, shared: Arc<Shared>, max_connections: usize) -> Listener {
        Listener {
            listener,
            shared,
            permits: Arc::new(Semaphore::new(max_connections)),
            max_connections,
            connections: JoinSet::new(),
            own_uid: crate::sys::euid(),
        }
    }

    /// Accepts clients until the daemon is told to stop.
    pub async fn run(&mut self) {
        let mut stop = self.shared.shutdown.subscribe();
        loop {
            tokio::select! {
                () = triggered(&mut stop) => break,
                Some(_) = self.connections.join_next(), if !self.connections.is_empty() => {}
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => self.admit(stream),
                    Err(e) => {
                        // EMFILE and friends: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
            }
        }
    }

    /// Serves a client whose user may talk to the daemon, within the
    /// connection limit; refuses the others with a reason.
    fn admit(&mut self, stream: UnixStream) {
        let cred = match stream.peer_cred() {
            Ok(cred) => cred,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read peer credentials; refusing");
                return;
            }
        };
        let groups = {
            use std::os::fd::AsRawFd;
            crate::sys::peer_groups(stream.as_raw_fd())
        };
        let admitted = peer::admit(
            self.own_uid,
            cred.uid(),
            cred.gid(),
            &groups,
            &self.shared.config().socket,
        );
        if let Err(message) = admitted {
            tracing::warn!(uid = cred.uid(), gid = cred.gid(), pid = ?cred.pid(), "refused a client: its user is not the daemon's and not in [socket] allow_uids / allow_gids");
            self.connections.spawn(connection::refuse(
                stream,
                ErrorCode::PermissionDenied,
                message,
            ));
            return;
        }
        match self.permits.clone().try_acquire_owned() {
            Ok(permit) => {
                let shared = self.shared.clone();
                self.connections.spawn(async move {
                    connection::serve(stream, shared).await;
                    drop(permit);
                });
            }
            Err(_) => {
                let max = self.max_connections;
                tracing::warn!(
                    max_connections = max,
                    "connection limit reached; refusing a client"
                );
                self.connections.spawn(connection::refuse(
                    stream,
                    ErrorCode::Busy,
                    format!(
                        "memd is at its limit of {max} connections (limits.max_connections); retry later"
                    ),
                ));
            }
        }
    }

    /// Stops accepting and lets every connection finish the request it is
    /// running, for at most `deadline`; the ones still open then are
    /// closed.
    pub async fn drain(self, deadline: Duration) {
        let Listener {
            listener,
            mut connections,
            ..
        } = self;
        drop(listener);
        tracing::info!(
            connections = connections.len(),
            "shutting down: finishing in-flight requests"
        );
        let drained = tokio::time::timeout(deadline, async {
            while connections.join_next().await.is_some() {}
        })
        .await;
        if drained.is_err() {
            tracing::warn!(
                left = connections.len(),
                "connections did not finish in time; closing them"
            );
            connections.shutdown().await;
        }
    }
}
