//! `update`: change fields of a memory, optionally only at an expected rev.

use memd_proto::{Filter, Response, UpdateRequest};
use time::OffsetDateTime;

use super::{Ctx, HandlerError};
use crate::drift::policy::WriteKind;
use crate::gate;
use crate::session::Session;

pub(super) async fn handle(
    req: UpdateRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let now = OffsetDateTime::now_utc();
    let changes = gate::check_update(&req, &session.who, &cx.config().gate_rules(), now)?;
    session.owns_session_rows |=
        req.scope.as_deref().and_then(gate::normalize_scope) == Some("session");
    // An update may reach superseded and archived rows (to restore them).
    let filter = Filter {
        include_superseded: true,
        include_archived: true,
        ..Filter::default()
    };
    let view = gate::view(&filter, &session.who, now)?;
    let written = super::support::write(cx, session, WriteKind::Destructive, |guard| {
        cx.store()
            .update(guard, req.id, req.expect_rev, changes, view)
    })
    .await?;
    Ok(super::support::memory_reply(written))
}

#[cfg(test)]
mod tests {
    use memd_proto::{DriftRule, ErrorCode, Request, Response, UpdateRequest};

    use crate::handler::support::testkit::{Kit, drift_rule};

    fn update(id: i64, content: &str) -> UpdateRequest {
        UpdateRequest {
            id,
            content: Some(content.into()),
            ..UpdateRequest::default()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn changes_the_row_and_moves_its_rev_but_not_seen() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let id = kit.add(&mut s, "the build uses make").await;
        let seen = s.seen();
        let Response::Memory(m) = kit
            .ok(&mut s, Request::Update(update(id, "the build uses just")))
            .await
        else {
            panic!()
        };
        assert_eq!(m.memory.content, "the build uses just");
        assert_eq!(m.memory.rev, 2);
        assert_eq!(s.seen(), seen, "an own write is not a read");
        // The session knows what it wrote: a second update passes.
        kit.ok(&mut s, Request::Update(update(id, "the build uses cargo")))
            .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn expect_rev_and_unknown_ids() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let id = kit.add(&mut s, "the build uses make").await;
        let stale = UpdateRequest {
            expect_rev: Some(7),
            ..update(id, "x")
        };
        let e = kit
            .err(&mut s, Request::Update(stale), ErrorCode::Conflict)
            .await;
        assert_eq!(e.current_rev, Some(1));
        kit.err(
            &mut s,
            Request::Update(update(9_999, "x")),
            ErrorCode::NotFound,
        )
        .await;
        let bad = UpdateRequest {
            category: Some("nonsense".into()),
            ..update(id, "x")
        };
        kit.err(&mut s, Request::Update(bad), ErrorCode::Rejected)
            .await;
        assert_eq!(kit.get(&mut s, id).await.content, "the build uses make");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn another_sessions_change_refuses_a_blind_update_until_read() {
        let kit = Kit::new();
        let mut a = kit.session("a");
        let mut b = kit.session("b");
        let id = kit.add(&mut a, "the build uses make").await;
        kit.get(&mut b, id).await;
        kit.ok(&mut b, Request::Update(update(id, "the build uses ninja")))
            .await;
        let e = kit
            .err(
                &mut a,
                Request::Update(update(id, "the build uses bazel")),
                ErrorCode::Drift,
            )
            .await;
        assert_eq!(drift_rule(&e), DriftRule::Row);
        let row = e.drift.unwrap().row.unwrap();
        assert_eq!(row.current.content, "the build uses ninja");
        assert_eq!(row.changed_by.agent.as_deref(), Some("b"));
        // Refused again without a read; passes after one.
        kit.err(
            &mut a,
            Request::Update(update(id, "the build uses bazel")),
            ErrorCode::Drift,
        )
        .await;
        kit.get(&mut a, id).await;
        kit.ok(&mut a, Request::Update(update(id, "the build uses bazel")))
            .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_external_edit_refuses_with_a_backup_and_moves_seen() {
        let kit = Kit::new();
        let mut a = kit.session("a");
        let id = kit.add(&mut a, "the build uses make").await;
        kit.get(&mut a, id).await;
        if !kit.insert_by_hand("added by hand") {
            return;
        }
        let e = kit
            .err(
                &mut a,
                Request::Update(update(id, "the build uses meson")),
                ErrorCode::Drift,
            )
            .await;
        let d = e.drift.unwrap();
        assert_eq!(d.rule, DriftRule::External);
        assert!(std::path::Path::new(&d.drift_backup).is_file(), "{d:?}");
        assert_eq!(a.seen(), d.generation_actual, "the refusal moved seen");
        // Reviewed: the retry passes.
        kit.ok(&mut a, Request::Update(update(id, "the build uses meson")))
            .await;
    }
}
