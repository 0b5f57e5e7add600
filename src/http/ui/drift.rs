//! `GET /drift`: what the drift guard saw and refused.

use std::fmt::Write;

use axum::extract::State;
use axum::response::Response as HttpResponse;

use super::page::{Here, Tab, esc, frame, when};
use super::{failed, html, status};
use crate::http::App;

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
