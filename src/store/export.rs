//! The export documents, streamed from a read transaction: JSON (every
//! column, tags included — the drift backup's shape) and a Markdown
//! bootstrap of the top memories.

use std::io::Write;

use rusqlite::{Connection, params_from_iter};
use serde_json::json;

use super::memories::{COLUMNS, row_to_memory};
use super::{Cause, StoreError, read_generation};

fn namespace_clause(namespaces: Option<&[String]>) -> (String, Vec<String>) {
    match namespaces {
        None => (String::from("1"), Vec::new()),
        Some(list) => (
            format!("m.namespace IN ({})", vec!["?"; list.len()].join(", ")),
            list.to_vec(),
        ),
    }
}

/// The export document, streamed: `{timestamp, generation, namespaces,
/// entries}` — the drift backup's shape, every column, tags included.
///
/// # Errors
/// SQLite and I/O errors.
pub fn write_json(
    conn: &Connection,
    namespaces: Option<&[String]>,
    w: &mut impl Write,
) -> Result<u64, StoreError> {
    let generation = read_generation(conn)?;
    let head = json!({
        "timestamp": crate::clock::now(),
        "generation": generation,
        "namespaces": namespaces,
    });
    let head = head.to_string();
    // Write the head's fields, then stream the entries array.
    write!(w, "{},\"entries\":[", &head[..head.len() - 1])?;
    let (clause, params) = namespace_clause(namespaces);
    let sql = format!("SELECT {COLUMNS} FROM memories m WHERE {clause} ORDER BY m.id");
    let mut stmt = conn.prepare(&sql)?;
    let mut rows = stmt.query(params_from_iter(params))?;
    let mut n = 0u64;
    while let Some(row) = rows.next()? {
        let m = row_to_memory(row)?;
        if n > 0 {
            w.write_all(b",")?;
        }
        serde_json::to_writer(&mut *w, &memd_proto::json::memory(&m))
            .map_err(|e| StoreError::Io(Cause::of(e)))?;
        n += 1;
    }
    w.write_all(b"]}\n")?;
    Ok(n)
}

fn title(category: &str) -> String {
    let mut c = category.chars();
    match c.next() {
        Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
        None => String::new(),
    }
}

/// A readable bootstrap: per namespace and category, the top memories
/// (pinned, tier, importance, uses, newest).
///
/// # Errors
/// SQLite and I/O errors.
pub fn write_markdown(
    conn: &Connection,
    namespaces: Option<&[String]>,
    top: u32,
    w: &mut impl Write,
) -> Result<u64, StoreError> {
    let (clause, params) = namespace_clause(namespaces);
    let sql =
        format!("SELECT DISTINCT m.namespace FROM memories m WHERE {clause} ORDER BY m.namespace");
    let mut stmt = conn.prepare(&sql)?;
    let names = stmt
        .query_map(params_from_iter(params), |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    writeln!(w, "# Memory\n")?;
    writeln!(
        w,
        "Exported by memd {} — promoted, active memories; the top {top} per category.",
        env!("CARGO_PKG_VERSION")
    )?;
    let mut n = 0u64;
    let now = crate::clock::now();
    for ns in names {
        writeln!(w, "\n## Namespace `{ns}`")?;
        let mut cats = conn.prepare_cached(
            "SELECT DISTINCT category FROM memories WHERE namespace = ?1 AND status = 'promoted' \
             AND superseded_by IS NULL ORDER BY category",
        )?;
        let categories = cats
            .query_map([&ns], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        for cat in categories {
            let mut rows = conn.prepare_cached(
                "SELECT id, subject, content, tags FROM (SELECT m.id, m.subject, m.content, \
                 (SELECT group_concat(tag, ', ') FROM memory_tags t WHERE t.memory_id = m.id) \
                 AS tags, m.pinned, m.tier, m.importance, m.access_score \
                 FROM memories m WHERE m.namespace = ?1 AND m.category = ?2 \
                 AND m.status = 'promoted' AND m.superseded_by IS NULL \
                 AND (m.expires_at IS NULL OR m.expires_at > ?3)) \
                 ORDER BY pinned DESC, tier, \
                 CASE importance WHEN 'high' THEN 0 WHEN 'medium' THEN 1 ELSE 2 END, \
                 access_score DESC, id DESC LIMIT ?4",
            )?;
            let items = rows
                .query_map((&ns, &cat, &now, top), |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, Option<String>>(3)?,
                    ))
                })?
                .collect::<Result<Vec<_>, _>>()?;
            if items.is_empty() {
                continue;
            }
            writeln!(w, "\n### {}\n", title(&cat))?;
            for (id, subject, content, tags) in items {
                let text = content.split_whitespace().collect::<Vec<_>>().join(" ");
                let subject = subject.map(|s| format!("**{s}**: ")).unwrap_or_default();
                let tags = tags.map(|t| format!(" _({t})_")).unwrap_or_default();
                writeln!(w, "- {subject}{text}{tags} (#{id})")?;
                n += 1;
            }
        }
    }
    Ok(n)
}
