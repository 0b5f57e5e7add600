//! `/v1/sessions`: the named sessions, and what each was told — its frozen
//! block byte for byte, its hash, when it was built, and the memories and
//! revs it holds.

use axum::Json;
use axum::extract::{Path, RawQuery, State};
use axum::http::HeaderMap;
use memd_proto::{Request, Response, SessionListRequest, SessionShowRequest};
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
