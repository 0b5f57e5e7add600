//! Writes that take rows out of the active set: `forget` (a delete, of
//! one row or of a thread's or a source's rows), `supersede` (a link), and
//! `prune` (expired rows, a maintenance write of the daemon).

use super::Written;
use crate::gate::View;
use crate::session::ident::Author;
use crate::store::writer::Sharing;
use crate::store::{Guard, Store, StoreError, chains, memories};

impl Store {
    /// Deletes memory `id` (visible in `view`) for a session.
    ///
    /// # Errors
    /// `NotFound`, `Conflict` (an `expect_rev` mismatch), `Drift`.
    pub async fn forget(
        &self,
        guard: Guard,
        id: i64,
        expect_rev: Option<i64>,
        view: View,
    ) -> Result<Written<()>, StoreError> {
        self.guarded(guard, Sharing::Proposable, move |ctx, _| {
            let current =
                memories::get_visible(ctx.conn, id, &view)?.ok_or(StoreError::NotFound(id))?;
            ctx.check_row(current.id, expect_rev)?;
            memories::delete(ctx.conn, id)?;
            Ok(())
        })
        .await
    }

    /// Deletes every memory visible in `view` (its namespace, its source
    /// filter) of `thread` when one is given, for a session: each row as
    /// `forget` deletes one, under the same drift guard (one refused row
    /// and nothing is deleted). With `dry_run`, only names them. Returns
    /// the ids, by id.
    ///
    /// # Errors
    /// `Drift`; SQLite errors.
    pub async fn forget_where(
        &self,
        guard: Guard,
        view: View,
        thread: Option<String>,
        dry_run: bool,
    ) -> Result<Written<Vec<i64>>, StoreError> {
        self.guarded(guard, Sharing::Proposable, move |ctx, _| {
            let ids = memories::ids_where(ctx.conn, &view, thread.as_deref())?;
            if !dry_run {
                for id in &ids {
                    ctx.check_row(*id, None)?;
                    memories::delete(ctx.conn, *id)?;
                }
            }
            Ok(ids)
        })
        .await
    }

    /// Marks memory `old` as superseded by `new` (both visible in `view`,
    /// superseded and archived rows included).
    ///
    /// # Errors
    /// `NotFound`; `Conflict` when `old` is superseded already, `new` is
    /// itself superseded, or the link would close a cycle; `Drift`.
    pub async fn supersede(
        &self,
        guard: Guard,
        old: i64,
        new: i64,
        view: View,
    ) -> Result<Written<()>, StoreError> {
        if old == new {
            return Err(StoreError::InvalidInput(
                "a memory cannot supersede itself".into(),
            ));
        }
        self.guarded(guard, Sharing::Plain, move |ctx, _| {
            let o =
                memories::get_visible(ctx.conn, old, &view)?.ok_or(StoreError::NotFound(old))?;
            let n =
                memories::get_visible(ctx.conn, new, &view)?.ok_or(StoreError::NotFound(new))?;
            // Both rows are the request's: the one replaced, and the one it
            // points to instead.
            ctx.check_row(old, None)?;
            ctx.check_row(new, None)?;
            if let Some(by) = o.superseded_by {
                return Err(StoreError::Conflict {
                    message: format!("memory {old} is already superseded by {by}"),
                    current_rev: Some(o.rev),
                });
            }
            if let Some(by) = n.superseded_by {
                return Err(StoreError::Conflict {
                    message: format!(
                        "memory {new} is itself superseded by {by}; supersede with the active one"
                    ),
                    current_rev: Some(n.rev),
                });
            }
            if chains::forward_chain(ctx.conn, new)?.contains(&old) {
                return Err(StoreError::Conflict {
                    message: format!(
                        "memory {old} supersedes {new} already: that would be a cycle"
                    ),
                    current_rev: Some(o.rev),
                });
            }
            memories::supersede(ctx.conn, old, new)?;
            Ok(())
        })
        .await
    }

    /// Deletes the expired memories (already invisible to every read) of
    /// `namespace`, or of every namespace; with `dry_run`, only names them.
    /// A maintenance write of the daemon: it counts as drift for nobody.
    /// Shared rows are not among them (see [`Store::prune_shared`]).
    /// Returns the ids and the generation after.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn prune(
        &self,
        namespace: Option<String>,
        dry_run: bool,
    ) -> Result<(Vec<i64>, u64), StoreError> {
        self.writer
            .call(Author::Daemon, move |ctx| {
                let now = crate::clock::now();
                let ids = memories::expired_ids(ctx.conn, &now, namespace.as_deref(), false)?;
                if !dry_run {
                    for id in &ids {
                        memories::delete(ctx.conn, *id)?;
                    }
                }
                Ok((ids, ctx.generation()?))
            })
            .await
    }

    /// Deletes the expired shared memories (team memory) of `namespace`, or
    /// of every shared namespace, through the team's PostgreSQL like any
    /// delete, for the session `guard` names (its drift guard does not
    /// apply: they are invisible to every read). Returns the ids.
    ///
    /// # Errors
    /// `TeamUnavailable`, SQLite errors.
    pub async fn prune_shared(
        &self,
        guard: Guard,
        namespace: Option<String>,
        dry_run: bool,
    ) -> Result<Vec<i64>, StoreError> {
        if !self.wing.is_on() {
            return Ok(Vec::new());
        }
        let guard = Guard {
            policy: memd_proto::DriftPolicy::Off,
            ..guard
        };
        let written = self
            .guarded(guard, Sharing::Plain, move |ctx, _| {
                let now = crate::clock::now();
                let ids = memories::expired_ids(ctx.conn, &now, namespace.as_deref(), true)?;
                if !dry_run {
                    for id in &ids {
                        ctx.check_row(*id, None)?;
                        memories::delete(ctx.conn, *id)?;
                    }
                }
                Ok(ids)
            })
            .await?;
        Ok(written.value)
    }
}
