//! `/v1/memories`: list (newest first, the CLI's filters) and search
//! (`q=`, `mode=`), create, read with its `ETag`, change and forget with
//! `If-Match`, history. Each runs the request handler the binary protocol
//! runs; a memory is the object of the CLI's `--json`.

use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response as HttpResponse};
use memd_proto::json as wire_json;
use memd_proto::{
    AddRequest, ConfirmRequest, Filter, ForgetRequest, GetRequest, HistoryRequest, ListRequest,
    QuerySyntax, Request, Response, SearchMode, SearchRequest, SupersedeRequest, TaskRequest,
    UpdateRequest,
};
use serde::Deserialize;
use serde_json::{Value, json};

use super::App;
use super::caller::Caller;
use super::params::{self, Params};
use super::problem::Problem;

/// The query parameters of `GET /v1/memories`.
pub const LIST_PARAMS: &[&str] = &[
    "namespace",
    "q",
    "mode",
    "syntax",
    "view",
    "limit",
    "offset",
    "category",
    "subject",
    "tag",
    "any_tag",
    "scope",
    "meta",
    "since",
    "until",
    "updated_since",
    "updated_until",
    "include_superseded",
    "include_archived",
    "status",
    "agent",
    "tier",
    "source",
];

/// The filters of a list or search.
///
/// # Errors
/// 400 for a malformed filter.
pub fn filter(p: &Params) -> Result<Filter, Problem> {
    let meta = p
        .all("meta")
        .into_iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .ok_or_else(|| Problem::bad(format!("meta=`{kv}`: expected key=value")))
        })
        .collect::<Result<_, _>>()?;
    Ok(Filter {
        category: p.one("category")?,
        subject: p.one("subject")?,
        tags: p.all("tag"),
        tags_any: p.flag("any_tag")?,
        scope: p.one("scope")?,
        meta,
        since: p.one("since")?,
        until: p.one("until")?,
        updated_since: p.one("updated_since")?,
        updated_until: p.one("updated_until")?,
        include_superseded: p.flag("include_superseded")?,
        include_archived: p.flag("include_archived")?,
        status: p.one("status")?,
        created_by: p.one("agent")?,
        tier: p.number("tier")?,
        source: p.one("source")?,
        ..Filter::default()
    })
}

/// `GET /v1/memories`: a page of memories, newest first, or (with `q=`)
/// the hits of a search.
pub async fn list(
    State(app): State<App>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<HttpResponse, Problem> {
    let p = Params::parse(query.as_deref(), LIST_PARAMS)?;
    let caller = Caller::from(&headers, p.one("namespace")?)?;
    let filter = filter(&p)?;
    let limit = p.number::<u32>("limit")?.unwrap_or(0);
    let offset = p.number::<u32>("offset")?.unwrap_or(0);
    let Some(q) = p.one("q")?.filter(|q| !q.trim().is_empty()) else {
        if p.one("mode")?.is_some() {
            return Err(Problem::bad("mode= needs q= (a search)"));
        }
        let req = Request::List(ListRequest {
            filter,
            limit,
            offset,
        });
        let Response::Memories(l) = caller.run(&app, req, None).await? else {
            return Err(unexpected());
        };
        let items: Vec<String> = l.memories.iter().map(wire_json::memory_text).collect();
        return Ok(json_text(format!(
            "{{\"memories\":[{}],\"count\":{},\"offset\":{offset},\"generation\":{}}}",
            items.join(","),
            l.memories.len(),
            l.generation
        )));
    };
    let mode = match p.one("mode")? {
        None => SearchMode::Auto,
        Some(m) => SearchMode::parse(&m).ok_or_else(|| {
            Problem::bad(format!(
                "unknown mode `{m}` (auto, lexical, fuzzy, semantic, hybrid)"
            ))
        })?,
    };
    let syntax = match p.one("syntax")?.as_deref() {
        None | Some("plain") => QuerySyntax::Plain,
        Some("fts") => QuerySyntax::Fts,
        Some(other) => {
            return Err(Problem::bad(format!(
                "unknown syntax `{other}` (plain, fts)"
            )));
        }
    };
    let compact = match p.one("view")?.as_deref() {
        None | Some("full") => false,
        Some("compact") => true,
        Some(other) => {
            return Err(Problem::bad(format!(
                "unknown view `{other}` (full, compact)"
            )));
        }
    };
    let req = Request::Search(SearchRequest {
        query: q.clone(),
        filter,
        limit,
        mode,
        syntax,
        explain: false,
        offset,
    });
    let Response::Hits(r) = caller.run(&app, req, None).await? else {
        return Err(unexpected());
    };
    let items: Vec<String> = if compact {
        r.hits
            .iter()
            .map(|h| wire_json::compact_hit(&wire_json::hit(h), &q).to_string())
            .collect()
    } else {
        r.hits.iter().map(wire_json::hit_text).collect()
    };
    Ok(json_text(format!(
        "{{\"hits\":[{}],\"count\":{},\"mode\":\"{}\",\"offset\":{offset},\"generation\":{}}}",
        items.join(","),
        r.hits.len(),
        r.mode.as_str(),
        r.generation
    )))
}

/// A JSON answer whose text is written already.
fn json_text(body: String) -> HttpResponse {
    let mut r = body.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// `POST /v1/memories`: stores a memory through the write gate, in the
/// namespace the request names (a create without one is refused).
pub async fn create(
    State(app): State<App>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<HttpResponse, Problem> {
    let p = Params::parse(query.as_deref(), &["namespace"])?;
    let caller = Caller::from(&headers, p.one("namespace")?)?;
    if caller.namespace.is_none() {
        return Err(Problem::bad(
            "a new memory needs a namespace: give Memd-Namespace (or namespace=)",
        ));
    }
    let add: AddRequest = params::json_as(&headers, body, &[])?;
    let req = Request::Add(add);
    let Response::Added(r) = caller.run(&app, req, None).await? else {
        return Err(unexpected());
    };
    let mut fields = wire_json::add_result(&r);
    fields.insert("generation".into(), json!(r.generation));
    let created = r.accepted && !r.deduped && r.merged_into.is_none();
    let status = if r.proposal.is_some() {
        StatusCode::ACCEPTED
    } else if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut resp = (status, Json(Value::Object(fields))).into_response();
    if let Some(id) = r.id
        && let Ok(v) = HeaderValue::from_str(&format!("/v1/memories/{id}"))
    {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    Ok(resp)
}

/// A memory and the generation it was read at, with its rev as `ETag`.
fn memory_reply(memory: &memd_proto::Memory, generation: u64) -> HttpResponse {
    let mut resp = json_text(format!(
        "{{\"memory\":{},\"generation\":{generation}}}",
        wire_json::memory_text(memory)
    ));
    if let Ok(v) = HeaderValue::from_str(&format!("\"{}\"", memory.rev)) {
        resp.headers_mut().insert(header::ETAG, v);
    }
    resp
}

/// `GET /v1/memories/{id}`: the memory (wherever it lives, unless the
/// request names a namespace), `ETag: "<rev>"`.
pub async fn read(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<HttpResponse, Problem> {
    let p = Params::parse(query.as_deref(), &["namespace", "include_inactive"])?;
    let caller = Caller::from(&headers, p.one("namespace")?)?;
    let req = Request::Get(GetRequest {
        id: params::id(&id)?,
        include_inactive: p.flag("include_inactive")?,
    });
    let Response::Memory(r) = caller.run(&app, req, None).await? else {
        return Err(unexpected());
    };
    Ok(memory_reply(&r.memory, r.generation))
}

/// What `If-Match` asks: any version (`*`), or one of these revs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IfMatch {
    /// `*`: whatever version.
    Any,
    /// The strong tags that name a rev, from every `If-Match` line and
    /// every item of each. Weak tags (`W/"3"`) never match (If-Match
    /// compares strongly, RFC 9110 §13.1.1), nor do tags that are no rev:
    /// neither is here, so the list may be empty.
    Revs(Vec<i64>),
}

/// `If-Match: "<rev>"`: the request's read of the row. Every `If-Match`
/// line and every comma-separated item of each is read.
///
/// # Errors
/// 400 for a value that is not a list of entity tags, or `*` beside a tag.
pub fn if_match(headers: &HeaderMap) -> Result<Option<IfMatch>, Problem> {
    let mut any = false;
    let mut items = 0;
    let mut revs = Vec::new();
    for v in headers.get_all(header::IF_MATCH) {
        let text = v
            .to_str()
            .map_err(|_| Problem::bad("If-Match is not ASCII"))?;
        let mut rest = text.trim_start_matches([' ', '\t', ',']);
        while !rest.is_empty() {
            items += 1;
            if let Some(after) = rest.strip_prefix('*') {
                any = true;
                rest = after;
            } else {
                let (weak, tag) = match rest.strip_prefix("W/") {
                    Some(t) => (true, t),
                    None => (false, rest),
                };
                let bad = || {
                    Problem::bad(format!(
                        "If-Match `{text}` is not a list of ETags as a read gives them (\"3\")"
                    ))
                };
                let inner = tag.strip_prefix('"').ok_or_else(bad)?;
                let close = inner.find('"').ok_or_else(bad)?;
                let opaque = &inner[..close];
                if !weak && let Ok(rev) = opaque.parse::<i64>() {
                    revs.push(rev);
                }
                rest = &inner[close + 1..];
            }
            let next = rest.trim_start_matches([' ', '\t']);
            if !(next.is_empty() || next.starts_with(',')) {
                return Err(Problem::bad(format!(
                    "If-Match `{text}`: ETags are separated by commas"
                )));
            }
            rest = next.trim_start_matches([' ', '\t', ',']);
        }
    }
    match (items, any) {
        (0, _) => Ok(None),
        (1, true) => Ok(Some(IfMatch::Any)),
        (_, true) => Err(Problem::bad("If-Match `*` stands alone, without ETags")),
        (_, false) => Ok(Some(IfMatch::Revs(revs))),
    }
}

/// The caller of a change by id, in the memory's namespace (a change by id
/// acts on the memory wherever it lives), and the request's read of the row.
/// Refused with 428 when the request has neither `If-Match` nor a session
/// that exists already (a session this request would make has read
/// nothing: it cannot count as having seen the memory); with 412 when
/// `If-Match` names no version the memory is at and no rev the row rule
/// can judge (only weak tags).
async fn acting(
    app: &App,
    headers: &HeaderMap,
    query: Option<&str>,
    id: i64,
) -> Result<(Caller, Option<(i64, i64)>), Problem> {
    let p = Params::parse(query, &["namespace"])?;
    let caller = Caller::from(headers, p.one("namespace")?)?;
    let cond = if_match(headers)?;
    if cond.is_none() {
        let Some(name) = &caller.session else {
            return Err(Problem::new(
                StatusCode::PRECONDITION_REQUIRED,
                "precondition_required",
                "a change needs If-Match: \"<rev>\" (the rev your read showed, as its ETag) or \
                 a Memd-Session whose reads protect it",
            ));
        };
        let namespace = caller.namespace.as_deref().unwrap_or("default");
        if app.shared.named.find(namespace, name).is_none() {
            return Err(Problem::new(
                StatusCode::PRECONDITION_REQUIRED,
                "precondition_required",
                format!(
                    "Memd-Session `{name}` names no session of namespace `{namespace}`: a \
                     session protects a change only with what it read. Read the memory in that \
                     session first, or send If-Match: \"<rev>\""
                ),
            ));
        }
    }
    let several = matches!(&cond, Some(IfMatch::Revs(r)) if r.len() != 1);
    // Where the memory lives, and the rev it is at when If-Match names
    // several or none: looked up in a session of its own (this look must
    // not count as the request's read of the row).
    let (caller, now) = if caller.namespace.is_none() || several {
        let look = Request::Get(GetRequest {
            id,
            include_inactive: true,
        });
        let Response::Memory(r) = caller.run(app, look, None).await? else {
            return Err(unexpected());
        };
        (caller.in_namespace(&r.memory.namespace), Some(r.memory))
    } else {
        (caller, None)
    };
    let read = match (cond, now) {
        (None | Some(IfMatch::Any), _) => None,
        (Some(IfMatch::Revs(revs)), _) if revs.len() == 1 => Some((id, revs[0])),
        (Some(IfMatch::Revs(revs)), Some(m)) if revs.contains(&m.rev) => Some((id, m.rev)),
        // A version the memory is not at: the row rule refuses it, with
        // the row as it is now and who changed it.
        (Some(IfMatch::Revs(revs)), _) if !revs.is_empty() => Some((id, revs[0])),
        (Some(IfMatch::Revs(_)), m) => {
            let mut p = Problem::new(
                StatusCode::PRECONDITION_FAILED,
                "precondition_failed",
                "If-Match names no version of this memory: a weak tag (W/\"3\") never matches \
                 (If-Match compares strongly); send the ETag a read gave, \"3\"",
            );
            if let Some(m) = m {
                p = p
                    .with_field("current", wire_json::memory(&m))
                    .with_field("rev_now", json!(m.rev));
            }
            return Err(p);
        }
    };
    Ok((caller, read))
}

/// `PATCH /v1/memories/{id}`: changes fields through the drift guard
/// (`If-Match` is the request's read of the row; a stale one is refused
/// with 412, the row as it is now and who changed it).
pub async fn change(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<HttpResponse, Problem> {
    let id = params::id(&id)?;
    let mut changes: UpdateRequest = params::json_as(&headers, body, &["id", "expect_rev"])?;
    changes.id = id;
    let (caller, read) = acting(&app, &headers, query.as_deref(), id).await?;
    let req = Request::Update(changes);
    let Response::Memory(r) = caller.run(&app, req, read).await? else {
        return Err(unexpected());
    };
    if let Some(p) = r.proposal {
        let body = json!({"memory": wire_json::memory(&r.memory), "status": "proposed",
            "proposal": p, "generation": r.generation});
        return Ok((StatusCode::ACCEPTED, Json(body)).into_response());
    }
    Ok(memory_reply(&r.memory, r.generation))
}

/// `DELETE /v1/memories/{id}`: forgets the memory through the drift guard.
pub async fn forget(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<HttpResponse, Problem> {
    let id = params::id(&id)?;
    let (caller, read) = acting(&app, &headers, query.as_deref(), id).await?;
    let req = Request::Forget(ForgetRequest {
        id,
        expect_rev: None,
    });
    let Response::Forgotten(r) = caller.run(&app, req, read).await? else {
        return Err(unexpected());
    };
    Ok(match r.proposal {
        Some(p) => (
            StatusCode::ACCEPTED,
            Json(
                json!({"forgotten": null, "status": "proposed", "proposal": p,
                "generation": r.generation}),
            ),
        )
            .into_response(),
        None => Json(json!({"forgotten": r.id, "generation": r.generation})).into_response(),
    })
}

/// `GET /v1/memories/{id}/history`: its supersession chain and every
/// earlier version.
pub async fn history(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<Json<Value>, Problem> {
    let p = Params::parse(query.as_deref(), &["namespace"])?;
    let caller = Caller::from(&headers, p.one("namespace")?)?;
    let req = Request::History(HistoryRequest {
        id: params::id(&id)?,
    });
    let Response::History(h) = caller.run(&app, req, None).await? else {
        return Err(unexpected());
    };
    Ok(Json(json!({
        "chain": h.chain.iter().map(wire_json::memory).collect::<Vec<_>>(),
        "revisions": h.revisions,
        "authors": h.authors.iter().map(|a| json!({
            "memory_id": a.memory_id,
            "rev": a.rev,
            "changed_by": wire_json::changed_by(&a.changed_by),
        })).collect::<Vec<_>>(),
        "generation": h.generation,
    })))
}

/// The body of `POST /v1/memories/{id}/supersede`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct By {
    /// The memory that replaces this one.
    by: i64,
}

/// `POST /v1/memories/{id}/supersede` (`{"by": NEW}`): marks the memory
/// as replaced by memory `NEW`, through the drift guard (`If-Match` or a
/// session, as a change).
pub async fn supersede(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, Problem> {
    let id = params::id(&id)?;
    let by: By = params::json(&headers, body)?;
    let (caller, read) = acting(&app, &headers, query.as_deref(), id).await?;
    let req = Request::Supersede(SupersedeRequest {
        old: id,
        new: by.by,
    });
    let Response::Superseded(r) = caller.run(&app, req, read).await? else {
        return Err(unexpected());
    };
    Ok(Json(
        json!({"old": r.old, "new": r.new, "generation": r.generation}),
    ))
}

/// The body of `POST /v1/memories/{id}/task`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Move {
    /// `pending`, `in_progress`, `completed` or `cancelled`.
    status: String,
}

/// `POST /v1/memories/{id}/task` (`{"status": "in_progress"}`): moves a
/// task, through the drift guard (as a change).
pub async fn task(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<HttpResponse, Problem> {
    let id = params::id(&id)?;
    let to: Move = params::json(&headers, body)?;
    let (caller, read) = acting(&app, &headers, query.as_deref(), id).await?;
    let req = Request::Task(TaskRequest {
        id,
        status: to.status,
        expect_rev: None,
    });
    let Response::Memory(r) = caller.run(&app, req, read).await? else {
        return Err(unexpected());
    };
    Ok(memory_reply(&r.memory, r.generation))
}

/// `POST /v1/memories/{id}/confirm`: counts a confirmation (no content
/// changes: no precondition).
pub async fn confirm(
    State(app): State<App>,
    headers: HeaderMap,
    Path(id): Path<String>,
    RawQuery(query): RawQuery,
) -> Result<HttpResponse, Problem> {
    let id = params::id(&id)?;
    let p = Params::parse(query.as_deref(), &["namespace"])?;
    let caller = Caller::from(&headers, p.one("namespace")?)?;
    let caller = if caller.namespace.is_some() {
        caller
    } else {
        let look = Request::Get(GetRequest {
            id,
            include_inactive: true,
        });
        let Response::Memory(r) = caller.run(&app, look, None).await? else {
            return Err(unexpected());
        };
        caller.in_namespace(&r.memory.namespace)
    };
    let Response::Memory(r) = caller
        .run(&app, Request::Confirm(ConfirmRequest { id }), None)
        .await?
    else {
        return Err(unexpected());
    };
    Ok(memory_reply(&r.memory, r.generation))
}

/// A reply of another kind than the request's: a bug, said as one.
pub fn unexpected() -> Problem {
    Problem::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal",
        "the daemon answered with an unexpected reply",
    )
}

/// `POST /v1/purge`: erases memories and every trace of their text on this
/// machine (`{"id": N}` or `{"matching": "TEXT"}`); without `"confirm":
/// true` it only lists them.
pub async fn purge(
    State(app): State<App>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
    body: Result<Bytes, BytesRejection>,
) -> Result<Json<Value>, Problem> {
    let req: memd_proto::PurgeRequest = params::json_as(&headers, body, &[])?;
    let p = Params::parse(query.as_deref(), &["namespace"])?;
    let caller = Caller::from(&headers, p.one("namespace")?)?;
    let Response::Purged(r) = caller.run(&app, Request::Purge(req), None).await? else {
        return Err(unexpected());
    };
    Ok(Json(serde_json::to_value(&r).map_err(|_| unexpected())?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(lines: &[&str]) -> Result<Option<IfMatch>, Problem> {
        let mut h = HeaderMap::new();
        for l in lines {
            h.append(header::IF_MATCH, HeaderValue::from_str(l).unwrap());
        }
        if_match(&h)
    }

    #[test]
    fn if_match_reads_every_line_and_item_and_compares_strongly() {
        use IfMatch::{Any, Revs};
        let cases: &[(&[&str], IfMatch)] = &[
            (&["\"3\""], Revs(vec![3])),
            (&[" \"3\" "], Revs(vec![3])),
            (&["*"], Any),
            (&["W/\"3\""], Revs(vec![])),
            (&["\"abc\""], Revs(vec![])),
            (&["\"1\", \"2\""], Revs(vec![1, 2])),
            (&["\"1\",\"2\" ,W/\"3\""], Revs(vec![1, 2])),
            (&["\"1\"", "\"2\""], Revs(vec![1, 2])),
            (&["W/\"2\"", "\"4\""], Revs(vec![4])),
            (&["\"a,b\", \"5\""], Revs(vec![5])),
        ];
        for (lines, want) in cases {
            assert_eq!(read(lines).unwrap().as_ref(), Some(want), "{lines:?}");
        }
        assert_eq!(read(&[]).unwrap(), None);
        for bad in [
            &["3"][..],
            &["\"3"],
            &["\"3\" \"4\""],
            &["*, \"3\""],
            &["*", "\"3\""],
            &["W/3"],
        ] {
            let p = read(bad).unwrap_err();
            assert_eq!(p.status(), StatusCode::BAD_REQUEST, "{bad:?}");
        }
    }
}
