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

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, Response};

    use crate::handler::support::testkit::{Kit, stretch, turn};

    /// The text of the stored rows (every one a captured turn here), as
    /// the `sqlite3` shell reads them; `None` without the shell.
    fn captured(kit: &Kit) -> Option<Vec<String>> {
        crate::store::testing::contents(&kit.shared.paths.db())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stores_turns_once_with_secrets_replaced_and_moves_the_offset() {
        let kit = Kit::new();
        let mut s = kit.session("hook");
        let turns = vec![
            turn("u1", "User", "the staging key is AKIAQXRUSTCAPTURE123"),
            turn(
                "a1",
                "Assistant",
                "I will not repeat it; deploys go out on tuesdays",
            ),
        ];
        let Response::Captured(r) = kit.ok(&mut s, stretch("s1", 0, 120, turns.clone())).await
        else {
            panic!()
        };
        assert_eq!((r.stored, r.existing, r.redactions), (2, 0, 1));
        assert_eq!((r.offset, r.stale), (120, false));
        assert_eq!(kit.store_count().await, 2);
        if let Some(rows) = captured(&kit) {
            assert!(
                !rows.iter().any(|t| t.contains("AKIAQXRUSTCAPTURE123")),
                "{rows:?}"
            );
            assert!(rows.iter().any(|t| t.contains("[redacted:")), "{rows:?}");
        }

        // From an offset that is not the capture's (another hook moved it
        // first): nothing stored, the offset stays.
        let Response::Captured(r) = kit.ok(&mut s, stretch("s1", 60, 180, turns.clone())).await
        else {
            panic!()
        };
        assert!(r.stale && r.stored == 0 && r.offset == 120, "{r:?}");
        // From the start again (a rewritten file): known turns kept once.
        let Response::Captured(r) = kit.ok(&mut s, stretch("s1", 0, 120, turns.clone())).await
        else {
            panic!()
        };
        assert_eq!((r.stored, r.existing, r.stale), (0, 2, false));
        let more = vec![turns[1].clone(), turn("u2", "User", "and on fridays?")];
        let Response::Captured(r) = kit.ok(&mut s, stretch("s1", 120, 200, more)).await else {
            panic!()
        };
        assert_eq!((r.stored, r.existing, r.offset), (1, 1, 200));
        assert_eq!(kit.store_count().await, 3);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_bad_name_or_a_backward_stretch_is_refused_and_stores_nothing() {
        let kit = Kit::new();
        let mut s = kit.session("hook");
        let one = || vec![turn("u1", "User", "hello")];
        for bad in ["", "a:b", "new\nline", &"s".repeat(300)] {
            let e = kit
                .err(&mut s, stretch(bad, 0, 10, one()), ErrorCode::InvalidInput)
                .await;
            assert!(e.message.contains("session"), "{e:?}");
        }
        let e = kit
            .err(
                &mut s,
                stretch("s1", 50, 10, one()),
                ErrorCode::InvalidInput,
            )
            .await;
        assert!(e.message.contains("before it starts"), "{e:?}");
        assert_eq!(kit.store_count().await, 0);
    }
}
