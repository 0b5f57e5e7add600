//! Pseudo-relevance feedback: words the best first-pass hits share that the
//! query did not say, searched for too, with a small weight (RM3 in
//! spirit). It finds what a question describes in other words — the best
//! hits' vocabulary — and helps questions whose answer spans several
//! memories. Pure: it picks the words and their weights; the search runs
//! them.

use std::collections::HashMap;

use super::words;

/// Feedback settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// First-pass hits the words are taken from.
    pub docs: usize,
    /// Words added.
    pub terms: usize,
    /// Weight of the strongest added word next to the query's own (0: no
    /// feedback).
    pub weight: f64,
}

/// The words to add and their weights, from the first pass's best hits.
///
/// `hits` are (score, id, content) with higher scores better. The best
/// `docs` hits each count with `exp(score − best)`, spread over their
/// words (a long memory's words count less each); stopwords, numbers and
/// words that are (or start like) a query word are left out. The `terms`
/// best words get `weight × acc / acc_max`.
pub fn expansion(
    hits: &[(f64, i64, &str)],
    query_words: &[String],
    s: Settings,
) -> Vec<(String, f64)> {
    if s.weight <= 0.0 || s.terms == 0 || s.docs == 0 || hits.is_empty() {
        return Vec::new();
    }
    let mut top: Vec<&(f64, i64, &str)> = hits.iter().collect();
    top.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| b.1.cmp(&a.1)));
    top.truncate(s.docs);
    let best = top[0].0;
    let mut acc: HashMap<String, f64> = HashMap::new();
    for (score, _, content) in top {
        let tokens = words::tokens(content);
        if tokens.is_empty() {
            continue;
        }
        let share = (score - best).exp() / tokens.len() as f64;
        for t in tokens {
            if words::is_stopword(&t)
                || t.chars().all(|c| c.is_ascii_digit())
                || query_words.iter().any(|q| words::same_word(q, &t))
            {
                continue;
            }
            *acc.entry(t).or_default() += share;
        }
    }
    let mut ranked: Vec<(String, f64)> = acc.into_iter().collect();
    ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(s.terms);
    let max = ranked.first().map_or(0.0, |(_, a)| *a);
    if max <= 0.0 {
        return Vec::new();
    }
    ranked
        .into_iter()
        .map(|(w, a)| (w, s.weight * a / max))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Settings = Settings {
        docs: 2,
        terms: 3,
        weight: 0.2,
    };

    #[test]
    fn words_of_the_best_hits_that_the_query_did_not_say() {
        let q = vec!["caroline".to_string(), "painting".to_string()];
        let hits = [
            (
                9.0,
                1,
                "Caroline: I painted a sunrise over the lake last week",
            ),
            (8.0, 2, "Caroline: the lake was calm, the sunrise was pink"),
            (1.0, 3, "Melanie: my kids love the zoo"),
        ];
        let e = expansion(&hits, &q, S);
        let words: Vec<&str> = e.iter().map(|(w, _)| w.as_str()).collect();
        // "painted" starts like "painting", "caroline" is said: both out;
        // stopwords and the third hit's words too.
        assert_eq!(words, ["lake", "sunrise", "last"]);
        assert!(
            (e[0].1 - 0.2).abs() < 1e-12,
            "the best word gets the weight"
        );
        assert!(e[2].1 < e[0].1);
        assert!(!words.contains(&"zoo"));
    }

    #[test]
    fn nothing_without_hits_or_weight() {
        let q = vec!["x".to_string()];
        assert!(expansion(&[], &q, S).is_empty());
        let hits = [(1.0, 1, "lake sunrise")];
        assert!(expansion(&hits, &q, Settings { weight: 0.0, ..S }).is_empty());
        assert!(expansion(&[(1.0, 1, "the 2023 of")], &q, S).is_empty());
    }
}
