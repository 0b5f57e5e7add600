//! The drift decision (DESIGN.md "Drift"), as pure rules over plain values.
//!
//! A session has a *seen* generation. Before a write, the writer thread
//! gathers [`Facts`] inside the write transaction and asks [`decide`]:
//!
//! - `external` (default): a destructive request is refused when the last
//!   external epoch is newer than seen; an append goes through with a notice.
//! - `strict`: every mutating request is refused when an external change or
//!   another session's commit in the same namespace is newer than seen (the
//!   daemon's own commits never count); when the commit log no longer reaches
//!   back to seen, refuse — the safe side.
//! - `off`: never refused.

use std::collections::VecDeque;

use memd_proto::DriftPolicy;

/// What a request does to existing data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Adds a row; cannot discard anything (`add`).
    Append,
    /// Changes or removes what exists (`update`, `forget`, `supersede`, a
    /// replacing import).
    Destructive,
}

/// A session's commit, as the writer logs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionCommit {
    /// Generation after the commit.
    pub generation: u64,
    /// Session key.
    pub session: String,
    /// Namespace written.
    pub namespace: String,
}

/// The log's answer when it has been trimmed past the generation asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogGap;

/// Recent session commits. Complete for every generation above `floor`.
#[derive(Debug, Clone)]
pub struct CommitLog {
    entries: VecDeque<SessionCommit>,
    floor: u64,
    capacity: usize,
}

impl CommitLog {
    /// An empty log that is complete from `floor` on (the generation at
    /// start-up: earlier commits are unknown).
    pub fn new(floor: u64, capacity: usize) -> CommitLog {
        CommitLog {
            entries: VecDeque::with_capacity(capacity.min(4096)),
            floor,
            capacity: capacity.max(1),
        }
    }

    /// Appends a commit, evicting the oldest when full.
    pub fn push(&mut self, c: SessionCommit) {
        if self.entries.len() == self.capacity
            && let Some(old) = self.entries.pop_front()
        {
            self.floor = self.floor.max(old.generation);
        }
        self.entries.push_back(c);
    }

    /// Drops the newest `n` entries (a batch that did not commit).
    pub fn unpush(&mut self, n: usize) {
        for _ in 0..n {
            self.entries.pop_back();
        }
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The newest commit by another session in `namespace` newer than
    /// `seen`, if any.
    ///
    /// # Errors
    /// [`LogGap`] when the log no longer covers `seen`.
    pub fn newest_other_since(
        &self,
        seen: u64,
        session: &str,
        namespace: &str,
    ) -> Result<Option<u64>, LogGap> {
        if seen < self.floor {
            return Err(LogGap);
        }
        Ok(self
            .entries
            .iter()
            .rev()
            .take_while(|c| c.generation > seen)
            .find(|c| c.session != session && c.namespace == namespace)
            .map(|c| c.generation))
    }

    /// Forgets everything before `generation` (after a restore or a replaced
    /// file: older history is meaningless).
    pub fn reset(&mut self, generation: u64) {
        self.entries.clear();
        self.floor = generation;
    }
}

/// What the writer knows when a session asks to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Facts {
    /// The session's seen generation.
    pub seen: u64,
    /// Newest generation known to hold an external change (0: none).
    pub external_epoch: u64,
    /// Newest commit of another session in the same namespace newer than
    /// seen; `Err` when the log does not reach back to seen.
    pub other_session: Result<Option<u64>, LogGap>,
    /// The generation now, inside the write transaction.
    pub current: u64,
}

/// The verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead.
    Allow,
    /// Go ahead, and tell the session its view is stale (an append under
    /// `external`).
    Notice,
    /// Refuse; `cause` is the generation of the change the session did not
    /// see (backups are shared per cause).
    Refuse {
        /// Generation of the unseen change.
        cause: u64,
    },
}

/// Decides whether a session may write.
pub fn decide(policy: DriftPolicy, kind: WriteKind, f: &Facts) -> Decision {
    let external = (f.external_epoch > f.seen).then_some(f.external_epoch);
    match policy {
        DriftPolicy::Off => Decision::Allow,
        DriftPolicy::External => match (external, kind) {
            (None, _) => Decision::Allow,
            (Some(_), WriteKind::Append) => Decision::Notice,
            (Some(cause), WriteKind::Destructive) => Decision::Refuse { cause },
        },
        DriftPolicy::Strict => {
            let other = match f.other_session {
                Ok(other) => other,
                // The log cannot prove nobody wrote: the safe side.
                Err(LogGap) => Some(f.current),
            };
            match external.into_iter().chain(other).max() {
                Some(cause) => Decision::Refuse { cause },
                None => Decision::Allow,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DriftPolicy::*;
    use WriteKind::*;

    fn facts(seen: u64, external_epoch: u64, other: Result<Option<u64>, LogGap>) -> Facts {
        Facts {
            seen,
            external_epoch,
            other_session: other,
            current: 20,
        }
    }

    #[test]
    fn decision_table() {
        let cases = [
            // policy, kind, seen, external epoch, other session, expected
            (External, Destructive, 5, 0, Ok(None), Decision::Allow),
            (External, Destructive, 5, 5, Ok(None), Decision::Allow),
            (
                External,
                Destructive,
                5,
                6,
                Ok(None),
                Decision::Refuse { cause: 6 },
            ),
            (External, Append, 5, 6, Ok(None), Decision::Notice),
            (External, Append, 7, 6, Ok(None), Decision::Allow),
            (External, Destructive, 5, 0, Ok(Some(9)), Decision::Allow),
            (External, Destructive, 5, 0, Err(LogGap), Decision::Allow),
            (
                Strict,
                Append,
                5,
                6,
                Ok(None),
                Decision::Refuse { cause: 6 },
            ),
            (
                Strict,
                Append,
                5,
                0,
                Ok(Some(9)),
                Decision::Refuse { cause: 9 },
            ),
            (
                Strict,
                Destructive,
                5,
                7,
                Ok(Some(9)),
                Decision::Refuse { cause: 9 },
            ),
            (
                Strict,
                Destructive,
                5,
                8,
                Ok(Some(6)),
                Decision::Refuse { cause: 8 },
            ),
            (Strict, Append, 5, 0, Ok(None), Decision::Allow),
            (
                Strict,
                Append,
                5,
                0,
                Err(LogGap),
                Decision::Refuse { cause: 20 },
            ),
            (Off, Destructive, 5, 9, Ok(Some(9)), Decision::Allow),
            (Off, Append, 5, 9, Err(LogGap), Decision::Allow),
        ];
        for (policy, kind, seen, epoch, other, want) in cases {
            assert_eq!(
                decide(policy, kind, &facts(seen, epoch, other)),
                want,
                "{policy:?} {kind:?} seen {seen} epoch {epoch} other {other:?}"
            );
        }
    }

    fn commit(generation: u64, session: &str, namespace: &str) -> SessionCommit {
        SessionCommit {
            generation,
            session: session.into(),
            namespace: namespace.into(),
        }
    }

    #[test]
    fn log_finds_other_sessions_in_the_namespace() {
        let mut log = CommitLog::new(10, 100);
        log.push(commit(11, "a", "ns"));
        log.push(commit(12, "b", "other"));
        log.push(commit(13, "a", "ns"));
        assert_eq!(log.newest_other_since(10, "a", "ns"), Ok(None));
        assert_eq!(log.newest_other_since(10, "b", "ns"), Ok(Some(13)));
        assert_eq!(log.newest_other_since(11, "b", "ns"), Ok(Some(13)));
        assert_eq!(log.newest_other_since(13, "b", "ns"), Ok(None));
        assert_eq!(log.newest_other_since(9, "b", "ns"), Err(LogGap));
    }

    #[test]
    fn eviction_raises_the_floor() {
        let mut log = CommitLog::new(0, 2);
        log.push(commit(1, "a", "ns"));
        log.push(commit(2, "a", "ns"));
        log.push(commit(3, "a", "ns"));
        assert_eq!(log.len(), 2);
        assert_eq!(log.newest_other_since(0, "b", "ns"), Err(LogGap));
        assert_eq!(log.newest_other_since(1, "b", "ns"), Ok(Some(3)));
        log.unpush(1);
        assert_eq!(log.newest_other_since(1, "b", "ns"), Ok(Some(2)));
        log.reset(50);
        assert_eq!(log.newest_other_since(49, "b", "ns"), Err(LogGap));
        assert_eq!(log.newest_other_since(50, "b", "ns"), Ok(None));
    }
}
