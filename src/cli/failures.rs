//! The hooks' failure record. A hook fails open (exit 0, one stderr line
//! the host hides), so a failure would otherwise leave no trace: each one
//! is also recorded here, and `memd doctor` shows the last ones.
//!
//! The record is `$XDG_STATE_HOME/memd/hook-failures.json`
//! (`~/.local/state/memd/…`: state a person's tools keep between runs,
//! not data to back up), mode 0600, replaced whole by a rename (a reader
//! never sees half a file). It keeps the last [`KEEP`] failures, each:
//! when, the host, the hook event's name and the error's code — never the
//! message, the event's other fields, memory content or prompt text. Two
//! hooks failing at the same instant may keep one of the two: the record
//! says that hooks fail, not how often.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How many failures the record keeps.
pub const KEEP: usize = 20;

/// One hook failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// Unix seconds.
    pub at: i64,
    /// The host (`claude-code`, `codex`, `gemini`).
    pub host: String,
    /// The hook event's name (`SessionStart`, …), `-` when the input was
    /// no event.
    pub event: String,
    /// The error's code (`unreachable`, `timeout`, `input`, a daemon
    /// error code).
    pub code: String,
}

/// The record's path: `$XDG_STATE_HOME/memd/hook-failures.json`, else
/// `$HOME/.local/state/memd/hook-failures.json`.
pub fn path() -> PathBuf {
    path_with(|k| std::env::var_os(k).filter(|v| !v.is_empty()))
}

fn path_with(env: impl Fn(&str) -> Option<std::ffi::OsString>) -> PathBuf {
    let state = env("XDG_STATE_HOME").map_or_else(
        || {
            env("HOME")
                .map_or_else(|| PathBuf::from("/"), PathBuf::from)
                .join(".local/state")
        },
        PathBuf::from,
    );
    state.join("memd").join("hook-failures.json")
}

/// An event name as recorded: the event's own name when it is one (a
/// word of letters), else `-` (no text of the input is kept).
pub fn event_name(name: Option<&str>) -> String {
    match name {
        Some(n) if !n.is_empty() && n.len() <= 40 && n.chars().all(|c| c.is_ascii_alphabetic()) => {
            n.to_string()
        }
        _ => "-".into(),
    }
}

/// The failures in the record, oldest first (none when it is missing or
/// unreadable).
pub fn read(path: &Path) -> Vec<Failure> {
    std::fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_default()
}

/// `list` with `failure` added last, the oldest dropped beyond [`KEEP`].
pub fn appended(mut list: Vec<Failure>, failure: Failure) -> Vec<Failure> {
    list.push(failure);
    let over = list.len().saturating_sub(KEEP);
    list.drain(..over);
    list
}

/// Adds a failure to the record at `path`.
///
/// # Errors
/// The directory or the file cannot be written.
pub fn record(path: &Path, failure: Failure) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)?;
    let list = appended(read(path), failure);
    let text = serde_json::to_vec_pretty(&list).map_err(std::io::Error::other)?;
    let tmp = dir.join(format!(".hook-failures.{}.tmp", std::process::id()));
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)?;
    f.write_all(&text)?;
    f.sync_all()?;
    drop(f);
    std::fs::rename(&tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(at: i64) -> Failure {
        Failure {
            at,
            host: "codex".into(),
            event: "Stop".into(),
            code: "unreachable".into(),
        }
    }

    #[test]
    fn the_record_keeps_the_last_twenty_in_a_private_file() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/memd/hook-failures.json");
        assert!(read(&path).is_empty());
        for at in 0..25 {
            record(&path, failure(at)).unwrap();
        }
        let list = read(&path);
        assert_eq!(list.len(), KEEP);
        assert_eq!(list[0].at, 5, "the oldest dropped");
        assert_eq!(list[KEEP - 1].at, 24);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
    }

    #[test]
    fn an_unreadable_record_is_started_again() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hook-failures.json");
        std::fs::write(&path, "not json").unwrap();
        record(&path, failure(7)).unwrap();
        assert_eq!(read(&path), vec![failure(7)]);
    }

    #[test]
    fn only_an_event_name_is_kept() {
        assert_eq!(event_name(Some("SessionStart")), "SessionStart");
        assert_eq!(event_name(Some("rm -rf / my secret")), "-");
        assert_eq!(event_name(Some("")), "-");
        assert_eq!(event_name(None), "-");
    }

    #[test]
    fn the_record_is_in_the_state_home() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| std::ffi::OsString::from(v))
            }
        };
        assert_eq!(
            path_with(env(&[("HOME", "/h")])),
            PathBuf::from("/h/.local/state/memd/hook-failures.json")
        );
        assert_eq!(
            path_with(env(&[("HOME", "/h"), ("XDG_STATE_HOME", "/s")])),
            PathBuf::from("/s/memd/hook-failures.json")
        );
    }
}
