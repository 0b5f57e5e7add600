//! `confirm`, `prune` and task transitions: small writes on existing rows.

use memd_proto::{
    ConfirmRequest, Filter, MemoryReply, PruneRequest, PruneResult, Response, TaskRequest,
};
use time::OffsetDateTime;

use crate::drift::policy::WriteKind;
use crate::session::Session;
use crate::session::ident::Author;
use crate::state::Shared;
use crate::store::gate::task;
use crate::store::memories::{self, Changes};
use crate::store::{StoreError, gate};

/// `confirm`: `confirmed_count + 1`, `last_confirmed_at`. Not an edit: the
/// generation and `rev` do not move.
pub(super) async fn confirm(
    req: ConfirmRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let view = gate::view(&Filter::default(), &session.who, OffsetDateTime::now_utc())?;
    let id = req.id;
    let (memory, generation) = super::guarded(shared, session, WriteKind::Append, move |ctx, _| {
        memories::get_visible(ctx.conn, id, &view)?.ok_or(StoreError::NotFound(id))?;
        ctx.conn.execute(
            "UPDATE memories SET confirmed_count = confirmed_count + 1, last_confirmed_at = ?1 \
             WHERE id = ?2",
            (crate::clock::now(), id),
        )?;
        let m = memories::fetch(ctx.conn, id)?.ok_or(StoreError::NotFound(id))?;
        Ok((m, ctx.generation()?))
    })
    .await?;
    Ok(Response::Memory(Box::new(MemoryReply {
        memory,
        generation,
    })))
}

/// `prune`: deletes expired memories (already invisible to every read) of
/// the session's namespace, or of all with `all_namespaces`. A maintenance
/// write of the daemon: it counts as drift for nobody.
pub(super) async fn prune(
    req: PruneRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let namespace = (!req.all_namespaces).then(|| session.namespace().to_string());
    let dry_run = req.dry_run;
    let (ids, generation) = shared
        .store
        .writer
        .call(Author::Daemon, move |ctx| {
            let now = crate::clock::now();
            let mut stmt = ctx.conn.prepare_cached(
                "SELECT id FROM memories WHERE expires_at IS NOT NULL AND expires_at <= ?1 \
                 AND (?2 IS NULL OR namespace = ?2) ORDER BY id",
            )?;
            let ids = stmt
                .query_map((&now, &namespace), |r| r.get::<_, i64>(0))?
                .collect::<Result<Vec<_>, _>>()?;
            if !dry_run {
                for id in &ids {
                    memories::delete(ctx.conn, *id)?;
                }
            }
            Ok((ids, ctx.generation()?))
        })
        .await?;
    if !dry_run && !ids.is_empty() {
        tracing::info!(session = %session.id(), pruned = ids.len(), "pruned expired memories");
    }
    Ok(Response::Pruned(PruneResult {
        ids,
        dry_run,
        generation,
    }))
}

/// `task start|done|cancel`: checks the transition, sets the task's
/// `status`, keeps `surface = "startup"` only while the task is open.
pub(super) async fn task(
    req: TaskRequest,
    session: &mut Session,
    shared: &Shared,
) -> Result<Response, StoreError> {
    let view = gate::view(&Filter::default(), &session.who, OffsetDateTime::now_utc())?;
    let TaskRequest {
        id,
        status: to,
        expect_rev,
    } = req;
    let (memory, generation) =
        super::guarded(shared, session, WriteKind::Destructive, move |ctx, _| {
            let current =
                memories::get_visible(ctx.conn, id, &view)?.ok_or(StoreError::NotFound(id))?;
            if current.category != task::CATEGORY {
                return Err(StoreError::InvalidInput(format!(
                    "memory {id} is a {}, not a task",
                    current.category
                )));
            }
            ctx.check_row(id, expect_rev)?;
            let meta: serde_json::Value =
                serde_json::from_str(&current.metadata).unwrap_or_default();
            // A task command always moves: naming the status the task has
            // is refused too (`update` takes it as no change).
            let from = meta["status"].as_str().unwrap_or("pending");
            task::transition(from, &to).map_err(|message| StoreError::Conflict {
                message: format!("task {id}: {message}"),
                current_rev: Some(current.rev),
            })?;
            let mut keys = serde_json::Map::new();
            keys.insert("status".into(), to.into());
            let mut changes = Changes {
                metadata: Some(keys),
                ..Changes::default()
            };
            gate::task_changes(&current, &mut changes)?;
            memories::apply(ctx.conn, &current, &changes)?;
            let m = memories::fetch(ctx.conn, id)?.ok_or(StoreError::NotFound(id))?;
            Ok((m, ctx.generation()?))
        })
        .await?;
    Ok(Response::Memory(Box::new(MemoryReply {
        memory,
        generation,
    })))
}
