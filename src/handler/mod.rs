//! Request handlers: one file per request kind.
//!
//! Each handler loads what it needs, applies the pure rules (`store::gate`,
//! later drift and snapshot rules), writes through the writer thread, and
//! answers. [`dispatch`] is an exhaustive `match` over [`Request`]: a new
//! request kind does not compile until it is handled here.

mod add;
mod forget;
mod get;
mod list;
mod search;
mod status;
mod stop;
mod update;

use memd_proto::{ErrorBody, ErrorCode, Request, Response};

use crate::daemon::Shared;
use crate::session::Session;
use crate::store::StoreError;

/// Handles one request of an open session.
pub async fn dispatch(req: Request, session: &mut Session, shared: &Shared) -> Response {
    let kind = request_kind(&req);
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
    };
    match result {
        Ok(resp) => resp,
        Err(e) => {
            let body = error_body(&e);
            match body.code {
                ErrorCode::Internal => {
                    tracing::error!(kind, session = %session.id, error = %e, "request failed")
                }
                _ => tracing::debug!(kind, session = %session.id, error = %e, "request refused"),
            }
            Response::Error(body)
        }
    }
}

/// The request's kind, for logs.
pub fn request_kind(req: &Request) -> &'static str {
    match req {
        Request::Hello(_) => "hello",
        Request::Add(_) => "add",
        Request::Get(_) => "get",
        Request::List(_) => "list",
        Request::Update(_) => "update",
        Request::Forget(_) => "forget",
        Request::Search(_) => "search",
        Request::Status(_) => "status",
        Request::Stop(_) => "stop",
    }
}

/// Maps a store error to the wire: the one place where codes are chosen.
pub fn error_body(e: &StoreError) -> ErrorBody {
    let code = match e {
        StoreError::NotFound(_) => ErrorCode::NotFound,
        StoreError::Conflict { .. } => ErrorCode::Conflict,
        StoreError::Rejected { .. } => ErrorCode::Rejected,
        StoreError::InvalidInput(_) => ErrorCode::InvalidInput,
        StoreError::StorageFull(_) => ErrorCode::StorageFull,
        StoreError::ReadOnly(_) => ErrorCode::ReadOnly,
        StoreError::Busy(_) => ErrorCode::Busy,
        StoreError::Closed => ErrorCode::ShuttingDown,
        StoreError::SchemaTooNew { .. }
        | StoreError::NotMemd
        | StoreError::Sqlite(_)
        | StoreError::Io(_) => ErrorCode::Internal,
    };
    let mut body = ErrorBody::new(code, e.to_string());
    match e {
        StoreError::Rejected { reason, .. } => body.reason = Some((*reason).to_string()),
        StoreError::Conflict { current_rev, .. } => body.current_rev = *current_rev,
        _ => {}
    }
    body
}

/// The largest page a list or search returns, and the default when the
/// request says 0.
pub(crate) fn page_limit(asked: u32, shared: &Shared) -> u32 {
    match asked {
        0 => 20,
        n => n.min(shared.config.limits.max_results),
    }
}
