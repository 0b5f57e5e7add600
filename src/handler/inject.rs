//! `inject`, `compacted`, `refresh`: the session's frozen memory block.
//!
//! A warm inject answers from the session's snapshot without touching
//! SQLite and moves seen only to `max(seen, built_at_generation)`: the prompt
//! still shows the old block, so a warm inject is not a read of new data.

use std::sync::atomic::Ordering;

use memd_proto::{InjectRequest, InjectStats, Injection, Response};

use crate::session::Session;
use crate::session::snapshot::{self, Builder};
use crate::state::Shared;
use crate::store::readers::ReadKind;
use crate::store::{StoreError, inject};

pub(super) async fn handle(
    _req: InjectRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    if let Some(snap) = session.snapshot() {
        shared
            .store
            .stats
            .snapshot_hits
            .fetch_add(1, Ordering::Relaxed);
        // The prompt still shows the old block: not a read of anything new.
        session.saw(snap.built_at_generation, []);
        let mut hit = snap;
        hit.stats.cached = true;
        return Ok(Response::Injected(hit));
    }
    let budget = session.budget;
    let builder = Builder::new(budget as usize);
    let (namespace, agent, id) = (
        session.namespace().to_string(),
        session.agent().to_string(),
        session.id().to_string(),
    );
    let read = shared
        .store
        .readers
        .read(ReadKind::Client, move |conn| {
            let now = crate::clock::now();
            let who = inject::For {
                namespace: &namespace,
                agent: &agent,
                session: &id,
                now: &now,
            };
            inject::build(conn, &who, builder)
        })
        .await?;
    shared
        .store
        .stats
        .snapshot_builds
        .fetch_add(1, Ordering::Relaxed);
    let (rendered, eligible) = read.value;
    let rendered_rows = rendered.rows.clone();
    let injection = Injection {
        hash: snapshot::hash(&rendered.block),
        block: rendered.block,
        built_at_generation: read.generation,
        stats: InjectStats {
            included: rendered.included,
            eligible,
            chars: rendered.chars,
            budget,
            cached: false,
        },
    };
    session.saw(read.generation, rendered_rows);
    session.set_snapshot(injection.clone());
    Ok(Response::Injected(injection))
}
