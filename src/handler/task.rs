//! `task start|done|cancel`: a task's transitions.

use memd_proto::{Filter, Response, TaskRequest};
use time::OffsetDateTime;

use super::{Ctx, HandlerError};
use crate::drift::policy::WriteKind;
use crate::gate;
use crate::session::Session;

/// `task start|done|cancel`: checks the transition, sets the task's
/// `status`, keeps `surface = "startup"` only while the task is open.
pub(super) async fn handle(
    req: TaskRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let view = gate::view(&Filter::default(), &session.who, OffsetDateTime::now_utc())?;
    let TaskRequest {
        id,
        status,
        expect_rev,
    } = req;
    let written = super::support::write(cx, session, WriteKind::Destructive, |guard| {
        cx.store().move_task(guard, id, status, expect_rev, view)
    })
    .await?;
    Ok(super::support::memory_reply(written))
}

#[cfg(test)]
mod tests {
    use memd_proto::{AddRequest, ErrorCode, Request, Response, TaskRequest};

    use crate::handler::support::testkit::{Kit, add};

    fn task(id: i64, status: &str) -> Request {
        Request::Task(TaskRequest {
            id,
            status: status.into(),
            expect_rev: None,
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn moves_a_task_and_refuses_what_the_rules_refuse() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let Response::Added(r) = kit
            .ok(
                &mut s,
                Request::Add(AddRequest {
                    category: Some("task".into()),
                    ..add("write the release notes")
                }),
            )
            .await
        else {
            panic!()
        };
        let id = r.id.unwrap();
        let Response::Memory(m) = kit.ok(&mut s, task(id, "in_progress")).await else {
            panic!()
        };
        assert!(
            m.memory.metadata.contains("in_progress"),
            "{}",
            m.memory.metadata
        );
        // The same status again is not a move.
        kit.err(&mut s, task(id, "in_progress"), ErrorCode::Conflict)
            .await;
        kit.ok(&mut s, task(id, "completed")).await;
        kit.err(&mut s, task(id, "in_progress"), ErrorCode::Conflict)
            .await;
        let note = kit.add(&mut s, "not a task at all").await;
        kit.err(&mut s, task(note, "completed"), ErrorCode::InvalidInput)
            .await;
        kit.err(&mut s, task(9_999, "completed"), ErrorCode::NotFound)
            .await;
    }
}
