//! `ui`: opens the viewer's loopback listener when it is not open (and
//! rotates its token when asked), and answers its address and a one-time
//! login code — never the token, which would then travel on a command line
//! and stay in a browser's history. The daemon binds and serves it
//! (`daemon::web`); this only asks, waits and issues the code.

use std::time::Duration;

use memd_proto::{Response, UiReport, UiRequest};

use super::Ctx;
use super::HandlerError;
use crate::session::Session;
use crate::state::web::CODE_TTL;

/// How long the listener may take to come up.
const WAIT: Duration = Duration::from_secs(5);

pub(super) async fn handle(
    req: UiRequest,
    _session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let web = cx.web();
    let mut wanted = 0;
    web.ask.send_modify(|a| {
        a.open = true;
        if req.new_token {
            a.rotations += 1;
        }
        wanted = a.rotations;
    });
    let mut bound = web.bound.subscribe();
    let ready = tokio::time::timeout(
        WAIT,
        bound.wait_for(|b| b.error.is_some() || (b.address.is_some() && b.rotations == wanted)),
    )
    .await;
    let state = match ready {
        Ok(Ok(b)) => b.clone(),
        _ => {
            return Err(HandlerError::InvalidInput(
                "the viewer's listener did not start in time".into(),
            ));
        }
    };
    if let Some(e) = state.error {
        return Err(HandlerError::InvalidInput(e));
    }
    let (Some(address), Some(_)) = (state.address, web.token()) else {
        return Err(HandlerError::InvalidInput(
            "the viewer's listener has no address".into(),
        ));
    };
    Ok(Response::UiOpened(UiReport {
        address: address.to_string(),
        code: web
            .issue_code()
            .map_err(|e| HandlerError::InvalidInput(e.to_string()))?,
        expires_secs: CODE_TTL.as_secs(),
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, Request};

    use crate::handler::support::testkit::Kit;
    use crate::state::web::Bound;

    use super::*;

    /// Stands in for `daemon::web`: listens (on paper) and rotates.
    fn listener(kit: &Kit) {
        let web = &kit.shared.web;
        web.set_token("t0");
        web.bound.send_replace(Bound {
            address: Some("127.0.0.1:7420".parse().unwrap()),
            rotations: 0,
            error: None,
        });
    }

    #[tokio::test]
    async fn answers_a_one_time_code_never_the_token() {
        let kit = Kit::new();
        listener(&kit);
        let mut s = kit.session("a");
        let Response::UiOpened(r) = kit
            .ok(&mut s, Request::Ui(UiRequest { new_token: false }))
            .await
        else {
            panic!()
        };
        assert_eq!(r.address, "127.0.0.1:7420");
        assert_eq!(r.expires_secs, 120);
        assert_ne!(r.code, "t0");
        assert!(
            kit.shared.web.ask.borrow().open,
            "the listener was asked for"
        );
        let web = &kit.shared.web;
        let opened = web.redeem(&r.code).expect("the code opens a session");
        assert!(web.check(&opened.key, &[&opened.secret]));
        assert!(web.redeem(&r.code).is_none(), "once");
    }

    #[tokio::test]
    async fn a_new_token_ends_every_session_before_the_new_code() {
        let kit = Kit::new();
        listener(&kit);
        let web = &kit.shared.web;
        let old = web.redeem(&web.issue_code().unwrap()).unwrap();
        let pending = web.issue_code().unwrap();
        let shared = &kit.shared;
        let rotate = async {
            let mut ask = shared.web.ask.subscribe();
            ask.wait_for(|a| a.rotations == 1).await.unwrap();
            shared.web.set_token("t1");
            shared.web.bound.send_modify(|b| b.rotations = 1);
        };
        let mut s = kit.session("a");
        let (resp, ()) = tokio::join!(
            kit.ok(&mut s, Request::Ui(UiRequest { new_token: true })),
            rotate
        );
        let Response::UiOpened(r) = resp else {
            panic!()
        };
        assert!(
            !web.check(&old.key, &[&old.secret]),
            "the old session ended"
        );
        assert!(web.redeem(&pending).is_none(), "the old code ended");
        assert!(web.redeem(&r.code).is_some(), "the new code works");
    }

    #[tokio::test]
    async fn a_listener_that_cannot_start_is_an_error() {
        let kit = Kit::new();
        kit.shared.web.bound.send_replace(Bound {
            address: None,
            rotations: 0,
            error: Some("cannot listen on 127.0.0.1:1: in use".into()),
        });
        let mut s = kit.session("a");
        let e = kit
            .err(
                &mut s,
                Request::Ui(UiRequest { new_token: false }),
                ErrorCode::InvalidInput,
            )
            .await;
        assert!(e.message.contains("in use"), "{e:?}");
    }
}
