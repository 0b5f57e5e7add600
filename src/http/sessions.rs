//! `/v1/sessions`: the named sessions, and what each was told — its frozen
//! block byte for byte, its hash, when it was built, and the memories and
//! revs it holds.

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use memd_proto::{
    CompactedRequest, InjectRequest, RefreshRequest, Request, Response, SessionEndRequest,
    SessionListRequest, SessionShowRequest,
};
use serde_json::{Value, json};

use super::App;
use super::caller::Caller;
use super::memories::unexpected;
use super::params::Params;
use super::problem::Problem;

fn info(s: &memd_proto::NamedSessionInfo) -> Value {
    json!({
        "namespace": s.namespace,
        "name": s.name,
        "agent": s.agent,
        "connections": s.connections,
        "idle_secs": s.idle_secs,
        "seen_generation": s.seen_generation,
        "has_block": s.has_block,
    })
}

/// `GET /v1/sessions`: the named sessions (of the namespace the request
/// names, else of every namespace).
pub async fn list(
    State(app): State<App>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, Problem> {
    let p = Params::parse(query.as_deref(), &["namespace"])?;
    let caller = Caller::from(&headers, p.one("namespace")?)?;
    let req = Request::SessionList(SessionListRequest {
        all_namespaces: caller.namespace.is_none(),
    });
    let Response::Sessions(l) = caller.run(&app, req, None).await? else {
        return Err(unexpected());
    };
    Ok(Json(json!({
        "sessions": l.sessions.iter().map(info).collect::<Vec<_>>(),
        "count": l.sessions.len(),
    })))
}

/// `GET /v1/sessions/{namespace}/{name}`: one named session and the block
/// it was given (a namespace with `/` is written `%2F`).
pub async fn show(
    State(app): State<App>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, Problem> {
    Params::parse(query.as_deref(), &[])?;
    let caller = Caller::from(&headers, None)?;
    let req = Request::SessionShow(SessionShowRequest {
        namespace: namespace.clone(),
        name: name.clone(),
    });
    let d = match caller.run(&app, req, None).await {
        Ok(Response::SessionShown(d)) => d,
        Ok(_) => return Err(unexpected()),
        Err(p) if p.body()["code"] == "invalid_input" => {
            return Err(Problem::new(
                axum::http::StatusCode::NOT_FOUND,
                "not_found",
                format!("no named session `{name}` in namespace `{namespace}`"),
            ));
        }
        Err(p) => return Err(p),
    };
    let mut v = info(&d.info);
    v["policy"] = json!(d.policy.as_str());
    v["hold_block"] = json!(d.hold_block);
    v["read_set_rows"] = json!(d.read_set_rows);
    v["block"] = match &d.block {
        Some(b) => json!({
            "text": b.block,
            "hash": b.hash,
            "built_at_generation": b.built_at_generation,
            "built_at": d.built_at,
            "included": b.stats.included,
            "eligible": b.stats.eligible,
            "chars": b.stats.chars,
            "budget": b.stats.budget,
            "memories": d.block_rows.iter().map(|(id, rev)| json!({"id": id, "rev": rev})).collect::<Vec<_>>(),
        }),
        None => Value::Null,
    };
    Ok(Json(v))
}

/// The named session of a path, joined by this request (its agent is the
/// request's `Memd-Agent`, when the request creates it).
fn joined(headers: &HeaderMap, namespace: &str, name: &str) -> Result<Caller, Problem> {
    let mut caller = Caller::from(headers, None)?;
    caller.namespace = Some(namespace.to_string());
    caller.session = Some(name.to_string());
    Ok(caller)
}

/// `POST /v1/sessions/{namespace}/{name}/inject`: the session's memory
/// block (built at its first inject, then the same bytes until it writes,
/// compacts or refreshes), as `memd --session NAME inject`.
pub async fn inject(
    State(app): State<App>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
) -> Result<Json<Value>, Problem> {
    let caller = joined(&headers, &namespace, &name)?;
    let Response::Injected(i) = caller
        .run(&app, Request::Inject(InjectRequest {}), None)
        .await?
    else {
        return Err(unexpected());
    };
    Ok(Json(json!({
        "block": i.block,
        "hash": i.hash,
        "built_at_generation": i.built_at_generation,
        "included": i.stats.included,
        "eligible": i.stats.eligible,
        "chars": i.stats.chars,
        "budget": i.stats.budget,
        "cached": i.stats.cached,
    })))
}

async fn rebuild(
    app: &App,
    headers: &HeaderMap,
    namespace: &str,
    name: &str,
    req: Request,
) -> Result<Json<Value>, Problem> {
    let caller = joined(headers, namespace, name)?;
    caller.run(app, req, None).await?;
    Ok(Json(json!({"rebuilt_at_next_inject": true})))
}

/// `POST /v1/sessions/{namespace}/{name}/compacted`: the agent compacted
/// its context; the block is rebuilt at the next inject.
pub async fn compacted(
    State(app): State<App>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
) -> Result<Json<Value>, Problem> {
    rebuild(
        &app,
        &headers,
        &namespace,
        &name,
        Request::Compacted(CompactedRequest {}),
    )
    .await
}

/// `POST /v1/sessions/{namespace}/{name}/refresh`: the block is rebuilt at
/// the next inject.
pub async fn refresh(
    State(app): State<App>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
) -> Result<Json<Value>, Problem> {
    rebuild(
        &app,
        &headers,
        &namespace,
        &name,
        Request::Refresh(RefreshRequest {}),
    )
    .await
}

/// `DELETE /v1/sessions/{namespace}/{name}`: ends the named session (its
/// block and read set are dropped).
pub async fn end(
    State(app): State<App>,
    headers: HeaderMap,
    Path((namespace, name)): Path<(String, String)>,
) -> Result<Json<Value>, Problem> {
    let mut caller = Caller::from(&headers, None)?;
    caller.namespace = Some(namespace);
    let Response::SessionEnded(e) = caller
        .run(&app, Request::SessionEnd(SessionEndRequest { name }), None)
        .await?
    else {
        return Err(unexpected());
    };
    Ok(Json(
        json!({"ended": e.ended, "connections": e.connections}),
    ))
}
