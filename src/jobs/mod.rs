//! Background work the daemon schedules beside the requests, each a task
//! on [`Shared`] and the store's named operations, never through a request
//! handler (see ARCHITECTURE.md "Layers"):
//! - [`embed`]: the embedding worker;
//! - [`sweep`]: lifecycle sweeps, at start and on a schedule;
//! - [`sessions`]: the end of idle named sessions;
//! - [`access`]: batched access-count writes;
//! - [`vocab`]: the in-memory FTS vocabulary for fuzzy search;
//! - [`sidecar`]: the MEMORY.md files;
//! - [`backfill`]: near-duplicate sketches for rows without one;
//! - [`merge`]: the search index merged after a bulk load;
//! - [`team`]: the team pull (team memory only).
//!
//! [`Jobs`] starts them all and owns them: the daemon stops every one at
//! shutdown, before it closes the store.

pub mod access;
pub mod backfill;
pub mod embed;
pub mod merge;
pub mod namespaces;
pub mod sessions;
pub mod sidecar;
pub mod sweep;
pub mod team;
pub mod vocab;

use std::sync::Arc;

use tokio::task::JoinHandle;

use crate::state::Shared;

/// The running background jobs.
pub struct Jobs {
    tasks: Vec<(&'static str, JoinHandle<()>)>,
}

impl Jobs {
    /// Starts every job. `existing` is the newest memory when the daemon
    /// started serving (see [`embed::run`]).
    pub fn start(shared: &Arc<Shared>, existing: Option<i64>) -> Jobs {
        fn spawn<F>(name: &'static str, task: F) -> (&'static str, JoinHandle<()>)
        where
            F: Future<Output = ()> + Send + 'static,
        {
            (name, tokio::spawn(task))
        }
        Jobs {
            tasks: vec![
                spawn("access", access::run(shared.clone())),
                spawn("sweep", sweep::schedule(shared.clone())),
                spawn("sidecar", sidecar::run(shared.clone())),
                spawn("vocab", vocab::run(shared.clone())),
                spawn("sessions", sessions::run(shared.clone())),
                spawn("embed", embed::run(shared.clone(), existing)),
                spawn("backfill", backfill::run(shared.clone())),
                spawn("merge", merge::run(shared.clone())),
                spawn("team", team::run(shared.clone())),
                spawn("purges", team::purges(shared.clone())),
                spawn("team-cleanup", team::cleanup(shared.clone())),
            ],
        }
    }

    /// Stops every job and waits until each has ended: none touches the
    /// store afterwards.
    pub async fn stop(self) {
        for (_, task) in &self.tasks {
            task.abort();
        }
        for (name, task) in self.tasks {
            match task.await {
                Ok(()) => {}
                Err(e) if e.is_cancelled() => {}
                Err(e) => tracing::warn!(job = name, error = %e, "a background job failed"),
            }
        }
    }
}
