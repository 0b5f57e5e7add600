//! Import of an export or a drift backup: the document's layout (found
//! without building every entry), each entry checked into the columns an
//! import writes, and one chunk of entries written inside a guarded write.

use std::collections::HashMap;

use memd_proto::Memory;
use rusqlite::{OptionalExtension, params_from_iter};
use serde_json::Value;

use super::memories::{WRITTEN, written};
use super::{StoreError, WriteCtx};
use crate::gate;

/// One entry of an export or a drift backup, checked: the row as its file
/// has it (`superseded_by` the file's id of its successor, turned into a
/// local id from the links when written).
#[derive(Debug, Clone)]
pub struct Entry {
    source_id: Option<i64>,
    row: Memory,
}

/// An entry of an import document; one without a namespace goes to the
/// importing session's.
///
/// # Errors
/// What is wrong with the entry.
pub fn entry(v: &Value, session_namespace: &str) -> Result<Entry, String> {
    let obj = v.as_object().ok_or("an entry is not an object")?;
    let text =
        |k: &str| -> Option<String> { obj.get(k).and_then(Value::as_str).map(str::to_string) };
    let int = |k: &str| obj.get(k).and_then(Value::as_i64);
    let float = |k: &str| obj.get(k).and_then(Value::as_f64);
    let uid = text("uid")
        .filter(|u| !u.is_empty())
        .ok_or("an entry has no uid")?;
    let content = text("content")
        .filter(|c| !c.trim().is_empty())
        .ok_or("an entry has no content")?;
    let namespace = text("namespace")
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| session_namespace.to_string());
    let scope = text("scope").unwrap_or_else(|| "project".into());
    let scope = gate::normalize_scope(&scope).ok_or(format!("unknown scope `{scope}`"))?;
    let status = text("status").unwrap_or_else(|| "promoted".into());
    if !matches!(status.as_str(), "candidate" | "promoted" | "archived") {
        return Err(format!("unknown status `{status}`"));
    }
    let tier = int("tier").unwrap_or(2);
    if !(1..=3).contains(&tier) {
        return Err(format!("tier {tier} out of range"));
    }
    let importance = text("importance").unwrap_or_else(|| "medium".into());
    if !matches!(importance.as_str(), "low" | "medium" | "high") {
        return Err(format!("unknown importance `{importance}`"));
    }
    let metadata = match obj.get("metadata") {
        None | Some(Value::Null) => "{}".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    let pinned = match obj.get("pinned") {
        Some(Value::Bool(b)) => *b,
        Some(v) => v.as_i64().unwrap_or(0) != 0,
        None => false,
    };
    let now = crate::clock::now();
    let tags = obj
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|t| t.trim().to_lowercase())
                .filter(|t| !t.is_empty())
                .collect()
        })
        .unwrap_or_default();
    let row = Memory {
        uid,
        namespace,
        scope: scope.into(),
        scope_owner: text("scope_owner"),
        subject: text("subject"),
        category: text("category").unwrap_or_else(|| "note".into()),
        tier,
        importance,
        confidence: float("confidence").unwrap_or(1.0),
        pinned,
        status,
        metadata,
        tags,
        superseded_by: int("superseded_by"),
        superseded_at: text("superseded_at"),
        dedupe_key: Some(text("dedupe_key").unwrap_or_else(|| gate::dedupe_key(&content))),
        content,
        observation_count: int("observation_count").unwrap_or(1),
        confirmed_count: int("confirmed_count").unwrap_or(0),
        last_confirmed_at: text("last_confirmed_at"),
        use_count: int("use_count").unwrap_or(0),
        last_used_at: text("last_used_at"),
        access_score: float("access_score").unwrap_or(0.0),
        source: text("source").unwrap_or_else(|| "import".into()),
        created_by: text("created_by"),
        expires_at: text("expires_at"),
        created_at: text("created_at").unwrap_or_else(|| now.clone()),
        updated_at: text("updated_at").unwrap_or(now),
        rev: int("rev").unwrap_or(1),
        thread: text("thread").filter(|t| !t.trim().is_empty()),
        thread_pos: int("thread_pos"),
        occurred_at: text("occurred_at"),
        turn: text("turn"),
        // Where it came from, as the export said (a malformed one is left
        // out: the row's own source stands).
        provenance: obj
            .get("provenance")
            .and_then(|p| serde_json::from_value::<memd_proto::Provenance>(p.clone()).ok())
            .filter(|p| !p.sources.is_empty())
            .map(|p| memd_proto::Provenance::of(p.sources)),
        ..gate::blank_row()
    };
    Ok(Entry {
        source_id: int("id"),
        row,
    })
}

impl Entry {
    /// The namespace and scope the entry goes to.
    pub fn place(&self) -> (&str, &str) {
        (&self.row.namespace, &self.row.scope)
    }

    /// Whether it is a captured turn (local by rule, never shared).
    pub fn captured(&self) -> bool {
        self.row.source == "capture"
    }
}

/// Where each entry of an import document is, and what its links need.
pub struct Layout {
    /// Byte ranges of the entries in the document, in the order to insert.
    pub order: Vec<std::ops::Range<usize>>,
    /// Source id → uid, to turn the file's links into the new ids.
    pub links: HashMap<i64, String>,
}

/// First pass over an import document: finds the entries without building
/// them (an export of 100K memories stays a string plus small arrays), and
/// orders them so that a superseding memory comes before the ones it
/// supersedes.
///
/// # Errors
/// [`StoreError::InvalidInput`] when the document is not an export.
pub fn layout(doc: &str) -> Result<Layout, StoreError> {
    #[derive(serde::Deserialize)]
    struct Raw<'a> {
        #[serde(borrow)]
        entries: Option<Vec<&'a serde_json::value::RawValue>>,
    }
    #[derive(serde::Deserialize)]
    struct Head {
        id: Option<i64>,
        uid: Option<String>,
        superseded_by: Option<i64>,
    }
    let raw: Raw<'_> = serde_json::from_str(doc)
        .map_err(|e| StoreError::InvalidInput(format!("the file is not JSON: {e}")))?;
    let entries = raw.entries.ok_or_else(|| {
        StoreError::InvalidInput(
            "not an export or drift backup: there is no `entries` array".into(),
        )
    })?;
    let base = doc.as_ptr() as usize;
    let mut ranges = Vec::with_capacity(entries.len());
    let mut heads = Vec::with_capacity(entries.len());
    for e in &entries {
        let text = e.get();
        let start = text.as_ptr() as usize - base;
        ranges.push(start..start + text.len());
        heads.push(serde_json::from_str::<Head>(text).ok());
    }
    let links: HashMap<i64, String> = heads
        .iter()
        .flatten()
        .filter_map(|h| Some((h.id?, h.uid.clone()?)))
        .collect();
    let by_source: HashMap<i64, usize> = heads
        .iter()
        .enumerate()
        .filter_map(|(i, h)| Some((h.as_ref()?.id?, i)))
        .collect();
    let depth = |i: usize| {
        let mut at = heads[i].as_ref().and_then(|h| h.superseded_by);
        let mut n = 0;
        while let Some(target) = at.and_then(|t| by_source.get(&t)) {
            n += 1;
            if n > heads.len() {
                break; // a cycle in the file
            }
            at = heads[*target].as_ref().and_then(|h| h.superseded_by);
        }
        n
    };
    let mut idx: Vec<usize> = (0..ranges.len()).collect();
    let depths: Vec<usize> = idx.iter().map(|i| depth(*i)).collect();
    idx.sort_by_key(|i| (depths[*i], *i));
    Ok(Layout {
        order: idx.into_iter().map(|i| ranges[i].clone()).collect(),
        links,
    })
}

/// Writes one chunk of checked entries; returns the counts inserted,
/// skipped, replaced, linked and dangling.
///
/// # Errors
/// SQLite errors and row-rule refusals.
pub fn chunk(
    ctx: &mut WriteCtx<'_>,
    batch: Vec<Entry>,
    links: &HashMap<i64, String>,
    replace: bool,
) -> Result<[u64; 5], StoreError> {
    let conn = ctx.conn;
    let mut counts = [0u64; 5];
    let cols = WRITTEN.join(", ");
    let marks: Vec<String> = (1..=WRITTEN.len() + 2).map(|i| format!("?{i}")).collect();
    let insert = format!(
        "INSERT INTO memories ({cols}, superseded_by, id) VALUES ({})",
        marks.join(", ")
    );
    let replace_sql = insert.replacen("INSERT", "INSERT OR REPLACE", 1);
    let mut by_uid = conn.prepare_cached("SELECT id, namespace FROM memories WHERE uid = ?1")?;
    let mut id_taken =
        conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM memories WHERE id = ?1)")?;
    for e in batch {
        let existing: Option<(i64, String)> = by_uid
            .query_row([&e.row.uid], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()?;
        let replacing = replace && existing.is_some();
        let keep_id = match (existing, replace) {
            // Never replaced: a row already here, or one of another
            // namespace than the file says (a replace changes only the
            // namespaces the file names).
            (Some(_), false) => {
                counts[1] += 1;
                continue;
            }
            (Some((_, ns)), true) if ns != e.row.namespace => {
                counts[1] += 1;
                continue;
            }
            (Some((id, _)), true) => {
                // Replacing changes the row: the row rule holds it.
                ctx.check_row(id, None)?;
                // Replaced in place under the same id (INSERT OR REPLACE):
                // the old version stays in memory_revisions as a
                // `replace`, and the triggers give the row a rev above the
                // old one and a fresh `updated_at` (schema v10).
                counts[2] += 1;
                Some(id)
            }
            (None, _) => {
                counts[0] += 1;
                // Keep the row's id when it is free (an import into an
                // empty database gives the same ids).
                match e.source_id {
                    Some(id) if !id_taken.query_row([id], |r| r.get::<_, bool>(0))? => Some(id),
                    _ => None,
                }
            }
        };
        let link = match e.row.superseded_by {
            None => None,
            Some(source) => {
                let target = match links.get(&source) {
                    Some(uid) => by_uid.query_row([uid], |r| r.get::<_, i64>(0)).optional()?,
                    None => None,
                };
                match target {
                    Some(t) => {
                        counts[3] += 1;
                        Some(t)
                    }
                    None => {
                        counts[4] += 1;
                        None
                    }
                }
            }
        };
        let mut values = Vec::from(written(&e.row));
        values.push(link.map_or(
            rusqlite::types::Value::Null,
            rusqlite::types::Value::Integer,
        ));
        values.push(keep_id.map_or(
            rusqlite::types::Value::Null,
            rusqlite::types::Value::Integer,
        ));
        let sql = if replacing { &replace_sql } else { &insert };
        conn.prepare_cached(sql)?
            .execute(params_from_iter(values))?;
        let id = conn.last_insert_rowid();
        super::memories::tags_of_new_row(conn, id, &e.row.tags)?;
        if let Some(p) = &e.row.provenance {
            // An export carries where each memory came from.
            super::memories::set_sources(conn, id, &p.sources)?;
        }
        ctx.wrote(id);
    }
    Ok(counts)
}
