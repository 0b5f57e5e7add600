//! `capture forget`: removes a host session's captured turns and its
//! capture state (memories someone kept from them stay: they are their
//! own rows).

use memd_proto::{CaptureForgetRequest, CaptureForgotten, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;

pub(super) async fn handle(
    req: CaptureForgetRequest,
    _session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    if req.session.is_empty() {
        return Err(HandlerError::InvalidInput(
            "capture forget: name the session".into(),
        ));
    }
    let turns = cx.store().capture_forget(req.host, req.session).await?;
    Ok(Response::CaptureForgotten(CaptureForgotten { turns }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{CaptureForgetRequest, CaptureStatusRequest, ErrorCode, Request, Response};

    use crate::handler::support::testkit::{Kit, stretch, turn};

    fn forget(session: &str) -> Request {
        Request::CaptureForget(CaptureForgetRequest {
            host: "claude-code".into(),
            session: session.into(),
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn removes_one_sessions_turns_and_state_and_keeps_the_rest() {
        let kit = Kit::new();
        let mut s = kit.session("hook");
        let two = vec![turn("u1", "User", "one"), turn("a1", "Assistant", "two")];
        kit.ok(&mut s, stretch("s1", 0, 50, two)).await;
        kit.ok(
            &mut s,
            stretch("s2", 0, 20, vec![turn("u1", "User", "three")]),
        )
        .await;
        let kept = kit.add(&mut s, "deploys go out on tuesdays").await;
        let Response::CaptureForgotten(f) = kit.ok(&mut s, forget("s1")).await else {
            panic!()
        };
        assert_eq!(f.turns, 2);
        assert_eq!(kit.store_count().await, 2, "s2's turn and the note stay");
        assert_eq!(
            kit.get(&mut s, kept).await.content,
            "deploys go out on tuesdays"
        );
        let req = Request::CaptureStatus(CaptureStatusRequest::default());
        let Response::CaptureStates(st) = kit.ok(&mut s, req).await else {
            panic!()
        };
        let left: Vec<_> = st.sessions.iter().map(|x| x.session.as_str()).collect();
        assert_eq!(left, ["s2"]);
        let Response::CaptureForgotten(f) = kit.ok(&mut s, forget("s1")).await else {
            panic!()
        };
        assert_eq!(f.turns, 0, "nothing left to forget");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_forget_naming_no_session_is_refused() {
        let kit = Kit::new();
        let mut s = kit.session("hook");
        let e = kit.err(&mut s, forget(""), ErrorCode::InvalidInput).await;
        assert!(e.message.contains("name the session"), "{e:?}");
    }
}
