//! Code citations, on the client's side: a checkout's files read by the
//! process that runs in it (the CLI, the hooks, the MCP bridge) — the
//! daemon never calls this module (`tests/it/structure.rs` holds it) and
//! never opens a path a client names.
//!
//! - [`Checkout::pin`]: a citation written now — the path checked to stay
//!   inside the repository (a symlink leaving it is refused), the cited
//!   lines hashed (line endings normalised), the commit of a clean tree.
//! - [`Checkout::recognise`]: the paths a memory's text names that exist.
//! - [`Checker`]: the verdict of each citation against the working tree,
//!   each cited file read once, within [`MAX_FILE`] per file and
//!   [`MAX_READ`] per checker; git's rename detection follows a file that
//!   moved (`git diff -M` from the citation's commit, or `HEAD`).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use memd_proto::cite::{Checked, Cite, MAX_PER_MEMORY, Verdict};
use sha2::{Digest, Sha256};

/// Largest file whose lines a citation may name (bigger ones are
/// `unchecked`, and refused when written), in bytes.
pub const MAX_FILE: u64 = 4 * 1024 * 1024;

/// Most bytes one [`Checker`] reads in all (past it, `unchecked`).
pub const MAX_READ: u64 = 64 * 1024 * 1024;

/// Bytes looked at to tell a binary file (a NUL among them).
const SNIFF: usize = 8000;

/// A git checkout: its root, canonical.
#[derive(Debug, Clone)]
pub struct Checkout {
    root: PathBuf,
}

/// The hash of lines as a citation stores it: SHA-256 of the lines joined
/// by `\n` (each without its `\r\n` or `\n`), the first 16 bytes in hex.
pub fn hash_lines<'a>(lines: impl IntoIterator<Item = &'a str>) -> String {
    let mut h = Sha256::new();
    for (i, l) in lines.into_iter().enumerate() {
        if i > 0 {
            h.update(b"\n");
        }
        h.update(l.strip_suffix('\r').unwrap_or(l).as_bytes());
    }
    h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A text file's lines, line endings normalised.
#[derive(Debug)]
struct Lines(Vec<String>);

impl Lines {
    fn of(text: &str) -> Lines {
        Lines(
            text.lines()
                .map(|l| l.strip_suffix('\r').unwrap_or(l).to_string())
                .collect(),
        )
    }

    fn hash(&self, start: u32, end: u32) -> Option<String> {
        let (a, b) = (start as usize, end as usize);
        (a >= 1 && b <= self.0.len())
            .then(|| hash_lines(self.0[a - 1..b].iter().map(String::as_str)))
    }

    /// Where else lines of hash `hash`, `n` long, are: `Some` only when
    /// exactly one place holds them and they hold more than punctuation
    /// (lines that recur, or a lone `}`, do not read as moved).
    fn find(&self, hash: &str, n: u32) -> Option<(u32, u32)> {
        let n = n as usize;
        if n == 0 || n > self.0.len() {
            return None;
        }
        let mut found = None;
        for start in 0..=self.0.len() - n {
            let window = &self.0[start..start + n];
            if hash_lines(window.iter().map(String::as_str)) == hash {
                if found.is_some() {
                    return None;
                }
                let meaningful = window
                    .iter()
                    .any(|l| l.chars().filter(|c| c.is_alphanumeric()).count() >= 3);
                if !meaningful {
                    return None;
                }
                found = Some((start as u32 + 1, (start + n) as u32));
            }
        }
        found
    }
}

/// Why a file's lines cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unreadable {
    /// No such file (or not a regular file).
    Missing,
    /// The path leaves the repository (through `..` or a symlink).
    Outside,
    /// Larger than [`MAX_FILE`].
    Huge(u64),
    /// Not text (a NUL in its first bytes).
    Binary,
    /// The checker's read budget is spent.
    Budget,
    /// An I/O error.
    Io(String),
}

impl Unreadable {
    fn reason(&self) -> String {
        match self {
            Unreadable::Missing => "the file is gone".into(),
            Unreadable::Outside => "the path leaves the repository".into(),
            Unreadable::Huge(n) => format!("the file is {n} bytes, above {MAX_FILE}"),
            Unreadable::Binary => "the file is not text".into(),
            Unreadable::Budget => format!("more than {MAX_READ} bytes of cited files"),
            Unreadable::Io(e) => e.clone(),
        }
    }
}

impl Checkout {
    /// The checkout `dir` is in: the nearest directory up from it that
    /// holds `.git` (a directory, or a file in a worktree).
    pub fn find(dir: &Path) -> Option<Checkout> {
        let dir = dir.canonicalize().ok()?;
        let root = dir.ancestors().find(|d| d.join(".git").exists())?;
        Some(Checkout {
            root: root.to_path_buf(),
        })
    }

    /// The checkout the current directory is in.
    pub fn here() -> Option<Checkout> {
        Checkout::find(&std::env::current_dir().ok()?)
    }

    /// Its root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `path` (relative to the root) on disk, if it stays inside the
    /// repository once every symlink is followed; `Missing` when nothing
    /// is there.
    fn resolve(&self, path: &str) -> Result<PathBuf, Unreadable> {
        memd_proto::cite::check_path(path).map_err(|_| Unreadable::Outside)?;
        let joined = self.root.join(path);
        match joined.canonicalize() {
            Ok(real) if real.starts_with(&self.root) => Ok(real),
            Ok(_) => Err(Unreadable::Outside),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(Unreadable::Missing),
            Err(e) => Err(Unreadable::Io(e.to_string())),
        }
    }

    /// The lines of a regular text file, within [`MAX_FILE`]; reads at
    /// most that many bytes, and only the first few of a binary file.
    fn read(&self, path: &str, budget: &mut u64) -> Result<Lines, Unreadable> {
        let real = self.resolve(path)?;
        let meta = std::fs::metadata(&real).map_err(|e| Unreadable::Io(e.to_string()))?;
        if !meta.is_file() {
            return Err(Unreadable::Missing);
        }
        if meta.len() > MAX_FILE {
            return Err(Unreadable::Huge(meta.len()));
        }
        if meta.len() > *budget {
            return Err(Unreadable::Budget);
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        std::fs::File::open(&real)
            .and_then(|f| f.take(MAX_FILE).read_to_end(&mut bytes))
            .map_err(|e| Unreadable::Io(e.to_string()))?;
        *budget = budget.saturating_sub(bytes.len() as u64);
        if bytes[..bytes.len().min(SNIFF)].contains(&0) {
            return Err(Unreadable::Binary);
        }
        Ok(Lines::of(&String::from_utf8_lossy(&bytes)))
    }

    /// Whether something (a file or a directory) is at `path`.
    fn exists(&self, path: &str) -> Result<bool, Unreadable> {
        match self.resolve(path) {
            Ok(_) => Ok(true),
            Err(Unreadable::Missing) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// `git` in the checkout; its standard output when it succeeds.
    fn git(&self, args: &[&str]) -> Option<Vec<u8>> {
        let out = Command::new("git")
            .arg("-C")
            .arg(&self.root)
            .args(args)
            .env("GIT_OPTIONAL_LOCKS", "0")
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .ok()?;
        out.status.success().then_some(out.stdout)
    }

    /// `HEAD`'s commit when the tracked files are as committed.
    pub fn clean_commit(&self) -> Option<String> {
        let status = self.git(&["status", "--porcelain", "--untracked-files=no"])?;
        if !status.is_empty() {
            return None;
        }
        let head = self.git(&["rev-parse", "--verify", "HEAD"])?;
        let head = String::from_utf8(head).ok()?.trim().to_string();
        (!head.is_empty()).then_some(head)
    }

    /// A citation written now: `spec`'s path checked to be inside the
    /// repository and there; its lines (if any) within the file and
    /// hashed; the commit when the tree is clean (`commit`, computed once
    /// by the caller for all of a memory's citations).
    ///
    /// # Errors
    /// What is wrong, in words: a path outside the repository, nothing
    /// there, lines past the end, a file too large or not text.
    pub fn pin(&self, spec: &Cite, commit: Option<&str>) -> Result<Cite, String> {
        spec.check()?;
        let place = spec.place();
        let mut budget = MAX_FILE;
        let hash = match spec.lines() {
            None => {
                if !self
                    .exists(&spec.path)
                    .map_err(|e| format!("{place}: {}", e.reason()))?
                {
                    return Err(format!(
                        "{place}: there is no such file in {}",
                        self.root.display()
                    ));
                }
                None
            }
            Some((a, b)) => {
                let lines = self
                    .read(&spec.path, &mut budget)
                    .map_err(|e| format!("{place}: {}", e.reason()))?;
                Some(
                    lines
                        .hash(a, b)
                        .ok_or_else(|| format!("{place}: the file has {} lines", lines.0.len()))?,
                )
            }
        };
        Ok(Cite {
            path: spec.path.clone(),
            start: spec.start,
            end: spec.end,
            hash,
            commit: commit.map(str::to_string),
        })
    }

    /// The citations a text makes: each `path`, `path:N`, `path:N-M` or
    /// `path` followed by `line N` / `lines N-M` that names a file of the
    /// repository, pinned; at most [`MAX_PER_MEMORY`], the first of each.
    pub fn recognise(&self, text: &str, commit: Option<&str>) -> Vec<Cite> {
        let words: Vec<&str> = text
            .split(|c: char| c.is_whitespace() || "`'\"()[]{}<>,;".contains(c))
            .filter(|w| !w.is_empty())
            .collect();
        let mut out: Vec<Cite> = Vec::new();
        for (i, w) in words.iter().enumerate() {
            let w = w.trim_end_matches(['.', ':', '!', '?']);
            if !(w.contains('/') || w.contains('.')) || w.contains("://") {
                continue;
            }
            let mut spec = w.to_string();
            if !w.contains(':')
                && let (Some(kw), Some(n)) = (words.get(i + 1), words.get(i + 2))
                && matches!(kw.to_lowercase().as_str(), "line" | "lines" | "l.")
            {
                let n = n.trim_end_matches(['.', ':', '!', '?']);
                if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
                    spec = format!("{w}:{n}");
                }
            }
            let Ok(parsed) = Cite::parse(&spec) else {
                continue;
            };
            if !matches!(self.resolve(&parsed.path), Ok(p) if p.is_file()) {
                continue;
            }
            if let Ok(cite) = self.pin(&parsed, commit)
                && !out.iter().any(|c| c.place() == cite.place())
            {
                out.push(cite);
            }
            if out.len() == MAX_PER_MEMORY {
                break;
            }
        }
        out
    }
}

/// Checks citations against a checkout's working tree, each file read once.
#[derive(Debug)]
pub struct Checker {
    checkout: Checkout,
    files: HashMap<String, Result<std::sync::Arc<Lines>, Unreadable>>,
    /// Renames since a commit (`None`: `HEAD`): old path → new path.
    renames: HashMap<Option<String>, HashMap<String, String>>,
    budget: u64,
    /// Files read (for the benchmark).
    pub files_read: usize,
}

impl Checker {
    /// A checker of `checkout`.
    pub fn new(checkout: Checkout) -> Checker {
        Checker {
            checkout,
            files: HashMap::new(),
            renames: HashMap::new(),
            budget: MAX_READ,
            files_read: 0,
        }
    }

    fn lines(&mut self, path: &str) -> Result<std::sync::Arc<Lines>, Unreadable> {
        if let Some(got) = self.files.get(path) {
            return got.clone();
        }
        let got = self
            .checkout
            .read(path, &mut self.budget)
            .map(std::sync::Arc::new);
        self.files_read += 1;
        self.files.insert(path.to_string(), got.clone());
        got
    }

    /// Where git says `path` went since `commit` (or `HEAD`).
    fn renamed(&mut self, path: &str, commit: Option<&str>) -> Option<String> {
        let key = commit.map(str::to_string);
        if !self.renames.contains_key(&key) {
            let base = commit.unwrap_or("HEAD");
            let out = self
                .checkout
                .git(&["diff", "-M", "--name-status", "-z", base, "--"])
                .or_else(|| {
                    self.checkout
                        .git(&["diff", "-M", "--name-status", "-z", "HEAD", "--"])
                })
                .unwrap_or_default();
            self.renames.insert(key.clone(), parse_renames(&out));
        }
        self.renames[&key].get(path).cloned()
    }

    /// The verdict on one citation of memory `id`.
    pub fn check(&mut self, id: i64, cite: &Cite) -> Checked {
        let (verdict, now, reason) = self.judge(cite);
        Checked {
            id,
            cite: cite.clone(),
            verdict,
            now,
            reason,
        }
    }

    fn judge(&mut self, cite: &Cite) -> (Verdict, Option<Cite>, Option<String>) {
        let unchecked = |e: &Unreadable| (Verdict::Unchecked, None, Some(e.reason()));
        if cite.check().is_err() {
            return unchecked(&Unreadable::Outside);
        }
        let (Some((start, end)), Some(hash)) = (cite.lines(), cite.hash.as_deref()) else {
            // A cited file (or lines without a hash): is it there?
            return match self.checkout.exists(&cite.path) {
                Err(e) => unchecked(&e),
                Ok(true) => (Verdict::Fresh, None, None),
                Ok(false) => match self.renamed(&cite.path, cite.commit.as_deref()) {
                    Some(to) => (
                        Verdict::Moved,
                        Some(Cite {
                            path: to,
                            ..cite.clone()
                        }),
                        None,
                    ),
                    None => (Verdict::Gone, None, Some(Unreadable::Missing.reason())),
                },
            };
        };
        let (path, renamed) = match self.lines(&cite.path) {
            Ok(_) => (cite.path.clone(), false),
            Err(Unreadable::Missing) => match self.renamed(&cite.path, cite.commit.as_deref()) {
                Some(to) => (to, true),
                None => return (Verdict::Gone, None, Some(Unreadable::Missing.reason())),
            },
            Err(e) => return unchecked(&e),
        };
        let lines = match self.lines(&path) {
            Ok(l) => l,
            Err(Unreadable::Missing) => {
                return (Verdict::Gone, None, Some(Unreadable::Missing.reason()));
            }
            Err(e) => return unchecked(&e),
        };
        let at = |start, end| Cite {
            path: path.clone(),
            start: Some(start),
            end: Some(end),
            hash: cite.hash.clone(),
            commit: None,
        };
        if lines.hash(start, end).as_deref() == Some(hash) {
            return if renamed {
                (Verdict::Moved, Some(at(start, end)), None)
            } else {
                (Verdict::Fresh, None, None)
            };
        }
        if let Some((a, b)) = lines.find(hash, end - start + 1) {
            return (Verdict::Moved, Some(at(a, b)), None);
        }
        if (end as usize) <= lines.0.len() {
            (Verdict::Changed, renamed.then(|| at(start, end)), None)
        } else {
            (
                Verdict::Gone,
                None,
                Some(format!("{path} has {} lines", lines.0.len())),
            )
        }
    }
}

/// `git diff --name-status -z` output: renames, old path → new path.
fn parse_renames(out: &[u8]) -> HashMap<String, String> {
    let mut fields = out
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned());
    let mut renames = HashMap::new();
    while let Some(status) = fields.next() {
        if status.is_empty() {
            break;
        }
        let paths = if status.starts_with('R') || status.starts_with('C') {
            2
        } else {
            1
        };
        let got: Vec<String> = fields.by_ref().take(paths).collect();
        if status.starts_with('R') && got.len() == 2 {
            renames.insert(got[0].clone(), got[1].clone());
        }
    }
    renames
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> (tempfile::TempDir, Checkout) {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join(".git")).unwrap();
        let c = Checkout::find(dir.path()).unwrap();
        (dir, c)
    }

    fn write(dir: &Path, path: &str, text: &str) {
        let p = dir.join(path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    fn verdict(c: &Checkout, cite: &Cite) -> (Verdict, Option<String>) {
        let got = Checker::new(c.clone()).check(1, cite);
        (got.verdict, got.now.map(|n| n.place()))
    }

    const SRC: &str = "fn a() {}\n\nfn retry() {\n    let limit = 5;\n}\n";

    #[test]
    fn fresh_changed_moved_and_gone() {
        let (dir, c) = repo();
        write(dir.path(), "src/x.rs", SRC);
        let cite = c.pin(&Cite::parse("src/x.rs:3-5").unwrap(), None).unwrap();
        assert_eq!(verdict(&c, &cite), (Verdict::Fresh, None));
        // CRLF line endings: the same lines.
        write(dir.path(), "src/x.rs", &SRC.replace('\n', "\r\n"));
        assert_eq!(verdict(&c, &cite), (Verdict::Fresh, None));
        write(dir.path(), "src/x.rs", &format!("// head\n// more\n{SRC}"));
        assert_eq!(
            verdict(&c, &cite),
            (Verdict::Moved, Some("src/x.rs:5-7".into()))
        );
        write(dir.path(), "src/x.rs", &SRC.replace("5;", "7;"));
        assert_eq!(verdict(&c, &cite).0, Verdict::Changed);
        write(dir.path(), "src/x.rs", "fn a() {}\n");
        assert_eq!(verdict(&c, &cite).0, Verdict::Gone);
        std::fs::remove_file(dir.path().join("src/x.rs")).unwrap();
        assert_eq!(verdict(&c, &cite).0, Verdict::Gone);
    }

    #[test]
    fn lines_that_recur_do_not_read_as_moved() {
        let (dir, c) = repo();
        write(
            dir.path(),
            "a.rs",
            "fn a() {\n}\nfn b() {\n}\nfn c() {\n}\n",
        );
        let cite = c.pin(&Cite::parse("a.rs:2").unwrap(), None).unwrap();
        write(dir.path(), "a.rs", "fn a() {\n    x();\n}\nfn b() {\n}\n");
        assert_eq!(verdict(&c, &cite).0, Verdict::Changed);
        // Lines found twice elsewhere are not a move either.
        write(dir.path(), "b.rs", "let x = 1;\nlet y = 2;\n");
        let cite = c.pin(&Cite::parse("b.rs:1").unwrap(), None).unwrap();
        write(dir.path(), "b.rs", "let z = 0;\nlet x = 1;\nlet x = 1;\n");
        assert_eq!(verdict(&c, &cite).0, Verdict::Changed);
    }

    #[test]
    fn outside_symlinks_binary_and_huge_files_are_refused() {
        let (dir, c) = repo();
        let outside = tempfile::tempdir().unwrap();
        write(outside.path(), "secret.txt", "key\n");
        std::os::unix::fs::symlink(outside.path().join("secret.txt"), dir.path().join("link"))
            .unwrap();
        assert!(
            c.pin(&Cite::parse("link:1").unwrap(), None)
                .unwrap_err()
                .contains("leaves")
        );
        assert!(c.pin(&Cite::parse("link").unwrap(), None).is_err());
        let stored = Cite::parse("link:1").unwrap();
        assert_eq!(
            verdict(
                &c,
                &Cite {
                    hash: Some("00".into()),
                    ..stored
                }
            )
            .0,
            Verdict::Unchecked
        );
        std::fs::write(dir.path().join("bin"), b"ab\0cd\n").unwrap();
        assert!(
            c.pin(&Cite::parse("bin:1").unwrap(), None)
                .unwrap_err()
                .contains("not text")
        );
        let f = std::fs::File::create(dir.path().join("huge")).unwrap();
        f.set_len(MAX_FILE + 1).unwrap();
        assert!(
            c.pin(&Cite::parse("huge:1").unwrap(), None)
                .unwrap_err()
                .contains("bytes")
        );
        // A file citation of it only asks that it is there.
        assert!(c.pin(&Cite::parse("huge").unwrap(), None).is_ok());
        assert!(c.pin(&Cite::parse("nothing.rs").unwrap(), None).is_err());
    }

    #[test]
    fn recognises_paths_that_exist_with_their_lines() {
        let (dir, c) = repo();
        write(dir.path(), "src/billing/webhooks.rs", &"x\n".repeat(50));
        write(dir.path(), "docs/a b/é.md", "hello\n");
        let got: Vec<String> = c
            .recognise(
                "The retry limit is set in `src/billing/webhooks.rs` line 40, see \
                 src/billing/webhooks.rs:41-42. Not src/nothing.rs, not e.g. or https://x.y/z.",
                None,
            )
            .iter()
            .map(Cite::place)
            .collect();
        assert_eq!(
            got,
            [
                "src/billing/webhooks.rs:40",
                "src/billing/webhooks.rs:41-42"
            ]
        );
        assert!(
            c.pin(&Cite::parse("docs/a b/é.md:1").unwrap(), None)
                .is_ok()
        );
    }

    #[test]
    fn renames_come_from_git_name_status() {
        let got = parse_renames(b"R087\0old.rs\0new.rs\0M\0kept.rs\0D\0gone.rs\0");
        assert_eq!(got.len(), 1);
        assert_eq!(got["old.rs"], "new.rs");
    }
}
