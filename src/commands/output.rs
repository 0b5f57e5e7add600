//! A command's result in both forms: one compact JSON value (what `--json`
//! prints and what an MCP tool returns) and readable text (what the CLI
//! prints otherwise). Both are built from the same response, here.

use memd_client::proto::json as wire_json;
use memd_client::proto::{
    CheckReport, ImportReport, ReembedReport, RestoreReport, SessionEnded, SessionList, SweepReport,
};
use memd_client::{AddResult, ForgetResult, Memory, MemoryList, SearchResult};
use serde_json::{Map, Value, json};

/// A command's result in both forms.
#[derive(Debug)]
pub struct Output {
    /// The `--json` form.
    pub json: Value,
    /// The human form (may be empty).
    pub human: String,
}

/// `{success: true, ...fields}`.
pub fn success(mut fields: Map<String, Value>) -> Value {
    let mut obj = Map::new();
    obj.insert("success".into(), json!(true));
    obj.append(&mut fields);
    Value::Object(obj)
}

/// `text` on one line, at most `max` characters (cut with `…`), its
/// secrets redacted before the cut (a cut one may keep all but its last
/// characters and no longer be recognised).
pub fn flat(text: &str, max: usize) -> String {
    crate::gate::secrets::shorten(text, max)
}

/// One line for a memory in lists: id, category, text (shortened), tags.
pub fn memory_line(m: &Memory) -> String {
    memory_line_in(m, false)
}

/// [`memory_line`], with the memory's namespace after its id when the
/// listing spans namespaces (`#3 github.com/acme/api [fact] …`).
pub fn memory_line_in(m: &Memory, namespace: bool) -> String {
    let id = if namespace {
        format!("#{} {}", m.id, m.namespace)
    } else {
        format!("#{}", m.id)
    };
    let mut line = format!("{id} [{}] {}", m.category, flat(&m.content, 100));
    if m.pinned {
        line.insert_str(0, "* ");
    }
    if !m.tags.is_empty() {
        line.push_str(&format!("  ({})", m.tags.join(", ")));
    }
    line
}

/// Every field of a memory, one per line.
pub fn memory_detail(m: &Memory) -> String {
    let mut out = format!("#{} (rev {})\n{}\n\n", m.id, m.rev, m.content);
    let mut field = |k: &str, v: String| out.push_str(&format!("{k:<13}{v}\n"));
    field("category", m.category.clone());
    if let Some(s) = &m.subject {
        field("subject", s.clone());
    }
    if !m.tags.is_empty() {
        field("tags", m.tags.join(", "));
    }
    let owner = m
        .scope_owner
        .as_deref()
        .map(|o| format!(" ({o})"))
        .unwrap_or_default();
    field("scope", format!("{}{owner}", m.scope));
    field("namespace", m.namespace.clone());
    field(
        "tier",
        format!(
            "{}, importance {}, confidence {}",
            m.tier, m.importance, m.confidence
        ),
    );
    field(
        "status",
        format!("{}{}", m.status, if m.pinned { ", pinned" } else { "" }),
    );
    if m.metadata != "{}" {
        field("metadata", m.metadata.clone());
    }
    if let Some(by) = m.superseded_by {
        field(
            "superseded",
            format!("by #{by} at {}", m.superseded_at.as_deref().unwrap_or("?")),
        );
    }
    if let Some(e) = &m.expires_at {
        field("expires", e.clone());
    }
    field(
        "created",
        format!(
            "{} by {}",
            m.created_at,
            m.created_by.as_deref().unwrap_or(&m.source)
        ),
    );
    field("updated", m.updated_at.clone());
    if let Some(p) = &m.provenance {
        for (i, o) in p.sources.iter().enumerate() {
            let key = if i == 0 { "from" } else { "merged" };
            field(key, o.line());
        }
        field("trust", p.trust.clone());
    }
    field("uid", m.uid.clone());
    out.trim_end().to_string()
}

/// `add`.
pub fn added(r: &AddResult) -> Output {
    let mut fields = wire_json::add_result(r);
    fields.insert("generation".into(), json!(r.generation));
    let id = r.id.map(|i| format!("#{i}")).unwrap_or_default();
    let mut human = if let Some(p) = r.proposal {
        format!(
            "proposed (proposal {p}): this namespace requires review; it becomes a memory when a \
             reviewer approves it (memd team review)"
        )
    } else if r.deduped {
        format!("already stored as {id} (duplicate; observation counted)")
    } else if let Some(into) = r.merged_into {
        format!("merged into #{into} (near-duplicate)")
    } else {
        format!("stored {id}")
    };
    if let Some(similar) = r.similar_to {
        human.push_str(&format!("\nnote: similar to #{similar}"));
    }
    if let Some(d) = &r.drift {
        human.push_str(&format!(
            "\nnote: the memory changed outside this session since you last read it \
             (generation {} → {})",
            d.generation_observed, d.generation_actual
        ));
    }
    Output {
        json: success(fields),
        human,
    }
}

/// A load's counts (`ingest`, `import-md`): each count and the first
/// problems as JSON; the summary line and the problems, one a line, as text.
fn counted(counts: &[(&str, usize)], errors: &[String], summary: String) -> Output {
    let mut fields = Map::new();
    for (k, v) in counts {
        fields.insert((*k).into(), (*v).into());
    }
    fields.insert("errors".into(), errors.to_vec().into());
    let mut human = summary;
    for e in errors {
        human.push_str(&format!("\n  {e}"));
    }
    Output {
        json: success(fields),
        human,
    }
}

/// `import-md`.
pub fn imported_md(c: &super::import_md::Counts) -> Output {
    counted(
        &[
            ("files", c.files),
            ("items", c.items),
            ("added", c.added),
            ("existing", c.existing),
            ("rejected", c.rejected),
        ],
        &c.errors,
        format!(
            "{} items in {} file(s): {} added, {} already there, {} refused by the write gate",
            c.items, c.files, c.added, c.existing, c.rejected
        ),
    )
}

/// `ingest`.
pub fn ingested(c: &super::ingest::Counts) -> Output {
    counted(
        &[
            ("lines", c.lines),
            ("turns", c.turns),
            ("added", c.added),
            ("existing", c.existing),
            ("rejected", c.rejected),
            ("skipped", c.skipped),
            ("invalid", c.invalid),
        ],
        &c.errors,
        format!(
            "{} turns: {} added, {} already stored, {} refused by the write gate; {} lines \
             without a turn, {} unreadable",
            c.turns, c.added, c.existing, c.rejected, c.skipped, c.invalid
        ),
    )
}

/// `get` and `update` (with the generation of the read or write), `confirm`
/// and task moves.
pub fn memory(m: &Memory, generation: Option<u64>, verb: Option<&str>) -> Output {
    let mut fields = Map::new();
    fields.insert("memory".into(), wire_json::memory(m));
    if let Some(g) = generation {
        fields.insert("generation".into(), g.into());
    }
    let human = match verb {
        Some(v) => format!("{v} #{} (rev {})", m.id, m.rev),
        None => memory_detail(m),
    };
    Output {
        json: success(fields),
        human,
    }
}

/// `list`.
///
/// `across`: the listing may span namespaces (it asked for others): each
/// line names its memory's namespace.
pub fn list(l: &MemoryList, across: bool) -> Output {
    let mut fields = Map::new();
    fields.insert(
        "memories".into(),
        Value::Array(l.memories.iter().map(wire_json::memory).collect()),
    );
    fields.insert("count".into(), json!(l.memories.len()));
    fields.insert("generation".into(), json!(l.generation));
    let human = if l.memories.is_empty() {
        "no memories".to_string()
    } else {
        l.memories
            .iter()
            .map(|m| memory_line_in(m, across))
            .collect::<Vec<_>>()
            .join("\n")
    };
    Output {
        json: success(fields),
        human,
    }
}

/// `search` (`across` as for [`list`]).
pub fn hits(r: &SearchResult, across: bool) -> Output {
    let mut fields = Map::new();
    fields.insert(
        "hits".into(),
        Value::Array(r.hits.iter().map(wire_json::hit).collect()),
    );
    fields.insert("count".into(), json!(r.hits.len()));
    fields.insert("mode".into(), json!(r.mode.as_str()));
    fields.insert("generation".into(), json!(r.generation));
    let human = if r.hits.is_empty() {
        "no relevant memory".to_string()
    } else {
        r.hits
            .iter()
            .map(|h| {
                let mut line = format!(
                    "{:>7.3}  {}",
                    h.score,
                    memory_line_in(&h.memory, across)
                );
                if h.matched != memd_client::proto::MatchKind::Lexical {
                    line.push_str(&format!("  [{}]", h.matched.as_str()));
                }
                if let Some(parts) = h
                    .explain
                    .as_deref()
                    .and_then(|e| serde_json::from_str::<Value>(e).ok())
                {
                    line.push_str(&format!(
                        "\n         relevance {:.3} (raw {:.3}) × decay {:.3} (age {:.1} d) + pin {:.2}",
                        parts["relevance"].as_f64().unwrap_or(0.0),
                        parts["raw"].as_f64().unwrap_or(0.0),
                        parts["decay"].as_f64().unwrap_or(0.0),
                        parts["age_days"].as_f64().unwrap_or(0.0),
                        parts["pin_boost"].as_f64().unwrap_or(0.0),
                    ));
                }
                line
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    Output {
        json: success(fields),
        human,
    }
}

/// `supersede`.
pub fn superseded(r: &memd_client::proto::SupersedeResult) -> Output {
    let mut fields = Map::new();
    fields.insert("old".into(), json!(r.old));
    fields.insert("new".into(), json!(r.new));
    fields.insert("generation".into(), json!(r.generation));
    Output {
        json: success(fields),
        human: format!("#{} is superseded by #{}", r.old, r.new),
    }
}

/// `history`.
pub fn history(h: &memd_client::proto::History) -> Output {
    let mut fields = Map::new();
    fields.insert(
        "chain".into(),
        Value::Array(h.chain.iter().map(wire_json::memory).collect()),
    );
    fields.insert(
        "revisions".into(),
        Value::Array(
            h.revisions
                .iter()
                .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
                .collect(),
        ),
    );
    fields.insert("generation".into(), json!(h.generation));
    let mut human: Vec<String> = h
        .chain
        .iter()
        .map(|m| {
            let state = match m.superseded_by {
                Some(by) => format!("superseded by #{by}"),
                None => "active".to_string(),
            };
            format!("{}  ({state})", memory_line(m))
        })
        .collect();
    for r in &h.revisions {
        human.push(format!(
            "  rev {} of #{} ({} at {}): {}",
            r.rev.unwrap_or(0),
            r.memory_id,
            r.op,
            r.recorded_at,
            r.content.as_deref().unwrap_or("")
        ));
    }
    Output {
        json: success(fields),
        human: human.join("\n"),
    }
}

/// `prune`.
pub fn pruned(r: &memd_client::proto::PruneResult) -> Output {
    let mut fields = Map::new();
    fields.insert("pruned".into(), json!(r.ids));
    fields.insert("count".into(), json!(r.ids.len()));
    fields.insert("dry_run".into(), json!(r.dry_run));
    let verb = if r.dry_run { "would delete" } else { "deleted" };
    Output {
        json: success(fields),
        human: format!(
            "{verb} {} expired memor{}{}",
            r.ids.len(),
            if r.ids.len() == 1 { "y" } else { "ies" },
            if r.ids.is_empty() {
                String::new()
            } else {
                format!(
                    ": {}",
                    r.ids
                        .iter()
                        .map(|i| format!("#{i}"))
                        .collect::<Vec<_>>()
                        .join(" ")
                )
            }
        ),
    }
}

/// `task list`.
pub fn tasks(l: &MemoryList) -> Output {
    let mut out = list(l, false);
    if l.memories.is_empty() {
        out.human = "no open tasks".into();
    } else {
        out.human = l
            .memories
            .iter()
            .map(|m| {
                let meta: Value = serde_json::from_str(&m.metadata).unwrap_or_default();
                format!(
                    "[{}] {}",
                    meta["status"].as_str().unwrap_or("?"),
                    memory_line(m)
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
    }
    out
}

/// `forget --thread` / `--source`.
pub fn forgotten_where(r: &memd_client::proto::ForgottenWhere) -> Output {
    let mut fields = Map::new();
    fields.insert("forgotten".into(), json!(r.ids));
    fields.insert("count".into(), json!(r.ids.len()));
    fields.insert("dry_run".into(), json!(r.dry_run));
    fields.insert("generation".into(), json!(r.generation));
    let verb = if r.dry_run { "would forget" } else { "forgot" };
    let n = r.ids.len();
    Output {
        json: success(fields),
        human: format!("{verb} {n} memor{}", if n == 1 { "y" } else { "ies" }),
    }
}

/// `forget`.
pub fn forgotten(r: &ForgetResult) -> Output {
    let mut fields = Map::new();
    fields.insert("id".into(), json!(r.id));
    fields.insert("forgotten".into(), json!(r.proposal.is_none()));
    fields.insert("generation".into(), json!(r.generation));
    let human = match r.proposal {
        Some(p) => {
            fields.insert("status".into(), json!("proposed"));
            fields.insert("proposal".into(), json!(p));
            format!(
                "proposed forgetting #{} (proposal {p}): this namespace requires review; the \
                 memory stays until a reviewer approves it",
                r.id
            )
        }
        None => format!("forgot #{}", r.id),
    };
    Output {
        json: success(fields),
        human,
    }
}

/// `update` where the namespace requires review: the change is a
/// proposal, shown as proposed.
pub fn proposed_update(m: &Memory, proposal: i64) -> Output {
    let mut fields = Map::new();
    fields.insert("memory".into(), wire_json::memory(m));
    fields.insert("status".into(), json!("proposed"));
    fields.insert("proposal".into(), json!(proposal));
    Output {
        json: success(fields),
        human: format!(
            "proposed a change of #{} (proposal {proposal}): this namespace requires review; \
             the memory is unchanged until a reviewer approves it",
            m.id
        ),
    }
}

/// The `embedder` line of `status`: what embeds, and how far it is.
fn embedder_line(e: &Value) -> String {
    let text = |k: &str| e[k].as_str().unwrap_or("-").to_string();
    match e["state"].as_str() {
        None => "embedder     none (lexical and fuzzy search only)".to_string(),
        Some("ready") => format!(
            "embedder     {} (dim {}): {} embedded, {} pending",
            text("model"),
            e["dim"],
            e["embedded"],
            e["pending"]
        ),
        Some(state) => match e["reason"].as_str() {
            Some(why) => format!("embedder     {state}: {why}"),
            None => format!("embedder     {state}"),
        },
    }
}

/// `status`.
pub fn status(s: Value) -> Output {
    let get = |path: &[&str]| {
        let mut v = &s;
        for p in path {
            v = &v[*p];
        }
        match v {
            Value::Null => "-".to_string(),
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    };
    let human = [
        format!(
            "memd {}, protocol {}, pid {}",
            match &s["build"] {
                Value::String(b) => b.clone(),
                _ => get(&["version"]),
            },
            get(&["protocol"]),
            get(&["pid"])
        ),
        format!("socket       {}", get(&["paths", "socket"])),
        format!("database     {}", get(&["paths", "db"])),
        format!("memories     {}", get(&["counts", "memories"])),
        format!("sessions     {}", get(&["sessions"])),
        format!(
            "generation   {} (own {}, last external {})",
            get(&["generation"]),
            get(&["own_generation"]),
            get(&["drift", "external_epoch"])
        ),
        format!("drift policy {}", get(&["drift", "policy"])),
        embedder_line(&s["embedder"]),
    ]
    .into_iter()
    .chain(sweep_lines(&s["sweeps"]))
    .collect::<Vec<_>>()
    .join("\n");
    let fields = match s {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert("status".into(), other);
            m
        }
    };
    Output {
        json: success(fields),
        human,
    }
}

/// The sweep log of `status`, newest first: one line per sweep.
fn sweep_lines(sweeps: &Value) -> Vec<String> {
    let Some(list) = sweeps.as_array().filter(|l| !l.is_empty()) else {
        return vec!["sweeps       none yet".to_string()];
    };
    list.iter()
        .enumerate()
        .map(|(i, w)| {
            let c = &w["counts"];
            let counts = [
                "expired", "decayed", "demoted", "promoted", "archived", "limited", "sessions",
            ]
            .iter()
            .map(|k| format!("{} {}", c[*k], k))
            .collect::<Vec<_>>()
            .join(", ");
            let outcome = match (&w["ended_at"], &w["error"]) {
                (_, Value::String(e)) => format!("failed: {e}"),
                (Value::Null, _) => "running".to_string(),
                _ => counts,
            };
            format!(
                "{}{} ({}): {}",
                if i == 0 {
                    "sweeps       "
                } else {
                    "             "
                },
                text(&w["started_at"]),
                text(&w["trigger"]),
                outcome
            )
        })
        .collect()
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A typed reply's fields as a JSON object.
fn fields(reply: &impl serde::Serialize) -> Map<String, Value> {
    match serde_json::to_value(reply) {
        Ok(Value::Object(m)) => m,
        _ => Map::new(),
    }
}

/// `check`: success only when everything is in order. In JSON, a clean
/// integrity check or search index reads `"ok"`, a dirty one lists its
/// findings.
///
/// # Errors
/// A failed check, with the report in the JSON.
pub fn check(report: CheckReport) -> Result<Output, super::CommandError> {
    let integrity = if report.integrity == ["ok"] {
        json!("ok")
    } else {
        json!(report.integrity)
    };
    let fts_integrity = if report.fts_integrity.is_empty() {
        "ok".to_string()
    } else {
        report.fts_integrity.join("; ")
    };
    let human = format!(
        "integrity      {}\nsearch index   {} ({} rows for {} memories, {} out of sync, \
         {} without a row)\n\
         triggers       {}\nschema         v{}, generation {}",
        text(&integrity),
        fts_integrity,
        report.fts_rows,
        report.memories,
        report.fts_out_of_sync,
        report.fts_orphans,
        if report.missing_objects.is_empty() {
            "all present".to_string()
        } else {
            format!("missing {}", json!(report.missing_objects))
        },
        report.schema_version,
        report.generation,
    );
    let mut map = fields(&report);
    map.insert("integrity".into(), integrity);
    map.insert("fts_integrity".into(), json!(fts_integrity));
    if report.ok {
        Ok(Output {
            json: success(map),
            human,
        })
    } else {
        Err(super::CommandError::Check {
            report: Value::Object(map),
            human,
        })
    }
}

/// `restore`.
pub fn restored(report: &RestoreReport) -> Output {
    let mut map = fields(report);
    map.insert("restored".into(), json!(true));
    Output {
        json: success(map),
        human: format!(
            "restored {} bytes; generation {} (the file had {})",
            report.bytes, report.generation, report.generation_in_file
        ),
    }
}

/// `inject`: the block itself in human form.
pub fn injected(i: &memd_client::proto::Injection) -> Output {
    let mut fields = Map::new();
    fields.insert("block".into(), json!(i.block));
    fields.insert("hash".into(), json!(i.hash));
    fields.insert("built_at_generation".into(), json!(i.built_at_generation));
    fields.insert(
        "stats".into(),
        json!({
            "included": i.stats.included,
            "eligible": i.stats.eligible,
            "chars": i.stats.chars,
            "budget": i.stats.budget,
            "cached": i.stats.cached,
        }),
    );
    Output {
        json: success(fields),
        human: i.block.trim_end().to_string(),
    }
}

/// `compacted` and `refresh`.
pub fn invalidated() -> Output {
    let mut fields = Map::new();
    fields.insert("invalidated".into(), json!(true));
    Output {
        json: success(fields),
        human: "the memory block will be rebuilt at the next inject".into(),
    }
}

/// `sweep`.
pub fn swept(report: &SweepReport) -> Output {
    let c = &report.counts;
    Output {
        json: success(fields(report)),
        human: format!(
            "sweep{}: {} decayed, {} demoted, {} archived (tier 3), {} promoted, {} archived \
             over limits, {} expired deleted, {} session rows archived",
            if report.dry_run { " (dry run)" } else { "" },
            c.decayed,
            c.demoted,
            c.archived,
            c.promoted,
            c.limited,
            c.expired,
            c.sessions
        ),
    }
}

/// `session list`.
pub fn sessions(list: &SessionList) -> Output {
    let rows: Vec<String> = list
        .sessions
        .iter()
        .map(|s| {
            format!(
                "{}  agent {}, {} connection(s), idle {} s{}",
                s.name,
                s.agent,
                s.connections,
                s.idle_secs,
                if s.has_block { ", block frozen" } else { "" }
            )
        })
        .collect();
    Output {
        json: success(fields(list)),
        human: if rows.is_empty() {
            "no named sessions in this namespace".into()
        } else {
            rows.join("\n")
        },
    }
}

/// `capture status`.
pub fn capture_states(states: &[memd_proto::CaptureState]) -> Output {
    let rows: Vec<String> = states
        .iter()
        .map(|s| {
            let mut line = format!(
                "{}:{}  {}: {} turn(s), {} byte(s), {} redaction(s), {} marked, offset {}, \
                 last capture {}",
                s.host,
                s.session,
                s.namespace,
                s.turns,
                s.bytes,
                s.redactions,
                s.marked,
                s.offset,
                s.last_at.as_deref().unwrap_or("never"),
            );
            if s.invalid_lines > 0 {
                line.push_str(&format!(", {} line(s) not JSON", s.invalid_lines));
            }
            if let Some(e) = &s.last_error {
                line.push_str(&format!("\n  last error: {e}"));
            }
            line
        })
        .collect();
    Output {
        json: success(fields(&memd_proto::CaptureStates {
            sessions: states.to_vec(),
        })),
        human: if rows.is_empty() {
            "no captured sessions (see docs/capture.md)".into()
        } else {
            rows.join("\n")
        },
    }
}

/// `capture forget`.
pub fn capture_forgotten(session: &str, turns: u64) -> Output {
    Output {
        json: success(
            json!({ "session": session, "turns": turns })
                .as_object()
                .cloned()
                .unwrap_or_default(),
        ),
        human: format!("{turns} captured turn(s) of {session} deleted"),
    }
}

/// `session end`.
pub fn session_ended(ended: &SessionEnded) -> Output {
    Output {
        json: success(fields(ended)),
        human: format!("session {} ended", ended.ended),
    }
}

/// `team status`: the `team` part of the daemon's status.
pub fn team_status(s: Value) -> Output {
    let team = s["team"].clone();
    if team.is_null() {
        return Output {
            json: success(Map::from_iter([("team".to_string(), Value::Null)])),
            human: "team memory is off (no [team] section with a url and namespaces)".into(),
        };
    }
    let text = |k: &str| match &team[k] {
        Value::Null => "-".to_string(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let rights: Vec<String> = team["rights"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|r| {
                    format!(
                        "{}: {}",
                        r["glob"].as_str().unwrap_or("?"),
                        r["access"].as_str().unwrap_or("?")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let unreadable: Vec<&str> = team["unreadable"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut human = vec![
        format!(
            "team         {} as machine {}",
            text("url"),
            text("machine")
        ),
        format!("namespaces   {}", text("namespaces")),
        format!(
            "connected    {}{}",
            text("connected"),
            if team["synced"] == Value::Bool(true) {
                ""
            } else {
                " (not pulled yet: shared writes wait)"
            }
        ),
        format!(
            "applied      {} of {} (lag {})",
            text("applied"),
            text("head"),
            text("lag")
        ),
        format!("last pull    {}", text("last_pull_at")),
        format!("last error   {}", text("last_error")),
    ];
    if !rights.is_empty() {
        human.push(format!("rights       {}", rights.join(", ")));
    }
    if !unreadable.is_empty() {
        human.push(format!(
            "may not read {} (this machine's role has no grant there: an admin runs memd team \
             grant ROLE GLOB read)",
            unreadable.join(", ")
        ));
    }
    let human = human.join("\n");
    Output {
        json: success(Map::from_iter([("team".to_string(), team)])),
        human,
    }
}

/// `purge`.
pub fn purged(r: &memd_client::proto::PurgeReport) -> Output {
    let mut lines: Vec<String> = r
        .targets
        .iter()
        .map(|t| {
            format!(
                "{:>8}  {:<24} {} version{}  {}",
                t.id.map_or_else(|| "(gone)".to_string(), |id| id.to_string()),
                t.namespace,
                t.revisions,
                if t.revisions == 1 { "" } else { "s" },
                t.preview.replace('\n', " ")
            )
        })
        .collect();
    if r.targets.is_empty() {
        lines.push("nothing holds that: nothing to erase".into());
    } else if r.purged {
        lines.push(format!(
            "erased {} memor{} with their history; {} frozen block{} rebuilt, {} drift backup{} \
             rewritten; database {}",
            r.targets.len(),
            if r.targets.len() == 1 { "y" } else { "ies" },
            r.blocks_rebuilt,
            if r.blocks_rebuilt == 1 { "" } else { "s" },
            r.backups_rewritten,
            if r.backups_rewritten == 1 { "" } else { "s" },
            if r.scrubbed {
                "compacted, WAL emptied"
            } else {
                "compacted, but a reader held the WAL: run purge again to empty it"
            }
        ));
        for p in &r.not_rewritten {
            lines.push(format!(
                "not rewritten (a copy made before a schema upgrade; delete it if it may hold \
                 the text): {p}"
            ));
        }
    } else {
        lines.push("listed only: nothing was erased".into());
    }
    Output {
        json: success(fields(r)),
        human: lines.join("\n"),
    }
}

/// `team push`.
pub fn team_pushed(report: &memd_client::proto::TeamPushReport) -> Output {
    Output {
        json: success(fields(report)),
        human: format!(
            "namespace {}: {} pushed, {} already in the team's PostgreSQL, {} merged into a row it held",
            report.namespace, report.pushed, report.already, report.merged
        ),
    }
}

/// `reembed`.
pub fn reembedding(report: &ReembedReport) -> Output {
    Output {
        json: success(fields(report)),
        human: format!(
            "re-embedding {} memories with {} in the background; `memd status` shows progress",
            report.pending, report.model
        ),
    }
}

/// `import`.
pub fn imported(report: &ImportReport) -> Output {
    let errors = if report.errors.is_empty() {
        String::new()
    } else {
        format!("\n{}", report.errors.join("\n"))
    };
    Output {
        json: success(fields(report)),
        human: format!(
            "read {}, inserted {}, skipped {} (uid exists), replaced {}, invalid {}, links {} \
             ({} dangling){errors}",
            report.read,
            report.inserted,
            report.skipped,
            report.replaced,
            report.invalid,
            report.links,
            report.dangling_links,
        ),
    }
}

/// `export --out`, `backup`.
pub fn downloaded(info: Value, bytes: u64, path: &std::path::Path) -> Output {
    let mut fields = match info {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    fields.insert("bytes".into(), json!(bytes));
    fields.insert("path".into(), json!(path));
    Output {
        json: success(fields),
        human: format!("wrote {bytes} bytes to {}", path.display()),
    }
}

/// `stop`.
pub fn stopped() -> Output {
    let mut fields = Map::new();
    fields.insert("stopped".into(), json!(true));
    Output {
        json: success(fields),
        human: "memd stopped".into(),
    }
}

/// `socket`: the daemon's socket path.
pub fn socket(path: &std::path::Path) -> Output {
    Output {
        json: success([("socket".to_string(), json!(path))].into_iter().collect()),
        human: path.display().to_string(),
    }
}

/// `ui`: the viewer's one-time login link, and what was opened with it
/// (`None`: nothing was asked to; the launcher page, or why not).
pub fn ui(
    url: &str,
    address: &str,
    expires_secs: u64,
    opened: Option<Result<std::path::PathBuf, String>>,
    rotated: bool,
) -> Output {
    let mut human = format!(
        "memd's viewer: {url}\n(this link logs one browser in, once, within {} minutes)",
        expires_secs.div_ceil(60)
    );
    let (launcher, open_error) = match &opened {
        Some(Ok(path)) => {
            human.push_str(&format!(
                "\nopening it in your browser through {}",
                path.display()
            ));
            (Some(path.clone()), None)
        }
        Some(Err(e)) => {
            human.push_str(&format!(
                "\nnot opened ({e}): open the link above in your browser"
            ));
            (None, Some(e.clone()))
        }
        None => (None, None),
    };
    if rotated {
        human.push_str("\n(a new token: every browser session and link given before has ended)");
    }
    Output {
        json: success(
            [
                ("url".to_string(), json!(url)),
                ("address".to_string(), json!(address)),
                ("expires_secs".to_string(), json!(expires_secs)),
                ("launcher".to_string(), json!(launcher)),
                ("open_error".to_string(), json!(open_error)),
                ("new_token".to_string(), json!(rotated)),
            ]
            .into_iter()
            .collect(),
        ),
        human,
    }
}
