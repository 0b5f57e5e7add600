//! `capture`: a stretch of an agent host's transcript (its hooks read it;
//! the daemon never opens the file) stored as captured turns, and the
//! capture offset moved, in one transaction (see `store::capture`). Each
//! turn goes through the gate's capture rules: secrets replaced, what the
//! gate would refuse marked and cut, never refused.

use memd_proto::{CaptureRequest, Response};
use time::OffsetDateTime;

use super::{Ctx, HandlerError};
use crate::gate;
use crate::session::Session;
use crate::session::ident::Author;
use crate::store::capture::Stretch;

/// Longest host or session name.
const MAX_NAME: usize = 256;

pub(super) async fn handle(
    req: CaptureRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    for (what, v) in [("host", &req.host), ("session", &req.session)] {
        if v.trim().is_empty()
            || v.len() > MAX_NAME
            || v.contains(':')
            || v.chars().any(char::is_control)
        {
            return Err(HandlerError::InvalidInput(format!(
                "capture: the {what} `{v}` is empty, too long, or holds `:` or a control character"
            )));
        }
    }
    if req.to < req.from {
        return Err(HandlerError::InvalidInput(format!(
            "capture: the stretch ends ({}) before it starts ({})",
            req.to, req.from
        )));
    }
    let config = cx.config();
    let rules = config.gate_rules();
    let now = OffsetDateTime::now_utc();
    let mut turns = Vec::with_capacity(req.turns.len());
    for turn in &req.turns {
        if let Some((new, c)) =
            gate::check_capture(turn, &req.host, &req.session, &session.who, &rules, now)?
        {
            turns.push((new, c.redactions, c.marked.is_some()));
        }
    }
    let stretch = Stretch {
        host: req.host,
        session: req.session,
        namespace: session.namespace().to_string(),
        file: req.file,
        path: req.path,
        from: req.from,
        to: req.to,
        turns,
        invalid_lines: req.invalid_lines,
        // Redacted before the cut: a cut secret may no longer be found.
        error: req
            .error
            .map(|e| gate::secrets::redacted(&e).chars().take(1_000).collect()),
    };
    let report = cx
        .store()
        .capture(Author::Session(session.who.clone()), stretch)
        .await?;
    Ok(Response::Captured(report))
}
