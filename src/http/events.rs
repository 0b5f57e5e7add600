//! `GET /v1/events`: Server-Sent Events of what changes — `change` (the
//! generation moved: a commit, here or pulled from the team), `drift`
//! (another tool changed the database), `team` (team memory's connection
//! or lag changed). The stream ends at once when the daemon stops; a
//! client that stops reading is disconnected after `limits.write_timeout_ms`
//! (see [`super::io`]).

use std::convert::Infallible;
use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde_json::{Value, json};
use tokio::sync::{broadcast, watch};

use super::App;
use super::params::Params;
use super::problem::Problem;

/// How often team memory's state is looked at for a `team` event.
const TEAM_EVERY: Duration = Duration::from_secs(1);

struct Follow {
    app: App,
    changes: watch::Receiver<u64>,
    drift: broadcast::Receiver<memd_proto::DriftEvent>,
    stop: watch::Receiver<bool>,
    team: Option<Value>,
    first: bool,
}

fn team_state(app: &App) -> Option<Value> {
    app.shared.store.wing().status().map(|s| {
        json!({
            "connected": s["connected"],
            "synced": s["synced"],
            "applied": s["applied"],
            "head": s["head"],
            "lag": s["lag"],
            "last_error": s["last_error"],
        })
    })
}

fn event(name: &str, data: &Value) -> Event {
    Event::default().event(name).data(data.to_string())
}

impl Follow {
    async fn next(&mut self) -> Option<Event> {
        if self.first {
            // Where the stream starts: the generation now.
            self.first = false;
            let g = *self.changes.borrow_and_update();
            return Some(event("change", &json!({"generation": g})));
        }
        loop {
            tokio::select! {
                biased;
                r = self.stop.wait_for(|v| *v) => {
                    let _ = r;
                    return None;
                }
                r = self.changes.changed() => {
                    if r.is_err() {
                        return None;
                    }
                    let g = *self.changes.borrow_and_update();
                    return Some(event("change", &json!({"generation": g})));
                }
                r = self.drift.recv() => match r {
                    Ok(e) => return Some(event("drift", &json!({
                        "generation": e.generation,
                        "external_epoch": e.external_epoch,
                        "at": e.at,
                        "reason": e.reason,
                    }))),
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                () = tokio::time::sleep(TEAM_EVERY), if self.team.is_some() => {
                    let now = team_state(&self.app);
                    if now != self.team {
                        self.team.clone_from(&now);
                        if let Some(t) = now {
                            return Some(event("team", &t));
                        }
                    }
                }
            }
        }
    }
}

/// `GET /v1/events`: the event stream.
pub async fn stream(
    State(app): State<App>,
    RawQuery(query): RawQuery,
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, Problem> {
    Params::parse(query.as_deref(), &[])?;
    let shared = &app.shared;
    let follow = Follow {
        changes: shared.store.generations.changes.subscribe(),
        drift: shared.store.generations.events.subscribe(),
        stop: shared.shutdown.subscribe(),
        team: team_state(&app),
        first: true,
        app: app.clone(),
    };
    let events =
        futures_util::stream::unfold(
            follow,
            |mut f| async move { f.next().await.map(|e| (Ok(e), f)) },
        );
    Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}
