//! Which `.memd.toml` files the person trusts to choose a namespace.
//!
//! A repository's `.memd.toml` comes with the repository: anyone who can
//! push to it, or who publishes a repository someone clones, writes it. Its
//! `namespace` decides which project's memory an agent working there is
//! given and where what it stores lands, so it counts only once the person
//! has trusted that file, as direnv asks before it loads an `.envrc`:
//! `memd trust` records the file's path and the SHA-256 of its content, and
//! a file whose content changed is untrusted again. Until then the
//! namespace is derived from the repository, and a note on stderr says why
//! (`Untrusted::note`).
//!
//! The record lives in the user's own data home, never in a repository:
//! `$XDG_DATA_HOME/memd/trusted/` (`~/.local/share/memd/trusted/`), one
//! file per trusted path (0600, in a 0700 directory), whatever data dir a
//! command uses. A record, or the directory, that is not this user's alone
//! is not believed.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use serde_json::json;
use sha2::{Digest, Sha256};

use super::args::{TrustArgs, UntrustArgs};
use super::{CommandError, Output};

/// The directory of the trust records: `$XDG_DATA_HOME/memd/trusted`
/// (`~/.local/share/memd/trusted`).
pub fn store_dir() -> PathBuf {
    store_dir_with(|k| std::env::var_os(k).filter(|v| !v.is_empty()))
}

fn store_dir_with(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    let data = env("XDG_DATA_HOME").map_or_else(
        || {
            env("HOME")
                .map_or_else(|| PathBuf::from("/"), PathBuf::from)
                .join(".local/share")
        },
        PathBuf::from,
    );
    data.join("memd").join("trusted")
}

/// Whether a file is trusted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Trusted with this content.
    Trusted,
    /// Never trusted (or untrusted since).
    Untrusted,
    /// Trusted once, with other content.
    Changed,
}

/// A trusted file as its record says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The file (its directory canonical).
    pub path: PathBuf,
    /// SHA-256 of the content trusted, in hex.
    pub sha256: String,
}

/// SHA-256 of `bytes`, in hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The path a file is trusted under: its directory made canonical and its
/// own name kept, so that a `.memd.toml` that is a symlink is judged where
/// it lies (a repository cannot point its file at one trusted elsewhere).
///
/// # Errors
/// When the directory cannot be resolved.
pub fn key_path(path: &Path) -> std::io::Result<PathBuf> {
    let absolute = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()?.join(path)
    };
    let name = absolute.file_name().ok_or_else(|| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} names no file", path.display()),
        )
    })?;
    let dir = absolute.parent().unwrap_or_else(|| Path::new("/"));
    Ok(std::fs::canonicalize(dir)?.join(name))
}

/// The record file of a key path: named by the SHA-256 of the path.
fn record_file(dir: &Path, key: &Path) -> PathBuf {
    dir.join(sha256_hex(key.as_os_str().as_bytes()))
}

/// Whether `meta` is this user's and closed to others' writes.
fn private(meta: &std::fs::Metadata) -> bool {
    meta.uid() == crate::sys::euid() && meta.mode() & 0o022 == 0
}

/// The record at `file`, when it is a private file of this user's in a
/// private directory of this user's.
fn read_record(dir: &Path, file: &Path) -> Option<Record> {
    let dir_meta = std::fs::symlink_metadata(dir).ok()?;
    let meta = std::fs::symlink_metadata(file).ok()?;
    if !dir_meta.is_dir() || !private(&dir_meta) || !meta.is_file() || !private(&meta) {
        return None;
    }
    let text = std::fs::read_to_string(file).ok()?;
    let (sha256, path) = text.split_once('\n')?;
    let path = path.strip_suffix('\n').unwrap_or(path);
    (sha256.len() == 64 && !path.is_empty()).then(|| Record {
        path: PathBuf::from(path),
        sha256: sha256.to_string(),
    })
}

/// Whether the file at `key` (a [`key_path`]) with `content` is trusted.
pub fn verdict(key: &Path, content: &[u8]) -> Verdict {
    verdict_in(&store_dir(), key, content)
}

fn verdict_in(dir: &Path, key: &Path, content: &[u8]) -> Verdict {
    match read_record(dir, &record_file(dir, key)) {
        Some(r) if r.path == key && r.sha256 == sha256_hex(content) => Verdict::Trusted,
        Some(r) if r.path == key => Verdict::Changed,
        _ => Verdict::Untrusted,
    }
}

/// Trusts the file at `key` with `content` (replacing an earlier record of
/// that path).
///
/// # Errors
/// When the record cannot be written.
pub fn trust(key: &Path, content: &[u8]) -> std::io::Result<Record> {
    trust_in(&store_dir(), key, content)
}

fn trust_in(dir: &Path, key: &Path, content: &[u8]) -> std::io::Result<Record> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let meta = std::fs::symlink_metadata(dir)?;
    if !meta.is_dir() || !private(&meta) {
        return Err(std::io::Error::other(format!(
            "{} is not a directory of yours closed to others; remove it and try again",
            dir.display()
        )));
    }
    let record = Record {
        path: key.to_path_buf(),
        sha256: sha256_hex(content),
    };
    let file = record_file(dir, key);
    let tmp = file.with_extension("tmp");
    let _ = std::fs::remove_file(&tmp);
    {
        let mut f = crate::session::create_private(&tmp)?;
        f.write_all(record.sha256.as_bytes())?;
        f.write_all(b"\n")?;
        f.write_all(key.as_os_str().as_bytes())?;
        f.write_all(b"\n")?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, &file)?;
    Ok(record)
}

/// Drops the record of the file at `key`; whether there was one.
///
/// # Errors
/// When it cannot be removed.
pub fn untrust(key: &Path) -> std::io::Result<bool> {
    untrust_in(&store_dir(), key)
}

fn untrust_in(dir: &Path, key: &Path) -> std::io::Result<bool> {
    match std::fs::remove_file(record_file(dir, key)) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Every trusted file, by path.
pub fn list() -> Vec<Record> {
    list_in(&store_dir())
}

fn list_in(dir: &Path) -> Vec<Record> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    // A record counts under its own name only (as `verdict` finds it).
    let mut all: Vec<Record> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let file = e.path();
            read_record(dir, &file).filter(|r| record_file(dir, &r.path) == file)
        })
        .collect();
    all.sort_by(|a, b| a.path.cmp(&b.path));
    all
}

/// The `.memd.toml` a `trust`/`untrust` argument names: the file itself,
/// or the one at the root of the work tree holding a directory (the
/// current one without an argument).
fn target(path: Option<&Path>) -> Result<PathBuf, CommandError> {
    let given = match path {
        Some(p) => p.to_path_buf(),
        None => std::env::current_dir().map_err(|e| CommandError::Io(e.to_string()))?,
    };
    if given.is_dir() {
        let root = super::repository_root(&given).ok_or_else(|| {
            CommandError::Usage(format!(
                "{} is not in a git work tree: name the .memd.toml",
                given.display()
            ))
        })?;
        return Ok(root.join(super::PROJECT_FILE));
    }
    if given.file_name() != Some(std::ffi::OsStr::new(super::PROJECT_FILE)) {
        return Err(CommandError::Usage(format!(
            "{} is not a {}: memd trusts only that file (at the root of a git work tree)",
            given.display(),
            super::PROJECT_FILE
        )));
    }
    Ok(given)
}

fn key_of(file: &Path) -> Result<PathBuf, CommandError> {
    key_path(file).map_err(|e| CommandError::Io(format!("cannot resolve {}: {e}", file.display())))
}

/// `memd trust [PATH]`: records the file's path and the SHA-256 of its
/// content; `--list`: every record and whether its file still has that
/// content.
///
/// # Errors
/// A path that is no `.memd.toml`, a file that cannot be read or is not
/// valid, a record that cannot be written.
pub fn trust_command(a: &TrustArgs) -> Result<Output, CommandError> {
    if a.list {
        return Ok(listed(&list()));
    }
    let file = target(a.path.as_deref())?;
    let content = std::fs::read(&file)
        .map_err(|e| CommandError::Io(format!("cannot read {}: {e}", file.display())))?;
    let namespace = super::parse_project_file(&content).map_err(|e| {
        CommandError::Usage(format!(
            "{} is not valid ({e}): nothing was trusted",
            file.display()
        ))
    })?;
    let key = key_of(&file)?;
    let record = trust(&key, &content).map_err(|e| {
        CommandError::Io(format!("cannot record the trust of {}: {e}", key.display()))
    })?;
    let human = match &namespace {
        Some(ns) => format!(
            "trusted {}: its namespace `{ns}` is used there until the file changes",
            key.display()
        ),
        None => format!(
            "trusted {} (it names no namespace: the derived one is used)",
            key.display()
        ),
    };
    Ok(Output {
        json: json!({
            "success": true,
            "trusted": true,
            "path": key,
            "sha256": record.sha256,
            "namespace": namespace,
        }),
        human,
    })
}

/// `memd untrust [PATH]`: drops the file's record (the file may be gone).
///
/// # Errors
/// A path that is no `.memd.toml`, a record that cannot be removed.
pub fn untrust_command(a: &UntrustArgs) -> Result<Output, CommandError> {
    let file = target(a.path.as_deref())?;
    let key = key_of(&file)?;
    let was = untrust(&key).map_err(|e| {
        CommandError::Io(format!("cannot remove the trust of {}: {e}", key.display()))
    })?;
    let human = if was {
        format!(
            "untrusted {}: its namespace is no longer used (the derived one is)",
            key.display()
        )
    } else {
        format!("{} was not trusted", key.display())
    };
    Ok(Output {
        json: json!({"success": true, "untrusted": was, "path": key}),
        human,
    })
}

/// The records, each with its file's state now: `trusted` (the content
/// trusted), `changed`, or `missing`.
fn listed(records: &[Record]) -> Output {
    let rows: Vec<(String, &Record)> = records
        .iter()
        .map(|r| {
            let state = match std::fs::read(&r.path) {
                Ok(bytes) if sha256_hex(&bytes) == r.sha256 => "trusted",
                Ok(_) => "changed",
                Err(_) => "missing",
            };
            (state.to_string(), r)
        })
        .collect();
    let human = if rows.is_empty() {
        "no .memd.toml is trusted".to_string()
    } else {
        rows.iter()
            .map(|(state, r)| format!("{state:<8} {}", r.path.display()))
            .collect::<Vec<_>>()
            .join("\n")
    };
    Output {
        json: json!({
            "success": true,
            "trusted": rows.iter().map(|(state, r)| json!({
                "path": r.path,
                "sha256": r.sha256,
                "state": state,
            })).collect::<Vec<_>>(),
        }),
        human,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_trusted_with_its_content_until_it_changes_or_is_untrusted() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("trusted");
        let repo = home.path().join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let key = key_path(&repo.join(".memd.toml")).unwrap();
        let content = b"namespace = \"shop\"\n";
        assert_eq!(verdict_in(&dir, &key, content), Verdict::Untrusted);
        let r = trust_in(&dir, &key, content).unwrap();
        assert_eq!(r.sha256, sha256_hex(content));
        assert_eq!(verdict_in(&dir, &key, content), Verdict::Trusted);
        assert_eq!(
            verdict_in(&dir, &key, b"namespace = \"other\"\n"),
            Verdict::Changed
        );
        // Another path with the same content is not trusted.
        let elsewhere = key_path(&home.path().join(".memd.toml")).unwrap();
        assert_eq!(verdict_in(&dir, &elsewhere, content), Verdict::Untrusted);
        assert_eq!(list_in(&dir), [r]);
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&record_file(&dir, &key)), 0o600);
        // A record others could have written is not believed.
        std::fs::set_permissions(
            record_file(&dir, &key),
            std::fs::Permissions::from_mode(0o666),
        )
        .unwrap();
        assert_eq!(verdict_in(&dir, &key, content), Verdict::Untrusted);
        std::fs::set_permissions(
            record_file(&dir, &key),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        assert!(untrust_in(&dir, &key).unwrap());
        assert!(!untrust_in(&dir, &key).unwrap());
        assert_eq!(verdict_in(&dir, &key, content), Verdict::Untrusted);
        assert!(list_in(&dir).is_empty());
    }

    #[test]
    fn a_symlink_is_trusted_where_it_lies_not_where_it_points() {
        let home = tempfile::tempdir().unwrap();
        let dir = home.path().join("trusted");
        let mine = home.path().join("mine");
        let theirs = home.path().join("theirs");
        std::fs::create_dir_all(&mine).unwrap();
        std::fs::create_dir_all(&theirs).unwrap();
        std::fs::write(mine.join(".memd.toml"), "namespace = \"mine\"\n").unwrap();
        std::os::unix::fs::symlink(mine.join(".memd.toml"), theirs.join(".memd.toml")).unwrap();
        let content = std::fs::read(mine.join(".memd.toml")).unwrap();
        trust_in(&dir, &key_path(&mine.join(".memd.toml")).unwrap(), &content).unwrap();
        let key = key_path(&theirs.join(".memd.toml")).unwrap();
        assert_eq!(
            key,
            std::fs::canonicalize(&theirs).unwrap().join(".memd.toml")
        );
        assert_eq!(verdict_in(&dir, &key, &content), Verdict::Untrusted);
    }

    #[test]
    fn the_store_is_in_the_users_data_home() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        assert_eq!(
            store_dir_with(env(&[("HOME", "/h")])),
            Path::new("/h/.local/share/memd/trusted")
        );
        assert_eq!(
            store_dir_with(env(&[("HOME", "/h"), ("XDG_DATA_HOME", "/x")])),
            Path::new("/x/memd/trusted")
        );
    }
}
