//! The embedding worker: a background task that gives every memory a
//! current vector.
//!
//! Adds return without waiting for it. It wakes when the generation moves
//! (a session's write, or an external one the drift watcher found) or when
//! asked (`reembed`), reads the rows without a vector — the pending rows,
//! recomputed from the database each time, so a crash loses no work —
//! embeds them in batches on the blocking pool, and stores the vectors as
//! the daemon's own commits (never drift for anyone). A vector is stored
//! only if the row still has the text that was embedded.
//!
//! Rows added after the daemon started serving are compared with their
//! neighbors once embedded, however long the embedder took to load (rows
//! that were there before, a restored file and `reembed` are a backfill and
//! are not): a close one in the same namespace, scope and owner is recorded
//! in `memory_similar` and pushed to subscribed sessions as a notice; with
//! `[embed] auto_supersede`, a close one with the same subject and no
//! conflicting metadata is superseded. Either always runs from the newer
//! row to the older one ([`rules::findings`]): only an older row is
//! superseded (by a newer one), and `similar_to` names the older row.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use memd_proto::{DriftEvent, SimilarEvent};
use rusqlite::{Connection, OptionalExtension, params_from_iter};

use super::rules::{self, Embedded, Finding, LockCheck, ModelLock, Neighbor, Thresholds};
use super::service::State;
use super::vectors::{Index, Probe, from_blob, to_blob};
use super::{EmbedError, Embedder, Provider};
use crate::session::ident::Author;
use crate::state::Shared;
use crate::store::StoreError;
use crate::store::readers::ReadKind;

/// How often the worker looks at the generation while idle.
const POLL: Duration = Duration::from_millis(100);

/// Reads the model lock from `memory_meta`.
///
/// # Errors
/// SQLite errors.
pub fn read_lock(conn: &Connection) -> Result<Option<ModelLock>, StoreError> {
    let get = |key: &str| -> Result<Option<String>, StoreError> {
        Ok(conn
            .prepare_cached("SELECT value FROM memory_meta WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()?)
    };
    Ok(match (get("embed_model")?, get("embed_dim")?) {
        (Some(model), Some(dim)) => dim.parse().ok().map(|dim| ModelLock { model, dim }),
        _ => None,
    })
}

/// Writes the model lock.
///
/// # Errors
/// SQLite errors.
pub fn write_lock(conn: &Connection, lock: &ModelLock) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT OR REPLACE INTO memory_meta (key, value) VALUES ('embed_model', ?1), \
         ('embed_dim', ?2)",
    )?
    .execute((&lock.model, lock.dim.to_string()))?;
    Ok(())
}

/// The newest row id (0 without rows).
///
/// # Errors
/// SQLite errors.
pub fn newest_id(conn: &Connection) -> Result<i64, StoreError> {
    Ok(
        conn.query_row("SELECT coalesce(max(id), 0) FROM memories", [], |r| {
            r.get(0)
        })?,
    )
}

/// Counts of rows with a vector and rows still to embed.
///
/// # Errors
/// SQLite errors.
pub fn counts(conn: &Connection) -> Result<(i64, i64), StoreError> {
    let embedded: i64 = conn
        .prepare_cached("SELECT count(*) FROM memory_vectors v WHERE EXISTS (SELECT 1 FROM memories m WHERE m.id = v.memory_id)")?
        .query_row([], |r| r.get(0))?;
    let pending: i64 = conn
        .prepare_cached(
            "SELECT count(*) FROM memories m WHERE NOT EXISTS \
             (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id)",
        )?
        .query_row([], |r| r.get(0))?;
    Ok((embedded, pending))
}

/// Builds the embedder the settings ask for (blocking: loads a model or
/// probes a server).
///
/// # Errors
/// [`EmbedError`] saying why none could be made.
pub fn build(svc: &super::EmbedService) -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
    let c = &svc.config;
    let http = |protocol, default_url: &str| -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
        let api_key = (protocol == super::http::Protocol::Openai)
            .then(|| std::env::var(&c.api_key_env).ok())
            .flatten()
            .filter(|k| !k.is_empty());
        let e = super::http::HttpEmbedder::connect(super::http::HttpSettings {
            protocol,
            url: c.url.clone().unwrap_or_else(|| default_url.to_string()),
            model: c.model.clone().unwrap_or_default(),
            api_key,
            timeout: Duration::from_millis(c.timeout_ms),
            retries: c.retries,
            backoff: Duration::from_millis(250),
        })?;
        Ok(Some(Arc::new(e)))
    };
    match c.provider {
        Provider::None => Ok(None),
        Provider::Ollama => http(super::http::Protocol::Ollama, "http://127.0.0.1:11434"),
        Provider::Openai => http(super::http::Protocol::Openai, "https://api.openai.com"),
        Provider::Auto | Provider::Local => local(svc),
    }
}

#[cfg(feature = "local-embed")]
fn local(svc: &super::EmbedService) -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
    Ok(Some(Arc::new(super::local::LocalEmbedder::load(
        &svc.model_dir,
    )?)))
}

#[cfg(not(feature = "local-embed"))]
fn local(_svc: &super::EmbedService) -> Result<Option<Arc<dyn Embedder>>, EmbedError> {
    Err(EmbedError::Model(
        "this memd was built without the local embedder (cargo feature `local-embed`); \
         configure [embed] provider = \"ollama\" or \"openai\""
            .into(),
    ))
}

/// Runs the worker until the daemon stops. `existing` is the newest row
/// when the daemon started serving (read before it accepted anyone): rows
/// up to it are old data, embedded without the near-duplicate check; every
/// later row is checked, even one added while the embedder was loading.
/// `None` (it could not be read) counts the rows found once the embedder
/// is ready as old.
pub async fn run(shared: Arc<Shared>, existing: Option<i64>) {
    let svc = &shared.embed;
    if svc.config.provider == Provider::None {
        return;
    }
    let embedder = loop {
        let s = shared.clone();
        let built = tokio::task::spawn_blocking(move || build(&s.embed)).await;
        match built {
            Ok(Ok(Some(e))) => break e,
            Ok(Ok(None)) => return,
            Ok(Err(e)) => {
                let retry = matches!(e, EmbedError::Unreachable(_) | EmbedError::Provider(_));
                tracing::warn!(error = %e, provider = svc.config.provider.as_str(), "no embedder: semantic search is off");
                svc.set_state(State::Unavailable(e.to_string()));
                if !retry {
                    return;
                }
                // A provider that is down now may come up later.
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
            Err(e) => {
                svc.set_state(State::Unavailable(format!(
                    "the embedder crashed while loading: {e}"
                )));
                return;
            }
        }
    };
    tracing::info!(
        model = embedder.model_id(),
        dim = embedder.dim(),
        "embedder ready"
    );
    let mut worker = Worker {
        shared: shared.clone(),
        embedder,
        failed: HashSet::new(),
        last_generation: None,
        backfill_through: existing.unwrap_or(0),
        embedded_through: 0,
    };
    match worker.reload().await {
        Ok(newest) if existing.is_none() => worker.backfill_through = newest,
        Ok(_) => {}
        Err(e) => tracing::warn!(error = %e, "cannot read the stored vectors"),
    }
    svc.set_state(State::Ready(worker.embedder.clone()));
    let mut drift = shared.store.generations.events.subscribe();
    let mut backoff = Duration::from_secs(1);
    loop {
        let reembed = svc.reload.swap(false, std::sync::atomic::Ordering::AcqRel);
        // Another file (or events missed, which may have said so).
        let mut new_file = false;
        let mut reconcile = false;
        loop {
            match drift.try_recv() {
                Ok(DriftEvent { reason, .. }) => {
                    if reason.contains("restored") || reason.contains("replaced") {
                        new_file = true;
                    } else {
                        reconcile = true;
                    }
                }
                Err(tokio::sync::broadcast::error::TryRecvError::Lagged(_)) => new_file = true,
                Err(_) => break,
            }
        }
        let step = async {
            if new_file || reembed {
                // `reembed` embeds every row again: the rows embedded so far
                // were checked when they arrived (or are old data). Rows of
                // another file are old data.
                let checked = worker.backfill_through.max(worker.embedded_through);
                let newest = worker.reload().await?;
                worker.backfill_through = if new_file { newest } else { checked };
            } else if reconcile {
                worker.reconcile().await?;
            }
            worker.catch_up().await
        };
        match step.await {
            Ok(()) => backoff = Duration::from_secs(1),
            Err(e) => {
                tracing::warn!(error = %e, "embedding failed; retrying later");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(60));
            }
        }
        tokio::select! {
            _ = tokio::time::sleep(POLL) => {}
            _ = svc.wake.notified() => { worker.last_generation = None; }
        }
    }
}

struct Worker {
    shared: Arc<Shared>,
    embedder: Arc<dyn Embedder>,
    /// Rows the provider refused on their own (skipped until restart).
    failed: HashSet<i64>,
    last_generation: Option<u64>,
    /// Rows up to this id are a backfill (rows there before the daemon
    /// served, a restored file, rows embedded again by `reembed`) and skip
    /// the near-duplicate check; later rows arrived live.
    backfill_through: i64,
    /// The newest row with a vector stored by this worker or loaded.
    embedded_through: i64,
}

/// A row to embed: id, namespace and the text as read.
type Row = (i64, String, String);

impl Worker {
    /// Reads the lock and every stored vector into a new index; returns the
    /// newest row id.
    async fn reload(&mut self) -> Result<i64, StoreError> {
        let dim = self.embedder.dim();
        let read = self
            .shared
            .store
            .readers
            .read(ReadKind::Internal, move |conn| {
                let lock = read_lock(conn)?;
                let newest = newest_id(conn)?;
                let mut index = Index::new(dim);
                if lock.as_ref().is_none_or(|l| l.dim == dim) {
                    let mut stmt = conn.prepare(
                        "SELECT v.memory_id, m.namespace, v.vector FROM memory_vectors v \
                         JOIN memories m ON m.id = v.memory_id",
                    )?;
                    let mut rows = stmt.query([])?;
                    while let Some(r) = rows.next()? {
                        let id: i64 = r.get(0)?;
                        let ns: String = r.get(1)?;
                        let blob: Vec<u8> = r.get(2)?;
                        if let Some(v) = from_blob(&blob, dim) {
                            index.upsert(id, &ns, &v);
                        }
                    }
                }
                Ok((lock, index, newest))
            })
            .await?;
        let (lock, index, newest) = read.value;
        self.embedded_through = index.ids().iter().copied().max().unwrap_or(0);
        let svc = &self.shared.embed;
        svc.set_lock(lock);
        *svc.index.write().unwrap_or_else(|e| e.into_inner()) = index;
        self.last_generation = None;
        Ok(newest)
    }

    /// Drops index entries whose stored vector is gone (deleted or changed
    /// by another tool).
    async fn reconcile(&mut self) -> Result<(), StoreError> {
        let read = self
            .shared
            .store
            .readers
            .read(ReadKind::Internal, |conn| {
                let lock = read_lock(conn)?;
                let mut stmt = conn.prepare("SELECT memory_id FROM memory_vectors")?;
                let ids = stmt
                    .query_map([], |r| r.get::<_, i64>(0))?
                    .collect::<Result<HashSet<i64>, _>>()?;
                Ok((lock, ids))
            })
            .await?;
        let (lock, ids) = read.value;
        let svc = &self.shared.embed;
        svc.set_lock(lock);
        let mut index = svc.index.write().unwrap_or_else(|e| e.into_inner());
        let gone: Vec<i64> = index
            .ids()
            .iter()
            .copied()
            .filter(|id| !ids.contains(id))
            .collect();
        for id in gone {
            index.remove(id);
        }
        Ok(())
    }

    /// Embeds pending rows until none is left (or the lock forbids it).
    async fn catch_up(&mut self) -> Result<(), StoreError> {
        let generation = self.shared.store.generations.current();
        if self.last_generation == Some(generation) {
            return Ok(());
        }
        let shared = self.shared.clone();
        let svc = &shared.embed;
        if let LockCheck::Other(_) = rules::check_lock(
            svc.lock().as_ref(),
            self.embedder.model_id(),
            self.embedder.dim(),
        ) {
            // Refused until `memd reembed`; nothing to do meanwhile.
            self.last_generation = Some(generation);
            return Ok(());
        }
        let batch = svc.config.batch;
        loop {
            let skip: Vec<i64> = self.failed.iter().copied().collect();
            let limit = (batch + skip.len()) as i64;
            let read = self
                .shared
                .store
                .readers
                .read(ReadKind::Internal, move |conn| pending(conn, limit))
                .await?;
            let rows: Vec<Row> = read
                .value
                .into_iter()
                .filter(|(id, _, _)| !skip.contains(id))
                .take(batch)
                .collect();
            if rows.is_empty() {
                break;
            }
            {
                // Their old vectors (if any) are not current any more.
                let mut index = svc.index.write().unwrap_or_else(|e| e.into_inner());
                for (id, _, _) in &rows {
                    index.remove(*id);
                }
            }
            let vectors = self.embed(&rows).await?;
            let written = self.store(rows, vectors).await?;
            let live: Vec<_> = written
                .into_iter()
                .filter(|(id, _, _)| *id > self.backfill_through)
                .collect();
            if !live.is_empty() {
                self.neighbors(&live).await?;
            }
        }
        self.last_generation = Some(generation);
        Ok(())
    }

    /// Embeds rows on the blocking pool; a batch the provider refuses is
    /// retried one row at a time, and the rows it refuses alone are skipped.
    async fn embed(&mut self, rows: &[Row]) -> Result<Vec<Option<Vec<f32>>>, StoreError> {
        let e = self.embedder.clone();
        let texts: Vec<String> = rows.iter().map(|(_, _, t)| t.clone()).collect();
        let out: Result<Vec<Option<Vec<f32>>>, EmbedError> = tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            match e.embed(&refs) {
                Ok(v) => Ok(v.into_iter().map(Some).collect()),
                Err(EmbedError::Unreachable(m)) => Err(EmbedError::Unreachable(m)),
                Err(first) if refs.len() > 1 => {
                    tracing::debug!(error = %first, "batch refused; embedding its rows one by one");
                    Ok(refs
                        .iter()
                        .map(|t| e.embed(&[t]).ok().and_then(|mut v| v.pop()))
                        .collect())
                }
                Err(other) => Err(other),
            }
        })
        .await
        .map_err(|e| StoreError::Io(format!("the embedding task failed: {e}")))?;
        match out {
            Ok(v) => {
                for ((id, _, _), vec) in rows.iter().zip(&v) {
                    if vec.is_none() {
                        tracing::warn!(
                            id,
                            "the embedder refused this memory; it stays without a vector"
                        );
                        self.failed.insert(*id);
                    }
                }
                Ok(v)
            }
            Err(EmbedError::Unreachable(m)) => Err(StoreError::Io(m)),
            Err(e) if rows.len() == 1 => {
                tracing::warn!(id = rows[0].0, error = %e, "the embedder refused this memory");
                self.failed.insert(rows[0].0);
                Ok(vec![None])
            }
            Err(e) => Err(StoreError::Io(e.to_string())),
        }
    }

    /// Stores vectors whose rows still hold the embedded text; records the
    /// model lock with the first one. Returns what was stored.
    async fn store(
        &mut self,
        rows: Vec<Row>,
        vectors: Vec<Option<Vec<f32>>>,
    ) -> Result<Vec<(i64, String, Vec<f32>)>, StoreError> {
        let lock = ModelLock {
            model: self.embedder.model_id().to_string(),
            dim: self.embedder.dim(),
        };
        let items: Vec<(i64, String, String, Vec<f32>)> = rows
            .into_iter()
            .zip(vectors)
            .filter_map(|((id, ns, text), v)| v.map(|v| (id, ns, text, v)))
            .collect();
        let svc = &self.shared.embed;
        let job_lock = lock.clone();
        let result = self
            .shared
            .store
            .writer
            .call(Author::Daemon, move |ctx| {
                match rules::check_lock(
                    read_lock(ctx.conn)?.as_ref(),
                    &job_lock.model,
                    job_lock.dim,
                ) {
                    LockCheck::Free => write_lock(ctx.conn, &job_lock)?,
                    LockCheck::Same => {}
                    LockCheck::Other(stored) => {
                        return Err(StoreError::NotConfigured(rules::mismatch_message(
                            &stored,
                            &job_lock.model,
                            job_lock.dim,
                        )));
                    }
                }
                let mut stmt = ctx.conn.prepare_cached(
                    "INSERT OR REPLACE INTO memory_vectors (memory_id, vector) SELECT ?1, ?2 \
                     WHERE EXISTS (SELECT 1 FROM memories WHERE id = ?1 \
                     AND CAST(content AS TEXT) IS ?3 AND namespace IS ?4)",
                )?;
                let mut written = Vec::new();
                for (id, ns, text, v) in items {
                    if stmt.execute((id, to_blob(&v), &text, &ns))? > 0 {
                        written.push((id, ns, v));
                    }
                }
                Ok(written)
            })
            .await;
        match result {
            Ok(written) => {
                if let Some(max) = written.iter().map(|(id, _, _)| *id).max() {
                    self.embedded_through = self.embedded_through.max(max);
                }
                svc.set_lock(Some(lock));
                let mut index = svc.index.write().unwrap_or_else(|e| e.into_inner());
                if index.dim() != self.embedder.dim() {
                    *index = Index::new(self.embedder.dim());
                }
                for (id, ns, v) in &written {
                    index.upsert(*id, ns, v);
                }
                Ok(written)
            }
            Err(StoreError::NotConfigured(m)) => {
                // Another file (a restore) came with other vectors.
                self.reload().await?;
                Err(StoreError::NotConfigured(m))
            }
            Err(e) => Err(e),
        }
    }

    /// Semantic near duplicates and auto-supersession for rows embedded as
    /// they arrived (`written` is in id order, one batch).
    async fn neighbors(&mut self, written: &[(i64, String, Vec<f32>)]) -> Result<(), StoreError> {
        let svc = &self.shared.embed;
        let t = Thresholds {
            similar: svc.config.similar_threshold,
            auto_supersede: svc.config.auto_supersede,
            supersede: svc.config.supersede_threshold,
        };
        let floor = if t.auto_supersede {
            t.similar.min(t.supersede)
        } else {
            t.similar
        };
        for (id, ns, v) in written {
            let close: Vec<(i64, f32)> = {
                let index = svc.index.read().unwrap_or_else(|e| e.into_inner());
                index
                    .top(&Probe::new(v), Some(std::slice::from_ref(ns)), 64)
                    .into_iter()
                    .filter(|(_, c)| *c >= floor)
                    .filter(|(other, _)| other != id)
                    .collect()
            };
            if close.is_empty() {
                continue;
            }
            let id = *id;
            // The rest of the batch is judged after this row, and looks
            // back at it then.
            let later: Vec<i64> = written
                .iter()
                .map(|(w, _, _)| *w)
                .filter(|w| *w > id)
                .collect();
            let read = self
                .shared
                .store
                .readers
                .read(ReadKind::Internal, move |conn| {
                    neighbors_of(conn, id, &close)
                })
                .await?;
            let Some(me) = read.value else {
                continue;
            };
            let findings = rules::findings(
                Embedded {
                    id,
                    subject: me.subject.as_deref(),
                    metadata: &me.metadata,
                },
                &me.neighbors,
                &later,
                t,
            );
            for finding in findings {
                self.record(&me.namespace, finding).await?;
            }
        }
        Ok(())
    }

    /// Records a near duplicate (and supersedes the older row when asked)
    /// if both rows are still active, then tells subscribed sessions.
    async fn record(&self, namespace: &str, f: Finding) -> Result<(), StoreError> {
        let Finding {
            newer,
            older,
            cosine,
            supersede,
        } = f;
        let done = self
            .shared
            .store
            .writer
            .call(Author::Daemon, move |ctx| {
                let still = ctx
                    .conn
                    .prepare_cached(
                        "SELECT count(*) FROM memories WHERE id IN (?1, ?2) \
                         AND superseded_by IS NULL",
                    )?
                    .query_row((newer, older), |r| r.get::<_, i64>(0))?;
                if still != 2 {
                    return Ok(false);
                }
                ctx.conn
                    .prepare_cached(
                        "INSERT OR REPLACE INTO memory_similar (memory_id, similar_to, cosine) \
                         VALUES (?1, ?2, ?3)",
                    )?
                    .execute((newer, older, f64::from(cosine)))?;
                if supersede {
                    crate::store::memories::supersede(ctx.conn, older, newer)?;
                }
                Ok(true)
            })
            .await?;
        if done {
            tracing::info!(
                id = newer,
                similar_to = older,
                cosine,
                superseded = supersede,
                "semantic near duplicate"
            );
            let _ = self.shared.embed.similar.send(SimilarEvent {
                namespace: namespace.to_string(),
                id: newer,
                similar_to: older,
                cosine: f64::from(cosine),
                superseded: supersede,
            });
        }
        Ok(())
    }
}

/// Rows without a vector, oldest first.
fn pending(conn: &Connection, limit: i64) -> Result<Vec<Row>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT m.id, m.namespace, CAST(m.content AS TEXT) FROM memories m WHERE NOT EXISTS \
         (SELECT 1 FROM memory_vectors v WHERE v.memory_id = m.id) ORDER BY m.id LIMIT ?1",
    )?;
    let rows = stmt
        .query_map([limit], |r| {
            Ok((
                r.get(0)?,
                r.get::<_, Option<String>>(1)?.unwrap_or_default(),
                r.get::<_, Option<String>>(2)?.unwrap_or_default(),
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}

/// A freshly embedded row and its close neighbors.
struct Close {
    namespace: String,
    subject: Option<String>,
    metadata: String,
    /// The close rows that are active in its namespace, scope and owner,
    /// older and newer ones.
    neighbors: Vec<Neighbor>,
}

/// The row's namespace, subject and metadata (`None` when it is gone or
/// superseded), and which of the close rows are active in its namespace,
/// scope and owner.
fn neighbors_of(
    conn: &Connection,
    id: i64,
    close: &[(i64, f32)],
) -> Result<Option<Close>, StoreError> {
    let me: Option<(String, Option<String>, String)> = conn
        .prepare_cached(
            "SELECT namespace, subject, CAST(metadata AS TEXT) FROM memories \
             WHERE id = ?1 AND superseded_by IS NULL",
        )?
        .query_row([id], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get::<_, Option<String>>(2)?.unwrap_or_default(),
            ))
        })
        .optional()?;
    let Some((namespace, subject, metadata)) = me else {
        return Ok(None);
    };
    let marks = vec!["?"; close.len()].join(", ");
    let sql = format!(
        "SELECT o.id, o.subject, CAST(o.metadata AS TEXT) FROM memories n JOIN memories o \
         ON o.namespace = n.namespace AND o.scope = n.scope AND o.scope_owner IS n.scope_owner \
         WHERE n.id = ? AND o.id IN ({marks}) AND o.superseded_by IS NULL \
         AND o.status <> 'archived' AND (o.expires_at IS NULL OR o.expires_at > ?)"
    );
    let mut params: Vec<rusqlite::types::Value> = vec![id.into()];
    params.extend(close.iter().map(|(i, _)| rusqlite::types::Value::from(*i)));
    params.push(crate::clock::now().into());
    let mut stmt = conn.prepare(&sql)?;
    let rows = stmt
        .query_map(params_from_iter(params), |r| {
            Ok((
                r.get::<_, i64>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?.unwrap_or_default(),
            ))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    let neighbors = rows
        .into_iter()
        .filter_map(|(oid, subject, metadata)| {
            let cosine = close.iter().find(|(i, _)| *i == oid)?.1;
            Some(Neighbor {
                id: oid,
                cosine,
                subject,
                metadata,
            })
        })
        .collect();
    Ok(Some(Close {
        namespace,
        subject,
        metadata,
        neighbors,
    }))
}
