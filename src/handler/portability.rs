//! `sweep`, `export`, `backup`, `fetch`, `import`: the lifecycle on demand,
//! and the ways in and out of the database.
//!
//! Files go through the socket, never through a path a client names: an
//! export or a backup is prepared in a temporary file of the data dir (mode
//! 0600) that the client reads with `fetch`; an import reads the session's
//! upload.

use std::collections::HashMap;
use std::io::{BufWriter, Write};
use std::os::unix::fs::FileExt;

use memd_proto::{
    BackupRequest, Chunk, DownloadInfo, ExportRequest, FetchRequest, ImportRequest, Report,
    Response, SweepRequest,
};
use rusqlite::{Connection, OptionalExtension, params_from_iter};
use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::drift::policy::WriteKind;
use crate::session::{Download, Session, create_private};
use crate::state::Shared;
use crate::store::lifecycle::{self, Trigger};
use crate::store::memories::{COLUMNS, row_to_memory};
use crate::store::readers::ReadKind;
use crate::store::{StoreError, gate, read_generation};

/// Largest chunk a fetch returns.
const FETCH_MAX: u32 = 1024 * 1024;
/// Entries imported per transaction. Small on purpose: inside a job's
/// savepoint every statement's own savepoint is released by truncating the
/// in-memory sub-journal, a walk from its start, so a job's cost grows with
/// the square of its rows (10K entries with tags: 500 per job 2.9 s, 100 per
/// job 1.4 s, 50 per job 1.2 s).
const IMPORT_CHUNK: usize = 100;

/// Runs a sweep (one at a time).
///
/// # Errors
/// As [`lifecycle::sweep`].
pub async fn run_sweep(
    shared: &Shared,
    trigger: Trigger,
    dry_run: bool,
) -> Result<Value, StoreError> {
    let _one = shared.sweeping.lock().await;
    let live = shared
        .live
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let config = shared.config();
    let report = lifecycle::sweep(
        &shared.store,
        &config.lifecycle,
        live,
        trigger,
        dry_run,
        OffsetDateTime::now_utc(),
    )
    .await;
    // A sweep reads every row in chunks; what it allocated goes back.
    crate::sys::release_free_memory();
    report
}

pub(super) async fn sweep(
    req: SweepRequest,
    _session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let report = run_sweep(shared, Trigger::Manual, req.dry_run).await?;
    Ok(Response::Report(Report {
        json: report.to_string(),
    }))
}

/// The session's download file, replacing an earlier one.
fn new_download(
    shared: &Shared,
    session: &mut Session,
) -> Result<(std::path::PathBuf, std::fs::File), StoreError> {
    session.download = None;
    let path = shared
        .paths
        .data_dir
        .join(format!(".download-{}.tmp", session.id()));
    let file = create_private(&path)?;
    Ok((path, file))
}

fn finish_download(
    session: &mut Session,
    path: std::path::PathBuf,
    file: std::fs::File,
    info: Value,
) -> Result<Response, StoreError> {
    let size = file.metadata()?.len();
    session.download = Some(Download { path, file, size });
    Ok(Response::Download(DownloadInfo {
        size,
        info: info.to_string(),
    }))
}

pub(super) async fn export(
    req: ExportRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let namespaces: Option<Vec<String>> = if req.all_namespaces {
        None
    } else if req.namespaces.is_empty() {
        Some(vec![session.namespace().to_string()])
    } else {
        Some(req.namespaces.clone())
    };
    let markdown = match req.format.as_str() {
        "" | "json" => false,
        "markdown" | "md" => true,
        other => {
            return Err(StoreError::InvalidInput(format!(
                "unknown export format `{other}`: expected json or markdown"
            )));
        }
    };
    let top = if req.top == 0 { 20 } else { req.top };
    let (path, file) = new_download(shared, session)?;
    let out = file.try_clone()?;
    let read = shared
        .store
        .readers
        .read(ReadKind::Client, move |conn| {
            let mut w = BufWriter::new(out);
            let n = if markdown {
                write_markdown(conn, namespaces.as_deref(), top, &mut w)?
            } else {
                write_json(conn, namespaces.as_deref(), &mut w)?
            };
            let file = w.into_inner().map_err(|e| StoreError::Io(e.to_string()))?;
            file.sync_all()?;
            Ok(n)
        })
        .await?;
    session.saw(read.generation, []);
    let info = json!({"entries": read.value, "generation": read.generation,
                      "format": if markdown { "markdown" } else { "json" }});
    finish_download(session, path, file, info)
}

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
fn write_json(
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
            .map_err(|e| StoreError::Io(e.to_string()))?;
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
fn write_markdown(
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

pub(super) async fn backup(
    _req: BackupRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let (path, file) = new_download(shared, session)?;
    drop(file);
    let target = path.clone();
    // The backup API, all pages in one step: one consistent read of the
    // database while writes go on.
    let generation = shared
        .store
        .readers
        .with_connection(move |src| {
            std::fs::remove_file(&target)?;
            let mut dst = Connection::open(&target)?;
            {
                let backup = rusqlite::backup::Backup::new(src, &mut dst)?;
                backup.step(-1)?;
            }
            let g = read_generation(&dst)?;
            dst.close().map_err(|(_, e)| StoreError::from(e))?;
            Ok(g)
        })
        .await?;
    restrict(&path);
    let file = std::fs::OpenOptions::new().read(true).open(&path)?;
    file.sync_all()?;
    finish_download(session, path, file, json!({"generation": generation}))
}

fn restrict(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
}

pub(super) async fn fetch(
    req: FetchRequest,
    session: &mut Session,
    _shared: &Shared,
) -> Result<Response, StoreError> {
    let d = session.download.as_ref().ok_or_else(|| {
        StoreError::InvalidInput("nothing to fetch: ask for an export or a backup first".into())
    })?;
    let len = req.len.clamp(1, FETCH_MAX) as u64;
    let want = len.min(d.size.saturating_sub(req.offset));
    let mut data = vec![0u8; want as usize];
    let mut read = 0;
    tokio::task::block_in_place(|| {
        while read < data.len() {
            match d.file.read_at(&mut data[read..], req.offset + read as u64) {
                Ok(0) => break,
                Ok(n) => read += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    })?;
    data.truncate(read);
    let eof = req.offset + read as u64 >= d.size;
    if eof {
        session.download = None;
    }
    Ok(Response::Chunk(Chunk { data, eof }))
}

/// One entry of an export or a drift backup, checked.
struct Entry {
    source_id: Option<i64>,
    uid: String,
    namespace: String,
    superseded_by: Option<i64>,
    values: Vec<rusqlite::types::Value>,
    tags: Vec<String>,
}

/// The columns an import writes, in order (`superseded_by` is filled in
/// from the links).
const IMPORT_COLUMNS: &[&str] = &[
    "uid",
    "namespace",
    "scope",
    "scope_owner",
    "content",
    "subject",
    "category",
    "tier",
    "importance",
    "confidence",
    "pinned",
    "status",
    "metadata",
    "superseded_at",
    "dedupe_key",
    "observation_count",
    "confirmed_count",
    "last_confirmed_at",
    "use_count",
    "last_used_at",
    "access_score",
    "source",
    "created_by",
    "expires_at",
    "created_at",
    "updated_at",
    "rev",
    "thread",
    "thread_pos",
    "occurred_at",
];

/// An entry of an import document; one without a namespace goes to the
/// importing session's.
fn entry(v: &Value, session_namespace: &str) -> Result<Entry, String> {
    use rusqlite::types::Value as V;
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
    let opt = |s: Option<String>| s.map_or(V::Null, V::Text);
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
    let values = vec![
        V::Text(uid.clone()),
        V::Text(namespace.clone()),
        V::Text(scope.into()),
        opt(text("scope_owner")),
        V::Text(content.clone()),
        opt(text("subject")),
        V::Text(text("category").unwrap_or_else(|| "note".into())),
        V::Integer(tier),
        V::Text(importance),
        V::Real(float("confidence").unwrap_or(1.0)),
        V::Integer(pinned as i64),
        V::Text(status),
        V::Text(metadata),
        opt(text("superseded_at")),
        V::Text(text("dedupe_key").unwrap_or_else(|| gate::dedupe_key(&content))),
        V::Integer(int("observation_count").unwrap_or(1)),
        V::Integer(int("confirmed_count").unwrap_or(0)),
        opt(text("last_confirmed_at")),
        V::Integer(int("use_count").unwrap_or(0)),
        opt(text("last_used_at")),
        V::Real(float("access_score").unwrap_or(0.0)),
        V::Text(text("source").unwrap_or_else(|| "import".into())),
        opt(text("created_by")),
        opt(text("expires_at")),
        V::Text(text("created_at").unwrap_or_else(|| now.clone())),
        V::Text(text("updated_at").unwrap_or(now)),
        V::Integer(int("rev").unwrap_or(1)),
        opt(text("thread").filter(|t| !t.trim().is_empty())),
        int("thread_pos").map_or(V::Null, V::Integer),
        opt(text("occurred_at")),
    ];
    Ok(Entry {
        source_id: int("id"),
        uid,
        namespace,
        superseded_by: int("superseded_by"),
        values,
        tags,
    })
}

/// Where each entry of an import document is, and what its links need.
struct Layout {
    /// Byte ranges of the entries in the document, in the order to insert.
    order: Vec<std::ops::Range<usize>>,
    /// Source id → uid, to turn the file's links into the new ids.
    links: HashMap<i64, String>,
}

/// First pass over an import document: finds the entries without building
/// them (an export of 100K memories stays a string plus small arrays), and
/// orders them so that a superseding memory comes before the ones it
/// supersedes.
fn layout(doc: &str) -> Result<Layout, StoreError> {
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

pub(super) async fn import(
    req: ImportRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let upload = session
        .upload
        .take()
        .ok_or_else(|| StoreError::InvalidInput("nothing was uploaded to import".into()))?;
    let path = upload.path.clone();
    let (doc, layout) = tokio::task::spawn_blocking(move || {
        let doc = std::fs::read_to_string(&path)
            .map_err(|e| StoreError::InvalidInput(format!("the file is not UTF-8 text: {e}")))?;
        let layout = layout(&doc)?;
        Ok::<_, StoreError>((doc, layout))
    })
    .await
    .map_err(|e| StoreError::Io(e.to_string()))??;
    drop(upload);
    let kind = if req.replace {
        WriteKind::Destructive
    } else {
        WriteKind::Append
    };
    let links = std::sync::Arc::new(layout.links);
    let read = layout.order.len() as u64;
    let mut invalid = 0u64;
    let mut errors: Vec<String> = Vec::new();
    let mut totals = [0u64; 5]; // inserted, skipped, replaced, linked, dangling
    let session_namespace = session.namespace().to_string();
    for chunk in layout.order.chunks(IMPORT_CHUNK) {
        // Second pass: build only this chunk's entries.
        let mut batch = Vec::with_capacity(chunk.len());
        for range in chunk {
            let parsed = serde_json::from_str::<Value>(&doc[range.clone()])
                .map_err(|e| e.to_string())
                .and_then(|v| entry(&v, &session_namespace));
            match parsed {
                Ok(e) => batch.push(e),
                Err(msg) => {
                    invalid += 1;
                    if errors.len() < 5 {
                        errors.push(format!("entry at byte {}: {msg}", range.start));
                    }
                }
            }
        }
        let (links, replace) = (links.clone(), req.replace);
        let counts = super::guarded(shared, session, kind, move |ctx, _| {
            import_chunk(ctx, batch, &links, replace)
        })
        .await?;
        for (t, c) in totals.iter_mut().zip(counts) {
            *t += c;
        }
    }
    let report = json!({
        "read": read,
        "inserted": totals[0],
        "skipped": totals[1],
        "replaced": totals[2],
        "links": totals[3],
        "dangling_links": totals[4],
        "invalid": invalid,
        "errors": errors,
    });
    tracing::info!(session = %session.id(), report = %report, "import done");
    // The document was read whole; its pages go back to the system.
    drop(doc);
    crate::sys::release_free_memory();
    Ok(Response::Report(Report {
        json: report.to_string(),
    }))
}

fn import_chunk(
    ctx: &mut crate::store::WriteCtx<'_>,
    batch: Vec<Entry>,
    links: &HashMap<i64, String>,
    replace: bool,
) -> Result<[u64; 5], StoreError> {
    let conn = ctx.conn;
    let mut counts = [0u64; 5];
    let cols = IMPORT_COLUMNS.join(", ");
    let marks: Vec<String> = (1..=IMPORT_COLUMNS.len() + 2)
        .map(|i| format!("?{i}"))
        .collect();
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
            .query_row([&e.uid], |r| Ok((r.get(0)?, r.get(1)?)))
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
            (Some((_, ns)), true) if ns != e.namespace => {
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
        let link = match e.superseded_by {
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
        let mut values = e.values;
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
        crate::store::memories::tags_of_new_row(conn, id, &e.tags)?;
        ctx.wrote(id);
    }
    Ok(counts)
}
