//! Who a request comes from, and the session it runs in.
//!
//! `Memd-Namespace` (or the `namespace` query parameter) names the
//! namespace; `Memd-Session` joins that named session of the namespace (its
//! read set and seen generation, as the CLI's `--session`); `Memd-Agent`
//! names the agent. A request without a session runs in a session of its
//! own that ends with it; one without a namespace reads every namespace,
//! and one without an agent or session sees every agent's and session's
//! rows (a person's view) — see [`Reach`].

use std::sync::Arc;

use axum::http::HeaderMap;
use memd_proto::{Hello, Request, Response};

use super::App;
use super::problem::Problem;
use crate::session::Session;
use crate::session::ident::{Reach, Who};

/// The agent of a request that names none.
pub const DEFAULT_AGENT: &str = "http";

/// What a request says of itself.
#[derive(Debug, Clone, Default)]
pub struct Caller {
    /// `Memd-Namespace` or `namespace=`.
    pub namespace: Option<String>,
    /// `Memd-Session`.
    pub session: Option<String>,
    /// `Memd-Agent`.
    pub agent: Option<String>,
    /// `Memd-Client: viewer`: the viewer, a person's (provenance). Only a
    /// request of a browser session carries it: `guard::handle` sets it
    /// there and removes it from every other request.
    pub viewer: bool,
}

fn header(headers: &HeaderMap, name: &str) -> Result<Option<String>, Problem> {
    let Some(v) = headers.get(name) else {
        return Ok(None);
    };
    let text = std::str::from_utf8(v.as_bytes())
        .map_err(|_| Problem::bad(format!("header {name} is not UTF-8")))?
        .trim()
        .to_string();
    if text.is_empty() {
        return Err(Problem::bad(format!("header {name} is empty")));
    }
    Ok(Some(text))
}

impl Caller {
    /// From a request's headers and its `namespace=` parameter.
    ///
    /// # Errors
    /// 400 for a header that is not UTF-8 or is empty, or two different
    /// namespaces.
    pub fn from(headers: &HeaderMap, namespace_param: Option<String>) -> Result<Caller, Problem> {
        let header_ns = header(headers, "memd-namespace")?;
        let namespace = match (header_ns, namespace_param) {
            (Some(a), Some(b)) if a != b => {
                return Err(Problem::bad(format!(
                    "Memd-Namespace `{a}` and namespace=`{b}` disagree"
                )));
            }
            (a, b) => a.or(b).filter(|n| !n.trim().is_empty()),
        };
        let caller = Caller {
            namespace,
            session: header(headers, "memd-session")?,
            agent: header(headers, "memd-agent")?,
            viewer: header(headers, "memd-client")?.as_deref() == Some("viewer"),
        };
        if caller.session.is_some() && caller.namespace.is_none() {
            return Err(Problem::bad(
                "a session is named within a namespace: give Memd-Namespace with Memd-Session",
            ));
        }
        Ok(caller)
    }

    /// The same caller in `namespace` (a change by id, once its memory's
    /// namespace is known).
    pub fn in_namespace(&self, namespace: &str) -> Caller {
        Caller {
            namespace: Some(namespace.to_string()),
            ..self.clone()
        }
    }

    /// How far this caller's reads reach.
    pub fn reach(&self) -> Reach {
        Reach {
            every_namespace: self.namespace.is_none(),
            every_owner: self.agent.is_none() && self.session.is_none(),
        }
    }

    /// Opens the session this request runs in.
    ///
    /// # Errors
    /// 400 for a name the session rules refuse.
    pub fn open(&self, app: &App) -> Result<Session, Problem> {
        let shared = &app.shared;
        let namespace = self.namespace.clone().unwrap_or_else(|| "default".into());
        let hello = Hello {
            protocol: memd_proto::PROTOCOL_VERSION,
            client_version: format!(
                "{}/{}",
                if self.viewer { "viewer" } else { "http" },
                env!("CARGO_PKG_VERSION")
            ),
            agent_id: self.agent.clone().unwrap_or_else(|| DEFAULT_AGENT.into()),
            namespace,
            policy: None,
            budget: None,
            seen_generation: None,
            session: self.session.clone(),
            hold_block: false,
            previous_namespaces: Vec::new(),
        };
        let config = shared.config();
        let mut session = Session::open(
            &hello,
            shared.store.generations.current(),
            config.drift.policy,
            config.inject.budget_chars,
            config.drift.read_set_rows,
            &shared.named,
        )
        .map_err(Problem::bad)?;
        let reach = self.reach();
        if session.named.is_none() && reach != Reach::default() {
            let who = Who {
                reach,
                ..(*session.who).clone()
            };
            session.who = Arc::new(who);
        }
        Ok(session)
    }

    /// Runs `req` in this caller's session, after recording `read` — the
    /// request's own read of a row (`If-Match`: id, rev) — in its read set;
    /// the session ends with the request unless it is named.
    ///
    /// # Errors
    /// The daemon's refusal, as a problem.
    pub async fn run(
        &self,
        app: &App,
        req: Request,
        read: Option<(i64, i64)>,
    ) -> Result<Response, Problem> {
        let shared = &app.shared;
        let mut session = self.open(app)?;
        crate::handler::began(shared, &session);
        if let Some((id, rev)) = read {
            session.shown(shared.store.generations.current(), [(id, rev)]);
        }
        let resp = crate::handler::dispatch(req, &mut session, shared).await;
        crate::handler::ended(shared, &session).await;
        match resp {
            Response::Error(e) => Err(Problem::from_body(&e)),
            other => Ok(other),
        }
    }
}
