//! Code citations: what a memory says about a repository's files, and
//! what a checkout says about them now (ARCHITECTURE.md "Citations").
//!
//! A memory's citations live in its metadata under [`METADATA_KEY`], so
//! they travel wherever the memory does (export, import, team rows); a
//! verdict is local to one checkout and computed by the client process
//! that runs in it, never by the daemon.

use serde::{Deserialize, Serialize};

/// The metadata key that holds a memory's citations (a JSON array).
pub const METADATA_KEY: &str = "cites";

/// Citations one memory may hold.
pub const MAX_PER_MEMORY: usize = 32;

/// Most verdicts one report (`Request::Verdicts`) may carry.
pub const MAX_REPORT: usize = 10_000;

/// Longest path a citation may name, in bytes.
pub const MAX_PATH: usize = 1024;

/// Longest span of lines a citation may name.
pub const MAX_LINES: u32 = 2000;

/// One citation: a path relative to the repository's root, optionally a
/// span of lines (1-based, inclusive) with a hash of those lines, and the
/// commit the tree was at when it was written (only when the tree was
/// clean). Never the code itself. In metadata, [`Cite::to_json`] leaves
/// out the fields that are `None`; on the wire every field is there
/// (bincode has no absent field).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cite {
    /// Path relative to the repository root, `/`-separated.
    pub path: String,
    /// First cited line; `None` cites the file.
    #[serde(default)]
    pub start: Option<u32>,
    /// Last cited line (inclusive).
    #[serde(default)]
    pub end: Option<u32>,
    /// Hash of the cited lines, line endings normalised (hex).
    #[serde(default)]
    pub hash: Option<String>,
    /// The commit of a clean tree when the citation was written.
    #[serde(default)]
    pub commit: Option<String>,
}

impl Cite {
    /// `path`, `path:N` or `path:N-M` — where it points, without a hash.
    ///
    /// # Errors
    /// A path [`check_path`] refuses, or a span that is not `N` or `N-M`
    /// with `1 <= N <= M` and at most [`MAX_LINES`] lines.
    pub fn parse(spec: &str) -> Result<Cite, String> {
        let spec = spec.trim();
        let (path, span) = match spec.rsplit_once(':') {
            Some((p, s)) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'-') => {
                (p, Some(s))
            }
            _ => (spec, None),
        };
        let path = path.strip_prefix("./").unwrap_or(path);
        check_path(path)?;
        let (start, end) = match span {
            None => (None, None),
            Some(s) => {
                let (a, b) = s.split_once('-').unwrap_or((s, s));
                let n = |t: &str| {
                    t.parse::<u32>()
                        .map_err(|_| format!("`{s}` is not a line or a span N-M"))
                };
                let (a, b) = (n(a)?, n(b)?);
                (Some(a), Some(b))
            }
        };
        let cite = Cite {
            path: path.to_string(),
            start,
            end,
            hash: None,
            commit: None,
        };
        cite.check()?;
        Ok(cite)
    }

    /// Its lines `(start, end)`, when it cites lines.
    pub fn lines(&self) -> Option<(u32, u32)> {
        Some((self.start?, self.end?))
    }

    /// The shape rules every stored citation keeps (the daemon checks them
    /// on every write; a client checks them again before it reads a file).
    ///
    /// # Errors
    /// What is wrong, in words.
    pub fn check(&self) -> Result<(), String> {
        check_path(&self.path)?;
        match (self.start, self.end) {
            (None, None) => {}
            (Some(a), Some(b)) if a >= 1 && a <= b && b - a < MAX_LINES => {}
            (Some(_), Some(_)) => {
                return Err(format!(
                    "citation {}: lines go from 1 up, first <= last, at most {MAX_LINES}",
                    self.place()
                ));
            }
            _ => {
                return Err(format!(
                    "citation of {}: give both start and end",
                    self.path
                ));
            }
        }
        if self.hash.is_some() && self.start.is_none() {
            return Err(format!("citation of {}: a hash needs lines", self.path));
        }
        for (what, v) in [("hash", &self.hash), ("commit", &self.commit)] {
            if let Some(v) = v
                && (v.is_empty() || v.len() > 64 || !v.bytes().all(|b| b.is_ascii_hexdigit()))
            {
                return Err(format!("citation {}: the {what} is not hex", self.place()));
            }
        }
        Ok(())
    }

    /// Its JSON in a memory's metadata: the fields that are set.
    pub fn to_json(&self) -> serde_json::Value {
        let mut v = serde_json::Map::new();
        v.insert("path".into(), self.path.clone().into());
        for (k, n) in [("start", self.start), ("end", self.end)] {
            if let Some(n) = n {
                v.insert(k.into(), n.into());
            }
        }
        for (k, t) in [("hash", &self.hash), ("commit", &self.commit)] {
            if let Some(t) = t {
                v.insert(k.into(), t.clone().into());
            }
        }
        serde_json::Value::Object(v)
    }

    /// `path` or `path:N-M`, as a person writes it.
    pub fn place(&self) -> String {
        match self.lines() {
            Some((a, b)) if a == b => format!("{}:{a}", self.path),
            Some((a, b)) => format!("{}:{a}-{b}", self.path),
            None => self.path.clone(),
        }
    }

    /// What identifies this citation among a memory's: its place and hash
    /// (a verdict is recorded against it, and a citation written again
    /// with other lines is another one).
    pub fn key(&self) -> String {
        match &self.hash {
            Some(h) => format!("{}#{h}", self.place()),
            None => self.place(),
        }
    }
}

/// A citation's path: relative, `/`-separated, no `.`/`..` component, no
/// NUL or backslash, at most [`MAX_PATH`] bytes.
///
/// # Errors
/// Why it is refused.
pub fn check_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("a citation needs a path".into());
    }
    if path.len() > MAX_PATH {
        return Err(format!("a cited path is at most {MAX_PATH} bytes"));
    }
    if path.starts_with('/') {
        return Err(format!(
            "`{path}`: a cited path is relative to the repository's root"
        ));
    }
    if path.contains('\0') || path.contains('\\') {
        return Err(format!("`{path}`: a cited path holds no NUL or backslash"));
    }
    if path
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return Err(format!(
            "`{path}`: a cited path stays inside the repository (no `..`, `.` or empty part)"
        ));
    }
    Ok(())
}

/// The citations in a memory's metadata (a JSON object text): none when
/// the key is absent.
///
/// # Errors
/// Metadata that is not JSON, a `cites` that is not an array of
/// citations, more than [`MAX_PER_MEMORY`], or one [`Cite::check`] refuses.
pub fn from_metadata(metadata: &str) -> Result<Vec<Cite>, String> {
    if !metadata.contains(METADATA_KEY) {
        return Ok(Vec::new());
    }
    // Only the key read: the rest of the object is skipped, not built.
    #[derive(Deserialize)]
    struct Only {
        #[serde(default)]
        cites: Option<serde_json::Value>,
    }
    let only: Only =
        serde_json::from_str(metadata).map_err(|e| format!("metadata is not JSON: {e}"))?;
    match only.cites {
        Some(cites) => from_value(&cites),
        None => Ok(Vec::new()),
    }
}

/// The citations of a metadata `cites` value.
///
/// # Errors
/// As [`from_metadata`].
pub fn from_value(cites: &serde_json::Value) -> Result<Vec<Cite>, String> {
    let cites: Vec<Cite> = serde_json::from_value(cites.clone()).map_err(|e| {
        format!("metadata `{METADATA_KEY}` is a list of {{path, start, end, hash, commit}}: {e}")
    })?;
    if cites.len() > MAX_PER_MEMORY {
        return Err(format!("a memory cites at most {MAX_PER_MEMORY} places"));
    }
    for c in &cites {
        c.check()?;
    }
    Ok(cites)
}

/// What a checkout says of a citation now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// The same lines at the same place (a cited file: it is there).
    Fresh,
    /// The same lines elsewhere in the file, or in the file it was renamed
    /// to: [`Checked::now`] is the new place.
    Moved,
    /// The place is there, the lines differ.
    Changed,
    /// The file or the lines are gone.
    Gone,
    /// Not checked: no checkout, a file too large or not text, a path that
    /// leaves the repository.
    Unchecked,
}

impl Verdict {
    /// Its name (`fresh`, `moved`, …).
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Fresh => "fresh",
            Verdict::Moved => "moved",
            Verdict::Changed => "changed",
            Verdict::Gone => "gone",
            Verdict::Unchecked => "unchecked",
        }
    }

    /// The verdict named `name`.
    pub fn from_name(name: &str) -> Option<Verdict> {
        [
            Verdict::Fresh,
            Verdict::Moved,
            Verdict::Changed,
            Verdict::Gone,
            Verdict::Unchecked,
        ]
        .into_iter()
        .find(|v| v.name() == name)
    }

    /// An agent must be told about it: anything but `fresh`.
    pub fn is_stale(self) -> bool {
        self != Verdict::Fresh
    }
}

/// One citation of one memory, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checked {
    /// The memory.
    pub id: i64,
    /// The citation as stored.
    pub cite: Cite,
    /// What the checkout says.
    pub verdict: Verdict,
    /// Where the lines are now (`moved`).
    pub now: Option<Cite>,
    /// Why, in words (`unchecked`, `gone`).
    pub reason: Option<String>,
}

impl Checked {
    /// How a block or a listing marks it: `None` for `fresh`.
    pub fn mark(&self) -> Option<String> {
        let place = self.cite.place();
        match self.verdict {
            Verdict::Fresh => None,
            Verdict::Moved => Some(match &self.now {
                Some(now) => format!("cited code moved: {place} is now {}", now.place()),
                None => format!("cited code moved: {place}"),
            }),
            Verdict::Changed => Some(format!("cited code changed since: {place}")),
            Verdict::Gone => Some(format!("cited code gone: {place}")),
            Verdict::Unchecked => Some(format!("cited code not checked: {place}")),
        }
    }
}

/// The cited memories a session's block may show (answer to
/// `Request::Citations`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CitationsRequest {
    /// Also the person's own namespace (`@me`), as a block shows it.
    pub personal: bool,
    /// Only this memory, wherever it lives (the viewer's memory page).
    pub id: Option<i64>,
}

/// A memory and its citations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cited {
    /// The memory.
    pub id: i64,
    /// Its namespace.
    pub namespace: String,
    /// Its text's first characters (for listings).
    pub preview: String,
    /// Its citations.
    pub cites: Vec<Cite>,
    /// The last verdict a client on this machine reported on each that
    /// has one.
    pub last: Vec<LastVerdict>,
}

/// Answer to `Request::Citations`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct CitationList {
    /// Live memories that cite code, oldest first.
    pub memories: Vec<Cited>,
}

/// Verdicts a client computed in its checkout, recorded as the last ones
/// this machine knows (the block and the viewer show them).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct VerdictReport {
    /// The verdicts.
    pub checked: Vec<Checked>,
}

/// Answer to `Request::Verdicts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct VerdictsRecorded {
    /// Verdicts recorded (those of memories that are gone are not).
    pub recorded: u32,
}

/// The last verdict a client reported on a citation, with when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LastVerdict {
    /// The check.
    pub checked: Checked,
    /// When it was reported (RFC 3339).
    pub at: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_is_a_path_a_line_or_a_span() {
        let c = Cite::parse("src/a b/é.rs:40-44").unwrap();
        assert_eq!(
            (c.path.as_str(), c.lines()),
            ("src/a b/é.rs", Some((40, 44)))
        );
        assert_eq!(Cite::parse("./x.rs:7").unwrap().lines(), Some((7, 7)));
        assert_eq!(Cite::parse("docs/a:b.md").unwrap().path, "docs/a:b.md");
        assert_eq!(Cite::parse("Makefile").unwrap().lines(), None);
        for bad in [
            "/etc/passwd",
            "../x",
            "a/../../x",
            "a//b",
            "x.rs:0",
            "x.rs:9-3",
            "",
            "a\\b",
        ] {
            assert!(Cite::parse(bad).is_err(), "{bad}");
        }
        assert!(Cite::parse("x.rs:1-2001").is_err());
    }

    #[test]
    fn metadata_cites_are_checked_and_absent_is_none() {
        assert_eq!(from_metadata("{}").unwrap(), vec![]);
        assert_eq!(from_metadata(r#"{"k":1}"#).unwrap(), vec![]);
        let got = from_metadata(r#"{"cites":[{"path":"a.rs","start":1,"end":2,"hash":"ab"}]}"#);
        let got = got.unwrap();
        assert_eq!(got[0].key(), "a.rs:1-2#ab");
        assert_eq!(
            got[0].to_json().to_string(),
            r#"{"end":2,"hash":"ab","path":"a.rs","start":1}"#
        );
        for bad in [
            r#"{"cites":"a.rs"}"#,
            r#"{"cites":[{"path":"../a"}]}"#,
            r#"{"cites":[{"path":"a","hash":"ab"}]}"#,
            r#"{"cites":[{"path":"a","start":1,"end":1,"hash":"zz"}]}"#,
        ] {
            assert!(from_metadata(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn marks_name_the_place_and_fresh_has_none() {
        let cite = Cite::parse("a.rs:3-4").unwrap();
        let mut c = Checked {
            id: 1,
            cite,
            verdict: Verdict::Fresh,
            now: None,
            reason: None,
        };
        assert_eq!(c.mark(), None);
        c.verdict = Verdict::Moved;
        c.now = Some(Cite::parse("b.rs:9-10").unwrap());
        assert_eq!(
            c.mark().unwrap(),
            "cited code moved: a.rs:3-4 is now b.rs:9-10"
        );
        c.verdict = Verdict::Changed;
        assert!(c.mark().unwrap().contains("changed"));
        for v in ["fresh", "moved", "changed", "gone", "unchecked"] {
            assert_eq!(Verdict::from_name(v).unwrap().name(), v);
        }
    }
}
