//! The viewer's loopback listener as the daemon's parts share it: whether
//! it is asked for (`[http] listen`, or `memd ui` through the `ui` request),
//! where it listens once bound, and the token a browser must present. The
//! daemon binds and serves it (`daemon::web`); the `ui` handler only asks
//! and waits.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use crate::sync;

/// What is asked of the listener.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ask {
    /// It should listen.
    pub open: bool,
    /// Token rotations asked for so far (each one makes a new token).
    pub rotations: u64,
}

/// The listener's state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Bound {
    /// Where it listens.
    pub address: Option<SocketAddr>,
    /// Rotations done (equal to the asked ones once the new token is
    /// written).
    pub rotations: u64,
    /// Why it could not listen.
    pub error: Option<String>,
}

/// The viewer listener's shared state.
#[derive(Debug)]
pub struct Web {
    /// What is asked.
    pub ask: watch::Sender<Ask>,
    /// What is.
    pub bound: watch::Sender<Bound>,
    token: Mutex<Option<Arc<str>>>,
}

impl Default for Web {
    fn default() -> Self {
        Web {
            ask: watch::channel(Ask::default()).0,
            bound: watch::channel(Bound::default()).0,
            token: Mutex::new(None),
        }
    }
}

impl Web {
    /// The token browsers must present, once the listener has one.
    pub fn token(&self) -> Option<Arc<str>> {
        sync::lock(&self.token).clone()
    }

    /// Sets the token (the daemon, from the token file).
    pub fn set_token(&self, token: &str) {
        *sync::lock(&self.token) = Some(Arc::from(token));
    }
}
