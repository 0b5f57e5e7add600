//! The JSON shapes of the CLI, the shell and the backup files.
//!
//! A memory always appears as one object: the SQL column names plus `tags`,
//! with `metadata` as a JSON object (its raw text when the stored value is not
//! valid JSON, so nothing is hidden) and `pinned` as a boolean.

use serde_json::{Map, Value, json};

use crate::{AddResult, ChangedBy, ErrorBody, Hit, Memory};

/// A memory as a JSON object.
pub fn memory(m: &Memory) -> Value {
    let mut v = serde_json::to_value(m).unwrap_or(Value::Null);
    if let Value::Object(obj) = &mut v {
        let meta = serde_json::from_str::<Value>(&m.metadata)
            .unwrap_or_else(|_| Value::String(m.metadata.clone()));
        obj.insert("metadata".into(), meta);
    }
    v
}

/// A memory as JSON text: the same object as [`memory`], written straight
/// from the struct (no intermediate value: the HTTP API writes many of
/// them per answer).
pub fn memory_text(m: &Memory) -> String {
    let mut text = serde_json::to_string(m).unwrap_or_default();
    // The derived form carries metadata as a string of JSON; valid JSON
    // goes in as itself. Inside a JSON string every quote is escaped, so
    // the key with this exact value appears once, as the field.
    if serde_json::from_str::<serde::de::IgnoredAny>(&m.metadata).is_ok()
        && let Ok(quoted) = serde_json::to_string(&m.metadata)
    {
        text = text.replacen(
            &format!("\"metadata\":{quoted}"),
            &format!("\"metadata\":{}", m.metadata.trim()),
            1,
        );
    }
    text
}

/// A search hit as JSON text: [`memory_text`] plus `score`, `relevance` and
/// `matched`.
pub fn hit_text(h: &Hit) -> String {
    let mut text = memory_text(&h.memory);
    if text.ends_with('}') {
        text.pop();
        text.push_str(&format!(
            ",\"score\":{},\"relevance\":{},\"matched\":\"{}\"}}",
            serde_json::Value::from(h.score),
            serde_json::Value::from(h.relevance),
            h.matched.as_str()
        ));
    }
    text
}

/// A search hit: the memory object plus `score`, `relevance`, `matched`
/// (and `explain`).
pub fn hit(h: &Hit) -> Value {
    let mut v = memory(&h.memory);
    if let Value::Object(obj) = &mut v {
        obj.insert("score".into(), json!(h.score));
        obj.insert("relevance".into(), json!(h.relevance));
        obj.insert("matched".into(), json!(h.matched.as_str()));
        if let Some(explain) = &h.explain {
            let parts = serde_json::from_str::<Value>(explain).unwrap_or(Value::Null);
            obj.insert("explain".into(), parts);
        }
    }
    v
}

/// The most characters of a memory's text a compact hit carries.
pub const COMPACT_TEXT_CHARS: usize = 280;

/// A search hit as an agent gets it (MCP `memory_search`, HTTP
/// `view=compact`), from the full hit object ([`hit`]): `id`, `text`,
/// `score`, `relevance`, `category`, `source` (a captured turn's is
/// `capture`), `when` (when it happened, else when it last changed),
/// `thread` and `namespace`. A text longer than [`COMPACT_TEXT_CHARS`] is
/// cut around the first of the query's words it holds, with `…` where it
/// was cut and `cut: true`; the rest is one `get` away.
pub fn compact_hit(full: &Value, query: &str) -> Value {
    let mut out = Map::new();
    out.insert("id".into(), full["id"].clone());
    let content = full["content"].as_str().unwrap_or_default();
    let (text, cut) = excerpt(content, query, COMPACT_TEXT_CHARS);
    out.insert("text".into(), json!(text));
    if cut {
        out.insert("cut".into(), json!(true));
    }
    for key in ["score", "relevance", "category", "source"] {
        out.insert(key.into(), full[key].clone());
    }
    let when = match &full["occurred_at"] {
        Value::Null => full["updated_at"].clone(),
        at => at.clone(),
    };
    out.insert("when".into(), when);
    out.insert("thread".into(), full["thread"].clone());
    out.insert("namespace".into(), full["namespace"].clone());
    // What the client found of the code the memory cites (its checkout's
    // verdicts), when it cites any.
    if let Some(c) = full.get("citations") {
        out.insert("citations".into(), c.clone());
    }
    Value::Object(out)
}

/// At most `max` characters of `text`, around the first of the query's
/// words (three letters or more, any case) it holds, else its start; and
/// whether it was cut.
pub fn excerpt(text: &str, query: &str, max: usize) -> (String, bool) {
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= max {
        return (text.to_string(), false);
    }
    // One lowercase character per character: positions stay the same.
    let lower: Vec<char> = chars
        .iter()
        .map(|c| c.to_lowercase().next().unwrap_or(*c))
        .collect();
    let words: Vec<Vec<char>> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 3)
        .map(|w| w.to_lowercase().chars().collect())
        .collect();
    let at = words
        .iter()
        .filter_map(|w| lower.windows(w.len()).position(|x| x == w.as_slice()))
        .min()
        .unwrap_or(0);
    let start = at.saturating_sub(max / 4).min(chars.len() - max);
    let end = start + max;
    let mut out = String::new();
    if start > 0 {
        out.push('…');
    }
    out.extend(&chars[start..end]);
    if end < chars.len() {
        out.push('…');
    }
    (out, true)
}

/// An add result: `{accepted, id, deduped, merged_into, similar_to, reason, drift,
/// status, proposal}` (`status`: `stored`, or `proposed` where the namespace
/// requires review and `proposal` names the proposal).
pub fn add_result(r: &AddResult) -> Map<String, Value> {
    let mut obj = Map::new();
    obj.insert("accepted".into(), json!(r.accepted));
    obj.insert("id".into(), json!(r.id));
    obj.insert("deduped".into(), json!(r.deduped));
    obj.insert("merged_into".into(), json!(r.merged_into));
    obj.insert("similar_to".into(), json!(r.similar_to));
    obj.insert("reason".into(), json!(r.reason));
    obj.insert(
        "drift".into(),
        match &r.drift {
            Some(d) => json!({
                "generation_observed": d.generation_observed,
                "generation_actual": d.generation_actual,
            }),
            None => Value::Null,
        },
    );
    let status = if r.proposal.is_some() {
        "proposed"
    } else {
        "stored"
    };
    obj.insert("status".into(), json!(status));
    obj.insert("proposal".into(), json!(r.proposal));
    obj
}

/// Who changed a row: `{kind, agent, session}`.
pub fn changed_by(c: &ChangedBy) -> Value {
    json!({"kind": c.kind.as_str(), "agent": c.agent, "session": c.session, "machine": c.machine})
}

/// An error: `{success: false, code, error, ...details}`.
pub fn error(e: &ErrorBody) -> Value {
    let mut obj = Map::new();
    obj.insert("success".into(), json!(false));
    obj.insert("code".into(), json!(e.code.as_str()));
    obj.insert("error".into(), json!(e.message));
    if let Some(reason) = &e.reason {
        // A gate refusal has the add result's shape too.
        obj.insert("accepted".into(), json!(false));
        obj.insert("id".into(), Value::Null);
        obj.insert("deduped".into(), json!(false));
        obj.insert("merged_into".into(), Value::Null);
        obj.insert("similar_to".into(), Value::Null);
        obj.insert("reason".into(), json!(reason));
        obj.insert("drift".into(), Value::Null);
    }
    if let Some(rev) = e.current_rev {
        obj.insert("current_rev".into(), json!(rev));
    }
    if let Some(op) = &e.operation_id {
        obj.insert("operation_id".into(), json!(op));
    }
    if let Some(d) = &e.drift {
        obj.insert("rule".into(), json!(d.rule.as_str()));
        let backup = (!d.drift_backup.is_empty()).then_some(&d.drift_backup);
        obj.insert("drift_backup".into(), json!(backup));
        obj.insert("remediation".into(), json!(d.remediation));
        obj.insert("generation_observed".into(), json!(d.generation_observed));
        obj.insert("generation_actual".into(), json!(d.generation_actual));
        if let Some(row) = &d.row {
            obj.insert("current".into(), memory(&row.current));
            obj.insert("changed_by".into(), changed_by(&row.changed_by));
            obj.insert("changed_at".into(), json!(row.changed_at));
            obj.insert("rev_seen".into(), json!(row.rev_seen));
            obj.insert("rev_now".into(), json!(row.rev_now));
        }
    }
    Value::Object(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compact_hit_keeps_the_verdicts_on_its_citations() {
        let full = json!({"id": 3, "content": "see src/a.rs", "score": 1.0,
            "citations": [{"place": "src/a.rs:1-2", "verdict": "changed"}]});
        assert_eq!(
            compact_hit(&full, "a")["citations"][0]["verdict"],
            "changed"
        );
        let plain = json!({"id": 3, "content": "no code", "score": 1.0});
        assert!(compact_hit(&plain, "a").get("citations").is_none());
    }

    #[test]
    fn a_long_text_is_cut_around_the_querys_words() {
        let long = format!(
            "{} the vault pin is kept in ops {}",
            "a".repeat(500),
            "b".repeat(500)
        );
        let (text, cut) = excerpt(&long, "where is the VAULT?", 100);
        assert!(cut);
        assert!(
            text.contains("vault pin") && text.starts_with('…') && text.ends_with('…'),
            "{text}"
        );
        assert_eq!(text.chars().count(), 102);
        // No query word in it: its start. Short: as it is.
        let (text, _) = excerpt(&long, "zebra", 100);
        assert!(text.starts_with("aaa") && text.ends_with('…'));
        assert_eq!(excerpt("short é", "x", 100), ("short é".to_string(), false));
        // Near the end: the window stays inside the text.
        let tail = format!("{}vault", "ü".repeat(300));
        let (text, _) = excerpt(&tail, "vault", 100);
        assert!(text.ends_with("vault"), "{text}");
        let full = json!({"id": 3, "content": long, "score": 0.5, "relevance": 0.4,
            "category": "fact", "source": "capture", "occurred_at": null,
            "updated_at": "2026-01-01T00:00:00Z", "thread": "s1", "namespace": "ns",
            "uid": "x", "metadata": {}});
        let c = compact_hit(&full, "vault");
        assert_eq!(c["when"], "2026-01-01T00:00:00Z");
        assert_eq!(c["cut"], true);
        assert!(c.get("uid").is_none() && c.get("metadata").is_none());
    }

    #[test]
    fn the_text_form_is_the_value_form() {
        let mut m = Memory {
            id: 7,
            content: "a \"quoted\" \"metadata\":\"{}\" text".into(),
            metadata: r#"{"port": 5432, "tags": ["a"]}"#.into(),
            tags: vec!["ops".into()],
            ..Memory::default()
        };
        let v: Value = serde_json::from_str(&memory_text(&m)).unwrap();
        assert_eq!(v, memory(&m));
        m.metadata = "not json {".into();
        let v: Value = serde_json::from_str(&memory_text(&m)).unwrap();
        assert_eq!(v, memory(&m));
        let h = Hit {
            memory: m,
            score: 0.5,
            matched: crate::MatchKind::Lexical,
            explain: None,
            relevance: Some(0.25),
        };
        let v: Value = serde_json::from_str(&hit_text(&h)).unwrap();
        assert_eq!(v, hit(&h));
    }
}
