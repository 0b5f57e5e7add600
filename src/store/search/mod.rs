//! Search: lexical (FTS5 BM25), fuzzy (typos and substrings through the FTS
//! vocabulary), semantic (cosine over embeddings), hybrid (lexical and
//! semantic fused), and the ranking that puts them in order.
//!
//! # Layout
//! - [`words`]: query words, stopwords, the plain FTS query.
//! - [`lexical`]: BM25 candidates under the view's filters, over a
//!   memory's text, its thread context and its date words.
//! - [`feedback`]: words of the best first-pass hits, searched too (pure).
//! - [`fuzzy`]: vocabulary expansion, edit distance, re-ranking.
//! - [`semantic`]: cosine candidates among the visible rows.
//! - [`fusion`]: how hybrid merges the two rankings (pure).
//! - [`rank`]: relevance × recency decay + pin boost (pure).
//!
//! `auto` runs hybrid search when an embedder is ready; otherwise lexical
//! search, falling back to fuzzy matching when it finds fewer than
//! `[search] fuzzy_below` hits (fuzzy hits come after the lexical ones).
//! Every hit says how it matched.

pub mod feedback;
pub mod fts5;
pub mod fusion;
pub mod fuzzy;
pub mod lexical;
pub mod rank;
pub mod semantic;
pub mod vocab;
pub mod words;

use std::cell::Cell;
use std::collections::HashSet;

use memd_proto::{Hit, MatchKind, QuerySyntax, SearchMode};
use rusqlite::Connection;
use time::OffsetDateTime;

use super::StoreError;
use super::memories::{self};
use crate::gate::View;
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
    /// Skip this many of the best hits first.
    pub offset: u32,
    /// Fill in each hit's score parts.
    pub explain: bool,
    /// "Now" for recency.
    pub now: OffsetDateTime,
    /// Ranking settings.
    pub rank: &'a RankConfig,
    /// The query's vector and the index, for semantic and hybrid search
    /// (and `auto`, which then runs hybrid).
    pub semantic: Option<semantic::Semantic<'a>>,
    /// The FTS vocabulary at this read's generation, when cached (fuzzy
    /// search reads `fts5vocab` without it).
    pub vocab: Option<&'a vocab::Terms>,
    /// The query words' document frequencies, kept per generation, and
    /// this read's generation (without them FTS5 counts them each time).
    pub frequencies: Option<(&'a fts5::Frequencies, u64)>,
}

/// How much the share of query words a memory contains counts next to its
/// BM25 (a general rule: more of the question matched, better).
const COVERAGE_WEIGHT: f64 = 0.5;

/// What ranking needs of a matching row (full rows are read only for the
/// hits that make the cut).
#[derive(Debug, Clone)]
pub struct Candidate {
    /// Row id.
    pub id: i64,
    /// Raw match score (higher is better).
    pub raw: f64,
    /// Content.
    pub content: String,
    /// Subject.
    pub subject: Option<String>,
    /// Category.
    pub category: String,
    /// Pinned.
    pub pinned: bool,
    /// Last meaningful change.
    pub updated_at: String,
}

/// Pseudo-relevance feedback on first-pass rows: the words of the best
/// hits ([`feedback::expansion`]) re-score the rows, each gaining
/// `weight × BM25` of each added word it matches (FTS5's BM25 of an OR
/// query is the sum of its words' scores, so this is the BM25 of a
/// weighted query), and are sorted again. Only rows that match the query
/// join: a row that shares words with the best hits but none with the
/// question is not a lexical hit.
fn with_feedback(
    conn: &Connection,
    q: &Query<'_>,
    query_words: &[String],
    rows: &mut [Candidate],
    weights: &lexical::Weights,
) -> Result<(), StoreError> {
    let settings = feedback::Settings {
        docs: q.rank.feedback_docs,
        terms: q.rank.feedback_terms,
        weight: q.rank.feedback_weight,
    };
    // With no more rows than feedback reads, there is nothing to reorder
    // by words they share.
    if rows.len() <= settings.docs {
        return Ok(());
    }
    let hits: Vec<(f64, i64, &str)> = rows
        .iter()
        .map(|c| (c.raw, c.id, c.content.as_str()))
        .collect();
    let added = feedback::expansion(&hits, query_words, settings);
    if added.is_empty() {
        return Ok(());
    }
    let at: std::collections::HashMap<i64, usize> =
        rows.iter().enumerate().map(|(i, c)| (c.id, i)).collect();
    let lo = rows.iter().map(|c| c.id).min().unwrap_or(0);
    let hi = rows.iter().map(|c| c.id).max().unwrap_or(0);
    for (word, weight) in added {
        for (id, score) in lexical::scores_in_range(conn, &words::phrase(&word), lo, hi, weights)? {
            if let Some(i) = at.get(&id) {
                rows[*i].raw += weight * score;
            }
        }
    }
    rows.sort_by(|a, b| b.raw.total_cmp(&a.raw).then_with(|| b.id.cmp(&a.id)));
    Ok(())
}

/// Rows fetched per search before ranking cuts to the limit.
fn fetch(limit: u32) -> u32 {
    (limit.saturating_mul(3)).clamp(50, 500)
}

/// A ranked candidate.
#[derive(Clone)]
struct Scored {
    candidate: Candidate,
    parts: rank::Parts,
    age: f64,
    kind: MatchKind,
    /// The absolute relevance (cosine), for a search with a query vector.
    relevance: Option<f64>,
}

/// Ranks candidates of one kind, best first.
fn ranked(q: &Query<'_>, rows: Vec<Candidate>, kind: MatchKind) -> Vec<Scored> {
    ranked_kinds(q, rows.into_iter().map(|c| (c, kind)).collect())
}

/// Ranks candidates that say how they matched, best first.
fn ranked_kinds(q: &Query<'_>, rows: Vec<(Candidate, MatchKind)>) -> Vec<Scored> {
    let best = rows.iter().map(|(c, _)| c.raw).fold(0.0, f64::max);
    let mut scored: Vec<Scored> = rows
        .into_iter()
        .map(|(candidate, kind)| {
            let age = rank::age_days(&candidate.updated_at, q.now);
            let parts = q.rank.score(
                candidate.raw,
                best,
                &candidate.category,
                age,
                candidate.pinned,
            );
            Scored {
                candidate,
                parts,
                age,
                kind,
                relevance: None,
            }
        })
        .collect();
    scored.sort_by(|a, b| {
        b.parts
            .score
            .total_cmp(&a.parts.score)
            .then_with(|| b.candidate.id.cmp(&a.candidate.id))
    });
    scored
}

/// Gives each hit its relevance (the cosine of its vector, neighbours mixed
/// in as semantic search mixes them) and drops those the query relates to
/// neither by meaning nor by words. A hit below the floor is dropped, however
/// well it ranks among the rest, unless it holds `related_words` of the
/// query's `words`. When the best match of the namespaces searched (`best`,
/// the semantic ranking's first; `None` when the search made none) is below
/// `nothing_below`, the model relates nothing there to the query: no hit
/// with a vector is returned, unless one of the first `shown` hits of the
/// ranking (those the search would return) holds `related_words` of the
/// query's words. A row without a vector yet (being
/// embedded) keeps its place: there is nothing to judge.
fn above_floor(
    s: &semantic::Semantic<'_>,
    best: Option<f64>,
    words: &[String],
    shown: usize,
    scored: &mut Vec<Scored>,
) {
    let probe = crate::embed::vectors::Probe::new(s.vector);
    for hit in scored.iter_mut() {
        hit.relevance = semantic::cosine(s, &probe, hit.candidate.id);
    }
    let least = s.floor.related_words;
    let related =
        |hit: &Scored| least > 0.0 && words::share_held(words, &hit.candidate.content) >= least;
    let nothing =
        best.is_some_and(|b| b < s.floor.nothing_below) && !scored.iter().take(shown).any(related);
    scored.retain(|hit| match hit.relevance {
        None => true,
        Some(_) if nothing => false,
        Some(r) => r >= s.floor.hit || related(hit),
    });
}

/// The lexical ranking's candidates: FTS5 ranks by memd's lexical score
/// itself, BM25 × coverage (plain syntax: the share of the query's words
/// in the content) × the length rule ([`fts5`]); with plain syntax each
/// phrase is a query word, whose document frequency memd may know.
fn lexical_rows(conn: &Connection, q: &Query<'_>) -> Result<Vec<Candidate>, StoreError> {
    let fts = match q.syntax {
        QuerySyntax::Plain => plain_query(q.text),
        QuerySyntax::Fts => Some(q.text.to_string()),
    };
    let Some(fts) = fts else {
        return Ok(Vec::new());
    };
    let words = words::query_words(q.text);
    let weights = lexical::Weights::of(q.rank);
    let fetch = fetch(q.limit.saturating_add(q.offset));
    let plain = q.syntax == QuerySyntax::Plain;
    let scoring = lexical::Scoring {
        weights,
        long_words: q.rank.long_words,
        long_exponent: q.rank.long_exponent,
        coverage: if plain { COVERAGE_WEIGHT } else { 0.0 },
        frequencies: match q.frequencies {
            Some((known, generation)) if plain => known.of(conn, generation, &words)?,
            _ => fts5::Counts::default(),
        },
    };
    let mut rows = lexical::candidates(conn, &fts, q.view, fetch, &scoring)?;
    if plain {
        with_feedback(conn, q, &words, &mut rows, &weights)?;
    }
    Ok(rows)
}

fn lexical_ranked(conn: &Connection, q: &Query<'_>) -> Result<Vec<Scored>, StoreError> {
    Ok(ranked(q, lexical_rows(conn, q)?, MatchKind::Lexical))
}

/// The semantic ranking's candidates and the spread of their cosines;
/// `best` records the ranking's best cosine.
fn semantic_rows(
    conn: &Connection,
    q: &Query<'_>,
    best: &Cell<Option<f64>>,
) -> Result<(Vec<Candidate>, crate::embed::vectors::Spread), StoreError> {
    let s = q.semantic.as_ref().ok_or_else(|| {
        StoreError::NotConfigured(format!(
            "{} search needs an embedder, and none is ready; use --mode lexical or fuzzy",
            q.mode.as_str()
        ))
    })?;
    let found = semantic::candidates(conn, q.view, s, fetch(q.limit.saturating_add(q.offset)))?;
    best.set(Some(
        found
            .0
            .iter()
            .map(|c| c.raw)
            .fold(f64::NEG_INFINITY, f64::max),
    ));
    Ok(found)
}

/// The lexical and semantic rankings fused, trusting the semantic one as
/// far as its best cosine stands out.
fn hybrid(
    conn: &Connection,
    q: &Query<'_>,
    best_semantic: &Cell<Option<f64>>,
) -> Result<Vec<Scored>, StoreError> {
    let lex = lexical_rows(conn, q)?;
    let (sem, spread) = semantic_rows(conn, q, best_semantic)?;
    let best = sem.iter().map(|c| c.raw).fold(f64::NEG_INFINITY, f64::max);
    let confidence = if best.is_finite() {
        fusion::confidence(&q.rank.hybrid, spread.z(best))
    } else {
        1.0
    };
    let s = q.semantic.as_ref();
    let probe = s.map(|s| crate::embed::vectors::Probe::new(s.vector));
    // A lexical hit outside the semantic top still has a cosine.
    let cosine = |id: i64| match (s, &probe) {
        (Some(s), Some(p)) => semantic::cosine(s, p, id),
        _ => None,
    };
    let fused = fusion::fuse(&q.rank.hybrid, lex, sem, cosine, confidence);
    Ok(ranked_kinds(q, fused))
}

fn fuzzy_ranked(conn: &Connection, q: &Query<'_>) -> Result<Vec<Scored>, StoreError> {
    Ok(ranked(
        q,
        fuzzy::candidates(
            conn,
            q.text,
            q.view,
            fetch(q.limit.saturating_add(q.offset)),
            q.vocab,
            &lexical::Weights::of(q.rank),
        )?,
        MatchKind::Fuzzy,
    ))
}

/// Runs a search.
///
/// # Errors
/// [`StoreError::InvalidInput`] for an invalid FTS query or a mode that
/// needs what is not configured; SQLite errors.
pub fn run(conn: &Connection, q: &Query<'_>) -> Result<Vec<Hit>, StoreError> {
    // The best cosine of the semantic ranking, when one was made.
    let best_semantic = Cell::new(None::<f64>);
    let mut scored = match q.mode {
        SearchMode::Lexical => lexical_ranked(conn, q)?,
        SearchMode::Semantic => ranked(
            q,
            semantic_rows(conn, q, &best_semantic)?.0,
            MatchKind::Semantic,
        ),
        SearchMode::Hybrid => hybrid(conn, q, &best_semantic)?,
        SearchMode::Auto if q.semantic.is_some() => hybrid(conn, q, &best_semantic)?,
        SearchMode::Fuzzy => {
            if q.syntax == QuerySyntax::Fts {
                return Err(StoreError::InvalidInput(
                    "fuzzy search takes plain text, not FTS syntax".into(),
                ));
            }
            fuzzy_ranked(conn, q)?
        }
        SearchMode::Auto => {
            let mut scored = lexical_ranked(conn, q)?;
            if scored.len() < q.rank.fuzzy_below && q.syntax == QuerySyntax::Plain {
                let seen: HashSet<i64> = scored.iter().map(|s| s.candidate.id).collect();
                scored.extend(
                    fuzzy_ranked(conn, q)?
                        .into_iter()
                        .filter(|s| !seen.contains(&s.candidate.id)),
                );
            }
            scored
        }
    };
    if let Some(s) = &q.semantic {
        above_floor(
            s,
            best_semantic.get(),
            &words::significant_words(q.text),
            q.offset.saturating_add(q.limit) as usize,
            &mut scored,
        );
    }
    scored.drain(..(q.offset as usize).min(scored.len()));
    scored.truncate(q.limit as usize);
    let ids: Vec<i64> = scored.iter().map(|s| s.candidate.id).collect();
    let mut rows = memories::by_ids(conn, &ids)?;
    Ok(scored
        .into_iter()
        .filter_map(|s| {
            let memory = rows.remove(&s.candidate.id)?;
            Some(Hit {
                explain: q.explain.then(|| s.parts.explain(s.age)),
                score: s.parts.score,
                relevance: s.relevance,
                matched: s.kind,
                memory,
            })
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hit at `cosine` from the query `[1, 0, …]` holding `content`, in
    /// `index` (`None`: not embedded yet).
    fn hit(
        index: &mut crate::embed::vectors::Index,
        id: i64,
        cosine: Option<f32>,
        content: &str,
    ) -> Scored {
        if let Some(c) = cosine {
            let mut v = vec![0.0f32; 8];
            v[0] = c;
            v[1] = (1.0 - c * c).sqrt();
            index.upsert(id, "default", &v, None);
        }
        Scored {
            candidate: Candidate {
                id,
                raw: 1.0,
                content: content.into(),
                subject: None,
                category: "fact".into(),
                pinned: false,
                updated_at: String::new(),
            },
            parts: rank::Parts {
                raw: 1.0,
                relevance: 1.0,
                decay: 1.0,
                pin: 0.0,
                score: 1.0,
            },
            age: 0.0,
            kind: MatchKind::Semantic,
            relevance: None,
        }
    }

    /// The floor drops a hit the model cannot relate to the query unless it
    /// holds the query's words; a namespace whose best match is below
    /// `nothing_below` gives nothing unless a candidate holds them; a row
    /// without a vector keeps its place.
    #[test]
    fn what_neither_the_model_nor_the_words_relate_is_not_returned() {
        let mut index = crate::embed::vectors::Index::new(8);
        let scored = vec![
            hit(
                &mut index,
                1,
                Some(0.5),
                "The release train leaves on Tuesday.",
            ),
            hit(
                &mut index,
                2,
                Some(0.05),
                "Deploys: ops/deploy.sh is the script.",
            ),
            hit(&mut index, 3, Some(0.05), "The CI machine has 2 cores."),
            hit(&mut index, 4, None, "Being embedded."),
        ];
        let index = std::sync::RwLock::new(index);
        let query = {
            let mut v = vec![0.0f32; 8];
            v[0] = 1.0;
            v
        };
        let floor = |related_words| rank::Floor {
            hit: 0.11,
            nothing_below: 0.36,
            related_words,
        };
        let kept_of = |best: f64, text: &str, related_words: f64, shown: usize| -> Vec<i64> {
            let s = semantic::Semantic {
                vector: &query,
                index: &index,
                mix: Default::default(),
                floor: floor(related_words),
            };
            let mut hits = scored.clone();
            above_floor(
                &s,
                Some(best),
                &words::significant_words(text),
                shown,
                &mut hits,
            );
            hits.iter().map(|h| h.candidate.id).collect()
        };
        let kept = |best, text, related_words| kept_of(best, text, related_words, 4);
        let deploy = "where is the deploy script?";
        assert_eq!(kept(0.5, deploy, 0.5), vec![1, 2, 4]);
        assert_eq!(kept(0.5, deploy, 0.0), vec![1, 4], "the words rule off");
        assert_eq!(kept(0.2, deploy, 0.5), vec![1, 2, 4], "words relate");
        assert_eq!(kept(0.2, "kubernetes helm chart", 0.5), vec![4]);
        assert_eq!(kept(0.2, deploy, 0.0), vec![4]);
        // Half the words is enough, fewer is not.
        assert_eq!(kept(0.2, "deploy kubernetes", 0.5), vec![1, 2, 4]);
        assert_eq!(kept(0.2, "deploy kubernetes helm", 0.5), vec![4]);
        // Only the hits the search would return are looked at.
        assert_eq!(kept_of(0.2, deploy, 0.5, 1), vec![4]);
        assert_eq!(kept_of(0.2, deploy, 0.5, 2), vec![1, 2, 4]);
        // Stopwords relate nothing.
        assert_eq!(kept(0.2, "where is the", 0.5), vec![4]);
    }

    /// A memory far longer than `long_words` that holds the question's
    /// words many times gives way to a short one that says them once.
    #[test]
    fn a_long_memory_gives_way_to_a_short_one_that_says_the_words() {
        let (_dir, conn) = crate::store::test_db();
        let long = format!(
            "Assistant: {}",
            "To configure the flask login session you set the secret key and the login \
             manager, then the session cookie. "
                .repeat(20)
        );
        let short = "User: I set up flask login for the session in my app.";
        for content in [short, long.as_str()] {
            conn.execute(
                "INSERT INTO memories (namespace, content) VALUES ('default', ?1)",
                [content],
            )
            .unwrap();
        }
        let view = View::namespace("default", "a", "s");
        let now = OffsetDateTime::now_utc();
        let first = |rank: &RankConfig| -> i64 {
            let hits = run(
                &conn,
                &Query {
                    text: "flask login session",
                    syntax: QuerySyntax::Plain,
                    mode: SearchMode::Lexical,
                    view: &view,
                    limit: 10,
                    offset: 0,
                    explain: false,
                    now,
                    rank,
                    semantic: None,
                    vocab: None,
                    frequencies: None,
                },
            )
            .unwrap();
            assert_eq!(hits.len(), 2);
            hits[0].memory.id
        };
        let off = RankConfig {
            long_words: 0,
            ..RankConfig::default()
        };
        assert_eq!(first(&off), 2, "BM25 alone prefers the long answer");
        assert_eq!(first(&RankConfig::default()), 1);
    }
}
