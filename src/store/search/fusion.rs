//! Hybrid search: how the lexical and the semantic rankings are merged
//! (pure).
//!
//! - `minmax` (the default): `w × lexical + (1 − w) × cosine`, each
//!   stretched over its ranking's range (`(x − worst) / (best − worst)`;
//!   `w` = 0.6). Cosines lie close together: stretched, they separate.
//! - `weighted`: the same sum, each score divided by the best of its
//!   ranking.
//! - `rrf` (reciprocal rank fusion): `Σ 1 / (k + rank)` over the rankings a
//!   row appears in (`k` = 60). It ignores how much better one hit is than
//!   the next, so a weak semantic ranking pulls strong keyword hits down.
//!
//! In the two sums a lexical hit outside the semantic top counts with its
//! own cosine. `minmax` is the default because it scored best on the
//! retrieval evaluation (bench/RESULTS.md, "Retrieval quality").
//!
//! In every fusion the semantic ranking's weight is scaled by its
//! [`confidence`] in the search at hand: how far its best cosine stands out
//! from the cosines of all the memories searched.

use std::collections::HashMap;

use memd_proto::MatchKind;
use serde::Deserialize;

use super::Candidate;
use crate::embed::vectors::Mix;

/// How hybrid merges the rankings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Fusion {
    /// Weighted sum of scores divided by the best of their ranking.
    Weighted,
    /// Reciprocal rank fusion.
    Rrf,
    /// Weighted sum of scores normalized to their ranking's range (min-max):
    /// cosines lie close together, so dividing by the best leaves them
    /// little say; stretched over their range they separate.
    #[default]
    Minmax,
}

/// `[search.hybrid]` settings.
#[derive(Debug, Clone, PartialEq, serde::Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HybridConfig {
    /// `minmax`, `weighted` or `rrf`.
    pub fusion: Fusion,
    /// Weight of the lexical score in `weighted` (the semantic one gets the
    /// rest).
    pub lexical_weight: f64,
    /// `k` of reciprocal rank fusion.
    pub rrf_k: f64,
    /// The semantic ranking counts only when its best hit's cosine stands
    /// out from the cosines of every memory searched: not at all below this
    /// many standard deviations above their mean …
    pub semantic_from: f64,
    /// … fully from this many (in between, in proportion). See
    /// [`confidence`].
    pub semantic_full: f64,
    /// A memory of a thread is found by its vector mixed with its
    /// neighbours' ([`Mix`]): the weight of each of the two nearest …
    pub thread_near: f64,
    /// … and of each of the two after those …
    pub thread_far: f64,
    /// … fully for memories up to this many bytes, in proportion beyond.
    pub thread_short: usize,
}

impl Default for HybridConfig {
    fn default() -> Self {
        HybridConfig {
            fusion: Fusion::Minmax,
            lexical_weight: 0.6,
            rrf_k: 60.0,
            semantic_from: 2.0,
            semantic_full: 3.0,
            thread_near: 0.25,
            thread_far: 0.1,
            thread_short: 100,
        }
    }
}

impl HybridConfig {
    /// How a threaded memory's neighbours count in semantic search.
    pub fn thread_mix(&self) -> Mix {
        Mix {
            near: self.thread_near.max(0.0) as f32,
            far: self.thread_far.max(0.0) as f32,
            short: self.thread_short,
        }
    }
}

/// How much the semantic ranking counts in one search (0..1), from `z`:
/// how many standard deviations its best cosine lies above the mean cosine
/// of every memory searched (`None`: too few memories to tell, and it
/// counts fully).
///
/// A question whose words some memory shares closely stands out; a
/// question the model cannot place gives a best cosine like many others,
/// and fusing that ranking only moves the lexical hits around. So the
/// semantic weight of the fusion is scaled by this, and the rest goes to
/// the lexical ranking: a search the model cannot help is a lexical
/// search.
pub fn confidence(cfg: &HybridConfig, z: Option<f64>) -> f64 {
    let Some(z) = z else { return 1.0 };
    if cfg.semantic_full <= cfg.semantic_from {
        return if z >= cfg.semantic_from { 1.0 } else { 0.0 };
    }
    ((z - cfg.semantic_from) / (cfg.semantic_full - cfg.semantic_from)).clamp(0.0, 1.0)
}

/// Merges two rankings (each best first) into candidates whose `raw` is
/// the fused score, each saying how it matched: `Hybrid` when both found
/// it. `cosine` gives a row's cosine when the semantic ranking does not
/// hold it. `confidence` ([`confidence`]) scales the semantic ranking's
/// weight; the lexical ranking gets the rest.
pub fn fuse(
    cfg: &HybridConfig,
    lexical: Vec<Candidate>,
    semantic: Vec<Candidate>,
    cosine: impl Fn(i64) -> Option<f64>,
    confidence: f64,
) -> Vec<(Candidate, MatchKind)> {
    let confidence = confidence.clamp(0.0, 1.0);
    let best_lex = lexical.iter().map(|c| c.raw).fold(0.0, f64::max);
    let best_sem = semantic.iter().map(|c| c.raw).fold(0.0, f64::max);
    // The floor each score is measured from: 0, or the ranking's worst
    // score for min-max.
    let floor = |list: &[Candidate]| match cfg.fusion {
        Fusion::Minmax => list.iter().map(|c| c.raw).fold(f64::INFINITY, f64::min),
        _ => 0.0,
    };
    let (low_lex, low_sem) = (floor(&lexical), floor(&semantic));
    let norm_with = |x: f64, low: f64, best: f64| {
        if best > low {
            ((x - low) / (best - low)).clamp(0.0, 1.0)
        } else if best > 0.0 {
            1.0
        } else {
            0.0
        }
    };
    let w = 1.0 - (1.0 - cfg.lexical_weight.clamp(0.0, 1.0)) * confidence;
    let k = cfg.rrf_k.max(0.0);
    let mut out: HashMap<i64, (Candidate, MatchKind)> = HashMap::new();
    for (rank, mut c) in lexical.into_iter().enumerate() {
        let lex = c.raw;
        c.raw = match cfg.fusion {
            Fusion::Rrf => 1.0 / (k + rank as f64 + 1.0),
            Fusion::Weighted | Fusion::Minmax => {
                w * norm_with(lex, low_lex, best_lex)
                    + (1.0 - w) * norm_with(cosine(c.id).unwrap_or(0.0), low_sem, best_sem)
            }
        };
        out.insert(c.id, (c, MatchKind::Lexical));
    }
    for (rank, c) in semantic.into_iter().enumerate() {
        let rrf = confidence / (k + rank as f64 + 1.0);
        match out.get_mut(&c.id) {
            Some((existing, kind)) => {
                *kind = MatchKind::Hybrid;
                if cfg.fusion == Fusion::Rrf {
                    existing.raw += rrf;
                }
            }
            None => {
                let sem = c.raw;
                let mut c = c;
                c.raw = match cfg.fusion {
                    Fusion::Rrf => rrf,
                    Fusion::Weighted | Fusion::Minmax => {
                        (1.0 - w) * norm_with(sem, low_sem, best_sem)
                    }
                };
                out.insert(c.id, (c, MatchKind::Semantic));
            }
        }
    }
    out.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(id: i64, raw: f64) -> Candidate {
        Candidate {
            id,
            raw,
            content: String::new(),
            subject: None,
            category: "note".into(),
            pinned: false,
            updated_at: String::new(),
        }
    }

    fn order(mut v: Vec<(Candidate, MatchKind)>) -> Vec<(i64, MatchKind)> {
        v.sort_by(|a, b| {
            b.0.raw
                .total_cmp(&a.0.raw)
                .then_with(|| b.0.id.cmp(&a.0.id))
        });
        v.into_iter().map(|(c, k)| (c.id, k)).collect()
    }

    #[test]
    fn rrf_rewards_rows_both_rankings_found() {
        let cfg = HybridConfig {
            fusion: Fusion::Rrf,
            ..Default::default()
        };
        let lex = vec![c(1, 9.0), c(2, 5.0)];
        let sem = vec![c(3, 0.8), c(2, 0.7)];
        let got = order(fuse(&cfg, lex, sem, |_| None, 1.0));
        assert_eq!(
            got,
            vec![
                (2, MatchKind::Hybrid),
                (3, MatchKind::Semantic),
                (1, MatchKind::Lexical)
            ]
        );
    }

    #[test]
    fn minmax_stretches_each_ranking_over_its_range() {
        let cfg = HybridConfig::default();
        assert_eq!(cfg.fusion, Fusion::Minmax);
        // Lexical 10 .. 2, semantic 0.8 .. 0.4: row 2 is the worst of both.
        let lex = vec![c(1, 10.0), c(2, 2.0), c(4, 6.0)];
        let sem = vec![c(3, 0.8), c(2, 0.4), c(4, 0.6)];
        let cosines = |id| match id {
            1 => Some(0.5),
            2 => Some(0.4),
            4 => Some(0.6),
            _ => None,
        };
        let fused = fuse(&cfg, lex, sem, cosines, 1.0);
        let raw = |id| fused.iter().find(|(c, _)| c.id == id).unwrap().0.raw;
        assert!((raw(1) - (0.6 + 0.4 * 0.25)).abs() < 1e-9);
        assert!(raw(2).abs() < 1e-9);
        assert!((raw(3) - 0.4).abs() < 1e-9);
        assert!((raw(4) - (0.6 * 0.5 + 0.4 * 0.5)).abs() < 1e-9);
        // One hit alone in a ranking counts fully.
        let one = fuse(&cfg, vec![c(5, 3.0)], vec![], |_| None, 1.0);
        assert!((one[0].0.raw - 0.6).abs() < 1e-9);
    }

    #[test]
    fn weighted_uses_normalized_scores_and_known_cosines() {
        let cfg = HybridConfig {
            fusion: Fusion::Weighted,
            ..Default::default()
        };
        // Row 1: best lexical, cosine 0.2 (outside the semantic top);
        // row 3: best semantic, no lexical match.
        let lex = vec![c(1, 10.0), c(2, 2.0)];
        let sem = vec![c(3, 0.8), c(2, 0.4)];
        let cosines = |id| match id {
            1 => Some(0.2),
            2 => Some(0.4),
            _ => None,
        };
        let fused = fuse(&cfg, lex, sem, cosines, 1.0);
        let raw = |id| fused.iter().find(|(c, _)| c.id == id).unwrap().0.raw;
        assert!((raw(1) - (0.6 + 0.4 * 0.25)).abs() < 1e-9);
        assert!((raw(2) - (0.6 * 0.2 + 0.4 * 0.5)).abs() < 1e-9);
        assert!((raw(3) - 0.4).abs() < 1e-9);
        assert_eq!(order(fused)[0], (1, MatchKind::Lexical));
    }

    #[test]
    fn confidence_grows_from_semantic_from_to_semantic_full() {
        let cfg = HybridConfig::default();
        assert_eq!((cfg.semantic_from, cfg.semantic_full), (2.0, 3.0));
        assert_eq!(confidence(&cfg, Some(1.0)), 0.0);
        assert_eq!(confidence(&cfg, Some(2.0)), 0.0);
        assert!((confidence(&cfg, Some(2.5)) - 0.5).abs() < 1e-12);
        assert_eq!(confidence(&cfg, Some(3.0)), 1.0);
        assert_eq!(confidence(&cfg, Some(9.0)), 1.0);
        // Too few memories to tell: the semantic ranking counts.
        assert_eq!(confidence(&cfg, None), 1.0);
        // A step when both bounds are equal.
        let step = HybridConfig {
            semantic_from: 3.0,
            semantic_full: 3.0,
            ..HybridConfig::default()
        };
        assert_eq!(confidence(&step, Some(2.9)), 0.0);
        assert_eq!(confidence(&step, Some(3.0)), 1.0);
    }

    /// Without confidence, the fusion keeps the lexical order: a semantic
    /// favourite cannot pass a lexical hit, and rows only the semantic
    /// ranking found come after every lexical one that scored.
    #[test]
    fn no_confidence_keeps_the_lexical_order() {
        let cfg = HybridConfig::default();
        let lex = vec![c(1, 9.0), c(2, 8.8), c(3, 8.6), c(5, 1.0)];
        let sem = vec![c(3, 0.9), c(4, 0.8), c(2, 0.1)];
        let cosines = |id| match id {
            1 | 2 => Some(0.1),
            3 => Some(0.9),
            5 => Some(0.0),
            _ => None,
        };
        let full = order(fuse(&cfg, lex.clone(), sem.clone(), cosines, 1.0));
        assert_eq!(
            full[0].0, 3,
            "with confidence the semantic ranking moves row 3 up"
        );
        let none = order(fuse(&cfg, lex, sem, cosines, 0.0));
        let ids: Vec<i64> = none.iter().map(|(id, _)| *id).collect();
        assert_eq!(&ids[..3], [1, 2, 3]);
        assert_eq!(ids.len(), 5);
    }

    #[test]
    fn empty_rankings() {
        let cfg = HybridConfig::default();
        assert!(fuse(&cfg, vec![], vec![], |_| None, 1.0).is_empty());
        let only_sem = fuse(&cfg, vec![], vec![c(4, 0.5)], |_| None, 1.0);
        assert_eq!(order(only_sem), vec![(4, MatchKind::Semantic)]);
    }
}
