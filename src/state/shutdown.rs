//! The shutdown signal shared by the accept loop and every connection.

use tokio::sync::watch;

/// Triggered once; everyone holding a receiver sees it.
#[derive(Debug)]
pub struct Shutdown {
    tx: watch::Sender<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Self::new()
    }
}

impl Shutdown {
    /// Not yet triggered.
    pub fn new() -> Shutdown {
        Shutdown {
            tx: watch::channel(false).0,
        }
    }

    /// Starts the shutdown (idempotent).
    pub fn trigger(&self) {
        self.tx.send_replace(true);
    }

    #[cfg(test)]
    /// Whether shutdown has started.
    pub fn is_triggered(&self) -> bool {
        *self.tx.borrow()
    }

    /// A receiver to wait on.
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.tx.subscribe()
    }
}

/// Waits until the shutdown is triggered.
pub async fn triggered(rx: &mut watch::Receiver<bool>) {
    // An error means the sender is gone, which only happens at teardown.
    let _ = rx.wait_for(|v| *v).await;
}
