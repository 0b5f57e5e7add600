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
    let team = cx.store().wing();
    if !team.is_on() {
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

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_team_that_cannot_be_reached_says_why() {
        use crate::store::team::engine::write::Refusal;
        use crate::store::team::wing::{Failing, Wing};
        let team = Failing::behind("team", || Refusal::Invalid("unused".into()));
        let kit = Kit::with_wing(Wing::Failing(team));
        let mut s = kit.session("a");
        let Response::TeamSynced(report) =
            kit.ok(&mut s, Request::TeamSync(TeamSyncRequest {})).await
        else {
            panic!("not a sync report");
        };
        assert!(report.configured && !report.synced);
        assert_eq!(
            report.last_error.as_deref(),
            Some("the test's team is down")
        );
    }
}
