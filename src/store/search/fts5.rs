//! `memd_rank`: memd's lexical score computed inside FTS5, as an auxiliary
//! function registered on every connection that searches.
//!
//! It is FTS5's own `bm25()` (k1 1.2, b 0.75, a weight per column, the
//! row's length over all columns), times two factors of memd's ranking
//! ([`super::rank`]), so that FTS5 orders the rows by the score the search
//! ranks them by and only the best need to be read:
//!
//! - **coverage**: `1 − c + c × (share of the query's words found in the
//!   content column)`, `c` = `coverage` (0: off, as for FTS syntax);
//! - **the length rule**: `(long_words / tokens) ^ long_exponent` for a
//!   content column of more than `long_words` tokens.
//!
//! And it takes each phrase's document frequency as an argument when the
//! caller knows it: `bm25()` counts every phrase's rows for each query,
//! walking the phrase's whole doclist (a quarter of a search's time at 38K
//! long memories); memd keeps the counts of the current generation
//! ([`Frequencies`]).
//!
//! ```sql
//! memd_rank(memories_fts, long_words, long_exponent, coverage,
//!           w_col0, …, w_col(C−1), df_phrase0, df_phrase1, …
//!           [, cdf_phrase0, cdf_phrase1, …])
//! ```
//!
//! One weight per column of the table. Per phrase, in the order the MATCH
//! expression names them: its document frequency; NULL (or no argument)
//! to count it here as `bm25()` does; a negative number for a phrase that
//! is no query word (the namespace token): it adds nothing and does not
//! count for coverage.
//!
//! **Two kinds of rows** (schema v19): a captured turn's namespace column
//! holds a second token ([`CAPTURED_TOKEN`]). When every phrase's frequency
//! is given twice — over all rows, then over captured turns only (a
//! negative number again for the namespace token) — each row's words are
//! weighed by their IDF among rows of its own kind, and the row's BM25 is
//! scaled by `Σ IDF(all rows) / Σ IDF(its kind)` over the query's words:
//! kept memories then rank among themselves exactly as without the
//! captured turns, captured turns as without the kept memories, and the
//! two kinds compare on one scale (a row's share of its kind's best
//! possible match). Without captured turns it is the same as one kind.
//! The length normalisation stays the whole index's: a short kept memory
//! beside long turns keeps the advantage of its length. The mark is no
//! text: a row's length and the average leave it out, with or without the
//! second list, so a captured chat ranks as the same chat ingested.
//!
//! The only `unsafe` code of the store: FTS5's C API for auxiliary
//! functions, which rusqlite does not wrap. Every pointer comes from SQLite
//! for the duration of one call; nothing here panics across the boundary
//! (a panic becomes an SQLite error).
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::{c_int, c_void};
use std::ptr;
use std::sync::Mutex;

use rusqlite::{Connection, ffi};

use super::super::StoreError;
use crate::sync;

/// The function's name in SQL.
pub const NAME: &str = "memd_rank";

/// BM25's term-frequency saturation (FTS5's `bm25()` value).
const K1: f64 = 1.2;
/// BM25's length normalisation (FTS5's `bm25()` value).
const B: f64 = 0.75;

/// The second token of a captured turn's namespace column (schema v19).
/// No namespace token can be it: those are `ns`, hex digits and `0`.
pub const CAPTURED_TOKEN: &str = "nscapture0";

/// The FTS5 query of every captured turn (its mark in the namespace
/// column).
fn captured_turns() -> String {
    format!("ns : {}", super::words::phrase(CAPTURED_TOKEN))
}

/// The namespace column of `memories_fts`: one token per row, two for a
/// captured turn.
const NS_COLUMN: c_int = 4;

/// Registers `memd_rank` on `conn`.
///
/// # Errors
/// [`StoreError::Sqlite`] when the connection has no FTS5 or refuses the
/// function.
pub fn register(conn: &Connection) -> Result<(), StoreError> {
    let failed = |what: &str, rc: c_int| {
        StoreError::from(rusqlite::Error::SqliteFailure(
            ffi::Error::new(rc),
            Some(format!("cannot register {NAME}: {what}")),
        ))
    };
    // SAFETY: the handle is the live connection `conn` borrows; the
    // statement is prepared, stepped and finalized on it here, and the
    // pointer bound to it is a local that outlives the step. `fts5(?1)` with
    // an `fts5_api_ptr` pointer is FTS5's documented way to hand out its
    // API; the API object lives as long as the connection.
    unsafe {
        let db = conn.handle();
        let mut stmt: *mut ffi::sqlite3_stmt = ptr::null_mut();
        let rc = ffi::sqlite3_prepare_v2(
            db,
            c"SELECT fts5(?1)".as_ptr(),
            -1,
            &raw mut stmt,
            ptr::null_mut(),
        );
        if rc != ffi::SQLITE_OK {
            return Err(failed("no FTS5", rc));
        }
        let mut api: *mut ffi::fts5_api = ptr::null_mut();
        ffi::sqlite3_bind_pointer(
            stmt,
            1,
            (&raw mut api).cast::<c_void>(),
            c"fts5_api_ptr".as_ptr(),
            None,
        );
        ffi::sqlite3_step(stmt);
        ffi::sqlite3_finalize(stmt);
        if api.is_null() || (*api).iVersion < 2 {
            return Err(failed("FTS5 gave no API", ffi::SQLITE_ERROR));
        }
        let Some(create) = (*api).xCreateFunction else {
            return Err(failed("FTS5 gave no xCreateFunction", ffi::SQLITE_ERROR));
        };
        let rc = create(
            api,
            c"memd_rank".as_ptr(),
            ptr::null_mut(),
            Some(rank),
            None,
        );
        if rc != ffi::SQLITE_OK {
            return Err(failed("xCreateFunction failed", rc));
        }
    }
    Ok(())
}

/// What one query computes once (FTS5's per-query auxiliary data).
struct Prepared {
    long_words: f64,
    long_exponent: f64,
    coverage: f64,
    /// Weight per column.
    weights: Vec<f64>,
    /// The IDFs of kept memories (of every row with one kind).
    kept: Kind,
    /// Those of captured turns, when the caller gave their frequencies.
    captured: Option<Kind>,
    /// Query words (phrases with an IDF).
    words: usize,
    /// Whether the index holds captured turns (rows whose length is
    /// counted without their mark).
    marked: bool,
    /// Average row length in tokens, over all columns (without the
    /// captured turns' marks).
    avgdl: f64,
}

/// How one kind of row is scored.
struct Kind {
    /// Per phrase: its IDF among rows of this kind, or `None` when it is
    /// not a query word.
    idf: Vec<Option<f64>>,
    /// `Σ IDF(all rows) / Σ IDF(this kind)` over the query's words.
    scale: f64,
}

impl Kind {
    /// The kind of rows `rows` of which hold each phrase as `df` says, on
    /// the scale of `all` (the IDFs over every row).
    fn of(rows: f64, df: &[Option<f64>], all: &[Option<f64>]) -> Kind {
        let idf: Vec<Option<f64>> = df.iter().map(|d| d.map(|d| idf_of(rows, d))).collect();
        let sum = |v: &[Option<f64>]| v.iter().flatten().sum::<f64>();
        let own = sum(&idf);
        Kind {
            scale: if own > 0.0 { sum(all) / own } else { 1.0 },
            idf,
        }
    }
}

/// An SQLite result code as an error.
struct Rc(c_int);

/// Checks an API call's result code.
fn ok(rc: c_int) -> Result<(), Rc> {
    if rc == ffi::SQLITE_OK {
        Ok(())
    } else {
        Err(Rc(rc))
    }
}

/// The value of argument `i` as a float (`None`: missing or NULL).
///
/// # Safety
/// `args` holds `n` valid values.
unsafe fn real_arg(args: *mut *mut ffi::sqlite3_value, n: c_int, i: c_int) -> Option<f64> {
    if i >= n {
        return None;
    }
    // SAFETY: `i < n` and the caller vouches for `n` values.
    unsafe {
        let v = *args.add(i as usize);
        if ffi::sqlite3_value_type(v) == ffi::SQLITE_NULL {
            None
        } else {
            Some(ffi::sqlite3_value_double(v))
        }
    }
}

/// Counts the rows of a phrase (the callback of `xQueryPhrase`).
unsafe extern "C" fn count_row(
    _api: *const ffi::Fts5ExtensionApi,
    _fts: *mut ffi::Fts5Context,
    user: *mut c_void,
) -> c_int {
    // SAFETY: `user` is the `i64` counter `prepare` passes.
    unsafe {
        *user.cast::<i64>() += 1;
    }
    ffi::SQLITE_OK
}

unsafe extern "C" fn drop_prepared(p: *mut c_void) {
    // SAFETY: `p` is the box `prepared` leaked, handed back once by FTS5.
    drop(unsafe { Box::from_raw(p.cast::<Prepared>()) });
}

/// The query's [`Prepared`], computed on the first row.
///
/// # Safety
/// The arguments are those FTS5 passed to [`rank`].
unsafe fn prepared<'a>(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    n: c_int,
    args: *mut *mut ffi::sqlite3_value,
) -> Result<&'a Prepared, Rc> {
    let (Some(get), Some(set)) = (api.xGetAuxdata, api.xSetAuxdata) else {
        return Err(Rc(ffi::SQLITE_ERROR));
    };
    // SAFETY: FTS5's own calls on its own context; the auxiliary data is
    // the `Prepared` leaked below, alive until FTS5 drops it with the query.
    unsafe {
        let p = get(fts, 0);
        if !p.is_null() {
            return Ok(&*p.cast::<Prepared>());
        }
        let columns = api.xColumnCount.map_or(0, |f| f(fts));
        let phrases = api.xPhraseCount.map_or(0, |f| f(fts));
        let mut rows: i64 = 0;
        ok(api
            .xRowCount
            .map_or(ffi::SQLITE_ERROR, |f| f(fts, &raw mut rows)))?;
        let mut tokens: i64 = 0;
        ok(api
            .xColumnTotalSize
            .map_or(ffi::SQLITE_ERROR, |f| f(fts, -1, &raw mut tokens)))?;
        let weights = (0..columns)
            .map(|c| real_arg(args, n, 3 + c).unwrap_or(1.0))
            .collect();
        let mut df = Vec::with_capacity(phrases as usize);
        for p in 0..phrases {
            df.push(match real_arg(args, n, 3 + columns + p) {
                Some(d) if d < 0.0 => None,
                Some(d) => Some(d),
                None => {
                    let mut hits: i64 = 0;
                    let query = api.xQueryPhrase.ok_or(Rc(ffi::SQLITE_ERROR))?;
                    ok(query(
                        fts,
                        p,
                        (&raw mut hits).cast::<c_void>(),
                        Some(count_row),
                    ))?;
                    Some(hits as f64)
                }
            });
        }
        let idf: Vec<Option<f64>> = df
            .iter()
            .map(|d| d.map(|d| idf_of(rows as f64, d)))
            .collect();
        // One namespace token per row, a second per captured turn.
        let turns = if columns > NS_COLUMN {
            let mut ns_tokens: i64 = 0;
            ok(api
                .xColumnTotalSize
                .map_or(ffi::SQLITE_ERROR, |f| f(fts, NS_COLUMN, &raw mut ns_tokens)))?;
            (ns_tokens - rows).clamp(0, rows)
        } else {
            0
        };
        let words = idf.iter().filter(|i| i.is_some()).count();
        // Captured turns' frequencies follow when every phrase has both.
        let (kept, captured) = if n == 3 + columns + 2 * phrases && turns > 0 {
            let cdf: Vec<Option<f64>> = (0..phrases)
                .map(|p| real_arg(args, n, 3 + columns + phrases + p).filter(|d| *d >= 0.0))
                .collect();
            let (kept, turns) = by_kind(rows as f64, turns as f64, &df, &cdf, &idf);
            (kept, Some(turns))
        } else {
            (Kind { idf, scale: 1.0 }, None)
        };
        let prepared = Box::new(Prepared {
            long_words: real_arg(args, n, 0).unwrap_or(0.0),
            long_exponent: real_arg(args, n, 1).unwrap_or(0.0),
            coverage: real_arg(args, n, 2).unwrap_or(0.0).clamp(0.0, 1.0),
            weights,
            words,
            kept,
            captured,
            marked: turns > 0,
            // The captured turns' mark is no text: not part of a length.
            avgdl: if rows > 0 {
                (tokens - turns) as f64 / rows as f64
            } else {
                1.0
            },
        });
        let raw = Box::into_raw(prepared);
        // On failure FTS5 calls the destructor itself.
        ok(set(fts, raw.cast::<c_void>(), Some(drop_prepared)))?;
        Ok(&*raw)
    }
}

/// The query words' IDFs among each kind of row: kept rows (`rows −
/// turns` of them) and captured turns. `df` is each phrase's count among
/// all rows, `cdf` among captured turns, `idf` its IDF among all rows.
fn by_kind(
    rows: f64,
    turns: f64,
    df: &[Option<f64>],
    cdf: &[Option<f64>],
    idf: &[Option<f64>],
) -> (Kind, Kind) {
    // Per query word: its kept rows, its captured turns.
    let (kept_df, captured_df): (Vec<Option<f64>>, Vec<Option<f64>>) = df
        .iter()
        .zip(cdf)
        .map(|(d, c)| {
            let c = c.unwrap_or(0.0);
            (d.map(|d| (d - c).max(0.0)), d.map(|_| c))
        })
        .unzip();
    (
        Kind::of(rows - turns, &kept_df, idf),
        Kind::of(turns, &captured_df, idf),
    )
}

/// BM25's IDF as FTS5 computes it: `ln((N − n + 0.5) / (n + 0.5))`, at
/// least 1e-6 (a phrase in more than half the rows would otherwise count
/// against a row).
pub fn idf_of(rows: f64, df: f64) -> f64 {
    let idf = ((rows - df + 0.5) / (df + 0.5)).ln();
    if idf > 0.0 { idf } else { 1e-6 }
}

/// The score of the current row.
///
/// # Safety
/// As [`prepared`].
unsafe fn score(
    api: &ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    n: c_int,
    args: *mut *mut ffi::sqlite3_value,
) -> Result<f64, Rc> {
    // SAFETY: FTS5's calls on its context, for the row it is on.
    unsafe {
        let q = prepared(api, fts, n, args)?;
        let size = api.xColumnSize.ok_or(Rc(ffi::SQLITE_ERROR))?;
        let (first, next) = match (api.xPhraseFirst, api.xPhraseNext) {
            (Some(f), Some(n)) => (f, n),
            _ => return Err(Rc(ffi::SQLITE_ERROR)),
        };
        let mut all: c_int = 0;
        ok(size(fts, -1, &raw mut all))?;
        let mut content: c_int = 0;
        ok(size(fts, 0, &raw mut content))?;
        let mut captured = false;
        if q.marked {
            let mut ns: c_int = 0;
            ok(size(fts, NS_COLUMN, &raw mut ns))?;
            captured = ns > 1;
            all -= (ns - 1).max(0);
        }
        let kind = match &q.captured {
            Some(turns) if captured => turns,
            _ => &q.kept,
        };
        let norm = K1 * (1.0 - B + B * f64::from(all) / q.avgdl);
        let mut bm25 = 0.0;
        let mut covered = 0usize;
        for (p, idf) in kind.idf.iter().enumerate() {
            let Some(idf) = idf else { continue };
            let mut it = ffi::Fts5PhraseIter {
                a: ptr::null(),
                b: ptr::null(),
            };
            let (mut col, mut off): (c_int, c_int) = (-1, -1);
            ok(first(
                fts,
                p as c_int,
                &raw mut it,
                &raw mut col,
                &raw mut off,
            ))?;
            let mut freq = 0.0;
            let mut in_content = false;
            while col >= 0 {
                freq += q.weights.get(col as usize).copied().unwrap_or(1.0);
                in_content |= col == 0;
                next(fts, &raw mut it, &raw mut col, &raw mut off);
            }
            if freq > 0.0 {
                bm25 += idf * (freq * (K1 + 1.0)) / (freq + norm);
            }
            covered += usize::from(in_content);
        }
        let share = if q.words == 0 {
            1.0
        } else {
            covered as f64 / q.words as f64
        };
        let coverage = 1.0 - q.coverage + q.coverage * share;
        let length = super::rank::length_factor(
            usize::try_from(content).unwrap_or(0),
            q.long_words as usize,
            q.long_exponent,
        );
        Ok(bm25 * kind.scale * coverage * length)
    }
}

/// The function FTS5 calls for each row.
unsafe extern "C" fn rank(
    api: *const ffi::Fts5ExtensionApi,
    fts: *mut ffi::Fts5Context,
    ctx: *mut ffi::sqlite3_context,
    n: c_int,
    args: *mut *mut ffi::sqlite3_value,
) {
    let result = std::panic::catch_unwind(|| {
        // SAFETY: FTS5 passes its live API, context and `n` arguments.
        unsafe {
            match api.as_ref() {
                Some(api) => score(api, fts, n, args),
                None => Err(Rc(ffi::SQLITE_ERROR)),
            }
        }
    });
    // SAFETY: `ctx` is this call's result context.
    unsafe {
        match result {
            Ok(Ok(s)) => ffi::sqlite3_result_double(ctx, s),
            Ok(Err(Rc(rc))) => ffi::sqlite3_result_error_code(ctx, rc),
            Err(_) => ffi::sqlite3_result_error_code(ctx, ffi::SQLITE_INTERNAL),
        }
    }
}

/// Document frequencies of query words in the search index at one
/// generation, shared by the readers: over all rows and, when the index
/// holds captured turns, over those alone. Exact: a read at another
/// generation neither uses nor fills them (every change of the index's text
/// moves the generation), and a newer generation starts them afresh.
#[derive(Debug, Default)]
pub struct Frequencies {
    at: Mutex<Known>,
}

/// What [`Frequencies`] knows at one generation.
#[derive(Debug, Default)]
struct Known {
    generation: u64,
    /// Whether the index holds captured turns (`None`: not looked yet).
    captured: Option<bool>,
    /// Per word: its rows, and its captured turns.
    words: HashMap<String, (i64, i64)>,
}

/// The frequencies of a query's words.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Rows holding each word.
    pub all: Vec<i64>,
    /// Captured turns holding each word; `None` when the index holds no
    /// captured turn (one kind of row).
    pub captured: Option<Vec<i64>>,
}

/// At most this many words are kept (a new generation clears them anyway).
const MOST_WORDS: usize = 100_000;

impl Frequencies {
    /// The document frequencies of each word (a quoted FTS5 phrase) at
    /// `generation`, the generation of `conn`'s read transaction: known
    /// ones from memory, the others counted in the index.
    ///
    /// # Errors
    /// SQLite errors.
    pub fn of(
        &self,
        conn: &Connection,
        generation: u64,
        words: &[String],
    ) -> Result<Counts, StoreError> {
        let (mut captured, mut out): (Option<bool>, Vec<Option<(i64, i64)>>) = {
            let at = sync::lock(&self.at);
            if at.generation == generation {
                (
                    at.captured,
                    words.iter().map(|w| at.words.get(w).copied()).collect(),
                )
            } else {
                (None, vec![None; words.len()])
            }
        };
        let has_turns = match captured {
            Some(c) => c,
            None => {
                let c = holds_captured(conn)?;
                captured = Some(c);
                c
            }
        };
        let mut counted = Vec::new();
        for (w, df) in words.iter().zip(&mut out) {
            if df.is_none() {
                let phrase = super::words::phrase(w);
                let all = count(conn, &phrase)?;
                let turns = if has_turns && all > 0 {
                    count(conn, &format!("{} AND {phrase}", captured_turns()))?
                } else {
                    0
                };
                *df = Some((all, turns));
                counted.push((w.clone(), (all, turns)));
            }
        }
        {
            let mut at = sync::lock(&self.at);
            if generation > at.generation || at.words.len() >= MOST_WORDS {
                *at = Known {
                    generation,
                    ..Known::default()
                };
            }
            if at.generation == generation {
                at.captured = captured;
                at.words.extend(counted);
            }
        }
        let pairs: Vec<(i64, i64)> = out.into_iter().map(Option::unwrap_or_default).collect();
        Ok(Counts {
            all: pairs.iter().map(|p| p.0).collect(),
            captured: has_turns.then(|| pairs.iter().map(|p| p.1).collect()),
        })
    }
}

/// Whether the index holds a captured turn.
fn holds_captured(conn: &Connection) -> Result<bool, StoreError> {
    Ok(conn
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ?1)")?
        .query_row([captured_turns()], |r| r.get(0))?)
}

/// Rows of the index matching an FTS5 query.
fn count(conn: &Connection, fts_query: &str) -> Result<i64, StoreError> {
    Ok(conn
        .prepare_cached("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?1")?
        .query_row([fts_query], |r| r.get(0))?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_common_among_turns_weighs_less_there_than_among_notes() {
        // 100 rows, 60 of them captured turns; "deploy" in 10 rows, 9 of
        // them turns; a second phrase is no query word.
        let df = [Some(10.0), None];
        let cdf = [Some(9.0), None];
        let idf: Vec<Option<f64>> = df.iter().map(|d| d.map(|d| idf_of(100.0, d))).collect();
        let (kept, turns) = by_kind(100.0, 60.0, &df, &cdf, &idf);
        assert_eq!(kept.idf[0], Some(idf_of(40.0, 1.0)));
        assert_eq!(turns.idf[0], Some(idf_of(60.0, 9.0)));
        assert_eq!((kept.idf[1], turns.idf[1]), (None, None));
        assert!(kept.idf[0] > turns.idf[0]);
        // Each kind is put back on the scale of all rows.
        let scaled = |k: &Kind| k.idf[0].unwrap() * k.scale;
        assert!((scaled(&kept) - idf[0].unwrap()).abs() < 1e-9);
        assert!((scaled(&turns) - idf[0].unwrap()).abs() < 1e-9);
    }

    /// A database with memd's schema and `memd_rank`.
    fn db() -> (tempfile::TempDir, Connection) {
        crate::store::test_db()
    }

    fn add(
        conn: &Connection,
        ns: &str,
        content: &str,
        subject: Option<&str>,
        thread: Option<(&str, i64)>,
    ) {
        conn.execute(
            "INSERT INTO memories (namespace, content, subject, thread, thread_pos) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            (
                ns,
                content,
                subject,
                thread.map(|t| t.0),
                thread.map(|t| t.1),
            ),
        )
        .unwrap();
    }

    /// Every matching row's score under `rank` (an SQL expression over
    /// `memories_fts`), by rowid.
    fn scores(conn: &Connection, rank: &str, query: &str) -> Vec<(i64, f64)> {
        conn.prepare(&format!(
            "SELECT rowid, {rank} FROM memories_fts WHERE memories_fts MATCH ?1 ORDER BY rowid"
        ))
        .unwrap()
        .query_map([query], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap()
    }

    fn corpus(conn: &Connection) {
        add(
            conn,
            "a",
            "User: the deploy script lives in ops",
            Some("deploy"),
            Some(("t", 1)),
        );
        add(
            conn,
            "a",
            "Assistant: run the script with the staging flag",
            None,
            Some(("t", 2)),
        );
        add(
            conn,
            "a",
            "User: deploy again after the staging deploy failed",
            None,
            Some(("t", 3)),
        );
        add(conn, "b", "the lunch order is at noon", None, None);
        add(
            conn,
            "b",
            "a deploy on friday is a bad idea for the script",
            None,
            None,
        );
    }

    /// Without coverage, length rule or known frequencies it is FTS5's own
    /// `bm25()` with the same column weights, for every row, also with a
    /// phrase left out (the namespace token: weight 0 in `bm25()`).
    #[test]
    fn it_is_bm25_when_nothing_else_is_asked() {
        let (_dir, conn) = db();
        corpus(&conn);
        let ns = super::super::lexical::namespace_token("a");
        for query in [
            "\"deploy\" OR \"script\" OR \"staging\"".to_string(),
            "\"deploy\" \"script\"".to_string(),
            format!("ns : (\"{ns}\") AND (\"deploy\" OR \"script\")"),
        ] {
            let bm25 = scores(
                &conn,
                "-bm25(memories_fts, 1.0, 2.0, 0.7, 2.0, 0.0)",
                &query,
            );
            let skip = if query.starts_with("ns") { ", -1" } else { "" };
            let ours = scores(
                &conn,
                &format!("memd_rank(memories_fts, 0, 0.0, 0.0, 1.0, 2.0, 0.7, 2.0, 0.0{skip})"),
                &query,
            );
            assert!(!bm25.is_empty(), "{query}");
            assert_eq!(bm25.len(), ours.len(), "{query}");
            for ((id, a), (id2, b)) in bm25.iter().zip(&ours) {
                assert_eq!(id, id2);
                assert!(
                    (a - b).abs() < 1e-9,
                    "{query}: row {id}: bm25 {a}, memd_rank {b}"
                );
                assert!(*b > 0.0);
            }
        }
    }

    /// Frequencies given as arguments give the same scores as frequencies
    /// FTS5 counts; kept ones are those of the read's generation only.
    #[test]
    fn known_frequencies_score_like_counted_ones() {
        let (_dir, conn) = db();
        corpus(&conn);
        let generation = crate::store::read_generation(&conn).unwrap();
        let known = Frequencies::default();
        let words = [
            "deploy".to_string(),
            "script".to_string(),
            "nowhere".to_string(),
        ];
        // Any column counts: "script" is in row 3's context (its neighbour's
        // text).
        assert_eq!(known.of(&conn, generation, &words).unwrap().all, [4, 4, 0]);
        let query = "\"deploy\" OR \"script\" OR \"nowhere\"";
        let counted = scores(
            &conn,
            "memd_rank(memories_fts, 0, 0.0, 0.0, 1.0, 2.0, 0.7, 2.0, 0.0)",
            query,
        );
        let given = scores(
            &conn,
            "memd_rank(memories_fts, 0, 0.0, 0.0, 1.0, 2.0, 0.7, 2.0, 0.0, 4, 4, 0)",
            query,
        );
        assert_eq!(counted, given);
        // A wrong frequency changes the score: the argument is what counts.
        let wrong = scores(
            &conn,
            "memd_rank(memories_fts, 0, 0.0, 0.0, 1.0, 2.0, 0.7, 2.0, 0.0, 1, 4, 0)",
            query,
        );
        assert_ne!(counted, wrong);
        // A new row moves the generation: counted again.
        add(&conn, "b", "deploy", None, None);
        let now = crate::store::read_generation(&conn).unwrap();
        assert!(now > generation);
        assert_eq!(known.of(&conn, now, &words).unwrap().all, [5, 4, 0]);
        // A read at the older generation is not served the newer counts
        // (here the file holds the newer rows, so it counts them), and does
        // not replace them.
        assert_eq!(known.of(&conn, generation, &words[..1]).unwrap().all, [5]);
        conn.execute("DELETE FROM memories WHERE content = 'deploy'", [])
            .unwrap();
        assert_eq!(
            known.of(&conn, now, &words[..1]).unwrap().all,
            [5],
            "kept for its generation"
        );
    }

    /// A row of `words` words, each `deploy`, `script` or `filler`, in
    /// namespace `a`; a captured turn when `captured`.
    fn add_kind(conn: &Connection, content: &str, captured: bool) {
        conn.execute(
            "INSERT INTO memories (namespace, content, source) VALUES ('a', ?1, ?2)",
            (content, if captured { "capture" } else { "user" }),
        )
        .unwrap();
    }

    /// Every row's score for `query` with the frequencies `known` gives
    /// (over all rows, and over captured turns when there are any).
    fn kind_scores(conn: &Connection, words: &[String]) -> Vec<(i64, f64)> {
        let generation = crate::store::read_generation(conn).unwrap();
        let counts = Frequencies::default().of(conn, generation, words).unwrap();
        let mut args: Vec<String> = counts.all.iter().map(ToString::to_string).collect();
        args.extend(counts.captured.iter().flatten().map(ToString::to_string));
        let query: Vec<String> = words
            .iter()
            .map(|w| super::super::words::phrase(w))
            .collect();
        scores(
            conn,
            &format!(
                "memd_rank(memories_fts, 0, 0.0, 0.0, 1.0, 2.0, 0.7, 2.0, 0.0, {})",
                args.join(", ")
            ),
            &query.join(" OR "),
        )
    }

    /// Kept memories rank among themselves as if the captured turns beside
    /// them were not there, and captured turns as if the kept memories were
    /// not: each kind weighs the query's words by their rarity in its own
    /// kind. Every row has the same length here, so that the length rule,
    /// which stays the whole index's, is the same for all. And captured
    /// turns alone score as the same rows kept: their mark is no text.
    #[test]
    fn each_kind_of_row_weighs_words_among_its_own_kind() {
        let kept = [
            "deploy script filler filler",
            "deploy deploy filler filler",
            "script filler filler filler",
            "deploy script script filler",
        ];
        let turns = [
            "deploy deploy deploy filler",
            "deploy filler filler filler",
            "deploy deploy filler filler",
            "script filler filler filler",
            "deploy filler deploy filler",
            "filler filler filler filler",
        ];
        let words = ["deploy".to_string(), "script".to_string()];
        let (_a, alone) = db();
        for k in kept {
            add_kind(&alone, k, false);
        }
        let (_t, only_turns) = db();
        for t in turns {
            add_kind(&only_turns, t, true);
        }
        let (_b, both) = db();
        for k in kept {
            add_kind(&both, k, false);
        }
        for t in turns {
            add_kind(&both, t, true);
        }
        let generation = crate::store::read_generation(&both).unwrap();
        let counts = Frequencies::default()
            .of(&both, generation, &words)
            .unwrap();
        assert_eq!(counts.all, [7, 4]);
        assert_eq!(counts.captured, Some(vec![4, 1]));
        let g = crate::store::read_generation(&alone).unwrap();
        assert_eq!(
            Frequencies::default()
                .of(&alone, g, &words)
                .unwrap()
                .captured,
            None
        );

        // Score ratios within a kind are those of the kind alone.
        let ratios = |scores: &[(i64, f64)]| -> Vec<f64> {
            scores.iter().map(|s| s.1 / scores[0].1).collect()
        };
        let mixed = kind_scores(&both, &words);
        let (mixed_kept, mixed_turns) = mixed.split_at(kept.len());
        let close = |a: &[f64], b: &[f64]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-9);
        let alone_kept = ratios(&kind_scores(&alone, &words));
        // Of any lengths.
        let uneven = [
            "deploy filler",
            "deploy script filler filler filler filler",
            "script",
        ];
        let (_u, uneven_turns) = db();
        for t in uneven {
            add_kind(&uneven_turns, t, true);
        }
        for (set, rows) in [(&turns[..], &only_turns), (&uneven[..], &uneven_turns)] {
            let (_k, kept_copy) = db();
            for t in set {
                add_kind(&kept_copy, t, false);
            }
            let (marked, plain) = (kind_scores(rows, &words), kind_scores(&kept_copy, &words));
            assert_eq!(marked.len(), plain.len());
            for (a, b) in marked.iter().zip(&plain) {
                assert!((a.1 - b.1).abs() < 1e-12, "{marked:?} {plain:?}");
            }
        }
        let turn_scores = kind_scores(&only_turns, &words);
        let alone_turns = ratios(&turn_scores);
        assert!(close(&ratios(mixed_kept), &alone_kept), "{mixed_kept:?}");
        assert!(
            close(&ratios(&mixed_turns[..5]), &alone_turns),
            "{mixed_turns:?}"
        );
        // One kind, as before schema v19, mixes them: the frequencies over
        // all rows reorder the kept memories' scores.
        let one_kind = scores(
            &both,
            "memd_rank(memories_fts, 0, 0.0, 0.0, 1.0, 2.0, 0.7, 2.0, 0.0, 7, 4)",
            "\"deploy\" OR \"script\"",
        );
        assert!(!close(&ratios(&one_kind[..kept.len()]), &alone_kept));

        // A row that stops being a captured turn is indexed again as kept.
        both.execute("UPDATE memories SET source = 'user' WHERE id = 5", [])
            .unwrap();
        let generation = crate::store::read_generation(&both).unwrap();
        let counts = Frequencies::default()
            .of(&both, generation, &words)
            .unwrap();
        assert_eq!(counts.captured, Some(vec![3, 1]));
    }

    /// Coverage counts the query's words found in the content column (not
    /// the subject, the context or another phrase), and the length rule
    /// counts the content's tokens.
    #[test]
    fn coverage_and_length_scale_the_score() {
        let (_dir, conn) = db();
        // Row 1 says both words; row 2 says "deploy" in its content and
        // "script" in its subject only; row 3 is long.
        add(&conn, "a", "the deploy script", None, None);
        add(&conn, "a", "deploy it", Some("script"), None);
        let long = format!("deploy {}", "word ".repeat(399));
        add(&conn, "a", &long, None, None);
        let query = "\"deploy\" OR \"script\"";
        let base = scores(
            &conn,
            "memd_rank(memories_fts, 0, 0.0, 0.0, 1.0, 2.0, 0.7, 2.0, 0.0)",
            query,
        );
        let ranked = scores(
            &conn,
            "memd_rank(memories_fts, 100, 0.5, 0.5, 1.0, 2.0, 0.7, 2.0, 0.0)",
            query,
        );
        let factor: Vec<f64> = base.iter().zip(&ranked).map(|(a, b)| b.1 / a.1).collect();
        assert!((factor[0] - 1.0).abs() < 1e-12, "both words in the content");
        assert!(
            (factor[1] - 0.75).abs() < 1e-12,
            "one of two: 1 − 0.5 + 0.5 × 0.5"
        );
        // 400 tokens: (100 / 400)^0.5, and one word of two.
        assert!((factor[2] - 0.5 * 0.75).abs() < 1e-12, "{}", factor[2]);
        // A phrase marked as no query word does not count for coverage.
        let one_word = scores(
            &conn,
            "memd_rank(memories_fts, 0, 0.0, 0.5, 1.0, 2.0, 0.7, 2.0, 0.0, NULL, -1)",
            query,
        );
        let deploy_only = scores(
            &conn,
            "memd_rank(memories_fts, 0, 0.0, 0.0, 1.0, 2.0, 0.7, 2.0, 0.0)",
            "\"deploy\"",
        );
        for (a, b) in one_word.iter().zip(&deploy_only) {
            assert!((a.1 - b.1).abs() < 1e-9, "row {}: {} vs {}", a.0, a.1, b.1);
        }
    }

    #[test]
    fn the_idf_is_fts5s() {
        assert!((idf_of(100.0, 10.0) - (90.5f64 / 10.5).ln()).abs() < 1e-12);
        assert_eq!(idf_of(100.0, 60.0), 1e-6);
    }
}
