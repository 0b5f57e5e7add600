//! `get`: one memory by id, if the session may see it.

use memd_proto::{Filter, GetRequest, MemoryReply, Response};
use time::OffsetDateTime;

use super::{Ctx, HandlerError};
use crate::gate;
use crate::session::Session;
use crate::store::StoreError;

pub(super) async fn handle(
    req: GetRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let filter = Filter {
        include_superseded: req.include_inactive,
        include_archived: req.include_inactive,
        ..Filter::default()
    };
    let view = gate::view(&filter, &session.who, OffsetDateTime::now_utc())?;
    let read = cx.store().get(req.id, view).await?;
    session.shown(read.generation, read.value.iter().map(|m| (m.id, m.rev)));
    let memory = read.value.ok_or(StoreError::NotFound(req.id))?;
    if session.counts_uses() {
        cx.access().record([memory.id]);
    }
    Ok(Response::Memory(Box::new(MemoryReply {
        memory,
        generation: read.generation,
        proposal: None,
    })))
}

#[cfg(test)]
mod tests {
    use memd_proto::{AddRequest, ErrorCode, GetRequest, Request};

    use crate::handler::support::testkit::{Kit, add};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn shows_a_visible_row_and_moves_seen_to_its_read() {
        let kit = Kit::new();
        let mut a = kit.session("a");
        let mut b = kit.session("b");
        let id = kit.add(&mut a, "the build uses make").await;
        assert!(b.seen() < kit.shared.store.generations.current());
        let m = kit.get(&mut b, id).await;
        assert_eq!(m.content, "the build uses make");
        assert_eq!(b.seen(), kit.shared.store.generations.current());
        let get = |id| {
            Request::Get(GetRequest {
                id,
                include_inactive: false,
            })
        };
        kit.err(&mut b, get(9_999), ErrorCode::NotFound).await;
        // A session-scope row is its session's alone.
        let Some(mine) = (match kit
            .ok(
                &mut a,
                Request::Add(AddRequest {
                    scope: Some("session".into()),
                    ..add("scratch note of session a")
                }),
            )
            .await
        {
            memd_proto::Response::Added(r) => r.id,
            _ => None,
        }) else {
            panic!("no id")
        };
        kit.get(&mut a, mine).await;
        kit.err(&mut b, get(mine), ErrorCode::NotFound).await;
    }
}
