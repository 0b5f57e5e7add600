//! `GET /team`: team memory's state and the proposals to review.

use axum::extract::State;
use axum::response::Response as HttpResponse;
use serde_json::Value;

use super::memory::field;
use super::page::{Here, Tab, esc, frame, when};
use super::{failed, html, status};
use crate::http::App;

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
