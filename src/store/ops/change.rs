//! Changes of one row for a session: `update`, a task move, `confirm`.
//! Each reads the row inside the write transaction, applies the row rule
//! (or the request's `expect_rev`), then writes.

use memd_proto::Memory;

use super::Written;
use crate::gate::{self, Changes, View, task};
use crate::store::writer::Sharing;
use crate::store::{Guard, Store, StoreError, memories};

impl Store {
    /// Applies the gate's `changes` to memory `id` (visible in `view`),
    /// after the task rules that need the row itself; returns the row as
    /// it is after the change.
    ///
    /// # Errors
    /// `NotFound`, `Conflict` (an `expect_rev` mismatch), `Drift`, the
    /// gate's refusal of a task change, SQLite errors.
    pub async fn update(
        &self,
        guard: Guard,
        id: i64,
        expect_rev: Option<i64>,
        changes: Changes,
        view: View,
    ) -> Result<Written<Memory>, StoreError> {
        self.guarded(guard, Sharing::Proposable, move |ctx, _| {
            let current =
                memories::get_visible(ctx.conn, id, &view)?.ok_or(StoreError::NotFound(id))?;
            ctx.check_row(id, expect_rev)?;
            // The task rules need the row: its category and status.
            let mut changes = changes.clone();
            gate::task_changes(&current, &mut changes)?;
            memories::apply(ctx.conn, &current, &changes)?;
            memories::fetch(ctx.conn, id)?.ok_or(StoreError::NotFound(id))
        })
        .await
    }

    /// Moves task `id` to status `to` (`task start|done|cancel`): the
    /// transition is checked by `gate::task`; naming the status the task
    /// has is refused too.
    ///
    /// # Errors
    /// `NotFound`, `InvalidInput` (not a task), `Conflict` (a transition
    /// the rules refuse, or an `expect_rev` mismatch), `Drift`.
    pub async fn move_task(
        &self,
        guard: Guard,
        id: i64,
        to: String,
        expect_rev: Option<i64>,
        view: View,
    ) -> Result<Written<Memory>, StoreError> {
        self.guarded(guard, Sharing::Plain, move |ctx, _| {
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
            let from = meta["status"].as_str().unwrap_or("pending");
            task::transition(from, &to).map_err(|message| StoreError::Conflict {
                message: format!("task {id}: {message}"),
                current_rev: Some(current.rev),
            })?;
            let mut keys = serde_json::Map::new();
            keys.insert("status".into(), to.clone().into());
            let mut changes = Changes {
                metadata: Some(keys),
                ..Changes::default()
            };
            gate::task_changes(&current, &mut changes)?;
            memories::apply(ctx.conn, &current, &changes)?;
            memories::fetch(ctx.conn, id)?.ok_or(StoreError::NotFound(id))
        })
        .await
    }

    /// `confirmed_count + 1`, `last_confirmed_at = now`: not an edit (the
    /// generation and `rev` do not move).
    ///
    /// # Errors
    /// `NotFound`, SQLite errors.
    pub async fn confirm(
        &self,
        guard: Guard,
        id: i64,
        view: View,
    ) -> Result<Written<Memory>, StoreError> {
        self.guarded(guard, Sharing::Plain, move |ctx, _| {
            memories::get_visible(ctx.conn, id, &view)?.ok_or(StoreError::NotFound(id))?;
            memories::confirm(ctx.conn, id, &crate::clock::now())?;
            memories::fetch(ctx.conn, id)?.ok_or(StoreError::NotFound(id))
        })
        .await
    }
}
