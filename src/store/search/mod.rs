//! Search: lexical (FTS5 BM25), fuzzy (typos and substrings through the FTS
//! vocabulary), and the ranking that puts them in order.
//!
//! # Layout
//! - [`words`]: query words, stopwords, the plain FTS query.
//! - [`lexical`]: BM25 candidates under the view's filters.
//! - [`fuzzy`]: vocabulary expansion, edit distance, re-ranking.
//! - [`rank`]: relevance × recency decay + pin boost (pure).
//!
//! `auto` runs lexical search and falls back to fuzzy matching when it finds
//! fewer than `[search] fuzzy_below` hits; fuzzy hits come after the lexical
//! ones, and every hit says how it matched.

pub mod fuzzy;
pub mod lexical;
pub mod rank;
pub mod words;

use std::collections::HashSet;

use memd_proto::{Hit, MatchKind, Memory, QuerySyntax, SearchMode};
use rusqlite::Connection;
use time::OffsetDateTime;

use super::StoreError;
use super::memories::View;
use rank::RankConfig;

pub use words::plain_query;

/// One search.
#[derive(Debug, Clone)]
pub struct Query<'a> {
    /// The text.
    pub text: &'a str,
    /// Plain or FTS syntax.
    pub syntax: QuerySyntax,
    /// `Auto`, `Lexical` or `Fuzzy` (the others need an embedder).
    pub mode: SearchMode,
    /// Filters and visibility.
    pub view: &'a View,
    /// At most this many hits.
    pub limit: u32,
    /// Fill in each hit's score parts.
    pub explain: bool,
    /// "Now" for recency.
    pub now: OffsetDateTime,
    /// Ranking settings.
    pub rank: &'a RankConfig,
}

/// Rows fetched per search before ranking cuts to the limit.
fn fetch(limit: u32) -> u32 {
    (limit.saturating_mul(3)).clamp(50, 500)
}

/// Ranks candidates of one kind and turns them into hits.
fn ranked(q: &Query<'_>, rows: Vec<(Memory, f64)>, kind: MatchKind) -> Vec<Hit> {
    let best = rows.iter().map(|(_, s)| *s).fold(0.0, f64::max);
    let mut hits: Vec<Hit> = rows
        .into_iter()
        .map(|(memory, raw)| {
            let age = rank::age_days(&memory.updated_at, q.now);
            let parts = q
                .rank
                .score(raw, best, &memory.category, age, memory.pinned);
            Hit {
                explain: q.explain.then(|| parts.explain(age)),
                score: parts.score,
                matched: kind,
                memory,
            }
        })
        .collect();
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| b.memory.id.cmp(&a.memory.id))
    });
    hits
}

/// Runs a search.
///
/// # Errors
/// [`StoreError::InvalidInput`] for an invalid FTS query or a mode that
/// needs what is not configured; SQLite errors.
pub fn run(conn: &Connection, q: &Query<'_>) -> Result<Vec<Hit>, StoreError> {
    let lexical = || -> Result<Vec<Hit>, StoreError> {
        let fts = match q.syntax {
            QuerySyntax::Plain => plain_query(q.text),
            QuerySyntax::Fts => Some(q.text.to_string()),
        };
        Ok(match fts {
            Some(f) => ranked(
                q,
                lexical::candidates(conn, &f, q.view, fetch(q.limit))?,
                MatchKind::Lexical,
            ),
            None => Vec::new(),
        })
    };
    let fuzzy = || -> Result<Vec<Hit>, StoreError> {
        Ok(ranked(
            q,
            fuzzy::candidates(conn, q.text, q.view, fetch(q.limit))?,
            MatchKind::Fuzzy,
        ))
    };
    let mut hits = match q.mode {
        SearchMode::Lexical => lexical()?,
        SearchMode::Fuzzy => {
            if q.syntax == QuerySyntax::Fts {
                return Err(StoreError::InvalidInput(
                    "fuzzy search takes plain text, not FTS syntax".into(),
                ));
            }
            fuzzy()?
        }
        SearchMode::Auto => {
            let mut hits = lexical()?;
            if hits.len() < q.rank.fuzzy_below && q.syntax == QuerySyntax::Plain {
                let seen: HashSet<i64> = hits.iter().map(|h| h.memory.id).collect();
                hits.extend(
                    fuzzy()?
                        .into_iter()
                        .filter(|h| !seen.contains(&h.memory.id)),
                );
            }
            hits
        }
        SearchMode::Semantic | SearchMode::Hybrid => {
            return Err(StoreError::InvalidInput(format!(
                "{} search needs an embedder, and no embedder is configured; use --mode lexical \
                 or fuzzy",
                q.mode.as_str()
            )));
        }
    };
    hits.truncate(q.limit as usize);
    Ok(hits)
}
