//! `add`: the write gate, then the store's add (dedup, near-duplicate
//! merge, insert, supersession; see `store::ops::add`).

use memd_proto::{AddRequest, Response};
use time::OffsetDateTime;

use super::{Ctx, HandlerError};
use crate::drift::policy::WriteKind;
use crate::gate;
use crate::gate::View;
use crate::gate::similar;
use crate::session::Session;
use crate::store::ops::add::AddOp;

pub(super) async fn handle(
    req: AddRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let now = OffsetDateTime::now_utc();
    let config = cx.config();
    let mut new = gate::check_add(&req, &session.who, &config.gate_rules(), now)?;
    session.owns_session_rows |= new.row.scope == "session";
    // Provenance: a person through the CLI or the viewer, an agent
    // otherwise; the way in and the session.
    new.row.source = crate::session::source_of(session.via).into();
    new.row.provenance = Some(memd_proto::Provenance::of(vec![memd_proto::Origin {
        source: new.row.source.clone(),
        via: Some(session.via.into()),
        agent: Some(session.agent().to_string()),
        session: Some(session.id().to_string()),
        ..memd_proto::Origin::default()
    }]));
    let supersedes = req.supersedes;
    // The memory to supersede is looked up even when superseded or archived,
    // so a double supersession is a conflict, not a "not found".
    let mut view = View::namespace(session.namespace(), session.agent(), session.id());
    view.include_superseded = true;
    view.include_archived = true;
    let kind = match supersedes {
        Some(_) => WriteKind::Destructive,
        None => WriteKind::Append,
    };
    // A memory from a thread is an event at its place in the thread, not a
    // statement: it is never merged into another.
    let dedup = config.gate.dedup && supersedes.is_none() && new.row.thread.is_none();
    let threshold = config.gate.near_duplicate_threshold;
    // The shingles and the sketch are computed here, off the writer thread:
    // the writer only looks up and compares.
    let mine = similar::profile(&new.row.content);
    new.sketch = Some(similar::sketch(&mine));
    let op = AddOp {
        new,
        supersedes,
        view,
        dedup,
        near: (dedup && threshold <= 1.0).then_some((mine, threshold)),
        now: crate::clock::format(now),
    };
    let written =
        super::support::write(cx, session, kind, |guard| cx.store().add(guard, op)).await?;
    let mut added = written.value;
    added.proposal = written.proposals.first().copied();
    Ok(Response::Added(added))
}

#[cfg(test)]
mod tests {
    use memd_proto::{AddRequest, ErrorCode, Request, Response};

    use crate::handler::support::testkit::{Kit, add};

    async fn added(
        kit: &Kit,
        s: &mut crate::session::Session,
        r: AddRequest,
    ) -> memd_proto::AddResult {
        match kit.ok(s, Request::Add(r)).await {
            Response::Added(r) => r,
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn stores_a_memory_and_merges_an_exact_duplicate() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let first = added(
            &kit,
            &mut s,
            add("the deploy script lives in ops/deploy.sh"),
        )
        .await;
        assert!(first.accepted && !first.deduped);
        let id = first.id.unwrap();
        assert!(first.generation > 0);
        let again = added(
            &kit,
            &mut s,
            add("The deploy script lives in ops/deploy.sh"),
        )
        .await;
        assert_eq!(again.id, Some(id));
        assert!(again.deduped);
        assert_eq!(again.reason.as_deref(), Some("duplicate"));
        let m = kit.get(&mut s, id).await;
        assert_eq!(m.observation_count, 2);
        assert_eq!(m.created_by.as_deref(), Some("a"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_gate_rejects_a_secret_and_bad_input() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let e = kit
            .err(
                &mut s,
                Request::Add(add("the key is AKIAIOSFODNN7EXAMPLE for the bucket")),
                ErrorCode::Rejected,
            )
            .await;
        assert_eq!(e.reason.as_deref(), Some("secret"));
        let bad_category = AddRequest {
            category: Some("nonsense".into()),
            ..add("a fact")
        };
        kit.err(&mut s, Request::Add(bad_category), ErrorCode::Rejected)
            .await;
        kit.err(&mut s, Request::Add(add("   ")), ErrorCode::Rejected)
            .await;
        // Nothing was stored.
        let status = kit.store_count().await;
        assert_eq!(status, 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn supersedes_once_and_refuses_a_second_time() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let old = kit.add(&mut s, "the cache runs on port 6379").await;
        let req = |content: &str| AddRequest {
            supersedes: Some(old),
            ..add(content)
        };
        let new = added(&kit, &mut s, req("the cache moved to port 6380")).await;
        assert_eq!(kit.get(&mut s, old).await.superseded_by, new.id);
        let e = kit
            .err(
                &mut s,
                Request::Add(req("the cache moved to port 6381")),
                ErrorCode::Conflict,
            )
            .await;
        assert!(e.message.contains("already superseded"), "{}", e.message);
        let missing = AddRequest {
            supersedes: Some(9_999),
            ..add("x y z")
        };
        kit.err(&mut s, Request::Add(missing), ErrorCode::NotFound)
            .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_merge_into_a_row_another_session_changed_is_refused() {
        let kit = Kit::new();
        let mut a = kit.session("a");
        let mut b = kit.session("b");
        let text = "the staging database listens on port 5432 for the app servers";
        let id = kit.add(&mut a, text).await;
        // b reads the row and changes it; a has not read it since its add.
        kit.get(&mut b, id).await;
        kit.ok(
            &mut b,
            Request::Update(memd_proto::UpdateRequest {
                id,
                tags: Some(vec!["db".into()]),
                ..Default::default()
            }),
        )
        .await;
        // a's add of the same text would merge into it: refused, since
        // a's view of that row is its own add.
        let e = kit
            .err(&mut a, Request::Add(add(text)), ErrorCode::Drift)
            .await;
        assert_eq!(
            crate::handler::support::testkit::drift_rule(&e),
            memd_proto::DriftRule::Row
        );
        // An add of a new memory is never refused.
        kit.add(&mut a, "lunch is at noon on fridays").await;
    }
}
