//! `status`: the daemon's state as JSON (its keys are part of the CLI
//! contract: ARCHITECTURE.md "CLI contract").

use std::sync::atomic::Ordering;

use memd_proto::{PROTOCOL_VERSION, Response, StatusReply, StatusRequest};
use serde_json::json;

use super::{Ctx, HandlerError};
use crate::session::Session;
use crate::sync;

pub(super) async fn handle(
    _req: StatusRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let embed = cx.embed();
    // Counting vectors reads every row: only when there is an embedder to
    // report on.
    let embedder = !matches!(embed.state(), crate::embed::service::State::Off);
    let store = cx.store();
    let facts = store.status_facts(embedder).await?;
    let backups_kept = {
        let backups = cx.backups();
        tokio::task::block_in_place(|| backups.count())
    };
    let total: i64 = facts.by_status.iter().map(|(_, n)| n).sum();
    let by_status: serde_json::Map<String, serde_json::Value> = facts
        .by_status
        .into_iter()
        .map(|(s, n)| (s, json!(n)))
        .collect();
    let (embedded, pending) = facts.vectors;
    let g = &store.generations;
    let external_epoch = g.external_epoch.load(Ordering::Acquire);
    let last_drift_at = sync::lock(&g.last_drift_at).clone();
    let stats = &store.stats;
    let daemon = cx.daemon();
    let paths = daemon.paths;
    let status = json!({
        "version": env!("CARGO_PKG_VERSION"),
        "build": crate::version::reported(),
        "protocol": PROTOCOL_VERSION,
        "pid": std::process::id(),
        "uptime_secs": daemon.uptime.as_secs(),
        "socket_inherited": daemon.socket_inherited,
        "paths": {
            "data_dir": paths.data_dir,
            "db": paths.db(),
            "socket": paths.socket,
            "config": paths.config,
        },
        "db_uuid": facts.db_uuid,
        "generation": facts.generation,
        "own_generation": g.own_commit.load(Ordering::Acquire),
        "drift": {
            "policy": cx.config().drift.policy.as_str(),
            "session_policy": session.policy.as_str(),
            "external_epoch": (external_epoch > 0).then_some(external_epoch),
            "last_drift_at": last_drift_at,
            "backups_kept": backups_kept,
            "backups": crate::drift::backup::list(&paths.data_dir)
                .iter()
                .rev()
                .map(|b| json!({
                    "file": b.path.file_name().map(|n| n.to_string_lossy().into_owned()),
                    "path": b.path,
                    "at": crate::clock::format_unix(b.stamp),
                    "bytes": b.size,
                }))
                .collect::<Vec<_>>(),
            "recent": crate::sync::lock(&g.recent)
                .iter()
                .rev()
                .map(|e| json!({
                    "generation": e.generation,
                    "external_epoch": e.external_epoch,
                    "at": e.at,
                    "reason": e.reason,
                }))
                .collect::<Vec<_>>(),
        },
        "sessions": daemon.sessions,
        "counts": {
            "memories": total,
            "by_status": by_status,
            "by_namespace": facts
                .by_namespace
                .iter()
                .map(|(ns, n)| json!({"namespace": ns, "memories": n}))
                .collect::<Vec<_>>(),
        },
        "embedder": embed.status(embedded, pending),
        "stats": {
            "snapshot_builds": stats.snapshot_builds.load(Ordering::Relaxed),
            "snapshot_hits": stats.snapshot_hits.load(Ordering::Relaxed),
            "db_reads": stats.db_reads.load(Ordering::Relaxed),
            "commits": stats.commits.load(Ordering::Relaxed),
            "writes": stats.writes.load(Ordering::Relaxed),
            "writer_work_us": stats.writer_work_us.load(Ordering::Relaxed),
            "writer_commit_us": stats.writer_commit_us.load(Ordering::Relaxed),
            "vocab_generation": store.vocab.current().map(|t| t.generation),
        },
        "sweeps": facts.sweeps,
        "capture": facts.capture,
        "team": store.wing().status(),
    });
    Ok(Response::Status(StatusReply {
        json: status.to_string(),
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{Request, Response, StatusRequest};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reports_the_contract_keys() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        kit.add(&mut s, "the build uses make").await;
        let Response::Status(r) = kit.ok(&mut s, Request::Status(StatusRequest {})).await else {
            panic!()
        };
        let v: serde_json::Value = serde_json::from_str(&r.json).unwrap();
        for key in [
            "version",
            "protocol",
            "paths",
            "generation",
            "own_generation",
            "drift",
            "sessions",
            "counts",
            "embedder",
            "stats",
            "sweeps",
        ] {
            assert!(v.get(key).is_some(), "no `{key}` in {v}");
        }
        assert_eq!(v["counts"]["memories"], 1);
        assert_eq!(v["counts"]["by_status"]["promoted"], 1);
        assert_eq!(v["drift"]["policy"], "standard");
        assert!(v["embedder"].is_null(), "no embedder configured");
        assert!(v["team"].is_null(), "no team memory");
        // The add went through the writer: its time there is counted.
        assert!(v["stats"]["writes"].as_u64() >= Some(1), "{v}");
        assert!(v["stats"]["writer_work_us"].as_u64() > Some(0), "{v}");
        assert!(v["stats"]["writer_commit_us"].is_u64(), "{v}");
        assert_eq!(
            v["generation"].as_u64(),
            Some(kit.shared.store.generations.current())
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shows_a_team_that_cannot_be_reached() {
        use crate::store::team::engine::write::Refusal;
        use crate::store::team::wing::{Failing, Wing};
        let team = Failing::behind("team", || Refusal::Invalid("unused".into()));
        let kit = Kit::with_wing(Wing::Failing(team));
        let mut s = kit.session("a");
        let Response::Status(r) = kit.ok(&mut s, Request::Status(StatusRequest {})).await else {
            panic!()
        };
        let v: serde_json::Value = serde_json::from_str(&r.json).unwrap();
        assert_eq!(v["team"]["connected"], false, "{v}");
        assert_eq!(v["team"]["synced"], false, "{v}");
        assert_eq!(v["team"]["last_error"], "the test's team is down", "{v}");
    }
}
