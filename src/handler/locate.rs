//! `locate`: the namespace a memory lives in, for a person's by-id
//! commands (`memd get ID` from any directory). The look is not the
//! session's read of the row (the drift guard's read set does not move)
//! and not a use of it; the session's scope and owner rules still apply, so
//! another session's session-scope row is not found. An agent's tools (MCP)
//! never send it: they stay inside their namespace.

use memd_proto::{Filter, LocateReply, LocateRequest, Response};
use time::OffsetDateTime;

use super::{Ctx, HandlerError};
use crate::gate;
use crate::session::Session;
use crate::store::StoreError;

pub(super) async fn handle(
    req: LocateRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let filter = Filter {
        all_namespaces: true,
        include_superseded: true,
        include_archived: true,
        ..Filter::default()
    };
    let view = gate::view(&filter, &session.who, OffsetDateTime::now_utc())?;
    let read = cx.store().get(req.id, view).await?;
    let memory = read.value.ok_or(StoreError::NotFound(req.id))?;
    Ok(Response::Located(LocateReply {
        id: memory.id,
        namespace: memory.namespace,
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{AddRequest, ErrorCode, GetRequest, LocateRequest, Request, Response};

    use crate::handler::support::testkit::{Kit, add};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn names_the_namespace_without_a_read_or_a_use() {
        let kit = Kit::new();
        let mut there = kit.session_in("a", "github.com/acme/api");
        let id = kit.add(&mut there, "the build uses make").await;
        let mut here = kit.session_in("b", "github.com/acme/web");
        let seen = here.seen();
        let Response::Located(r) = kit
            .ok(&mut here, Request::Locate(LocateRequest { id }))
            .await
        else {
            panic!("not located")
        };
        assert_eq!((r.id, r.namespace.as_str()), (id, "github.com/acme/api"));
        // Not the session's read.
        assert_eq!(here.seen(), seen);
        // The session itself still sees only its namespace.
        kit.err(
            &mut here,
            Request::Get(GetRequest {
                id,
                include_inactive: false,
            }),
            ErrorCode::NotFound,
        )
        .await;
        kit.err(
            &mut here,
            Request::Locate(LocateRequest { id: 9_999 }),
            ErrorCode::NotFound,
        )
        .await;
        // Another session's session-scope row is not found.
        let Response::Added(mine) = kit
            .ok(
                &mut there,
                Request::Add(AddRequest {
                    scope: Some("session".into()),
                    ..add("scratch note of session a")
                }),
            )
            .await
        else {
            panic!("not added")
        };
        kit.err(
            &mut here,
            Request::Locate(LocateRequest {
                id: mine.id.unwrap(),
            }),
            ErrorCode::NotFound,
        )
        .await;
    }
}
