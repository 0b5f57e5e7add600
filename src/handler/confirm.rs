//! `confirm`: one more confirmation of a memory.

use memd_proto::{ConfirmRequest, Filter, Response};
use time::OffsetDateTime;

use super::{Ctx, HandlerError};
use crate::drift::policy::WriteKind;
use crate::gate;
use crate::session::Session;

/// `confirm`: `confirmed_count + 1`, `last_confirmed_at`. Not an edit: the
/// generation and `rev` do not move.
pub(super) async fn handle(
    req: ConfirmRequest,
    session: &mut Session,
    cx: &Ctx<'_>,
) -> Result<Response, HandlerError> {
    let view = gate::view(&Filter::default(), &session.who, OffsetDateTime::now_utc())?;
    let written = super::support::write(cx, session, WriteKind::Append, |guard| {
        cx.store().confirm(guard, req.id, view)
    })
    .await?;
    Ok(super::support::memory_reply(written))
}

#[cfg(test)]
mod tests {
    use memd_proto::{ConfirmRequest, ErrorCode, Request, Response};

    use crate::handler::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counts_a_confirmation_without_an_edit() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let id = kit.add(&mut s, "the build uses make").await;
        let before = kit.shared.store.generations.current();
        let Response::Memory(m) = kit
            .ok(&mut s, Request::Confirm(ConfirmRequest { id }))
            .await
        else {
            panic!()
        };
        assert_eq!(m.memory.confirmed_count, 1);
        assert!(m.memory.last_confirmed_at.is_some());
        assert_eq!(m.memory.rev, 1, "not an edit");
        assert_eq!(m.generation, before, "not an edit");
        kit.err(
            &mut s,
            Request::Confirm(ConfirmRequest { id: 9_999 }),
            ErrorCode::NotFound,
        )
        .await;
    }
}
