//! Content that can be derived from code or tools and does not belong in
//! memory: unified diffs, stack traces (Rust, Python, Java, JS/Node, Go),
//! `git log` output (full or `--oneline`), file listings, long base64 or
//! hex blobs.
//!
//! Each detector looks at the *shape* of whole lines, so a sentence that
//! mentions a path or quotes an error message passes; only dumps are
//! refused.

use std::sync::LazyLock;

use regex::Regex;

/// Why content was found code-derivable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A unified diff.
    Diff,
    /// A stack trace.
    StackTrace,
    /// `git log` output.
    GitLog,
    /// A file listing: paths, `grep -n` matches, `ls -l` entries.
    PathDump,
    /// A long base64 or hex blob.
    Blob,
}

impl Kind {
    /// What to tell the writer.
    pub fn describe(self) -> &'static str {
        match self {
            Kind::Diff => "a unified diff",
            Kind::StackTrace => "a stack trace",
            Kind::GitLog => "git log output",
            Kind::PathDump => "a file listing (paths, grep or ls output)",
            Kind::Blob => "a long encoded blob (base64 or hex)",
        }
    }
}

macro_rules! re {
    ($name:ident, $pat:expr) => {
        static $name: LazyLock<Regex> = LazyLock::new(|| Regex::new($pat).expect("valid pattern"));
    };
}

re!(HUNK, r"(?m)^@@ -\d+(,\d+)? \+\d+(,\d+)? @@");
re!(DIFF_GIT, r"(?m)^diff --git a/\S+ b/\S+");
re!(DIFF_FILES, r"(?m)^--- \S+.*\n\+\+\+ \S+");
re!(RUST_PANIC, r"thread '[^']*' panicked at ");
re!(
    RUST_PANIC_AT,
    r"thread '[^']*' panicked at [^\s:]+\.rs:\d+:\d+"
);
re!(RUST_FRAME, r"(?m)^\s+\d+: [\w:<>$]+(::\w+)+");
re!(RUST_AT, r"(?m)^\s+at \S+\.rs:\d+(:\d+)?\s*$");
re!(PY_TRACE, r"Traceback \(most recent call last\):");
re!(PY_FRAME, r#"(?m)^\s+File "[^"]+", line \d+"#);
// Java and other JVM languages; the frame may name its module or class
// loader (`java.base/`, `java.base@17.0.2/`, `app//`).
re!(
    JAVA_FRAME,
    r"(?m)^\s+at (?:[\w$.@-]+/{1,2})?[\w$.<>-]+\((?:[\w$-]+\.(?:java|kt|scala|groovy):\d+|Native Method|Unknown Source)\)(?: ~?\[[^\]\n]*\])?\s*$"
);
re!(
    JAVA_MORE,
    r"(?m)^\s+\.\.\. \d+ (?:more|common frames omitted)\s*$"
);
re!(JAVA_CAUSE, r"(?m)^Caused by: [\w$.]+");
// JavaScript: a frame in a file, or in Node's own modules (`node:net`,
// `node:internal/...`), which print no extension. Node ends the last
// frame with ` {` when the error has properties.
re!(
    JS_FRAME,
    r"(?m)^\s+at (.+ )?\(?(?:(?:file://)?[\w./\\:@-]+\.(?:m?js|cjs|ts|tsx|jsx)|node:[\w./-]+):\d+:\d+\)?(?: \{)?\s*$"
);
// An error line (not indented) followed at once by a frame.
re!(
    HEADED_FRAME,
    r"(?m)^(?:\S[^\n]*)?(?:Error|Exception|Throwable)\b[^\n]*\n\s+at (?:\S[^\n]*\.(?:java|kt|scala|groovy):\d+\)|(?:[^\n]+ )?\(?[\w./\\:@-]*[A-Za-z][\w./\\:@-]*:\d+:\d+\)?(?: \{)?)\s*$"
);
re!(GO_GOROUTINE, r"(?m)^goroutine \d+ \[[\w ,]+\]:");
re!(GO_FRAME, r"(?m)^\s+\S+\.go:\d+( \+0x[0-9a-f]+)?\s*$");
re!(GIT_COMMIT, r"(?m)^commit [0-9a-f]{40}");
re!(GIT_AUTHOR, r"(?m)^Author: .+<.*>");
re!(GIT_DATE, r"(?m)^Date: ");
// `git log --oneline` (also with `--graph` and `--decorate`): a short hash,
// maybe ref names, a subject.
re!(ONELINE, r"^[*|/\\ ]*([0-9a-f]{7,40})(?: \([^)\n]*\))? \S");
re!(
    PATH_LINE,
    r"^\s*(\./|\.\./|~/|/|[A-Za-z]:\\)?[\w.@+-]+([/\\][\w.@+-]+)+[/\\]?\s*$"
);
// `grep -n` / `rg -n` output: a file name with an extension, a line
// number, then the line.
re!(
    GREP_LINE,
    r"^\s*(\./)?(?:[\w.@+-]+[/\\])*[\w@+-]+\.[A-Za-z0-9]{1,8}:\d+[:-]"
);
// `ls -l` output: a mode, links, owner, group, size, date and name (and
// its `total` line).
re!(
    LS_LINE,
    r"^[-dlcbps][rwxsStT-]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+[\d,.]+[KMGT]?\s+\w{3}\s+\d{1,2}\s+(?:\d{1,2}:\d{2}|\d{4})\s+\S"
);
re!(LS_TOTAL, r"^total \d+[KMGT]?\s*$");
re!(HEX_RUN, r"[0-9a-fA-F]{128,}");
re!(B64_RUN, r"[A-Za-z0-9+/_-]{120,}={0,2}");

/// Whether `text` looks like something derivable from code or tools.
pub fn detect(text: &str) -> Option<Kind> {
    if HUNK.is_match(text) || DIFF_GIT.is_match(text) || DIFF_FILES.is_match(text) {
        return Some(Kind::Diff);
    }
    if is_stack_trace(text) {
        return Some(Kind::StackTrace);
    }
    if (GIT_COMMIT.is_match(text) && (GIT_AUTHOR.is_match(text) || GIT_DATE.is_match(text)))
        || is_oneline_log(text)
    {
        return Some(Kind::GitLog);
    }
    if is_path_dump(text) {
        return Some(Kind::PathDump);
    }
    if HEX_RUN.find_iter(text).any(|m| is_hex_blob(m.as_str()))
        || B64_RUN.find_iter(text).any(|m| is_blob(m.as_str()))
    {
        return Some(Kind::Blob);
    }
    None
}

fn count(re: &Regex, text: &str) -> usize {
    re.find_iter(text).count()
}

fn is_stack_trace(text: &str) -> bool {
    // A panic's first line names its source location, the way a frame does
    // (Rust prints no backtrace by default).
    RUST_PANIC_AT.is_match(text)
        || (RUST_PANIC.is_match(text) && (count(&RUST_FRAME, text) + count(&RUST_AT, text) >= 1))
        || count(&RUST_FRAME, text) + count(&RUST_AT, text) >= 4
        || (PY_TRACE.is_match(text) && count(&PY_FRAME, text) >= 1)
        || count(&PY_FRAME, text) >= 3
        || count(&JAVA_FRAME, text) + count(&JAVA_MORE, text) >= 2
        || (JAVA_CAUSE.is_match(text) && count(&JAVA_FRAME, text) + count(&JAVA_MORE, text) >= 1)
        || count(&JS_FRAME, text) >= 2
        || HEADED_FRAME.is_match(text)
        || (GO_GOROUTINE.is_match(text) && count(&GO_FRAME, text) >= 1)
        || count(&GO_FRAME, text) >= 3
}

/// At least three lines of `<short hash> <subject>`, four in five lines
/// such, with hashes that look like hashes (letters and digits among them,
/// not a list of numbers or of words like `defaced`).
fn is_oneline_log(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() < 3 {
        return false;
    }
    let hashes: Vec<&str> = lines
        .iter()
        .filter_map(|l| ONELINE.captures(l))
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .collect();
    hashes.len() >= 3
        && hashes.len() * 5 >= lines.len() * 4
        && hashes.iter().any(|h| h.bytes().any(|b| b.is_ascii_digit()))
        && hashes
            .iter()
            .any(|h| h.bytes().any(|b| b.is_ascii_alphabetic()))
}

/// At least four lines, four in five of them a listing of files: nothing
/// but a path, a `grep -n` match or an `ls -l` entry.
fn is_path_dump(text: &str) -> bool {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.len() < 4 {
        return false;
    }
    let listed = lines
        .iter()
        .filter(|l| {
            PATH_LINE.is_match(l)
                || GREP_LINE.is_match(l)
                || LS_LINE.is_match(l)
                || LS_TOTAL.is_match(l)
        })
        .count();
    listed * 5 >= lines.len() * 4
}

/// A long hex run is a blob when it mixes digits and letters like a digest
/// does (`aaaa…` or `1111…` is not encoded data).
fn is_hex_blob(run: &str) -> bool {
    let digits = run.bytes().filter(u8::is_ascii_digit).count();
    digits * 10 >= run.len() && (run.len() - digits) * 10 >= run.len()
}

/// A long run of base64 alphabet is a blob when it mixes letters and digits
/// like encoded data does (a long identifier or a URL path does not).
fn is_blob(run: &str) -> bool {
    let digits = run.bytes().filter(u8::is_ascii_digit).count();
    let upper = run.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = run.bytes().filter(u8::is_ascii_lowercase).count();
    digits * 20 >= run.len() && upper * 10 >= run.len() && lower * 10 >= run.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Real-looking positives: each must be refused with its kind.
    const POSITIVES: &[(&str, Kind)] = &[
        (
            "diff --git a/src/main.rs b/src/main.rs\nindex 3b18e51..a9c2f4d 100644\n--- a/src/main.rs\n+++ b/src/main.rs\n@@ -1,3 +1,4 @@\n fn main() {\n+    println!(\"hi\");\n }\n",
            Kind::Diff,
        ),
        (
            "--- config.old\t2026-01-01\n+++ config.new\t2026-01-02\n@@ -10,2 +10,2 @@\n-port = 5432\n+port = 5433\n",
            Kind::Diff,
        ),
        (
            "thread 'main' panicked at src/store/writer.rs:212:9:\ncalled `Option::unwrap()` on a `None` value\nstack backtrace:\n   0: rust_begin_unwind\n   1: core::panicking::panic_fmt\n   2: memd::store::writer::Thread::run\n",
            Kind::StackTrace,
        ),
        (
            "thread 'main' panicked at src/main.rs:10:5:\ncalled `Option::unwrap()` on a `None` value\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n",
            Kind::StackTrace,
        ),
        (
            "Traceback (most recent call last):\n  File \"/app/main.py\", line 12, in <module>\n    run()\n  File \"/app/main.py\", line 8, in run\n    1/0\nZeroDivisionError: division by zero\n",
            Kind::StackTrace,
        ),
        (
            "Exception in thread \"main\" java.lang.NullPointerException\n\tat com.example.Service.handle(Service.java:42)\n\tat com.example.Main.main(Main.java:10)\n",
            Kind::StackTrace,
        ),
        (
            "TypeError: Cannot read properties of undefined (reading 'id')\n    at getUser (/srv/app/users.js:17:23)\n    at /srv/app/routes.js:44:5\n    at processTicksAndRejections (node:internal/process/task_queues:95:5)\n",
            Kind::StackTrace,
        ),
        (
            "panic: runtime error: index out of range [3] with length 3\n\ngoroutine 1 [running]:\nmain.main()\n\t/home/dev/app/main.go:9 +0x1d\nexit status 2\n",
            Kind::StackTrace,
        ),
        (
            "commit 8f3d2c1b9a7e6f5d4c3b2a1908f7e6d5c4b3a291\nAuthor: Dev Person <dev@example.com>\nDate:   Tue Jun 2 10:00:00 2026 +0200\n\n    Fix the deploy script\n",
            Kind::GitLog,
        ),
        (
            "Error: connect ECONNREFUSED 127.0.0.1:5432\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16)\n",
            Kind::StackTrace,
        ),
        (
            "node:events:491\n      throw er; // Unhandled 'error' event\n      ^\n\nError: connect ECONNREFUSED 127.0.0.1:6379\n    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1494:16)\nEmitted 'error' event on Socket instance at:\n    at emitErrorNT (node:internal/streams/destroy:151:8)\n    at process.processTicksAndRejections (node:internal/process/task_queues:82:21) {\n  errno: -111,\n  code: 'ECONNREFUSED'\n}\n",
            Kind::StackTrace,
        ),
        (
            "/srv/app/index.js:3\nfoo();\n^\n\nReferenceError: foo is not defined\n    at Object.<anonymous> (/srv/app/index.js:3:1)\n    at Module._compile (node:internal/modules/cjs/loader:1256:14)\n    at Module.load (node:internal/modules/cjs/loader:1119:32)\n    at node:internal/main/run_main_module:23:47\n\nNode.js v18.17.0\n",
            Kind::StackTrace,
        ),
        (
            "Exception in thread \"main\" java.lang.StringIndexOutOfBoundsException: index 9, length 3\n\tat java.base/java.lang.String.checkIndex(String.java:4832)\n\tat java.base/java.lang.StringLatin1.charAt(StringLatin1.java:46)\n\tat java.base/java.lang.String.charAt(String.java:1555)\n\tat app//com.acme.Main.main(Main.java:5)\n",
            Kind::StackTrace,
        ),
        (
            "java.lang.IllegalStateException: pool closed\n\tat com.acme.db.Pool.take(Pool.java:88)\nCaused by: java.io.IOException: broken pipe\n\t... 3 more\n",
            Kind::StackTrace,
        ),
        (
            "a1b2c3d (HEAD -> main, origin/main) Retry the deploy on 503\n9f8e7d6 Pin bincode to 2.0.1\n0c1d2e3 Move the config to /etc/memd\n4f5a6b7 (tag: v0.3.0) Release 0.3.0\n8a9b0c1 Add the sweep\n",
            Kind::GitLog,
        ),
        (
            "* 3e4f5a6b Fix the flaky test\n* 7c8d9e0f Bump tokio\n* 1a2b3c4d Initial commit\n",
            Kind::GitLog,
        ),
        (
            "./src/main.rs\n./src/lib.rs\n./src/store/mod.rs\n./src/store/writer.rs\n./tests/cli.rs\n./Cargo.toml\n",
            Kind::PathDump,
        ),
        (
            "/etc/memd/config.toml\n/var/lib/memd/memory.db\n/var/lib/memd/memory.db-wal\n/run/user/1000/memd/memd.sock\n",
            Kind::PathDump,
        ),
        (
            "src/store/writer.rs:212:        let committed = read_generation(&self.conn)?;\nsrc/store/writer.rs:640:    fn begin(&mut self) -> Result<(), StoreError> {\nsrc/store/mod.rs:88:pub fn read_generation(conn: &Connection) -> Result<u64, StoreError> {\ntests/drift.rs:31:        d.status()[\"drift\"][\"external_epoch\"]\n",
            Kind::PathDump,
        ),
        (
            "total 48\ndrwxr-xr-x 2 root root  4096 Nov 24 01:23 src\n-rw-r--r-- 1 root root  3383 Nov 24 01:23 Cargo.toml\n-rw-r--r-- 1 root root 73114 Nov 24 01:23 Cargo.lock\nlrwxrwxrwx 1 me   staff    11 Jan  3  2025 latest -> release-1.2\n",
            Kind::PathDump,
        ),
        (
            "payload: TWFueSBoYW5kcyBtYWtlIGxpZ2h0IHdvcmsuIFRoaXMgaXMgYSBsb25nIGJhc2U2NCBibG9iIHRoYXQgc2hvdWxkIG5vdCBiZSBzdG9yZWQgaW4gbWVtb3J5IDEyMzQ1Njc4OTA=",
            Kind::Blob,
        ),
        (
            "digest 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a089f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            Kind::Blob,
        ),
    ];

    /// Prose that mentions paths, errors, commits or code must pass.
    const NEGATIVES: &[&str] = &[
        "The deploy script lives in ops/deploy.sh and must run from the repo root.",
        "Config is read from /etc/memd/config.toml; errors say 'permission denied' when run as nobody.",
        "When the build fails with 'error[E0382]: borrow of moved value', clone the config first.",
        "The user prefers tabs over spaces in Makefiles.",
        "We pinned bincode to 2.0.1 because 3.0.0 is an empty release (commit 8f3d2c1).",
        "Python's Traceback is printed to stderr; our wrapper catches ZeroDivisionError in main.py line 8.",
        "The worker thread 'sync' panicked at startup when the config was empty; a default fixed it.",
        "At startup the service reads src/config.rs then tests/fixtures/v1.sql.",
        "A Java NPE at Service.java:42 happens when the cache is cold; warm it first.",
        "Use `git log --oneline` to find the release commit, then tag it.",
        "The API key is stored in the vault, never in memory; ask the user for it.",
        "https://docs.example.com/guides/getting-started/installation/linux/debian/bookworm/amd64/release-notes",
        "Line one of a note.\nLine two mentions src/lib.rs.\nLine three is prose.\nLine four too.",
        "Sizes: 1. src/ 2. tests/ 3. docs/ — keep docs short.",
        "The deploy broke in a1b2c3d (HEAD -> main); 9f8e7d6 fixed it by pinning bincode.",
        "Revert 8f3d2c1b if the migration fails again.",
        "Node prints `Error: connect ECONNREFUSED 127.0.0.1:5432` from node:net when Postgres is down.",
        "A StringIndexOutOfBoundsException in java.base/java.lang.String.charAt means the name is empty.",
        "TypeError: the config is loaded twice\n  at least on the first start after an upgrade, at 10:30:45.",
        "1234567 units sold in 2025\n2345678 units sold in 2026\n3456789 units planned",
        "defaced the old wall\neffaced by the rain\nacceded to the plan",
        "Caused by: a stale lock file in /run/memd; delete it and restart.",
        "Agenda:\n10:30: standup\n11:00: review\n14:00: planning\n16:30: retro",
        "The bug is at writer.rs:212 — the commit there runs before the check.\nSee also mod.rs:88.\nBoth need the lock.\nFix both together.",
        "total 3 services run here\nthe api, the worker and the scheduler\neach has its own unit\nrestart them in that order",
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    ];

    #[test]
    fn positives_are_refused() {
        for (text, kind) in POSITIVES {
            assert_eq!(detect(text), Some(*kind), "not refused:\n{text}");
        }
    }

    #[test]
    fn prose_passes() {
        for text in NEGATIVES {
            assert_eq!(detect(text), None, "refused:\n{text}");
        }
    }
}
