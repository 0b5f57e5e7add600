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

/// The most distinct words ([`query_words`]) a plain query may search for.
/// Each one is looked up in the index and weighed on its own (two numbers
/// per word go into one SQLite function call, whose arguments are capped
/// at 1,000); a query of more is refused with a clear error rather than
/// cut short silently.
pub const MAX_QUERY_WORDS: usize = 256;

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

/// The words of a query that can relate a text to it: its query words
/// without stopwords, none for a query of stopwords only (a text holding
/// "what is it" is not about anything the query asks).
pub fn significant_words(text: &str) -> Vec<String> {
    let mut words = query_words(text);
    words.retain(|w| !is_stopword(w));
    words
}

/// The share of a query's `words` ([`significant_words`]) that `text` holds, a
/// word counting when the text has it in any form [`same_word`] accepts;
/// 0 for no words.
pub fn share_held(words: &[String], text: &str) -> f64 {
    if words.is_empty() {
        return 0.0;
    }
    let held: std::collections::HashSet<String> = tokens(text).into_iter().collect();
    let found = words
        .iter()
        .filter(|w| held.contains(*w) || held.iter().any(|t| same_word(w, t)))
        .count();
    found as f64 / words.len() as f64
}

/// A word as an FTS5 phrase: quoted, a quote inside doubled, so no
/// character of it is ever an operator.
pub fn phrase(word: &str) -> String {
    format!("\"{}\"", word.replace('"', "\"\""))
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
                .map(|w| phrase(w))
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
    fn the_share_of_the_query_words_a_text_holds() {
        let words = significant_words("Where is the deploy script for staging?");
        assert_eq!(words, ["deploy", "script", "staging"]);
        assert!(significant_words("what is it?").is_empty());
        assert_eq!(
            share_held(&words, "Deploys run ops/deploy.sh, a SCRIPT."),
            2.0 / 3.0
        );
        assert_eq!(share_held(&words, "The CI machine has 2 cores."), 0.0);
        assert_eq!(share_held(&[], "anything"), 0.0);
    }

    #[test]
    fn stopwords_are_sorted_for_binary_search() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOPWORDS);
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
