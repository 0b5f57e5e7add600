//! `team sync`: wake the team pull at once (`memd team init` asks it of
//! the local daemon) and answer once it reconnected and caught up, or
//! failed to.

use memd_proto::{Response, TeamSyncReport, TeamSyncRequest};

use super::{Ctx, HandlerError};
use crate::session::Session;

pub(super) async fn handle(
    _req: TeamSyncRequest,
    _session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let Some(team) = cx.store().team() else {
        return Ok(Response::TeamSynced(TeamSyncReport {
            configured: false,
            synced: false,
            last_error: None,
        }));
    };
    let synced = team.sync_now().await;
    Ok(Response::TeamSynced(TeamSyncReport {
        configured: true,
        synced,
        last_error: if synced { None } else { team.last_error() },
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{Request, Response, TeamSyncRequest};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn without_team_memory_it_says_so() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let Response::TeamSynced(report) =
            kit.ok(&mut s, Request::TeamSync(TeamSyncRequest {})).await
        else {
            panic!("not a sync report");
        };
        assert!(!report.configured && !report.synced);
    }
}
