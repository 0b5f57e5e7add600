//! `purge`: erase memories and every trace of their text this database
//! keeps, logged in `memory_purges` (uid, namespace, when, by whom; never
//! the text); [`Store::scrub`] then rewrites the file without free space
//! and empties the WAL. Frozen blocks, drift backups and the sessions file
//! are the daemon's (`state::purge`). docs/security.md states what a purge
//! promises.
//!
//! `memd purge` (`handler::purge`, this module): the store erases, in one
//! writer job under `secure_delete`, each memory's row (the delete triggers
//! drop its tags, FTS row, vectors, sketch, authors and re-index the thread
//! neighbours' context), every `memory_revisions` row of its uid (the delete
//! revision included), near-duplicate links, logs it in `memory_purges`, and
//! runs FTS5 `optimize` (a deleted term otherwise stays in older segments).
//! Each step is one statement over a temp table of the uids (`temp.purging`),
//! never a statement per memory: in one large transaction every statement pays
//! for the transaction's size, which made a per-memory loop quadratic.
//!
//! Then `state::purge::finish` drops frozen blocks holding a purged id (named
//! sessions' views at once and their record in `sessions.db`; connected
//! sessions' through `Shared::purge_told`, and, as a net under a lagging
//! channel, at their next inject through `Shared::purged`; each of these places
//! asks `View::drop_block_holding`, the rule's one home, through
//! `Session::drop_block_holding` or `Named::drop_block_holding`, which mark a
//! named session for its record), rewrites drift backups without those uids
//! (`Backups::rewrite_without`, a new file renamed over each), and scrubs both
//! files: `Writer::scrub` (a `Msg` of the writer thread: `VACUUM`, then
//! `wal_checkpoint(TRUNCATE)` retried while a reader holds the WAL) and
//! `SessionFile::scrub`.
//!
//! A memory of a shared namespace is erased in PostgreSQL first (`Team::purge`,
//! one transaction of `memd.purge(uid, machine)`: a `SECURITY DEFINER` function
//! that checks `admin` for `session_user`, deletes the row — the tombstone
//! trigger lets only the owner's delete of the uid named in `memd.purging`
//! through — and its revisions, and records the uid in `memd.purges` under the
//! transaction's number); PostgreSQL refusing or unreachable erases nothing.
//! The pull erases the uids purged in each page's range (`apply_purges`,
//! `Store::erase_pulled`), sends them on `Store::purge_events`, and
//! `jobs::team::purges` finishes them like a local purge
//! (`state::purge::finish`, shared with the handler: blocks, backups, scrub,
//! and `Shared::purge_told`, which each connection turns into a dropped block
//! and an `Event::Purged`). The history check takes a purged last row as held;
//! a resync erases purged uids instead of backing them up.

use memd_proto::PurgeTarget;
use rusqlite::{Connection, OptionalExtension};

use crate::session::ident::Author;
use crate::store::readers::ReadKind;
use crate::store::{Store, StoreError};

/// The shortest text `--matching` takes: a shorter one would match nearly
/// everything.
pub const MATCHING_MIN: usize = 3;

/// What a purge erased.
#[derive(Debug, Clone, Default)]
pub struct Purged {
    /// The live rows' ids that were deleted.
    pub ids: Vec<i64>,
    /// The uids erased.
    pub uids: Vec<String>,
}

impl Purged {
    /// The ids, as a set (what a frozen block is checked against).
    pub fn id_set(&self) -> std::collections::HashSet<i64> {
        self.ids.iter().copied().collect()
    }
}

impl Store {
    /// The memories a purge of `id`, or of the text `matching`, would erase:
    /// those of `namespace` only when one is given, of every namespace
    /// otherwise.
    ///
    /// # Errors
    /// `NotFound` for an unknown id (or one of another namespace than the
    /// one given), `InvalidInput` for neither or both, or a text shorter
    /// than [`MATCHING_MIN`].
    pub async fn purge_targets(
        &self,
        id: Option<i64>,
        matching: Option<String>,
        namespace: Option<String>,
    ) -> Result<Vec<PurgeTarget>, StoreError> {
        let needle = match (&id, matching) {
            (Some(_), None) => None,
            (None, Some(m)) if m.trim().chars().count() >= MATCHING_MIN => Some(m.to_lowercase()),
            (None, Some(_)) => {
                return Err(StoreError::InvalidInput(format!(
                    "--matching needs at least {MATCHING_MIN} characters"
                )));
            }
            _ => {
                return Err(StoreError::InvalidInput(
                    "purge takes one memory id or --matching TEXT".into(),
                ));
            }
        };
        let read = self
            .readers
            .read(ReadKind::Client, move |conn| match (id, &needle) {
                (Some(id), _) => {
                    let uid: Option<String> = conn
                        .query_row("SELECT uid FROM memories WHERE id = ?1", [id], |r| r.get(0))
                        .optional()?;
                    let uid = uid.ok_or(StoreError::NotFound(id))?;
                    Ok(vec![target(conn, &uid)?])
                }
                (None, Some(needle)) => matching_uids(conn, needle)?
                    .iter()
                    .map(|uid| target(conn, uid))
                    .collect(),
                (None, None) => Ok(Vec::new()),
            })
            .await?;
        let mut targets: Vec<PurgeTarget> = read.value;
        if let Some(ns) = namespace {
            targets.retain(|t| t.namespace == ns);
            if let (Some(id), true) = (id, targets.is_empty()) {
                return Err(StoreError::NotFound(id));
            }
        }
        Ok(targets)
    }

    /// Erases the memories `uids` (see the module). Those of a namespace
    /// shared with the team are erased in PostgreSQL first (needs the
    /// `admin` right there): when PostgreSQL refuses or cannot be reached,
    /// nothing is erased anywhere.
    ///
    /// # Errors
    /// `Forbidden`, `TeamUnavailable`; SQLite errors.
    pub async fn purge(
        &self,
        author: Author,
        by: String,
        uids: Vec<String>,
    ) -> Result<Purged, StoreError> {
        let wing = self.wing.clone();
        let asked = uids.clone();
        let places = self
            .readers
            .read(ReadKind::Internal, move |conn| {
                asked
                    .iter()
                    .map(|uid| place(conn, uid).map(|p| (uid.clone(), p)))
                    .collect::<Result<Vec<_>, _>>()
            })
            .await?
            .value;
        let shared: Vec<String> = places
            .into_iter()
            .filter(|(_, p)| p.as_ref().is_some_and(|(ns, scope)| wing.shares(ns, scope)))
            .map(|(uid, _)| uid)
            .collect();
        if !shared.is_empty() {
            wing.purge(&shared).await.map_err(|e| match e {
                crate::store::team::TeamError::Forbidden(m) => StoreError::Forbidden(m),
                other => StoreError::TeamUnavailable(other.to_string()),
            })?;
        }
        self.erase(author, by, uids).await
    }

    /// Erases `uids` here only: a purge already made in PostgreSQL (the
    /// team pull applies one another machine made). What was erased also
    /// goes to [`Store::purge_events`], for the daemon to finish.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn erase_pulled(&self, uids: Vec<String>) -> Result<Purged, StoreError> {
        let done = self
            .erase(
                Author::Team,
                "the team (a purge in PostgreSQL)".into(),
                uids,
            )
            .await?;
        if !done.uids.is_empty() {
            let _ = self.purge_events.send(done.clone());
        }
        Ok(done)
    }

    async fn erase(
        &self,
        author: Author,
        by: String,
        uids: Vec<String>,
    ) -> Result<Purged, StoreError> {
        let profiles = self.profiles.clone();
        self.writer
            .call(author, move |ctx| {
                // No profile of an erased text stays in memory.
                crate::sync::lock(&profiles).clear();
                let conn = ctx.conn;
                conn.pragma_update(None, "secure_delete", true)?;
                let erased = erase(conn, &uids, &by);
                conn.pragma_update(None, "secure_delete", false)?;
                erased
            })
            .await
    }

    /// Rewrites the database without free space and empties its WAL (see
    /// [`crate::store::Writer::scrub`]); whether the WAL was emptied.
    ///
    /// # Errors
    /// SQLite errors.
    pub async fn scrub(&self) -> Result<bool, StoreError> {
        self.writer.scrub().await
    }
}

/// The purge that erased memory `id`, as the error that says so; `None`
/// when it was never purged.
///
/// # Errors
/// SQLite errors.
pub fn purged(conn: &Connection, id: i64) -> Result<Option<StoreError>, StoreError> {
    Ok(conn
        .query_row(
            "SELECT purged_at, purged_by FROM memory_purges WHERE memory_id = ?1 \
             ORDER BY rowid DESC LIMIT 1",
            [id],
            |r| {
                Ok(StoreError::Purged {
                    id,
                    at: r.get(0)?,
                    by: r.get(1)?,
                })
            },
        )
        .optional()?)
}

/// Where memory `uid` lives (namespace, scope), from its row or its newest
/// revision; `None` when this database holds nothing of it.
fn place(conn: &Connection, uid: &str) -> Result<Option<(String, String)>, StoreError> {
    let row = conn
        .query_row(
            "SELECT namespace, scope FROM memories WHERE uid = ?1",
            [uid],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    if row.is_some() {
        return Ok(row);
    }
    Ok(conn
        .query_row(
            "SELECT namespace, scope FROM memory_revisions WHERE uid = ?1 \
             ORDER BY rev_id DESC LIMIT 1",
            [uid],
            |r| {
                Ok((
                    r.get::<_, Option<String>>(0)?,
                    r.get::<_, Option<String>>(1)?,
                ))
            },
        )
        .optional()?
        .and_then(|(ns, scope)| Some((ns?, scope.unwrap_or_else(|| "project".into())))))
}

fn erase(conn: &Connection, uids: &[String], by: &str) -> Result<Purged, StoreError> {
    // Set-based, a statement per step whatever the number of memories:
    // thousands of statements in one transaction each pay for the
    // transaction's size (a statement journal), which made a purge of
    // 20,000 rows quadratic. `temp.purging` holds what is erased: each uid
    // this database knows (as a row, or as a revision only), its row id
    // and namespace, in the order asked.
    conn.execute_batch(
        "CREATE TEMP TABLE IF NOT EXISTS purging (pos INTEGER PRIMARY KEY, \
             uid TEXT NOT NULL, id INTEGER, namespace TEXT NOT NULL, revisions INTEGER); \
         DELETE FROM temp.purging;",
    )?;
    let asked = serde_json::Value::from(uids.to_vec()).to_string();
    conn.execute(
        "INSERT INTO temp.purging (pos, uid, id, namespace) \
         SELECT p.key, p.value, m.id, coalesce(m.namespace, \
             (SELECT r.namespace FROM memory_revisions r WHERE r.uid = p.value \
              ORDER BY r.rev_id DESC LIMIT 1)) \
         FROM json_each(?1) p LEFT JOIN memories m ON m.uid = p.value \
         WHERE coalesce(m.namespace, (SELECT r.namespace FROM memory_revisions r \
             WHERE r.uid = p.value ORDER BY r.rev_id DESC LIMIT 1)) IS NOT NULL",
        [&asked],
    )?;
    // The rows (their tags, index entries, vectors, sketches, authors and
    // sources go by trigger, which also writes each one's delete revision
    // and re-indexes its thread neighbours), their near-duplicate links.
    conn.execute(
        "DELETE FROM memories WHERE id IN (SELECT id FROM temp.purging WHERE id IS NOT NULL)",
        [],
    )?;
    conn.execute(
        "DELETE FROM memory_similar WHERE memory_id IN (SELECT id FROM temp.purging) \
             OR similar_to IN (SELECT id FROM temp.purging)",
        [],
    )?;
    // Every version, the one the delete just wrote included, counted then
    // deleted by uid and by row id apart, each through its index (schema
    // v21) rather than reading the whole history.
    conn.execute(
        "UPDATE temp.purging SET revisions = \
             (SELECT count(*) FROM memory_revisions r WHERE r.uid = purging.uid) \
             + (SELECT count(*) FROM memory_revisions r WHERE purging.id IS NOT NULL \
                AND r.memory_id = purging.id AND (r.uid IS NULL OR r.uid <> purging.uid))",
        [],
    )?;
    conn.execute(
        "DELETE FROM memory_revisions WHERE uid IN (SELECT uid FROM temp.purging)",
        [],
    )?;
    conn.execute(
        "DELETE FROM memory_revisions WHERE memory_id IN \
             (SELECT id FROM temp.purging WHERE id IS NOT NULL)",
        [],
    )?;
    conn.execute(
        "INSERT INTO memory_purges (uid, namespace, memory_id, revisions, purged_by) \
         SELECT uid, namespace, id, revisions, ?1 FROM temp.purging ORDER BY pos",
        [by],
    )?;
    let mut out = Purged::default();
    {
        let mut stmt = conn.prepare("SELECT uid, id FROM temp.purging ORDER BY pos")?;
        let rows = stmt.query_map([], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, Option<i64>>(1)?))
        })?;
        for row in rows {
            let (uid, id) = row?;
            out.uids.push(uid);
            out.ids.extend(id);
        }
    }
    conn.execute("DELETE FROM temp.purging", [])?;
    if out.uids.is_empty() {
        return Ok(out);
    }
    // A deleted entry leaves its terms in older index segments until they
    // merge: merged now, every segment rewritten.
    conn.execute(
        "INSERT INTO memories_fts (memories_fts) VALUES ('optimize')",
        [],
    )?;
    Ok(out)
}

/// The uids whose row or any revision holds `needle` (lower case) in its
/// text, subject, metadata or tags.
fn matching_uids(conn: &Connection, needle: &str) -> Result<Vec<String>, StoreError> {
    let mut stmt = conn.prepare(
        "SELECT uid FROM memories m WHERE instr(lower(m.content), ?1) > 0 \
             OR instr(lower(coalesce(m.subject, '')), ?1) > 0 \
             OR instr(lower(m.metadata), ?1) > 0 \
             OR EXISTS (SELECT 1 FROM memory_tags t WHERE t.memory_id = m.id \
                        AND instr(lower(t.tag), ?1) > 0) \
         UNION \
         SELECT uid FROM memory_revisions r WHERE r.uid IS NOT NULL AND ( \
             instr(lower(coalesce(r.content, '')), ?1) > 0 \
             OR instr(lower(coalesce(r.subject, '')), ?1) > 0 \
             OR instr(lower(coalesce(r.metadata, '')), ?1) > 0 \
             OR instr(lower(coalesce(r.tags, '')), ?1) > 0) \
         ORDER BY 1",
    )?;
    let uids = stmt
        .query_map([needle], |r| r.get(0))?
        .collect::<Result<Vec<String>, _>>()?;
    Ok(uids)
}

/// One memory as a purge lists it.
fn target(conn: &Connection, uid: &str) -> Result<PurgeTarget, StoreError> {
    let live: Option<(i64, String, String)> = conn
        .query_row(
            "SELECT id, namespace, content FROM memories WHERE uid = ?1",
            [uid],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let revisions: i64 = conn.query_row(
        "SELECT count(*) FROM memory_revisions WHERE uid = ?1",
        [uid],
        |r| r.get(0),
    )?;
    let (id, namespace, text) = match live {
        Some((id, ns, text)) => (Some(id), ns, text),
        None => {
            let (ns, text): (Option<String>, Option<String>) = conn
                .query_row(
                    "SELECT namespace, content FROM memory_revisions WHERE uid = ?1 \
                     ORDER BY rev_id DESC LIMIT 1",
                    [uid],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()?
                .unwrap_or_default();
            (None, ns.unwrap_or_default(), text.unwrap_or_default())
        }
    };
    // Secrets out before the cut: the preview of a leaked token must not
    // show all but its last characters.
    let preview = crate::gate::secrets::shorten(&text, 61);
    Ok(PurgeTarget {
        id,
        uid: uid.to_string(),
        namespace,
        preview,
        revisions: u64::try_from(revisions).unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(conn: &Connection, sql: &str) -> i64 {
        conn.query_row(sql, [], |r| r.get(0)).unwrap()
    }

    #[test]
    fn erase_takes_rows_revisions_and_index_entries_of_the_uids_alone() {
        let dir = tempfile::tempdir().unwrap();
        let mut conn = Connection::open(dir.path().join("m.db")).unwrap();
        crate::store::schema::migrate(&mut conn, dir.path()).unwrap();
        // A thread of four turns; the second and third hold the secret.
        for (pos, text) in [
            "first turn about lunch",
            "the vault pin is qxsecret",
            "again qxsecret here",
            "last turn about dinner",
        ]
        .iter()
        .enumerate()
        {
            conn.execute(
                "INSERT INTO memories (uid, content, thread, thread_pos) VALUES (?1, ?2, 't', ?3)",
                rusqlite::params![format!("u{pos}"), text, pos as i64],
            )
            .unwrap();
        }
        conn.execute(
            "UPDATE memories SET content = content || ' v2' WHERE uid = 'u1'",
            [],
        )
        .unwrap();
        let before = count(
            &conn,
            "SELECT count(*) FROM memory_revisions WHERE uid = 'u1'",
        );
        assert!(before >= 1, "an update writes a revision");

        let asked = ["u1".to_string(), "u2".into(), "nobody".into()];
        let out = erase(&conn, &asked, "a test").unwrap();
        assert_eq!(out.uids, ["u1", "u2"], "the unknown uid is skipped");
        assert_eq!(out.ids.len(), 2);
        assert_eq!(count(&conn, "SELECT count(*) FROM memories"), 2);
        assert_eq!(
            count(
                &conn,
                "SELECT count(*) FROM memory_revisions WHERE uid IN ('u1', 'u2')"
            ),
            0
        );
        assert_eq!(
            count(
                &conn,
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'qxsecret'"
            ),
            0,
            "neither the rows nor their neighbours' context hold it"
        );
        assert_eq!(
            count(
                &conn,
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'lunch'"
            ),
            2,
            "the first turn, and the last through its context, its neighbour now"
        );
        // Logged: u1's revisions are its update's and its delete's.
        let logged: Vec<(String, i64)> = conn
            .prepare("SELECT uid, revisions FROM memory_purges ORDER BY uid")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(logged, [("u1".into(), before + 1), ("u2".into(), 1)]);
        // Nothing left behind for the next purge.
        assert_eq!(count(&conn, "SELECT count(*) FROM temp.purging"), 0);
        let again = erase(&conn, &asked, "a test").unwrap();
        assert!(again.uids.is_empty(), "{:?}", again.uids);
    }
}
