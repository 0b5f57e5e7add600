//! `status`: the daemon's state as JSON (its keys are part of the CLI
//! contract: ARCHITECTURE.md "CLI contract").

use std::sync::atomic::Ordering;

use memd_proto::{PROTOCOL_VERSION, Response, StatusReply, StatusRequest};
use serde_json::json;

use crate::session::Session;
use crate::state::Shared;
use crate::store::readers::ReadKind;
use crate::store::{StoreError, read_generation};

pub(super) async fn handle(
    _req: StatusRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let embedder = !matches!(shared.embed.state(), crate::embed::service::State::Off);
    let read = shared
        .store
        .readers
        .read(ReadKind::Internal, move |conn| {
            let by_status = crate::store::memories::count_by_status(conn)?;
            let db_uuid = crate::store::health::db_uuid(conn)?;
            let sweeps = crate::store::lifecycle::recent(conn, 5)?;
            // Counting vectors reads every row: only when there is an
            // embedder to report on.
            let vectors = if embedder {
                crate::store::vectors::counts(conn)?
            } else {
                (0, 0)
            };
            Ok((by_status, read_generation(conn)?, db_uuid, sweeps, vectors))
        })
        .await?;
    let (by_status, generation, db_uuid, sweeps, (embedded, pending)) = read.value;
    let backups_kept = {
        let backups = &shared.backups;
        tokio::task::block_in_place(|| backups.count())
    };
    let total: i64 = by_status.iter().map(|(_, n)| n).sum();
    let by_status: serde_json::Map<String, serde_json::Value> =
        by_status.into_iter().map(|(s, n)| (s, json!(n))).collect();
    let g = &shared.store.generations;
    let external_epoch = g.external_epoch.load(Ordering::Acquire);
    let last_drift_at = g
        .last_drift_at
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let stats = &shared.store.stats;
    let paths = &shared.paths;
    let status = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "protocol": PROTOCOL_VERSION,
        "pid": std::process::id(),
        "uptime_secs": shared.started.elapsed().as_secs(),
        "socket_inherited": shared.socket_inherited,
        "paths": {
            "data_dir": paths.data_dir,
            "db": paths.db(),
            "socket": paths.socket,
            "config": paths.config,
        },
        "db_uuid": db_uuid,
        "generation": generation,
        "own_generation": g.own_commit.load(Ordering::Acquire),
        "drift": {
            "policy": shared.config().drift.policy.as_str(),
            "session_policy": session.policy.as_str(),
            "external_epoch": (external_epoch > 0).then_some(external_epoch),
            "last_drift_at": last_drift_at,
            "backups_kept": backups_kept,
        },
        "sessions": shared.sessions.load(Ordering::Relaxed),
        "counts": { "memories": total, "by_status": by_status },
        "embedder": shared.embed.status(embedded, pending),
        "stats": {
            "snapshot_builds": stats.snapshot_builds.load(Ordering::Relaxed),
            "snapshot_hits": stats.snapshot_hits.load(Ordering::Relaxed),
            "db_reads": stats.db_reads.load(Ordering::Relaxed),
            "commits": stats.commits.load(Ordering::Relaxed),
            "writes": stats.writes.load(Ordering::Relaxed),
            "vocab_generation": shared.store.vocab.current().map(|t| t.generation),
        },
        "sweeps": sweeps,
    });
    Ok(Response::Status(StatusReply {
        json: status.to_string(),
    }))
}
