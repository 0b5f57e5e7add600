//! `GET /`: the newest memories, or a search's hits, with the filters.

use std::fmt::Write;

use axum::extract::{RawQuery, State};
use axum::response::Response as HttpResponse;
use memd_proto::{ListRequest, Memory, QuerySyntax, Request, Response, SearchMode, SearchRequest};

use super::page::{Here, Tab, esc, frame, memory_item};
use super::{PAGE, failed, html, status};
use crate::http::App;
use crate::http::caller::Caller;
use crate::http::memories::{LIST_PARAMS, filter};
use crate::http::params::Params;
use crate::http::problem::Problem;

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
                return Err(crate::http::memories::unexpected());
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
                return Err(crate::http::memories::unexpected());
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

/// The filters' fields, each showing what `query` chose: the namespaces
/// with their counts (from `status`), the configured categories.
fn filters_html(query: &Query, status: &serde_json::Value, categories: &[String]) -> String {
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
    let categories: Vec<(String, String)> =
        categories.iter().map(|c| (c.clone(), c.clone())).collect();
    let pairs = |xs: &[&str]| -> Vec<(String, String)> {
        xs.iter()
            .map(|x| ((*x).to_string(), (*x).to_string()))
            .collect()
    };
    [
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
    .concat()
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
    let total = status["counts"]["memories"].as_i64().unwrap_or(0);
    let filters = filters_html(&query, &status, &app.shared.config().memory.categories);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filters_show_what_the_query_chose_escaped() {
        let params = Params::parse(Some("namespace=shop&tag=%3Cb%3E&tier=2"), LIST_PARAMS).unwrap();
        let query = Query {
            params,
            q: String::new(),
            offset: 0,
        };
        let status = serde_json::json!({"counts": {"by_namespace": [
            {"namespace": "shop", "memories": 3},
            {"namespace": "ops", "memories": 1},
        ]}});
        let html = filters_html(&query, &status, &["fact".to_string()]);
        assert!(
            html.contains("<option value=\"shop\" selected>shop (3)</option>"),
            "{html}"
        );
        assert!(
            html.contains("<option value=\"ops\">ops (1)</option>"),
            "{html}"
        );
        assert!(
            html.contains("<option value=\"2\" selected>2</option>"),
            "{html}"
        );
        assert!(
            html.contains("<option value=\"fact\">fact</option>"),
            "{html}"
        );
        assert!(html.contains("value=\"&lt;b&gt;\""), "{html}");
        assert!(!html.contains("<b>"), "{html}");
    }
}
