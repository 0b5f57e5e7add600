//! `GET /m/{id}`: one memory — its fields, the code it cites, its
//! supersession chain, its history — and the form that corrects it.

use std::fmt::Write;

use axum::extract::{Path, State};
use axum::response::Response as HttpResponse;
use memd_proto::{GetRequest, HistoryRequest, Memory, Request, Response};
use serde_json::Value;

use super::page::{Here, Tab, enc, esc, frame, when};
use super::{failed, html, person};
use crate::http::App;
use crate::http::problem::Problem;

pub(super) fn field(name: &str, value: &str) -> String {
    format!("<dt>{}</dt><dd>{}</dd>", esc(name), value)
}

pub(super) fn opt(v: Option<&str>) -> String {
    v.map_or_else(|| "<span class=\"none\">—</span>".into(), esc)
}

/// A version of a memory, for the history: what a revision kept, or the
/// row as it is now.
#[derive(Clone, Default)]
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
                parts.push(format!(
                    "session <code>{}</code>",
                    esc(&super::page::clip(s, 24))
                ));
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

/// Every version of `current` the history keeps, oldest first, the
/// current row last.
fn versions_of(current: &Memory, revisions: &[memd_proto::Revision]) -> Vec<Version> {
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
    versions
}

/// What changed from version `p` to `v`: a word diff of the text and a
/// list of the fields that differ.
fn changes_html(p: &Version, v: &Version) -> String {
    let mut changes = Vec::new();
    if p.content != v.content {
        changes.push(format!(
            "<p class=\"diff\">{}</p>",
            super::page::word_diff(&p.content, &v.content)
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
    changes.concat()
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
    let versions = versions_of(current, revisions);
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
        } else {
            let _ = write!(out, " · {}</p>", author(by(v.rev)));
            out.push_str(&changes_html(&versions[k - 1], v));
        }
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
        Ok(_) => return failed(&here, &crate::http::memories::unexpected()),
        Err(p) => return failed(&here, &p),
    };
    let history = match caller
        .run(&app, Request::History(HistoryRequest { id }), None)
        .await
    {
        Ok(Response::History(h)) => h,
        Ok(_) => return failed(&here, &crate::http::memories::unexpected()),
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
            .map(|c| field("cites", &super::page::citations(c)))
            .unwrap_or_default(),
        _ => String::new(),
    };
    let categories = app.shared.config().memory.categories.clone();
    let body = memory_body(&m, &history, &cited, &categories);
    html(frame(&here, &format!("#{id}"), Tab::Memories, &body))
}

/// The chain a memory is in, when it is more than itself: each link to
/// its page, this one in bold.
fn chain_html(m: &Memory, chain: &[Memory]) -> String {
    if chain.len() < 2 {
        return String::new();
    }
    let links: Vec<String> = chain
        .iter()
        .map(|c| {
            if c.id == m.id {
                format!("<strong>#{}</strong>", c.id)
            } else {
                format!("<a href=\"m/{0}\">#{0}</a>", c.id)
            }
        })
        .collect();
    format!("<p class=\"chain\">Supersession: {}</p>", links.join(" → "))
}

/// Every field of a memory as a definition list's items; `cited`, the
/// code it cites (rendered already), before its metadata.
fn fields_html(m: &Memory, cited: String) -> String {
    let metadata = serde_json::from_str::<Value>(&m.metadata).map_or_else(
        |_| m.metadata.clone(),
        |v| serde_json::to_string_pretty(&v).unwrap_or_default(),
    );
    [
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
    .concat()
}

/// A `<select>` of `values` with `current` chosen.
fn choose(name: &str, current: &str, values: &[&str]) -> String {
    let mut s = format!("<select name=\"{name}\">");
    for v in values {
        let sel = if *v == current { " selected" } else { "" };
        let _ = write!(s, "<option{sel}>{v}</option>");
    }
    s.push_str("</select>");
    s
}

/// A memory's page: its text, chain, fields (`cited`: the code it cites,
/// rendered), the form that corrects it (`categories`: what its category
/// choice offers) and its history.
fn memory_body(
    m: &Memory,
    history: &memd_proto::History,
    cited: &str,
    categories: &[String],
) -> String {
    let chain = chain_html(m, &history.chain);
    let mut cats = String::new();
    for c in categories {
        let sel = if *c == m.category { " selected" } else { "" };
        let _ = write!(cats, "<option{sel}>{}</option>", esc(c));
    }
    let tags = m.tags.join(", ");
    let fields = fields_html(m, cited.to_string());
    let subject = m
        .subject
        .as_deref()
        .map(|s| format!("<span class=\"subject\">{}</span>", esc(s)))
        .unwrap_or_default();
    format!(
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
        history = history_html(m, &history.revisions, &history.authors),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn memory(id: i64, content: &str) -> Memory {
        Memory {
            id,
            rev: 2,
            content: content.into(),
            category: "fact".into(),
            namespace: "shop".into(),
            ..Memory::default()
        }
    }

    #[test]
    fn a_memory_page_escapes_its_text_and_links_its_chain() {
        let m = memory(7, "the cache runs on <port> 6380");
        let history = memd_proto::History {
            chain: vec![memory(3, "old"), m.clone()],
            revisions: Vec::new(),
            generation: 1,
            authors: Vec::new(),
        };
        let categories = ["fact".to_string(), "note".to_string()];
        let page = memory_body(&m, &history, "<dt>cites</dt><dd>x</dd>", &categories);
        assert!(
            page.contains("the cache runs on &lt;port&gt; 6380"),
            "{page}"
        );
        assert!(!page.contains("<port>"));
        assert!(
            page.contains("Supersession: <a href=\"m/3\">#3</a> → <strong>#7</strong>"),
            "{page}"
        );
        assert!(page.contains("data-rev=\"2\""));
        assert!(page.contains("<option selected>fact</option><option>note</option>"));
        assert!(
            page.contains("<dt>cites</dt><dd>x</dd>"),
            "the citations are among the fields"
        );
        assert_eq!(
            chain_html(&m, std::slice::from_ref(&m)),
            "",
            "a chain of one is not shown"
        );
    }

    #[test]
    fn a_version_shows_what_changed_and_only_that() {
        let before = Version {
            rev: 1,
            content: "the cache runs on 6379".into(),
            category: "fact".into(),
            tier: Some(1),
            ..Version::default()
        };
        let after = Version {
            rev: 2,
            content: "the cache runs on 6380".into(),
            tier: Some(2),
            ..before.clone()
        };
        let html = changes_html(&before, &after);
        assert!(html.contains("<del>1</del> → <ins>2</ins>"), "{html}");
        assert!(html.contains("class=\"diff\""), "{html}");
        assert!(
            !html.contains("category"),
            "an unchanged field is not listed: {html}"
        );
        let same = changes_html(&before, &before);
        assert!(
            same.contains("No change of what the history keeps"),
            "{same}"
        );
    }

    #[test]
    fn the_history_lists_the_current_row_after_its_revisions() {
        let m = memory(7, "now");
        let versions = versions_of(&m, &[]);
        assert_eq!(versions.len(), 1);
        assert_eq!(versions[0].op, "current");
        let html = history_html(&m, &[], &[]);
        assert!(html.contains("rev 2 · now"), "{html}");
        assert!(html.contains("created by ?"), "{html}");
    }
}
