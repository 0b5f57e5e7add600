//! Lifecycle sweeps: access decay, tier moves, expiry, session rows, scope
//! limits (the rules are in [`rules`]).
//!
//! A sweep is a series of small write jobs of the daemon's own (at most
//! `[lifecycle] chunk` rows each, 250 by default), so a client request never
//! waits behind it for more than one chunk. Being the daemon's writes, they
//! never count as drift for anyone and never invalidate a session's memory
//! block. How the generation moves: decay changes only `access_score`,
//! which is not an edit (no generation move); tier changes, archiving and
//! promotion change meaningful columns and move the generation (as the
//! daemon's own commits); expired rows are deleted (generation moves).
//! Each sweep is logged in `memory_sweeps` (shown by `status`).

pub mod rules;

use std::collections::HashSet;

use rusqlite::Connection;
use serde_json::{Value, json};
use time::OffsetDateTime;

use super::capture::Retention;
use super::search::rank::age_days;
use super::{Store, StoreError, memories};
use crate::session::ident::Author;
use crate::store::kinds::{local_row, not_captured, not_history};
use memd_proto::SweepCounts as Counts;
use rules::{Facts, LifecycleConfig, Move};

/// Sweeps kept in the log (`memory_sweeps`).
const SWEEP_LOG_KEPT: i64 = 1_000;

/// Pages of the search index one merge step writes (FTS5's `merge`
/// command): about 400 KiB; at 38K long memories a step took p50 9.5 ms,
/// p95 20 ms of the writer's time (500 pages: p50 44 ms).
const MERGE_PAGES: i64 = 100;

/// Records that a session which wrote session-scope memories ended (its
/// rows are archived `[lifecycle] session_rows_days` later). A failure is
/// logged: the sweep then goes by the rows' own times.
pub async fn record_session_end(store: &Store, session: &str) {
    let (session, now) = (session.to_string(), crate::clock::now());
    let done = store
        .writer
        .call(Author::Daemon, move |ctx| {
            ctx.conn.execute(
                "INSERT OR REPLACE INTO memory_session_ends (session, ended_at) VALUES (?1, ?2)",
                (&session, &now),
            )?;
            Ok(())
        })
        .await;
    if let Err(e) = done {
        tracing::debug!(error = %e, "could not record a session's end");
    }
}

/// Why a sweep runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// The daemon's schedule.
    Schedule,
    /// At daemon start.
    Start,
    /// `memd sweep`.
    Manual,
}

impl Trigger {
    fn as_str(self) -> &'static str {
        match self {
            Trigger::Schedule => "schedule",
            Trigger::Start => "start",
            Trigger::Manual => "manual",
        }
    }
}

/// One chunk's progress: the last id seen and whether more rows follow.
struct Step {
    last: i64,
    more: bool,
}

/// Ids a query selects, read on a reader connection: a selection that scans
/// the table never holds the writer (a client's write would wait behind it).
async fn select_ids(
    store: &Store,
    sql: &'static str,
    params: Vec<rusqlite::types::Value>,
) -> Result<Vec<i64>, StoreError> {
    Ok(store
        .readers
        .read(super::readers::ReadKind::Internal, move |c| {
            let mut stmt = c.prepare_cached(sql)?;
            let ids = stmt
                .query_map(rusqlite::params_from_iter(params), |r| r.get::<_, i64>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            Ok(ids)
        })
        .await?
        .value)
}

/// Runs `sql` (an UPDATE whose `?1` is the row id, and whose own WHERE
/// checks again what the selection found: a row may have changed since)
/// for `ids`, `chunk` rows per writer job; returns how many rows changed
/// (with `dry_run`, how many would be tried, and nothing is written).
async fn update_ids(
    store: &Store,
    ids: &[i64],
    chunk: i64,
    dry_run: bool,
    sql: &'static str,
    params: Vec<rusqlite::types::Value>,
) -> Result<u64, StoreError> {
    if dry_run {
        return Ok(ids.len() as u64);
    }
    let mut changed = 0u64;
    for part in ids.chunks(chunk.max(1) as usize) {
        let (part, params) = (part.to_vec(), params.clone());
        changed += store
            .writer
            .call(Author::Daemon, move |ctx| {
                let mut stmt = ctx.conn.prepare_cached(sql)?;
                let mut n = 0u64;
                for id in &part {
                    let mut all = vec![rusqlite::types::Value::Integer(*id)];
                    all.extend(params.iter().cloned());
                    n += stmt.execute(rusqlite::params_from_iter(all))? as u64;
                }
                Ok(n)
            })
            .await?;
    }
    Ok(changed)
}

/// Runs a sweep (or, with `dry_run`, counts what it would do).
///
/// # Errors
/// A write failed; what was done before stays done (each chunk commits).
pub async fn sweep(
    store: &Store,
    config: &LifecycleConfig,
    capture: Retention,
    live_sessions: HashSet<String>,
    trigger: Trigger,
    dry_run: bool,
    now: OffsetDateTime,
) -> Result<memd_proto::SweepReport, StoreError> {
    let started = crate::clock::format(now);
    // At most 250 rows per transaction, whatever the config says: a client
    // request never waits behind more than one small chunk.
    let chunk = config.rows_per_transaction() as i64;
    let (trigger_name, start) = (trigger.as_str(), started.clone());
    let log_id: Option<i64> = if dry_run {
        None
    } else {
        Some(
            store
                .writer
                .call(Author::Daemon, move |ctx| {
                    ctx.conn.execute(
                        "INSERT INTO memory_sweeps (started_at, trigger) VALUES (?1, ?2)",
                        (&start, trigger_name),
                    )?;
                    Ok(ctx.conn.last_insert_rowid())
                })
                .await?,
        )
    };
    let result = run_steps(store, config, capture, live_sessions, dry_run, now, chunk).await;
    let ended = crate::clock::now();
    if let Some(id) = log_id {
        let (counts, error) = match &result {
            Ok(c) => (*c, None),
            Err(e) => (Counts::default(), Some(e.to_string())),
        };
        let ended2 = ended.clone();
        store
            .writer
            .call(Author::Daemon, move |ctx| {
                ctx.conn.execute(
                    "UPDATE memory_sweeps SET ended_at = ?1, decayed = ?2, demoted = ?3, \
                     archived = ?4, promoted = ?5, limited = ?6, expired = ?7, sessions = ?8, \
                     error = ?9 WHERE id = ?10",
                    rusqlite::params![
                        ended2,
                        counts.decayed as i64,
                        counts.demoted as i64,
                        counts.archived as i64,
                        counts.promoted as i64,
                        counts.limited as i64,
                        counts.expired as i64,
                        counts.sessions as i64,
                        error,
                        id
                    ],
                )?;
                Ok(())
            })
            .await?;
    }
    let counts = result?;
    tracing::info!(trigger = trigger.as_str(), dry_run, counts = ?counts, "sweep done");
    Ok(memd_proto::SweepReport {
        trigger: trigger.as_str().to_string(),
        dry_run,
        started_at: started,
        ended_at: ended,
        counts,
    })
}

/// The steps of one sweep, in order; each returns what it counted.
async fn run_steps(
    store: &Store,
    config: &LifecycleConfig,
    capture: Retention,
    live_sessions: HashSet<String>,
    dry_run: bool,
    now: OffsetDateTime,
    chunk: i64,
) -> Result<Counts, StoreError> {
    let run = Run {
        store,
        config,
        dry_run,
        now,
        chunk,
    };
    // Step 0: near-duplicate sketches of rows other tools wrote.
    if !dry_run {
        backfill_sketches(store, chunk).await?;
    }
    let decayed = run.decay().await?;
    let expired = run.expire().await?;
    let moved = run.move_tiers().await?;
    let sessions = run.archive_ended_sessions(live_sessions).await?;
    let limited = run.limit_scopes().await?;
    let captured = run.retire_captures(capture).await?;
    // Step 6: the search index merged into one b-tree.
    if !dry_run {
        let pages = search_index_pages(store).await?;
        let steps = merge_search_index(store, pages).await?;
        tracing::debug!(steps, "search index merged");
    }
    Ok(Counts {
        decayed,
        expired: expired + captured,
        sessions,
        limited,
        ..moved
    })
}

/// What every step of one sweep works with.
struct Run<'a> {
    store: &'a Store,
    config: &'a LifecycleConfig,
    dry_run: bool,
    now: OffsetDateTime,
    /// Rows per writer job.
    chunk: i64,
}

impl Run<'_> {
    /// Step 1: access decay, by the time since the previous sweep; returns the
    /// rows decayed.
    async fn decay(&self) -> Result<u64, StoreError> {
        let mut decayed = 0;
        let last = self
            .store
            .readers
            .read(super::readers::ReadKind::Internal, |c| {
                super::meta::text(c, "last_decay_at")
            })
            .await?
            .value;
        let days = last.as_deref().map_or(0.0, |l| age_days(l, self.now));
        // Under an hour since the last decay: skip it (and keep its time, so the
        // decay accumulates instead of being rounded away).
        let decay_now = last.is_none() || days >= 1.0 / 24.0;
        let factor = if decay_now {
            self.config.decay_factor(days)
        } else {
            1.0
        };
        let evergreen =
            serde_json::to_string(&self.config.evergreen).unwrap_or_else(|_| "[]".into());
        if factor < 1.0 {
            let ids = select_ids(
                self.store,
                "SELECT id FROM memories WHERE access_score > 0 AND pinned = 0 \
                 AND category NOT IN (SELECT value FROM json_each(?1)) ORDER BY id",
                vec![evergreen.clone().into()],
            )
            .await?;
            decayed = update_ids(
                self.store,
                &ids,
                self.chunk,
                self.dry_run,
                "UPDATE memories SET access_score = access_score * ?2 WHERE id = ?1 \
                 AND access_score > 0 AND pinned = 0 \
                 AND category NOT IN (SELECT value FROM json_each(?3))",
                vec![factor.into(), evergreen.into()],
            )
            .await?;
        }
        if !self.dry_run && decay_now {
            let n = crate::clock::format(self.now);
            self.store
                .writer
                .call(Author::Daemon, move |ctx| {
                    super::meta::set(ctx.conn, "last_decay_at", &n)
                })
                .await?;
        }
        Ok(decayed)
    }

    /// Step 2: expired rows deleted (not shared ones: `prune` sends those through
    /// the team's PostgreSQL); returns how many (with `dry_run`, how many
    /// would be).
    async fn expire(&self) -> Result<u64, StoreError> {
        let (store, dry_run, now, chunk) = (self.store, self.dry_run, self.now, self.chunk);
        let now_text = crate::clock::format(now);
        if dry_run {
            let n = now_text;
            return Ok(store
                .readers
                .read(super::readers::ReadKind::Internal, move |c| {
                    Ok(c.query_row(
                        concat!("SELECT count(*) FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ?1 \
                         AND ", local_row!()),
                        [&n],
                        |r| r.get::<_, i64>(0),
                    )? as u64)
                })
                .await?
                .value);
        }
        let mut expired = 0;
        loop {
            let n = now_text.clone();
            let deleted: u64 = store
                .writer
                .call(Author::Daemon, move |ctx| {
                    let mut stmt = ctx.conn.prepare_cached(concat!(
                        "SELECT id FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ?1 \
                         AND ",
                        local_row!(),
                        " ORDER BY id LIMIT ?2"
                    ))?;
                    let ids = stmt
                        .query_map((&n, chunk), |r| r.get::<_, i64>(0))?
                        .collect::<Result<Vec<_>, _>>()?;
                    for id in &ids {
                        memories::delete(ctx.conn, *id)?;
                    }
                    Ok(ids.len() as u64)
                })
                .await?;
            expired += deleted;
            if (deleted as i64) < chunk {
                break;
            }
        }
        Ok(expired)
    }

    /// Step 3: tier moves and promotions; returns the rows demoted, archived and
    /// promoted.
    async fn move_tiers(&self) -> Result<Counts, StoreError> {
        let (dry_run, now, chunk) = (self.dry_run, self.now, self.chunk);
        let mut counts = Counts::default();
        let mut at = 0i64;
        loop {
            let cfg = self.config.clone();
            let step: (Step, Counts) = self
                .store
                .writer
                .call(Author::Daemon, move |ctx| {
                    let mut stmt = ctx.conn.prepare_cached(concat!(
                        "SELECT id, category, tier, status, pinned, access_score, updated_at, \
                         confidence, use_count FROM memories \
                         WHERE id > ?1 AND status <> 'archived' AND superseded_by IS NULL \
                         AND ",
                        local_row!(),
                        " AND ",
                        not_history!(),
                        " ORDER BY id LIMIT ?2"
                    ))?;
                    let rows = stmt
                        .query_map((at, chunk), |r| {
                            let updated: String = r.get(6)?;
                            Ok((
                                r.get::<_, i64>(0)?,
                                Facts {
                                    category: r.get(1)?,
                                    tier: r.get(2)?,
                                    status: r.get(3)?,
                                    pinned: r.get::<_, i64>(4)? != 0,
                                    access_score: r.get(5)?,
                                    idle_days: age_days(&updated, now),
                                    confidence: r.get(7)?,
                                    use_count: r.get(8)?,
                                },
                            ))
                        })?
                        .collect::<Result<Vec<_>, _>>()?;
                    let mut c = Counts::default();
                    for (id, f) in &rows {
                        let sql = match cfg.tier_move(f) {
                            Move::Stay => continue,
                            Move::Demote(t) => {
                                c.demoted += 1;
                                format!("UPDATE memories SET tier = {t} WHERE id = ?1")
                            }
                            Move::Archive => {
                                c.archived += 1;
                                "UPDATE memories SET status = 'archived' WHERE id = ?1".to_string()
                            }
                            Move::Promote => {
                                c.promoted += 1;
                                "UPDATE memories SET status = 'promoted' WHERE id = ?1".to_string()
                            }
                        };
                        if !dry_run {
                            ctx.conn.prepare_cached(&sql)?.execute([id])?;
                        }
                    }
                    Ok((
                        Step {
                            last: rows.last().map_or(at, |r| r.0),
                            more: rows.len() as i64 == chunk,
                        },
                        c,
                    ))
                })
                .await?;
            counts.demoted += step.1.demoted;
            counts.archived += step.1.archived;
            counts.promoted += step.1.promoted;
            at = step.0.last;
            if !step.0.more {
                break;
            }
        }
        Ok(counts)
    }

    /// Step 4: session-scope rows of sessions that ended long ago, archived:
    /// when the session's end was recorded, by that time; otherwise (the
    /// daemon was killed, or another tool wrote the rows) by the newest
    /// creation or use of any of its rows (not their `updated_at`, which
    /// sweeps move too). Returns how many.
    async fn archive_ended_sessions(
        &self,
        live_sessions: HashSet<String>,
    ) -> Result<u64, StoreError> {
        let cutoff = crate::clock::format(
            self.now
                - time::Duration::seconds_f64(self.config.session_rows_days.max(0.0) * 86_400.0),
        );
        let live = serde_json::to_string(&live_sessions.into_iter().collect::<Vec<_>>())
            .unwrap_or_else(|_| "[]".into());
        let ids = select_ids(
            self.store,
            "SELECT id FROM memories m WHERE scope = 'session' AND status <> 'archived' \
             AND scope_owner NOT IN (SELECT value FROM json_each(?2)) \
             AND coalesce( \
                 (SELECT ended_at FROM memory_session_ends WHERE session = m.scope_owner), \
                 (SELECT max(max(created_at), coalesce(max(last_used_at), '')) FROM memories o \
                  WHERE o.namespace = m.namespace AND o.scope = 'session' \
                  AND o.scope_owner = m.scope_owner)) < ?1 \
             ORDER BY id",
            vec![cutoff.clone().into(), live.clone().into()],
        )
        .await?;
        let sessions = update_ids(
            self.store,
            &ids,
            self.chunk,
            self.dry_run,
            "UPDATE memories SET status = 'archived' WHERE id = ?1 AND scope = 'session' \
             AND status <> 'archived' AND scope_owner NOT IN (SELECT value FROM json_each(?2))",
            vec![live.into()],
        )
        .await?;

        // Ends of sessions none of whose rows are left to archive, and the
        // oldest entries of the sweep log, are dropped.
        if !self.dry_run {
            self.store
                .writer
                .call(Author::Daemon, move |ctx| {
                    ctx.conn.execute(
                        "DELETE FROM memory_session_ends WHERE ended_at < ?1 AND session NOT IN \
                         (SELECT scope_owner FROM memories WHERE scope = 'session' \
                          AND status <> 'archived' AND scope_owner IS NOT NULL)",
                        [&cutoff],
                    )?;
                    ctx.conn.execute(
                        "DELETE FROM memory_sweeps WHERE id <= (SELECT max(id) FROM memory_sweeps) - ?1",
                        [SWEEP_LOG_KEPT],
                    )?;
                    Ok(())
                })
                .await?;
        }
        Ok(sessions)
    }

    /// Step 5b: captured turns past their retention — older than
    /// `keep_days`, then the oldest of a namespace whose captured text is
    /// over `max_bytes` — deleted (memories someone kept from them are rows
    /// of their own, never captured); returns how many.
    async fn retire_captures(&self, keep: Retention) -> Result<u64, StoreError> {
        if self.dry_run {
            return Ok(0);
        }
        // keep_days 0: kept until the size cap.
        let cutoff = (keep.keep_days > 0).then(|| {
            crate::clock::format(self.now - time::Duration::days(i64::from(keep.keep_days)))
        });
        let chunk = self.chunk;
        let mut total = 0;
        loop {
            let cutoff = cutoff.clone();
            let n = self
                .store
                .writer
                .call(Author::Daemon, move |ctx| {
                    crate::store::capture::retire(
                        ctx.conn,
                        cutoff.as_deref(),
                        keep.max_bytes,
                        chunk,
                    )
                })
                .await?;
            total += n;
            if (n as i64) < chunk {
                break;
            }
        }
        Ok(total)
    }

    /// Step 5: scope limits: the rows over a scope's limit with the lowest
    /// retention, archived; returns how many were chosen.
    async fn limit_scopes(&self) -> Result<u64, StoreError> {
        let limits = self.config.limits.clone();
        let over = self
            .store
            .readers
            .read(super::readers::ReadKind::Internal, move |c| {
                let mut stmt = c.prepare(concat!(
                    "SELECT namespace, scope, scope_owner, count(*) FROM memories \
                     WHERE status <> 'archived' AND superseded_by IS NULL AND ",
                    local_row!(),
                    " \
                     AND ",
                    not_history!(),
                    " GROUP BY namespace, scope, scope_owner"
                ))?;
                let groups = stmt
                    .query_map([], |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, Option<String>>(2)?,
                            r.get::<_, i64>(3)?,
                        ))
                    })?
                    .collect::<Result<Vec<_>, _>>()?;
                let mut archive = Vec::new();
                for (ns, scope, owner, n) in groups {
                    let limit = limits.of(&scope);
                    if (n as usize) <= limit {
                        continue;
                    }
                    let mut rows = c.prepare_cached(concat!(
                        "SELECT id, access_score, importance, confirmed_count, tier, pinned \
                         FROM memories WHERE namespace = ?1 AND scope = ?2 AND scope_owner IS ?3 \
                         AND status <> 'archived' AND superseded_by IS NULL AND ",
                        local_row!(),
                        " \
                         AND ",
                        not_history!()
                    ))?;
                    let scored = rows
                        .query_map((&ns, &scope, &owner), |r| {
                            Ok((
                                r.get::<_, i64>(0)?,
                                rules::retention(
                                    r.get(1)?,
                                    &r.get::<_, String>(2)?,
                                    r.get(3)?,
                                    r.get(4)?,
                                ),
                                r.get::<_, i64>(5)? != 0,
                            ))
                        })?
                        .collect::<Result<Vec<_>, _>>()?;
                    archive.extend(rules::over_limit(&scored, limit));
                }
                Ok(archive)
            })
            .await?
            .value;
        // A row pinned since it was chosen stays.
        update_ids(
            self.store,
            &over,
            self.chunk,
            self.dry_run,
            concat!(
                "UPDATE memories SET status = 'archived' WHERE id = ?1 AND pinned = 0 \
             AND ",
                local_row!()
            ),
            Vec::new(),
        )
        .await?;

        Ok(over.len() as u64)
    }
}

/// The search index's size in pages (rows of FTS5's data table).
///
/// # Errors
/// SQLite errors.
pub async fn search_index_pages(store: &Store) -> Result<i64, StoreError> {
    Ok(store
        .readers
        .read(super::readers::ReadKind::Internal, |c| {
            Ok(c.query_row("SELECT count(*) FROM memories_fts_data", [], |r| r.get(0))?)
        })
        .await?
        .value)
}

/// Merges the FTS index's segments into one, [`MERGE_PAGES`] at a time, one
/// write transaction per step (a client's write waits behind one step at
/// most). Each write adds a small segment and FTS5 merges them only a few
/// at a time, so a busy index holds several; a search walks the query's
/// words in each (at 38K long memories, nine segments made searches 6.6%
/// slower than one). It writes at most about as many pages as the index
/// held when it began: writes that come in meanwhile add segments, and
/// merging those too would not end while clients keep adding (at 10K
/// memories, a sweep with a client adding all along took 74 s instead of
/// 1.1 s). Returns the steps that did work: 0 when the index was one
/// segment already. The daemon's own writes: no generation move.
///
/// `pages` is the index's size as [`search_index_pages`] read it just
/// before.
///
/// # Errors
/// SQLite errors.
pub async fn merge_search_index(store: &Store, pages: i64) -> Result<usize, StoreError> {
    let most = usize::try_from(pages / MERGE_PAGES + 2).unwrap_or(usize::MAX);
    let mut steps = 0;
    while steps < most {
        let worked = store
            .writer
            .call(Author::Daemon, |ctx| {
                // A negative page count merges whenever there are two
                // segments or more; FTS5 says a step did work when it
                // changed at least two rows besides the command's own.
                let before = ctx.conn.total_changes();
                ctx.conn.execute(
                    "INSERT INTO memories_fts (memories_fts, rank) VALUES ('merge', ?1)",
                    [-MERGE_PAGES],
                )?;
                Ok(ctx.conn.total_changes() - before >= 2)
            })
            .await?;
        if !worked {
            break;
        }
        steps += 1;
    }
    Ok(steps)
}

/// Sketches every row that has no near-duplicate sketch and computes every
/// missing dedup key (captured turns have neither: they are never merged),
/// in chunks of the daemon's own writes (not edits: no
/// generation move). Returns how many rows got either.
///
/// # Errors
/// SQLite errors.
pub async fn backfill_sketches(store: &Store, chunk: i64) -> Result<usize, StoreError> {
    // Found on a reader (a scan of the table), written by id on the writer
    // from the content it reads then: never a scan on the writer.
    let mut ids = select_ids(
        store,
        concat!(
            "SELECT id FROM memories WHERE dedupe_key IS NULL AND ",
            not_captured!(),
            " UNION \
         SELECT m.id FROM memories m WHERE ",
            not_captured!("m"),
            " AND NOT EXISTS \
         (SELECT 1 FROM memory_sketch s WHERE s.memory_id = m.id)"
        ),
        Vec::new(),
    )
    .await?;
    ids.sort_unstable();
    let mut total = 0;
    for part in ids.chunks(chunk.max(1) as usize) {
        let part = part.to_vec();
        total += store
            .writer
            .call(Author::Daemon, move |ctx| {
                memories::backfill(ctx.conn, &part)
            })
            .await?;
    }
    Ok(total)
}

/// The most recent sweeps, newest first, for `status`.
///
/// # Errors
/// SQLite errors.
pub fn recent(conn: &Connection, n: u32) -> Result<Vec<Value>, StoreError> {
    let mut stmt = conn.prepare_cached(
        "SELECT started_at, ended_at, trigger, decayed, demoted, archived, promoted, limited, \
         expired, sessions, error FROM memory_sweeps ORDER BY id DESC LIMIT ?1",
    )?;
    let rows = stmt
        .query_map([n], |r| {
            Ok(json!({
                "started_at": r.get::<_, String>(0)?,
                "ended_at": r.get::<_, Option<String>>(1)?,
                "trigger": r.get::<_, String>(2)?,
                "counts": {
                    "decayed": r.get::<_, i64>(3)?,
                    "demoted": r.get::<_, i64>(4)?,
                    "archived": r.get::<_, i64>(5)?,
                    "promoted": r.get::<_, i64>(6)?,
                    "limited": r.get::<_, i64>(7)?,
                    "expired": r.get::<_, i64>(8)?,
                    "sessions": r.get::<_, i64>(9)?,
                },
                "error": r.get::<_, Option<String>>(10)?,
            }))
        })?
        .collect::<Result<Vec<_>, _>>()?;
    Ok(rows)
}
