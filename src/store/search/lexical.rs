//! Lexical search: FTS5 BM25 over a memory's content, subject, thread
//! context and date words (schema v11), each column with its weight; the
//! namespace is a token of its own column (schema v13), matched inside the
//! index so that only the namespaces a search reads are ranked.

use rusqlite::types::Value;
use rusqlite::{Connection, params_from_iter};

use super::super::StoreError;
use super::Candidate;
use crate::gate::{Namespaces, View};

/// The index token of a namespace (the `ns` column of schema v13): `ns`,
/// the hex digits of its UTF-8 bytes, `0` — letters and digits only, one
/// token, never changed by the stemmer. SQLite computes the same in
/// `memories_fts_source`: `'ns' || hex(namespace) || '0'`.
pub fn namespace_token(namespace: &str) -> String {
    let mut t = String::with_capacity(3 + 2 * namespace.len());
    t.push_str("ns");
    for b in namespace.bytes() {
        t.push_str(&format!("{b:02x}"));
    }
    t.push('0');
    t
}

/// The FTS5 query limited to the namespaces the view reads: `ns : (…) AND
/// (query)`. FTS5 then ranks only their rows (a search in one namespace of
/// many no longer scores every namespace's matches). `All` adds nothing.
pub fn in_namespaces(fts_query: &str, view: &View) -> String {
    match &view.namespaces {
        Namespaces::Only(list) if !list.is_empty() => {
            let tokens: Vec<String> = list
                .iter()
                .map(|n| super::words::phrase(&namespace_token(n)))
                .collect();
            format!("ns : ({}) AND ({fts_query})", tokens.join(" OR "))
        }
        _ => fts_query.to_string(),
    }
}

/// Whether no memory lies outside these namespaces (one index seek per
/// gap between them). The namespace token would then match every row: FTS5
/// would walk its doclist alongside the query's for nothing (40% of a
/// search's FTS5 time in a database of one namespace), and the ranking is
/// the same without it (its column weighs 0).
///
/// # Errors
/// SQLite errors.
fn holds_only(conn: &Connection, list: &[String]) -> Result<bool, StoreError> {
    if list.is_empty() {
        return Ok(false);
    }
    let mut sorted: Vec<&str> = list.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    sorted.dedup();
    // Text compares bytewise in SQLite (BINARY) as in Rust.
    let mut below =
        conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM memories WHERE namespace < ?1)")?;
    let mut between = conn.prepare_cached(
        "SELECT EXISTS (SELECT 1 FROM memories WHERE namespace > ?1 AND namespace < ?2)",
    )?;
    let mut above =
        conn.prepare_cached("SELECT EXISTS (SELECT 1 FROM memories WHERE namespace > ?1)")?;
    if below.query_row([sorted[0]], |r| r.get::<_, bool>(0))? {
        return Ok(false);
    }
    for pair in sorted.windows(2) {
        if between.query_row([pair[0], pair[1]], |r| r.get::<_, bool>(0))? {
            return Ok(false);
        }
    }
    Ok(!above.query_row([sorted[sorted.len() - 1]], |r| r.get::<_, bool>(0))?)
}

/// The most arguments SQLite takes in one function call
/// (`SQLITE_MAX_FUNCTION_ARG` of the bundled build).
const MAX_FUNCTION_ARGS: usize = 1000;

/// BM25 weights of the index's columns besides content (1.0) and subject
/// (2.0).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weights {
    /// The thread context: the text of the memory's neighbours.
    pub context: f64,
    /// The date words.
    pub date: f64,
}

impl Weights {
    /// The column weights `rank` sets (`[search] context_weight`,
    /// `date_weight`).
    pub fn of(rank: &super::rank::RankConfig) -> Weights {
        Weights {
            context: rank.context_weight,
            date: rank.date_weight,
        }
    }

    /// The weight of each column (content, subject, context, date,
    /// namespace) as SQL arguments. Formatted with all their digits: a
    /// statement is cached per text, and the weights change only with the
    /// config.
    fn columns(&self) -> String {
        format!("1.0, 2.0, {:?}, {:?}, 0.0", self.context, self.date)
    }

    /// The `bm25()` call with these weights.
    fn bm25(&self) -> String {
        format!("bm25(memories_fts, {})", self.columns())
    }
}

/// How [`candidates`] scores a row: FTS5's BM25 with the column weights,
/// times memd's coverage and length factors ([`super::fts5`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Scoring {
    /// Column weights.
    pub weights: Weights,
    /// The length rule ([`super::rank::length_factor`]; 0: off).
    pub long_words: usize,
    /// The length rule's exponent.
    pub long_exponent: f64,
    /// How much the share of the query's phrases found in a memory's
    /// content counts (0: not at all).
    pub coverage: f64,
    /// The document frequency of each phrase of the query, in order, when
    /// known (the others are counted by FTS5), and its captured turns when
    /// the index holds any (each kind of row then weighs words among its
    /// own kind, [`super::fts5`]).
    pub frequencies: super::fts5::Counts,
}

impl Scoring {
    /// Plain BM25 with these weights: no coverage, no length rule, every
    /// phrase counted by FTS5.
    pub fn bm25(weights: &Weights) -> Scoring {
        Scoring {
            weights: *weights,
            long_words: 0,
            long_exponent: 0.0,
            coverage: 0.0,
            frequencies: super::fts5::Counts::default(),
        }
    }

    /// The `memd_rank()` call for a query whose first `skipped` phrases
    /// are no query words, and its parameters from `?first` on.
    fn call(&self, skipped: usize, first: usize) -> (String, Vec<Value>) {
        let mut params = vec![
            Value::Integer(i64::try_from(self.long_words).unwrap_or(i64::MAX)),
            Value::Real(self.long_exponent),
            Value::Real(self.coverage),
        ];
        params.extend(std::iter::repeat_n(Value::Integer(-1), skipped));
        let counts = &self.frequencies;
        params.extend(counts.all.iter().map(|&n| Value::Integer(n)));
        if let Some(turns) = counts
            .captured
            .as_ref()
            .filter(|t| !t.is_empty() && t.len() == counts.all.len())
        {
            params.extend(std::iter::repeat_n(Value::Integer(-1), skipped));
            params.extend(turns.iter().map(|&n| Value::Integer(n)));
        }
        let arg = |i: usize| format!("?{}", first + i);
        let mut args: Vec<String> = (0..3).map(arg).collect();
        args.push(self.weights.columns());
        args.extend((3..params.len()).map(arg));
        let sql = format!("{}(memories_fts, {})", super::fts5::NAME, args.join(", "));
        (sql, params)
    }
}

/// Up to `fetch` rows matching an FTS5 query under the view's filters, best
/// first by `scoring` (higher is better), with that score as `raw`. Only
/// what ranking needs is read; full rows are loaded for the hits that make
/// the cut. The query is limited to the view's namespaces inside the index
/// ([`in_namespaces`]).
///
/// The best matches are ranked inside the FTS index first (its own
/// statistics, no table row read), and only those are joined with
/// `memories` and checked against the view: joining every match before the
/// sort made a search read a row per match (3× slower at 100K memories).
/// When the view leaves fewer than `fetch` of them, the window grows until
/// it does or every match was seen.
///
/// # Errors
/// [`StoreError::InvalidInput`] when FTS5 refuses the query (only possible
/// with the FTS syntax), SQLite errors otherwise.
pub fn candidates(
    conn: &Connection,
    fts_query: &str,
    view: &View,
    fetch: u32,
    scoring: &Scoring,
) -> Result<Vec<Candidate>, StoreError> {
    // The namespace tokens come first in the query: phrases no ranking
    // counts.
    let (fts_query, skipped) = &match &view.namespaces {
        Namespaces::Only(list) if !holds_only(conn, list)? => {
            (in_namespaces(fts_query, view), list.len())
        }
        _ => (fts_query.to_string(), 0),
    };
    // A quarter more than asked for: the view rarely hides many of the
    // best matches, and each row of the window is read (at 100K memories,
    // reading twice the rows cost a third of a search); when it hides more,
    // the window grows below. The rows returned do not depend on it.
    let fetch_rows = i64::from(fetch.max(1));
    let mut window = fetch_rows + (fetch_rows / 4).max(8);
    loop {
        let (rows, matched) =
            window_candidates(conn, fts_query, *skipped, view, fetch, window, scoring)?;
        if rows.len() >= fetch as usize || matched < window {
            return Ok(rows);
        }
        window = window.saturating_mul(8);
    }
}

/// The BM25 (higher is better) of an FTS5 query for the rows it matches
/// with ids in `lo..=hi`, with the whole index's statistics: what the query
/// adds to those rows' scores.
///
/// One scan of the query's doclist within the range: FTS5 computes a
/// phrase's document frequency once per scan, so looking rows up one by
/// one (`rowid IN (…)`) would count the whole doclist again for each row.
///
/// # Errors
/// As [`candidates`].
pub fn scores_in_range(
    conn: &Connection,
    fts_query: &str,
    lo: i64,
    hi: i64,
    weights: &Weights,
) -> Result<Vec<(i64, f64)>, StoreError> {
    let sql = format!(
        "SELECT rowid, {} FROM memories_fts WHERE memories_fts MATCH ?1 \
         AND rowid BETWEEN ?2 AND ?3",
        weights.bm25()
    );
    let mut stmt = conn.prepare_cached(&sql)?;
    let rows = stmt.query_map((fts_query, lo, hi), |r| {
        Ok((r.get(0)?, -r.get::<_, f64>(1)?))
    });
    rows.and_then(|r| r.collect::<Result<Vec<_>, _>>())
        .map_err(query_error)
}

/// One round of [`candidates`]: the `window` best matches by score, those
/// the view keeps (at most `fetch`), and how many matches the window held.
fn window_candidates(
    conn: &Connection,
    fts_query: &str,
    skipped: usize,
    view: &View,
    fetch: u32,
    window: i64,
    scoring: &Scoring,
) -> Result<(Vec<Candidate>, i64), StoreError> {
    let mut params = vec![Value::Text(fts_query.to_string()), Value::Integer(window)];
    let (rank, rank_params) = scoring.call(skipped, params.len() + 1);
    // The table and the five column weights are arguments too. The search
    // handler's limits keep a query far below SQLite's; this says so in
    // words should another caller not.
    if rank_params.len() + 6 > MAX_FUNCTION_ARGS {
        return Err(StoreError::InvalidInput(format!(
            "the search has too many words and namespaces together ({} phrases); search for \
             fewer words or namespaces",
            skipped + scoring.frequencies.all.len()
        )));
    }
    params.extend(rank_params);
    // CROSS JOIN keeps the window the outer loop: a plain JOIN lets the
    // planner walk the whole namespace and look each row up.
    let mut sql = format!(
        "WITH top AS MATERIALIZED (\
           SELECT rowid AS id, {rank} AS score FROM memories_fts \
           WHERE memories_fts MATCH ?1 ORDER BY score DESC, rowid DESC LIMIT ?2) \
         SELECT m.id, m.content, m.subject, m.category, m.pinned, m.updated_at, top.score, \
           (SELECT count(*) FROM top) \
         FROM top CROSS JOIN memories m ON m.id = top.id WHERE 1"
    );
    view.push_conditions(&mut sql, &mut params);
    params.push(Value::Integer(i64::from(fetch)));
    sql.push_str(&format!(
        " ORDER BY top.score DESC, m.id DESC LIMIT ?{}",
        params.len()
    ));
    let mut stmt = conn.prepare_cached(&sql)?;
    let mut matched = 0;
    let rows = stmt.query_map(params_from_iter(params), |row| {
        matched = row.get(7)?;
        Ok(Candidate {
            id: row.get(0)?,
            content: row.get::<_, Option<String>>(1)?.unwrap_or_default(),
            subject: row.get(2)?,
            category: row.get(3)?,
            pinned: row.get::<_, i64>(4)? != 0,
            updated_at: row.get(5)?,
            raw: row.get(6)?,
        })
    });
    let hits = rows.and_then(|r| r.collect::<Result<Vec<_>, _>>());
    let hits = hits.map_err(query_error)?;
    if hits.is_empty() {
        // No row passed the view: was the window full?
        matched = conn
            .prepare_cached(
                "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ?1 \
                 LIMIT ?2)",
            )?
            .query_row((fts_query, window), |r| r.get(0))
            .map_err(query_error)?;
    }
    Ok((hits, matched))
}

/// An error of running an FTS5 query: invalid input when FTS5 refused the
/// query — a plain `SQLITE_ERROR` while running the MATCH (syntax errors,
/// unterminated strings, unknown columns). I/O and corruption errors have
/// their own codes and stay internal errors.
fn query_error(e: rusqlite::Error) -> StoreError {
    match &e {
        rusqlite::Error::SqliteFailure(f, Some(msg)) if f.code == rusqlite::ErrorCode::Unknown => {
            StoreError::InvalidInput(format!("invalid FTS query: {msg}"))
        }
        _ => StoreError::from(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db() -> (tempfile::TempDir, Connection) {
        crate::store::test_db()
    }

    /// The token this code searches for is the one SQLite writes into the
    /// index (`'ns' || hex(namespace) || '0'`), for any namespace — and a
    /// search in one namespace matches only its rows inside the index.
    #[test]
    fn the_namespace_token_is_the_one_the_index_holds() {
        let (_dir, conn) = db();
        let namespaces = ["default", "é/ü x", "main", "a.b~2", "日本"];
        for ns in namespaces {
            conn.execute(
                "INSERT INTO memories (namespace, content) VALUES (?1, 'the deploy script')",
                [ns],
            )
            .unwrap();
            let sql: String = conn
                .query_row("SELECT lower('ns' || hex(?1) || '0')", [ns], |r| r.get(0))
                .unwrap();
            assert_eq!(namespace_token(ns), sql, "{ns}");
        }
        for ns in namespaces {
            let view = View::namespace(ns, "a", "s");
            let q = in_namespaces("\"deploy\"", &view);
            let found: Vec<String> = conn
                .prepare(
                    "SELECT m.namespace FROM memories_fts f JOIN memories m ON m.id = f.rowid \
                     WHERE memories_fts MATCH ?1",
                )
                .unwrap()
                .query_map([&q], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            assert_eq!(found, [ns], "{q}");
        }
        // Every namespace: the query as it is.
        let mut all = View::namespace("default", "a", "s");
        all.namespaces = Namespaces::All;
        assert_eq!(in_namespaces("\"deploy\"", &all), "\"deploy\"");
        // Several: any of them.
        let mut two = View::namespace("default", "a", "s");
        two.namespaces = Namespaces::Only(vec!["main".into(), "日本".into()]);
        let n: i64 = conn
            .query_row(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1",
                [in_namespaces("\"deploy\" OR \"script\"", &two)],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(n, 2);
    }

    /// The namespace token is left out exactly when no memory lies outside
    /// the namespaces searched.
    #[test]
    fn only_namespaces_that_leave_rows_out_need_the_token() {
        let (_dir, conn) = db();
        let list = |names: &[&str]| names.iter().map(ToString::to_string).collect::<Vec<_>>();
        assert!(!holds_only(&conn, &list(&[])).unwrap());
        // An empty database: nothing outside any list.
        assert!(holds_only(&conn, &list(&["b"])).unwrap());
        for ns in ["b", "d"] {
            conn.execute(
                "INSERT INTO memories (namespace, content) VALUES (?1, 'the deploy script')",
                [ns],
            )
            .unwrap();
        }
        assert!(!holds_only(&conn, &list(&["b"])).unwrap());
        assert!(!holds_only(&conn, &list(&["d"])).unwrap());
        assert!(holds_only(&conn, &list(&["d", "b"])).unwrap());
        assert!(holds_only(&conn, &list(&["a", "b", "c", "d", "e"])).unwrap());
        assert!(!holds_only(&conn, &list(&["a", "b", "e"])).unwrap());
        conn.execute(
            "INSERT INTO memories (namespace, content) VALUES ('c', 'the deploy plan')",
            [],
        )
        .unwrap();
        assert!(!holds_only(&conn, &list(&["b", "d"])).unwrap());
        assert!(holds_only(&conn, &list(&["b", "c", "d"])).unwrap());
        // Either way a search finds the rows of its namespaces only.
        let w = Weights {
            context: 0.7,
            date: 2.0,
        };
        let found = |names: &[&str]| {
            let mut view = View::namespace("b", "a", "s");
            view.namespaces = Namespaces::Only(list(names));
            let mut ids: Vec<i64> = candidates(&conn, "\"deploy\"", &view, 10, &Scoring::bm25(&w))
                .unwrap()
                .iter()
                .map(|c| c.id)
                .collect();
            ids.sort_unstable();
            ids
        };
        assert_eq!(found(&["b"]), [1]);
        assert_eq!(found(&["b", "c", "d"]), [1, 2, 3]);
        assert_eq!(found(&["c", "d"]), [2, 3]);
    }

    /// A thread neighbour's text in the context column is its first 450
    /// characters: a long neighbour's tail is not searchable through it.
    #[test]
    fn a_long_neighbour_lends_only_its_start() {
        let (_dir, conn) = db();
        let long = format!("opening words {} closingword", "filler ".repeat(100));
        for (pos, content) in [(1, "short question"), (2, long.as_str())] {
            conn.execute(
                "INSERT INTO memories (namespace, content, thread, thread_pos) \
                 VALUES ('default', ?1, 't', ?2)",
                (content, pos),
            )
            .unwrap();
        }
        let view = View::namespace("default", "a", "s");
        let w = Weights {
            context: 0.7,
            date: 2.0,
        };
        let ids = |q: &str| -> Vec<i64> {
            let mut v: Vec<i64> = candidates(&conn, q, &view, 10, &Scoring::bm25(&w))
                .unwrap()
                .iter()
                .map(|c| c.id)
                .collect();
            v.sort_unstable();
            v
        };
        // The first row is found through its neighbour's start …
        assert_eq!(ids("\"opening\""), [1, 2]);
        // … not through the end of it.
        assert_eq!(ids("\"closingword\""), [2]);
    }
}
