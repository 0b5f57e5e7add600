//! Near-duplicate rules (ARCHITECTURE.md "Write gate"): Jaccard similarity over
//! word 3-shingles with digits kept; never a merge when the numbers differ
//! ("port 5432" vs "port 5433" is an update, not a duplicate) or the text is
//! shorter than [`MIN_MERGE_WORDS`] words.

use std::collections::HashMap;
use std::hash::Hasher;
use std::sync::Arc;

/// Texts shorter than this are never merged, only reported as similar.
pub const MIN_MERGE_WORDS: usize = 8;

/// A text prepared for comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Profile {
    /// Hashed word 3-shingles, sorted, each once.
    pub shingles: Vec<u64>,
    /// Words with a digit in them, sorted.
    pub numbers: Vec<String>,
    /// Number of words.
    pub words: usize,
}

/// Lower-cased words with the punctuation around them removed (inner
/// punctuation such as `5.4` or `ops/deploy.sh` stays).
pub fn words(text: &str) -> Vec<String> {
    let (buf, spans) = word_spans(text);
    spans.iter().map(|&(a, b)| buf[a..b].to_string()).collect()
}

/// The words of [`words`] laid end to end in one buffer, and where each
/// lies in it (no allocation per word: an add compares with up to a
/// hundred candidates on the writer thread).
fn word_spans(text: &str) -> (String, Vec<(usize, usize)>) {
    let mut buf = String::with_capacity(text.len());
    let mut spans = Vec::new();
    for w in text.split_whitespace() {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric());
        if w.is_empty() {
            continue;
        }
        let start = buf.len();
        if w.is_ascii() {
            buf.push_str(w);
            buf[start..].make_ascii_lowercase();
        } else {
            buf.push_str(&w.to_lowercase());
        }
        spans.push((start, buf.len()));
    }
    (buf, spans)
}

/// The FNV-1a hash of consecutive words, as `Hash` for `[String]` feeds
/// them (a length prefix, then each word's bytes and `0xff`): stable, and
/// good enough for set membership. Sketches stored in the database are
/// these hashes, so the byte stream never changes.
fn hash<'a>(parts: impl ExactSizeIterator<Item = &'a str>) -> u64 {
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    h.write_usize(parts.len());
    for p in parts {
        h.write(p.as_bytes());
        h.write_u8(0xff);
    }
    h.finish()
}

struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

/// Shingles, numbers and word count of a text (its [`words`]).
pub fn profile(text: &str) -> Profile {
    let (buf, spans) = word_spans(text);
    let word = |&(a, b): &(usize, usize)| &buf[a..b];
    let mut shingles: Vec<u64> = if spans.len() < 3 {
        vec![hash(spans.iter().map(word))]
    } else {
        spans.windows(3).map(|w| hash(w.iter().map(word))).collect()
    };
    shingles.sort_unstable();
    shingles.dedup();
    let mut numbers: Vec<String> = spans
        .iter()
        .map(word)
        .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_string)
        .collect();
    numbers.sort();
    Profile {
        shingles,
        numbers,
        words: spans.len(),
    }
}

/// Hashes kept in a sketch.
pub const SKETCH: usize = 4;

/// The bottom-k MinHash sketch of a profile: its [`SKETCH`] smallest
/// shingle hashes (as SQLite integers). Two texts with Jaccard similarity
/// `J` share their smallest hash overall with probability `J`, so near
/// duplicates share a sketch hash with near certainty.
pub fn sketch(p: &Profile) -> Vec<i64> {
    p.shingles.iter().take(SKETCH).map(|&h| h as i64).collect()
}

/// Jaccard similarity of two shingle sets.
pub fn jaccard(a: &Profile, b: &Profile) -> f64 {
    if a.shingles.is_empty() && b.shingles.is_empty() {
        return 1.0;
    }
    // Both sorted: one merge walk.
    let (mut i, mut j, mut inter) = (0, 0, 0);
    while i < a.shingles.len() && j < b.shingles.len() {
        match a.shingles[i].cmp(&b.shingles[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                inter += 1;
                i += 1;
                j += 1;
            }
        }
    }
    let union = a.shingles.len() + b.shingles.len() - inter;
    inter as f64 / union as f64
}

/// What to do with a new text that is similar to an existing one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    /// Not similar enough.
    Different,
    /// Merge into the existing row.
    Merge(f64),
    /// Keep both; name the existing one as similar.
    Similar(f64),
}

/// Compares a new text with an existing one.
pub fn compare(new: &Profile, old: &Profile, threshold: f64) -> Verdict {
    let j = jaccard(new, old);
    if j < threshold {
        Verdict::Different
    } else if new.numbers != old.numbers || new.words < MIN_MERGE_WORDS {
        Verdict::Similar(j)
    } else {
        Verdict::Merge(j)
    }
}

/// Where a new memory goes among the rows that resemble it (the
/// near-duplicate rule of an add; the candidates come from the store).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Placement {
    /// A row of its own; `similar_to` names the closest similar row.
    New {
        /// The most similar row that is not close enough to merge.
        similar_to: Option<i64>,
    },
    /// Merged into this row (its counts and tags change, never its text).
    Merge(i64),
}

/// Places a new text among `candidates` (id, profile of its content): the
/// best merge wins over any similar row; between two of a kind, the higher
/// Jaccard wins, and the first of equals.
pub fn place<P: std::borrow::Borrow<Profile>>(
    new: &Profile,
    candidates: impl IntoIterator<Item = (i64, P)>,
    threshold: f64,
) -> Placement {
    let score = |v: &Verdict| match v {
        Verdict::Merge(j) => 2.0 + j,
        Verdict::Similar(j) => 1.0 + j,
        Verdict::Different => 0.0,
    };
    let mut best: Option<(Verdict, i64)> = None;
    for (id, old) in candidates {
        let verdict = compare(new, old.borrow(), threshold);
        if score(&verdict) > best.as_ref().map_or(0.0, |(v, _)| score(v)) {
            best = Some((verdict, id));
        }
    }
    match best {
        Some((Verdict::Merge(_), id)) => Placement::Merge(id),
        Some((Verdict::Similar(_), id)) => Placement::New {
            similar_to: Some(id),
        },
        _ => Placement::New { similar_to: None },
    }
}

/// Shingles a [`Profiles`] holds at most (8 bytes each); past it, it
/// starts again empty.
pub const PROFILES_HELD: usize = 1 << 20;

/// Profiles of stored texts, by row and text. An add's near-duplicate
/// candidates are the newest rows sharing a sketch hash, so the same rows
/// are candidates for many adds in a row: their profiles are computed once.
/// A text is known by its length and a hash of it, so a row whose text
/// changed (through memd or another tool) is profiled again. Bounded by
/// [`PROFILES_HELD`]; emptied by a purge (a profile holds the words with
/// digits of its text).
#[derive(Debug, Default)]
pub struct Profiles {
    held: HashMap<(i64, usize, u64), Arc<Profile>>,
    shingles: usize,
}

impl Profiles {
    /// The profile of row `id`'s `text`: the one held, or a new one.
    pub fn of(&mut self, id: i64, text: &str) -> Arc<Profile> {
        let mut h = std::hash::DefaultHasher::new();
        h.write(text.as_bytes());
        let key = (id, text.len(), h.finish());
        if let Some(p) = self.held.get(&key) {
            return p.clone();
        }
        let p = Arc::new(profile(text));
        if self.shingles + p.shingles.len() > PROFILES_HELD {
            self.clear();
        }
        self.shingles += p.shingles.len();
        self.held.insert(key, p.clone());
        p
    }

    /// Forgets every profile.
    pub fn clear(&mut self) {
        self.held.clear();
        self.shingles = 0;
    }

    /// Profiles held.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shingles as first defined: `Hash` of each window of [`words`]
    /// (stored sketches depend on these exact values).
    fn reference(text: &str) -> Vec<u64> {
        use std::hash::Hash;
        let hash = |parts: &[String]| {
            let mut h = Fnv(0xcbf2_9ce4_8422_2325);
            parts.hash(&mut h);
            h.finish()
        };
        let words = words(text);
        let mut v: Vec<u64> = if words.len() < 3 {
            vec![hash(&words)]
        } else {
            words.windows(3).map(hash).collect()
        };
        v.sort_unstable();
        v.dedup();
        v
    }

    #[test]
    fn shingles_keep_their_stored_values() {
        for text in [
            "",
            "one",
            "Two words",
            "the staging database listens on port 5432, for the app!",
            "ΣΊΣΥΦΟΣ rolls ΤΟ ΒΡΆΧΟ up (again) — and AGAIN…",
            "  ops/deploy.sh   runs at 5.4 ... on \"Fridays\" ",
            "a a a a a a a",
            "Straße ÉCOLE İstanbul ǅemal",
        ] {
            let p = profile(text);
            assert_eq!(p.shingles, reference(text), "{text}");
            assert_eq!(p.words, words(text).len(), "{text}");
            let mut numbers: Vec<String> = words(text)
                .into_iter()
                .filter(|w| w.chars().any(|c| c.is_ascii_digit()))
                .collect();
            numbers.sort();
            assert_eq!(p.numbers, numbers, "{text}");
        }
    }

    const T: f64 = 0.85;

    #[test]
    fn verdicts() {
        let base = "the staging database runs on the big host in the second rack of the old \
                    data center and listens on port 5432 for the app, the worker pool, the \
                    nightly reports and the admin console that the support team uses daily";
        let cases = [
            // same words, other punctuation and case: a merge
            (
                "The staging database runs on the big host in the second rack of the old \
                 data center, and listens on port 5432 for the app; the worker pool, the \
                 nightly reports and the admin console that the support team uses daily!",
                "merge",
            ),
            // one word appended to a long text: still a near duplicate
            (
                "the staging database runs on the big host in the second rack of the old \
                 data center and listens on port 5432 for the app, the worker pool, the \
                 nightly reports and the admin console that the support team uses daily too",
                "merge",
            ),
            // a number changed: an update, not a duplicate
            (
                "the staging database runs on the big host in the second rack of the old \
                 data center and listens on port 5433 for the app, the worker pool, the \
                 nightly reports and the admin console that the support team uses daily",
                "similar",
            ),
            // different content
            ("the production cache is redis on its own host", "different"),
        ];
        let old = profile(base);
        for (text, want) in cases {
            let got = match compare(&profile(text), &old, T) {
                Verdict::Merge(_) => "merge",
                Verdict::Similar(_) => "similar",
                Verdict::Different => "different",
            };
            assert_eq!(got, want, "{text}");
        }
    }

    #[test]
    fn short_texts_are_never_merged() {
        let a = profile("deploy with make ship");
        let b = profile("Deploy with make ship.");
        assert_eq!(a.words, 4);
        assert!(matches!(compare(&a, &b, T), Verdict::Similar(_)));
    }

    #[test]
    fn jaccard_bounds() {
        let a = profile("one two three four five six seven eight");
        assert_eq!(jaccard(&a, &a), 1.0);
        let b = profile("nine ten eleven twelve thirteen fourteen fifteen sixteen");
        assert_eq!(jaccard(&a, &b), 0.0);
    }

    #[test]
    fn near_duplicates_share_a_sketch_hash() {
        let base = "the staging database runs on the big host in the second rack of the old \
                    data center and listens on port 5432 for the app and the nightly reports";
        let near = format!("{base} today");
        let a = sketch(&profile(base));
        let b = sketch(&profile(&near));
        assert_eq!(a.len(), SKETCH);
        assert!(a.iter().any(|h| b.contains(h)), "{a:?} {b:?}");
        let other = sketch(&profile(
            "the frontend is built with vite and deployed daily",
        ));
        assert!(!a.iter().any(|h| other.contains(h)));
        assert_eq!(sketch(&profile("hi")).len(), 1);
    }

    #[test]
    fn placement_prefers_a_merge_then_the_closest() {
        let base = "the staging database runs on the big host in the second rack of the old \
                    data center and listens on port 5432 for the app, the worker pool, the \
                    nightly reports and the admin console that the support team uses daily";
        let same = "The staging database runs on the big host in the second rack of the old \
                    data center, and listens on port 5432 for the app; the worker pool, the \
                    nightly reports and the admin console that the support team uses daily!";
        let near = "the staging database runs on the big host in the second rack of the old \
                    data center and listens on port 5433 for the app, the worker pool, the \
                    nightly reports and the admin console that the support team uses daily";
        let other = "the production cache is redis on its own host";
        let mine = profile(base);
        let (other, near, same) = (profile(other), profile(near), profile(same));
        assert_eq!(
            place(&mine, [(1, &other), (2, &near), (3, &same)], T),
            Placement::Merge(3)
        );
        assert_eq!(
            place(&mine, [(1, &other), (2, &near)], T),
            Placement::New {
                similar_to: Some(2)
            }
        );
        assert_eq!(
            place(&mine, [(1, &other)], T),
            Placement::New { similar_to: None }
        );
        assert_eq!(
            place::<&Profile>(&mine, [], T),
            Placement::New { similar_to: None }
        );
    }

    #[test]
    fn profiles_are_computed_once_per_row_and_text() {
        let mut held = Profiles::default();
        let text = "the staging database listens on port 5432 for the app";
        let first = held.of(7, text);
        assert_eq!(*first, profile(text));
        assert!(
            Arc::ptr_eq(&first, &held.of(7, text)),
            "held, not computed again"
        );
        // Another row with the same text, and the row with another text.
        assert!(!Arc::ptr_eq(&first, &held.of(8, text)));
        let changed = held.of(7, "the staging database listens on port 5433 for the app");
        assert_eq!(changed.numbers, vec!["5433".to_string()]);
        assert_eq!(held.len(), 3);
        held.clear();
        assert!(held.is_empty());
        assert!(!Arc::ptr_eq(&first, &held.of(7, text)));
    }

    #[test]
    fn profiles_start_again_past_their_bound() {
        let mut held = Profiles::default();
        let words: Vec<String> = (0..2_000).map(|i| format!("w{i}x")).collect();
        let long = words.join(" ");
        let per = profile(&long).shingles.len();
        let fit = PROFILES_HELD / per;
        for id in 0..fit as i64 {
            held.of(id, &long);
        }
        assert_eq!(held.len(), fit);
        held.of(-1, &long);
        assert_eq!(held.len(), 1, "emptied, then the new one held");
    }
}
