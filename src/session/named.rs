//! Named sessions: every connection that gives the same name in the same
//! namespace is one session — one frozen snapshot, one seen generation, one
//! read set — so separate processes (hook commands, one-shot CLI calls, an
//! MCP server that restarts) act as one agent session. A named session
//! ends on `memd session end NAME` or after `[session] idle_ttl` without a
//! connection; its snapshot goes with it.
//!
//! Named sessions outlive the daemon: what changes in one is marked
//! ([`Named::take_changes`]) and kept on disk by the daemon
//! (`store::sessions`), and a daemon that starts again puts them back
//! ([`Registry::restore`]). Their last use is wall-clock time, so the idle
//! time counts across restarts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// What changed in a named session since it was last kept on disk.
pub mod changed {
    /// Seen generation, read set, connections or last use.
    pub const STATE: u8 = 1;
    /// The frozen block (built or dropped).
    pub const BLOCK: u8 = 2;
}

use memd_proto::DriftPolicy;

use super::View;
use super::ident::Who;
use super::readset::ReadSet;
use crate::sync;

/// What the connections of one named session share.
#[derive(Debug)]
pub struct Named {
    /// Its identity; the name is its session key.
    pub who: Arc<Who>,
    /// Drift policy (from the handshake that created it).
    pub policy: DriftPolicy,
    /// Inject budget (likewise).
    pub budget: u32,
    /// It serves a hook-driven host: its block changes only at compaction,
    /// clear or refresh, never because of a write (likewise).
    pub hold_block: bool,
    /// Seen generation and frozen block.
    pub view: Arc<Mutex<View>>,
    /// The rows it was shown.
    pub reads: Arc<Mutex<ReadSet>>,
    /// Connections now open.
    connections: AtomicUsize,
    /// When a connection last opened or closed.
    last_used: Mutex<SystemTime>,
    /// When it was created.
    pub created: SystemTime,
    /// What changed since it was last kept ([`changed`]).
    changes: AtomicU8,
    /// Held while its state is taken to be kept, so what is kept goes out
    /// in the order it was taken.
    keeping: Mutex<()>,
    /// It ended: a connection still open keeps it in memory, never on disk.
    ended: AtomicBool,
}

impl Named {
    /// A new named session.
    pub fn new(
        who: Who,
        policy: DriftPolicy,
        budget: u32,
        hold_block: bool,
        view: View,
        reads: ReadSet,
    ) -> Named {
        Named {
            who: Arc::new(who),
            policy,
            budget,
            hold_block,
            view: Arc::new(Mutex::new(view)),
            reads: Arc::new(Mutex::new(reads)),
            connections: AtomicUsize::new(0),
            last_used: Mutex::new(SystemTime::now()),
            created: SystemTime::now(),
            changes: AtomicU8::new(changed::STATE | changed::BLOCK),
            keeping: Mutex::new(()),
            ended: AtomicBool::new(false),
        }
    }

    /// A named session kept on disk by an earlier daemon: nothing to keep
    /// until it changes again.
    pub fn restored(mut self, created: SystemTime, last_used: SystemTime) -> Named {
        self.created = created;
        self.last_used = Mutex::new(last_used);
        self.changes = AtomicU8::new(0);
        self
    }

    /// The same session in `namespace` (its project's namespace moved):
    /// the same block, seen generation, read set and times, to be kept anew.
    fn moved(&self, namespace: &str) -> Named {
        Named {
            who: Arc::new(Who {
                namespace: namespace.to_string(),
                ..(*self.who).clone()
            }),
            policy: self.policy,
            budget: self.budget,
            hold_block: self.hold_block,
            view: self.view.clone(),
            reads: self.reads.clone(),
            connections: AtomicUsize::new(0),
            last_used: Mutex::new(self.last_used()),
            created: self.created,
            changes: AtomicU8::new(changed::STATE | changed::BLOCK),
            keeping: Mutex::new(()),
            ended: AtomicBool::new(false),
        }
    }

    fn touch(&self) {
        *sync::lock(&self.last_used) = SystemTime::now();
        self.mark(changed::STATE);
    }

    /// [`View::drop_block_holding`] for this session's block, marked to be
    /// kept on disk again when dropped (a purge reaching a named session
    /// that no connection holds).
    pub fn drop_block_holding(&self, ids: &std::collections::HashSet<i64>) -> bool {
        let dropped = sync::lock(&self.view).drop_block_holding(ids);
        if dropped {
            self.mark(changed::BLOCK);
        }
        dropped
    }

    /// Marks what changed ([`changed`]).
    pub fn mark(&self, what: u8) {
        self.changes.fetch_or(what, Ordering::AcqRel);
    }

    /// What changed since the last call, and the guard to hold while its
    /// state is taken and sent to be kept; `None` when nothing changed.
    pub fn take_changes(&self) -> Option<(u8, std::sync::MutexGuard<'_, ()>)> {
        let guard = self.keeping();
        if self.ended.load(Ordering::Acquire) {
            return None;
        }
        match self.changes.swap(0, Ordering::AcqRel) {
            0 => None,
            what => Some((what, guard)),
        }
    }

    /// Whether its block was built or dropped since it was last kept.
    pub fn block_changed(&self) -> bool {
        self.changes.load(Ordering::Acquire) & changed::BLOCK != 0
    }

    fn keeping(&self) -> std::sync::MutexGuard<'_, ()> {
        sync::lock(&self.keeping)
    }

    /// Marks it ended and returns the guard under which its removal from
    /// the disk is sent: nothing of it is kept after that.
    pub fn mark_ended(&self) -> std::sync::MutexGuard<'_, ()> {
        let guard = self.keeping();
        self.ended.store(true, Ordering::Release);
        guard
    }

    /// When a connection last opened or closed.
    pub fn last_used(&self) -> SystemTime {
        *sync::lock(&self.last_used)
    }

    /// Open connections.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// Time since a connection last opened or closed.
    pub fn idle(&self) -> Duration {
        SystemTime::now()
            .duration_since(self.last_used())
            .unwrap_or(Duration::ZERO)
    }
}

/// A named session as `session list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Agent id of the connection that created it.
    pub agent: String,
    /// Open connections.
    pub connections: usize,
    /// Seconds since a connection last opened or closed.
    pub idle_secs: u64,
    /// Its seen generation.
    pub seen: u64,
    /// Whether it holds a frozen block.
    pub has_block: bool,
}

/// The daemon's named sessions, by namespace and name.
#[derive(Debug, Default)]
pub struct Registry {
    map: Mutex<HashMap<(String, String), Arc<Named>>>,
}

impl Registry {
    /// Joins the named session (creating it with `make` when there is
    /// none): one more connection.
    pub fn join(&self, namespace: &str, name: &str, make: impl FnOnce() -> Named) -> Arc<Named> {
        let mut map = sync::lock(&self.map);
        let named = map
            .entry((namespace.to_string(), name.to_string()))
            .or_insert_with(|| Arc::new(make()))
            .clone();
        named.connections.fetch_add(1, Ordering::Relaxed);
        named.touch();
        named
    }

    /// Puts back a named session an earlier daemon kept (see
    /// [`Named::restored`]); one already there (joined since) stays.
    pub fn restore(&self, named: Named) -> Arc<Named> {
        let mut map = sync::lock(&self.map);
        map.entry((named.who.namespace.clone(), named.who.session.clone()))
            .or_insert_with(|| Arc::new(named))
            .clone()
    }

    /// Every named session (all namespaces).
    pub fn all(&self) -> Vec<Arc<Named>> {
        sync::lock(&self.map).values().cloned().collect()
    }

    /// A connection of `named` closed.
    pub fn leave(&self, named: &Named) {
        named.connections.fetch_sub(1, Ordering::Relaxed);
        named.touch();
    }

    /// Ends a named session: its snapshot and read set are dropped (open
    /// connections keep theirs until they close). Returns it, if it was
    /// there.
    pub fn end(&self, namespace: &str, name: &str) -> Option<Arc<Named>> {
        sync::lock(&self.map).remove(&(namespace.to_string(), name.to_string()))
    }

    /// Moves the named sessions of namespace `from` that no connection
    /// holds to `to` (a project's namespace moved), unless `to` has one of
    /// that name already; returns the names moved. A session still
    /// connected stays where its connection opened it.
    pub fn move_namespace(&self, from: &str, to: &str) -> Vec<String> {
        let mut map = sync::lock(&self.map);
        let names: Vec<String> = map
            .iter()
            .filter(|((ns, name), n)| {
                ns == from
                    && n.connections() == 0
                    && !map.contains_key(&(to.to_string(), name.clone()))
            })
            .map(|((_, name), _)| name.clone())
            .collect();
        for name in &names {
            if let Some(old) = map.remove(&(from.to_string(), name.clone())) {
                map.insert((to.to_string(), name.clone()), Arc::new(old.moved(to)));
            }
        }
        names
    }

    /// Named sessions (all namespaces).
    #[cfg(test)]
    pub fn count(&self) -> usize {
        sync::lock(&self.map).len()
    }

    /// The named session `name` of `namespace`, if it exists (it is not
    /// joined).
    pub fn find(&self, namespace: &str, name: &str) -> Option<Arc<Named>> {
        sync::lock(&self.map)
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// The named sessions of a namespace (of every namespace with `None`),
    /// by namespace and name.
    pub fn list(&self, namespace: Option<&str>) -> Vec<Summary> {
        let map = sync::lock(&self.map);
        let mut out: Vec<Summary> = map
            .iter()
            .filter(|((ns, _), _)| namespace.is_none_or(|want| ns == want))
            .map(|((ns, name), n)| {
                let view = sync::lock(&n.view);
                Summary {
                    namespace: ns.clone(),
                    name: name.clone(),
                    agent: n.who.agent.clone(),
                    connections: n.connections(),
                    idle_secs: n.idle().as_secs(),
                    seen: view.seen,
                    has_block: view.snapshot.is_some(),
                }
            })
            .collect();
        out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        out
    }

    /// Ends every named session with no connection idle for `ttl` or
    /// longer; returns them.
    pub fn expire(&self, ttl: Duration) -> Vec<Arc<Named>> {
        let mut map = sync::lock(&self.map);
        let gone: Vec<(String, String)> = map
            .iter()
            .filter(|(_, n)| n.connections() == 0 && n.idle() >= ttl)
            .map(|(k, _)| k.clone())
            .collect();
        gone.into_iter().filter_map(|k| map.remove(&k)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn make(ns: &str, name: &str) -> Named {
        Named::new(
            Who {
                namespace: ns.into(),
                agent: "a".into(),
                session: name.into(),
                reach: crate::session::ident::Reach::default(),
            },
            DriftPolicy::Standard,
            4000,
            false,
            View::new(7),
            ReadSet::new(7, 16),
        )
    }

    #[test]
    fn a_moved_namespace_takes_its_idle_sessions_along() {
        let r = Registry::default();
        let idle = r.join("old", "idle", || make("old", "idle"));
        sync::lock(&idle.view).seen = 42;
        r.leave(&idle);
        let busy = r.join("old", "busy", || make("old", "busy"));
        r.join("new", "taken", || make("new", "taken"));
        let taken = r.join("old", "taken", || make("old", "taken"));
        r.leave(&taken);
        assert_eq!(r.move_namespace("old", "new"), ["idle".to_string()]);
        let moved = r.find("new", "idle").unwrap();
        assert_eq!(moved.who.namespace, "new");
        assert_eq!(sync::lock(&moved.view).seen, 42);
        assert!(moved.take_changes().is_some());
        assert!(r.find("old", "idle").is_none());
        assert!(r.find("old", "busy").is_some() && r.find("old", "taken").is_some());
        drop(busy);
    }

    #[test]
    fn one_name_in_one_namespace_is_one_session() {
        let r = Registry::default();
        let a = r.join("p", "s", || make("p", "s"));
        let b = r.join("p", "s", || panic!("must join the existing one"));
        assert!(Arc::ptr_eq(&a, &b));
        assert_eq!(a.connections(), 2);
        let other = r.join("q", "s", || make("q", "s"));
        assert!(!Arc::ptr_eq(&a, &other), "namespaces do not share");
        assert_eq!(r.list(Some("p")).len(), 1);
        r.leave(&a);
        r.leave(&b);
        assert_eq!(r.list(Some("p"))[0].connections, 0);
        assert!(r.end("p", "s").is_some());
        assert!(r.end("p", "s").is_none());
        assert!(r.list(Some("p")).is_empty());
    }

    #[test]
    fn only_idle_sessions_without_connections_expire() {
        let r = Registry::default();
        let held = r.join("p", "held", || make("p", "held"));
        let left = r.join("p", "left", || make("p", "left"));
        r.leave(&left);
        let gone = r.expire(Duration::ZERO);
        assert_eq!(gone.len(), 1);
        assert_eq!(gone[0].who.session, "left");
        assert_eq!(r.count(), 1);
        r.leave(&held);
        assert!(
            r.expire(Duration::from_secs(3600)).is_empty(),
            "not idle long enough"
        );
    }
}
