//! The MCP handler over one memd session.
//!
//! The session's [`Client`] sits behind a fair mutex. Tool calls and
//! resource reads take it for one request each. Between them, an event pump
//! holds it while waiting for the daemon's pushed events (the client's
//! `next_event` is cancel safe) and lets go as soon as a request wants it;
//! pushes that arrive during a request are collected after it. A drift
//! event is forwarded to the host as `notifications/resources/updated` for
//! `memory://inject` and `memory://drift`, a semantic near duplicate for
//! `memory://similar` — to legacy `resources/subscribe` subscribers and to
//! `subscriptions/listen` streams alike.
//!
//! The daemon may go away (`memd stop`, an upgrade, a crash and its service
//! manager's restart). The connection is then marked broken, and the next
//! request connects again first — starting a daemon unless autostart is
//! off — with the same namespace, agent and drift policy, and the
//! generation this session has seen, so the drift guard still holds; the
//! pump meanwhile picks up a daemon that is back (never starting one) so
//! events flow again. A request whose connection breaks under it is sent
//! again once on the new connection when that is safe: reads, the block,
//! `memory_compacted`, and any request that never went out whole. A write
//! that may have reached the daemon is not repeated: its tool error says
//! so, and to check before retrying.

use std::collections::{BTreeSet, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use memd_client::Client;
use memd_client::proto::{DriftEvent, ErrorCode, Event, Response, SimilarEvent};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, GetPromptResult, Implementation, ListPromptsResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, Prompt, PromptMessage, ReadResourceRequestParams,
    ReadResourceResponse, ReadResourceResult, Resource, ResourceContents,
    ResourceUpdatedNotificationParam, Role, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, Tool, ToolAnnotations, UnsubscribeRequestParams,
};
use rmcp::service::{MaybeSendFuture, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, Peer, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast};

use super::tools::{self, ToolError};
use crate::commands::CommandError;
use crate::commands::args::{Command, Global, TaskCommand};
use crate::config::Paths;
use crate::sync;

/// The frozen memory block.
pub const INJECT_URI: &str = "memory://inject";
/// The last change made outside memd.
pub const DRIFT_URI: &str = "memory://drift";
/// The last semantic near duplicates the daemon announced.
pub const SIMILAR_URI: &str = "memory://similar";
const URIS: [&str; 3] = [INJECT_URI, DRIFT_URI, SIMILAR_URI];
const PROMPT: &str = "memory";
/// Near-duplicate notices kept for `memory://similar`.
const SIMILAR_KEEP: usize = 20;

const INSTRUCTIONS: &str = "memd is a persistent memory shared by every session and agent on \
    this machine. At the start of a task, read the resource memory://inject (or the prompt \
    `memory`): it is this session's memory block, and stays byte-for-byte the same until you \
    call memory_compacted. Search (memory_search) before answering questions earlier sessions \
    may have settled; store (memory_store) durable facts, decisions and preferences you learn, \
    one statement each. If a write is refused with code `drift`, the memory changed since this \
    session last read it (another session or agent, memd itself, or another tool): read it \
    again (memory_get), then retry; a retry without reading is refused again. In a namespace \
    shared with a team, `team_unavailable` means nothing was written (retry later), and \
    `team_outcome_unknown` means it may have been written: search for it before storing it \
    again; `forbidden` means this machine's team role may not write there (nothing was \
    written).";

/// What changed, for resource-updated notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Changed {
    /// The database was changed outside memd.
    Drift,
    /// The daemon found a semantic near duplicate.
    Similar,
    /// A purge dropped the session's frozen block.
    Purged,
}

impl Changed {
    fn touches(self, uri: &str) -> bool {
        match self {
            Changed::Drift => uri == INJECT_URI || uri == DRIFT_URI,
            Changed::Similar => uri == SIMILAR_URI,
            Changed::Purged => uri == INJECT_URI,
        }
    }
}

/// The connection to the daemon.
struct Conn {
    client: Client,
    /// It ended: the next request connects again before anything is sent.
    broken: bool,
}

/// One request of the host, as sent to the daemon.
enum Job {
    /// A tool's CLI command.
    Command(Box<Command>),
    /// The memory block.
    Inject,
}

impl Job {
    /// Whether it may be sent again after the connection broke while it
    /// was in flight: reads, the block, and `compacted` (it only drops the
    /// session's block; a new session has none yet).
    fn repeatable(&self) -> bool {
        match self {
            Job::Inject => true,
            Job::Command(c) => matches!(
                **c,
                Command::Get(_)
                    | Command::List(_)
                    | Command::Search(_)
                    | Command::History(_)
                    | Command::Task(TaskCommand::List(_))
                    | Command::Compacted
            ),
        }
    }
}

/// A request's answer.
enum Reply {
    Json(Value),
    Block(String),
}

/// How a request failed on the connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Broke {
    /// The request went out whole: the daemon may have run it.
    InFlight,
    /// It never went out whole: the daemon cannot have run it.
    NotSent,
}

/// Whether an error means the connection to the daemon is gone.
fn broke(e: &CommandError, written: bool) -> Option<Broke> {
    match e {
        CommandError::Client(memd_client::Error::Io(_) | memd_client::Error::Closed) => {
            Some(if written {
                Broke::InFlight
            } else {
                Broke::NotSent
            })
        }
        // The daemon is stopping: this connection is about to end.
        CommandError::Client(memd_client::Error::Daemon(b))
            if b.code == ErrorCode::ShuttingDown =>
        {
            Some(Broke::InFlight)
        }
        _ => None,
    }
}

/// The error of a write whose connection broke while it was in flight.
fn maybe_applied(e: &CommandError, reconnected: Result<(), &CommandError>) -> CommandError {
    let cause = match e {
        CommandError::Client(memd_client::Error::Io(io)) => io.to_string(),
        other => other.message(),
    };
    let now = match reconnected {
        Ok(()) => "memd mcp is connected to the daemon again".to_string(),
        Err(e) => format!("connecting to the daemon again failed ({})", e.message()),
    };
    CommandError::Client(memd_client::Error::Io(std::io::Error::new(
        std::io::ErrorKind::ConnectionAborted,
        format!(
            "{cause}: the connection to the daemon broke before it answered, so this write may or \
             may not have been applied; {now}. Check with memory_get, memory_list or \
             memory_search, then call the tool again if the change is missing"
        ),
    )))
}

/// The session and what listens to it.
struct Session {
    /// The client's connection to the daemon.
    link: tokio::sync::Mutex<Conn>,
    /// A request wants the connection: the event pump lets go.
    wanted: Notify,
    /// The command line's flags: how to connect again.
    global: Global,
    paths: Paths,
    events: broadcast::Sender<Changed>,
    last_drift: Mutex<Option<(DriftEvent, u64)>>,
    /// Recent near-duplicate notices (newest last) and how many came.
    similar: Mutex<(VecDeque<SimilarEvent>, u64)>,
    /// Legacy `resources/subscribe` subscriptions.
    subscribers: Mutex<Subscribers>,
}

/// The host's peer and the URIs it subscribed to.
#[derive(Default)]
struct Subscribers {
    peer: Option<Peer<RoleServer>>,
    uris: BTreeSet<String>,
}

impl Session {
    /// Takes the connection for one request.
    async fn lock(&self) -> tokio::sync::MutexGuard<'_, Conn> {
        self.wanted.notify_one();
        self.link.lock().await
    }

    /// Forwards pushes that arrived while a request ran.
    fn collect_pushes(&self, client: &mut Client) {
        for push in client.take_pushes() {
            match push {
                Response::Event(Event::Drift(e)) => self.drift(e),
                Response::Event(Event::Similar(e)) => self.similar(e),
                Response::Event(Event::Purged(e)) => self.purged(&e),
                _ => {}
            }
        }
    }

    fn drift(&self, event: DriftEvent) {
        {
            let mut last = sync::lock(&self.last_drift);
            let count = last.as_ref().map_or(0, |(_, n)| *n) + 1;
            *last = Some((event.clone(), count));
        }
        tracing::info!(generation = event.generation, "memory changed outside memd");
        let _ = self.events.send(Changed::Drift);
    }

    fn purged(&self, event: &memd_proto::PurgedEvent) {
        if event.block_dropped {
            let _ = self.events.send(Changed::Purged);
        }
    }

    fn similar(&self, event: SimilarEvent) {
        {
            let mut similar = sync::lock(&self.similar);
            if similar.0.len() == SIMILAR_KEEP {
                similar.0.pop_front();
            }
            similar.0.push_back(event);
            similar.1 += 1;
        }
        let _ = self.events.send(Changed::Similar);
    }

    fn drift_json(&self) -> Value {
        let last = sync::lock(&self.last_drift);
        match &*last {
            None => json!({"changed_outside": false, "events": 0, "last": null}),
            Some((e, n)) => json!({
                "changed_outside": true,
                "events": n,
                "last": {"generation": e.generation, "external_epoch": e.external_epoch,
                         "at": e.at, "reason": e.reason},
                "advice": "the memory was changed outside memd since this session began; read \
                           what you are about to change again (memory_get) before updating or \
                           forgetting it; memory://inject stays as it is until memory_compacted",
            }),
        }
    }

    fn similar_json(&self) -> Value {
        let similar = sync::lock(&self.similar);
        let recent: Vec<Value> = similar
            .0
            .iter()
            .rev()
            .map(|e| {
                json!({"id": e.id, "similar_to": e.similar_to, "cosine": e.cosine,
                       "superseded": e.superseded})
            })
            .collect();
        json!({
            "notices": similar.1,
            "recent": recent,
            "advice": "each notice names a memory (id) whose meaning is close to an older one \
                       (similar_to) of this namespace; nothing was merged. When superseded is \
                       true the older one was replaced (auto-supersession). Otherwise read both \
                       (memory_get) and, if they say the same thing, forget or supersede one",
        })
    }

    /// Connects to the daemon again (starting one when `autostart` allows
    /// and the flags do not forbid it), with the generation the session
    /// has seen, and subscribes to its events.
    async fn reconnect(&self, conn: &mut Conn, autostart: bool) -> Result<(), CommandError> {
        let seen = conn.client.seen_generation();
        let mut g = self.global.clone();
        g.seen_generation = Some(seen);
        let mut pause = Duration::from_millis(50);
        let client = loop {
            let attempt = async {
                let mut client = crate::commands::connect(&g, autostart).await?;
                client.subscribe().await?;
                Ok::<_, CommandError>(client)
            };
            match attempt.await {
                Ok(client) => break client,
                // A dying daemon's socket can still take a connection and
                // then drop it: try again, briefly.
                Err(e) if broke(&e, true).is_some() && pause < Duration::from_secs(2) => {
                    tracing::debug!(error = %e.message(), "connecting again failed; retrying");
                    tokio::time::sleep(pause).await;
                    pause *= 2;
                }
                Err(e) => return Err(e),
            }
        };
        tracing::warn!(
            seen_generation = seen,
            session = %client.welcome().session_id,
            "connected to the daemon again"
        );
        conn.client = client;
        conn.broken = false;
        Ok(())
    }

    async fn once(&self, client: &mut Client, job: &Job) -> Result<Reply, CommandError> {
        let result = match job {
            Job::Command(c) => crate::commands::execute((**c).clone(), client, &self.paths, false)
                .await
                .map(|out| Reply::Json(out.json)),
            Job::Inject => crate::commands::cites::inject(client, None)
                .await
                .map(|i| Reply::Block(i.block)),
        };
        self.collect_pushes(client);
        result
    }

    /// Runs one request, connecting again first when the connection is
    /// gone, and once more on a new connection when it breaks under a
    /// request that is safe to repeat.
    async fn request(&self, job: Job) -> Result<Reply, CommandError> {
        let mut conn = self.lock().await;
        if conn.broken {
            self.reconnect(&mut conn, true).await?;
        }
        let e = match self.once(&mut conn.client, &job).await {
            Ok(r) => return Ok(r),
            Err(e) => e,
        };
        let Some(how) = broke(&e, conn.client.last_request_written()) else {
            return Err(e);
        };
        tracing::warn!(error = %e.message(), "the daemon connection broke; connecting again");
        conn.broken = true;
        let reconnected = self.reconnect(&mut conn, true).await;
        if how == Broke::InFlight && !job.repeatable() {
            return Err(maybe_applied(&e, reconnected.as_ref().copied()));
        }
        reconnected?;
        let again = self.once(&mut conn.client, &job).await;
        if let Err(e) = &again
            && broke(e, conn.client.last_request_written()).is_some()
        {
            conn.broken = true;
        }
        again
    }

    /// Runs one CLI command over the session.
    async fn run(&self, command: Command) -> Result<Value, CommandError> {
        match self.request(Job::Command(Box::new(command))).await? {
            Reply::Json(v) => Ok(v),
            Reply::Block(_) => Err(CommandError::Io("unexpected answer".into())),
        }
    }

    /// Stores the user's own memory (`memory_store` with `personal`): in a
    /// session of `@me` of its own, so this session's frozen block does not
    /// change (the next session shows it).
    async fn run_personal(&self, command: Command) -> Result<Value, CommandError> {
        let mut g = self.global.clone();
        g.namespace = Some(memd_client::proto::PERSONAL_NAMESPACE.into());
        g.previous_namespaces.clear();
        g.session = None;
        g.seen_generation = None;
        let mut client = crate::commands::connect(&g, true).await?;
        crate::commands::execute(command, &mut client, &self.paths, false)
            .await
            .map(|out| out.json)
    }

    async fn inject(&self) -> Result<String, CommandError> {
        match self.request(Job::Inject).await? {
            Reply::Block(b) => Ok(b),
            Reply::Json(_) => Err(CommandError::Io("unexpected answer".into())),
        }
    }
}

/// Waits for the daemon's events whenever no request needs the connection;
/// when it is gone, looks for a daemon that is back (never starting one).
async fn pump(session: Arc<Session>) {
    let mut pause = Duration::from_millis(200);
    loop {
        let mut conn = session.link.lock().await;
        session.collect_pushes(&mut conn.client);
        if conn.broken {
            if session.reconnect(&mut conn, false).await.is_ok() {
                pause = Duration::from_millis(200);
                continue;
            }
            drop(conn);
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                () = session.wanted.notified() => tokio::task::yield_now().await,
            }
            pause = (pause * 2).min(Duration::from_secs(5));
            continue;
        }
        tokio::select! {
            event = conn.client.next_event() => {
                match event {
                    Ok(Event::Drift(e)) => {
                        drop(conn);
                        session.drift(e);
                    }
                    Ok(Event::Similar(e)) => {
                        drop(conn);
                        session.similar(e);
                    }
                    Ok(Event::Purged(e)) => {
                        drop(conn);
                        session.purged(&e);
                    }
                    Err(e) => {
                        conn.broken = true;
                        drop(conn);
                        tracing::warn!(error = %e, "the daemon connection ended; connecting again at the next request");
                    }
                }
            }
            () = session.wanted.notified() => {
                drop(conn);
                // The mutex is fair: the request that asked gets it first.
                tokio::task::yield_now().await;
            }
        }
    }
}

/// Sends resource-updated notifications to the host's legacy
/// subscriptions.
async fn notify_subscribers(session: Arc<Session>) {
    let mut rx = session.events.subscribe();
    loop {
        let changed: Vec<Changed> = match rx.recv().await {
            Ok(c) => vec![c],
            Err(broadcast::error::RecvError::Lagged(_)) => vec![Changed::Drift, Changed::Similar],
            Err(broadcast::error::RecvError::Closed) => return,
        };
        let (peer, uris) = {
            let subs = sync::lock(&session.subscribers);
            (subs.peer.clone(), subs.uris.clone())
        };
        let Some(peer) = peer else { continue };
        for uri in uris {
            if !changed.iter().any(|c| c.touches(&uri)) {
                continue;
            }
            if let Err(e) = peer
                .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri))
                .await
            {
                tracing::debug!(error = %e, "cannot notify the host");
            }
        }
    }
}

/// The rmcp handler.
#[derive(Clone)]
struct Memd {
    session: Arc<Session>,
}

/// Serves the host on stdin/stdout until it closes them.
pub async fn serve(mut client: Client, global: Global) -> Result<(), String> {
    client
        .subscribe()
        .await
        .map_err(|e| format!("cannot subscribe to drift events: {e}"))?;
    let (events, _) = broadcast::channel(64);
    let session = Arc::new(Session {
        link: tokio::sync::Mutex::new(Conn {
            client,
            broken: false,
        }),
        wanted: Notify::new(),
        paths: crate::commands::client_paths(&global),
        global,
        events,
        last_drift: Mutex::new(None),
        similar: Mutex::default(),
        subscribers: Mutex::default(),
    });
    let pump = tokio::spawn(pump(session.clone()));
    let notifier = tokio::spawn(notify_subscribers(session.clone()));
    let handler = Memd {
        session: session.clone(),
    };
    let result = match handler.serve(rmcp::transport::stdio()).await {
        Ok(running) => running
            .waiting()
            .await
            .map(|_| ())
            .map_err(|e| format!("the MCP service failed: {e}")),
        Err(e) => Err(format!("MCP initialization failed: {e}")),
    };
    pump.abort();
    notifier.abort();
    result
}

fn tool_list() -> Vec<Tool> {
    tools::specs()
        .into_iter()
        .map(|spec| {
            let schema = match spec.schema {
                Value::Object(map) => map,
                _ => Default::default(),
            };
            let mut tool = Tool::new(spec.name, spec.description, Arc::new(schema));
            tool.annotations = Some(
                ToolAnnotations::new()
                    .read_only(spec.read_only)
                    .destructive(spec.destructive)
                    .open_world(false),
            );
            tool
        })
        .collect()
}

fn resources() -> Vec<Resource> {
    vec![
        Resource::new(INJECT_URI, "memory block")
            .with_title("This session's memory block")
            .with_description(
                "The memories this session should keep in mind, rendered for the prompt. \
                 Frozen: the same bytes at every read (so a prompt cache stays warm) until \
                 this session stores, changes or forgets a memory or calls memory_compacted.",
            )
            .with_mime_type("text/markdown"),
        Resource::new(DRIFT_URI, "external changes")
            .with_title("Changes made outside memd")
            .with_description(
                "JSON: whether the memory database was changed outside memd (another tool, a \
                 sqlite3 shell, a restore) since this session began, and the last such change. \
                 Subscribe to it (or to memory://inject) to be notified when that happens.",
            )
            .with_mime_type("application/json"),
        Resource::new(SIMILAR_URI, "near duplicates")
            .with_title("Memories that say nearly the same thing")
            .with_description(
                "JSON: the last semantic near duplicates the daemon found in this namespace since \
                 this session began — a newer memory (id) whose meaning is close to an older one \
                 (similar_to), and whether the older one was superseded. Nothing is merged. \
                 Subscribe to it to be notified of each new one.",
            )
            .with_mime_type("application/json"),
    ]
}

fn error_result(e: &CommandError) -> CallToolResult {
    CallToolResult::structured_error(e.json())
}

impl ServerHandler for Memd {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .enable_tools()
                .build(),
        )
        .with_server_info(Implementation::new("memd", env!("CARGO_PKG_VERSION")))
        .with_instructions(INSTRUCTIONS)
    }

    fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, ErrorData>> + MaybeSendFuture + '_ {
        std::future::ready(Ok(ListToolsResult::with_all_items(tool_list())))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tool_list().into_iter().find(|t| t.name == name)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let args = request.arguments.unwrap_or_default();
        let query = args
            .get("query")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string);
        let command = match tools::command(&request.name, args) {
            Ok(c) => c,
            Err(ToolError::Unknown(name)) => {
                return Err(ErrorData::invalid_params(
                    format!("no tool named `{name}`"),
                    None,
                ));
            }
            Err(ToolError::Arguments(message)) => {
                return Ok(error_result(&CommandError::Usage(message)).into());
            }
        };
        let personal = matches!(&command, Command::Add(a) if a.personal);
        let ran = if personal {
            self.session.run_personal(command).await
        } else {
            self.session.run(command).await
        };
        let result = match ran {
            Ok(value) => {
                CallToolResult::structured(tools::compact(&request.name, query.as_deref(), value))
            }
            Err(e) => error_result(&e),
        };
        Ok(result.into())
    }

    fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListResourcesResult, ErrorData>> + MaybeSendFuture + '_ {
        std::future::ready(Ok(ListResourcesResult::with_all_items(resources())))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let contents = match request.uri.as_str() {
            INJECT_URI => {
                let block = self
                    .session
                    .inject()
                    .await
                    .map_err(|e| ErrorData::internal_error(e.message(), Some(e.json())))?;
                ResourceContents::TextResourceContents {
                    uri: INJECT_URI.into(),
                    mime_type: Some("text/markdown".into()),
                    text: block,
                    meta: None,
                }
            }
            DRIFT_URI => ResourceContents::TextResourceContents {
                uri: DRIFT_URI.into(),
                mime_type: Some("application/json".into()),
                text: self.session.drift_json().to_string(),
                meta: None,
            },
            SIMILAR_URI => ResourceContents::TextResourceContents {
                uri: SIMILAR_URI.into(),
                mime_type: Some("application/json".into()),
                text: self.session.similar_json().to_string(),
                meta: None,
            },
            other => {
                return Err(ErrorData::resource_not_found(
                    format!(
                        "no resource `{other}`; memd has {INJECT_URI}, {DRIFT_URI} and \
                         {SIMILAR_URI}"
                    ),
                    None,
                ));
            }
        };
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<ListPromptsResult, ErrorData>> + MaybeSendFuture + '_ {
        let prompt = Prompt::new(
            PROMPT,
            Some(
                "This session's memory block (the same bytes as memory://inject), to put \
                 into the context.",
            ),
            None,
        );
        std::future::ready(Ok(ListPromptsResult::with_all_items(vec![prompt])))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        if request.name != PROMPT {
            return Err(ErrorData::invalid_params(
                format!("no prompt `{}`; memd has `{PROMPT}`", request.name),
                None,
            ));
        }
        let block = self
            .session
            .inject()
            .await
            .map_err(|e| ErrorData::internal_error(e.message(), Some(e.json())))?;
        let mut result = GetPromptResult::new(vec![PromptMessage::new_text(Role::User, block)]);
        result.description = Some("memd memory block".into());
        Ok(result.into())
    }

    #[allow(deprecated)]
    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        let result = if URIS.contains(&request.uri.as_str()) {
            let mut subs = sync::lock(&self.session.subscribers);
            subs.peer = Some(context.peer.clone());
            subs.uris.insert(request.uri);
            Ok(())
        } else {
            Err(ErrorData::resource_not_found(
                format!("no resource `{}`", request.uri),
                None,
            ))
        };
        std::future::ready(result)
    }

    #[allow(deprecated)]
    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        sync::lock(&self.session.subscribers)
            .uris
            .remove(&request.uri);
        std::future::ready(Ok(()))
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let uris: Vec<String> = requested
            .resource_subscriptions
            .iter()
            .flatten()
            .filter(|u| URIS.contains(&u.as_str()))
            .cloned()
            .collect();
        Some(
            SubscriptionFilter::builder()
                .resource_subscriptions(uris)
                .build(),
        )
    }

    fn listen(
        &self,
        context: SubscriptionContext,
    ) -> impl Future<Output = Result<(), ErrorData>> + MaybeSendFuture + '_ {
        let mut rx = self.session.events.subscribe();
        async move {
            let uris = context
                .accepted()
                .resource_subscriptions
                .clone()
                .unwrap_or_default();
            loop {
                tokio::select! {
                    () = context.cancelled() => return Ok(()),
                    event = rx.recv() => {
                        let changed = match event {
                            Ok(c) => vec![c],
                            Err(broadcast::error::RecvError::Lagged(_)) => {
                                vec![Changed::Drift, Changed::Similar]
                            }
                            Err(broadcast::error::RecvError::Closed) => return Ok(()),
                        };
                        for uri in &uris {
                            if !changed.iter().any(|c| c.touches(uri)) {
                                continue;
                            }
                            if let Err(e) = context.sink().notify_resource_updated(uri.clone()).await {
                                tracing::debug!(error = %e, "cannot notify the subscription");
                            }
                        }
                    }
                }
            }
        }
    }
}
