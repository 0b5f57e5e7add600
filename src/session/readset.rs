//! A session's read set: for each row a reply showed the session, the rev
//! it showed and the generation of that read (the drift guard's row rule).
//!
//! Bounded: past `capacity` rows, the oldest reads go, and the set's
//! *floor* — the generation a row not in the set is judged against —
//! becomes the oldest read generation among the rows that went (before any
//! eviction it is the session's handshake generation). A row never read, or
//! evicted, then counts as seen in the version it had at the floor: a change
//! after the floor by anyone else refuses a destructive write, a change
//! before it does not.

use std::collections::HashMap;

/// What the session saw of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowView {
    /// A reply showed the row at this rev.
    Read {
        /// The rev shown.
        rev: i64,
    },
    /// The row is not in the set: judged against the floor.
    Unread {
        /// The set's floor.
        floor: u64,
    },
}

#[derive(Debug, Clone, Copy)]
struct Seen {
    rev: i64,
    at: u64,
}

/// Rows a session was shown, bounded.
#[derive(Debug)]
pub struct ReadSet {
    rows: HashMap<i64, Seen>,
    floor: u64,
    evicted: bool,
    capacity: usize,
}

impl ReadSet {
    /// An empty set for a session whose view starts at `floor`, holding at
    /// most `capacity` rows.
    pub fn new(floor: u64, capacity: usize) -> ReadSet {
        ReadSet {
            rows: HashMap::new(),
            floor,
            evicted: false,
            capacity: capacity.max(1),
        }
    }

    /// Rows held.
    #[cfg(test)]
    pub fn count(&self) -> usize {
        self.rows.len()
    }

    /// Records that a reply read at generation `at` showed row `id` at `rev`
    /// (a newer read of the row replaces an older one).
    pub fn record(&mut self, at: u64, id: i64, rev: i64) {
        match self.rows.get_mut(&id) {
            Some(seen) if seen.at > at => {}
            Some(seen) => *seen = Seen { rev, at },
            None => {
                self.rows.insert(id, Seen { rev, at });
                if self.rows.len() > self.capacity {
                    self.evict();
                }
            }
        }
    }

    /// Drops the oldest eighth of the rows (at least one) and lowers the
    /// floor to the oldest read among them.
    fn evict(&mut self) {
        let n = (self.capacity / 8).max(1).min(self.rows.len());
        let mut by_age: Vec<(u64, i64)> = self.rows.iter().map(|(id, s)| (s.at, *id)).collect();
        by_age.select_nth_unstable(n - 1);
        let oldest = by_age[..n]
            .iter()
            .map(|(at, _)| *at)
            .min()
            .unwrap_or(self.floor);
        for (_, id) in &by_age[..n] {
            self.rows.remove(id);
        }
        self.floor = if self.evicted {
            self.floor.min(oldest)
        } else {
            oldest
        };
        self.evicted = true;
    }

    /// What the session saw of row `id`.
    pub fn view(&self, id: i64) -> RowView {
        match self.rows.get(&id) {
            Some(seen) => RowView::Read { rev: seen.rev },
            None => RowView::Unread { floor: self.floor },
        }
    }

    /// What the set holds, to be kept on disk: its floor, whether it ever
    /// evicted, and each row's (id, rev, read generation).
    pub fn export(&self) -> (u64, bool, Vec<(i64, i64, u64)>) {
        let mut rows: Vec<(i64, i64, u64)> =
            self.rows.iter().map(|(id, s)| (*id, s.rev, s.at)).collect();
        rows.sort_unstable();
        (self.floor, self.evicted, rows)
    }

    /// A set as [`ReadSet::export`] gave it (capacity from the settings in
    /// force; rows past it are evicted as usual).
    pub fn restore(
        floor: u64,
        evicted: bool,
        capacity: usize,
        rows: impl IntoIterator<Item = (i64, i64, u64)>,
    ) -> ReadSet {
        let mut set = ReadSet::new(floor, capacity);
        set.evicted = evicted;
        for (id, rev, at) in rows {
            set.record(at, id, rev);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_is_remembered_and_a_newer_one_wins() {
        let mut set = ReadSet::new(10, 100);
        assert_eq!(set.view(1), RowView::Unread { floor: 10 });
        set.record(12, 1, 3);
        assert_eq!(set.view(1), RowView::Read { rev: 3 });
        set.record(15, 1, 4);
        assert_eq!(set.view(1), RowView::Read { rev: 4 });
        // An answer read earlier that arrives late changes nothing.
        set.record(13, 1, 3);
        assert_eq!(set.view(1), RowView::Read { rev: 4 });
    }

    #[test]
    fn an_exported_set_comes_back_the_same() {
        let mut set = ReadSet::new(5, 4);
        for id in 0..6 {
            set.record(10 + id as u64, id, 2);
        }
        let (floor, evicted, rows) = set.export();
        let back = ReadSet::restore(floor, evicted, 4, rows.clone());
        assert_eq!(back.export(), (floor, evicted, rows));
        assert_eq!(back.view(0), set.view(0));
        assert_eq!(back.view(5), RowView::Read { rev: 2 });
    }

    #[test]
    fn eviction_keeps_the_newest_reads_and_sets_the_floor_to_the_oldest_evicted() {
        let mut set = ReadSet::new(5, 16);
        for id in 0..16 {
            set.record(100 + id as u64, id, 1);
        }
        assert_eq!(set.view(0), RowView::Read { rev: 1 });
        set.record(200, 99, 1);
        // 16 / 8 = 2 rows went: the reads at 100 and 101.
        assert_eq!(set.count(), 15);
        assert_eq!(set.view(0), RowView::Unread { floor: 100 });
        assert_eq!(set.view(1), RowView::Unread { floor: 100 });
        assert_eq!(set.view(2), RowView::Read { rev: 1 });
        // Later evictions never raise the floor.
        for id in 300..340 {
            set.record(300, id, 1);
        }
        assert!(set.count() <= 16);
        assert_eq!(set.view(2), RowView::Unread { floor: 100 });
    }
}
