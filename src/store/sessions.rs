//! Named sessions on disk: `<data_dir>/sessions.db`, a SQLite file of its
//! own (the memories' file stays what external tools see), so a daemon
//! restarted for any reason — an upgrade, a crash, a reboot — serves every
//! named session's frozen block byte for byte, with its seen generation,
//! read set, agent and last use.
//!
//! One thread owns the file's connection. A change is sent to it (the
//! latest state of one session, or its removal); it writes what is queued
//! in one transaction, so a record is there whole or not at all, also
//! after a `kill -9` in the middle of a write. [`SessionFile::sync`] waits
//! until everything sent before it is on disk: a newly built block and the
//! end of a session wait for it, other changes (a read, a connection) do
//! not. Each record keeps the block's hash; one whose bytes no longer
//! match it is not served (its session builds a new block).

use std::path::Path;
use std::sync::Mutex;
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use memd_proto::{DriftPolicy, InjectStats, Injection};
use rusqlite::{Connection, params};
use tokio::sync::oneshot;

use super::error::{Cause, StoreError};
use crate::session::View;
use crate::session::ident::Who;
use crate::session::named::Named;
use crate::session::readset::ReadSet;
use crate::session::snapshot;
use crate::sync::lock;

/// The file's format version (`PRAGMA user_version`).
const VERSION: i64 = 2;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS named_sessions (
    namespace      TEXT NOT NULL,
    name           TEXT NOT NULL,
    agent          TEXT NOT NULL,
    policy         TEXT NOT NULL,
    budget         INTEGER NOT NULL,
    hold_block     INTEGER NOT NULL,
    seen           INTEGER NOT NULL,
    block          BLOB,
    block_hash     TEXT,
    block_built_at INTEGER,
    block_included INTEGER,
    block_eligible INTEGER,
    block_chars    INTEGER,
    block_budget   INTEGER,
    block_rows     BLOB,
    block_time     TEXT,
    read_floor     INTEGER NOT NULL,
    read_evicted   INTEGER NOT NULL,
    reads          BLOB NOT NULL,
    created_ms     INTEGER NOT NULL,
    last_used_ms   INTEGER NOT NULL,
    PRIMARY KEY (namespace, name)
) WITHOUT ROWID;
";

/// One named session as kept on disk.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// The agent of the connection that created it.
    pub agent: String,
    /// Its drift policy.
    pub policy: DriftPolicy,
    /// Its inject budget.
    pub budget: u32,
    /// Its block changes only at compaction, clear or refresh.
    pub hold_block: bool,
    /// Its seen generation.
    pub seen: u64,
    /// Its frozen block, once built.
    pub block: Option<Injection>,
    /// What the block holds and when it was built.
    pub built: Option<crate::session::Built>,
    /// The read set's floor.
    pub read_floor: u64,
    /// Whether the read set ever evicted a row.
    pub read_evicted: bool,
    /// The read set's rows: (id, rev, read generation).
    pub reads: Vec<(i64, i64, u64)>,
    /// When it was created.
    pub created: SystemTime,
    /// When a connection last opened or closed.
    pub last_used: SystemTime,
}

impl Record {
    /// The state of `named` now.
    pub fn of(named: &Named) -> Record {
        let (seen, block, built) = {
            let view = lock(&named.view);
            (view.seen, view.snapshot.clone(), view.built.clone())
        };
        let (read_floor, read_evicted, reads) = lock(&named.reads).export();
        Record {
            namespace: named.who.namespace.clone(),
            name: named.who.session.clone(),
            agent: named.who.agent.clone(),
            policy: named.policy,
            budget: named.budget,
            hold_block: named.hold_block,
            seen,
            block,
            built,
            read_floor,
            read_evicted,
            reads,
            created: named.created,
            last_used: named.last_used(),
        }
    }

    /// The named session it keeps, its read set holding at most
    /// `read_set_rows` rows.
    pub fn into_named(self, read_set_rows: usize) -> Named {
        let built = self.block.as_ref().and(self.built);
        let view = View {
            seen: self.seen,
            snapshot: self.block,
            built,
        };
        let reads = ReadSet::restore(
            self.read_floor,
            self.read_evicted,
            read_set_rows,
            self.reads,
        );
        Named::new(
            Who {
                namespace: self.namespace,
                agent: self.agent,
                session: self.name,
                reach: crate::session::ident::Reach::default(),
            },
            self.policy,
            self.budget,
            self.hold_block,
            view,
            reads,
        )
        .restored(self.created, self.last_used)
    }
}

fn millis(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn from_millis(ms: i64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// The read set's rows as bytes: 24 per row (id, rev, generation; little
/// endian).
fn pack(rows: &[(i64, i64, u64)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(rows.len() * 24);
    for (id, rev, at) in rows {
        out.extend_from_slice(&id.to_le_bytes());
        out.extend_from_slice(&rev.to_le_bytes());
        out.extend_from_slice(&at.to_le_bytes());
    }
    out
}

fn unpack(bytes: &[u8]) -> Option<Vec<(i64, i64, u64)>> {
    if !bytes.len().is_multiple_of(24) {
        return None;
    }
    let word = |b: &[u8]| <[u8; 8]>::try_from(b).ok();
    bytes
        .chunks_exact(24)
        .map(|c| {
            Some((
                i64::from_le_bytes(word(&c[..8])?),
                i64::from_le_bytes(word(&c[8..16])?),
                u64::from_le_bytes(word(&c[16..])?),
            ))
        })
        .collect()
}

fn sqlite(what: &str, e: rusqlite::Error) -> StoreError {
    StoreError::Sqlite(Cause::context(what, e))
}

/// Opens (creating) the file: WAL, `synchronous = FULL`, the table.
///
/// # Errors
/// The file cannot be opened, is not a database, or was written by a newer
/// memd.
fn open_file(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open(path).map_err(|e| sqlite("cannot open the sessions file", e))?;
    conn.busy_timeout(Duration::from_secs(5))
        .map_err(|e| sqlite("cannot set the busy timeout", e))?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(|e| sqlite("cannot read the sessions file", e))?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(|e| sqlite("cannot set synchronous", e))?;
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .map_err(|e| sqlite("cannot read the sessions file's version", e))?;
    if version > VERSION {
        return Err(StoreError::InvalidInput(format!(
            "{} was written by a newer memd (format {version}; this one knows {VERSION})",
            path.display()
        )));
    }
    if version == 1 {
        // Format 2 keeps what each block holds and when it was built.
        conn.execute_batch(
            "BEGIN; ALTER TABLE named_sessions ADD COLUMN block_rows BLOB; \
             ALTER TABLE named_sessions ADD COLUMN block_time TEXT; COMMIT;",
        )
        .map_err(|e| sqlite("cannot upgrade the sessions file", e))?;
    }
    conn.execute_batch(SCHEMA)
        .map_err(|e| sqlite("cannot create the sessions table", e))?;
    conn.pragma_update(None, "user_version", VERSION)
        .map_err(|e| sqlite("cannot set the sessions file's version", e))?;
    Ok(conn)
}

/// Every record in the file. A row that cannot be read, or whose block no
/// longer matches its hash, comes back without what is wrong (and is
/// logged): the session then builds a new block.
fn load(conn: &Connection) -> Result<Vec<Record>, StoreError> {
    let mut stmt = conn
        .prepare(
            "SELECT namespace, name, agent, policy, budget, hold_block, seen, block, \
             block_hash, block_built_at, block_included, block_eligible, block_chars, \
             block_budget, read_floor, read_evicted, reads, created_ms, last_used_ms, \
             block_rows, block_time \
             FROM named_sessions ORDER BY namespace, name",
        )
        .map_err(|e| sqlite("cannot read the sessions file", e))?;
    let rows = stmt
        .query_map([], |r| {
            let name: String = r.get(1)?;
            let block: Option<Vec<u8>> = r.get(7)?;
            let hash: Option<String> = r.get(8)?;
            let block = match (block, hash) {
                (Some(bytes), Some(hash)) => match String::from_utf8(bytes) {
                    Ok(text) if snapshot::hash(&text) == hash => Some(Injection {
                        block: text,
                        hash,
                        built_at_generation: r.get::<_, i64>(9)?.try_into().unwrap_or(0),
                        stats: InjectStats {
                            included: r.get(10)?,
                            eligible: r.get(11)?,
                            chars: r.get(12)?,
                            budget: r.get(13)?,
                            cached: true,
                        },
                    }),
                    _ => {
                        tracing::warn!(session = %name, "a kept block does not match its hash; the session builds a new one");
                        None
                    }
                },
                _ => None,
            };
            let reads: Vec<u8> = r.get(16)?;
            let reads = unpack(&reads).unwrap_or_else(|| {
                tracing::warn!(session = %name, "a kept read set cannot be read; the session starts a new one");
                Vec::new()
            });
            let built = match (r.get::<_, Option<Vec<u8>>>(19)?, r.get::<_, Option<String>>(20)?) {
                (Some(rows), Some(at)) => unpack(&rows).map(|rows| crate::session::Built {
                    rows: rows.into_iter().map(|(id, rev, _)| (id, rev)).collect(),
                    at,
                }),
                _ => None,
            };
            Ok(Record {
                namespace: r.get(0)?,
                built,
                name,
                agent: r.get(2)?,
                policy: DriftPolicy::parse(&r.get::<_, String>(3)?)
                    .unwrap_or(DriftPolicy::Standard),
                budget: r.get(4)?,
                hold_block: r.get(5)?,
                seen: r.get::<_, i64>(6)?.try_into().unwrap_or(0),
                block,
                read_floor: r.get::<_, i64>(14)?.try_into().unwrap_or(0),
                read_evicted: r.get(15)?,
                reads,
                created: from_millis(r.get(17)?),
                last_used: from_millis(r.get(18)?),
            })
        })
        .map_err(|e| sqlite("cannot read the sessions file", e))?;
    rows.collect::<Result<_, _>>()
        .map_err(|e| sqlite("cannot read the sessions file", e))
}

fn put(conn: &Connection, r: &Record) -> rusqlite::Result<()> {
    let b = r.block.as_ref();
    let gen_i64 = |g: u64| i64::try_from(g).unwrap_or(i64::MAX);
    conn.prepare_cached(
        "INSERT OR REPLACE INTO named_sessions (namespace, name, agent, policy, budget, \
         hold_block, seen, block, block_hash, block_built_at, block_included, block_eligible, \
         block_chars, block_budget, read_floor, read_evicted, reads, created_ms, last_used_ms, \
         block_rows, block_time) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
         ?18, ?19, ?20, ?21)",
    )?
    .execute(params![
        r.namespace,
        r.name,
        r.agent,
        r.policy.as_str(),
        r.budget,
        r.hold_block,
        gen_i64(r.seen),
        b.map(|b| b.block.as_bytes()),
        b.map(|b| b.hash.as_str()),
        b.map(|b| gen_i64(b.built_at_generation)),
        b.map(|b| b.stats.included),
        b.map(|b| b.stats.eligible),
        b.map(|b| b.stats.chars),
        b.map(|b| b.stats.budget),
        gen_i64(r.read_floor),
        r.read_evicted,
        pack(&r.reads),
        millis(r.created),
        millis(r.last_used),
        r.built.as_ref().map(|b| pack(
            &b.rows
                .iter()
                .map(|(id, rev)| (*id, *rev, 0))
                .collect::<Vec<_>>()
        )),
        r.built.as_ref().map(|b| b.at.as_str()),
    ])?;
    Ok(())
}

fn delete(conn: &Connection, namespace: &str, name: &str) -> rusqlite::Result<()> {
    conn.prepare_cached("DELETE FROM named_sessions WHERE namespace = ?1 AND name = ?2")?
        .execute(params![namespace, name])?;
    Ok(())
}

/// What the thread is sent.
enum Msg {
    /// Keep this state of a session.
    Put(Box<Record>),
    /// A session ended.
    Delete(String, String),
    /// Answer once everything sent before is on disk.
    Sync(oneshot::Sender<Result<(), StoreError>>),
    /// As `Sync`, then rewrite the file without free space and empty its
    /// WAL (a purge: no byte of a dropped block stays).
    Scrub(oneshot::Sender<Result<(), StoreError>>),
}

/// The thread's loop: everything queued, in order, in one transaction.
fn run(mut conn: Connection, rx: &mpsc::Receiver<Msg>) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        batch.extend(rx.try_iter());
        let result = (|| {
            let tx = conn.transaction()?;
            for m in &batch {
                match m {
                    Msg::Put(r) => put(&tx, r)?,
                    Msg::Delete(ns, name) => delete(&tx, ns, name)?,
                    Msg::Sync(_) | Msg::Scrub(_) => {}
                }
            }
            tx.commit()
        })()
        .map_err(|e| sqlite("cannot write the sessions file", e));
        if let Err(e) = &result {
            tracing::error!(error = %e, "named sessions were not kept on disk");
        }
        let scrubbed = if batch.iter().any(|m| matches!(m, Msg::Scrub(_))) {
            result.clone().and_then(|()| {
                conn.execute_batch("VACUUM")
                    .and_then(|()| conn.pragma_update(None, "wal_checkpoint", "TRUNCATE"))
                    .map_err(|e| sqlite("cannot compact the sessions file", e))
            })
        } else {
            result.clone()
        };
        for m in batch {
            match m {
                Msg::Sync(reply) => {
                    let _ = reply.send(result.clone());
                }
                Msg::Scrub(reply) => {
                    let _ = reply.send(scrubbed.clone());
                }
                _ => {}
            }
        }
    }
    // Closed: the last batch is written; the WAL goes into the file.
    let _ = conn.pragma_update(None, "wal_checkpoint", "TRUNCATE");
}

/// The sessions file and the thread that writes it.
pub struct SessionFile {
    tx: Mutex<Option<mpsc::Sender<Msg>>>,
    thread: Mutex<Option<std::thread::JoinHandle<()>>>,
}

impl std::fmt::Debug for SessionFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionFile").finish_non_exhaustive()
    }
}

impl SessionFile {
    /// Opens `path` (creating it) and returns the records it keeps. A
    /// file that is not a sessions file is moved aside (to
    /// `PATH.unreadable-<unix time>`, kept for whoever wants to look) and
    /// a new one started: its sessions build new blocks.
    ///
    /// # Errors
    /// The file cannot be created, or was written by a newer memd.
    pub fn open(path: &Path) -> Result<(SessionFile, Vec<Record>), StoreError> {
        let opened = open_file(path).and_then(|c| load(&c).map(|records| (c, records)));
        let (conn, records) = match opened {
            Ok(x) => x,
            Err(StoreError::InvalidInput(m)) => return Err(StoreError::InvalidInput(m)),
            Err(e) if path.exists() => {
                let stamp = millis(SystemTime::now()) / 1000;
                let aside = path.with_extension(format!("db.unreadable-{stamp}"));
                tracing::warn!(error = %e, file = %path.display(), aside = %aside.display(),
                    "the sessions file cannot be read; moved aside, named sessions start anew");
                std::fs::rename(path, &aside)
                    .map_err(|e| StoreError::Io(Cause::context("cannot move the file aside", e)))?;
                for ext in ["db-wal", "db-shm"] {
                    let _ = std::fs::remove_file(path.with_extension(ext));
                }
                (open_file(path)?, Vec::new())
            }
            Err(e) => return Err(e),
        };
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("memd-sessions".into())
            .spawn(move || run(conn, &rx))
            .map_err(|e| StoreError::Io(Cause::context("cannot start the sessions thread", e)))?;
        Ok((
            SessionFile {
                tx: Mutex::new(Some(tx)),
                thread: Mutex::new(Some(thread)),
            },
            records,
        ))
    }

    fn send(&self, m: Msg) -> bool {
        lock(&self.tx).as_ref().is_some_and(|tx| tx.send(m).is_ok())
    }

    /// Keeps `record` (written soon; [`SessionFile::sync`] waits for it).
    pub fn put(&self, record: Record) {
        if !self.send(Msg::Put(Box::new(record))) {
            tracing::debug!("the sessions file is closed; a change was not kept");
        }
    }

    /// Removes a session's record (written soon, as [`SessionFile::put`]).
    pub fn remove(&self, namespace: &str, name: &str) {
        self.send(Msg::Delete(namespace.to_string(), name.to_string()));
    }

    /// Waits until everything sent before is on disk.
    ///
    /// # Errors
    /// The write failed, or the file is closed.
    pub async fn sync(&self) -> Result<(), StoreError> {
        let (reply, rx) = oneshot::channel();
        if !self.send(Msg::Sync(reply)) {
            return Err(StoreError::Closed);
        }
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Waits until everything sent before is on disk, then rewrites the
    /// file without free space and empties its WAL.
    ///
    /// # Errors
    /// The write failed, or the file is closed.
    pub async fn scrub(&self) -> Result<(), StoreError> {
        let (reply, rx) = oneshot::channel();
        if !self.send(Msg::Scrub(reply)) {
            return Err(StoreError::Closed);
        }
        rx.await.map_err(|_| StoreError::Closed)?
    }

    /// Writes what is queued and stops the thread.
    pub async fn close(&self) {
        lock(&self.tx).take();
        let thread = lock(&self.thread).take();
        if let Some(t) = thread {
            let _ = tokio::task::spawn_blocking(move || t.join()).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str) -> Record {
        Record {
            namespace: "shop".into(),
            name: name.into(),
            agent: "claude-code".into(),
            policy: DriftPolicy::Strict,
            budget: 4000,
            hold_block: true,
            seen: 12,
            block: Some(Injection {
                block: "## Memory\n- a\n".into(),
                hash: snapshot::hash("## Memory\n- a\n"),
                built_at_generation: 11,
                stats: InjectStats {
                    included: 1,
                    eligible: 2,
                    chars: 14,
                    budget: 4000,
                    cached: true,
                },
            }),
            built: Some(crate::session::Built {
                rows: vec![(3, 2), (9, 1)],
                at: "2026-06-07T18:00:00.000Z".into(),
            }),
            read_floor: 3,
            read_evicted: true,
            reads: vec![(1, 2, 10), (7, 1, 12)],
            created: from_millis(1_000_000),
            last_used: from_millis(2_000_000),
        }
    }

    #[tokio::test]
    async fn records_come_back_whole_and_ended_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let (file, none) = SessionFile::open(&path).unwrap();
        assert!(none.is_empty());
        file.put(record("a"));
        let mut b = record("b");
        b.block = None;
        file.put(b.clone());
        file.sync().await.unwrap();
        file.remove("shop", "a");
        file.put(record("c"));
        file.close().await;
        let (file, back) = SessionFile::open(&path).unwrap();
        assert_eq!(back, vec![b, record("c")]);
        file.close().await;
    }

    #[tokio::test]
    async fn a_block_that_does_not_match_its_hash_is_not_served() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        let (file, _) = SessionFile::open(&path).unwrap();
        file.put(record("a"));
        file.close().await;
        let conn = Connection::open(&path).unwrap();
        conn.execute(
            "UPDATE named_sessions SET block = CAST('## Memory\n- b\n' AS BLOB)",
            [],
        )
        .unwrap();
        drop(conn);
        let (file, back) = SessionFile::open(&path).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].block, None);
        assert_eq!(back[0].reads, record("a").reads, "the rest is kept");
        file.close().await;
    }

    #[tokio::test]
    async fn a_file_that_is_not_a_database_is_moved_aside() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        std::fs::write(&path, b"not a database at all, not even close").unwrap();
        let (file, back) = SessionFile::open(&path).unwrap();
        assert!(back.is_empty());
        let aside: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains("unreadable"))
            .collect();
        assert_eq!(aside.len(), 1);
        file.close().await;
    }

    #[tokio::test]
    async fn a_format_1_file_is_upgraded_and_keeps_its_sessions() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sessions.db");
        {
            // Format 1: no block_rows, no block_time.
            let conn = Connection::open(&path).unwrap();
            let v1 = SCHEMA
                .replace("    block_rows     BLOB,\n", "")
                .replace("    block_time     TEXT,\n", "");
            conn.execute_batch(&v1).unwrap();
            conn.pragma_update(None, "user_version", 1).unwrap();
            conn.execute(
                "INSERT INTO named_sessions (namespace, name, agent, policy, budget, hold_block, \
                 seen, read_floor, read_evicted, reads, created_ms, last_used_ms) \
                 VALUES ('shop', 'old', 'claude-code', 'standard', 4000, 1, 5, 5, 0, x'', 1, 2)",
                [],
            )
            .unwrap();
        }
        let (file, back) = SessionFile::open(&path).unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!(back[0].name, "old");
        assert_eq!(back[0].built, None);
        file.put(record("new"));
        file.close().await;
        let (file, back) = SessionFile::open(&path).unwrap();
        assert_eq!(back[0], record("new"), "the new columns are kept");
        file.close().await;
        let conn = Connection::open(&path).unwrap();
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, VERSION);
    }

    #[test]
    fn a_read_set_packs_and_unpacks() {
        let rows = vec![(1, 2, 3), (-1, i64::MAX, u64::MAX)];
        assert_eq!(unpack(&pack(&rows)).unwrap(), rows);
        assert_eq!(unpack(&[0; 23]), None);
    }
}
