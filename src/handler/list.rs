//! `list`: visible memories with filters, newest first.

use memd_proto::{ListRequest, MemoryList, Response};
use time::OffsetDateTime;

use super::{Ctx, HandlerError};
use crate::gate;
use crate::session::Session;

pub(super) async fn handle(
    req: ListRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let view = gate::view(&req.filter, &session.who, OffsetDateTime::now_utc())?;
    let limit = super::support::page_limit(req.limit, cx);
    let read = cx.store().list(view, limit, req.offset).await?;
    session.shown(read.generation, read.value.iter().map(|m| (m.id, m.rev)));
    Ok(Response::Memories(MemoryList {
        memories: read.value,
        generation: read.generation,
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, Filter, ListRequest, Request, Response};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pages_newest_first_and_checks_filters() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let mut ids = Vec::new();
        for n in 0..5 {
            ids.push(
                kit.add(&mut s, &format!("fact number {n} about the build"))
                    .await,
            );
        }
        let list = |limit, offset, filter| {
            Request::List(ListRequest {
                filter,
                limit,
                offset,
            })
        };
        let Response::Memories(page) = kit.ok(&mut s, list(2, 1, Filter::default())).await else {
            panic!()
        };
        let got: Vec<i64> = page.memories.iter().map(|m| m.id).collect();
        assert_eq!(got, vec![ids[3], ids[2]]);
        assert_eq!(s.seen(), page.generation);
        let bad = Filter {
            scope: Some("everywhere".into()),
            ..Filter::default()
        };
        kit.err(&mut s, list(10, 0, bad), ErrorCode::InvalidInput)
            .await;
    }
}
