//! The HTTP/1.1 JSON API: a second codec and a router onto the request
//! handlers that already exist (`handler::dispatch`), so no rule — the
//! drift guard, the write gate, the frozen block, team memory — is
//! implemented twice (ARCHITECTURE.md "HTTP").
//!
//! It is served on the daemon's own Unix socket (a connection whose first
//! bytes are a request line is HTTP, see `daemon::connection`), with the
//! socket's peer-credential check.
//!
//! # Layout
//! - [`io`]: the stream under a connection (the bytes read to tell the
//!   protocol, a bound on each write);
//! - [`problem`]: errors as `application/problem+json`, and the one table of
//!   which error code gets which status;
//! - [`caller`]: who a request comes from (`Memd-Namespace`,
//!   `Memd-Session`, `Memd-Agent`) and the session it runs in;
//! - [`params`]: query strings and JSON bodies, strictly;
//! - [`memories`], [`sessions`], [`events`], [`meta`]: the resources;
//! - [`openapi`]: the OpenAPI document, held against [`router`] by a test;
//! - [`ui`]: the web viewer's pages and assets;
//! - [`guard`]: what every request passes before the router: a deadline on
//!   its body, and on the viewer's loopback listener the browser rules
//!   (login codes, browser sessions under their own path, the bearer
//!   token, Host, Origin, security headers).

pub mod caller;
pub mod events;
pub mod guard;
pub mod io;
pub mod memories;
pub mod meta;
pub mod openapi;
pub mod params;
pub mod problem;
pub mod sessions;
pub mod ui;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use memd_proto::ErrorCode;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::state::Shared;
use crate::state::shutdown::triggered;
use problem::Problem;

/// Where a connection came in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Door {
    /// The daemon's Unix socket (peer credentials checked).
    Socket,
    /// The viewer's loopback listener on this port: the browser rules of
    /// [`guard`] apply.
    Loopback {
        /// The listener's port (the cookie is named after it).
        port: u16,
    },
}

/// What every route sees.
#[derive(Clone)]
pub struct App {
    /// The daemon's shared state.
    pub shared: Arc<Shared>,
    /// Where the connection came in.
    pub door: Door,
    /// Set once the connection carried a request with a credential (a
    /// browser session, the bearer token, a login code): the listener
    /// never closes such a connection to make room for another.
    pub authenticated: Arc<AtomicBool>,
}

/// The largest request head (request line and headers) read, in bytes: a
/// longer query string is refused.
pub const MAX_HEAD_BYTES: usize = 64 * 1024;

/// Every route of the API: the one list, which the OpenAPI document and
/// the router are checked against.
#[cfg(test)]
pub const ROUTES: &[(&str, &[&str])] = &[
    ("/v1/status", &["get"]),
    ("/v1/memories", &["get", "post"]),
    ("/v1/memories/{id}", &["get", "patch", "delete"]),
    ("/v1/memories/{id}/history", &["get"]),
    ("/v1/memories/{id}/supersede", &["post"]),
    ("/v1/memories/{id}/task", &["post"]),
    ("/v1/memories/{id}/confirm", &["post"]),
    ("/v1/sessions", &["get"]),
    ("/v1/sessions/{namespace}/{name}", &["get", "delete"]),
    ("/v1/sessions/{namespace}/{name}/inject", &["post"]),
    ("/v1/sessions/{namespace}/{name}/compacted", &["post"]),
    ("/v1/sessions/{namespace}/{name}/refresh", &["post"]),
    ("/v1/events", &["get"]),
    ("/v1/drift", &["get"]),
    ("/v1/team", &["get"]),
    ("/v1/purge", &["post"]),
    ("/v1/openapi.json", &["get"]),
];

/// The API's router.
pub fn router(app: App) -> Router {
    Router::new()
        .route("/v1/status", get(meta::status))
        .route("/v1/memories", get(memories::list).post(memories::create))
        .route(
            "/v1/memories/{id}",
            get(memories::read)
                .patch(memories::change)
                .delete(memories::forget),
        )
        .route("/v1/memories/{id}/history", get(memories::history))
        .route("/v1/memories/{id}/supersede", post(memories::supersede))
        .route("/v1/memories/{id}/task", post(memories::task))
        .route("/v1/memories/{id}/confirm", post(memories::confirm))
        .route("/v1/sessions", get(sessions::list))
        .route(
            "/v1/sessions/{namespace}/{name}",
            get(sessions::show).delete(sessions::end),
        )
        .route(
            "/v1/sessions/{namespace}/{name}/inject",
            post(sessions::inject),
        )
        .route(
            "/v1/sessions/{namespace}/{name}/compacted",
            post(sessions::compacted),
        )
        .route(
            "/v1/sessions/{namespace}/{name}/refresh",
            post(sessions::refresh),
        )
        .route("/v1/events", get(events::stream))
        .route("/v1/drift", get(meta::drift))
        .route("/v1/team", get(meta::team))
        .route("/v1/purge", post(memories::purge))
        .route("/v1/openapi.json", get(openapi::document))
        .route("/", get(ui::index))
        .route("/m/{id}", get(ui::memory))
        .route("/sessions", get(ui::sessions))
        .route("/sessions/{namespace}/{name}", get(ui::session))
        .route("/drift", get(ui::drift))
        .route("/team", get(ui::team))
        .route("/assets/app.css", get(ui::css))
        .route("/assets/app.js", get(ui::js))
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(axum::extract::DefaultBodyLimit::max(
            memd_proto::MAX_FRAME_LEN,
        ))
        .with_state(app)
}

async fn not_found() -> Problem {
    Problem::new(
        axum::http::StatusCode::NOT_FOUND,
        "not_found",
        "no such resource: the API is under /v1 (GET /v1/openapi.json lists it)",
    )
}

async fn method_not_allowed() -> Problem {
    Problem::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "invalid_input",
        "this resource does not answer that method (GET /v1/openapi.json lists what it does)",
    )
}

/// Serves one HTTP connection whose first bytes (`first`) were read already,
/// until the client leaves or the daemon stops (then the request in flight
/// finishes and event streams end at once). Each request passes
/// [`guard::handle`] before the router; `authenticated` is set once one
/// carried a credential.
pub async fn serve<S>(
    stream: S,
    first: Vec<u8>,
    shared: Arc<Shared>,
    door: Door,
    authenticated: Arc<AtomicBool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let limits = shared.config().limits.clone();
    let mut stop = shared.shutdown.subscribe();
    let io = io::Io::new(
        stream,
        first,
        Duration::from_millis(limits.write_timeout_ms),
    );
    tracing::debug!(?door, "HTTP connection");
    let app = App {
        shared,
        door,
        authenticated,
    };
    let routes = router(app.clone());
    let service = hyper::service::service_fn(move |req: axum::http::Request<Incoming>| {
        let (app, routes) = (app.clone(), routes.clone());
        async move {
            let req = req.map(axum::body::Body::new);
            Ok::<_, std::convert::Infallible>(guard::handle(app, routes, req).await)
        }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(Duration::from_millis(limits.handshake_timeout_ms))
        .max_buf_size(MAX_HEAD_BYTES.max(8192))
        // Head and body in one write: a client that reads the head first
        // is not woken twice per answer (a search's p50 moved from 1.5x
        // the binary protocol's to within its noise).
        .writev(false);
    let conn = builder.serve_connection(TokioIo::new(io), service);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                tracing::debug!(error = %e, "HTTP connection ended");
            }
        }
        () = triggered(&mut stop) => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(10), conn).await;
        }
    }
}

/// Answers a refused HTTP peer (another user, too many connections) with a
/// problem: no session exists, nothing is run.
pub async fn refuse<S>(stream: S, first: Vec<u8>, code: ErrorCode, message: String)
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let body = memd_proto::ErrorBody::new(code, message);
    let service = hyper::service::service_fn(move |_req| {
        let body = body.clone();
        async move {
            use axum::response::IntoResponse;
            let mut r = Problem::from_body(&body).into_response();
            r.headers_mut().insert(
                axum::http::header::CONNECTION,
                axum::http::HeaderValue::from_static("close"),
            );
            Ok::<_, std::convert::Infallible>(r)
        }
    });
    let io = io::Io::new(stream, first, Duration::from_secs(2));
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(false)
        .serve_connection(TokioIo::new(io), service);
    let _ = tokio::time::timeout(Duration::from_secs(5), conn).await;
}

/// memd's own readers of one request's parts (for the fuzz target): the
/// query string, who asks, `If-Match`, the path's id and a JSON body. Every
/// refusal must be a problem with a 4xx status, a `code` and a `detail`.
pub fn fuzz_one(headers: &axum::http::HeaderMap, path: &str, query: Option<&str>, body: &[u8]) {
    fn check<T>(r: Result<T, Problem>) {
        if let Err(p) = r {
            let b = p.body();
            let status = b["status"].as_u64().unwrap_or(0);
            assert!((400..500).contains(&status), "{b:?}");
            assert!(b["code"].is_string() && b["detail"].is_string(), "{b:?}");
        }
    }
    let params = params::Params::parse(query, memories::LIST_PARAMS);
    if let Ok(p) = &params {
        check(memories::filter(p));
        check(p.number::<u32>("limit"));
        check(p.flag("include_superseded"));
        check(
            p.one("namespace")
                .and_then(|ns| caller::Caller::from(headers, ns)),
        );
    }
    check(params);
    check(memories::if_match(headers));
    if let Some(id) = path.strip_prefix("/v1/memories/") {
        check(params::id(id.trim_end_matches("/history")));
    }
    let bytes = axum::body::Bytes::copy_from_slice(body);
    check(params::json_as::<memd_proto::AddRequest>(
        headers,
        Ok(bytes.clone()),
        &[],
    ));
    check(params::json_as::<memd_proto::UpdateRequest>(
        headers,
        Ok(bytes),
        &["id", "expect_rev"],
    ));
}
