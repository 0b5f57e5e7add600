//! `capture status`: where the capture of each host's session stands — the
//! offset the next capture starts at, turns, bytes, redactions, the last
//! capture and the last error.

use memd_proto::{CaptureStates, CaptureStatusRequest, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;

pub(super) async fn handle(
    req: CaptureStatusRequest,
    _session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let sessions = cx.store().capture_states(req.host, req.session).await?;
    Ok(Response::CaptureStates(CaptureStates { sessions }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{CaptureStatusRequest, Request, Response};

    use crate::handler::support::testkit::{Kit, stretch, turn};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tells_where_each_sessions_capture_stands() {
        let kit = Kit::new();
        let mut s = kit.session_in("hook", "github.com/acme/api");
        let turns = vec![
            turn("u1", "User", "the key is AKIAQXRUSTCAPTURE123"),
            turn("a1", "Assistant", "noted"),
        ];
        kit.ok(&mut s, stretch("s1", 0, 90, turns)).await;
        kit.ok(&mut s, stretch("s2", 0, 40, vec![turn("u9", "User", "hi")]))
            .await;
        let status = |host: Option<&str>, session: Option<&str>| {
            Request::CaptureStatus(CaptureStatusRequest {
                host: host.map(str::to_string),
                session: session.map(str::to_string),
            })
        };
        let Response::CaptureStates(all) = kit.ok(&mut s, status(None, None)).await else {
            panic!()
        };
        assert_eq!(all.sessions.len(), 2);
        let Response::CaptureStates(one) = kit.ok(&mut s, status(None, Some("s1"))).await else {
            panic!()
        };
        let [st] = one.sessions.as_slice() else {
            panic!("{one:?}")
        };
        assert_eq!(
            (st.host.as_str(), st.namespace.as_str(), st.offset),
            ("claude-code", "github.com/acme/api", 90)
        );
        assert_eq!((st.turns, st.redactions), (2, 1));
        assert!(st.last_at.is_some() && st.last_error.is_none(), "{st:?}");
        let Response::CaptureStates(none) = kit.ok(&mut s, status(Some("codex"), None)).await
        else {
            panic!()
        };
        assert!(none.sessions.is_empty());
    }
}
