//! Reads by name. Each runs in one read transaction on a pooled read-only
//! connection, off the async workers, and comes back with the generation
//! of its snapshot ([`Read`]): the generation a session has seen when the
//! reply shows it.

use std::io::BufWriter;
use std::path::PathBuf;

use memd_proto::Memory;
use serde_json::Value;

use crate::gate::View;
use crate::session::snapshot::{Builder, Rendered};
use crate::store::health::Integrity;
use crate::store::readers::{Read, ReadKind};
use crate::store::search::vocab::Terms;
use crate::store::{
    Cause, Store, StoreError, chains, export, health, inject, lifecycle, memories, read_generation,
    vectors,
};

/// Who a memory block is for: the rows of a namespace visible to one
/// agent and one session.
#[derive(Debug, Clone)]
pub struct BlockFor {
    /// Namespace.
    pub namespace: String,
    /// Agent id (its agent-scope rows).
    pub agent: String,
    /// Session key (its session-scope rows).
    pub session: String,
}

/// What `status` reads from the database.
#[derive(Debug)]
pub struct StatusFacts {
    /// Rows per status.
    pub by_status: Vec<(String, i64)>,
    /// Rows per namespace, the largest first (at most 200 namespaces).
    pub by_namespace: Vec<(String, i64)>,
    /// The generation in the file.
    pub generation: u64,
    /// The database's identity.
    pub db_uuid: String,
    /// The most recent sweeps.
    pub sweeps: Vec<Value>,
    /// Rows with a vector, rows without (both 0 when not asked for).
    pub vectors: (i64, i64),
    /// Captured conversations (see `store::capture::summary`).
    pub capture: Value,
}

/// Which export document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportFormat {
    /// Every column, the drift backup's shape.
    Json,
    /// A readable page: the `top` memories per category.
    Markdown {
        /// Memories per category.
        top: u32,
    },
}

impl Store {
    /// Memory `id` when `view` shows it.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn get(&self, id: i64, view: View) -> Result<Read<Option<Memory>>, StoreError> {
        self.readers
            .read(ReadKind::Client, move |conn| {
                memories::get_visible(conn, id, &view)
            })
            .await
    }

    /// A page of the memories `view` shows, newest first.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn list(
        &self,
        view: View,
        limit: u32,
        offset: u32,
    ) -> Result<Read<Vec<Memory>>, StoreError> {
        self.readers
            .read(ReadKind::Client, move |conn| {
                memories::list(conn, &view, limit, offset)
            })
            .await
    }

    /// The supersession chain memory `id` belongs to, and its revisions.
    ///
    /// # Errors
    /// `NotFound` when `view` does not show it; SQLite errors.
    pub async fn history(&self, id: i64, view: View) -> Result<Read<chains::Chain>, StoreError> {
        self.readers
            .read(ReadKind::Client, move |conn| {
                match chains::walk(conn, id, &view) {
                    Err(StoreError::NotFound(id)) => {
                        Err(super::purge::purged(conn, id)?.unwrap_or(StoreError::NotFound(id)))
                    }
                    other => other,
                }
            })
            .await
    }

    /// Renders a memory block: the eligible rows offered to `builder` in
    /// priority order; with the number of eligible rows.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn block(
        &self,
        kind: ReadKind,
        who: BlockFor,
        builder: Builder,
    ) -> Result<Read<(Rendered, u32)>, StoreError> {
        self.readers
            .read(kind, move |conn| {
                let now = crate::clock::now();
                let who = inject::For {
                    namespace: &who.namespace,
                    agent: &who.agent,
                    session: &who.session,
                    now: &now,
                };
                inject::build(conn, &who, builder)
            })
            .await
    }

    /// A session's memory block: its namespace's rows within `budget`
    /// and the person's own (`personal`) within `personal_share` percent of
    /// it (see `store::inject::build_for`); with the number of eligible rows.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn session_block(
        &self,
        who: BlockFor,
        budget: usize,
        personal: Option<String>,
        personal_share: u32,
    ) -> Result<Read<(Rendered, u32)>, StoreError> {
        self.readers
            .read(ReadKind::Client, move |conn| {
                let now = crate::clock::now();
                let for_ = inject::For {
                    namespace: &who.namespace,
                    agent: &who.agent,
                    session: &who.session,
                    now: &now,
                };
                inject::build_for(conn, &for_, budget, personal.as_deref(), personal_share)
            })
            .await
    }

    /// Writes an export of `namespaces` (every namespace when `None`) into
    /// `out`, synced; returns the number of memories.
    ///
    /// # Errors
    /// SQLite and I/O errors.
    pub async fn export(
        &self,
        namespaces: Option<Vec<String>>,
        format: ExportFormat,
        out: std::fs::File,
    ) -> Result<Read<u64>, StoreError> {
        self.readers
            .read(ReadKind::Client, move |conn| {
                let mut w = BufWriter::new(out);
                let n = match format {
                    ExportFormat::Markdown { top } => {
                        export::write_markdown(conn, namespaces.as_deref(), top, &mut w)?
                    }
                    ExportFormat::Json => export::write_json(conn, namespaces.as_deref(), &mut w)?,
                };
                let file = w
                    .into_inner()
                    .map_err(|e| StoreError::Io(Cause::of(e.into_error())))?;
                file.sync_all()?;
                Ok(n)
            })
            .await
    }

    /// What `status` shows of the database; vectors are counted only when
    /// `count_vectors` (it reads every row).
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn status_facts(&self, count_vectors: bool) -> Result<StatusFacts, StoreError> {
        let read = self
            .readers
            .read(ReadKind::Internal, move |conn| {
                Ok(StatusFacts {
                    by_status: memories::count_by_status(conn)?,
                    by_namespace: memories::count_by_namespace(conn, 200)?,
                    db_uuid: health::db_uuid(conn)?,
                    sweeps: lifecycle::recent(conn, 5)?,
                    vectors: if count_vectors {
                        vectors::counts(conn)?
                    } else {
                        (0, 0)
                    },
                    generation: read_generation(conn)?,
                    capture: crate::store::capture::summary(conn)?,
                })
            })
            .await?;
        Ok(read.value)
    }

    /// SQLite's integrity check, the FTS index's sync and the schema's
    /// objects.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn integrity(&self) -> Result<Integrity, StoreError> {
        Ok(self
            .readers
            .read(ReadKind::Internal, health::integrity)
            .await?
            .value)
    }

    /// A consistent copy of the database at `target` (replaced), through
    /// the backup API in one step while writes go on; returns its
    /// generation.
    ///
    /// # Errors
    /// SQLite and I/O errors.
    pub async fn backup_to(&self, target: PathBuf) -> Result<u64, StoreError> {
        self.readers
            .with_connection(move |src| {
                match std::fs::remove_file(&target) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e.into()),
                }
                health::copy_to(src, &target)
            })
            .await
    }

    /// Every row (tags included), for a drift backup, with the generation
    /// read.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn all_rows(&self) -> Result<(Vec<Memory>, u64), StoreError> {
        let read = self
            .readers
            .read(ReadKind::Internal, memories::all_rows)
            .await?;
        Ok((read.value, read.generation))
    }

    /// The newest memory id (0 for none).
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn newest_id(&self) -> Result<i64, StoreError> {
        Ok(self
            .readers
            .read(ReadKind::Internal, vectors::newest_id)
            .await?
            .value)
    }

    /// The FTS vocabulary, for fuzzy search's in-memory term list.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn vocabulary(&self) -> Result<Terms, StoreError> {
        Ok(self
            .readers
            .read(ReadKind::Internal, crate::store::search::vocab::load)
            .await?
            .value)
    }
}
