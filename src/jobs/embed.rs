//! The embedding worker: a background task that gives every memory a
//! current vector.
//!
//! Adds return without waiting for it. It wakes when the generation moves
//! (a session's write, or an external one the drift watcher found) or when
//! asked (`reembed`), reads the rows without a vector — the pending rows,
//! recomputed from the database each time, so a crash loses no work —
//! embeds them in batches on the blocking pool, and stores the vectors as
//! the daemon's own commits (never drift for anyone). A vector is stored
//! only if the row still has the text that was embedded. On a machine in a
//! team it starts after the initial pull (or its first failure): the pull
//! has the CPU to itself.
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

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use memd_proto::{DriftEvent, SimilarEvent};

use crate::embed::rules::{self, Embedded, Finding, LockCheck, ModelLock, Thresholds};
use crate::embed::service::State;
use crate::embed::vectors::{Index, Probe};
use crate::embed::{EmbedError, Embedder, Provider, build};
use crate::state::Shared;
use crate::store::ops::vectors::Loaded;
use crate::store::vectors::{Pending as Row, Threaded};
use crate::store::{Cause, StoreError};
use crate::sync;

/// How often the worker looks at the generation while idle.
const POLL: Duration = Duration::from_millis(100);

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
    // A machine joining a team pulls its rows before it serves: the
    // model's load and the vectors of rows arriving by the thousand would
    // take most of the CPU from that pull. They wait for it (or for its
    // first failure).
    shared.store.wing().first_attempt().await;
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
            () = tokio::time::sleep(POLL) => {}
            () = svc.wake.notified() => { worker.last_generation = None; }
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

impl Worker {
    /// Reads the lock and every stored vector into a new index; returns the
    /// newest row id.
    async fn reload(&mut self) -> Result<i64, StoreError> {
        let dim = self.embedder.dim();
        let Loaded {
            lock,
            index,
            newest,
        } = self.shared.store.load_vectors(dim).await?;
        self.embedded_through = index.ids().iter().copied().max().unwrap_or(0);
        let svc = &self.shared.embed;
        svc.set_lock(lock);
        *sync::write(&svc.index) = index;
        self.last_generation = None;
        Ok(newest)
    }

    /// Drops index entries whose stored vector is gone (deleted or changed
    /// by another tool), and moves those whose row another tool put
    /// elsewhere in a thread.
    async fn reconcile(&mut self) -> Result<(), StoreError> {
        let (lock, ids) = self.shared.store.vector_ids().await?;
        let svc = &self.shared.embed;
        svc.set_lock(lock);
        let mut index = sync::write(&svc.index);
        let gone: Vec<i64> = index
            .ids()
            .iter()
            .copied()
            .filter(|id| !ids.contains_key(id))
            .collect();
        for id in gone {
            index.remove(id);
        }
        for (id, threaded) in &ids {
            let place = threaded.as_ref().map(Threaded::place);
            if !index.is_placed(*id, place) {
                index.set_place(*id, place);
            }
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
            let rows: Vec<Row> = self
                .shared
                .store
                .pending_vectors(limit)
                .await?
                .into_iter()
                .filter(|r| !skip.contains(&r.id))
                .take(batch)
                .collect();
            if rows.is_empty() {
                break;
            }
            {
                // Their old vectors (if any) are not current any more.
                let mut index = sync::write(&svc.index);
                for r in &rows {
                    index.remove(r.id);
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
        let texts: Vec<String> = rows.iter().map(|r| r.text.clone()).collect();
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
        .map_err(|e| StoreError::Io(Cause::context("the embedding task failed", e)))?;
        match out {
            Ok(v) => {
                for (r, vec) in rows.iter().zip(&v) {
                    if vec.is_none() {
                        tracing::warn!(
                            id = r.id,
                            "the embedder refused this memory; it stays without a vector"
                        );
                        self.failed.insert(r.id);
                    }
                }
                Ok(v)
            }
            Err(EmbedError::Unreachable(m)) => Err(StoreError::Io(Cause::msg(m))),
            Err(e) if rows.len() == 1 => {
                tracing::warn!(id = rows[0].id, error = %e, "the embedder refused this memory");
                self.failed.insert(rows[0].id);
                Ok(vec![None])
            }
            Err(e) => Err(StoreError::Io(Cause::of(e))),
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
        // Where each row sits in its thread, for the index.
        let places: HashMap<i64, Threaded> = rows
            .iter()
            .filter_map(|r| Some((r.id, r.thread.clone()?)))
            .collect();
        let items: Vec<(i64, String, String, Vec<f32>)> = rows
            .into_iter()
            .zip(vectors)
            .filter_map(|(r, v)| v.map(|v| (r.id, r.namespace, r.text, v)))
            .collect();
        let svc = &self.shared.embed;
        let result = self.shared.store.store_vectors(lock.clone(), items).await;
        match result {
            Ok(written) => {
                if let Some(max) = written.iter().map(|(id, _, _)| *id).max() {
                    self.embedded_through = self.embedded_through.max(max);
                }
                svc.set_lock(Some(lock));
                let mut index = sync::write(&svc.index);
                if index.dim() != self.embedder.dim() {
                    *index = Index::new(self.embedder.dim());
                }
                for (id, ns, v) in &written {
                    index.upsert(*id, ns, v, places.get(id).map(Threaded::place));
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
                let index = sync::read(&svc.index);
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
            let Some(me) = self.shared.store.neighbors(id, close).await? else {
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
            .record_similar(newer, older, cosine, supersede)
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
