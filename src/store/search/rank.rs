//! Ranking: relevance (BM25, normalized to the best hit), recency decay per
//! category, and a boost for pinned memories. Pure rules over plain values
//! and an explicit "now", so tests can set the clock.
//!
//! `final = relevance × ((1 − w) + w × decay) + pin_boost·pinned`, where
//! `decay = 0.5^(age_days / half_life)` from the memory's `updated_at`, `w`
//! is `[search] decay_weight`, and pinned memories and evergreen categories
//! (preference, convention, identity by default) do not decay.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::json;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Ranking settings (`[search]` in the config file).
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RankConfig {
    /// How much recency counts (0: not at all, 1: fully).
    pub decay_weight: f64,
    /// Half-life of a memory's weight, in days.
    pub half_life_days: f64,
    /// Half-lives of particular categories, in days.
    pub half_life: HashMap<String, f64>,
    /// Categories that never decay.
    pub evergreen: Vec<String>,
    /// Added to the score of a pinned memory.
    pub pin_boost: f64,
    /// `auto` mode falls back to fuzzy matching when lexical search finds
    /// fewer hits than this.
    pub fuzzy_below: usize,
    /// BM25 weight of a memory's thread context (its neighbours' text) next
    /// to its own text (1.0).
    pub context_weight: f64,
    /// BM25 weight of the memory's date as words ("8 May 2023").
    pub date_weight: f64,
    /// Pseudo-relevance feedback: first-pass hits whose words are added.
    pub feedback_docs: usize,
    /// Pseudo-relevance feedback: words added.
    pub feedback_terms: usize,
    /// Pseudo-relevance feedback: weight of the strongest added word next
    /// to the query's own (0: off).
    pub feedback_weight: f64,
    /// A memory longer than this many words ranks lower in lexical search
    /// (0: no length rule): see [`length_factor`].
    pub long_words: usize,
    /// How much lower: its score × `(long_words / words) ^ long_exponent`.
    pub long_exponent: f64,
    /// `[search.hybrid]`: how hybrid search merges lexical and semantic.
    pub hybrid: super::fusion::HybridConfig,
    /// `[search.floor]`: per embedding model (its id, or the id's part
    /// before `@`), the least relevance (cosine) a hit of a search with a
    /// query vector must have to be returned ([`RankConfig::floor_for`]).
    pub floor: HashMap<String, f64>,
    /// `[search.nothing_below]`: per embedding model (as `floor`), the
    /// relevance the best match of the namespaces searched must reach for
    /// a search with a query vector to return any hit with a vector
    /// ([`RankConfig::floors_for`]): below it the model relates nothing
    /// there to the query.
    pub nothing_below: HashMap<String, f64>,
    /// A memory holding at least this share of a query's words (as
    /// lexical search counts them: stopwords dropped, a word's forms
    /// alike) is related to the query by its words, whatever the model
    /// says: it passes the floor, and a search that finds one is not
    /// held to `nothing_below` (0: off).
    pub related_words: f64,
}

impl Default for RankConfig {
    fn default() -> Self {
        RankConfig {
            decay_weight: 0.3,
            half_life_days: 90.0,
            half_life: HashMap::from([("episode".to_string(), 14.0), ("task".to_string(), 30.0)]),
            evergreen: vec!["preference".into(), "convention".into(), "identity".into()],
            pin_boost: 0.2,
            fuzzy_below: 3,
            context_weight: 0.7,
            date_weight: 2.0,
            feedback_docs: 3,
            feedback_terms: 10,
            feedback_weight: 0.0,
            long_words: 100,
            long_exponent: 0.5,
            hybrid: Default::default(),
            floor: default_floors(),
            nothing_below: HashMap::from([(
                format!("local:{}", crate::embed::DEFAULT_MODEL),
                LOCAL_MODEL_NOTHING_BELOW,
            )]),
            related_words: RELATED_WORDS,
        }
    }
}

/// The floor of the local model, chosen by leave-one-conversation-out on
/// conversation benchmarks (`memd-bench floor`, bench/RESULTS.md "Relevance
/// floor").
pub const LOCAL_MODEL_FLOOR: f64 = 0.11;

/// The local model's `nothing_below`, chosen as its floor was (`memd-bench
/// floor --dump`, bench/RESULTS.md "Relevance floor").
pub const LOCAL_MODEL_NOTHING_BELOW: f64 = 0.36;

/// The share of a query's words that relates a memory to it without the
/// model, chosen with `nothing_below` (bench/RESULTS.md "Relevance floor").
pub const RELATED_WORDS: f64 = 0.5;

/// A search's relevance rules for its embedding model.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Floor {
    /// The least relevance of a hit returned.
    pub hit: f64,
    /// The least relevance of the best match of the namespaces searched:
    /// below it, no hit with a vector is returned unless one is related by
    /// its words.
    pub nothing_below: f64,
    /// The share of the query's words that relates a memory to it
    /// ([`RankConfig::related_words`]; 0: off).
    pub related_words: f64,
}

/// The floors memd knows: the local model's.
fn default_floors() -> HashMap<String, f64> {
    HashMap::from([(
        format!("local:{}", crate::embed::DEFAULT_MODEL),
        LOCAL_MODEL_FLOOR,
    )])
}

/// The table's entry for the whole model id, else for its part before
/// `@`, else 0.
fn per_model(table: &HashMap<String, f64>, model: &str) -> f64 {
    let short = model.split_once('@').map_or(model, |(name, _)| name);
    table
        .get(model)
        .or_else(|| table.get(short))
        .copied()
        .unwrap_or(0.0)
}

impl RankConfig {
    /// The relevance floor of embedding model `model` (its id, e.g.
    /// `local:all-MiniLM-L6-v2@…`): the table's entry for the whole id, else
    /// for its part before `@`, else 0 (a model memd has not measured keeps
    /// every hit).
    pub fn floor_for(&self, model: &str) -> f64 {
        per_model(&self.floor, model)
    }

    /// Both relevance rules of embedding model `model`, each found as
    /// [`RankConfig::floor_for`] finds the floor.
    pub fn floors_for(&self, model: &str) -> Floor {
        Floor {
            hit: per_model(&self.floor, model),
            nothing_below: per_model(&self.nothing_below, model),
            related_words: self.related_words,
        }
    }
}

/// The factor a match score of a memory of `words` words is multiplied by:
/// 1 up to `long_words` words, then `(long_words / words) ^ exponent`.
///
/// BM25 normalizes term frequency by length, but a long memory still holds
/// more of any question's words: in a transcript, an assistant's long turns
/// restate the user's words and crowd out the short turns that said them
/// first. Memories up to `long_words` (facts, decisions, conversation turns)
/// are ranked as before; longer ones give way in proportion.
pub fn length_factor(words: usize, long_words: usize, exponent: f64) -> f64 {
    if long_words == 0 || words <= long_words || exponent <= 0.0 {
        return 1.0;
    }
    (long_words as f64 / words as f64).powf(exponent)
}

/// The parts of one hit's score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Parts {
    /// Raw match score (BM25, higher is better; fuzzy: its own blend).
    pub raw: f64,
    /// `raw` divided by the best `raw` of the result set (0..1).
    pub relevance: f64,
    /// Recency factor (1: fresh or evergreen).
    pub decay: f64,
    /// Pin boost applied.
    pub pin: f64,
    /// The final score.
    pub score: f64,
}

impl Parts {
    /// The `--explain` object.
    pub fn explain(&self, age_days: f64) -> String {
        json!({
            "raw": self.raw,
            "relevance": self.relevance,
            "decay": self.decay,
            "age_days": age_days,
            "pin_boost": self.pin,
            "score": self.score,
        })
        .to_string()
    }
}

/// Days between `updated_at` and `now` (0 when unreadable or in the future).
pub fn age_days(updated_at: &str, now: OffsetDateTime) -> f64 {
    OffsetDateTime::parse(updated_at, &Rfc3339)
        .map_or(0.0, |t| ((now - t).as_seconds_f64() / 86_400.0).max(0.0))
}

impl RankConfig {
    /// The recency factor of a memory.
    pub fn decay(&self, category: &str, age_days: f64) -> f64 {
        if self.evergreen.iter().any(|c| c == category) {
            return 1.0;
        }
        let half = self
            .half_life
            .get(category)
            .copied()
            .unwrap_or(self.half_life_days);
        if half <= 0.0 {
            return 1.0;
        }
        0.5f64.powf(age_days / half)
    }

    /// Scores a hit whose raw score is `raw` in a result set whose best raw
    /// score is `best`.
    pub fn score(&self, raw: f64, best: f64, category: &str, age_days: f64, pinned: bool) -> Parts {
        let relevance = if best > 0.0 {
            (raw / best).clamp(0.0, 1.0)
        } else {
            0.0
        };
        // Pinned memories do not decay.
        let decay = if pinned {
            1.0
        } else {
            self.decay(category, age_days)
        };
        let w = self.decay_weight.clamp(0.0, 1.0);
        let pin = if pinned { self.pin_boost } else { 0.0 };
        Parts {
            raw,
            relevance,
            decay,
            pin,
            score: relevance * ((1.0 - w) + w * decay) + pin,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn a_floor_is_found_by_the_whole_model_id_or_its_name() {
        let mut c = RankConfig::default();
        let local = format!("local:{}@abc123", crate::embed::DEFAULT_MODEL);
        assert_eq!(c.floor_for(&local), LOCAL_MODEL_FLOOR);
        assert_eq!(c.floor_for("openai:text-embedding-3-small"), 0.0);
        c.floor.insert("openai:text-embedding-3-small".into(), 0.4);
        c.floor.insert(local.clone(), 0.2);
        assert_eq!(c.floor_for("openai:text-embedding-3-small"), 0.4);
        assert_eq!(c.floor_for(&local), 0.2);
        assert_eq!(
            c.floors_for(&local),
            Floor {
                hit: 0.2,
                nothing_below: LOCAL_MODEL_NOTHING_BELOW,
                related_words: RELATED_WORDS,
            }
        );
        assert_eq!(
            c.floors_for("openai:text-embedding-3-small").nothing_below,
            0.0
        );
    }

    #[test]
    fn decay_halves_per_half_life_and_skips_evergreen() {
        let c = RankConfig::default();
        assert_eq!(c.decay("fact", 0.0), 1.0);
        assert!((c.decay("fact", 90.0) - 0.5).abs() < 1e-9);
        assert!((c.decay("fact", 180.0) - 0.25).abs() < 1e-9);
        assert!((c.decay("episode", 14.0) - 0.5).abs() < 1e-9);
        assert_eq!(c.decay("preference", 10_000.0), 1.0);
        assert_eq!(c.decay("convention", 10_000.0), 1.0);
    }

    #[test]
    fn ordering_with_an_injected_clock() {
        let c = RankConfig::default();
        let now = datetime!(2026-06-01 00:00:00 UTC);
        let fresh = age_days("2026-05-31T00:00:00.000Z", now);
        let old = age_days("2025-06-01T00:00:00.000Z", now);
        assert!((fresh - 1.0).abs() < 1e-9);
        assert!((old - 365.0).abs() < 1e-9);
        // Same relevance: the fresh fact ranks above the old fact…
        let a = c.score(5.0, 5.0, "fact", fresh, false);
        let b = c.score(5.0, 5.0, "fact", old, false);
        assert!(a.score > b.score);
        // …an old preference does not decay…
        let p = c.score(5.0, 5.0, "preference", old, false);
        assert!(p.score > a.score);
        // …a pinned old fact beats an unpinned fresh one.
        let pinned = c.score(5.0, 5.0, "fact", old, true);
        assert!(pinned.score > a.score);
        // Relevance still dominates: a much better match stays first.
        let weak_fresh = c.score(1.0, 5.0, "fact", fresh, false);
        assert!(b.score > weak_fresh.score);
    }

    #[test]
    fn only_memories_longer_than_the_threshold_give_way() {
        assert_eq!(length_factor(10, 100, 0.5), 1.0);
        assert_eq!(length_factor(100, 100, 0.5), 1.0);
        assert!((length_factor(400, 100, 0.5) - 0.5).abs() < 1e-12);
        assert!((length_factor(200, 100, 1.0) - 0.5).abs() < 1e-12);
        // Longer is never better.
        assert!(length_factor(1_000, 100, 0.5) < length_factor(400, 100, 0.5));
        // Off: no threshold, or no exponent.
        assert_eq!(length_factor(5_000, 0, 0.5), 1.0);
        assert_eq!(length_factor(5_000, 100, 0.0), 1.0);
    }

    #[test]
    fn unreadable_times_do_not_decay() {
        let now = datetime!(2026-06-01 00:00:00 UTC);
        assert_eq!(age_days("yesterday", now), 0.0);
        assert_eq!(age_days("2027-01-01T00:00:00Z", now), 0.0);
    }
}
