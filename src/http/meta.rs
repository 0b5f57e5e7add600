//! `/v1/status`, `/v1/drift` and `/v1/team`: what `memd status --json`
//! shows, whole or by part.

use axum::Json;
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use memd_proto::{Request, Response, StatusRequest};
use serde_json::{Value, json};

use super::App;
use super::caller::Caller;
use super::memories::unexpected;
use super::params::Params;
use super::problem::Problem;

async fn status_json(
    app: &App,
    headers: &HeaderMap,
    query: Option<&str>,
) -> Result<Value, Problem> {
    let p = Params::parse(query, &["namespace"])?;
    let caller = Caller::from(headers, p.one("namespace")?)?;
    let Response::Status(s) = caller
        .run(app, Request::Status(StatusRequest {}), None)
        .await?
    else {
        return Err(unexpected());
    };
    serde_json::from_str(&s.json).map_err(|_| unexpected())
}

/// `GET /v1/status`: the daemon's status, as `memd status --json`.
pub async fn status(
    State(app): State<App>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, Problem> {
    Ok(Json(status_json(&app, &headers, query.as_deref()).await?))
}

/// `GET /v1/drift`: the drift guard's state, the recent drift events and
/// the drift backups kept.
pub async fn drift(
    State(app): State<App>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, Problem> {
    let mut s = status_json(&app, &headers, query.as_deref()).await?;
    let mut drift = s["drift"].take();
    drift["generation"] = s["generation"].take();
    Ok(Json(drift))
}

/// `GET /v1/team`: team memory's connection (`null` fields without it).
pub async fn team(
    State(app): State<App>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, Problem> {
    let mut s = status_json(&app, &headers, query.as_deref()).await?;
    let team = s["team"].take();
    Ok(Json(if team.is_null() {
        json!({"configured": false})
    } else {
        let mut t = team;
        t["configured"] = json!(true);
        t
    }))
}
