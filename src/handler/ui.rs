//! `ui`: opens the viewer's loopback listener when it is not open (and
//! rotates its token when asked), and answers its address and token. The
//! daemon binds and serves it (`daemon::web`); this only asks and waits.

use std::time::Duration;

use memd_proto::{Response, UiReport, UiRequest};

use super::Ctx;
use super::HandlerError;
use crate::session::Session;

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
    let (Some(address), Some(token)) = (state.address, web.token()) else {
        return Err(HandlerError::InvalidInput(
            "the viewer's listener has no address".into(),
        ));
    };
    Ok(Response::UiOpened(UiReport {
        address: address.to_string(),
        token: token.to_string(),
    }))
}
