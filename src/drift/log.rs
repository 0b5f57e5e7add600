//! The commit log: who made each recent generation.
//!
//! The writer appends one entry per commit that moved the generation — a
//! session's, the daemon's own (sweeps, embeddings), and each external
//! change it detected — as the range of generations it produced. A trigger
//! cannot know the session, so this log is how a row's last change (its
//! `changed_generation`) is traced back to an author; the `strict` policy
//! also asks it for other sessions' commits. It is complete for every
//! generation above its floor; older ones are unknown.

use std::collections::VecDeque;
use std::sync::Arc;

use crate::session::ident::Who;

/// Who produced a range of generations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Committer {
    /// A session.
    Session(Arc<Who>),
    /// The daemon itself.
    Daemon,
    /// A writer outside memd.
    External,
    /// Changes pulled from the team's PostgreSQL: other machines' sessions
    /// and PostgreSQL's other writers (each row's author is recorded with
    /// it; for `strict`, such a commit is another session's).
    Team,
    /// Another machine's session, as a pulled row names it.
    Remote {
        /// The machine.
        machine: String,
        /// Its agent.
        agent: String,
        /// Its session.
        session: String,
    },
}

/// One commit: it moved the generation from `from` to `to`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// Generation before the commit.
    pub from: u64,
    /// Generation after it.
    pub to: u64,
    /// Its author.
    pub by: Committer,
}

/// The log's answer when it has been trimmed past the generation asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogGap;

/// Who made generation `g`, as far as the log knows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attribution {
    /// The log names the author.
    Known(Committer),
    /// The log no longer reaches back to it.
    Unknown,
}

/// Recent commits, oldest first. Complete for every generation above
/// `floor`.
#[derive(Debug, Clone)]
pub struct CommitLog {
    entries: VecDeque<Commit>,
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

    /// Appends a commit that moved the generation from `from` to `to`,
    /// evicting the oldest when full. Commits that moved nothing are not
    /// logged.
    pub fn push(&mut self, from: u64, to: u64, by: Committer) {
        if to <= from {
            return;
        }
        if self.entries.len() == self.capacity
            && let Some(old) = self.entries.pop_front()
        {
            self.floor = self.floor.max(old.to);
        }
        self.entries.push_back(Commit { from, to, by });
    }

    /// Drops the newest `n` entries (a batch that did not commit).
    pub fn unpush(&mut self, n: usize) {
        for _ in 0..n {
            self.entries.pop_back();
        }
    }

    /// Number of entries.
    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.entries.len()
    }

    /// The newest commit by another session in `namespace` newer than
    /// `seen`, if any (the `strict` rule).
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
            .take_while(|c| c.to > seen)
            .find(|c| match &c.by {
                Committer::Session(who) => who.session != session && who.namespace == namespace,
                // Pulled commits touch only shared namespaces, whose writes
                // PostgreSQL checks for `strict` itself.
                _ => false,
            })
            .map(|c| c.to))
    }

    /// Who made generation `g`. A generation above the floor that no
    /// entry covers was not committed by the daemon: it is external.
    pub fn author_of(&self, g: u64) -> Attribution {
        if g <= self.floor {
            return Attribution::Unknown;
        }
        // Entries are in generation order: the first whose `to` reaches g.
        let at = self.entries.partition_point(|c| c.to < g);
        match self.entries.get(at) {
            Some(c) if c.from < g => Attribution::Known(c.by.clone()),
            _ => Attribution::Known(Committer::External),
        }
    }

    /// Forgets everything before `generation` (after a restore or a replaced
    /// file: older history is meaningless).
    pub fn reset(&mut self, generation: u64) {
        self.entries.clear();
        self.floor = generation;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str, namespace: &str) -> Committer {
        Committer::Session(Arc::new(Who {
            namespace: namespace.into(),
            agent: "agent".into(),
            session: id.into(),
            reach: crate::session::ident::Reach::default(),
        }))
    }

    #[test]
    fn finds_other_sessions_in_the_namespace() {
        let mut log = CommitLog::new(10, 100);
        log.push(10, 11, session("a", "ns"));
        log.push(11, 12, session("b", "other"));
        log.push(12, 13, Committer::Daemon);
        log.push(13, 14, session("a", "ns"));
        assert_eq!(log.newest_other_since(10, "a", "ns"), Ok(None));
        assert_eq!(log.newest_other_since(10, "b", "ns"), Ok(Some(14)));
        assert_eq!(log.newest_other_since(14, "b", "ns"), Ok(None));
        assert_eq!(log.newest_other_since(9, "b", "ns"), Err(LogGap));
    }

    #[test]
    fn attributes_each_generation_of_a_range() {
        let mut log = CommitLog::new(10, 100);
        log.push(10, 13, session("a", "ns"));
        log.push(15, 16, Committer::Daemon);
        log.push(16, 16, Committer::Daemon); // moved nothing: not logged
        assert_eq!(log.count(), 2);
        assert_eq!(log.author_of(10), Attribution::Unknown);
        for g in 11..=13 {
            assert_eq!(log.author_of(g), Attribution::Known(session("a", "ns")));
        }
        // 14 and 15: nobody in the daemon committed them.
        assert_eq!(log.author_of(14), Attribution::Known(Committer::External));
        assert_eq!(log.author_of(15), Attribution::Known(Committer::External));
        assert_eq!(log.author_of(16), Attribution::Known(Committer::Daemon));
        assert_eq!(log.author_of(17), Attribution::Known(Committer::External));
    }

    #[test]
    fn eviction_raises_the_floor() {
        let mut log = CommitLog::new(0, 2);
        log.push(0, 1, session("a", "ns"));
        log.push(1, 2, session("a", "ns"));
        log.push(2, 3, session("a", "ns"));
        assert_eq!(log.count(), 2);
        assert_eq!(log.newest_other_since(0, "b", "ns"), Err(LogGap));
        assert_eq!(log.author_of(1), Attribution::Unknown);
        assert_eq!(log.newest_other_since(1, "b", "ns"), Ok(Some(3)));
        log.unpush(1);
        assert_eq!(log.newest_other_since(1, "b", "ns"), Ok(Some(2)));
        log.reset(50);
        assert_eq!(log.newest_other_since(49, "b", "ns"), Err(LogGap));
        assert_eq!(log.newest_other_since(50, "b", "ns"), Ok(None));
    }
}
