//! The write gate and request validation: pure rules from a request and the
//! config to the plain values the store writes (ARCHITECTURE.md "Write gate").
//!
//! Order for an add: normalize the scope; category allowlist; size limit;
//! secrets ([`secrets`]); code-derivable content ([`code`]), judged on the
//! text with its secrets redacted; then the remaining fields. Exact and
//! near-duplicate merges ([`similar`]) need the database and run in the
//! writer (`handler::add`). A gate refusal is
//! [`GateError::Rejected`] with a reason code (exit 6 from the CLI); a
//! malformed argument is [`GateError::InvalidInput`] (exit 2).
//!
//! Pure: no SQL, no I/O. Its inputs are the request, the session's
//! identity ([`Who`]) and the settings ([`Rules`]); its outputs are the
//! plain values of [`types`] the store writes.
//!
//! # Layout
//! - [`capture`]: what of a captured conversation turn is stored.
//! - [`private`]: `<private>…</private>` spans, left out of what is stored.
//! - [`code`]: diffs, stack traces, git log output, path dumps, blobs.
//! - [`secrets`]: keys, tokens and credential assignments; redaction.
//! - [`similar`]: shingles, Jaccard, the merge/similar verdict.
//! - [`task`]: task states and transitions.
//! - [`settings`]: the gate's configuration and its input [`Rules`].
//! - [`types`]: what the gate lets through.

pub mod capture;
pub mod code;
pub mod private;
pub mod secrets;
pub mod settings;
pub mod similar;
pub mod task;
pub mod types;

use memd_proto::{AddRequest, Filter, Memory, UpdateRequest};
use time::OffsetDateTime;

use crate::clock;
pub use settings::{Limits, Rules, SecretPolicy};
pub use types::{Changes, MetaMatch, Namespaces, NewMemory, View, blank_row};

/// Why the gate refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GateError {
    /// Refused by a rule of the gate (exit 6 from the CLI).
    #[error("{message}")]
    Rejected {
        /// Reason code (`too_large`, `category`, …).
        reason: &'static str,
        /// Explanation.
        message: String,
    },
    /// A malformed argument (exit 2).
    #[error("{0}")]
    InvalidInput(String),
    /// A change the row's current state does not allow (a closed task
    /// reopened).
    #[error("{message}")]
    Conflict {
        /// What conflicted.
        message: String,
        /// The row's current rev.
        current_rev: Option<i64>,
    },
}

/// Longest subject, in characters.
pub const MAX_SUBJECT_CHARS: usize = 200;

/// Deepest nesting accepted in metadata.
pub const MAX_METADATA_DEPTH: usize = 16;

pub use crate::session::ident::Who;

/// Canonical scope for a name or alias (`user` → `agent`, `mission` and
/// `lane` → `session`).
pub fn normalize_scope(s: &str) -> Option<&'static str> {
    match s.trim().to_ascii_lowercase().as_str() {
        "project" | "global" | "shared" => Some("project"),
        "agent" | "user" => Some("agent"),
        "session" | "mission" | "lane" => Some("session"),
        _ => None,
    }
}

fn scope_and_owner(scope: Option<&str>, who: &Who) -> Result<(String, Option<String>), GateError> {
    let scope = match scope {
        None => "project",
        Some(s) => normalize_scope(s).ok_or_else(|| GateError::Rejected {
            reason: "scope",
            message: format!(
                "unknown scope `{s}`: expected project, agent or session \
                 (aliases: user = agent; mission, lane = session)"
            ),
        })?,
    };
    // The owner always comes from the session, never from free input.
    let owner = match scope {
        "agent" => Some(who.agent.clone()),
        "session" => Some(who.session.clone()),
        _ => None,
    };
    Ok((scope.to_string(), owner))
}

fn category(c: Option<&str>, rules: &Rules<'_>) -> Result<String, GateError> {
    let c = match c {
        None => return Ok(rules.memory.default_category.clone()),
        Some(c) => c.trim().to_lowercase(),
    };
    if rules.memory.categories.contains(&c) {
        Ok(c)
    } else {
        Err(GateError::Rejected {
            reason: "category",
            message: format!(
                "unknown category `{c}`; allowed: {}",
                rules.memory.categories.join(", ")
            ),
        })
    }
}

fn content(text: &str, rules: &Rules<'_>) -> Result<(String, bool), GateError> {
    if text.trim().is_empty() {
        return Err(GateError::Rejected {
            reason: "empty",
            message: "content is empty".into(),
        });
    }
    let max = rules.limits.max_content_bytes;
    if text.len() > max {
        return Err(GateError::Rejected {
            reason: "too_large",
            message: format!(
                "content is {} bytes; the limit is {max} bytes (limits.max_content_bytes). \
                 Store a summary, or split it into several memories",
                text.len()
            ),
        });
    }
    if text.contains('\0') {
        return Err(GateError::InvalidInput(
            "content contains a NUL byte".into(),
        ));
    }
    // Secrets first: a token is often what looks like an encoded blob,
    // and once it is redacted the rest may be worth keeping.
    let (text, redacted) = guard_secrets(text, rules)?;
    if rules.gate.code_derivable
        && let Some(kind) = code::detect(&text)
    {
        return Err(GateError::Rejected {
            reason: "code_derivable",
            message: format!(
                "content looks like {}: memory keeps what was learned, not what can be \
                 read back from code or tools; store the conclusion in a sentence instead",
                kind.describe()
            ),
        });
    }
    Ok((text, redacted))
}

/// Applies the secret policy; `true` when something was redacted.
fn guard_secrets(text: &str, rules: &Rules<'_>) -> Result<(String, bool), GateError> {
    if rules.gate.secrets == SecretPolicy::Allow {
        return Ok((text.to_string(), false));
    }
    let found = secrets::find(text);
    let Some(first) = found.first() else {
        return Ok((text.to_string(), false));
    };
    match rules.gate.secrets {
        SecretPolicy::Reject => Err(GateError::Rejected {
            reason: "secret",
            message: format!(
                "the text looks like it holds a secret ({}); memory is not a secret store. \
                 Leave the value out (say where it is kept instead)",
                first.kind
            ),
        }),
        SecretPolicy::Redact => Ok((secrets::redact(text, &found), true)),
        SecretPolicy::Allow => Ok((text.to_string(), false)),
    }
}

/// Normalized content for exact dedup: lower case, punctuation dropped,
/// whitespace collapsed.
pub fn dedupe_key(content: &str) -> String {
    let mut out = String::with_capacity(content.len());
    for word in content
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        if !out.is_empty() {
            out.push(' ');
        }
        out.extend(word.chars().flat_map(char::to_lowercase));
    }
    out
}

/// Applies the secret policy to tags and metadata, which reach exports,
/// the memory block and other agents as surely as content does: each tag,
/// and each metadata value as `key=value` (so `password=...` is caught by
/// its key). `true` when something was redacted.
fn guard_fields(
    tags: &mut [String],
    meta: &mut serde_json::Map<String, serde_json::Value>,
    rules: &Rules<'_>,
) -> Result<bool, GateError> {
    if rules.gate.secrets == SecretPolicy::Allow {
        return Ok(false);
    }
    let reject = rules.gate.secrets == SecretPolicy::Reject;
    let refuse = |what: String, kind: &str| GateError::Rejected {
        reason: "secret",
        message: format!(
            "{what} looks like it holds a secret ({kind}); memory is not a secret store. \
             Leave the value out (say where it is kept instead)"
        ),
    };
    let mut redacted = false;
    for tag in tags.iter_mut() {
        let found = secrets::find(tag);
        if let Some(first) = found.first() {
            if reject {
                return Err(refuse("a tag".into(), first.kind));
            }
            *tag = secrets::redact(tag, &found).to_lowercase();
            redacted = true;
        }
    }
    fn walk(
        key: &str,
        v: &mut serde_json::Value,
        reject: bool,
        redacted: &mut bool,
    ) -> Result<(), (String, &'static str)> {
        match v {
            serde_json::Value::Object(o) => o
                .iter_mut()
                .try_for_each(|(k, v)| walk(k, v, reject, redacted)),
            serde_json::Value::Array(a) => a
                .iter_mut()
                .try_for_each(|v| walk(key, v, reject, redacted)),
            serde_json::Value::Null | serde_json::Value::Bool(_) => Ok(()),
            _ => {
                let text = match &*v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                let found = secrets::find(&format!("{key}={text}"));
                let Some(first) = found.first() else {
                    return Ok(());
                };
                if reject {
                    return Err((format!("metadata key `{key}`"), first.kind));
                }
                let inside = secrets::find(&text);
                *v = if inside.is_empty() {
                    "[REDACTED]".into()
                } else {
                    secrets::redact(&text, &inside).into()
                };
                *redacted = true;
                Ok(())
            }
        }
    }
    for (k, v) in meta.iter_mut() {
        walk(k, v, reject, &mut redacted).map_err(|(what, kind)| refuse(what, kind))?;
    }
    Ok(redacted)
}

fn subject(s: Option<&str>, rules: &Rules<'_>) -> Result<(Option<String>, bool), GateError> {
    let Some(s) = s.map(str::trim).filter(|s| !s.is_empty()) else {
        return Ok((None, false));
    };
    if s.chars().count() > MAX_SUBJECT_CHARS {
        return Err(GateError::InvalidInput(format!(
            "subject is longer than {MAX_SUBJECT_CHARS} characters"
        )));
    }
    if s.chars().any(char::is_control) {
        return Err(GateError::InvalidInput(
            "subject contains control characters".into(),
        ));
    }
    let (s, redacted) = guard_secrets(s, rules)?;
    Ok((Some(s), redacted))
}

/// Normalizes tags: trimmed, lower-cased, unique, sorted.
///
/// # Errors
/// [`GateError::InvalidInput`] for empty, too long or too many tags.
pub fn tags(tags: &[String], rules: &Rules<'_>) -> Result<Vec<String>, GateError> {
    let mut out: Vec<String> = Vec::with_capacity(tags.len());
    for original in tags {
        let t = original.trim().to_lowercase();
        if t.is_empty() {
            return Err(GateError::InvalidInput("a tag is empty".into()));
        }
        if t.chars().count() > rules.limits.max_tag_chars {
            // Its start, secrets out before the cut (as given: a lower-cased
            // token may no longer have its shape).
            return Err(GateError::InvalidInput(format!(
                "tag `{}` is longer than {} characters (limits.max_tag_chars)",
                secrets::shorten(original.trim(), 21),
                rules.limits.max_tag_chars
            )));
        }
        if t.chars().any(char::is_control) {
            return Err(GateError::InvalidInput(
                "a tag contains control characters".into(),
            ));
        }
        if !out.contains(&t) {
            out.push(t);
        }
    }
    if out.len() > rules.limits.max_tags {
        return Err(GateError::InvalidInput(format!(
            "{} tags; the limit is {} (limits.max_tags)",
            out.len(),
            rules.limits.max_tags
        )));
    }
    out.sort();
    Ok(out)
}

fn tier(t: Option<i64>) -> Result<i64, GateError> {
    match t {
        None => Ok(2),
        Some(t @ 1..=3) => Ok(t),
        Some(t) => Err(GateError::InvalidInput(format!(
            "tier {t} is out of range: expected 1, 2 or 3"
        ))),
    }
}

fn importance(i: Option<&str>) -> Result<String, GateError> {
    let i = i.map(|s| s.trim().to_ascii_lowercase());
    match i.as_deref() {
        None => Ok("medium".into()),
        Some(v @ ("low" | "medium" | "high")) => Ok(v.to_string()),
        Some(v) => Err(GateError::InvalidInput(format!(
            "unknown importance `{v}`: expected low, medium or high"
        ))),
    }
}

fn status(s: &str) -> Result<String, GateError> {
    let s = s.trim().to_ascii_lowercase();
    match s.as_str() {
        "candidate" | "promoted" | "archived" => Ok(s),
        _ => Err(GateError::InvalidInput(format!(
            "unknown status `{s}`: expected candidate, promoted or archived"
        ))),
    }
}

fn confidence(c: Option<f64>) -> Result<f64, GateError> {
    match c {
        None => Ok(1.0),
        Some(c) if (0.0..=1.0).contains(&c) => Ok(c),
        Some(c) => Err(GateError::InvalidInput(format!(
            "confidence {c} is out of range: expected 0.0 to 1.0"
        ))),
    }
}

fn depth(v: &serde_json::Value) -> usize {
    match v {
        serde_json::Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        serde_json::Value::Object(o) => 1 + o.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Parses metadata: a JSON object within the size and depth limits.
///
/// # Errors
/// [`GateError::InvalidInput`] naming the problem.
pub fn metadata(
    text: &str,
    rules: &Rules<'_>,
) -> Result<serde_json::Map<String, serde_json::Value>, GateError> {
    if text.len() > rules.limits.max_metadata_bytes {
        return Err(GateError::InvalidInput(format!(
            "metadata is {} bytes; the limit is {} (limits.max_metadata_bytes)",
            text.len(),
            rules.limits.max_metadata_bytes
        )));
    }
    let value: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| GateError::InvalidInput(format!("metadata is not valid JSON: {e}")))?;
    if depth(&value) > MAX_METADATA_DEPTH {
        return Err(GateError::InvalidInput(format!(
            "metadata is nested deeper than {MAX_METADATA_DEPTH} levels"
        )));
    }
    let serde_json::Value::Object(map) = value else {
        return Err(GateError::InvalidInput(
            "metadata must be a JSON object".into(),
        ));
    };
    // Code citations (`cites`) keep their shape: a path inside the
    // repository, lines that make sense, hex hashes.
    if let Some(cites) = map.get(memd_proto::cite::METADATA_KEY) {
        memd_proto::cite::from_value(cites).map_err(GateError::InvalidInput)?;
    }
    Ok(map)
}

fn expires(e: Option<&str>, now: OffsetDateTime) -> Result<Option<String>, GateError> {
    match e.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(s) => {
            let at = clock::parse_future(s, now)
                .map_err(|m| GateError::InvalidInput(format!("expires: {m}")))?;
            // A memory that expired before it was written would vanish at
            // once: surely a mistake (`forget` removes a memory).
            if at <= clock::format(now) {
                return Err(GateError::InvalidInput(format!(
                    "expires: `{s}` is not in the future"
                )));
            }
            Ok(Some(at))
        }
    }
}

/// Longest thread id, in characters.
pub const MAX_THREAD_CHARS: usize = 256;

/// A thread id: trimmed, non-empty, no control characters.
fn thread(t: Option<&str>) -> Result<Option<String>, GateError> {
    let Some(t) = t.map(str::trim) else {
        return Ok(None);
    };
    if t.is_empty() {
        return Err(GateError::InvalidInput(
            "thread: the thread id is empty".into(),
        ));
    }
    if t.chars().count() > MAX_THREAD_CHARS {
        return Err(GateError::InvalidInput(format!(
            "thread: the thread id is longer than {MAX_THREAD_CHARS} characters"
        )));
    }
    if t.chars().any(char::is_control) {
        return Err(GateError::InvalidInput(
            "thread: the thread id contains control characters".into(),
        ));
    }
    Ok(Some(t.to_string()))
}

/// A position in a thread: only with a thread, never negative.
fn thread_pos(thread: Option<&str>, pos: Option<i64>) -> Result<Option<i64>, GateError> {
    match (thread, pos) {
        (None, Some(_)) => Err(GateError::InvalidInput(
            "position: a position needs a thread".into(),
        )),
        (_, Some(p)) if p < 0 => Err(GateError::InvalidInput(format!(
            "position: {p} is negative"
        ))),
        (_, p) => Ok(p),
    }
}

/// A task status given in metadata: one of the task states.
fn task_state(value: &serde_json::Value) -> Result<String, GateError> {
    let state = match value {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    task::state(&state).map_err(GateError::InvalidInput)?;
    Ok(state)
}

/// Fills in what a task needs: `status` (pending by default, one of the
/// task states) and `surface = "startup"` while it is open.
fn task_metadata(meta: &mut serde_json::Map<String, serde_json::Value>) -> Result<(), GateError> {
    let state = match meta.get("status") {
        None => "pending".to_string(),
        Some(v) => task_state(v)?,
    };
    if task::is_open(&state) {
        meta.insert("surface".into(), "startup".into());
    } else {
        meta.remove("surface");
    }
    meta.insert("status".into(), state.into());
    Ok(())
}

/// The task rules for a change to an existing row, shared by `update` and
/// the task commands. A row that is, or becomes, a task gets a valid
/// `status` and `surface = "startup"` exactly while the task is open; a
/// task's status moves only as [`task::transition`] allows (naming the
/// status it already has changes nothing); a row that stops being a task
/// loses both keys (unless the change sets them), so it no longer shows as
/// pending work.
///
/// # Errors
/// [`GateError::InvalidInput`] for a status that is not a task state,
/// [`GateError::Conflict`] for a transition that is not allowed.
pub fn task_changes(current: &Memory, changes: &mut Changes) -> Result<(), GateError> {
    let was = current.category == task::CATEGORY;
    let is = changes
        .category
        .as_deref()
        .map_or(was, |c| c == task::CATEGORY);
    if !was && !is {
        return Ok(());
    }
    let requested = changes.metadata.as_ref().and_then(|m| m.get("status"));
    if !is {
        let keys = changes.metadata.get_or_insert_with(serde_json::Map::new);
        for key in ["status", "surface"] {
            keys.entry(key).or_insert(serde_json::Value::Null);
        }
        return Ok(());
    }
    let stored = match serde_json::from_str::<serde_json::Value>(&current.metadata) {
        Ok(serde_json::Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let stored = stored.get("status");
    // Where a task is now (a task without a status is pending, as for the
    // task commands); a row that becomes a task starts where its metadata
    // says, pending by default, like an added task.
    let from = was.then(|| {
        stored
            .and_then(serde_json::Value::as_str)
            .unwrap_or("pending")
    });
    let to = match (requested, from) {
        (Some(v), _) => task_state(v)?,
        (None, Some(from)) if task::STATES.contains(&from) => from.to_string(),
        // A stored status that is no task state (written by another tool)
        // stays until a change sets one.
        (None, Some(_)) => return Ok(()),
        (None, None) => stored.map_or(Ok("pending".to_string()), task_state)?,
    };
    if let Some(from) = from
        && task::STATES.contains(&from)
        && from != to
    {
        task::transition(from, &to).map_err(|message| GateError::Conflict {
            message: format!("task {}: {message}", current.id),
            current_rev: Some(current.rev),
        })?;
    }
    let surface = if task::is_open(&to) {
        "startup".into()
    } else {
        serde_json::Value::Null
    };
    let keys = changes.metadata.get_or_insert_with(serde_json::Map::new);
    keys.insert("status".into(), to.into());
    keys.insert("surface".into(), surface);
    Ok(())
}

/// A turn captured from a host's conversation, as it is stored: a memory
/// of category `episode` (the default category when the allow list lacks
/// it), `source = 'capture'`, in the thread `<host>:<session>`, a candidate
/// (never in a block, never promoted), whose `turn` is its identity; with
/// the secrets it replaced and whether it is marked. `None` when nothing of
/// it is left (a private span, empty text).
///
/// # Errors
/// [`GateError`] for a malformed time or name.
pub fn check_capture(
    turn: &memd_proto::CapturedTurn,
    host: &str,
    session: &str,
    who: &Who,
    rules: &Rules<'_>,
    now: OffsetDateTime,
) -> Result<Option<(NewMemory, capture::Captured)>, GateError> {
    let Some(c) = capture::turn(&turn.speaker, &turn.text, rules.limits.max_content_bytes) else {
        return Ok(None);
    };
    // Capture already did what the gate's content rules do to a turn.
    let gate = settings::GateConfig {
        code_derivable: false,
        secrets: SecretPolicy::Allow,
        ..rules.gate.clone()
    };
    let rules = Rules {
        gate: &gate,
        ..*rules
    };
    let category = if rules.memory.categories.iter().any(|c| c == "episode") {
        "episode".to_string()
    } else {
        rules.memory.default_category.clone()
    };
    let mut meta = serde_json::json!({
        "capture": {"host": host, "session": session, "line": turn.id},
    });
    if let Some(why) = c.marked {
        meta["capture"]["marked"] = why.into();
    }
    if c.redactions > 0 {
        meta["capture"]["redacted"] = c.redactions.into();
    }
    let add = AddRequest {
        content: c.content.clone(),
        category: Some(category),
        status: Some("candidate".into()),
        thread: Some(format!("{host}:{session}")),
        occurred_at: turn.at.clone().filter(|t| clock::parse_event(t).is_ok()),
        metadata: Some(meta.to_string()),
        ..AddRequest::default()
    };
    let mut new = check_add(&add, who, &rules, now)?;
    new.row.source = "capture".into();
    // Never a merge target (nor merged): no dedup key, no sketch.
    new.row.dedupe_key = None;
    new.sketch = None;
    let key = format!("{host}:{session}:{}", turn.id);
    new.row.uid = capture::uid(&key);
    new.row.turn = Some(key);
    Ok(Some((new, c)))
}

/// Checks an add and builds the row to insert: every step of the gate that
/// needs no database (scope, category, size, code-derivable, secrets).
///
/// # Errors
/// [`GateError::Rejected`] for gate refusals, [`GateError::InvalidInput`]
/// for malformed fields.
pub fn check_add(
    req: &AddRequest,
    who: &Who,
    rules: &Rules<'_>,
    now: OffsetDateTime,
) -> Result<NewMemory, GateError> {
    let (scope, scope_owner) = scope_and_owner(req.scope.as_deref(), who)?;
    let category = category(req.category.as_deref(), rules)?;
    let (content, redacted_content) = content(&req.content, rules)?;
    let (subject, redacted_subject) = subject(req.subject.as_deref(), rules)?;
    let mut meta = match &req.metadata {
        Some(text) => metadata(text, rules)?,
        None => serde_json::Map::new(),
    };
    if category == task::CATEGORY {
        task_metadata(&mut meta)?;
    }
    let mut tags = tags(&req.tags, rules)?;
    let redacted_fields = guard_fields(&mut tags, &mut meta, rules)?;
    let status = match &req.status {
        Some(s) => status(s)?,
        None if rules.memory.promotes(&category) => "promoted".into(),
        None => "candidate".into(),
    };
    Ok(NewMemory {
        row: Memory {
            namespace: who.namespace.clone(),
            scope,
            scope_owner,
            thread: thread(req.thread.as_deref())?,
            thread_pos: thread_pos(req.thread.as_deref(), req.position)?,
            occurred_at: req
                .occurred_at
                .as_deref()
                .map(|s| {
                    clock::parse_event(s)
                        .map_err(|m| GateError::InvalidInput(format!("occurred_at: {m}")))
                })
                .transpose()?,
            dedupe_key: Some(dedupe_key(&content)),
            content,
            subject,
            category,
            tier: tier(req.tier)?,
            importance: importance(req.importance.as_deref())?,
            confidence: confidence(req.confidence)?,
            pinned: req.pinned,
            status,
            metadata: serde_json::Value::Object(meta).to_string(),
            tags,
            source: "agent".into(),
            created_by: Some(who.agent.clone()),
            expires_at: expires(req.expires.as_deref(), now)?,
            ..blank_row()
        },
        redacted: redacted_content || redacted_subject || redacted_fields,
        sketch: None,
    })
}

/// Checks an update and builds the column changes.
///
/// # Errors
/// As [`check_add`].
pub fn check_update(
    req: &UpdateRequest,
    who: &Who,
    rules: &Rules<'_>,
    now: OffsetDateTime,
) -> Result<Changes, GateError> {
    let content = match &req.content {
        Some(c) => {
            let (c, _) = content(c, rules)?;
            Some((c.clone(), dedupe_key(&c)))
        }
        None => None,
    };
    let mut metadata = req
        .metadata
        .as_deref()
        .map(|m| metadata(m, rules))
        .transpose()?;
    let mut tags = req.tags.as_deref().map(|t| tags(t, rules)).transpose()?;
    guard_fields(
        tags.as_deref_mut().unwrap_or_default(),
        metadata.as_mut().unwrap_or(&mut serde_json::Map::new()),
        rules,
    )?;
    Ok(Changes {
        scope: req
            .scope
            .as_deref()
            .map(|s| scope_and_owner(Some(s), who))
            .transpose()?,
        category: req
            .category
            .as_deref()
            .map(|c| category(Some(c), rules))
            .transpose()?,
        content,
        subject: req
            .subject
            .as_deref()
            .map(|s| subject(Some(s), rules).map(|(s, _)| s))
            .transpose()?,
        tier: req.tier.map(|t| tier(Some(t))).transpose()?,
        pinned: req.pinned,
        importance: req
            .importance
            .as_deref()
            .map(|i| importance(Some(i)))
            .transpose()?,
        status: req.status.as_deref().map(status).transpose()?,
        confidence: req.confidence.map(|c| confidence(Some(c))).transpose()?,
        expires_at: req
            .expires
            .as_deref()
            .map(|e| expires(Some(e), now))
            .transpose()?,
        metadata,
        tags,
    })
}

/// Turns a request's filter into the view of the session.
///
/// # Errors
/// [`GateError::InvalidInput`] for an unknown scope, a malformed
/// `key=value` or time.
pub fn view(filter: &Filter, who: &Who, now: OffsetDateTime) -> Result<View, GateError> {
    let mut v = View::namespace(&who.namespace, &who.agent, &who.session);
    v.now = clock::format(now);
    v.every_owner = who.reach.every_owner;
    if filter.all_namespaces || (who.reach.every_namespace && filter.namespaces.is_empty()) {
        v.namespaces = Namespaces::All;
    } else if !filter.namespaces.is_empty() {
        if filter.namespaces.iter().any(|n| n.trim().is_empty()) {
            return Err(GateError::InvalidInput("a namespace is empty".into()));
        }
        v.namespaces = Namespaces::Only(filter.namespaces.clone());
    }
    v.scope = filter
        .scope
        .as_deref()
        .map(|s| {
            normalize_scope(s).map(str::to_string).ok_or_else(|| {
                GateError::InvalidInput(format!(
                    "unknown scope `{s}`: expected project, agent or session"
                ))
            })
        })
        .transpose()?;
    v.category = filter.category.as_ref().map(|c| c.trim().to_lowercase());
    v.subject = filter.subject.as_ref().map(|s| s.trim().to_string());
    v.tags = filter
        .tags
        .iter()
        .map(|t| t.trim().to_lowercase())
        .filter(|t| !t.is_empty())
        .collect();
    v.tags.sort();
    v.tags.dedup();
    v.tags_any = filter.tags_any;
    v.meta = filter
        .meta
        .iter()
        .map(|(k, val)| {
            if k.is_empty() {
                return Err(GateError::InvalidInput(
                    "metadata filter: the key is empty (expected key=value)".into(),
                ));
            }
            // JSON-typed: `5` is a number, `true` a boolean, `"5"` or any
            // text that is not JSON a string.
            let value = serde_json::from_str(val)
                .unwrap_or_else(|_| serde_json::Value::String(val.clone()));
            Ok(MetaMatch {
                key: k.clone(),
                value,
            })
        })
        .collect::<Result<_, _>>()?;
    let past = |s: &Option<String>, name: &str| {
        s.as_deref()
            .map(|s| {
                clock::parse_past(s, now)
                    .map_err(|m| GateError::InvalidInput(format!("{name}: {m}")))
            })
            .transpose()
    };
    v.since = past(&filter.since, "since")?;
    v.until = past(&filter.until, "until")?;
    v.updated_since = past(&filter.updated_since, "updated-since")?;
    v.updated_until = past(&filter.updated_until, "updated-until")?;
    v.include_superseded = filter.include_superseded;
    v.include_archived = filter.include_archived;
    v.status = filter.status.as_deref().map(status).transpose()?;
    v.created_by = filter
        .created_by
        .as_deref()
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .map(str::to_string);
    v.tier = filter.tier.map(|t| tier(Some(t))).transpose()?;
    v.source = filter
        .source
        .as_deref()
        .map(|s| s.trim().to_lowercase())
        .filter(|s| !s.is_empty());
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    fn who() -> Who {
        Who {
            namespace: "ns".into(),
            agent: "a1".into(),
            session: "s1".into(),
            reach: crate::session::ident::Reach::default(),
        }
    }

    /// The default rules.
    fn rules() -> Rules<'static> {
        static MEMORY: std::sync::LazyLock<settings::MemoryConfig> =
            std::sync::LazyLock::new(Default::default);
        static GATE: std::sync::LazyLock<settings::GateConfig> =
            std::sync::LazyLock::new(Default::default);
        Rules {
            memory: &MEMORY,
            gate: &GATE,
            limits: Limits::default(),
        }
    }

    fn add(content: &str) -> AddRequest {
        AddRequest {
            content: content.into(),
            ..Default::default()
        }
    }

    const NOW: OffsetDateTime = datetime!(2026-01-01 00:00:00 UTC);

    #[test]
    fn expiry_must_be_in_the_future() {
        let c = rules();
        let mut r = add("x");
        r.expires = Some("7d".into());
        let m = check_add(&r, &who(), &c, NOW).unwrap();
        assert_eq!(
            m.row.expires_at.as_deref(),
            Some("2026-01-08T00:00:00.000Z")
        );
        for past in ["2025-12-31T00:00:00Z", "2026-01-01T00:00:00Z"] {
            r.expires = Some(past.into());
            assert!(
                matches!(
                    check_add(&r, &who(), &c, NOW),
                    Err(GateError::InvalidInput(_))
                ),
                "{past}"
            );
        }
    }

    #[test]
    fn scope_aliases_and_owner_from_session() {
        let c = rules();
        for (given, scope, owner) in [
            (None, "project", None),
            (Some("user"), "agent", Some("a1")),
            (Some("Mission"), "session", Some("s1")),
            (Some("lane"), "session", Some("s1")),
            (Some("agent"), "agent", Some("a1")),
        ] {
            let mut r = add("x");
            r.scope = given.map(str::to_string);
            let m = check_add(&r, &who(), &c, NOW).unwrap();
            assert_eq!(m.row.scope, scope, "{given:?}");
            assert_eq!(m.row.scope_owner.as_deref(), owner, "{given:?}");
        }
        let mut r = add("x");
        r.scope = Some("galaxy".into());
        assert!(matches!(
            check_add(&r, &who(), &c, NOW),
            Err(GateError::Rejected {
                reason: "scope",
                ..
            })
        ));
    }

    #[test]
    fn gate_reasons() {
        let c = rules();
        let cases: Vec<(AddRequest, &str)> = vec![
            (add("   "), "empty"),
            (add(&"x".repeat(10 * 1024 + 1)), "too_large"),
            (
                AddRequest {
                    category: Some("gossip".into()),
                    ..add("x")
                },
                "category",
            ),
        ];
        for (req, want) in cases {
            match check_add(&req, &who(), &c, NOW) {
                Err(GateError::Rejected { reason, message }) => {
                    assert_eq!(reason, want, "{message}");
                }
                other => panic!("{want}: {other:?}"),
            }
        }
        // The category error lists the allowed ones.
        let err = check_add(
            &AddRequest {
                category: Some("gossip".into()),
                ..add("x")
            },
            &who(),
            &c,
            NOW,
        )
        .unwrap_err();
        assert!(err.to_string().contains("preference"), "{err}");
        // Exactly at the limit passes.
        assert!(check_add(&add(&"x".repeat(10 * 1024)), &who(), &c, NOW).is_ok());
    }

    #[test]
    fn invalid_fields() {
        let c = rules();
        let bad = [
            AddRequest {
                tier: Some(4),
                ..add("x")
            },
            AddRequest {
                importance: Some("urgent".into()),
                ..add("x")
            },
            AddRequest {
                confidence: Some(1.5),
                ..add("x")
            },
            AddRequest {
                metadata: Some("[1]".into()),
                ..add("x")
            },
            AddRequest {
                metadata: Some("{".into()),
                ..add("x")
            },
            AddRequest {
                metadata: Some(format!("{}1{}", "[".repeat(40), "]".repeat(40))),
                ..add("x")
            },
            AddRequest {
                tags: vec![" ".into()],
                ..add("x")
            },
            AddRequest {
                expires: Some("later".into()),
                ..add("x")
            },
            add("nul\0byte"),
        ];
        for req in bad {
            assert!(
                matches!(
                    check_add(&req, &who(), &c, NOW),
                    Err(GateError::InvalidInput(_))
                ),
                "{req:?}"
            );
        }
    }

    #[test]
    fn tags_are_normalized() {
        let c = rules();
        let t = tags(&["Ops".into(), " ops ".into(), "Déploi".into()], &c).unwrap();
        assert_eq!(t, vec!["déploi".to_string(), "ops".to_string()]);
        let many: Vec<String> = (0..100).map(|i| format!("t{i}")).collect();
        assert!(tags(&many, &c).is_err());
    }

    #[test]
    fn dedupe_keys() {
        assert_eq!(
            dedupe_key("  The Deploy-script, lives HERE!  "),
            "the deploy script lives here"
        );
        assert_eq!(dedupe_key("port 5432"), "port 5432");
    }

    #[test]
    fn expiry_is_absolute() {
        let c = rules();
        let m = check_add(
            &AddRequest {
                expires: Some("2d".into()),
                ..add("x")
            },
            &who(),
            &c,
            NOW,
        )
        .unwrap();
        assert_eq!(
            m.row.expires_at.as_deref(),
            Some("2026-01-03T00:00:00.000Z")
        );
    }

    fn row(category: &str, metadata: serde_json::Value) -> Memory {
        Memory {
            id: 7,
            uid: "u7".into(),
            namespace: "ns".into(),
            content: "write the release notes".into(),
            category: category.into(),
            metadata: metadata.to_string(),
            created_at: "2026-01-01T00:00:00.000Z".into(),
            updated_at: "2026-01-01T00:00:00.000Z".into(),
            rev: 3,
            changed_generation: 7,
            ..blank_row()
        }
    }

    fn meta(v: serde_json::Value) -> Option<serde_json::Map<String, serde_json::Value>> {
        match v {
            serde_json::Value::Object(m) => Some(m),
            _ => unreachable!(),
        }
    }

    #[test]
    fn updates_follow_the_task_rules() {
        use serde_json::json;
        let done = row("task", json!({"status": "completed"}));
        let started = row(
            "task",
            json!({"status": "in_progress", "surface": "startup"}),
        );
        let change = |status: serde_json::Value| Changes {
            metadata: meta(json!({ "status": status })),
            ..Changes::default()
        };
        // Closed tasks stay closed: a conflict at the row's rev.
        let mut c = change(json!("pending"));
        match task_changes(&done, &mut c) {
            Err(GateError::Conflict { current_rev, .. }) => assert_eq!(current_rev, Some(3)),
            other => panic!("{other:?}"),
        }
        // Reopening a started task surfaces it again; closing it does not.
        let mut c = change(json!("pending"));
        task_changes(&started, &mut c).unwrap();
        assert_eq!(
            c.metadata,
            meta(json!({"status": "pending", "surface": "startup"}))
        );
        let mut c = change(json!("completed"));
        task_changes(&started, &mut c).unwrap();
        assert_eq!(
            c.metadata,
            meta(json!({"status": "completed", "surface": null}))
        );
        // The status it has already is no move.
        let mut c = change(json!("completed"));
        task_changes(&done, &mut c).unwrap();
        assert_eq!(
            c.metadata,
            meta(json!({"status": "completed", "surface": null}))
        );
        // Only task states.
        for bad in [json!("bogus"), json!(5), json!(null)] {
            let mut c = change(bad.clone());
            assert!(
                matches!(
                    task_changes(&started, &mut c),
                    Err(GateError::InvalidInput(_))
                ),
                "{bad}"
            );
        }
        // Another change to a task keeps its keys as the rules want them.
        let mut c = Changes {
            tags: Some(vec!["release".into()]),
            ..Changes::default()
        };
        task_changes(&row("task", json!({"status": "pending"})), &mut c).unwrap();
        assert_eq!(
            c.metadata,
            meta(json!({"status": "pending", "surface": "startup"}))
        );
        // A note that becomes a task is pending work, or what it says.
        let to_task = || Changes {
            category: Some("task".into()),
            ..Changes::default()
        };
        let mut c = to_task();
        task_changes(&row("note", json!({})), &mut c).unwrap();
        assert_eq!(
            c.metadata,
            meta(json!({"status": "pending", "surface": "startup"}))
        );
        let mut c = to_task();
        task_changes(&row("note", json!({"status": "completed"})), &mut c).unwrap();
        assert_eq!(
            c.metadata,
            meta(json!({"status": "completed", "surface": null}))
        );
        let mut c = to_task();
        assert!(matches!(
            task_changes(&row("note", json!({"status": "draft"})), &mut c),
            Err(GateError::InvalidInput(_))
        ));
        // A task that becomes a note is no longer pending work.
        let mut c = Changes {
            category: Some("note".into()),
            ..Changes::default()
        };
        task_changes(&started, &mut c).unwrap();
        assert_eq!(c.metadata, meta(json!({"status": null, "surface": null})));
        // Notes are not tasks: their `status` key is theirs.
        let mut c = change(json!("draft"));
        task_changes(&row("note", json!({})), &mut c).unwrap();
        assert_eq!(c.metadata, meta(json!({"status": "draft"})));
    }

    #[test]
    fn view_namespaces() {
        let f = Filter::default();
        assert_eq!(
            view(&f, &who(), NOW).unwrap().namespaces,
            Namespaces::Only(vec!["ns".into()])
        );
        let f = Filter {
            all_namespaces: true,
            ..Default::default()
        };
        assert_eq!(view(&f, &who(), NOW).unwrap().namespaces, Namespaces::All);
        let f = Filter {
            meta: vec![
                ("port".into(), "5432".into()),
                ("env".into(), "prod".into()),
            ],
            ..Default::default()
        };
        let v = view(&f, &who(), NOW).unwrap();
        assert_eq!(v.meta[0].value, serde_json::json!(5432));
        assert_eq!(v.meta[1].value, serde_json::json!("prod"));
    }
}
