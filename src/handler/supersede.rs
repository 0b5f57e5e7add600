//! `supersede` and `history`: facts are not overwritten, they are
//! superseded, and the chain can be walked both ways from any member.

use memd_proto::{Response, SupersedeRequest, SupersedeResult};

use super::{Ctx, HandlerError};
use crate::drift::policy::WriteKind;
use crate::session::Session;

pub(super) async fn handle(
    req: SupersedeRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let view = super::support::view::everything(session)?;
    let SupersedeRequest { old, new } = req;
    let written = super::support::write(cx, session, WriteKind::Destructive, |guard| {
        cx.store().supersede(guard, old, new, view)
    })
    .await?;
    Ok(Response::Superseded(SupersedeResult {
        old,
        new,
        generation: written.generation,
    }))
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, Request, Response, SupersedeRequest};

    use crate::handler::support::testkit::Kit;

    fn supersede(old: i64, new: i64) -> Request {
        Request::Supersede(SupersedeRequest { old, new })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn links_old_to_new_and_refuses_doubles_cycles_and_self() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let a = kit.add(&mut s, "the cache runs on port 6379").await;
        let b = kit.add(&mut s, "the cache runs on port 6380").await;
        let c = kit.add(&mut s, "the cache runs on port 6381").await;
        let Response::Superseded(r) = kit.ok(&mut s, supersede(a, b)).await else {
            panic!()
        };
        assert_eq!((r.old, r.new), (a, b));
        assert_eq!(kit.get(&mut s, a).await.superseded_by, Some(b));
        kit.err(&mut s, supersede(a, c), ErrorCode::Conflict).await;
        kit.err(&mut s, supersede(c, a), ErrorCode::Conflict).await;
        kit.ok(&mut s, supersede(b, c)).await;
        // c ← b ← a: a link back from c to a would close a cycle.
        kit.err(&mut s, supersede(c, a), ErrorCode::Conflict).await;
        kit.err(&mut s, supersede(c, c), ErrorCode::InvalidInput)
            .await;
        kit.err(&mut s, supersede(c, 9_999), ErrorCode::NotFound)
            .await;
    }
}
