//! `history`: a supersession chain, walked both ways from any member, with its revisions.

use memd_proto::{History, HistoryRequest, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;

pub(super) async fn handle(
    req: HistoryRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let view = super::support::view::everything(session)?;
    let read = cx.store().history(req.id, view).await?;
    let chain = read.value;
    session.shown(read.generation, chain.members.iter().map(|m| (m.id, m.rev)));
    Ok(Response::History(History {
        chain: chain.members,
        revisions: chain.revisions,
        generation: read.generation,
        authors: chain.authors,
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, HistoryRequest, Request, Response, UpdateRequest};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn walks_the_chain_with_its_revisions() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let old = kit.add(&mut s, "the cache runs on port 6379").await;
        let new = kit.add(&mut s, "the cache runs on port 6380").await;
        kit.ok(
            &mut s,
            Request::Supersede(memd_proto::SupersedeRequest { old, new }),
        )
        .await;
        kit.ok(
            &mut s,
            Request::Update(UpdateRequest {
                id: new,
                content: Some("the cache runs on port 6390".into()),
                ..UpdateRequest::default()
            }),
        )
        .await;
        let Response::History(h) = kit
            .ok(&mut s, Request::History(HistoryRequest { id: old }))
            .await
        else {
            panic!()
        };
        let mut chain: Vec<i64> = h.chain.iter().map(|m| m.id).collect();
        chain.sort_unstable();
        assert_eq!(chain, vec![old, new]);
        assert!(!h.revisions.is_empty());
        kit.err(
            &mut s,
            Request::History(HistoryRequest { id: 9_999 }),
            ErrorCode::NotFound,
        )
        .await;
    }
}
