//! Reads through a session's [`View`]: its conditions, one row, a page,
//! ids, counts.

use memd_proto::Memory;
use rusqlite::types::Value;
use rusqlite::{Connection, OptionalExtension, params_from_iter};

use super::row::{COLUMNS, row_to_memory};
use crate::gate::{MetaMatch, Namespaces, View};
use crate::store::StoreError;
use crate::store::kinds::synced_row;

impl View {
    /// Appends the view's conditions (each starting with ` AND `) to `sql`,
    /// with their parameters, for a `memories m` alias.
    pub fn push_conditions(&self, sql: &mut String, params: &mut Vec<Value>) {
        match &self.namespaces {
            Namespaces::All => {}
            Namespaces::Only(list) => {
                let marks: Vec<String> = list
                    .iter()
                    .map(|ns| p(Value::Text(ns.clone()), params))
                    .collect();
                // With a tag filter, the tag index is the selective one: a
                // bare `namespace` term would make the planner walk the
                // whole namespace through its index (15 ms at 100K rows,
                // 0.8 ms from the tags); `+` keeps that index out.
                let column = if self.tags.is_empty() {
                    "m.namespace"
                } else {
                    "+m.namespace"
                };
                sql.push_str(&format!(" AND {column} IN ({})", marks.join(", ")));
            }
        }
        if !self.every_owner {
            let agent = p(Value::Text(self.agent.clone()), params);
            let session = p(Value::Text(self.session.clone()), params);
            sql.push_str(&format!(
                " AND (m.scope = 'project' OR (m.scope = 'agent' AND m.scope_owner = {agent}) \
                 OR (m.scope = 'session' AND m.scope_owner = {session}))"
            ));
        }
        for (column, value) in [
            ("m.scope", &self.scope),
            ("m.category", &self.category),
            ("m.created_by", &self.created_by),
        ] {
            if let Some(value) = value {
                let mark = p(Value::Text(value.clone()), params);
                sql.push_str(&format!(" AND {column} = {mark}"));
            }
        }
        if let Some(tier) = self.tier {
            let mark = p(Value::Integer(tier), params);
            sql.push_str(&format!(" AND m.tier = {mark}"));
        }
        // `!NAME`: every source but that one.
        if let Some(source) = &self.source {
            let (op, name) = match source.strip_prefix('!') {
                Some(name) => ("<>", name),
                None => ("=", source.as_str()),
            };
            let mark = p(Value::Text(name.trim().to_string()), params);
            sql.push_str(&format!(" AND m.source {op} {mark}"));
        }
        if let Some(subject) = &self.subject {
            let mark = p(Value::Text(subject.clone()), params);
            sql.push_str(&format!(" AND m.subject = {mark}"));
        }
        self.push_tags(sql, params);
        self.push_meta(sql, params);
        for (column, op, bound) in [
            ("m.created_at", ">=", &self.since),
            ("m.created_at", "<", &self.until),
            ("m.updated_at", ">=", &self.updated_since),
            ("m.updated_at", "<", &self.updated_until),
        ] {
            if let Some(bound) = bound {
                let mark = p(Value::Text(bound.clone()), params);
                sql.push_str(&format!(" AND {column} {op} {mark}"));
            }
        }
        if !self.include_superseded {
            sql.push_str(" AND m.superseded_by IS NULL");
        }
        if let Some(status) = &self.status {
            let mark = p(Value::Text(status.clone()), params);
            sql.push_str(&format!(" AND m.status = {mark}"));
        } else if !self.include_archived {
            sql.push_str(" AND m.status <> 'archived'");
        }
        let now = p(Value::Text(self.now.clone()), params);
        sql.push_str(&format!(
            " AND (m.expires_at IS NULL OR m.expires_at > {now})"
        ));
    }

    /// The tag filter: every tag of the list, or any with `tags_any`.
    fn push_tags(&self, sql: &mut String, params: &mut Vec<Value>) {
        if self.tags.is_empty() {
            return;
        }
        let marks: Vec<String> = self
            .tags
            .iter()
            .map(|t| p(Value::Text(t.clone()), params))
            .collect();
        // An IN subquery the planner can drive from the tag index, instead
        // of a count per row of the namespace.
        if self.tags_any {
            sql.push_str(&format!(
                " AND m.id IN (SELECT memory_id FROM memory_tags WHERE tag IN ({}))",
                marks.join(", ")
            ));
        } else {
            sql.push_str(&format!(
                " AND m.id IN (SELECT memory_id FROM memory_tags WHERE tag IN ({}) \
                 GROUP BY memory_id HAVING count(*) = {})",
                marks.join(", "),
                self.tags.len()
            ));
        }
    }

    /// The metadata filters: each key holding its value.
    fn push_meta(&self, sql: &mut String, params: &mut Vec<Value>) {
        for MetaMatch { key, value } in &self.meta {
            let key = p(Value::Text(key.clone()), params);
            let cond = match value {
                serde_json::Value::Null => "j.type = 'null'".to_string(),
                serde_json::Value::Bool(true) => "j.type = 'true'".to_string(),
                serde_json::Value::Bool(false) => "j.type = 'false'".to_string(),
                serde_json::Value::Number(n) => {
                    let v = match n.as_i64() {
                        Some(i) => Value::Integer(i),
                        None => Value::Real(n.as_f64().unwrap_or(f64::NAN)),
                    };
                    let mark = p(v, params);
                    format!("j.type IN ('integer', 'real') AND j.value = {mark}")
                }
                serde_json::Value::String(s) => {
                    let mark = p(Value::Text(s.clone()), params);
                    format!("j.type = 'text' AND j.value = {mark}")
                }
                other => {
                    let mark = p(Value::Text(other.to_string()), params);
                    format!("j.type IN ('object', 'array') AND json(j.value) = json({mark})")
                }
            };
            // CASE keeps json_each away from metadata an external writer left
            // invalid (it would fail the whole query).
            sql.push_str(&format!(
                " AND CASE WHEN json_valid(m.metadata) THEN EXISTS (SELECT 1 FROM \
                 json_each(m.metadata) j WHERE j.key = {key} AND {cond}) ELSE 0 END"
            ));
        }
    }
}

/// A `?n` placeholder for `v`, pushed onto `params`.
fn p(v: Value, params: &mut Vec<Value>) -> String {
    params.push(v);
    format!("?{}", params.len())
}

/// Reads one row if the view may see it.
///
/// # Errors
/// SQLite errors.
pub fn get_visible(conn: &Connection, id: i64, view: &View) -> Result<Option<Memory>, StoreError> {
    let mut sql = format!("SELECT {COLUMNS} FROM memories m WHERE m.id = ?1");
    let mut params = vec![Value::Integer(id)];
    view.push_conditions(&mut sql, &mut params);
    Ok(conn
        .prepare_cached(&sql)?
        .query_row(params_from_iter(params), row_to_memory)
        .optional()?)
}

/// Lists visible rows, newest first.
///
/// # Errors
/// SQLite errors.
pub fn list(
    conn: &Connection,
    view: &View,
    limit: u32,
    offset: u32,
) -> Result<Vec<Memory>, StoreError> {
    let mut sql = format!("SELECT {COLUMNS} FROM memories m WHERE 1");
    let mut params = Vec::new();
    view.push_conditions(&mut sql, &mut params);
    params.push(Value::Integer(i64::from(limit)));
    params.push(Value::Integer(i64::from(offset)));
    sql.push_str(&format!(
        " ORDER BY m.id DESC LIMIT ?{} OFFSET ?{}",
        params.len() - 1,
        params.len()
    ));
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt
        .query_map(params_from_iter(params), row_to_memory)?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Ids of the rows visible in `view` (its namespace, source and other
/// filters), of `thread` when one is given, by id.
///
/// # Errors
/// SQLite errors.
pub fn ids_where(
    conn: &Connection,
    view: &View,
    thread: Option<&str>,
) -> Result<Vec<i64>, StoreError> {
    let mut sql = "SELECT m.id FROM memories m WHERE 1 = 1".to_string();
    let mut params = Vec::new();
    if let Some(thread) = thread {
        params.push(Value::Text(thread.to_string()));
        sql.push_str(" AND m.thread = ?1");
    }
    view.push_conditions(&mut sql, &mut params);
    sql.push_str(" ORDER BY m.id");
    let mut stmt = conn.prepare(&sql)?;
    let ids = stmt
        .query_map(rusqlite::params_from_iter(params), |r| r.get(0))?
        .collect::<Result<Vec<i64>, _>>()?;
    Ok(ids)
}

/// Ids of the rows expired at `now`, of one namespace or of all, by id.
///
/// # Errors
/// SQLite errors.
pub fn expired_ids(
    conn: &Connection,
    now: &str,
    namespace: Option<&str>,
    shared: bool,
) -> Result<Vec<i64>, StoreError> {
    let mut stmt = conn.prepare_cached(concat!(
        "SELECT id FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ?1 \
         AND (?2 IS NULL OR namespace = ?2) AND (",
        synced_row!(),
        ") = ?3 ORDER BY id"
    ))?;
    let ids = stmt
        .query_map((now, namespace, shared), |r| r.get::<_, i64>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ids)
}

/// How many rows there are.
///
/// # Errors
/// SQLite errors.
pub fn count(conn: &Connection) -> Result<i64, StoreError> {
    Ok(conn.query_row("SELECT count(*) FROM memories", [], |r| r.get(0))?)
}

/// Row counts by status, by status name.
///
/// # Errors
/// SQLite errors.
pub fn count_by_status(conn: &Connection) -> Result<Vec<(String, i64)>, StoreError> {
    let mut stmt = conn
        .prepare_cached("SELECT status, count(*) FROM memories GROUP BY status ORDER BY status")?;
    let rows = stmt
        .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// Row counts by namespace, the largest first, at most `limit` of them.
///
/// # Errors
/// SQLite errors.
pub fn count_by_namespace(conn: &Connection, limit: u32) -> Result<Vec<(String, i64)>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT namespace, count(*) AS n FROM memories GROUP BY namespace \
         ORDER BY n DESC, namespace LIMIT ?1",
    )?;
    let rows = stmt
        .query_map([limit], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}
