//! The web viewer: pages rendered on the server from the same request
//! handlers as the API (so reading works with JavaScript off), and two
//! embedded assets (`app.css`, `app.js`) that make them live: search as you
//! type, keyboard navigation, live updates by the event stream, editing
//! and forgetting through the drift guard. No CDN, no build step.
//!
//! # Layout
//! - this file: what every page shares (the answer, the person's caller,
//!   the daemon's status) and the assets;
//! - one file per page: `index` (`/`), `memory` (`/m/{id}`), `sessions`,
//!   `drift`, `team` — each what its page reads and its render functions;
//! - [`page`]: the frame, escaping, the pieces pages share.

mod drift;
mod index;
mod memory;
pub mod page;
mod sessions;
mod team;

pub use drift::drift;
pub use index::index;
pub use memory::memory;
pub use sessions::{session, sessions};
pub use team::team;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response as HttpResponse};
use memd_proto::{Request, Response, StatusRequest};
use serde_json::Value;

use super::App;
use super::caller::Caller;
use super::problem::Problem;
use page::{Here, Tab, esc, frame};

/// Memories per page of the start page.
pub const PAGE: u32 = 50;

/// The stylesheet.
const CSS: &str = include_str!("app.css");
/// The script.
const JS: &str = include_str!("app.js");

fn html(body: String) -> HttpResponse {
    let mut r = body.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

fn asset(body: &'static str, kind: &'static str) -> HttpResponse {
    let mut r = body.into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    r
}

/// `GET /assets/app.css`.
pub async fn css() -> HttpResponse {
    asset(CSS, "text/css; charset=utf-8")
}

/// `GET /assets/app.js`.
pub async fn js() -> HttpResponse {
    asset(JS, "text/javascript; charset=utf-8")
}

/// A page that could not be made: the problem, as a page.
fn failed(here: &Here, p: &Problem) -> HttpResponse {
    let status = StatusCode::from_u16(p.body()["status"].as_u64().unwrap_or(500) as u16)
        .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let detail = p.body()["detail"].as_str().unwrap_or("error");
    let title = status.canonical_reason().unwrap_or("Error");
    let body = format!(
        "<section class=\"notice\"><h1>{}</h1><p>{}</p><p><a href=\"./\">Back to the memories</a></p></section>",
        esc(title),
        esc(detail)
    );
    (status, html(frame(here, title, Tab::None, &body))).into_response()
}

/// A person's view: every namespace and every owner's memories.
fn person() -> Caller {
    Caller::default()
}

async fn status(app: &App) -> Result<Value, Problem> {
    let Response::Status(s) = person()
        .run(app, Request::Status(StatusRequest {}), None)
        .await?
    else {
        return Err(super::memories::unexpected());
    };
    serde_json::from_str(&s.json).map_err(|_| super::memories::unexpected())
}
