//! A session: one connection's identity and view (DESIGN.md "Drift" and
//! "Frozen snapshot").
//!
//! A session is created by the handshake and dropped with its connection:
//! nothing of it outlives the connection.

pub mod snapshot;

use memd_proto::{DriftPolicy, Hello, Injection};

use crate::store::Author;
use crate::store::gate::Who;

/// One client session.
#[derive(Debug)]
pub struct Session {
    /// Session key (owner of session-scope memories).
    pub id: String,
    /// Agent id (owner of agent-scope memories).
    pub agent: String,
    /// Namespace every request is confined to.
    pub namespace: String,
    /// Drift policy.
    pub policy: DriftPolicy,
    /// Inject character budget.
    pub budget: u32,
    /// The generation this session has seen.
    pub seen: u64,
    /// Drift events are pushed to this session.
    pub subscribed: bool,
    /// A file the client is uploading (restore, import).
    pub upload: Option<Upload>,
    /// The frozen memory block, once built.
    pub snapshot: Option<Injection>,
    /// A file prepared for the client to fetch (export, backup).
    pub download: Option<Download>,
    /// The session wrote session-scope memories: its end is recorded (the
    /// lifecycle archives them a while after it).
    pub owns_session_rows: bool,
}

/// A file the daemon prepared for a client to fetch (in the data dir, under
/// a name the daemon chooses); removed when the session ends.
#[derive(Debug)]
pub struct Download {
    /// The temporary file.
    pub path: std::path::PathBuf,
    /// Open for reading.
    pub file: std::fs::File,
    /// Size in bytes.
    pub size: u64,
}

impl Drop for Download {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Creates a file the daemon writes: mode 0600, never through a symlink,
/// never over an existing file.
///
/// # Errors
/// I/O errors.
pub fn create_private(path: &std::path::Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// A file a client streams to the daemon, kept in the data dir under a name
/// the daemon chooses (never a path the client names); removed when the
/// session ends.
#[derive(Debug)]
pub struct Upload {
    /// The temporary file.
    pub path: std::path::PathBuf,
    /// Open for appending.
    pub file: std::fs::File,
    /// Bytes so far.
    pub len: u64,
}

impl Upload {
    /// Creates the session's upload file in `dir` (mode 0600, never through
    /// a symlink, never over an existing file).
    ///
    /// # Errors
    /// I/O errors.
    pub fn create(dir: &std::path::Path, session: &str) -> std::io::Result<Upload> {
        let path = dir.join(format!(".upload-{session}.tmp"));
        let file = create_private(&path)?;
        Ok(Upload { path, file, len: 0 })
    }
}

impl Drop for Upload {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Longest agent id or namespace, in bytes.
pub const MAX_NAME_LEN: usize = 128;

/// Largest inject budget, in characters: a block of that many characters
/// (at most 4 bytes each) fits in a frame.
pub const MAX_BUDGET_CHARS: u32 = 1_000_000;

impl Session {
    /// Opens a session from a handshake.
    ///
    /// # Errors
    /// A message when the agent id or namespace is empty, too long or has
    /// control characters.
    pub fn open(
        hello: &Hello,
        generation: u64,
        default_policy: DriftPolicy,
        default_budget: u32,
    ) -> Result<Session, String> {
        check_name("agent id", &hello.agent_id)?;
        check_name("namespace", &hello.namespace)?;
        if let Some(b) = hello.budget.filter(|b| *b > MAX_BUDGET_CHARS) {
            return Err(format!(
                "inject budget {b} is above the maximum of {MAX_BUDGET_CHARS} characters"
            ));
        }
        Ok(Session {
            id: new_session_id(),
            agent: hello.agent_id.clone(),
            namespace: hello.namespace.clone(),
            policy: hello.policy.unwrap_or(default_policy),
            budget: hello.budget.unwrap_or(default_budget),
            // A generation the database has not reached yet (from another
            // file, or made up) would turn the guard off: it counts as now.
            seen: hello
                .seen_generation
                .map_or(generation, |seen| seen.min(generation)),
            subscribed: false,
            upload: None,
            snapshot: None,
            owns_session_rows: false,
            download: None,
        })
    }

    /// Who writes, for the gate and the store's views.
    pub fn who(&self) -> Who {
        Who {
            namespace: self.namespace.clone(),
            agent: self.agent.clone(),
            session: self.id.clone(),
        }
    }

    /// Drops the snapshot: the next inject rebuilds it (after the session's
    /// own writes, `compacted` and `refresh` — never after other sessions'
    /// writes or external edits).
    pub fn invalidate(&mut self) {
        self.snapshot = None;
    }

    /// The author of this session's writes.
    pub fn author(&self) -> Author {
        Author::Session {
            id: self.id.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

fn check_name(what: &str, s: &str) -> Result<(), String> {
    if s.trim().is_empty() {
        return Err(format!("{what} is empty"));
    }
    if s.len() > MAX_NAME_LEN {
        return Err(format!("{what} is longer than {MAX_NAME_LEN} bytes"));
    }
    if s.chars().any(char::is_control) {
        return Err(format!("{what} contains control characters"));
    }
    Ok(())
}

/// A new random session key (32 hex digits).
pub fn new_session_id() -> String {
    crate::sys::random_bytes()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hello(seen: Option<u64>) -> Hello {
        Hello {
            protocol: memd_proto::PROTOCOL_VERSION,
            client_version: "test".into(),
            agent_id: "a".into(),
            namespace: "default".into(),
            policy: None,
            budget: None,
            seen_generation: seen,
        }
    }

    #[test]
    fn seen_starts_at_the_handshake_and_never_ahead_of_the_database() {
        let open = |seen| Session::open(&hello(seen), 10, DriftPolicy::External, 4_000).unwrap();
        assert_eq!(open(None).seen, 10);
        assert_eq!(open(Some(7)).seen, 7);
        assert_eq!(open(Some(99)).seen, 10);
    }
}
