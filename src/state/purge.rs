//! What a purge leaves to the daemon once the store erased the rows (a
//! purge asked here, or one another machine made that the team pull
//! applied): frozen blocks that held one are dropped (named sessions' at
//! once, on disk too; a connection's at its next inject, through
//! [`Shared::purged`]), drift backups are rewritten without them, and both
//! database files are compacted with their WAL emptied.

use crate::store::StoreError;
use crate::store::ops::purge::Purged;
use crate::store::sessions::Record;
use crate::sync::lock;

use super::Shared;

/// What finishing a purge did.
#[derive(Debug, Clone, Default)]
pub struct Finished {
    /// Named sessions' frozen blocks dropped.
    pub blocks: u64,
    /// Drift backups rewritten.
    pub backups: u64,
    /// The database's WAL was emptied.
    pub scrubbed: bool,
    /// Copies made before a schema migration, left to their owner.
    pub not_rewritten: Vec<String>,
}

/// Finishes the purge `done` (see the module).
///
/// # Errors
/// A backup that cannot be rewritten, or SQLite errors of the scrub.
pub async fn finish(shared: &Shared, done: &Purged) -> Result<Finished, StoreError> {
    lock(&shared.purged).extend(done.ids.iter().copied());
    let ids = done.id_set();
    let mut blocks = 0u64;
    for named in shared.named.all() {
        if !named.drop_block_holding(&ids) {
            continue;
        }
        blocks += 1;
        if let Some((_, keeping)) = named.take_changes() {
            shared.session_file.put(Record::of(&named));
            drop(keeping);
        }
    }
    let backups = shared
        .backups
        .rewrite_without(done.uids.clone())
        .await
        .map_err(|e| {
            StoreError::Io(crate::store::Cause::context(
                "cannot rewrite the drift backups",
                e,
            ))
        })?;
    // Every connected session hears of it: one whose block held an erased
    // memory drops it there and then.
    let _ = shared.purge_told.send(memd_proto::PurgedEvent {
        ids: done.ids.clone(),
        block_dropped: false,
        generation: shared.store.generations.current(),
    });
    let scrubbed = shared.store.scrub().await?;
    shared.session_file.scrub().await?;
    Ok(Finished {
        blocks,
        backups,
        scrubbed,
        not_rewritten: copies_before_migrations(&shared.paths.data_dir),
    })
}

/// Copies of the database made before a schema migration
/// (`memory.db.v<N>.<time>.bak`): they may hold the text, and memd leaves
/// them to their owner.
fn copies_before_migrations(dir: &std::path::Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("memory.db.v") && n.ends_with(".bak"))
        .map(|n| dir.join(n).display().to_string())
        .collect();
    out.sort();
    out
}
