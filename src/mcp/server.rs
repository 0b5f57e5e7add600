//! The MCP handler over one memd session.
//!
//! The session's [`Client`] sits behind a fair mutex. Tool calls and
//! resource reads take it for one request each. Between them, an event pump
//! holds it while waiting for the daemon's pushed drift events (the
//! client's `next_event` is cancel safe) and lets go as soon as a request
//! wants it; pushes that arrive during a request are collected after it.
//! Each drift event is forwarded to the host as
//! `notifications/resources/updated` — to legacy `resources/subscribe`
//! subscribers and to `subscriptions/listen` streams alike.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use memd_client::Client;
use memd_client::proto::{DriftEvent, Event, Response};
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
use crate::cli::CliError;
use crate::config::Paths;

/// The frozen memory block.
pub const INJECT_URI: &str = "memory://inject";
/// The last change made outside memd.
pub const DRIFT_URI: &str = "memory://drift";
const PROMPT: &str = "memory";

const INSTRUCTIONS: &str = "memd is a persistent memory shared by every session and agent on \
    this machine. At the start of a task, read the resource memory://inject (or the prompt \
    `memory`): it is this session's memory block, and stays byte-for-byte the same until you \
    call memory_compacted. Search (memory_search) before answering questions earlier sessions \
    may have settled; store (memory_store) durable facts, decisions and preferences you learn, \
    one statement each. If a write is refused with code `drift`, the memory changed outside \
    this session: read it again (memory_get), then retry.";

/// The session and what listens to it.
struct Session {
    client: tokio::sync::Mutex<Client>,
    /// A request wants the client: the event pump lets go.
    wanted: Notify,
    paths: Paths,
    events: broadcast::Sender<DriftEvent>,
    last_drift: Mutex<Option<(DriftEvent, u64)>>,
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
    /// Takes the client for one request.
    async fn lock(&self) -> tokio::sync::MutexGuard<'_, Client> {
        self.wanted.notify_one();
        self.client.lock().await
    }

    /// Forwards pushes that arrived while a request ran.
    fn collect_pushes(&self, client: &mut Client) {
        for push in client.take_pushes() {
            if let Response::Event(Event::Drift(e)) = push {
                self.drift(e);
            }
        }
    }

    fn drift(&self, event: DriftEvent) {
        {
            let mut last = self.last_drift.lock().unwrap_or_else(|e| e.into_inner());
            let count = last.as_ref().map_or(0, |(_, n)| *n) + 1;
            *last = Some((event.clone(), count));
        }
        tracing::info!(generation = event.generation, "memory changed outside memd");
        let _ = self.events.send(event);
    }

    fn drift_json(&self) -> Value {
        let last = self.last_drift.lock().unwrap_or_else(|e| e.into_inner());
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

    /// Runs one CLI command over the session.
    async fn run(&self, command: crate::cli::args::Command) -> Result<Value, CliError> {
        let mut client = self.lock().await;
        let result = crate::cli::execute(command, &mut client, &self.paths, false).await;
        self.collect_pushes(&mut client);
        result.map(|out| out.json)
    }

    async fn inject(&self) -> Result<String, CliError> {
        let mut client = self.lock().await;
        let result = client.inject().await;
        self.collect_pushes(&mut client);
        Ok(result?.block)
    }
}

/// Waits for drift events whenever no request needs the client.
async fn pump(session: Arc<Session>) {
    loop {
        let mut client = session.client.lock().await;
        session.collect_pushes(&mut client);
        tokio::select! {
            event = client.next_event() => {
                drop(client);
                match event {
                    Ok(Event::Drift(e)) => session.drift(e),
                    // A semantic near duplicate: the tools report it on the
                    // next search; nothing to notify.
                    Ok(Event::Similar(_)) => {}
                    Err(e) => {
                        tracing::warn!(error = %e, "the daemon connection ended; no more drift events");
                        return;
                    }
                }
            }
            _ = session.wanted.notified() => {
                drop(client);
                // The mutex is fair: the request that asked gets it first.
                tokio::task::yield_now().await;
            }
        }
    }
}

/// Sends drift events to the host's legacy subscriptions.
async fn notify_subscribers(session: Arc<Session>) {
    let mut rx = session.events.subscribe();
    loop {
        match rx.recv().await {
            Ok(_) => {}
            Err(broadcast::error::RecvError::Lagged(_)) => {}
            Err(broadcast::error::RecvError::Closed) => return,
        }
        let (peer, uris) = {
            let subs = session
                .subscribers
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            (subs.peer.clone(), subs.uris.clone())
        };
        let Some(peer) = peer else { continue };
        for uri in uris {
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
pub async fn serve(mut client: Client, paths: Paths) -> Result<(), String> {
    client
        .subscribe()
        .await
        .map_err(|e| format!("cannot subscribe to drift events: {e}"))?;
    let (events, _) = broadcast::channel(64);
    let session = Arc::new(Session {
        client: tokio::sync::Mutex::new(client),
        wanted: Notify::new(),
        paths,
        events,
        last_drift: Mutex::new(None),
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
    ]
}

fn error_result(e: &CliError) -> CallToolResult {
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
        let command = match tools::command(&request.name, args) {
            Ok(c) => c,
            Err(ToolError::Unknown(name)) => {
                return Err(ErrorData::invalid_params(
                    format!("no tool named `{name}`"),
                    None,
                ));
            }
            Err(ToolError::Arguments(message)) => {
                return Ok(error_result(&CliError::Usage(message)).into());
            }
        };
        let result = match self.session.run(command).await {
            Ok(value) => CallToolResult::structured(value),
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
            other => {
                return Err(ErrorData::resource_not_found(
                    format!("no resource `{other}`; memd has {INJECT_URI} and {DRIFT_URI}"),
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
        let result = if request.uri == INJECT_URI || request.uri == DRIFT_URI {
            let mut subs = self
                .session
                .subscribers
                .lock()
                .unwrap_or_else(|e| e.into_inner());
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
        self.session
            .subscribers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
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
            .filter(|u| *u == INJECT_URI || *u == DRIFT_URI)
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
                    _ = context.cancelled() => return Ok(()),
                    event = rx.recv() => match event {
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                            for uri in &uris {
                                if let Err(e) = context.sink().notify_resource_updated(uri.clone()).await {
                                    tracing::debug!(error = %e, "cannot notify the subscription");
                                }
                            }
                        }
                        Err(broadcast::error::RecvError::Closed) => return Ok(()),
                    },
                }
            }
        }
    }
}
