//! The lifecycle rules, pure: given a row's facts and the settings, what a
//! sweep does to it.
//!
//! - **Access decay.** `access_score` is a use count that fades: every use
//!   adds 1 (access tracking), and each sweep multiplies it by
//!   `0.5^(days since the previous sweep / half_life)` (30 days by default).
//!   Applied at every sweep with the time since the previous one, this is the
//!   same as `score × 0.5^(days since each use / half_life)` summed over the
//!   uses. Pinned rows and evergreen categories (preference, convention) do
//!   not decay.
//! - **Tiers.** A promoted, unpinned, non-evergreen row whose decayed score is
//!   below `demote_below` and that has not changed for `demote_after_days`
//!   moves down a tier: 1 → 2 → 3 → archived (each step resets the wait,
//!   since the move itself is a change). A candidate whose confidence reached
//!   `promote_confidence` and that was used `promote_uses` times is promoted.
//! - **Scope limits.** Over the limit of its namespace, scope and owner
//!   (project 2000, agent 500, session 200), the active rows with the lowest
//!   retention score are archived — never deleted, never pinned ones — until
//!   the count is at the limit.

use serde::Deserialize;

/// Lifecycle settings (`[lifecycle]`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LifecycleConfig {
    /// Hours between scheduled sweeps (0: only `memd sweep`).
    pub interval_hours: f64,
    /// Sweep once when the daemon starts.
    pub at_start: bool,
    /// Half-life of `access_score`, in days.
    pub access_half_life_days: f64,
    /// Categories whose access score does not decay and that are not
    /// demoted.
    pub evergreen: Vec<String>,
    /// Decayed access score under which a row moves down a tier.
    pub demote_below: f64,
    /// Days without a change before a row may move down a tier.
    pub demote_after_days: f64,
    /// Confidence from which a used candidate is promoted.
    pub promote_confidence: f64,
    /// Uses after which a confident candidate is promoted.
    pub promote_uses: i64,
    /// Most active rows per namespace, scope and owner.
    pub limits: ScopeLimits,
    /// Days after which session-scope rows of sessions that have ended are
    /// archived.
    pub session_rows_days: f64,
    /// Rows per transaction.
    pub chunk: usize,
}

/// Limits per scope.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScopeLimits {
    /// Project scope.
    pub project: usize,
    /// Per agent.
    pub agent: usize,
    /// Per session.
    pub session: usize,
}

impl Default for ScopeLimits {
    fn default() -> Self {
        ScopeLimits {
            project: 2_000,
            agent: 500,
            session: 200,
        }
    }
}

impl ScopeLimits {
    /// The limit of a scope (unknown scopes: project's).
    pub fn of(&self, scope: &str) -> usize {
        match scope {
            "agent" => self.agent,
            "session" => self.session,
            _ => self.project,
        }
    }
}

impl Default for LifecycleConfig {
    fn default() -> Self {
        LifecycleConfig {
            interval_hours: 6.0,
            at_start: false,
            access_half_life_days: 30.0,
            evergreen: vec!["preference".into(), "convention".into()],
            demote_below: 0.1,
            demote_after_days: 30.0,
            promote_confidence: 0.7,
            promote_uses: 2,
            limits: ScopeLimits::default(),
            session_rows_days: 7.0,
            chunk: 32,
        }
    }
}

/// What a sweep knows of a row.
#[derive(Debug, Clone, PartialEq)]
pub struct Facts {
    /// Category.
    pub category: String,
    /// Tier 1..3.
    pub tier: i64,
    /// `candidate`, `promoted` or `archived`.
    pub status: String,
    /// Pinned.
    pub pinned: bool,
    /// Access score after this sweep's decay.
    pub access_score: f64,
    /// Days since the last meaningful change.
    pub idle_days: f64,
    /// Confidence.
    pub confidence: f64,
    /// Uses.
    pub use_count: i64,
}

/// A sweep's move for one row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Move {
    /// Nothing.
    Stay,
    /// Down to this tier.
    Demote(i64),
    /// Out of the active set (tier 3 fell further).
    Archive,
    /// Candidate → promoted.
    Promote,
}

/// Most rows a sweep writes in one transaction, whatever the config says.
pub const MAX_ROWS_PER_TRANSACTION: usize = 250;

impl LifecycleConfig {
    /// Rows a sweep writes per transaction: `chunk`, within 1 and
    /// [`MAX_ROWS_PER_TRANSACTION`].
    pub fn rows_per_transaction(&self) -> usize {
        self.chunk.clamp(1, MAX_ROWS_PER_TRANSACTION)
    }

    /// Whether `category` is evergreen.
    pub fn is_evergreen(&self, category: &str) -> bool {
        self.evergreen.iter().any(|c| c == category)
    }

    /// The factor a sweep multiplies `access_score` by after `days`.
    pub fn decay_factor(&self, days: f64) -> f64 {
        if self.access_half_life_days <= 0.0 || days <= 0.0 {
            1.0
        } else {
            0.5f64.powf(days / self.access_half_life_days)
        }
    }

    /// The tier move of one row.
    pub fn tier_move(&self, f: &Facts) -> Move {
        if f.pinned || f.status == "archived" {
            return Move::Stay;
        }
        if f.status == "candidate" {
            return if f.confidence >= self.promote_confidence && f.use_count >= self.promote_uses {
                Move::Promote
            } else {
                Move::Stay
            };
        }
        if self.is_evergreen(&f.category)
            || f.access_score >= self.demote_below
            || f.idle_days < self.demote_after_days
        {
            return Move::Stay;
        }
        match f.tier {
            t if t < 3 => Move::Demote(t + 1),
            _ => Move::Archive,
        }
    }
}

/// What keeps a row when its scope is over the limit: its decayed uses,
/// its importance, its confirmations, its tier (higher is kept).
pub fn retention(access_score: f64, importance: &str, confirmed: i64, tier: i64) -> f64 {
    let importance = match importance {
        "high" => 2.0,
        "medium" => 1.0,
        _ => 0.0,
    };
    access_score + importance + 0.5 * confirmed as f64 - 0.5 * (tier - 1) as f64
}

/// Rows to archive in one scope group: the lowest retention scores among
/// the unpinned rows (older first on ties) until the active count is at
/// the limit. `rows` are `(id, retention, pinned)`.
pub fn over_limit(rows: &[(i64, f64, bool)], limit: usize) -> Vec<i64> {
    let excess = rows.len().saturating_sub(limit);
    if excess == 0 {
        return Vec::new();
    }
    let mut unpinned: Vec<&(i64, f64, bool)> = rows.iter().filter(|r| !r.2).collect();
    unpinned.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
    unpinned.into_iter().take(excess).map(|r| r.0).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts() -> Facts {
        Facts {
            category: "fact".into(),
            tier: 1,
            status: "promoted".into(),
            pinned: false,
            access_score: 0.0,
            idle_days: 60.0,
            confidence: 1.0,
            use_count: 0,
        }
    }

    #[test]
    fn decay_factor_halves_per_half_life() {
        let c = LifecycleConfig::default();
        assert_eq!(c.decay_factor(0.0), 1.0);
        assert!((c.decay_factor(30.0) - 0.5).abs() < 1e-12);
        assert!((c.decay_factor(60.0) - 0.25).abs() < 1e-12);
    }

    #[test]
    fn tier_moves() {
        let c = LifecycleConfig::default();
        let cases: Vec<(Facts, Move)> = vec![
            (facts(), Move::Demote(2)),
            (Facts { tier: 2, ..facts() }, Move::Demote(3)),
            (Facts { tier: 3, ..facts() }, Move::Archive),
            (
                Facts {
                    pinned: true,
                    ..facts()
                },
                Move::Stay,
            ),
            (
                Facts {
                    category: "preference".into(),
                    ..facts()
                },
                Move::Stay,
            ),
            (
                Facts {
                    access_score: 0.5,
                    ..facts()
                },
                Move::Stay,
            ),
            (
                Facts {
                    idle_days: 3.0,
                    ..facts()
                },
                Move::Stay,
            ),
            (
                Facts {
                    status: "archived".into(),
                    ..facts()
                },
                Move::Stay,
            ),
            (
                Facts {
                    status: "candidate".into(),
                    confidence: 0.8,
                    use_count: 2,
                    ..facts()
                },
                Move::Promote,
            ),
            (
                Facts {
                    status: "candidate".into(),
                    confidence: 0.8,
                    use_count: 1,
                    ..facts()
                },
                Move::Stay,
            ),
            (
                Facts {
                    status: "candidate".into(),
                    confidence: 0.5,
                    use_count: 9,
                    ..facts()
                },
                Move::Stay,
            ),
        ];
        for (f, want) in cases {
            assert_eq!(c.tier_move(&f), want, "{f:?}");
        }
    }

    #[test]
    fn scope_limit_archives_the_lowest_scores_never_pins() {
        let rows = vec![
            (1, 5.0, false),
            (2, 0.5, false),
            (3, 0.1, true),
            (4, 0.5, false),
            (5, 3.0, false),
        ];
        assert_eq!(over_limit(&rows, 5), Vec::<i64>::new());
        assert_eq!(over_limit(&rows, 3), vec![2, 4]);
        assert_eq!(over_limit(&rows, 1), vec![2, 4, 5, 1]);
        assert!(retention(0.0, "high", 0, 1) > retention(1.5, "low", 0, 1));
        assert!(retention(1.0, "medium", 0, 1) > retention(1.0, "medium", 0, 3));
    }

    #[test]
    fn a_transaction_never_holds_more_than_250_rows() {
        let with = |chunk| LifecycleConfig {
            chunk,
            ..LifecycleConfig::default()
        };
        assert_eq!(with(100_000).rows_per_transaction(), 250);
        assert_eq!(with(0).rows_per_transaction(), 1);
        assert_eq!(LifecycleConfig::default().rows_per_transaction(), 32);
    }
}
