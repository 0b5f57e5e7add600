//! A session: one connection's identity and view (the drift guard and the
//! frozen snapshot).
//!
//! A session is created by the handshake and dropped with its connection;
//! a named session's view (seen generation, snapshot, read set) is shared
//! by every connection that gives its name and outlives them ([`named`]).
//!
//! What the session has seen moves in one place, [`Session::saw`], driven
//! by the wire's rule for which replies show the database
//! (`Response::seen_generation`); the rows a reply showed go into the read
//! set ([`Session::shown`]), and so do the rows of the session's own writes
//! ([`Session::wrote`]), which move nothing else.
//!
//! # Layout
//! - [`ident`]: a session's identity and the author of a write.
//! - [`readset`]: the rows a session was shown, at which rev.
//! - [`snapshot`]: the frozen memory block, as pure rendering rules.
//! - [`named`]: named sessions, shared by many connections.

pub mod ident;
pub mod named;
pub mod readset;
pub mod snapshot;

use std::sync::{Arc, Mutex};

use memd_proto::{DriftPolicy, Hello, Injection};

use crate::sync;
use ident::{Reach, Who};
use readset::ReadSet;

/// One client session.
#[derive(Debug)]
pub struct Session {
    /// Namespace, agent id (owner of agent-scope memories) and session key
    /// (owner of session-scope memories).
    pub who: Arc<Who>,
    /// Drift policy.
    pub policy: DriftPolicy,
    /// Inject character budget.
    pub budget: u32,
    /// The generation this session has seen (moved only by
    /// [`Session::saw`]) and its frozen block: shared by the connections
    /// of a named session.
    view: Arc<Mutex<View>>,
    /// The named session this connection belongs to.
    pub named: Option<Arc<named::Named>>,
    /// The rows replies showed the session (the row rule), shared with the
    /// writer thread while a write of the session runs.
    reads: Arc<Mutex<ReadSet>>,
    /// Drift events are pushed to this session.
    pub subscribed: bool,
    /// A file the client is uploading (restore, import).
    pub upload: Option<Upload>,
    /// A file prepared for the client to fetch (export, backup).
    pub download: Option<Download>,
    /// The session wrote session-scope memories: its end is recorded (the
    /// lifecycle archives them a while after it).
    pub owns_session_rows: bool,
    /// How this connection reaches memd (provenance of what it stores):
    /// `cli`, `agent-cli`, `ingest`, `mcp`, `hook`, `http`, `viewer` or
    /// `client`.
    pub via: &'static str,
}

/// The way in a handshake's client version names (`<via>/<version>`).
pub fn via_of(client_version: &str) -> &'static str {
    let prefix = client_version.split_once('/').map_or("", |(p, _)| p);
    [
        "cli",
        "agent-cli",
        "ingest",
        "mcp",
        "hook",
        "http",
        "viewer",
    ]
    .into_iter()
    .find(|v| *v == prefix)
    .unwrap_or("client")
}

/// The source of what a connection that came `via` stores: a person
/// through the CLI or the viewer, a transcript's turns through `memd
/// ingest` (a kind of their own, trusted as captured turns), an agent
/// otherwise.
pub fn source_of(via: &str) -> &'static str {
    match via {
        "cli" | "viewer" => "user",
        "ingest" => "ingest",
        _ => "agent",
    }
}

/// Whether the rows a connection that came `via` reads count as used
/// (`use_count`, `access_score`: what ranking and decay weigh): an agent's
/// reads do — MCP, hooks, the CLI run by an agent, a program's client, an
/// HTTP request that names its agent or session — a person browsing does
/// not: the CLI at a person's hands, the viewer, an HTTP request that names
/// no agent (`reach.every_owner`).
pub fn counts_uses(via: &str, reach: Reach) -> bool {
    match via {
        "cli" | "viewer" => false,
        "http" => !reach.every_owner,
        _ => true,
    }
}

/// What a session has seen and shows: its seen generation and its frozen
/// block.
#[derive(Debug)]
pub struct View {
    /// The generation it has seen.
    pub seen: u64,
    /// The frozen memory block, once built.
    pub snapshot: Option<Injection>,
    /// What the block holds and when it was built (what the session was
    /// told, as the HTTP API and the viewer show it).
    pub built: Option<Built>,
}

/// What a frozen block holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Built {
    /// The memories in it: (id, rev), in the block's order.
    pub rows: Vec<(i64, i64)>,
    /// When it was built (stored time format).
    pub at: String,
}

impl Built {
    /// Whether the block shows one of the memories `ids` (a purge's; a
    /// set: a purge of thousands of rows checks each block's rows against
    /// it once).
    pub fn holds_any(&self, ids: &std::collections::HashSet<i64>) -> bool {
        self.rows.iter().any(|(id, _)| ids.contains(id))
    }
}

impl View {
    /// A purge erased `ids`: the frozen block is dropped when it shows one
    /// of them — the one case where a frozen block changes — and the next
    /// inject builds a new one. Whether it was dropped. Every place a purge
    /// reaches a block (the purging connection's, the others', named
    /// sessions kept without a connection) goes through here.
    pub fn drop_block_holding(&mut self, ids: &std::collections::HashSet<i64>) -> bool {
        if !self.built.as_ref().is_some_and(|b| b.holds_any(ids)) {
            return false;
        }
        self.snapshot = None;
        self.built = None;
        true
    }

    /// A view at `seen`, no block yet.
    pub fn new(seen: u64) -> View {
        View {
            seen,
            snapshot: None,
            built: None,
        }
    }
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
    /// control characters, or when the kernel gives no random bytes for
    /// the session's key.
    pub fn open(
        hello: &Hello,
        generation: u64,
        default_policy: DriftPolicy,
        default_budget: u32,
        read_set_rows: usize,
        registry: &named::Registry,
    ) -> Result<Session, String> {
        check_name("agent id", &hello.agent_id)?;
        check_name("namespace", &hello.namespace)?;
        if let Some(name) = &hello.session {
            check_name("session name", name)?;
        }
        if let Some(b) = hello.budget.filter(|b| *b > MAX_BUDGET_CHARS) {
            return Err(format!(
                "inject budget {b} is above the maximum of {MAX_BUDGET_CHARS} characters"
            ));
        }
        // A generation the database has not reached yet (from another file,
        // or made up) would turn the guard off: it counts as now.
        let seen = hello
            .seen_generation
            .map_or(generation, |seen| seen.min(generation));
        let policy = hello.policy.unwrap_or(default_policy);
        let budget = hello.budget.unwrap_or(default_budget);
        if let Some(name) = &hello.session {
            // The handshake's seen generation, policy and budget count only
            // when it creates the session.
            let named = registry.join(&hello.namespace, name, || {
                named::Named::new(
                    Who {
                        namespace: hello.namespace.clone(),
                        agent: hello.agent_id.clone(),
                        session: name.clone(),
                        reach: crate::session::ident::Reach::default(),
                    },
                    policy,
                    budget,
                    hello.hold_block,
                    View::new(seen),
                    ReadSet::new(seen, read_set_rows),
                )
            });
            return Ok(Session {
                who: named.who.clone(),
                policy: named.policy,
                budget: named.budget,
                view: named.view.clone(),
                reads: named.reads.clone(),
                named: Some(named),
                subscribed: false,
                upload: None,
                owns_session_rows: false,
                download: None,
                via: via_of(&hello.client_version),
            });
        }
        Ok(Session {
            who: Arc::new(Who {
                namespace: hello.namespace.clone(),
                agent: hello.agent_id.clone(),
                session: new_session_id().map_err(|e| e.to_string())?,
                reach: crate::session::ident::Reach::default(),
            }),
            policy,
            budget,
            view: Arc::new(Mutex::new(View::new(seen))),
            reads: Arc::new(Mutex::new(ReadSet::new(seen, read_set_rows))),
            named: None,
            subscribed: false,
            upload: None,
            owns_session_rows: false,
            download: None,
            via: via_of(&hello.client_version),
        })
    }

    fn view(&self) -> std::sync::MutexGuard<'_, View> {
        sync::lock(&self.view)
    }

    /// The frozen block, once built.
    pub fn snapshot(&self) -> Option<Injection> {
        self.view().snapshot.clone()
    }

    /// Freezes a newly built block holding `rows` (id, rev).
    pub fn set_snapshot(&mut self, block: Injection, rows: Vec<(i64, i64)>) {
        {
            let mut view = self.view();
            view.snapshot = Some(block);
            view.built = Some(Built {
                rows,
                at: crate::clock::now(),
            });
        }
        self.changed(named::changed::BLOCK);
    }

    /// What the frozen block holds, once built.
    pub fn built(&self) -> Option<Built> {
        self.view().built.clone()
    }

    /// A named session's state changed: it is kept on disk again.
    fn changed(&self, what: u8) {
        if let Some(n) = &self.named {
            n.mark(what);
        }
    }

    /// Session key.
    pub fn id(&self) -> &str {
        &self.who.session
    }

    /// Agent id.
    pub fn agent(&self) -> &str {
        &self.who.agent
    }

    /// Namespace.
    pub fn namespace(&self) -> &str {
        &self.who.namespace
    }

    /// Whether what this session reads counts as used ([`counts_uses`]).
    pub fn counts_uses(&self) -> bool {
        counts_uses(self.via, self.who.reach)
    }

    /// The generation this session has seen.
    pub fn seen(&self) -> u64 {
        self.view().seen
    }

    /// The session received a reply that showed it the database at
    /// `generation`: its seen generation moves there (never back). The only
    /// way it moves, called by `handler::dispatch` as the wire's rule says
    /// (`Response::seen_generation` in memd-proto, which the client follows
    /// too).
    pub fn saw(&mut self, generation: u64) {
        {
            let mut view = self.view();
            view.seen = view.seen.max(generation);
        }
        self.changed(named::changed::STATE);
    }

    /// A reply read at `generation` showed the session `rows` (id, rev):
    /// the read set records them (the row rule).
    pub fn shown(&mut self, generation: u64, rows: impl IntoIterator<Item = (i64, i64)>) {
        self.changed(named::changed::STATE);
        let mut reads = sync::lock(&self.reads);
        for (id, rev) in rows {
            reads.record(generation, id, rev);
        }
    }

    /// The session's own write left `rows` (id, rev) at `generation`: the
    /// read set records them (the session knows what it wrote); seen does
    /// not move.
    pub fn wrote(&mut self, generation: u64, rows: impl IntoIterator<Item = (i64, i64)>) {
        self.changed(named::changed::STATE);
        let mut reads = sync::lock(&self.reads);
        for (id, rev) in rows {
            reads.record(generation, id, rev);
        }
    }

    /// The read set, for the writer thread's row checks.
    pub fn reads(&self) -> Arc<Mutex<ReadSet>> {
        self.reads.clone()
    }

    /// [`View::drop_block_holding`] for this session's block (a named
    /// session's is then kept on disk again).
    pub fn drop_block_holding(&mut self, ids: &std::collections::HashSet<i64>) -> bool {
        let dropped = self.view().drop_block_holding(ids);
        if dropped {
            self.changed(named::changed::BLOCK);
        }
        dropped
    }

    /// Drops the snapshot: the next inject rebuilds it (after the session's
    /// own writes, `compacted` and `refresh` — never after other sessions'
    /// writes or external edits).
    pub fn invalidate(&mut self) {
        {
            let mut view = self.view();
            view.snapshot = None;
            view.built = None;
        }
        self.changed(named::changed::BLOCK);
    }

    /// The session's own write: its block must show it — unless the
    /// session serves a hook-driven host, whose conversation keeps the
    /// block it was given (a changed block at a resume would be a second
    /// one): that block changes only at compaction, clear or refresh.
    pub fn wrote_block_content(&mut self) {
        if !self.named.as_ref().is_some_and(|n| n.hold_block) {
            self.invalidate();
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
///
/// # Errors
/// When the kernel gives no random bytes ([`crate::sys::random_bytes`]).
pub fn new_session_id() -> std::io::Result<String> {
    Ok(crate::sys::random_bytes()?
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frozen_block_is_dropped_only_when_it_shows_a_purged_memory() {
        let frozen = || {
            let mut view = View::new(3);
            view.snapshot = Some(Injection {
                block: "- the deploy runs at noon".into(),
                hash: "0".repeat(16),
                built_at_generation: 3,
                stats: memd_proto::InjectStats {
                    included: 2,
                    eligible: 2,
                    chars: 25,
                    budget: 2000,
                    cached: false,
                },
            });
            view.built = Some(Built {
                rows: vec![(1, 1), (2, 4)],
                at: "2026-12-07T00:00:00.000Z".into(),
            });
            view
        };
        let mut view = frozen();
        assert!(!view.drop_block_holding(&[3, 4].into()));
        assert!(!view.drop_block_holding(&Default::default()));
        let kept = frozen();
        assert_eq!(view.snapshot, kept.snapshot, "a block without them stays");
        assert_eq!(view.built, kept.built);
        assert!(view.drop_block_holding(&[9, 2].into()));
        assert!(view.snapshot.is_none() && view.built.is_none());
        assert!(
            !view.drop_block_holding(&[2].into()),
            "nothing left to drop"
        );
    }

    #[test]
    fn agents_reads_count_as_uses_and_a_persons_browsing_does_not() {
        let named = Reach::default();
        let anyone = Reach {
            every_namespace: true,
            every_owner: true,
        };
        for (via, reach, counts) in [
            ("mcp", named, true),
            ("hook", named, true),
            ("agent-cli", named, true),
            ("client", named, true),
            ("http", named, true),
            ("http", anyone, false),
            ("cli", named, false),
            ("viewer", named, false),
            ("viewer", anyone, false),
        ] {
            assert_eq!(counts_uses(via, reach), counts, "{via} {reach:?}");
        }
    }

    fn hello(seen: Option<u64>) -> Hello {
        Hello {
            protocol: memd_proto::PROTOCOL_VERSION,
            client_version: "test".into(),
            agent_id: "a".into(),
            namespace: "default".into(),
            policy: None,
            budget: None,
            seen_generation: seen,
            session: None,
            hold_block: false,
            previous_namespaces: Vec::new(),
        }
    }

    #[test]
    fn seen_starts_at_the_handshake_and_never_ahead_of_the_database() {
        let open = |seen| {
            Session::open(
                &hello(seen),
                10,
                DriftPolicy::Standard,
                4_000,
                64,
                &named::Registry::default(),
            )
            .unwrap()
        };
        assert_eq!(open(None).seen(), 10);
        assert_eq!(open(Some(7)).seen(), 7);
        assert_eq!(open(Some(99)).seen(), 10);
    }

    #[test]
    fn a_read_moves_seen_and_fills_the_read_set_an_own_write_only_fills_it() {
        use readset::RowView;
        let mut s = Session::open(
            &hello(None),
            10,
            DriftPolicy::Standard,
            4_000,
            64,
            &named::Registry::default(),
        )
        .unwrap();
        s.saw(12);
        s.shown(12, [(1, 3)]);
        assert_eq!(s.seen(), 12);
        s.saw(11);
        assert_eq!(s.seen(), 12, "seen never goes back");
        s.wrote(15, [(2, 1)]);
        assert_eq!(s.seen(), 12, "an own write is not a read");
        let reads = s.reads();
        let reads = reads.lock().unwrap();
        assert_eq!(reads.view(1), RowView::Read { rev: 3 });
        assert_eq!(reads.view(2), RowView::Read { rev: 1 });
        assert_eq!(reads.view(3), RowView::Unread { floor: 10 });
    }
}
