//! Code citations in the client's commands: a memory's citations pinned
//! when it is written (`--cites`, and the paths its text names), their
//! verdicts computed in this process's checkout for what a command shows
//! (`get`, `search`, `check --citations`, the block a hook injects) and
//! reported to the daemon, which keeps the last ones (see `crate::cite`).

use std::collections::HashMap;
use std::path::Path;

use memd_client::Client;
use memd_client::proto::cite::{self, Checked, Cite, Verdict};
use memd_client::proto::{AddRequest, Memory};
use serde_json::{Map, Value, json};

use super::CommandError;
use super::output::Output;
use crate::cite::{Checker, Checkout};

/// Pins the citations of a new memory into its metadata: each of
/// `explicit` (refused with its reason when it is not a file or lines of
/// this checkout), and, unless `recognise` is off, the paths of files of
/// the checkout its text names. Outside a checkout only `explicit` is an
/// error.
///
/// # Errors
/// [`CommandError::Usage`] for a citation refused.
pub fn pin(req: &mut AddRequest, explicit: &[String], recognise: bool) -> Result<(), CommandError> {
    let Some(checkout) = Checkout::here() else {
        if explicit.is_empty() {
            return Ok(());
        }
        return Err(CommandError::Usage(
            "--cites names code of a git checkout: run it inside one".into(),
        ));
    };
    let commit = checkout.clean_commit();
    let mut cites: Vec<Cite> = Vec::new();
    for spec in explicit {
        let parsed = Cite::parse(spec).map_err(CommandError::Usage)?;
        let pinned = checkout
            .pin(&parsed, commit.as_deref())
            .map_err(|e| CommandError::Usage(format!("citation refused: {e}")))?;
        if !cites.iter().any(|c| c.place() == pinned.place()) {
            cites.push(pinned);
        }
    }
    if recognise {
        for c in checkout.recognise(&req.content, commit.as_deref()) {
            if cites.len() < cite::MAX_PER_MEMORY && !cites.iter().any(|k| k.place() == c.place()) {
                cites.push(c);
            }
        }
    }
    if cites.is_empty() {
        return Ok(());
    }
    let mut meta: Map<String, Value> = match req.metadata.as_deref() {
        Some(text) => serde_json::from_str(text)
            .map_err(|e| CommandError::Usage(format!("metadata is not a JSON object: {e}")))?,
        None => Map::new(),
    };
    meta.insert(
        cite::METADATA_KEY.into(),
        cites.iter().map(Cite::to_json).collect(),
    );
    req.metadata = Some(Value::Object(meta).to_string());
    Ok(())
}

/// The places a memory's metadata cites (`path:N-M`).
pub fn places(metadata: Option<&str>) -> Vec<String> {
    metadata
        .and_then(|m| cite::from_metadata(m).ok())
        .unwrap_or_default()
        .iter()
        .map(Cite::place)
        .collect()
}

/// An add's output says what the memory cites: `cites` in the JSON, a
/// line in the text (a person sees what the text was taken to name).
pub fn tell_cited(out: &mut Output, places: &[String]) {
    if places.is_empty() {
        return;
    }
    if let Value::Object(fields) = &mut out.json {
        fields.insert("cites".into(), json!(places));
    }
    out.human
        .push_str(&format!("\ncites {}", places.join(", ")));
}

/// `update --cites`: the citations given, pinned now, replace the
/// memory's (the metadata's `cites` key; its other keys as given).
///
/// # Errors
/// [`CommandError::Usage`] outside a checkout or for a citation refused.
pub fn repin(
    mut req: memd_client::UpdateRequest,
    explicit: &[String],
) -> Result<memd_client::UpdateRequest, CommandError> {
    if explicit.is_empty() {
        return Ok(req);
    }
    let mut add = AddRequest {
        metadata: req.metadata.take(),
        ..AddRequest::default()
    };
    pin(&mut add, explicit, false)?;
    req.metadata = add.metadata;
    Ok(req)
}

/// The checkout `dir` is in (this process's directory when `None`).
fn checkout(dir: Option<&Path>) -> Option<Checkout> {
    match dir {
        Some(d) => Checkout::find(d),
        None => Checkout::here(),
    }
}

/// The verdicts on the citations of `memories` (id and metadata) in the
/// checkout of `dir` (see [`checkout`]) — `unchecked` outside one — by
/// memory; reported to the daemon (a failed report changes nothing shown).
pub async fn check<'a>(
    client: &mut Client,
    dir: Option<&Path>,
    memories: impl IntoIterator<Item = (i64, &'a str)>,
) -> HashMap<i64, Vec<Checked>> {
    let out = verdicts(dir, memories);
    let report: Vec<Checked> = out
        .values()
        .flatten()
        .filter(|c| c.reason.as_deref() != Some(NO_CHECKOUT))
        .cloned()
        .collect();
    for part in report.chunks(cite::MAX_REPORT) {
        if let Err(e) = client.report_verdicts(part.to_vec()).await {
            tracing::debug!(error = %e, "verdicts not reported");
            break;
        }
    }
    out
}

/// Why a citation is `unchecked` outside a checkout.
const NO_CHECKOUT: &str = "not in a git checkout";

/// [`check`] without the report (`memd doctor` changes nothing).
pub fn verdicts<'a>(
    dir: Option<&Path>,
    memories: impl IntoIterator<Item = (i64, &'a str)>,
) -> HashMap<i64, Vec<Checked>> {
    let cited: Vec<(i64, Vec<Cite>)> = memories
        .into_iter()
        .filter_map(|(id, metadata)| Some((id, cite::from_metadata(metadata).ok()?)))
        .filter(|(_, cites)| !cites.is_empty())
        .collect();
    let mut out: HashMap<i64, Vec<Checked>> = HashMap::new();
    if cited.is_empty() {
        return out;
    }
    let mut checker = checkout(dir).map(Checker::new);
    for (id, cites) in cited {
        for c in cites {
            let checked = match checker.as_mut() {
                Some(checker) => checker.check(id, &c),
                None => Checked {
                    id,
                    cite: c,
                    verdict: Verdict::Unchecked,
                    now: None,
                    reason: Some(NO_CHECKOUT.into()),
                },
            };
            out.entry(id).or_default().push(checked);
        }
    }
    out
}

/// Every cited memory of the session's namespace, checked in the checkout
/// of `dir` (the hook's step before a block is built, `memd check
/// --citations`, `memd doctor`), the verdicts reported when `report`.
///
/// # Errors
/// Transport and daemon errors.
pub async fn check_namespace(
    client: &mut Client,
    dir: Option<&Path>,
    report: bool,
) -> Result<Vec<(cite::Cited, Vec<Checked>)>, CommandError> {
    let list = client.citations(false).await?;
    let meta: Vec<(i64, String)> = list
        .memories
        .iter()
        .map(|m| {
            let cites: Vec<Value> = m.cites.iter().map(Cite::to_json).collect();
            (m.id, json!({ cite::METADATA_KEY: cites }).to_string())
        })
        .collect();
    let memories = meta.iter().map(|(id, m)| (*id, m.as_str()));
    let mut checked = if report {
        check(client, dir, memories).await
    } else {
        verdicts(dir, memories)
    };
    Ok(list
        .memories
        .into_iter()
        .map(|m| {
            let c = checked.remove(&m.id).unwrap_or_default();
            (m, c)
        })
        .collect())
}

/// The session's block, its namespace's citations checked first in the
/// checkout of `dir` when there is one (a block built now marks them by
/// these verdicts; a frozen one stays as it is).
///
/// # Errors
/// Transport and daemon errors.
pub async fn inject(
    client: &mut Client,
    dir: Option<&Path>,
) -> Result<memd_client::proto::Injection, CommandError> {
    // Outside a checkout there is nothing to judge (and nothing to ask).
    if checkout(dir).is_some() {
        check_namespace(client, dir, true).await?;
    }
    Ok(client.inject().await?)
}

/// A verdict as JSON: `{place, verdict, now?, reason?}`.
pub fn verdict_json(c: &Checked) -> Value {
    let mut v = Map::new();
    v.insert("place".into(), json!(c.cite.place()));
    v.insert("verdict".into(), json!(c.verdict.name()));
    if let Some(now) = &c.now {
        v.insert("now".into(), json!(now.place()));
    }
    if let Some(r) = &c.reason {
        v.insert("reason".into(), json!(r));
    }
    Value::Object(v)
}

/// `get`'s output with the memory's verdicts: `citations` in the JSON, a
/// line for each in the text.
pub async fn annotate_memory(out: &mut Output, m: &Memory, client: &mut Client) {
    let checked = check(client, None, [(m.id, m.metadata.as_str())]).await;
    let Some(list) = checked.get(&m.id) else {
        return;
    };
    if let Value::Object(fields) = &mut out.json {
        fields.insert("citations".into(), list.iter().map(verdict_json).collect());
    }
    for c in list {
        let line = c
            .mark()
            .unwrap_or_else(|| format!("cited code fresh: {}", c.cite.place()));
        out.human.push_str(&format!("\n{line}"));
    }
}

/// `search`'s output with each hit's verdicts: `citations` on a hit in the
/// JSON (the MCP tool's compact hit keeps it), the marks on its line.
pub async fn annotate_hits(
    out: &mut Output,
    hits: &[memd_client::proto::Hit],
    client: &mut Client,
) {
    let checked = check(
        client,
        None,
        hits.iter()
            .map(|h| (h.memory.id, h.memory.metadata.as_str())),
    )
    .await;
    if checked.is_empty() {
        return;
    }
    if let Some(Value::Array(items)) = out.json.get_mut("hits") {
        for item in items.iter_mut() {
            let id = item["id"].as_i64().unwrap_or_default();
            if let (Some(list), Value::Object(fields)) = (checked.get(&id), item) {
                fields.insert("citations".into(), list.iter().map(verdict_json).collect());
            }
        }
    }
    let lines: Vec<String> = out
        .human
        .lines()
        .map(|line| {
            let marks = hits
                .iter()
                .find(|h| line.contains(&format!("#{} ", h.memory.id)))
                .and_then(|h| checked.get(&h.memory.id))
                .map(|list| {
                    list.iter()
                        .filter_map(Checked::mark)
                        .collect::<Vec<_>>()
                        .join("; ")
                })
                .filter(|m| !m.is_empty());
            match marks {
                Some(m) => format!("{line}  [{m}]"),
                None => line.to_string(),
            }
        })
        .collect();
    out.human = lines.join("\n");
}

/// `check --citations`: the stale citations of the namespace, each with
/// the command that updates or forgets its memory; exit 1 when there are
/// any.
///
/// # Errors
/// Transport and daemon errors.
pub async fn check_output(client: &mut Client) -> Result<Output, CommandError> {
    let all = check_namespace(client, None, true).await?;
    let mut stale = Vec::new();
    let mut human = Vec::new();
    let mut total = 0;
    for (m, checked) in &all {
        total += checked.len();
        for c in checked.iter().filter(|c| c.verdict.is_stale()) {
            let fix = match (c.verdict, &c.now) {
                (Verdict::Moved, Some(now)) => {
                    format!("memd update {} --cites '{}'", m.id, now.place())
                }
                (Verdict::Unchecked, _) => "run it in the repository's checkout".to_string(),
                _ => format!(
                    "memd update {} --cites PLACE (after checking its text), or memd forget {}",
                    m.id, m.id
                ),
            };
            let mut v = verdict_json(c);
            v["id"] = json!(m.id);
            v["fix"] = json!(fix);
            human.push(format!(
                "#{} {}: {}\n    {}  ({})",
                m.id,
                c.verdict.name(),
                c.cite.place(),
                m.preview,
                fix
            ));
            stale.push(v);
        }
    }
    let mut fields = Map::new();
    fields.insert("ok".into(), json!(stale.is_empty()));
    fields.insert("memories".into(), json!(all.len()));
    fields.insert("citations".into(), json!(total));
    fields.insert("stale".into(), Value::Array(stale.clone()));
    let summary = format!(
        "{total} citations in {} memories; {} stale",
        all.len(),
        stale.len()
    );
    if stale.is_empty() {
        return Ok(Output {
            json: super::output::success(fields),
            human: summary,
        });
    }
    Err(CommandError::Check {
        report: Value::Object(fields),
        human: format!("{}\n{summary}", human.join("\n")),
    })
}
