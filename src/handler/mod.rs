//! Request handlers: one file per request kind.
//!
//! Each handler loads what it needs, applies the pure rules (`store::gate`,
//! the drift and snapshot rules), writes through the writer thread, and
//! answers. A reply that shows rows tells the session with
//! [`Session::saw`]; a write goes through [`guarded`]. [`dispatch`] is an exhaustive `match` over [`Request`]: a new
//! request kind does not compile until it is handled here.

mod add;
mod check;
mod confirm;
mod forget;
mod get;
mod inject;
mod list;
mod portability;
mod reembed;
mod restore;
mod search;
mod session;
mod status;
mod stop;
mod subscribe;
mod supersede;
mod update;

use memd_proto::{DriftNotice, ErrorBody, ErrorCode, Request, Response};

use crate::drift::policy::WriteKind;
use crate::drift::refusal::Refusal;
use crate::session::Session;
use crate::state::Shared;
use crate::store::readers::ReadKind;
use crate::store::{Guard, StoreError, WriteCtx};

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
        Request::Subscribe(r) => subscribe::handle(r, session, shared).await,
        Request::Check(r) => check::handle(r, session, shared).await,
        Request::Upload(r) => restore::upload(r, session, shared).await,
        Request::Restore(r) => restore::handle(r, session, shared).await,
        Request::Inject(r) => inject::handle(r, session, shared).await,
        Request::Compacted(r) => inject::compacted(r, session, shared).await,
        Request::Refresh(r) => inject::refresh(r, session, shared).await,
        Request::Supersede(r) => supersede::handle(r, session, shared).await,
        Request::History(r) => supersede::history(r, session, shared).await,
        Request::Confirm(r) => confirm::confirm(r, session, shared).await,
        Request::Prune(r) => confirm::prune(r, session, shared).await,
        Request::Task(r) => confirm::task(r, session, shared).await,
        Request::Sweep(r) => portability::sweep(r, session, shared).await,
        Request::Export(r) => portability::export(r, session, shared).await,
        Request::Backup(r) => portability::backup(r, session, shared).await,
        Request::Fetch(r) => portability::fetch(r, session, shared).await,
        Request::Import(r) => portability::import(r, session, shared).await,
        Request::Reembed(r) => reembed::handle(r, session, shared).await,
        Request::SearchBatch(r) => search::batch(r, session, shared).await,
        Request::SessionList(r) => session::list(r, session, shared).await,
        Request::SessionEnd(r) => session::end(r, session, shared).await,
    };
    match result {
        Ok(resp) => resp,
        Err(e) => {
            let body = error_body(&e);
            match body.code {
                ErrorCode::Internal => {
                    tracing::error!(kind, session = %session.id(), error = %e, "request failed")
                }
                _ => tracing::debug!(kind, session = %session.id(), error = %e, "request refused"),
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
        Request::Subscribe(_) => "subscribe",
        Request::Check(_) => "check",
        Request::Upload(_) => "upload",
        Request::Restore(_) => "restore",
        Request::Inject(_) => "inject",
        Request::Compacted(_) => "compacted",
        Request::Refresh(_) => "refresh",
        Request::Supersede(_) => "supersede",
        Request::History(_) => "history",
        Request::Confirm(_) => "confirm",
        Request::Prune(_) => "prune",
        Request::Task(_) => "task",
        Request::Sweep(_) => "sweep",
        Request::Export(_) => "export",
        Request::Backup(_) => "backup",
        Request::Fetch(_) => "fetch",
        Request::Import(_) => "import",
        Request::Reembed(_) => "reembed",
        Request::SearchBatch(_) => "search_batch",
        Request::SessionList(_) => "session_list",
        Request::SessionEnd(_) => "session_end",
    }
}

pub use portability::run_sweep;
pub use session::{end_named, expire_named};

/// Runs a session's write under the drift guard. The rules on the
/// session's whole view run first, inside the write transaction, after the
/// writer's external-change check; the job then checks each row it changes
/// with [`WriteCtx::check_row`]. A refusal writes nothing. One on the whole
/// view moves the session's seen generation to the current one (the retry
/// after review passes that rule; the row rule still holds every row that
/// changed) and comes back with the backup that holds every row; a row-rule
/// refusal moves nothing, so the same blind write is refused again until the
/// session reads the row. After a write, the session's read set records the
/// rows it wrote, at their new revs.
pub(crate) async fn guarded<T, F>(
    shared: &Shared,
    session: &mut Session,
    kind: WriteKind,
    f: F,
) -> Result<T, StoreError>
where
    F: FnOnce(&mut WriteCtx<'_>, Option<DriftNotice>) -> Result<T, StoreError> + Send + 'static,
    T: Send + 'static,
{
    let guard = Guard {
        policy: session.policy,
        seen: session.seen(),
        kind,
        who: session.who.clone(),
        reads: session.reads(),
    };
    let result = shared
        .store
        .writer
        .call(session.author(), move |ctx| {
            let notice = ctx.guard(guard)?;
            let out = f(ctx, notice)?;
            Ok((out, ctx.written_revs()?, ctx.generation()?))
        })
        .await;
    match result {
        Ok((out, written, generation)) => {
            // The session's own write: its block must show it.
            session.invalidate();
            session.wrote(generation, written);
            Ok(out)
        }
        Err(StoreError::Drift(mut refusal)) => {
            if let Refusal::View(view) = refusal.as_mut() {
                session.saw(shared.store.generations.current().max(view.actual), []);
                match shared
                    .backups
                    .for_refusal(view.cause, view.observed, || async {
                        let read = shared
                            .store
                            .readers
                            .read(ReadKind::Internal, crate::store::memories::all_rows)
                            .await?;
                        Ok::<_, StoreError>((read.value, read.generation))
                    })
                    .await
                {
                    Ok(path) => view.backup = Some(path.display().to_string()),
                    Err(e) => tracing::error!(error = %e, "cannot write the drift backup"),
                }
            }
            tracing::warn!(
                session = %session.id(),
                policy = session.policy.as_str(),
                rule = refusal.rule().as_str(),
                observed = refusal.observed(),
                actual = refusal.actual(),
                "refused a write made on a stale view"
            );
            Err(StoreError::Drift(refusal))
        }
        Err(e) => Err(e),
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

/// The largest page a list or search returns, and the default when the
/// request says 0.
pub(crate) fn page_limit(asked: u32, shared: &Shared) -> u32 {
    match asked {
        0 => 20,
        n => n.min(shared.config().limits.max_results),
    }
}
