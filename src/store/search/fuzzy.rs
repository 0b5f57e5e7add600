//! Fuzzy search: typos and substrings, through the FTS index's own
//! vocabulary (`fts5vocab`), so there is no second index to store or keep in
//! sync — rows written by a `sqlite3` shell are found like any other.
//!
//! For each query word, terms of the vocabulary are candidates when they are
//! within a small edit distance (Damerau–Levenshtein, so a swapped pair of
//! letters is one edit; the word's last few letters may be dropped, as the
//! porter stemmer drops suffixes), or when they start with or contain the
//! word. Candidate terms are looked up by the word's first two letters (and
//! those two swapped), and by substring only when that finds nothing. The
//! hits of the expanded query are re-ranked by how closely their words match
//! the query's.

use std::collections::HashMap;

use rusqlite::Connection;

use super::super::StoreError;
use super::vocab::Terms;
use super::{Candidate, words};
use crate::gate::View;

/// Candidate terms kept per query word.
const TERMS_PER_WORD: usize = 6;
/// Shortest word matched fuzzily.
const MIN_WORD: usize = 3;

/// Optimal-string-alignment distance (Damerau–Levenshtein with adjacent
/// transpositions), giving up (returning `limit + 1`) as soon as the
/// distance must exceed `limit`. Three rolling rows, no allocation for words
/// of up to 63 characters.
pub fn osa_within(a: &[char], b: &[char], limit: usize) -> usize {
    let (n, m) = (a.len(), b.len());
    if n.abs_diff(m) > limit {
        return limit + 1;
    }
    if m >= 64 {
        return osa(a, b).min(limit + 1);
    }
    let mut prev2 = [0usize; 64];
    let mut prev = [0usize; 64];
    let mut cur = [0usize; 64];
    for (j, cell) in prev.iter_mut().enumerate().take(m + 1) {
        *cell = j;
    }
    for i in 1..=n {
        cur[0] = i;
        let mut row_min = cur[0];
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(prev2[j - 2] + 1);
            }
            cur[j] = v;
            row_min = row_min.min(v);
        }
        if row_min > limit {
            return limit + 1;
        }
        prev2[..=m].copy_from_slice(&prev[..=m]);
        prev[..=m].copy_from_slice(&cur[..=m]);
    }
    prev[m].min(limit + 1)
}

/// Optimal-string-alignment distance, unbounded.
pub fn osa(a: &[char], b: &[char]) -> usize {
    let (n, m) = (a.len(), b.len());
    let mut d = vec![vec![0usize; m + 1]; n + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=n {
        for j in 1..=m {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[n][m]
}

/// Edits allowed for a word of `len` characters.
fn allowed(len: usize) -> usize {
    match len {
        0..=3 => 0,
        4..=7 => 1,
        _ => 2,
    }
}

/// Shortest part left after dropping a suffix.
const MIN_STEM: usize = 4;

/// How close vocabulary term `term` is to query word `word` (1: the same, 0:
/// unrelated). Up to three final letters of the longer one may be dropped
/// first, as a stemmer drops suffixes ("networkng" ~ "network", "netwrok" ~
/// "networking").
pub fn similarity(word: &str, term: &str) -> f64 {
    let w: Vec<char> = word.chars().collect();
    similarity_chars(&w, word, term)
}

/// [`similarity`] with the word's characters already split out.
pub fn similarity_chars(w: &[char], word: &str, term: &str) -> f64 {
    if word == term {
        return 1.0;
    }
    let t_len = term.chars().count();
    if w.len() < MIN_WORD || t_len == 0 {
        return 0.0;
    }
    let limit = allowed(w.len());
    // Lengths too far apart for a typo plus a dropped suffix: only a
    // substring can match.
    if w.len().abs_diff(t_len) <= limit + 3 {
        let t: Vec<char> = term.chars().collect();
        // The stemmer turns a final y into i ("deploy" → "deploi").
        let mut t_alt = t.clone();
        if t_alt.last() == Some(&'i') {
            *t_alt.last_mut().expect("not empty") = 'y';
        }
        let mut best = osa_within(w, &t, limit).min(osa_within(w, &t_alt, limit));
        for drop in 1..=3usize {
            if best == 0 {
                break;
            }
            if w.len() > t.len() && w.len() - drop >= MIN_STEM.max(t.len().saturating_sub(1)) {
                let cut = &w[..w.len() - drop];
                best = best
                    .min(osa_within(cut, &t, limit))
                    .min(osa_within(cut, &t_alt, limit));
            }
            if t.len() > w.len() && t.len() - drop >= MIN_STEM.max(w.len().saturating_sub(1)) {
                best = best
                    .min(osa_within(w, &t[..t.len() - drop], limit))
                    .min(osa_within(w, &t_alt[..t_alt.len() - drop], limit));
            }
        }
        if best <= limit {
            let longest = w.len().max(t.len()) as f64;
            return (1.0 - best as f64 / longest).max(0.5);
        }
    }
    // Prefix or substring: "deplo" in "deploi", "kube" in "minikub" (the
    // stemmer dropped the final e).
    if w.len() >= 4 && contains_stemmed(term, word) {
        return 0.7;
    }
    0.0
}

/// Whether `term` contains `word`, or `word` without a final `e` or `s`
/// (which a stemmer drops).
fn contains_stemmed(term: &str, word: &str) -> bool {
    term.contains(word)
        || word
            .strip_suffix(['e', 's'])
            .is_some_and(|w| w.chars().count() >= 3 && term.contains(w))
}

/// Vocabulary terms close to each query word: `(term, similarity)`, best
/// first, at most a few per word.
///
/// Each word is looked up in steps, the next only when the last found
/// nothing: terms sharing its first two letters (or those two swapped);
/// every term of a close length (a typo in the first letters); terms that
/// contain it; terms its start overlaps where the stemmer cut off the rest
/// ("ployment" in "deploy", "ntainer" in "contain").
///
/// # Errors
/// SQLite errors.
pub fn expand(
    conn: &Connection,
    query_words: &[String],
    vocab: Option<&Terms>,
) -> Result<Vec<(String, f64)>, StoreError> {
    // Terms by prefix range: from the cached vocabulary, or through
    // fts5vocab; the whole list (for the later steps) is read once, and only
    // when a step needs it.
    let mut live = match vocab {
        Some(_) => None,
        None => {
            super::vocab::ensure_vocab(conn)?;
            Some(conn.prepare_cached(
                "SELECT term FROM temp.memd_vocab WHERE term >= ?1 AND term < ?2",
            )?)
        }
    };
    let mut range = |lower: &str, upper: &str| -> Result<Vec<String>, StoreError> {
        match (&mut live, vocab) {
            (Some(stmt), _) => Ok(stmt
                .query_map((lower, upper), |r| r.get::<_, String>(0))?
                .collect::<Result<Vec<_>, _>>()?),
            (None, Some(v)) => Ok(v.range(lower, upper).to_vec()),
            (None, None) => Ok(Vec::new()),
        }
    };
    let mut loaded: Option<Terms> = None;
    let mut out: HashMap<String, f64> = HashMap::new();
    for word in query_words {
        let chars: Vec<char> = word.chars().collect();
        if chars.len() < MIN_WORD {
            continue;
        }
        let mut prefixes = vec![chars[..2].iter().collect::<String>()];
        let swapped: String = [chars[1], chars[0]].iter().collect();
        if swapped != prefixes[0] {
            prefixes.push(swapped);
        }
        let mut found: Vec<(String, f64)> = Vec::new();
        for p in &prefixes {
            let upper = next_prefix(p);
            for t in range(p, &upper)? {
                let s = similarity_chars(&chars, word, &t);
                if s > 0.0 {
                    found.push((t, s));
                }
            }
        }
        if found.is_empty() && chars.len() >= 4 {
            // A typo in the first two letters ("focker", "dcker"): every
            // term of a length within reach, by the same measure.
            // (Lengths in bytes first: a cheap bound, as a character is at
            // most four bytes.)
            let reach = 4 * (allowed(chars.len()) + 3);
            found.extend(whole(conn, vocab, &mut loaded)?.iter().filter_map(|t| {
                if t.len().abs_diff(word.len()) > reach {
                    return None;
                }
                let s = similarity_chars(&chars, word, t);
                (s > 0.0).then(|| (t.clone(), s))
            }));
        }
        if found.is_empty() && chars.len() >= 4 {
            let needle = word.strip_suffix(['e', 's']).unwrap_or(word);
            let terms = match vocab {
                Some(v) => v.containing(needle, 200),
                None => conn
                    .prepare_cached(
                        "SELECT term FROM temp.memd_vocab WHERE instr(term, ?1) > 0 LIMIT 200",
                    )?
                    .query_map([needle], |r| r.get::<_, String>(0))?
                    .collect::<Result<Vec<_>, _>>()?,
            };
            found.extend(terms.into_iter().map(|t| (t, 0.7)));
        }
        if found.is_empty() {
            let heads = stem_overlaps(word);
            if !heads.is_empty() {
                found.extend(
                    whole(conn, vocab, &mut loaded)?
                        .iter()
                        .filter(|t| heads.iter().any(|h| ends_with_stem(t, h)))
                        .take(200)
                        .map(|t| (t.clone(), 0.65)),
                );
            }
        }
        found.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        found.truncate(TERMS_PER_WORD);
        for (t, s) in found {
            let e = out.entry(t).or_insert(0.0);
            *e = e.max(s);
        }
    }
    let mut terms: Vec<(String, f64)> = out.into_iter().collect();
    terms.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(terms)
}

/// The whole vocabulary: the cached one, or read once through fts5vocab
/// into `loaded`.
fn whole<'a>(
    conn: &Connection,
    vocab: Option<&'a Terms>,
    loaded: &'a mut Option<Terms>,
) -> Result<&'a [String], StoreError> {
    if let Some(v) = vocab {
        return Ok(&v.terms);
    }
    if loaded.is_none() {
        *loaded = Some(super::vocab::load(conn)?);
    }
    Ok(loaded.as_ref().map_or(&[][..], |t| &t.terms))
}

/// Endings the porter stemmer removes (and the letters it leaves changed),
/// longest first.
const SUFFIXES: &[&str] = &[
    "ational", "ations", "ation", "ements", "ement", "ments", "ment", "ness", "ings", "ing",
    "ions", "ion", "ities", "ity", "ers", "er", "ies", "ied", "ed", "es", "ly", "al", "ive", "ize",
    "ise", "able", "ible", "ful", "ous", "ence", "ance", "ent", "ant", "s", "e", "y",
];

/// Starts of `word` that a stemmed term may end with, when the rest of the
/// word is (the start of) a suffix the stemmer removes: "ployment" →
/// "ploy"; "ntainer" → "ntain". Each start keeps at least four letters.
fn stem_overlaps(word: &str) -> Vec<&str> {
    let mut heads: Vec<&str> = Vec::new();
    for (cut, _) in word.char_indices().skip(4) {
        let rest = &word[cut..];
        if rest.chars().count() <= 7 && SUFFIXES.iter().any(|s| s.starts_with(rest)) {
            heads.push(&word[..cut]);
        }
    }
    heads
}

/// Whether stemmed `term` ends with `head` (the stemmer turns a final y
/// into i: "deploi" ends with "ploy").
fn ends_with_stem(term: &str, head: &str) -> bool {
    term.ends_with(head)
        || head
            .strip_suffix('y')
            .is_some_and(|h| term.strip_suffix('i').is_some_and(|t| t.ends_with(h)))
}

/// The smallest string greater than every string starting with `p`.
fn next_prefix(p: &str) -> String {
    let mut chars: Vec<char> = p.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = char::from_u32(last as u32 + 1) {
            chars.push(next);
            return chars.into_iter().collect();
        }
    }
    String::from(char::MAX)
}

/// How well a memory's words match the query words: the mean, over query
/// words, of the best similarity to any of its words.
pub fn match_quality(query_words: &[String], text: &str) -> f64 {
    if query_words.is_empty() {
        return 0.0;
    }
    let tokens = words::tokens(text);
    let total: f64 = query_words
        .iter()
        .map(|q| {
            let qc: Vec<char> = q.chars().collect();
            tokens
                .iter()
                .map(|t| {
                    let s = similarity_chars(&qc, q, t);
                    // A longer word that starts with the query word matches it.
                    if s == 0.0 && q.chars().count() >= 4 && t.starts_with(q.as_str()) {
                        0.8
                    } else {
                        s
                    }
                })
                .fold(0.0, f64::max)
        })
        .sum();
    total / query_words.len() as f64
}

/// Fuzzy candidates: rows matching any vocabulary term close to a query
/// word, each with a raw score blending BM25 of the expanded query and the
/// match quality of its words.
///
/// # Errors
/// SQLite errors.
pub fn candidates(
    conn: &Connection,
    text: &str,
    view: &View,
    fetch: u32,
    vocab: Option<&Terms>,
    weights: &super::lexical::Weights,
) -> Result<Vec<Candidate>, StoreError> {
    let query_words = words::query_words(text);
    let terms = expand(conn, &query_words, vocab)?;
    if terms.is_empty() {
        return Ok(Vec::new());
    }
    let fts = terms
        .iter()
        .map(|(t, _)| super::words::phrase(t))
        .collect::<Vec<_>>()
        .join(" OR ");
    // Stems as query terms: FTS stems them again, which leaves stems alone
    // in all but rare cases.
    let mut rows = super::lexical::candidates(
        conn,
        &fts,
        view,
        fetch,
        &super::lexical::Scoring::bm25(weights),
    )?;
    let best_bm25 = rows.iter().map(|c| c.raw).fold(0.0, f64::max);
    for c in &mut rows {
        let rel = if best_bm25 > 0.0 {
            c.raw / best_bm25
        } else {
            0.0
        };
        let text = match &c.subject {
            Some(s) => format!("{s} {}", c.content),
            None => c.content.clone(),
        };
        c.raw = 0.3 * rel + 0.7 * match_quality(&query_words, &text);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chars(s: &str) -> Vec<char> {
        s.chars().collect()
    }

    #[test]
    fn bounded_osa_agrees_with_the_full_one() {
        let words = [
            "docker",
            "dokcer",
            "network",
            "netwrok",
            "kitten",
            "sitting",
            "a",
            "",
            "networking",
            "kubernetes",
        ];
        for a in words {
            for b in words {
                let (x, y) = (chars(a), chars(b));
                let full = osa(&x, &y);
                for limit in 0..4 {
                    assert_eq!(
                        osa_within(&x, &y, limit),
                        full.min(limit + 1),
                        "{a} {b} {limit}"
                    );
                }
            }
        }
    }

    #[test]
    fn osa_counts_transpositions_as_one() {
        assert_eq!(osa(&chars("dokcer"), &chars("docker")), 1);
        assert_eq!(osa(&chars("netwrok"), &chars("network")), 1);
        assert_eq!(osa(&chars("kitten"), &chars("sitting")), 3);
        assert_eq!(osa(&chars(""), &chars("abc")), 3);
    }

    #[test]
    fn similarity_of_typos_stems_and_substrings() {
        assert!(similarity("dokcer", "docker") > 0.8);
        assert!(similarity("netwrok", "network") > 0.8);
        // One edit plus a suffix the stemmer removed.
        assert!(similarity("networkng", "network") > 0.8);
        assert!(similarity("depoly", "deploi") > 0.5);
        assert!(similarity("deploying", "deploi") > 0.5);
        // Two edits in a long word.
        assert!(similarity("kubernets", "kubernet") > 0.5);
        assert!(similarity("postgrse", "postgr") > 0.5);
        // Substrings.
        assert_eq!(similarity("kube", "minikub"), 0.7);
        // A raw word with its suffix.
        assert!(similarity("netwrok", "networking") > 0.5);
        // Unrelated.
        assert_eq!(similarity("docker", "garden"), 0.0);
        assert_eq!(similarity("docker", "doctor"), 0.0);
        assert_eq!(similarity("cat", "dog"), 0.0);
    }

    /// The cached vocabulary expands every word exactly as fts5vocab does:
    /// typos, swapped first letters, prefixes and the substring fallback.
    #[test]
    fn the_cached_vocabulary_expands_like_fts5vocab() {
        let (_dir, conn) = crate::store::test_db();
        for text in [
            "Docker networking between containers uses the bridge driver",
            "Kubernetes clusters are created with minikube",
            "The deployment pipeline runs nightly",
            "Prefer tabs in Makefiles; postgres listens on 5432",
        ] {
            conn.execute("INSERT INTO memories (content) VALUES (?1)", [text])
                .unwrap();
        }
        let cached = super::super::vocab::load(&conn).unwrap();
        assert!(cached.terms.len() > 10);
        for query in [
            "dokcer netwrok",
            "odcker",
            "kubernetse minikub",
            "ployment",
            "makefiels postgrse",
            "xylophone",
            "focker",
            "dcker",
            "ployment",
            "ntainer",
        ] {
            let words = words::query_words(query);
            assert_eq!(
                expand(&conn, &words, Some(&cached)).unwrap(),
                expand(&conn, &words, None).unwrap(),
                "{query}"
            );
        }
        for (query, want) in [
            ("dokcer", "docker"),
            ("focker", "docker"),
            ("dcker", "docker"),
            ("ployment", "deploy"),
            ("ntainer", "contain"),
            ("etworking", "network"),
        ] {
            let words = words::query_words(query);
            let terms = expand(&conn, &words, Some(&cached)).unwrap();
            assert!(terms.iter().any(|(t, _)| t == want), "{query}: {terms:?}");
        }
        let words = words::query_words("xylophone");
        assert!(expand(&conn, &words, Some(&cached)).unwrap().is_empty());
    }

    #[test]
    fn overlaps_cut_where_a_suffix_begins() {
        assert_eq!(stem_overlaps("ployment"), ["ploy", "ploym"]);
        assert!(stem_overlaps("ntainer").contains(&"ntain"));
        assert!(stem_overlaps("xylophone").iter().all(|h| h.len() >= 4));
        assert!(ends_with_stem("deploi", "ploy"));
        assert!(ends_with_stem("contain", "ntain"));
        assert!(!ends_with_stem("contain", "ploy"));
    }

    #[test]
    fn next_prefix_bounds_a_range() {
        assert_eq!(next_prefix("do"), "dp");
        assert!("dozzz" < next_prefix("do").as_str());
    }

    #[test]
    fn match_quality_prefers_close_words() {
        let q = vec!["dokcer".to_string(), "netwrok".to_string()];
        let good = match_quality(&q, "Docker networking between containers");
        let half = match_quality(&q, "Docker compose files");
        let none = match_quality(&q, "The garden needs water");
        assert!(good > half && half > none, "{good} {half} {none}");
    }
}
