//! The web viewer: pages rendered on the server from the same request
//! handlers as the API (so reading works with JavaScript off), and two
//! embedded assets (`app.css`, `app.js`) that make them live: search as you
//! type, keyboard navigation, live updates by the event stream, editing
//! and forgetting through the drift guard. No CDN, no build step.
//!
//! # Layout
//! - this file: the routes and what each page reads;
//! - [`page`]: the frame, escaping, the pieces pages share.

pub mod page;

use std::fmt::Write;

use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response as HttpResponse};
use memd_proto::{
    GetRequest, HistoryRequest, ListRequest, Memory, QuerySyntax, Request, Response, SearchMode,
    SearchRequest, SessionListRequest, SessionShowRequest, StatusRequest,
};
use serde_json::Value;

use super::App;
use super::caller::Caller;
use super::memories::{LIST_PARAMS, filter};
use super::params::Params;
use super::problem::Problem;
use page::{Here, Tab, enc, esc, frame, memory_item, when};

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

/// The start page's query: what is searched and filtered.
struct Query {
    params: Params,
    q: String,
    offset: u32,
}

impl Query {
    fn get(&self, k: &str) -> String {
        self.params.one(k).ok().flatten().unwrap_or_default()
    }

    /// The query string of this page with `offset` replaced.
    fn with_offset(&self, offset: u32) -> String {
        let mut s = form_urlencoded::Serializer::new(String::new());
        for k in [
            "q",
            "namespace",
            "tag",
            "category",
            "agent",
            "tier",
            "status",
            "source",
        ] {
            let v = self.get(k);
            if !v.is_empty() {
                s.append_pair(k, &v);
            }
        }
        if offset > 0 {
            s.append_pair("offset", &offset.to_string());
        }
        s.finish()
    }
}

/// The results of the start page: a page of the newest memories, or the
/// hits of a search.
async fn results(app: &App, query: &Query) -> Result<String, Problem> {
    let ns = query.get("namespace");
    let caller = Caller {
        namespace: (!ns.is_empty()).then_some(ns),
        ..Caller::default()
    };
    let mut filter = filter(&query.params)?;
    // An empty field of the form is no filter.
    for f in [
        &mut filter.category,
        &mut filter.created_by,
        &mut filter.status,
        &mut filter.source,
    ] {
        if f.as_deref().is_some_and(|v| v.trim().is_empty()) {
            *f = None;
        }
    }
    filter.tags.retain(|t| !t.trim().is_empty());
    let (items, count, searched): (Vec<(Memory, Option<f64>)>, usize, bool) =
        if query.q.trim().is_empty() {
            let req = Request::List(ListRequest {
                filter,
                limit: PAGE,
                offset: query.offset,
            });
            let Response::Memories(l) = caller.run(app, req, None).await? else {
                return Err(super::memories::unexpected());
            };
            let n = l.memories.len();
            (
                l.memories.into_iter().map(|m| (m, None)).collect(),
                n,
                false,
            )
        } else {
            let req = Request::Search(SearchRequest {
                query: query.q.clone(),
                filter,
                limit: PAGE,
                mode: SearchMode::Auto,
                syntax: QuerySyntax::Plain,
                explain: false,
                offset: query.offset,
            });
            let Response::Hits(r) = caller.run(app, req, None).await? else {
                return Err(super::memories::unexpected());
            };
            let n = r.hits.len();
            (
                r.hits
                    .into_iter()
                    .map(|h| (h.memory, Some(h.score)))
                    .collect(),
                n,
                true,
            )
        };
    let mut out = String::new();
    let first = query.offset + 1;
    let summary = match (count, searched) {
        (0, true) => "No memory matches.".to_string(),
        (0, false) => "No memories here yet.".to_string(),
        (n, true) => format!("Matches {first}–{} (best first)", query.offset as usize + n),
        (n, false) => format!(
            "Memories {first}–{} (newest first)",
            query.offset as usize + n
        ),
    };
    let _ = write!(
        out,
        "<p class=\"summary\" id=\"summary\" role=\"status\">{}</p><ol class=\"memories\" id=\"list\">",
        esc(&summary)
    );
    for (m, score) in &items {
        out.push_str(&memory_item(m, *score));
    }
    out.push_str("</ol><nav class=\"pager\" aria-label=\"Pages\">");
    if query.offset > 0 {
        let _ = write!(
            out,
            "<a rel=\"prev\" href=\"./?{}\">← Previous</a>",
            esc(&query.with_offset(query.offset.saturating_sub(PAGE)))
        );
    }
    if count == PAGE as usize {
        let _ = write!(
            out,
            "<a rel=\"next\" href=\"./?{}\">Next →</a>",
            esc(&query.with_offset(query.offset + PAGE))
        );
    }
    out.push_str("</nav>");
    Ok(out)
}

fn select(name: &str, label: &str, current: &str, options: &[(String, String)]) -> String {
    let mut s = format!(
        "<label>{label}<select name=\"{name}\"><option value=\"\">any</option>",
        label = esc(label)
    );
    for (value, text) in options {
        let sel = if value == current { " selected" } else { "" };
        let _ = write!(
            s,
            "<option value=\"{}\"{sel}>{}</option>",
            esc(value),
            esc(text)
        );
    }
    s.push_str("</select></label>");
    s
}

/// `GET /`: the newest memories, search and filters.
pub async fn index(State(app): State<App>, here: Here, RawQuery(raw): RawQuery) -> HttpResponse {
    let mut known: Vec<&str> = LIST_PARAMS.to_vec();
    known.push("fragment");
    let params = match Params::parse(raw.as_deref(), &known) {
        Ok(p) => p,
        Err(p) => return failed(&here, &p),
    };
    let query = Query {
        q: params.one("q").ok().flatten().unwrap_or_default(),
        offset: params.number("offset").ok().flatten().unwrap_or(0),
        params,
    };
    let list = match results(&app, &query).await {
        Ok(l) => l,
        Err(p) => return failed(&here, &p),
    };
    if query.get("fragment") == "results" {
        return html(list);
    }
    let status = match status(&app).await {
        Ok(s) => s,
        Err(p) => return failed(&here, &p),
    };
    let namespaces: Vec<(String, String)> = status["counts"]["by_namespace"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|n| {
                    let ns = n["namespace"].as_str()?;
                    Some((ns.to_string(), format!("{ns} ({})", n["memories"])))
                })
                .collect()
        })
        .unwrap_or_default();
    let config = app.shared.config();
    let categories: Vec<(String, String)> = config
        .memory
        .categories
        .iter()
        .map(|c| (c.clone(), c.clone()))
        .collect();
    let pairs = |xs: &[&str]| -> Vec<(String, String)> {
        xs.iter()
            .map(|x| ((*x).to_string(), (*x).to_string()))
            .collect()
    };
    let total = status["counts"]["memories"].as_i64().unwrap_or(0);
    let filters = [
        select("namespace", "Namespace", &query.get("namespace"), &namespaces),
        format!(
            "<label>Tag<input name=\"tag\" value=\"{}\" autocomplete=\"off\"></label>",
            esc(&query.get("tag"))
        ),
        select("category", "Category", &query.get("category"), &categories),
        format!(
            "<label>Agent<input name=\"agent\" value=\"{}\" autocomplete=\"off\" placeholder=\"created by\"></label>",
            esc(&query.get("agent"))
        ),
        select("tier", "Tier", &query.get("tier"), &pairs(&["1", "2", "3"])),
        select(
            "status",
            "Status",
            &query.get("status"),
            &pairs(&["promoted", "candidate", "archived"]),
        ),
        select(
            "source",
            "Source",
            &query.get("source"),
            &pairs(&["agent", "user", "system", "import", "external"]),
        ),
    ]
    .concat();
    let body = format!(
        "<h1 class=\"sr-only\">Memories</h1>\
         <form class=\"search\" id=\"search\" method=\"get\" action=\"./\" role=\"search\">\
         <div class=\"searchbar\"><input type=\"search\" name=\"q\" id=\"q\" value=\"{q}\" \
         placeholder=\"Search {total} memories\" aria-label=\"Search memories\" autocomplete=\"off\" \
         spellcheck=\"false\"><kbd title=\"Press / to search\">/</kbd>\
         <button type=\"submit\">Search</button></div>\
         <details class=\"filters\"{open}><summary>Filters</summary><div class=\"grid\">{filters}</div>\
         <p class=\"hint\">Filters apply as you change them. <a href=\"./\">Clear all</a></p></details>\
         </form>\
         <section id=\"results\" aria-live=\"polite\" aria-label=\"Results\">{list}</section>\
         <p class=\"keys\">Keys: <kbd>/</kbd> search · <kbd>↓</kbd><kbd>↑</kbd> move through \
         results · <kbd>Enter</kbd> open · <kbd>Esc</kbd> back to search</p>",
        q = esc(&query.q),
        open = if [
            "namespace",
            "tag",
            "category",
            "agent",
            "tier",
            "status",
            "source"
        ]
        .iter()
        .any(|k| !query.get(k).is_empty())
        {
            " open"
        } else {
            ""
        },
    );
    html(frame(&here, "Memories", Tab::Memories, &body))
}

fn field(name: &str, value: &str) -> String {
    format!("<dt>{}</dt><dd>{}</dd>", esc(name), value)
}

fn opt(v: Option<&str>) -> String {
    v.map_or_else(|| "<span class=\"none\">—</span>".into(), esc)
}

/// A version of a memory, for the history: what a revision kept, or the
/// row as it is now.
struct Version {
    rev: i64,
    content: String,
    subject: Option<String>,
    category: String,
    tier: Option<i64>,
    status: Option<String>,
    metadata: Option<String>,
    tags: Option<Vec<String>>,
    superseded_by: Option<i64>,
    at: String,
    op: String,
}

/// Who made a version, as a person reads it.
fn author(a: Option<&memd_proto::ChangedBy>) -> String {
    let Some(a) = a else {
        return "<span class=\"who none\" title=\"memd keeps no author for this version\">by another tool or memd's upkeep</span>".into();
    };
    let mut parts = Vec::new();
    match a.kind {
        memd_proto::ChangeKind::External => {
            parts.push("a writer outside memd on the team's PostgreSQL".to_string());
        }
        _ => {
            if let Some(agent) = &a.agent {
                parts.push(format!("agent {}", esc(agent)));
            }
            if let Some(s) = &a.session {
                parts.push(format!("session <code>{}</code>", esc(&page::clip(s, 24))));
            }
        }
    }
    if let Some(m) = &a.machine {
        parts.push(format!("on {}", esc(m)));
    }
    if parts.is_empty() {
        parts.push("a session".into());
    }
    format!("<span class=\"who\">by {}</span>", parts.join(", "))
}

fn history_html(
    current: &Memory,
    revisions: &[memd_proto::Revision],
    authors: &[memd_proto::VersionAuthor],
) -> String {
    let by = |rev: i64| {
        authors
            .iter()
            .find(|a| a.memory_id == current.id && a.rev == rev)
            .map(|a| &a.changed_by)
    };
    let mut versions: Vec<Version> = revisions
        .iter()
        .filter(|r| r.memory_id == current.id)
        .map(|r| Version {
            rev: r.rev.unwrap_or(0),
            content: r.content.clone().unwrap_or_default(),
            subject: r.subject.clone(),
            category: r.category.clone().unwrap_or_default(),
            tier: r.tier,
            status: r.status.clone(),
            metadata: r.metadata.clone(),
            tags: r.tags.clone(),
            superseded_by: r.superseded_by,
            at: r
                .updated_at
                .clone()
                .unwrap_or_else(|| r.recorded_at.clone()),
            op: r.op.clone(),
        })
        .collect();
    versions.push(Version {
        rev: current.rev,
        content: current.content.clone(),
        subject: current.subject.clone(),
        category: current.category.clone(),
        tier: Some(current.tier),
        status: Some(current.status.clone()),
        metadata: Some(current.metadata.clone()),
        tags: Some(current.tags.clone()),
        superseded_by: current.superseded_by,
        at: current.updated_at.clone(),
        op: "current".into(),
    });
    versions.sort_by_key(|v| v.rev);
    let mut out = String::from("<ol class=\"versions\" reversed>");
    for (k, v) in versions.iter().enumerate().rev() {
        let label = if v.op == "current" {
            format!("rev {} · now", v.rev)
        } else {
            format!("rev {}", v.rev)
        };
        let _ = write!(
            out,
            "<li><p class=\"vhead\"><strong>{}</strong> · {}",
            esc(&label),
            when(&v.at)
        );
        if k == 0 {
            let _ = write!(
                out,
                " · created by {} ({})</p><p class=\"diff\">{}</p>",
                esc(current.created_by.as_deref().unwrap_or("?")),
                esc(&current.source),
                esc(&v.content)
            );
            out.push_str("</li>");
            continue;
        }
        let _ = write!(out, " · {}</p>", author(by(v.rev)));
        let p = &versions[k - 1];
        let mut changes = Vec::new();
        if p.content != v.content {
            changes.push(format!(
                "<p class=\"diff\">{}</p>",
                page::word_diff(&p.content, &v.content)
            ));
        }
        let mut fields = Vec::new();
        let mut cmp = |name: &str, a: String, b: String| {
            if a != b {
                fields.push(format!(
                    "<li><span class=\"fname\">{}</span> <del>{}</del> → <ins>{}</ins></li>",
                    esc(name),
                    esc(&a),
                    esc(&b)
                ));
            }
        };
        cmp(
            "subject",
            p.subject.clone().unwrap_or_default(),
            v.subject.clone().unwrap_or_default(),
        );
        cmp("category", p.category.clone(), v.category.clone());
        cmp(
            "tier",
            p.tier.map(|t| t.to_string()).unwrap_or_default(),
            v.tier.map(|t| t.to_string()).unwrap_or_default(),
        );
        cmp(
            "status",
            p.status.clone().unwrap_or_default(),
            v.status.clone().unwrap_or_default(),
        );
        cmp(
            "metadata",
            p.metadata.clone().unwrap_or_default(),
            v.metadata.clone().unwrap_or_default(),
        );
        if let (Some(a), Some(b)) = (&p.tags, &v.tags) {
            cmp("tags", a.join(", "), b.join(", "));
        }
        cmp(
            "superseded by",
            p.superseded_by.map(|i| format!("#{i}")).unwrap_or_default(),
            v.superseded_by.map(|i| format!("#{i}")).unwrap_or_default(),
        );
        if !fields.is_empty() {
            changes.push(format!(
                "<ul class=\"fields-changed\">{}</ul>",
                fields.concat()
            ));
        }
        if changes.is_empty() {
            changes.push("<p class=\"hint\">No change of what the history keeps (a pin, an importance or an expiry).</p>".into());
        }
        out.push_str(&changes.concat());
        out.push_str("</li>");
    }
    out.push_str("</ol>");
    out
}

/// `GET /m/{id}`: one memory, its history, and the forms that change it.
pub async fn memory(State(app): State<App>, here: Here, Path(id): Path<String>) -> HttpResponse {
    let Ok(id) = id.parse::<i64>() else {
        return failed(&here, &Problem::bad(format!("`{id}` is not a memory id")));
    };
    let caller = person();
    let got = caller
        .run(
            &app,
            Request::Get(GetRequest {
                id,
                include_inactive: true,
            }),
            None,
        )
        .await;
    let m = match got {
        Ok(Response::Memory(r)) => r.memory,
        Ok(_) => return failed(&here, &super::memories::unexpected()),
        Err(p) => return failed(&here, &p),
    };
    let history = match caller
        .run(&app, Request::History(HistoryRequest { id }), None)
        .await
    {
        Ok(Response::History(h)) => h,
        Ok(_) => return failed(&here, &super::memories::unexpected()),
        Err(p) => return failed(&here, &p),
    };
    // The code it cites, with what a client last found of it here.
    let cited = match caller
        .run(
            &app,
            Request::Citations(memd_proto::cite::CitationsRequest {
                personal: false,
                id: Some(id),
            }),
            None,
        )
        .await
    {
        Ok(Response::Citations(l)) => l
            .memories
            .first()
            .map(|c| field("cites", &page::citations(c)))
            .unwrap_or_default(),
        _ => String::new(),
    };
    let mut chain = String::new();
    if history.chain.len() > 1 {
        chain.push_str("<p class=\"chain\">Supersession: ");
        let links: Vec<String> = history
            .chain
            .iter()
            .map(|c| {
                if c.id == m.id {
                    format!("<strong>#{}</strong>", c.id)
                } else {
                    format!("<a href=\"m/{0}\">#{0}</a>", c.id)
                }
            })
            .collect();
        chain.push_str(&links.join(" → "));
        chain.push_str("</p>");
    }
    let config = app.shared.config();
    let mut cats = String::new();
    for c in &config.memory.categories {
        let sel = if *c == m.category { " selected" } else { "" };
        let _ = write!(cats, "<option{sel}>{}</option>", esc(c));
    }
    let choose = |name: &str, current: &str, values: &[&str]| {
        let mut s = format!("<select name=\"{name}\">");
        for v in values {
            let sel = if *v == current { " selected" } else { "" };
            let _ = write!(s, "<option{sel}>{v}</option>");
        }
        s.push_str("</select>");
        s
    };
    let tags = m.tags.join(", ");
    let metadata = serde_json::from_str::<Value>(&m.metadata).map_or_else(
        |_| m.metadata.clone(),
        |v| serde_json::to_string_pretty(&v).unwrap_or_default(),
    );
    let fields = [
        field(
            "namespace",
            &format!(
                "<a href=\"./?namespace={}\">{}</a>",
                enc(&m.namespace),
                esc(&m.namespace)
            ),
        ),
        field(
            "scope",
            &match &m.scope_owner {
                Some(o) => format!("{} ({})", esc(&m.scope), esc(o)),
                None => esc(&m.scope),
            },
        ),
        field("subject", &opt(m.subject.as_deref())),
        field(
            "tags",
            &if m.tags.is_empty() {
                opt(None)
            } else {
                m.tags
                    .iter()
                    .map(|t| format!("<a class=\"tag\" href=\"./?tag={}\">{}</a>", enc(t), esc(t)))
                    .collect()
            },
        ),
        field("tier", &m.tier.to_string()),
        field("importance", &esc(&m.importance)),
        field("confidence", &format!("{:.2}", m.confidence)),
        field("pinned", if m.pinned { "yes" } else { "no" }),
        field("status", &esc(&m.status)),
        field(
            "from",
            &m.provenance.as_ref().map_or_else(
                || esc(&m.source),
                |p| {
                    p.sources
                        .iter()
                        .enumerate()
                        .map(|(i, o)| {
                            let line = esc(&o.line());
                            if i == 0 {
                                line
                            } else {
                                format!("<br>merged: {line}")
                            }
                        })
                        .collect::<String>()
                },
            ),
        ),
        field(
            "trust",
            &esc(m.provenance.as_ref().map_or("?", |p| p.trust.as_str())),
        ),
        field("created by", &opt(m.created_by.as_deref())),
        field("created", &when(&m.created_at)),
        field("changed", &when(&m.updated_at)),
        field(
            "expires",
            &m.expires_at.as_deref().map_or_else(|| opt(None), when),
        ),
        field(
            "seen",
            &format!(
                "{} times{}",
                m.use_count,
                m.last_used_at
                    .as_deref()
                    .map(|t| format!(", last {}", when(t)))
                    .unwrap_or_default()
            ),
        ),
        cited,
        field("metadata", &format!("<code>{}</code>", esc(&metadata))),
        field("uid", &format!("<code>{}</code>", esc(&m.uid))),
    ]
    .concat();
    let subject = m
        .subject
        .as_deref()
        .map(|s| format!("<span class=\"subject\">{}</span>", esc(s)))
        .unwrap_or_default();
    let body = format!(
        "<nav class=\"crumbs\" aria-label=\"Breadcrumb\"><a href=\"./\">Memories</a> / #{id}</nav>\
         <article class=\"memory-page\" id=\"memory\" data-id=\"{id}\" data-rev=\"{rev}\" data-namespace=\"{ns}\">\
         <header><h1>#{id} <span class=\"cat c-{cat}\">{cat}</span> <span class=\"rev\" id=\"rev\">rev {rev}</span></h1></header>\
         {subject}<p class=\"content\" id=\"content\">{content}</p>{chain}\
         <div class=\"changed-banner\" id=\"changed\" role=\"status\" hidden></div>\
         <dl class=\"fields\">{fields}</dl></article>\
         <section class=\"edit\" aria-labelledby=\"edit-h\"><h2 id=\"edit-h\">Correct it</h2>\
         <noscript><p class=\"hint\">Editing needs JavaScript; everything here reads without it.</p></noscript>\
         <form id=\"edit\" class=\"edit-form\" data-id=\"{id}\" data-rev=\"{rev}\">\
         <label class=\"wide\">Content<textarea name=\"content\" rows=\"5\" required>{content}</textarea></label>\
         <label>Subject<input name=\"subject\" value=\"{subj}\"></label>\
         <label>Tags<input name=\"tags\" value=\"{tags}\" placeholder=\"comma, separated\"></label>\
         <label>Category<select name=\"category\">{cats}</select></label>\
         <label>Tier{tier}</label>\
         <label>Importance{importance}</label>\
         <label>Status{status}</label>\
         <label class=\"check\"><input type=\"checkbox\" name=\"pinned\"{pinned}> Pinned</label>\
         <div class=\"refusal\" id=\"refusal\" role=\"alert\" hidden></div>\
         <div class=\"actions\"><button type=\"submit\" id=\"save\">Save</button>\
         <button type=\"button\" class=\"danger\" id=\"forget\">Forget…</button>\
         <button type=\"button\" class=\"danger\" id=\"purge\" title=\"Erase it and every trace of its text: history, backups, frozen blocks\">Purge…</button>\
         <span class=\"result\" id=\"result\" role=\"status\"></span></div></form></section>\
         <section class=\"history\" aria-labelledby=\"hist-h\"><h2 id=\"hist-h\">History</h2>{history}</section>",
        id = m.id,
        rev = m.rev,
        ns = esc(&m.namespace),
        cat = esc(&m.category),
        content = esc(&m.content),
        subj = esc(m.subject.as_deref().unwrap_or("")),
        tags = esc(&tags),
        tier = choose("tier", &m.tier.to_string(), &["1", "2", "3"]),
        importance = choose("importance", &m.importance, &["low", "medium", "high"]),
        status = choose("status", &m.status, &["promoted", "candidate", "archived"]),
        pinned = if m.pinned { " checked" } else { "" },
        history = history_html(&m, &history.revisions, &history.authors),
    );
    html(frame(&here, &format!("#{id}"), Tab::Memories, &body))
}

/// `GET /sessions`: the named sessions.
pub async fn sessions(State(app): State<App>, here: Here) -> HttpResponse {
    let l = match person()
        .run(
            &app,
            Request::SessionList(SessionListRequest {
                all_namespaces: true,
            }),
            None,
        )
        .await
    {
        Ok(Response::Sessions(l)) => l,
        Ok(_) => return failed(&here, &super::memories::unexpected()),
        Err(p) => return failed(&here, &p),
    };
    let mut rows = String::new();
    for s in &l.sessions {
        let _ = write!(
            rows,
            "<tr><td><a href=\"sessions/{nse}/{namee}\">{name}</a></td><td>{ns}</td><td>{agent}</td>\
             <td>{conn}</td><td>{idle}</td><td>{block}</td></tr>",
            nse = enc(&s.namespace),
            namee = enc(&s.name),
            name = esc(&s.name),
            ns = esc(&s.namespace),
            agent = esc(&s.agent),
            conn = s.connections,
            idle = idle(s.idle_secs),
            block = if s.has_block { "frozen" } else { "none yet" },
        );
    }
    let body = if l.sessions.is_empty() {
        "<h1>Sessions</h1><p class=\"summary\">No named session. An agent host (Claude Code, Codex, an MCP server) \
         or <code>--session NAME</code> makes one; each is told a frozen memory block.</p>"
            .to_string()
    } else {
        format!(
            "<h1>Sessions</h1><p class=\"summary\">{} named sessions. Each one's memory block stays byte for byte \
             the same until it writes or compacts.</p><table class=\"table\"><thead><tr><th>Session</th>\
             <th>Namespace</th><th>Agent</th><th>Connections</th><th>Idle</th><th>Block</th></tr></thead>\
             <tbody id=\"list\">{rows}</tbody></table>",
            l.sessions.len()
        )
    };
    html(frame(&here, "Sessions", Tab::Sessions, &body))
}

fn idle(secs: u64) -> String {
    match secs {
        s if s < 60 => format!("{s} s"),
        s if s < 3_600 => format!("{} min", s / 60),
        s if s < 86_400 => format!("{} h", s / 3_600),
        s => format!("{} d", s / 86_400),
    }
}

/// `GET /sessions/{namespace}/{name}`: the exact block a session was
/// given, and the memories in it.
pub async fn session(
    State(app): State<App>,
    here: Here,
    Path((namespace, name)): Path<(String, String)>,
) -> HttpResponse {
    let caller = person();
    let d = match caller
        .run(
            &app,
            Request::SessionShow(SessionShowRequest {
                namespace: namespace.clone(),
                name: name.clone(),
            }),
            None,
        )
        .await
    {
        Ok(Response::SessionShown(d)) => d,
        Ok(_) => return failed(&here, &super::memories::unexpected()),
        Err(p) => return failed(&here, &p),
    };
    let mut rows = String::new();
    for (id, rev) in &d.block_rows {
        let now = match caller
            .run(
                &app,
                Request::Get(GetRequest {
                    id: *id,
                    include_inactive: true,
                }),
                None,
            )
            .await
        {
            Ok(Response::Memory(r)) => Some(r.memory),
            _ => None,
        };
        let state = match &now {
            None => "<span class=\"status s-archived\">gone</span>".to_string(),
            Some(m) if m.rev != *rev => format!(
                "<span class=\"status s-candidate\" title=\"the block shows rev {rev}\">changed since: rev {}</span>",
                m.rev
            ),
            Some(_) => "<span class=\"none\">as given</span>".to_string(),
        };
        let content = now
            .as_ref()
            .map(|m| esc(&page::clip(&m.content, 120)))
            .unwrap_or_default();
        let _ = write!(
            rows,
            "<tr><td><a href=\"m/{id}\">#{id}</a></td><td>{rev}</td><td>{state}</td><td>{content}</td></tr>"
        );
    }
    let block = match &d.block {
        Some(b) => format!(
            "<p class=\"summary\">Built {} at generation {} · {} of {} eligible memories · {} of {} characters · \
             hash <code>{}</code></p><pre class=\"block\" id=\"block\">{}</pre>\
             <h2>The memories in it</h2><table class=\"table\"><thead><tr><th>Memory</th><th>Rev given</th>\
             <th>Now</th><th>Content now</th></tr></thead><tbody>{rows}</tbody></table>",
            d.built_at
                .as_deref()
                .map_or_else(|| "(before this daemon kept the time)".into(), when),
            b.built_at_generation,
            b.stats.included,
            b.stats.eligible,
            b.stats.chars,
            b.stats.budget,
            esc(&b.hash),
            esc(&b.block),
        ),
        None => "<p class=\"summary\">No block yet: it is built at the session's next inject.</p>"
            .into(),
    };
    let body = format!(
        "<nav class=\"crumbs\" aria-label=\"Breadcrumb\"><a href=\"sessions\">Sessions</a> / {name}</nav>\
         <h1>{name}</h1><dl class=\"fields\">{ns}{agent}{policy}{hold}{seen}{conns}</dl>{block}",
        name = esc(&d.info.name),
        ns = field("namespace", &esc(&d.info.namespace)),
        agent = field("agent", &esc(&d.info.agent)),
        policy = field("drift policy", &esc(d.policy.as_str())),
        hold = field(
            "block changes",
            if d.hold_block {
                "only at compaction, clear or refresh (a hook host keeps it in its history)"
            } else {
                "after the session's own writes, compaction or refresh"
            }
        ),
        seen = field("seen generation", &d.info.seen_generation.to_string()),
        conns = field("connections", &d.info.connections.to_string()),
    );
    html(frame(&here, &d.info.name, Tab::Sessions, &body))
}

/// `GET /drift`: the drift guard, recent drift events, backups.
pub async fn drift(State(app): State<App>, here: Here) -> HttpResponse {
    let s = match status(&app).await {
        Ok(s) => s,
        Err(p) => return failed(&here, &p),
    };
    let d = &s["drift"];
    let mut events = String::new();
    for e in d["recent"].as_array().into_iter().flatten() {
        let _ = write!(
            events,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            when(e["at"].as_str().unwrap_or("")),
            e["generation"],
            esc(e["reason"].as_str().unwrap_or(""))
        );
    }
    let mut backups = String::new();
    for b in d["backups"].as_array().into_iter().flatten() {
        let _ = write!(
            backups,
            "<tr><td><code>{}</code></td><td>{}</td><td>{} KB</td></tr>",
            esc(b["file"].as_str().unwrap_or("")),
            when(b["at"].as_str().unwrap_or("")),
            b["bytes"].as_u64().unwrap_or(0).div_ceil(1024)
        );
    }
    let table = |head: &str, rows: &str, none: &str| {
        if rows.is_empty() {
            format!("<p class=\"none\">{none}</p>")
        } else {
            format!(
                "<table class=\"table\"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
            )
        }
    };
    let body = format!(
        "<h1>Drift</h1><p class=\"summary\">When another tool (a <code>sqlite3</code> shell, a script) changes \
         the database, memd notices, and refuses a write made on a view older than that change, keeping a \
         backup of every row. Policy <strong>{policy}</strong> · generation {g} · last external change \
         {last}.</p><h2>Recent drift events</h2>{events}<h2>Backups</h2>{backups}\
         <p class=\"hint\">A backup is a JSON file of every row; <code>memd import FILE</code> brings rows back.</p>",
        policy = esc(d["policy"].as_str().unwrap_or("")),
        g = s["generation"],
        last = d["last_drift_at"]
            .as_str()
            .map_or_else(|| "none".into(), when),
        events = table(
            "<th>When</th><th>Generation</th><th>What</th>",
            &events,
            "No drift since the daemon started."
        ),
        backups = table(
            "<th>File</th><th>When</th><th>Size</th>",
            &backups,
            "No drift backup."
        ),
    );
    html(frame(&here, "Drift", Tab::Drift, &body))
}

/// `GET /team`: team memory's connection.
pub async fn team(State(app): State<App>, here: Here) -> HttpResponse {
    let s = match status(&app).await {
        Ok(s) => s,
        Err(p) => return failed(&here, &p),
    };
    let t = &s["team"];
    let body = if t.is_null() {
        "<h1>Team</h1><p class=\"summary\">Team memory is off on this machine: no <code>[team]</code> section \
         in the config. With one, the namespaces it names are shared through the team's PostgreSQL \
         (see docs/team.md).</p>"
            .to_string()
    } else {
        let v = |k: &str| match &t[k] {
            Value::Null => "<span class=\"none\">—</span>".to_string(),
            Value::String(s) => esc(s),
            other => esc(&other.to_string()),
        };
        format!(
            "<h1>Team</h1><dl class=\"fields\">{}{}{}{}{}{}{}{}{}</dl>{}",
            field("server", &v("url")),
            field("this machine", &v("machine")),
            field("shared namespaces", &v("namespaces")),
            field("connected", &v("connected")),
            field("caught up", &v("synced")),
            field("applied", &v("applied")),
            field("lag", &v("lag")),
            field(
                "last pull",
                &t["last_pull_at"]
                    .as_str()
                    .map_or_else(|| v("last_pull_at"), when)
            ),
            field("last error", &v("last_error")),
            review_section(&app).await,
        )
    };
    html(frame(&here, "Team", Tab::Team, &body))
}

/// The team page's review queue: the namespaces that require review and
/// the open proposals this machine's role may see (decided with `memd team
/// review approve|reject`).
async fn review_section(app: &App) -> String {
    let queue = match app.shared.store.wing().review_queue().await {
        None => return String::new(),
        Some(Ok(q)) => q,
        Some(Err(e)) => {
            return format!(
                "<h2>Review</h2><p class=\"summary\">The review queue could not be read: {}</p>",
                esc(&e.to_string())
            );
        }
    };
    let required = if queue.required.is_empty() {
        "No namespace requires review.".to_string()
    } else {
        format!(
            "Review is required in {}.",
            queue
                .required
                .iter()
                .map(|g| format!("<code>{}</code>", esc(g)))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    let n = queue.proposals.len();
    let mut out = format!(
        "<h2>Review</h2><p class=\"summary\">{required} {n} open proposal{} that role \
         <code>{}</code> may see.</p>",
        if n == 1 { "" } else { "s" },
        esc(&queue.role),
    );
    if queue.proposals.is_empty() {
        return out;
    }
    out.push_str(
        "<table class=\"table\"><thead><tr><th>#</th><th>what</th><th>namespace</th>\
         <th>proposed by</th><th>when</th><th>text</th></tr></thead><tbody>",
    );
    for p in &queue.proposals {
        let by = match (&p.machine, &p.agent) {
            (Some(m), Some(a)) => format!("{} ({m}, {a})", p.proposed_by),
            (Some(m), None) => format!("{} ({m})", p.proposed_by),
            _ => p.proposed_by.clone(),
        };
        let text = match &p.current {
            Some(now) => format!("<del>{}</del><br><ins>{}</ins>", esc(now), esc(&p.content)),
            None if p.action == "forget" => format!("<del>{}</del>", esc(&p.content)),
            None => esc(&p.content),
        };
        out.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{text}</td></tr>",
            p.id,
            esc(&p.action),
            esc(&p.namespace),
            esc(&by),
            when(&p.proposed_at),
        ));
    }
    out.push_str(
        "</tbody></table><p class=\"hint\">A reviewer decides with <code>memd team review \
         approve ID</code> or <code>memd team review reject ID --reason …</code>.</p>",
    );
    out
}
