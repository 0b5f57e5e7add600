//! The drift decision, as pure rules over plain values.
//!
//! A session has a *seen* generation and a read set. Before a write, the
//! writer thread gathers [`Facts`] inside the write transaction and asks
//! [`decide`] (the rules on the session's whole view); then, for each row
//! the request changes, it gathers [`RowFacts`] and asks [`decide_row`].
//!
//! - `standard` (default): the external rule — a destructive request is
//!   refused when the last external epoch is newer than seen, an append goes
//!   through with a notice — and the row rule: a destructive request is
//!   refused when its target row was changed by anyone but this session
//!   after the version of it the session last saw.
//! - `external`: the external rule alone.
//! - `strict`: every mutating request is refused when an external change or
//!   another session's commit in the same namespace is newer than seen (the
//!   daemon's own commits never count); when the commit log no longer reaches
//!   back to seen, refuse — the safe side. The row rule applies too.
//! - `off`: never refused.

use memd_proto::{DriftPolicy, DriftRule};

use super::log::LogGap;
use crate::session::readset::RowView;

/// What a request does to existing data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteKind {
    /// Adds a row; cannot discard anything (`add`).
    Append,
    /// Changes or removes what exists (`update`, `forget`, `supersede`, a
    /// replacing import).
    Destructive,
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
        /// The rule that refused.
        rule: DriftRule,
    },
}

/// Decides whether a session may write, from its whole view.
pub fn decide(policy: DriftPolicy, kind: WriteKind, f: &Facts) -> Decision {
    let external = (f.external_epoch > f.seen).then_some(f.external_epoch);
    match policy {
        DriftPolicy::Off => Decision::Allow,
        DriftPolicy::External | DriftPolicy::Standard => match (external, kind) {
            (None, _) => Decision::Allow,
            (Some(_), WriteKind::Append) => Decision::Notice,
            (Some(cause), WriteKind::Destructive) => Decision::Refuse {
                cause,
                rule: DriftRule::External,
            },
        },
        DriftPolicy::Strict => {
            let other = match f.other_session {
                Ok(other) => other,
                // The log cannot prove nobody wrote: the safe side.
                Err(LogGap) => Some(f.current),
            };
            match (external, other) {
                (None, None) => Decision::Allow,
                (Some(e), o) if o.is_none_or(|o| e >= o) => Decision::Refuse {
                    cause: e,
                    rule: DriftRule::External,
                },
                (_, o) => Decision::Refuse {
                    cause: o.unwrap_or(f.current),
                    rule: DriftRule::Strict,
                },
            }
        }
    }
}

/// What the writer knows of one row a session asks to change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowFacts {
    /// What the session saw of the row.
    pub view: RowView,
    /// The row's rev in the write transaction.
    pub rev_now: i64,
    /// Generation of the row's last change.
    pub changed_generation: u64,
    /// The commit log names this session as the author of that change.
    pub changed_by_self: bool,
}

/// The row rule: whether a session may change a row (`standard` and
/// `strict`; the other policies never refuse on it). The session's own
/// last change never refuses; otherwise a row the session read must still
/// be at the rev it read, and a row it did not read must not have changed
/// after its read set's floor.
pub fn decide_row(policy: DriftPolicy, f: &RowFacts) -> bool {
    match policy {
        DriftPolicy::Off | DriftPolicy::External => true,
        DriftPolicy::Standard | DriftPolicy::Strict => {
            f.changed_by_self
                || match f.view {
                    RowView::Read { rev } => rev == f.rev_now,
                    RowView::Unread { floor } => f.changed_generation <= floor,
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

    fn refuse(cause: u64, rule: DriftRule) -> Decision {
        Decision::Refuse { cause, rule }
    }

    #[test]
    fn decision_table() {
        use DriftRule::External as Ext;
        let cases = [
            // policy, kind, seen, external epoch, other session, expected
            (External, Destructive, 5, 0, Ok(None), Decision::Allow),
            (External, Destructive, 5, 5, Ok(None), Decision::Allow),
            (External, Destructive, 5, 6, Ok(None), refuse(6, Ext)),
            (External, Append, 5, 6, Ok(None), Decision::Notice),
            (External, Append, 7, 6, Ok(None), Decision::Allow),
            (External, Destructive, 5, 0, Ok(Some(9)), Decision::Allow),
            (External, Destructive, 5, 0, Err(LogGap), Decision::Allow),
            (Standard, Destructive, 5, 6, Ok(None), refuse(6, Ext)),
            (Standard, Append, 5, 6, Ok(None), Decision::Notice),
            (Standard, Destructive, 5, 0, Ok(Some(9)), Decision::Allow),
            (Standard, Append, 5, 0, Err(LogGap), Decision::Allow),
            (Strict, Append, 5, 6, Ok(None), refuse(6, Ext)),
            (
                Strict,
                Append,
                5,
                0,
                Ok(Some(9)),
                refuse(9, DriftRule::Strict),
            ),
            (
                Strict,
                Destructive,
                5,
                7,
                Ok(Some(9)),
                refuse(9, DriftRule::Strict),
            ),
            (Strict, Destructive, 5, 8, Ok(Some(6)), refuse(8, Ext)),
            (Strict, Append, 5, 0, Ok(None), Decision::Allow),
            (
                Strict,
                Append,
                5,
                0,
                Err(LogGap),
                refuse(20, DriftRule::Strict),
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

    #[test]
    fn row_rule_table() {
        let read = |rev| RowView::Read { rev };
        let unread = |floor| RowView::Unread { floor };
        let cases = [
            // policy, view, rev now, changed at, by self, allowed
            (Standard, read(3), 3, 40, false, true),
            (Standard, read(2), 3, 40, false, false),
            (Standard, read(2), 3, 40, true, true),
            // A rev that went back (an older file restored) is a change.
            (Standard, read(4), 3, 40, false, false),
            (Standard, unread(30), 3, 30, false, true),
            (Standard, unread(30), 3, 31, false, false),
            (Standard, unread(30), 3, 31, true, true),
            (Strict, read(2), 3, 40, false, false),
            (Strict, unread(30), 1, 12, false, true),
            (External, read(2), 3, 40, false, true),
            (External, unread(30), 3, 31, false, true),
            (Off, read(2), 3, 40, false, true),
        ];
        for (policy, view, rev_now, changed_generation, changed_by_self, want) in cases {
            let f = RowFacts {
                view,
                rev_now,
                changed_generation,
                changed_by_self,
            };
            assert_eq!(decide_row(policy, &f), want, "{policy:?} {f:?}");
        }
    }
}
