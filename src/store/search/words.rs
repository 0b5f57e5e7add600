//! Query words: cut the way the `unicode61` tokenizer cuts, lower-cased,
//! with a general English stopword list.

/// Common English words that carry no meaning for retrieval (a general list,
/// not tuned on any data set).
pub const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "d",
    "did",
    "do",
    "does",
    "doing",
    "don",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "re",
    "s",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "ve",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `w` (lower case) is a stopword.
pub fn is_stopword(w: &str) -> bool {
    STOPWORDS.binary_search(&w).is_ok()
}

/// The words of a text, lower-cased, in order (duplicates kept).
pub fn tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// How many words a text has (as [`tokens`] cuts it), without allocating.
pub fn count(text: &str) -> usize {
    matched_and_count(&[], text).1
}

/// A byte's class in [`matched_and_count`]'s scan: an ASCII letter or
/// digit, any other ASCII byte, or a byte of a longer UTF-8 character.
const WORD: u8 = 0;
const GAP: u8 = 1;
const WIDE: u8 = 2;
const CLASS: [u8; 256] = {
    let mut t = [WIDE; 256];
    let mut b = 0;
    while b < 128 {
        t[b] = if (b as u8).is_ascii_alphanumeric() {
            WORD
        } else {
            GAP
        };
        b += 1;
    }
    t
};

/// In one pass over `text`: how many of `query_words` (lower case) it
/// holds (a word counts when a token of the text [`same_word`]s it), and how
/// many words it has — what [`tokens`] would give, without a string per
/// token (long memories have thousands).
pub fn matched_and_count(query_words: &[String], text: &str) -> (usize, usize) {
    let mut found = vec![false; query_words.len()];
    let mut left = query_words.len();
    let mut n = 0;
    let mut token = String::new();
    // The ASCII first letters of the query words not found yet: an ASCII
    // word of the text starting otherwise matches none of them.
    let firsts_of = |found: &[bool]| -> u128 {
        query_words
            .iter()
            .zip(found)
            .filter(|(_, f)| !**f)
            .filter_map(|(w, _)| w.bytes().next().filter(u8::is_ascii))
            .fold(0u128, |m, b| m | 1 << b)
    };
    let mut firsts = firsts_of(&found);
    let bytes = text.as_bytes();
    let len = bytes.len();
    let mut at = 0;
    while at < len {
        // Bytes between words, most of them spaces and punctuation.
        while at < len && CLASS[bytes[at] as usize] == GAP {
            at += 1;
        }
        if at >= len {
            break;
        }
        // A word starts here: its ASCII letters and digits in a tight
        // loop (most of a long text), other characters decoded.
        let start = at;
        let mut ascii = true;
        loop {
            while at < len && CLASS[bytes[at] as usize] == WORD {
                at += 1;
            }
            if at >= len || CLASS[bytes[at] as usize] == GAP {
                break;
            }
            let c = text[at..].chars().next().unwrap_or(' ');
            if !c.is_alphanumeric() {
                break;
            }
            ascii = false;
            at += c.len_utf8();
        }
        if at == start {
            // A character that is not a word character: skip it.
            at += text[at..].chars().next().map_or(1, char::len_utf8);
            continue;
        }
        n += 1;
        if left == 0 {
            continue;
        }
        let first = bytes[start];
        if first.is_ascii() && firsts & (1u128 << first.to_ascii_lowercase()) == 0 {
            continue;
        }
        if ascii {
            // Compared byte by byte, ignoring ASCII case (what lower-casing
            // an ASCII word does), no copy.
            let word = &bytes[start..at];
            for (i, w) in query_words.iter().enumerate() {
                if !found[i] && same_word_ascii(w, word) {
                    found[i] = true;
                    left -= 1;
                    firsts = firsts_of(&found);
                }
            }
            continue;
        }
        token.clear();
        for c in text[start..at].chars() {
            token.extend(c.to_lowercase());
        }
        for (i, w) in query_words.iter().enumerate() {
            if !found[i] && same_word(w, &token) {
                found[i] = true;
                left -= 1;
            }
        }
    }
    (query_words.len() - left, n)
}

/// [`same_word`] for an ASCII word `t` of the text in any case: the same
/// answer as `same_word(w, &t.to_lowercase())`, without the copy.
fn same_word_ascii(w: &str, t: &[u8]) -> bool {
    let w = w.as_bytes();
    // The first letters differ: neither equal nor the same start.
    if w.first().map(u8::to_ascii_lowercase) != t.first().map(u8::to_ascii_lowercase) {
        return false;
    }
    if w.eq_ignore_ascii_case(t) {
        return true;
    }
    let n = w.len().min(t.len());
    let k = n.saturating_sub(2).max(4);
    // `k` ends inside `t` (ASCII); in `w` it must end on a character
    // boundary, as `str::get` requires in `same_word`.
    n >= 4
        && k <= n
        && (k == w.len() || (w[k] as i8) >= -0x40)
        && w[..k].eq_ignore_ascii_case(&t[..k])
}

/// Whether a text's word `t` counts as the query's word `w`: equal, or the
/// same start (all but the last two letters, at least four) for words of
/// four letters or more — "painting" and "painted", "deploys" and "deploy".
pub fn same_word(w: &str, t: &str) -> bool {
    if t == w {
        return true;
    }
    let n = w.len().min(t.len());
    let k = n.saturating_sub(2).max(4);
    n >= 4 && k <= n && w.get(..k).is_some() && w.get(..k) == t.get(..k)
}

/// The words a query searches for: stopwords dropped unless nothing else is
/// left, duplicates dropped, order kept.
pub fn query_words(text: &str) -> Vec<String> {
    let all = tokens(text);
    let mut kept: Vec<String> = all.iter().filter(|w| !is_stopword(w)).cloned().collect();
    if kept.is_empty() {
        kept = all;
    }
    let mut seen = std::collections::HashSet::new();
    kept.retain(|w| seen.insert(w.clone()));
    kept
}

/// The FTS5 query for plain text: each word quoted (so no character is ever
/// an operator), OR-ed. `None` when there is no word at all.
pub fn plain_query(text: &str) -> Option<String> {
    let words = query_words(text);
    if words.is_empty() {
        None
    } else {
        Some(
            words
                .iter()
                .map(|w| format!("\"{w}\""))
                .collect::<Vec<_>>()
                .join(" OR "),
        )
    }
}

/// Whether FTS5, with memd's tokenizer, parses `query` as a `MATCH`
/// expression (an in-memory table per thread): what the query fuzz target
/// checks of every [`plain_query`].
///
/// # Errors
/// SQLite's message when the query is not valid FTS5.
pub fn check_match_syntax(query: &str) -> Result<(), String> {
    thread_local! {
        static FTS: rusqlite::Connection = {
            let conn = rusqlite::Connection::open_in_memory().expect("in-memory database");
            conn.execute_batch(
                "CREATE VIRTUAL TABLE t USING fts5(content, subject, \
                 tokenize = 'porter unicode61 remove_diacritics 2');
                 INSERT INTO t VALUES ('the deploy script lives in ops', 'deploy');",
            )
            .expect("FTS5 table");
            conn
        };
    }
    FTS.with(|conn| {
        conn.query_row("SELECT count(*) FROM t WHERE t MATCH ?1", [query], |r| {
            r.get::<_, i64>(0)
        })
        .map(|_| ())
        .map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOPWORDS);
    }

    #[test]
    fn count_agrees_with_tokens() {
        for text in [
            "",
            "  ",
            "User: I'd like the deploy-script, please!",
            "café au lait 42x",
            "--a--b--",
        ] {
            assert_eq!(count(text), tokens(text).len(), "{text:?}");
        }
    }

    #[test]
    fn the_ascii_comparison_agrees_with_same_word() {
        let words = [
            "deploy",
            "deploys",
            "DEPLOYED",
            "dep",
            "depl",
            "deplo",
            "x",
            "X",
            "painting",
            "Painted",
            "naïve",
            "naive",
            "naïveté",
            "über",
            "uber",
            "café",
            "cafe",
            "cafés",
            "ab",
            "abcd",
            "ABCDE",
            "abcdef",
            "abc1",
            "1234",
            "12345",
            "日本語",
            "straße",
        ];
        for w in words {
            let w = w.to_lowercase();
            for t in words.iter().filter(|t| t.is_ascii()) {
                assert_eq!(
                    same_word_ascii(&w, t.as_bytes()),
                    same_word(&w, &t.to_lowercase()),
                    "{w} / {t}"
                );
            }
        }
    }

    #[test]
    fn one_pass_agrees_with_tokens() {
        let q: Vec<String> = ["deploy", "painting", "café", "x"]
            .iter()
            .map(ToString::to_string)
            .collect();
        for text in [
            "",
            "Deploys happen on PAINTED walls",
            "Café au lait; the deployment!",
            "nothing here",
            "x",
            "ÉCOLE deploy-script painting x",
            "DEPLOY Painters paint CAFÉS deplo depl",
            "naïve naive NAÏVETÉ ÜBER über-cool xx X",
            "—deploy… 日本語テスト deploy2 «x» 🚀painting🚀 ü",
            "—",
            "é",
            "abcé",
            "éabc deployé",
        ] {
            let tokens = tokens(text);
            let matched = q
                .iter()
                .filter(|w| tokens.iter().any(|t| same_word(w, t)))
                .count();
            assert_eq!(
                matched_and_count(&q, text),
                (matched, tokens.len()),
                "{text:?}"
            );
        }
    }

    /// The same, on texts built from pieces that start, end, repeat and
    /// cut words, in ASCII and beyond.
    #[test]
    fn one_pass_agrees_with_tokens_on_any_text() {
        use proptest::prelude::*;
        const PIECES: [&str; 24] = [
            "dep", "deploy", "DEPLOYS", "loy", "ment", " ", "-", ".", "x", "X", "js", "paint",
            "PAINTING", "ed", "é", "Ü", "café", "42", "—", "\n", "日本", "🚀", "proj", "ab",
        ];
        const WORDS: [&str; 10] = [
            "deploy", "painting", "x", "js", "café", "deployé", "42", "ab", "proj", "é",
        ];
        let text = prop::collection::vec(prop::sample::select(&PIECES[..]), 0..12)
            .prop_map(|p| p.concat());
        let query = prop::collection::vec(prop::sample::select(&WORDS[..]), 0..4).prop_map(|w| {
            let mut q: Vec<String> = w.iter().map(ToString::to_string).collect();
            q.sort();
            q.dedup();
            q
        });
        proptest!(ProptestConfig::with_cases(2000), |(q in query, text in text)| {
            let tokens = tokens(&text);
            let matched = q.iter().filter(|w| tokens.iter().any(|t| same_word(w, t))).count();
            prop_assert_eq!(matched_and_count(&q, &text), (matched, tokens.len()), "{:?} in {:?}", q, text);
        });
    }

    #[test]
    fn plain_words_are_quoted() {
        assert_eq!(
            plain_query("the deploy script").as_deref(),
            Some("\"deploy\" OR \"script\"")
        );
        assert_eq!(
            plain_query("NEAR(a b) col:x -y \"z*").as_deref(),
            Some("\"near\" OR \"b\" OR \"col\" OR \"x\" OR \"y\" OR \"z\"")
        );
        assert_eq!(plain_query("\"* -- ()"), None);
        assert_eq!(plain_query("café").as_deref(), Some("\"café\""));
        // Only stopwords: keep them rather than search for nothing.
        assert_eq!(
            plain_query("to be or not").as_deref(),
            Some("\"to\" OR \"be\" OR \"or\" OR \"not\"")
        );
        assert_eq!(plain_query("Deploy deploy").as_deref(), Some("\"deploy\""));
    }
}
