//! Drift backups: when a request is refused, every row of the database is
//! written to `<data_dir>/memory.bak.<unix_ts>.json` (`-2`, `-3`… before
//! `.json` when that second is taken), mode 0600.
//!
//! One file per cause (the generation of the unseen change): every session
//! refused for the same external change shares it. The rows come from a read
//! transaction (never a file copy of the database); the file is written to a
//! temporary name, synced and renamed, so nobody sees half a backup. Old
//! backups are removed by count and total size.

use std::collections::{HashMap, HashSet};
use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use memd_proto::Memory;
use serde_json::{Value, json};

/// Writes and prunes drift backups.
pub struct Backups {
    dir: PathBuf,
    keep: usize,
    max_bytes: u64,
    made: tokio::sync::Mutex<HashMap<u64, PathBuf>>,
}

/// A backup file in the data dir.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackupFile {
    /// Its path.
    pub path: PathBuf,
    /// Unix time in its name.
    pub stamp: u64,
    /// Its `-N` suffix (1 without one).
    pub seq: u32,
    /// Size in bytes.
    pub size: u64,
}

impl Backups {
    /// Backups in `dir`, keeping at most `keep` files and `max_bytes` bytes.
    pub fn new(dir: PathBuf, keep: usize, max_bytes: u64) -> Backups {
        Backups {
            dir,
            keep: keep.max(1),
            max_bytes,
            made: tokio::sync::Mutex::new(HashMap::new()),
        }
    }

    /// The backup for a refusal caused by the change at generation `cause`,
    /// written on first use with the rows `read` returns (every row, and
    /// the generation they were read at).
    ///
    /// # Errors
    /// Reading the rows or writing the file failed.
    pub async fn for_refusal<F, Fut, E>(
        &self,
        cause: u64,
        observed: u64,
        read: F,
    ) -> Result<PathBuf, E>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(Vec<Memory>, u64), E>>,
        E: From<std::io::Error>,
    {
        let mut made = self.made.lock().await;
        if let Some(path) = made.get(&cause)
            && path.exists()
        {
            return Ok(path.clone());
        }
        let (entries, generation) = read().await?;
        let (dir, keep, max_bytes) = (self.dir.clone(), self.keep, self.max_bytes);
        let rows = entries.len();
        let path = tokio::task::spawn_blocking(move || {
            let path = write(&dir, observed, generation, &entries)?;
            prune(&dir, keep, max_bytes, &path);
            Ok::<_, std::io::Error>(path)
        })
        .await
        .map_err(|e| std::io::Error::other(format!("backup task failed: {e}")))??;
        tracing::warn!(
            path = %path.display(),
            rows,
            cause,
            "wrote a drift backup"
        );
        made.insert(cause, path.clone());
        Ok(path)
    }

    /// A backup of `rows` that are about to leave the database for a reason
    /// other than a refusal (team memory: the rows PostgreSQL lost when its
    /// history went back).
    ///
    /// # Errors
    /// Writing the file failed.
    pub async fn of_rows(
        &self,
        observed: u64,
        actual: u64,
        rows: Vec<Memory>,
    ) -> std::io::Result<PathBuf> {
        let (dir, keep, max_bytes) = (self.dir.clone(), self.keep, self.max_bytes);
        let _one = self.made.lock().await;
        tokio::task::spawn_blocking(move || {
            let path = write(&dir, observed, actual, &rows)?;
            prune(&dir, keep, max_bytes, &path);
            Ok::<_, std::io::Error>(path)
        })
        .await
        .map_err(|e| std::io::Error::other(format!("backup task failed: {e}")))?
    }

    /// Rewrites every backup that holds a row of `uids` without those rows
    /// (a purge); how many files were rewritten. Each is replaced whole
    /// (a new file renamed over it), so no file keeps the old bytes.
    ///
    /// # Errors
    /// A backup that cannot be read, parsed or replaced.
    pub async fn rewrite_without(&self, uids: Vec<String>) -> std::io::Result<u64> {
        let dir = self.dir.clone();
        let _one = self.made.lock().await;
        tokio::task::spawn_blocking(move || {
            // A set: each file is read once, whatever the number of uids.
            let uids: HashSet<String> = uids.into_iter().collect();
            let mut rewritten = 0;
            for f in list(&dir) {
                let bytes = std::fs::read(&f.path)?;
                let mut doc: Value = serde_json::from_slice(&bytes)?;
                let Some(entries) = doc.get_mut("entries").and_then(Value::as_array_mut) else {
                    continue;
                };
                let before = entries.len();
                entries.retain(|e| {
                    e.get("uid")
                        .and_then(Value::as_str)
                        .is_none_or(|u| !uids.contains(u))
                });
                if entries.len() == before {
                    continue;
                }
                let tmp = dir.join(format!(
                    ".memory.bak.purge.{}.{}.tmp",
                    std::process::id(),
                    f.stamp
                ));
                write_new(&tmp, &doc)?;
                std::fs::rename(&tmp, &f.path)?;
                rewritten += 1;
            }
            if let Ok(d) = File::open(&dir) {
                let _ = d.sync_all();
            }
            Ok(rewritten)
        })
        .await
        .map_err(|e| std::io::Error::other(format!("backup task failed: {e}")))?
    }

    /// Backups currently kept.
    pub fn count(&self) -> usize {
        list(&self.dir).len()
    }
}

/// The backup document.
pub fn document(observed: u64, actual: u64, rows: &[Memory]) -> Value {
    json!({
        "timestamp": crate::clock::now(),
        "generation_observed": observed,
        "generation_actual": actual,
        "entries": rows.iter().map(memd_proto::json::memory).collect::<Vec<_>>(),
    })
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn write(dir: &Path, observed: u64, actual: u64, rows: &[Memory]) -> std::io::Result<PathBuf> {
    let stamp = unix_now();
    let tmp = dir.join(format!(".memory.bak.{stamp}.{}.tmp", std::process::id()));
    write_new(&tmp, &document(observed, actual, rows))?;
    // A name nobody holds (a planted symlink counts as held: rename would
    // replace the link, never follow it, but we do not touch it at all).
    let mut seq = 1u32;
    let path = loop {
        let name = if seq == 1 {
            format!("memory.bak.{stamp}.json")
        } else {
            format!("memory.bak.{stamp}-{seq}.json")
        };
        let candidate = dir.join(name);
        if std::fs::symlink_metadata(&candidate).is_err() {
            break candidate;
        }
        seq += 1;
    };
    std::fs::rename(&tmp, &path)?;
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(path)
}

/// Writes `doc` to the new file `tmp` (owner-only, never through a
/// symlink) and syncs it; removes it again when that fails.
fn write_new(tmp: &Path, doc: &Value) -> std::io::Result<()> {
    let file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(tmp)?;
    let written = (|| {
        let mut out = BufWriter::new(file);
        serde_json::to_writer(&mut out, doc)?;
        out.write_all(b"\n")?;
        out.into_inner()
            .map_err(std::io::IntoInnerError::into_error)?
            .sync_all()
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(tmp);
    }
    written
}

/// Backup files in `dir`, oldest first.
pub fn list(dir: &Path) -> Vec<BackupFile> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<BackupFile> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let (stamp, seq) = parse_name(&name)?;
            let meta = e.metadata().ok()?;
            meta.is_file().then(|| BackupFile {
                path: e.path(),
                stamp,
                seq,
                size: meta.len(),
            })
        })
        .collect();
    files.sort_by_key(|f| (f.stamp, f.seq));
    files
}

/// `memory.bak.<ts>.json` → `(ts, 1)`, `memory.bak.<ts>-<n>.json` → `(ts, n)`.
pub fn parse_name(name: &str) -> Option<(u64, u32)> {
    let middle = name.strip_prefix("memory.bak.")?.strip_suffix(".json")?;
    match middle.split_once('-') {
        None => Some((middle.parse().ok()?, 1)),
        Some((ts, n)) => Some((ts.parse().ok()?, n.parse().ok()?)),
    }
}

/// Removes the oldest backups until at most `keep` files and `max_bytes`
/// bytes remain; never the one just written.
fn prune(dir: &Path, keep: usize, max_bytes: u64, newest: &Path) {
    let mut files = list(dir);
    let mut total: u64 = files.iter().map(|f| f.size).sum();
    while !files.is_empty() && (files.len() > keep || total > max_bytes) {
        let oldest = files.remove(0);
        if oldest.path == newest {
            continue;
        }
        match std::fs::remove_file(&oldest.path) {
            Ok(()) => {
                total -= oldest.size;
                tracing::info!(path = %oldest.path.display(), "removed an old drift backup");
            }
            Err(e) => {
                tracing::warn!(path = %oldest.path.display(), error = %e, "cannot remove an old backup");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            parse_name("memory.bak.1700000000.json"),
            Some((1_700_000_000, 1))
        );
        assert_eq!(
            parse_name("memory.bak.1700000000-3.json"),
            Some((1_700_000_000, 3))
        );
        assert_eq!(parse_name("memory.bak.x.json"), None);
        assert_eq!(parse_name(".memory.bak.1.2.tmp"), None);
        assert_eq!(parse_name("memory.db"), None);
    }

    #[test]
    fn same_second_gets_a_suffix_and_pruning_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(dir.path(), 1, 2, &[]).unwrap();
        let b = write(dir.path(), 1, 3, &[]).unwrap();
        assert_ne!(a, b);
        let files = list(dir.path());
        assert_eq!(files.len(), 2);
        let doc: Value = serde_json::from_slice(&std::fs::read(&b).unwrap()).unwrap();
        assert_eq!(doc["generation_actual"], 3);
        assert_eq!(doc["entries"], json!([]));
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&b).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let c = write(dir.path(), 1, 4, &[]).unwrap();
        prune(dir.path(), 2, u64::MAX, &c);
        let left: Vec<PathBuf> = list(dir.path()).into_iter().map(|f| f.path).collect();
        assert_eq!(left.len(), 2);
        assert!(left.contains(&c));
        assert!(!left.contains(&a), "the oldest went first");
        prune(dir.path(), 10, 1, &c);
        let left: Vec<PathBuf> = list(dir.path()).into_iter().map(|f| f.path).collect();
        assert_eq!(left, vec![c], "size limit keeps only the newest");
    }

    #[test]
    fn a_planted_symlink_is_never_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target.txt");
        std::fs::write(&target, "keep").unwrap();
        let stamp = unix_now();
        for s in [stamp, stamp + 1] {
            std::os::unix::fs::symlink(&target, dir.path().join(format!("memory.bak.{s}.json")))
                .unwrap();
        }
        let path = write(dir.path(), 1, 2, &[]).unwrap();
        assert!(!path.is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
    }
}
