//! Request handlers: one file per request kind.
//!
//! Each file is named after its request and exposes one function, `handle`,
//! which sees the request, the session and a [`Ctx`] — what a request may
//! touch. It checks the request with the pure rules (`gate`, the drift and
//! snapshot rules), asks the store for a named operation (a read, or a
//! write under the session's drift guard, through the one write tail
//! `support::write`: guard, operation, settle), and answers. A reply that
//! shows rows records them with [`Session::shown`]; [`dispatch`] moves the
//! session's seen generation by the wire's rule
//! (`Response::seen_generation`). What several handlers share lives in
//! `support`. [`dispatch`] is an exhaustive `match` over [`Request`]: a new
//! request kind does not compile until it is handled here (see
//! ARCHITECTURE.md "The life of a request").

mod add;
mod backup;
mod capture;
mod capture_forget;
mod capture_status;
mod check;
mod citations;
mod compacted;
mod confirm;
mod export;
mod fetch;
mod forget;
mod forget_where;
mod get;
mod history;
mod import;
mod inject;
mod list;
mod locate;
mod prune;
mod purge;
mod reembed;
mod refresh;
mod restore;
mod search;
mod search_batch;
mod session_end;
mod session_list;
mod session_show;
mod status;
mod stop;
mod subscribe;
mod supersede;
mod support;
pub(crate) use support::view::preview;
mod sweep;
mod task;
mod team_push;
mod team_sync;
mod ui;
mod update;
mod upload;
mod verdicts;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use memd_proto::{ErrorBody, ErrorCode, Request, Response, SweepReport};

use crate::config::{Config, Paths};
use crate::drift::backup::Backups;
use crate::embed::EmbedService;
use crate::session::Session;
use crate::session::named::{Named, Registry};
use crate::state::Shared;
use crate::store::access::Access;
use crate::store::lifecycle::Trigger;
use crate::store::{Store, StoreError};
use crate::sync;

/// What a request may touch: the store, the settings in force when it
/// arrived, the data dir, drift backups, access tracking, the embedder,
/// the named sessions, and the daemon facts `status` shows; and three
/// daemon actions (stop, sweep, end a named session). Nothing else of the
/// daemon's state.
pub struct Ctx<'a> {
    shared: &'a Shared,
    config: Arc<Config>,
}

/// What `status` shows of the daemon itself.
#[derive(Debug, Clone)]
pub struct DaemonFacts<'a> {
    /// Resolved paths.
    pub paths: &'a Paths,
    /// Sessions now connected.
    pub sessions: usize,
    /// Time since the daemon started.
    pub uptime: Duration,
    /// The listener came from the service manager.
    pub socket_inherited: bool,
}

impl<'a> Ctx<'a> {
    /// The context of one request, with the settings in force now.
    pub fn new(shared: &'a Shared) -> Ctx<'a> {
        Ctx {
            config: shared.config(),
            shared,
        }
    }

    /// The database.
    pub fn store(&self) -> &'a Store {
        &self.shared.store
    }

    /// The settings in force when the request arrived.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The data dir (uploads and downloads live there).
    pub fn data_dir(&self) -> &'a Path {
        &self.shared.paths.data_dir
    }

    /// Drift backups.
    pub fn backups(&self) -> &'a Backups {
        &self.shared.backups
    }

    /// Access tracking (search and get hits).
    pub fn access(&self) -> &'a Access {
        &self.shared.access
    }

    /// The embedder, its model lock and the vector index.
    pub fn embed(&self) -> &'a EmbedService {
        &self.shared.embed
    }

    /// Finishes a purge the store made (frozen blocks, drift backups,
    /// compacting the files).
    ///
    /// # Errors
    /// See [`crate::state::purge::finish`].
    pub async fn finish_purge(
        &self,
        done: &crate::store::ops::purge::Purged,
    ) -> Result<crate::state::purge::Finished, crate::store::StoreError> {
        crate::state::purge::finish(self.shared, done).await
    }

    /// Ids purged this run (frozen blocks holding one are dropped).
    pub fn purged(&self) -> &'a std::sync::Mutex<std::collections::HashSet<i64>> {
        &self.shared.purged
    }

    /// Named sessions.
    pub fn named(&self) -> &'a Registry {
        &self.shared.named
    }

    /// The daemon's own facts.
    pub fn daemon(&self) -> DaemonFacts<'a> {
        DaemonFacts {
            paths: &self.shared.paths,
            sessions: self.shared.sessions.load(Ordering::Relaxed),
            uptime: self.shared.started.elapsed(),
            socket_inherited: self.shared.socket_inherited,
        }
    }

    /// The viewer listener's shared state.
    pub fn web(&self) -> &'a crate::state::web::Web {
        &self.shared.web
    }

    /// Asks the daemon to stop (it finishes in-flight requests first).
    pub fn stop(&self) {
        self.shared.shutdown.trigger();
    }

    /// Runs a lifecycle sweep (one at a time).
    ///
    /// # Errors
    /// As the store's sweep.
    pub async fn sweep(&self, dry_run: bool) -> Result<SweepReport, StoreError> {
        crate::jobs::sweep::run(self.shared, Trigger::Manual, dry_run).await
    }

    /// Ends a named session (already taken out of the registry).
    pub async fn end_named(&self, named: Arc<Named>) {
        crate::jobs::sessions::end(self.shared, named).await;
    }
}

/// What a request can fail with. A store operation's failure (and with
/// it the gate's and the drift guard's) is [`HandlerError::Store`]; a
/// handler that never touches the store fails only with the other two.
/// [`error_body`] turns each into the wire's error.
#[derive(Debug, thiserror::Error)]
pub enum HandlerError {
    /// A store operation failed, or the gate or the drift guard refused.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The request cannot be served as asked (nothing to fetch, an upload
    /// over the limit, no such named session).
    #[error("{0}")]
    InvalidInput(String),
    /// A file of the session (an upload, a download) could not be read or
    /// written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

impl From<crate::gate::GateError> for HandlerError {
    fn from(e: crate::gate::GateError) -> Self {
        HandlerError::Store(e.into())
    }
}

impl From<crate::embed::service::NotReady> for HandlerError {
    fn from(e: crate::embed::service::NotReady) -> Self {
        HandlerError::Store(e.into())
    }
}

/// Handles one request of an open session; the reply moves the session's
/// seen generation as the wire's rule says.
pub async fn dispatch(req: Request, session: &mut Session, shared: &Shared) -> Response {
    let cx = Ctx::new(shared);
    let kind = req.kind();
    let result = match req {
        Request::Hello(_) => Err(HandlerError::InvalidInput(
            "the session is already open: Hello is only valid as the first request".into(),
        )),
        Request::Add(r) => add::handle(r, session, &cx).await,
        Request::Get(r) => get::handle(r, session, &cx).await,
        Request::List(r) => list::handle(r, session, &cx).await,
        Request::Update(r) => update::handle(r, session, &cx).await,
        Request::Forget(r) => forget::handle(r, session, &cx).await,
        Request::Search(r) => search::handle(r, session, &cx).await,
        Request::Status(r) => status::handle(r, session, &cx).await,
        Request::Stop(r) => stop::handle(r, session, &cx).await,
        Request::Subscribe(r) => subscribe::handle(r, session, &cx).await,
        Request::Check(r) => check::handle(r, session, &cx).await,
        Request::Upload(r) => upload::handle(r, session, &cx).await,
        Request::Restore(r) => restore::handle(r, session, &cx).await,
        Request::Inject(r) => inject::handle(r, session, &cx).await,
        Request::Compacted(r) => compacted::handle(r, session, &cx).await,
        Request::Refresh(r) => refresh::handle(r, session, &cx).await,
        Request::Supersede(r) => supersede::handle(r, session, &cx).await,
        Request::History(r) => history::handle(r, session, &cx).await,
        Request::Confirm(r) => confirm::handle(r, session, &cx).await,
        Request::Locate(r) => locate::handle(r, session, &cx).await,
        Request::Prune(r) => prune::handle(r, session, &cx).await,
        Request::Task(r) => task::handle(r, session, &cx).await,
        Request::Sweep(r) => sweep::handle(r, session, &cx).await,
        Request::Export(r) => export::handle(r, session, &cx).await,
        Request::Backup(r) => backup::handle(r, session, &cx).await,
        Request::Fetch(r) => fetch::handle(r, session, &cx).await,
        Request::Import(r) => import::handle(r, session, &cx).await,
        Request::Reembed(r) => reembed::handle(r, session, &cx).await,
        Request::SearchBatch(r) => search_batch::handle(r, session, &cx).await,
        Request::SessionList(r) => session_list::handle(r, session, &cx).await,
        Request::SessionEnd(r) => session_end::handle(r, session, &cx).await,
        Request::TeamPush(r) => team_push::handle(r, session, &cx).await,
        Request::TeamSync(r) => team_sync::handle(r, session, &cx).await,
        Request::SessionShow(r) => session_show::handle(r, session, &cx).await,
        Request::Ui(r) => ui::handle(r, session, &cx).await,
        Request::Capture(r) => capture::handle(r, session, &cx).await,
        Request::CaptureStatus(r) => capture_status::handle(r, session, &cx).await,
        Request::CaptureForget(r) => capture_forget::handle(r, session, &cx).await,
        Request::Purge(r) => purge::handle(r, session, &cx).await,
        Request::ForgetWhere(r) => forget_where::handle(r, session, &cx).await,
        Request::Citations(r) => citations::handle(r, session, &cx).await,
        Request::Verdicts(r) => verdicts::handle(r, session, &cx).await,
    };
    let resp = match result {
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
    };
    if let Some(generation) = resp.seen_generation(kind) {
        session.saw(generation);
    }
    // A named session's changes are kept on disk (a new block before the
    // reply that shows it).
    crate::jobs::sessions::after_request(shared, session).await;
    resp
}

/// A session begins to serve (a binary connection once welcomed, an HTTP
/// request): it counts in `status`, and its session-scope rows are live.
pub fn began(shared: &Shared, session: &Session) {
    shared
        .sessions
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    sync::lock(&shared.live).insert(session.id().to_string());
}

/// A session stops serving. A named session outlives its connections (it
/// ends on `session end` or when idle); an unnamed one ends here, and its
/// session-scope rows with it.
pub async fn ended(shared: &Shared, session: &Session) {
    shared
        .sessions
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    match &session.named {
        Some(named) => crate::jobs::sessions::leave(shared, named).await,
        None => {
            sync::lock(&shared.live).remove(session.id());
            if session.owns_session_rows {
                crate::store::lifecycle::record_session_end(&shared.store, session.id()).await;
            }
        }
    }
}

/// Maps a request's failure to the wire: the one place where codes are
/// chosen.
pub fn error_body(e: &HandlerError) -> ErrorBody {
    let store = match e {
        HandlerError::Store(e) => e,
        HandlerError::InvalidInput(_) => {
            return ErrorBody::new(ErrorCode::InvalidInput, e.to_string());
        }
        HandlerError::Io(_) => return ErrorBody::new(ErrorCode::Internal, e.to_string()),
    };
    let code = match store {
        StoreError::NotFound(_) | StoreError::Purged { .. } => ErrorCode::NotFound,
        StoreError::Conflict { .. } => ErrorCode::Conflict,
        StoreError::Rejected { .. } => ErrorCode::Rejected,
        StoreError::InvalidInput(_) => ErrorCode::InvalidInput,
        StoreError::NotConfigured(_) => ErrorCode::NotConfigured,
        StoreError::StorageFull(_) => ErrorCode::StorageFull,
        StoreError::ReadOnly(_) => ErrorCode::ReadOnly,
        StoreError::Busy(_) => ErrorCode::Busy,
        StoreError::TeamUnavailable(_) => ErrorCode::TeamUnavailable,
        StoreError::TeamOutcomeUnknown { .. } => ErrorCode::TeamOutcomeUnknown,
        StoreError::TeamUnpushed(_) => ErrorCode::TeamUnpushed,
        StoreError::Forbidden(_) => ErrorCode::Forbidden,
        StoreError::Closed => ErrorCode::ShuttingDown,
        StoreError::Drift(_) => ErrorCode::Drift,
        StoreError::SchemaTooNew { .. }
        | StoreError::NotMemd
        | StoreError::Sqlite(_)
        | StoreError::Io(_) => ErrorCode::Internal,
    };
    let mut body = ErrorBody::new(code, store.to_string());
    match store {
        StoreError::Rejected { reason, .. } => body.reason = Some((*reason).to_string()),
        StoreError::Conflict { current_rev, .. } => body.current_rev = *current_rev,
        StoreError::Drift(r) => body.drift = Some(r.details()),
        StoreError::TeamOutcomeUnknown { operation_id, .. } => {
            body.operation_id = Some(operation_id.clone());
        }
        _ => {}
    }
    body
}

#[cfg(test)]
mod tests {
    use memd_proto::{ErrorCode, Hello, Request, UpdateRequest};

    use super::support::testkit::Kit;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_second_hello_is_refused() {
        let kit = Kit::new();
        let mut s = kit.session("a");
        let hello = Hello {
            protocol: memd_proto::PROTOCOL_VERSION,
            client_version: "test".into(),
            agent_id: "a".into(),
            namespace: "default".into(),
            policy: None,
            budget: None,
            seen_generation: None,
            session: None,
            hold_block: false,
            previous_namespaces: Vec::new(),
        };
        kit.err(&mut s, Request::Hello(hello), ErrorCode::InvalidInput)
            .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn reads_move_seen_and_own_writes_do_not() {
        let kit = Kit::new();
        let mut a = kit.session("a");
        let mut b = kit.session("b");
        let id = kit.add(&mut b, "the build uses make").await;
        let start = a.seen();
        // a's own write moves nothing.
        let mine = kit.add(&mut a, "the tests run with nextest").await;
        kit.ok(
            &mut a,
            Request::Update(UpdateRequest {
                id: mine,
                tags: Some(vec!["ci".into()]),
                ..UpdateRequest::default()
            }),
        )
        .await;
        assert_eq!(a.seen(), start);
        // A read moves it to the read's generation.
        kit.get(&mut a, id).await;
        assert_eq!(a.seen(), kit.shared.store.generations.current());
    }
}
