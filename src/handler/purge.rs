//! `purge`: erases memories and every trace of their text this machine
//! keeps — and, for a memory of a namespace shared with the team, in the
//! team's PostgreSQL first (`Store::purge`). It reaches the session's
//! namespace only, unless the request asks for every namespace (or the
//! session reaches them all: the HTTP API without a namespace). The rest (frozen blocks, drift
//! backups, compacting the files) is `state::purge::finish`, which the team
//! pull's purges go through too. Without `confirm` it only lists what it
//! would erase.

use memd_proto::{PurgeReport, PurgeRequest, Response};

use super::{Ctx, HandlerError};
use crate::session::Session;
use crate::session::ident::Author;

pub(super) async fn handle(
    req: PurgeRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    // The session's namespace, as every other request; every namespace
    // when asked (`--all-namespaces`) or for a session that reaches them
    // all (the HTTP API's without a namespace).
    let only = (!req.all_namespaces && !session.who.reach.every_namespace)
        .then(|| session.who.namespace.clone());
    let targets = cx.store().purge_targets(req.id, req.matching, only).await?;
    let listed = |purged| PurgeReport {
        targets: targets.clone(),
        purged,
        blocks_rebuilt: 0,
        backups_rewritten: 0,
        not_rewritten: Vec::new(),
        scrubbed: false,
        generation: cx.store().generations.current(),
    };
    if !req.confirm || targets.is_empty() {
        return Ok(Response::Purged(listed(false)));
    }
    let uids: Vec<String> = targets.iter().map(|t| t.uid.clone()).collect();
    let by = format!("agent {} (session {})", session.agent(), session.id());
    let done = cx
        .store()
        .purge(Author::Session(session.who.clone()), by, uids)
        .await?;
    tracing::warn!(
        uids = ?done.uids,
        session = %session.id(),
        "purged memories and every trace of their text"
    );
    let finished = cx.finish_purge(&done).await?;
    // This connection's own block (other connections' at their next inject).
    let mut blocks = finished.blocks;
    if session.named.is_none() && session.drop_block_holding(&done.id_set()) {
        blocks += 1;
    }
    Ok(Response::Purged(PurgeReport {
        blocks_rebuilt: blocks,
        backups_rewritten: finished.backups,
        not_rewritten: finished.not_rewritten,
        scrubbed: finished.scrubbed,
        generation: cx.store().generations.current(),
        ..listed(true)
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, PurgeRequest, Request, Response};

    use crate::handler::support::testkit::Kit;

    fn purge(id: Option<i64>, matching: Option<&str>, confirm: bool, all: bool) -> Request {
        Request::Purge(PurgeRequest {
            id,
            matching: matching.map(str::to_string),
            confirm,
            all_namespaces: all,
        })
    }

    fn namespaces(r: &Response) -> Vec<String> {
        let Response::Purged(r) = r else {
            panic!("not a purge report: {r:?}")
        };
        r.targets.iter().map(|t| t.namespace.clone()).collect()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reaches_the_sessions_namespace_unless_asked_for_every_one() {
        let kit = Kit::new();
        let mut shop = kit.session_in("a", "shop");
        let mut other = kit.session_in("a", "other");
        let in_shop = kit.add(&mut shop, "the leaked key sat in shop notes").await;
        let in_other = kit
            .add(&mut other, "the leaked key sat in other notes")
            .await;
        let listed = kit
            .ok(&mut shop, purge(None, Some("leaked key"), false, false))
            .await;
        assert_eq!(namespaces(&listed), ["shop"]);
        let listed = kit
            .ok(&mut shop, purge(None, Some("leaked key"), false, true))
            .await;
        let mut all = namespaces(&listed);
        all.sort();
        assert_eq!(all, ["other", "shop"]);
        // By id: another namespace's memory is not there for this session.
        kit.err(
            &mut shop,
            purge(Some(in_other), None, true, false),
            ErrorCode::NotFound,
        )
        .await;
        let done = kit
            .ok(&mut shop, purge(None, Some("leaked key"), true, false))
            .await;
        assert_eq!(namespaces(&done), ["shop"]);
        kit.err(
            &mut shop,
            Request::Get(memd_proto::GetRequest {
                id: in_shop,
                include_inactive: true,
            }),
            ErrorCode::NotFound,
        )
        .await;
        assert_eq!(kit.get(&mut other, in_other).await.id, in_other);
        // Asked for every namespace, the id is found where it lives.
        let done = kit
            .ok(&mut shop, purge(Some(in_other), None, true, true))
            .await;
        assert_eq!(namespaces(&done), ["other"]);
        assert_eq!(kit.store_count().await, 0);
    }
}
