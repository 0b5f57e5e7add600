//! `task start|done|cancel`: a task's transitions.

use memd_proto::{Filter, MemoryReply, Response, TaskRequest};
use time::OffsetDateTime;

use crate::drift::policy::WriteKind;
use crate::gate;
use crate::gate::Changes;
use crate::gate::task;
use crate::session::Session;
use crate::state::Shared;
use crate::store::StoreError;
use crate::store::memories::{self};

/// `task start|done|cancel`: checks the transition, sets the task's
/// `status`, keeps `surface = "startup"` only while the task is open.
pub(super) async fn handle(
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
        super::support::guarded(shared, session, WriteKind::Destructive, move |ctx, _| {
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
