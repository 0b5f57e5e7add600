//! `verdicts`: a client that checked citations in its checkout reports
//! what it found; the daemon keeps the last verdict on each citation of a
//! memory the session may see (the block marks by it, the viewer shows it
//! with when). Not an edit: no generation, no revision, no drift guard.

use memd_proto::cite::{MAX_REPORT, VerdictReport, VerdictsRecorded};
use memd_proto::{Filter, Response};
use time::OffsetDateTime;

use super::{Ctx, HandlerError};
use crate::gate;
use crate::session::Session;
use crate::session::ident::Author;

pub(super) async fn handle(
    req: VerdictReport,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    if req.checked.len() > MAX_REPORT {
        return Err(HandlerError::InvalidInput(format!(
            "a report carries at most {MAX_REPORT} verdicts"
        )));
    }
    for c in &req.checked {
        c.cite.check().map_err(HandlerError::InvalidInput)?;
        if let Some(now) = &c.now {
            now.check().map_err(HandlerError::InvalidInput)?;
        }
    }
    // Only on memories the session sees: what another namespace cites is
    // not this client's to judge.
    let view = gate::view(
        &Filter {
            namespaces: vec![
                session.namespace().to_string(),
                memd_proto::PERSONAL_NAMESPACE.to_string(),
            ],
            ..Filter::default()
        },
        &session.who,
        OffsetDateTime::now_utc(),
    )?;
    let visible: std::collections::HashSet<i64> = cx
        .store()
        .cited(view, None)
        .await?
        .value
        .into_iter()
        .map(|m| m.id)
        .collect();
    let checked = req
        .checked
        .into_iter()
        .filter(|c| visible.contains(&c.id))
        .collect();
    let recorded = cx
        .store()
        .record_verdicts(Author::Session(session.who.clone()), checked)
        .await?;
    Ok(Response::VerdictsRecorded(VerdictsRecorded { recorded }))
}

#[cfg(test)]
mod tests {
    use memd_proto::cite::{Checked, Cite, Verdict, VerdictReport};
    use memd_proto::{ErrorCode, InjectRequest, Request, Response};

    use crate::handler::support::testkit::{Kit, cited};

    fn report(id: i64, cite: &str, verdict: Verdict, now: Option<&str>) -> Request {
        Request::Verdicts(VerdictReport {
            checked: vec![Checked {
                id,
                cite: Cite::parse(cite).unwrap(),
                verdict,
                now: now.map(|n| Cite::parse(n).unwrap()),
                reason: None,
            }],
        })
    }

    async fn recorded(kit: &Kit, s: &mut crate::session::Session, req: Request) -> u32 {
        match kit.ok(s, req).await {
            Response::VerdictsRecorded(r) => r.recorded,
            other => panic!("{other:?}"),
        }
    }

    async fn block(kit: &Kit, s: &mut crate::session::Session) -> String {
        match kit.ok(s, Request::Inject(InjectRequest {})).await {
            Response::Injected(i) => i.block,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_last_verdict_marks_the_next_block_and_not_a_frozen_one() {
        let kit = Kit::new();
        let mut s = kit.session_in("a", "github.com/acme/api");
        let id = match kit
            .ok(
                &mut s,
                Request::Add(cited(
                    "retries are set in the webhook",
                    &["src/hook.rs:40-44"],
                )),
            )
            .await
        {
            Response::Added(r) => r.id.unwrap(),
            other => panic!("{other:?}"),
        };
        // Never checked on this machine: the block says so.
        let first = block(&kit, &mut s).await;
        assert!(
            first.contains("[cited code not checked: src/hook.rs:40-44]"),
            "{first}"
        );
        assert_eq!(
            recorded(
                &kit,
                &mut s,
                report(
                    id,
                    "src/hook.rs:40-44",
                    Verdict::Moved,
                    Some("src/hook.rs:50-54")
                )
            )
            .await,
            1
        );
        // The frozen block does not change because a verdict came in.
        assert_eq!(block(&kit, &mut s).await, first);
        kit.ok(&mut s, Request::Refresh(memd_proto::RefreshRequest {}))
            .await;
        let moved = block(&kit, &mut s).await;
        assert!(
            moved.contains("[cited code moved: src/hook.rs:40-44 is now src/hook.rs:50-54]"),
            "{moved}"
        );
        recorded(
            &kit,
            &mut s,
            report(id, "src/hook.rs:40-44", Verdict::Fresh, None),
        )
        .await;
        kit.ok(&mut s, Request::Refresh(memd_proto::RefreshRequest {}))
            .await;
        let fresh = block(&kit, &mut s).await;
        assert!(
            fresh.contains("retries are set in the webhook\n"),
            "{fresh}"
        );
        // A citation the memory does not hold, a memory of another
        // namespace, or an unknown id: nothing recorded.
        assert_eq!(
            recorded(
                &kit,
                &mut s,
                report(id, "src/other.rs:1", Verdict::Gone, None)
            )
            .await,
            0
        );
        let mut elsewhere = kit.session_in("a", "github.com/acme/web");
        assert_eq!(
            recorded(
                &kit,
                &mut elsewhere,
                report(id, "src/hook.rs:40-44", Verdict::Gone, None)
            )
            .await,
            0
        );
        assert_eq!(
            recorded(
                &kit,
                &mut s,
                report(999_999, "src/hook.rs:40-44", Verdict::Gone, None)
            )
            .await,
            0
        );
        // A path that leaves the repository is refused.
        let mut bad = report(id, "src/hook.rs:40-44", Verdict::Gone, None);
        if let Request::Verdicts(r) = &mut bad {
            r.checked[0].cite.path = "../etc/passwd".into();
        }
        kit.err(&mut s, bad, ErrorCode::InvalidInput).await;
    }
}
