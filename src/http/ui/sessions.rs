//! `GET /sessions` and `GET /sessions/{namespace}/{name}`: the named
//! sessions, and the exact block one was given.

use std::fmt::Write;

use axum::extract::{Path, State};
use axum::response::Response as HttpResponse;
use memd_proto::{GetRequest, Request, Response, SessionListRequest, SessionShowRequest};

use super::memory::field;
use super::page::{Here, Tab, enc, esc, frame, when};
use super::{failed, html, person};
use crate::http::App;

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
        Ok(_) => return failed(&here, &crate::http::memories::unexpected()),
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
        Ok(_) => return failed(&here, &crate::http::memories::unexpected()),
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
            .map(|m| esc(&super::page::clip(&m.content, 120)))
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
