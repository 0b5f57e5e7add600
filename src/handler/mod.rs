//! Request handlers: one file per request kind.
//!
//! Each file is named after its request and exposes one function, `handle`:
//! it loads what it needs (the store's named functions), decides with the
//! pure rules (`gate`, the drift and snapshot rules), persists
//! through the writer thread, and answers. A reply that shows rows tells
//! the session with [`Session::saw`]; a write goes through
//! `support::guarded`. What several handlers share lives in `support`.
//! [`dispatch`] is an exhaustive `match` over [`Request`]: a new request
//! kind does not compile until it is handled here (see ARCHITECTURE.md
//! "The life of a request").

mod add;
mod backup;
mod check;
mod compacted;
mod confirm;
mod export;
mod fetch;
mod forget;
mod get;
mod history;
mod import;
mod inject;
mod list;
mod prune;
mod reembed;
mod refresh;
mod restore;
mod search;
mod search_batch;
mod session_end;
mod session_list;
mod status;
mod stop;
mod subscribe;
mod supersede;
mod support;
mod sweep;
mod task;
mod update;
mod upload;

use memd_proto::{ErrorBody, ErrorCode, Request, Response};

use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;

/// Handles one request of an open session.
pub async fn dispatch(req: Request, session: &mut Session, shared: &Shared) -> Response {
    let kind = req.kind();
    let result = match req {
        Request::Hello(_) => Err(StoreError::InvalidInput(
            "the session is already open: Hello is only valid as the first request".into(),
        )),
        Request::Add(r) => add::handle(r, session, shared).await,
        Request::Get(r) => get::handle(r, session, shared).await,
        Request::List(r) => list::handle(r, session, shared).await,
        Request::Update(r) => update::handle(r, session, shared).await,
        Request::Forget(r) => forget::handle(r, session, shared).await,
        Request::Search(r) => search::handle(r, session, shared).await,
        Request::Status(r) => status::handle(r, session, shared).await,
        Request::Stop(r) => stop::handle(r, session, shared).await,
        Request::Subscribe(r) => subscribe::handle(r, session, shared).await,
        Request::Check(r) => check::handle(r, session, shared).await,
        Request::Upload(r) => upload::handle(r, session, shared).await,
        Request::Restore(r) => restore::handle(r, session, shared).await,
        Request::Inject(r) => inject::handle(r, session, shared).await,
        Request::Compacted(r) => compacted::handle(r, session, shared).await,
        Request::Refresh(r) => refresh::handle(r, session, shared).await,
        Request::Supersede(r) => supersede::handle(r, session, shared).await,
        Request::History(r) => history::handle(r, session, shared).await,
        Request::Confirm(r) => confirm::handle(r, session, shared).await,
        Request::Prune(r) => prune::handle(r, session, shared).await,
        Request::Task(r) => task::handle(r, session, shared).await,
        Request::Sweep(r) => sweep::handle(r, session, shared).await,
        Request::Export(r) => export::handle(r, session, shared).await,
        Request::Backup(r) => backup::handle(r, session, shared).await,
        Request::Fetch(r) => fetch::handle(r, session, shared).await,
        Request::Import(r) => import::handle(r, session, shared).await,
        Request::Reembed(r) => reembed::handle(r, session, shared).await,
        Request::SearchBatch(r) => search_batch::handle(r, session, shared).await,
        Request::SessionList(r) => session_list::handle(r, session, shared).await,
        Request::SessionEnd(r) => session_end::handle(r, session, shared).await,
    };
    crate::jobs::sessions::after_request(shared, session).await;
    match result {
        Ok(resp) => resp,
        Err(e) => {
            let body = error_body(&e);
            match body.code {
                ErrorCode::Internal => {
                    tracing::error!(kind, session = %session.id(), error = %e, "request failed");
                }
                _ => tracing::debug!(kind, session = %session.id(), error = %e, "request refused"),
            }
            Response::Error(body)
        }
    }
}

/// Maps a store error to the wire: the one place where codes are chosen.
pub fn error_body(e: &StoreError) -> ErrorBody {
    let code = match e {
        StoreError::NotFound(_) => ErrorCode::NotFound,
        StoreError::Conflict { .. } => ErrorCode::Conflict,
        StoreError::Rejected { .. } => ErrorCode::Rejected,
        StoreError::InvalidInput(_) => ErrorCode::InvalidInput,
        StoreError::NotConfigured(_) => ErrorCode::NotConfigured,
        StoreError::StorageFull(_) => ErrorCode::StorageFull,
        StoreError::ReadOnly(_) => ErrorCode::ReadOnly,
        StoreError::Busy(_) => ErrorCode::Busy,
        StoreError::Closed => ErrorCode::ShuttingDown,
        StoreError::Drift(_) => ErrorCode::Drift,
        StoreError::SchemaTooNew { .. }
        | StoreError::NotMemd
        | StoreError::Sqlite(_)
        | StoreError::Io(_) => ErrorCode::Internal,
    };
    let mut body = ErrorBody::new(code, e.to_string());
    match e {
        StoreError::Rejected { reason, .. } => body.reason = Some((*reason).to_string()),
        StoreError::Conflict { current_rev, .. } => body.current_rev = *current_rev,
        StoreError::Drift(r) => body.drift = Some(r.details()),
        _ => {}
    }
    body
}
