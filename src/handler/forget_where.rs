//! `forget_where`: deletes every memory of a thread, of a source, or of
//! both, in the session's namespace (`memd forget --thread T`, `memd forget
//! --source ingest`): a transcript `memd ingest` stored is undone in one
//! step. Each row is a `forget`, under the session's drift guard; `purge`
//! is the erasure of text.

use memd_proto::{Filter, ForgetWhereRequest, ForgottenWhere, Response};
use time::OffsetDateTime;

use super::{Ctx, HandlerError};
use crate::drift::policy::WriteKind;
use crate::gate;
use crate::session::Session;

pub(super) async fn handle(
    req: ForgetWhereRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let given = |s: &Option<String>| s.as_deref().is_some_and(|s| !s.trim().is_empty());
    if !given(&req.thread) && !given(&req.source) {
        return Err(HandlerError::InvalidInput(
            "forget takes a memory id, --thread T or --source S".into(),
        ));
    }
    let filter = Filter {
        source: req.source.clone(),
        include_superseded: true,
        include_archived: true,
        ..Filter::default()
    };
    let view = gate::view(&filter, &session.who, OffsetDateTime::now_utc())?;
    let thread = req.thread.filter(|t| !t.trim().is_empty());
    let dry_run = req.dry_run;
    let written = super::support::write(cx, session, WriteKind::Destructive, |guard| {
        cx.store().forget_where(guard, view, thread, dry_run)
    })
    .await?;
    Ok(Response::ForgottenWhere(ForgottenWhere {
        ids: written.value,
        dry_run,
        generation: written.generation,
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{AddRequest, ErrorCode, ForgetWhereRequest, Request, Response};

    use crate::handler::support::testkit::Kit;

    fn forget_where(thread: Option<&str>, source: Option<&str>, dry_run: bool) -> Request {
        Request::ForgetWhere(ForgetWhereRequest {
            thread: thread.map(str::to_string),
            source: source.map(str::to_string),
            dry_run,
        })
    }

    fn ids(r: &Response) -> Vec<i64> {
        let Response::ForgottenWhere(r) = r else {
            panic!("not a forget_where reply: {r:?}")
        };
        r.ids.clone()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn deletes_one_thread_of_the_namespace_only() {
        let kit = Kit::new();
        let mut s = kit.session_in("a", "shop");
        let mut other = kit.session_in("a", "other");
        let turn = |thread: &str, n: i64| AddRequest {
            content: format!("turn {n} of {thread} about the deploy"),
            thread: Some(thread.into()),
            position: Some(n),
            ..AddRequest::default()
        };
        let mut t1 = Vec::new();
        for n in 1..=3 {
            let r = kit.ok(&mut s, Request::Add(turn("t1", n))).await;
            let Response::Added(a) = r else { panic!() };
            t1.push(a.id.unwrap());
        }
        kit.ok(&mut s, Request::Add(turn("t2", 1))).await;
        kit.ok(&mut other, Request::Add(turn("t1", 1))).await;
        let note = kit.add(&mut s, "a note outside every thread").await;
        kit.err(
            &mut s,
            forget_where(None, None, false),
            ErrorCode::InvalidInput,
        )
        .await;
        let listed = kit.ok(&mut s, forget_where(Some("t1"), None, true)).await;
        assert_eq!(ids(&listed), t1);
        assert_eq!(kit.store_count().await, 6, "a dry run deletes nothing");
        let done = kit.ok(&mut s, forget_where(Some("t1"), None, false)).await;
        assert_eq!(ids(&done), t1);
        assert_eq!(kit.store_count().await, 3);
        assert_eq!(kit.get(&mut s, note).await.id, note);
        let again = kit.ok(&mut s, forget_where(Some("t1"), None, false)).await;
        assert!(ids(&again).is_empty());
    }
}
