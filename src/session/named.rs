//! Named sessions: every connection that gives the same name in the same
//! namespace is one session — one frozen snapshot, one seen generation, one
//! read set — so separate processes (hook commands, one-shot CLI calls, an
//! MCP server that restarts) act as one agent session. A named session
//! ends on `memd session end NAME` or after `[session] idle_ttl` without a
//! connection; its snapshot goes with it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use memd_proto::DriftPolicy;

use super::View;
use super::ident::Who;
use super::readset::ReadSet;

/// What the connections of one named session share.
#[derive(Debug)]
pub struct Named {
    /// Its identity; the name is its session key.
    pub who: Arc<Who>,
    /// Drift policy (from the handshake that created it).
    pub policy: DriftPolicy,
    /// Inject budget (likewise).
    pub budget: u32,
    /// Seen generation and frozen block.
    pub view: Arc<Mutex<View>>,
    /// The rows it was shown.
    pub reads: Arc<Mutex<ReadSet>>,
    /// Connections now open.
    connections: AtomicUsize,
    /// When a connection last opened or closed.
    last_used: Mutex<Instant>,
}

impl Named {
    /// A new named session.
    pub fn new(who: Who, policy: DriftPolicy, budget: u32, view: View, reads: ReadSet) -> Named {
        Named {
            who: Arc::new(who),
            policy,
            budget,
            view: Arc::new(Mutex::new(view)),
            reads: Arc::new(Mutex::new(reads)),
            connections: AtomicUsize::new(0),
            last_used: Mutex::new(Instant::now()),
        }
    }

    fn touch(&self) {
        *self
            .last_used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Instant::now();
    }

    /// Open connections.
    pub fn connections(&self) -> usize {
        self.connections.load(Ordering::Relaxed)
    }

    /// Time since a connection last opened or closed.
    pub fn idle(&self) -> Duration {
        self.last_used
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .elapsed()
    }
}

/// A named session as `session list` shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
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
        let mut map = self
            .map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let named = map
            .entry((namespace.to_string(), name.to_string()))
            .or_insert_with(|| Arc::new(make()))
            .clone();
        named.connections.fetch_add(1, Ordering::Relaxed);
        named.touch();
        named
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
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&(namespace.to_string(), name.to_string()))
    }

    /// Named sessions (all namespaces).
    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// The named sessions of a namespace, by name.
    pub fn list(&self, namespace: &str) -> Vec<Summary> {
        let map = self
            .map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut out: Vec<Summary> = map
            .iter()
            .filter(|((ns, _), _)| ns == namespace)
            .map(|((_, name), n)| {
                let view = n
                    .view
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                Summary {
                    name: name.clone(),
                    agent: n.who.agent.clone(),
                    connections: n.connections(),
                    idle_secs: n.idle().as_secs(),
                    seen: view.seen,
                    has_block: view.snapshot.is_some(),
                }
            })
            .collect();
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Ends every named session with no connection idle for `ttl` or
    /// longer; returns them.
    pub fn expire(&self, ttl: Duration) -> Vec<Arc<Named>> {
        let mut map = self
            .map
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
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
            },
            DriftPolicy::Standard,
            4000,
            View::new(7),
            ReadSet::new(7, 16),
        )
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
        assert_eq!(r.list("p").len(), 1);
        r.leave(&a);
        r.leave(&b);
        assert_eq!(r.list("p")[0].connections, 0);
        assert!(r.end("p", "s").is_some());
        assert!(r.end("p", "s").is_none());
        assert!(r.list("p").is_empty());
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
