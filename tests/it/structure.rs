//! The structure ARCHITECTURE.md states, checked on the source tree:
//! - the top-level modules of `src/` import only modules of lower layers
//!   (no cycle, no upward import);
//! - SQL appears only under `src/store/`;
//! - every request kind but `hello` has its handler file,
//!   `src/handler/<kind>.rs`, exposing one function, and nothing else sits
//!   beside them but `mod.rs` and `support/`;
//! - exit codes are numbers only in `memd_client::exit` (`client/src/exit.rs`);
//! - a poisoned lock is opened only by the helpers of `src/sync.rs`;
//! - a frozen block is cleared only by the session's own code
//!   (`src/session/`: `View::drop_block_holding` for a purge);
//! - a handler that never calls the store does not name `StoreError`;
//! - a memory row is spelled once: no struct outside the team code declares
//!   the fields of `memd_proto::Memory` again, and a `Memory` is built field
//!   by field only by `gate::blank_row` and the store's `row_to_memory`;
//! - the store is the crate's own: outside it, only the `bench` feature's
//!   façade (`memd::facade`) reaches it;
//! - no run of more than ten lines of Rust in `src/` stands twice to the
//!   letter (the `duplicates` tool also finds runs of the same shape:
//!   ARCHITECTURE.md "Tests").
//!
//! A plain reading of the files (comments and string literals told apart),
//! with no dependency: a failure names the file and what it found.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The layers, lowest first, as ARCHITECTURE.md's "Layers" table states
/// them (the one place they are written): each row `| n | `a`, `b` | … |`.
/// A module may import modules of lower layers only, never its own layer's
/// peers or above.
fn layers() -> Vec<Vec<String>> {
    let map = std::fs::read_to_string(root().join("ARCHITECTURE.md")).unwrap();
    let start = map
        .find("\n## Layers\n")
        .expect("ARCHITECTURE.md has a Layers section");
    let section = &map[start + 1..];
    let section = &section[..section[3..].find("\n## ").map_or(section.len(), |n| n + 3)];
    let mut out: Vec<Vec<String>> = Vec::new();
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // `| n | modules | holds |` splits into ["", n, modules, holds, ""].
        let Some(n) = cells.get(1).and_then(|c| c.parse::<usize>().ok()) else {
            continue;
        };
        assert_eq!(
            n,
            out.len(),
            "ARCHITECTURE.md's layers are numbered 0, 1, 2, … in order"
        );
        let modules = cells[2]
            .split(',')
            .map(|m| m.trim().trim_matches('`').to_string())
            .filter(|m| !m.is_empty())
            .collect();
        out.push(modules);
    }
    assert!(
        out.len() > 5,
        "read the layers {out:?} from ARCHITECTURE.md"
    );
    out
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// The file's code with comments blanked, and its string literals' text.
fn split(src: &str) -> (String, Vec<String>) {
    split_with(src, false)
}

/// As [`split`]; with `keep_lines`, a blanked comment or string keeps its
/// line breaks (the code's lines are the file's).
fn split_with(src: &str, keep_lines: bool) -> (String, Vec<String>) {
    let breaks = |code: &mut String, text: &str| {
        if keep_lines {
            code.extend(std::iter::repeat_n('\n', text.matches('\n').count()));
        }
    };
    let b = src.as_bytes();
    let mut code = String::with_capacity(src.len());
    let mut strings = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            let end = rest.find('\n').map_or(b.len(), |n| i + n);
            i = end;
        } else if rest.starts_with("/*") {
            let end = rest.find("*/").map_or(b.len(), |n| i + n + 2);
            breaks(&mut code, &src[i..end]);
            i = end;
        } else if rest.starts_with("r#\"") || rest.starts_with("r\"") || rest.starts_with("br\"") {
            let start = rest.find('"').unwrap();
            let hashes = rest[..start].matches('#').count();
            let close = format!("\"{}", "#".repeat(hashes));
            let body_start = i + start + 1;
            let end = src[body_start..]
                .find(&close)
                .map_or(b.len(), |n| body_start + n);
            strings.push(src[body_start..end].to_string());
            code.push_str("\"\"");
            breaks(&mut code, &src[body_start..end]);
            i = (end + close.len()).min(b.len());
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            strings.push(src[i + 1..j.min(b.len())].to_string());
            code.push_str("\"\"");
            breaks(&mut code, &src[i + 1..j.min(b.len())]);
            i = j + 1;
        } else if b[i] == b'\'' {
            // A char literal ('"', '\'', '{') or a lifetime ('a).
            let lit = rest
                .char_indices()
                .skip(1)
                .take(12)
                .find(|(n, c)| *c == '\'' && !(rest.as_bytes()[n - 1] == b'\\' && *n == 2))
                .map(|(n, _)| n);
            match lit {
                Some(n) if n <= 10 && !rest[1..n].contains(' ') => {
                    code.push_str("' '");
                    i += n + 1;
                }
                _ => {
                    code.push('\'');
                    i += 1;
                }
            }
        } else {
            let c = rest.chars().next().unwrap();
            code.push(c);
            i += c.len_utf8();
        }
    }
    (code, strings)
}

/// The top-level module a file of `src/` belongs to.
fn module_of(src_dir: &Path, file: &Path) -> String {
    let rel = file.strip_prefix(src_dir).unwrap();
    let first = rel
        .components()
        .next()
        .unwrap()
        .as_os_str()
        .to_string_lossy();
    first.trim_end_matches(".rs").to_string()
}

fn layer_of(layers: &[Vec<String>], module: &str) -> Option<usize> {
    layers.iter().position(|l| l.iter().any(|m| m == module))
}

/// `crate::x` paths in code, and `use crate::{x, …}` groups.
fn crate_imports(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut at = 0;
    while let Some(n) = code[at..].find("crate::") {
        let start = at + n + "crate::".len();
        at = start;
        let before = code[..start - "crate::".len()].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue; // `memd_crate::` and the like
        }
        let rest = &code[start..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            for part in group[..end].split(',') {
                let name: String = part
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() {
                out.insert(name);
            }
        }
    }
    out
}

#[test]
fn top_level_modules_import_only_lower_layers() {
    let layers = layers();
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for f in &files {
        if f.file_name()
            .is_some_and(|n| n == "lib.rs" || n == "main.rs")
        {
            continue;
        }
        let module = module_of(&src, f);
        let Some(own) = layer_of(&layers, &module) else {
            problems.push(format!(
                "{}: module `{module}` is in no layer of ARCHITECTURE.md (add it to its Layers table)",
                f.display()
            ));
            continue;
        };
        let (code, _) = split(&std::fs::read_to_string(f).unwrap());
        for target in crate_imports(&code) {
            if target == module {
                continue;
            }
            match layer_of(&layers, &target) {
                Some(l) if l < own => {}
                Some(l) => problems.push(format!(
                    "{}: `{module}` (layer {own}) imports `{target}` (layer {l})",
                    f.strip_prefix(root()).unwrap().display()
                )),
                None => {} // a crate-root item, not a module
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The HTTP API is a second codec, not a second implementation: it
/// reaches the rules only through `handler::dispatch`, so it imports none of
/// the modules that hold them.
#[test]
fn http_routes_onto_the_handlers_and_holds_no_rule() {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src.join("http"), &mut files);
    assert!(!files.is_empty(), "src/http/ holds the HTTP API");
    let rules = ["store", "gate", "drift", "embed", "jobs"];
    let mut problems = Vec::new();
    let mut dispatches = false;
    for f in &files {
        let (code, _) = split(&std::fs::read_to_string(f).unwrap());
        dispatches |= code.contains("handler::dispatch");
        for target in crate_imports(&code) {
            if rules.contains(&target.as_str()) {
                problems.push(format!(
                    "{}: the HTTP API imports `{target}`: route onto the request handlers instead",
                    f.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(
        dispatches,
        "the HTTP API runs requests through handler::dispatch"
    );
}

/// Words that start an SQL statement, as memd writes them (upper case).
const SQL: &[&str] = &[
    "SELECT ",
    "INSERT ",
    "UPDATE ",
    "DELETE FROM",
    "CREATE ",
    "DROP ",
    "ALTER TABLE",
    "PRAGMA ",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT ",
    "VACUUM",
    "REPLACE INTO",
    " FROM memories",
    "memory_meta",
    "memory_vectors",
];

/// Whether `word` starts a statement in `s`: at the start or after a space,
/// a newline, `;` or `(` (so a PEM armor line, `-----BEGIN RSA …`, is not a
/// transaction).
fn has_sql_word(s: &str, word: &str) -> bool {
    s.match_indices(word).any(|(at, _)| {
        word.starts_with(' ')
            || s[..at]
                .chars()
                .next_back()
                .is_none_or(|c| c.is_whitespace() || c == ';' || c == '(' || c == '"')
    })
}

#[test]
fn sql_lives_only_in_the_store() {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for f in &files {
        if f.starts_with(src.join("store")) {
            continue;
        }
        let text = std::fs::read_to_string(f).unwrap();
        let (code, strings) = split(&text);
        for s in &strings {
            if let Some(word) = SQL.iter().find(|w| has_sql_word(s, w)) {
                problems.push(format!(
                    "{}: SQL (`{}`) in {:?}",
                    f.strip_prefix(root()).unwrap().display(),
                    word.trim(),
                    s.chars().take(80).collect::<String>()
                ));
            }
        }
        for (what, found) in connection_leaks(&code) {
            problems.push(format!(
                "{}: {what} (`{found}`): only store/ holds a connection; call a named store operation",
                f.strip_prefix(root()).unwrap().display()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What lets a connection out of the store, in code outside it: the
/// SQLite crate or the PostgreSQL client, their connection types, a connection field, a closure over a
/// connection, or a job or read sent to the store's threads directly.
fn connection_leaks(code: &str) -> Vec<(&'static str, String)> {
    let word = |w: &str| {
        code.match_indices(w).any(|(at, _)| {
            let before = code[..at].chars().next_back();
            let after = code[at + w.len()..].chars().next();
            !before.is_some_and(|c| c.is_alphanumeric() || c == '_')
                && !after.is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    };
    let mut found = Vec::new();
    for (what, w) in [
        ("names the SQLite crate", "rusqlite"),
        ("names a connection type", "Connection"),
        ("names the PostgreSQL client", "tokio_postgres"),
        ("names the PostgreSQL client", "postgres"),
    ] {
        if word(w) {
            found.push((what, w.to_string()));
        }
    }
    let squeezed = squeeze(code);
    for (what, pattern) in [
        ("reads a connection field", ".conn."),
        ("reads a connection field", ".conn)"),
        ("reads a connection field", ".conn,"),
        ("a closure over a connection", "|conn|"),
        ("a closure over a connection", "|conn:"),
        ("a closure over a connection", "|conn,"),
        ("a closure over a connection", "|c:&Connection"),
        ("sends a job to the writer thread", ".writer.call("),
        ("a PostgreSQL connection", "team::conn::pg"),
        ("a PostgreSQL connection", ".client.batch_execute("),
        ("sends a read to the readers", ".readers.read("),
        ("sends a read to the readers", ".readers.with_connection("),
    ] {
        if squeezed.contains(pattern) {
            found.push((what, pattern.to_string()));
        }
    }
    found
}

/// The request kinds, as `Request::kind` names them.
fn request_kinds() -> Vec<String> {
    let messages = std::fs::read_to_string(root().join("proto/src/messages/mod.rs")).unwrap();
    let start = messages
        .find("pub fn kind(&self)")
        .expect("Request::kind in proto");
    let body = &messages[start..];
    let end = body.find("\n    }\n").unwrap();
    body[..end]
        .lines()
        .filter(|l| l.trim_start().starts_with("Request::"))
        .filter_map(|l| l.split('"').nth(1).map(str::to_string))
        .collect()
}

#[test]
fn one_handler_file_per_request() {
    let kinds = request_kinds();
    assert!(kinds.len() > 20, "found the kinds: {kinds:?}");
    let dir = root().join("src/handler");
    let mut problems = Vec::new();
    for kind in kinds.iter().filter(|k| *k != "hello") {
        let file = dir.join(format!("{kind}.rs"));
        let Ok(text) = std::fs::read_to_string(&file) else {
            problems.push(format!("no src/handler/{kind}.rs for the `{kind}` request"));
            continue;
        };
        let (code, _) = split(&text);
        let public: Vec<&str> = code
            .lines()
            .filter(|l| l.starts_with("pub"))
            .map(str::trim)
            .collect();
        if public.len() != 1 || !public[0].starts_with("pub(super) async fn handle(") {
            problems.push(format!(
                "src/handler/{kind}.rs must expose exactly `pub(super) async fn handle(`, found {public:?}"
            ));
        }
    }
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let stem = name.trim_end_matches(".rs");
        if name == "mod.rs" || name == "support" {
            continue;
        }
        if !kinds.iter().any(|k| k == stem) {
            problems.push(format!(
                "src/handler/{name} is not named after a request (shared helpers go in support/)"
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What a poisoned lock means is decided once: `sync::lock`, `read` and
/// `write` (`src/sync.rs`) take a lock through its poison; code elsewhere
/// calls them instead of writing `PoisonError::into_inner` again.
#[test]
fn poisoned_locks_are_opened_in_one_place() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let problems: Vec<String> = files
        .iter()
        .filter(|f| !f.ends_with("src/sync.rs"))
        .filter(|f| opens_a_poisoned_lock(&split(&std::fs::read_to_string(f).unwrap()).0))
        .map(|f| {
            format!(
                "{}: opens a poisoned lock itself; call `crate::sync::lock` (or `read`, `write`)",
                f.strip_prefix(root()).unwrap().display()
            )
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The daemon never opens a path a client names: `cite`, which reads a
/// checkout's cited files, is called by the client's modules only (the
/// CLI, the hooks, the MCP bridge, the commands they share).
#[test]
fn only_clients_read_cited_files() {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let clients = ["cite", "commands", "cli", "mcp"];
    let problems: Vec<String> = files
        .iter()
        .filter(|f| !clients.contains(&module_of(&src, f).as_str()))
        .filter(|f| crate_imports(&split(&std::fs::read_to_string(f).unwrap()).0).contains("cite"))
        .map(|f| {
            format!(
                "{}: reads cited files; only a client in the checkout does (`cite` is theirs)",
                f.strip_prefix(root()).unwrap().display()
            )
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// What kind a row is — a captured turn, history, a row this machine owns,
/// a synced one — is spelled once, in `store/kinds.rs`; every statement
/// uses its macro. A second spelling in a string anywhere in `src/` fails.
#[test]
fn row_kinds_are_spelled_once() {
    let spellings = [
        "source = 'capture'",
        "source <> 'capture'",
        "source != 'capture'",
        "source NOT IN ('capture', 'ingest')",
        "source IN ('capture', 'ingest')",
        "team_rev IS NULL",
        "team_rev IS NOT NULL",
    ];
    let home = root().join("src/store/kinds.rs");
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let mut problems = Vec::new();
    for f in files.iter().filter(|f| **f != home) {
        let (_, strings) = split(&std::fs::read_to_string(f).unwrap());
        for s in &strings {
            let flat = s
                .replace("\\\n", " ")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            for p in spellings.iter().filter(|p| flat.contains(*p)) {
                problems.push(format!(
                    "{}: spells `{p}`; use its macro in `store::kinds`",
                    f.strip_prefix(root()).unwrap().display()
                ));
            }
        }
    }
    let own = split(&std::fs::read_to_string(&home).unwrap()).1.join(" ");
    for p in spellings
        .iter()
        .filter(|p| !p.starts_with("source IN") && !p.starts_with("source !="))
    {
        assert!(
            own.contains(*p),
            "store/kinds.rs no longer spells `{p}`: update this test"
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A frozen block changes in one place: the view's own methods
/// (`src/session/`). A purge asks `View::drop_block_holding`; no code
/// elsewhere clears a view's block by hand.
#[test]
fn frozen_blocks_are_cleared_only_by_the_session() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    let session = root().join("src/session");
    let problems: Vec<String> = files
        .iter()
        .filter(|f| !f.starts_with(&session))
        .filter(|f| clears_a_block(&split(&std::fs::read_to_string(f).unwrap()).0))
        .map(|f| {
            format!(
                "{}: clears a frozen block itself; call `View::drop_block_holding` or a \
                 `Session` method",
                f.strip_prefix(root()).unwrap().display()
            )
        })
        .collect();
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Code without its whitespace (a pattern matches however it is wrapped).
fn squeeze(code: &str) -> String {
    code.chars().filter(|c| !c.is_whitespace()).collect()
}

/// Whether code sets a view's snapshot or built block to `None`.
fn clears_a_block(code: &str) -> bool {
    let squeezed = squeeze(code);
    squeezed.contains(".snapshot=None") || squeezed.contains(".built=None")
}

/// Whether code takes a lock through its poison: it names `PoisonError`, or
/// unwraps a lock result with a closure that calls `into_inner`.
fn opens_a_poisoned_lock(code: &str) -> bool {
    let squeezed = squeeze(code);
    squeezed.contains("PoisonError")
        || squeezed.match_indices("unwrap_or_else(|").any(|(at, _)| {
            squeezed[at..]
                .find("))")
                .is_some_and(|end| squeezed[at..at + end].contains(".into_inner("))
        })
}

/// Whether a function body gives a number as its result: `=> 3,`,
/// `=> 3 }`, `return 3;` or a lone `3` line.
fn returns_a_number(body: &str) -> bool {
    let lines: Vec<&str> = body.lines().map(str::trim).collect();
    let number = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit());
    lines.iter().any(|l| {
        l.split("=>")
            .nth(1)
            .is_some_and(|r| number(r.trim().trim_end_matches([',', '}']).trim()))
            || l.strip_prefix("return ")
                .is_some_and(|r| number(r.trim_end_matches(';')))
            || number(l)
    })
}

/// Exit codes are written as numbers in one file, `client/src/exit.rs`:
/// every `exit_code` function, and every function of the command line that
/// returns an exit code, uses its constants, so the library and the CLI
/// cannot disagree.
#[test]
fn exit_codes_are_numbers_only_in_one_place() {
    let mut files = Vec::new();
    rust_files(&root().join("src"), &mut files);
    rust_files(&root().join("client/src"), &mut files);
    let front_end = ["src/cli/", "src/mcp/", "src/commands/", "src/main.rs"];
    let mut problems = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root()).unwrap();
        if rel == Path::new("client/src/exit.rs") {
            continue;
        }
        let in_front_end = front_end
            .iter()
            .any(|p| rel.to_string_lossy().starts_with(p));
        let (code, _) = split(&std::fs::read_to_string(f).unwrap());
        for (head, body) in functions(&code) {
            let gives_exit_code = head.starts_with("fn exit_code(")
                || (in_front_end && (head.contains("-> i32") || head.contains("-> ExitCode")));
            if gives_exit_code && returns_a_number(body) {
                problems.push(format!(
                    "{}: `{}` returns a number: use `memd_client::exit`'s constants",
                    rel.display(),
                    head.trim()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Each function of the code: its head (from `fn` to its body's brace) and
/// its body (braces matched).
fn functions(code: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(n) = code[at..].find("fn ") {
        let start = at + n;
        at = start + 3;
        if code[..start]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
        {
            continue;
        }
        let Some(open) = code[start..].find(['{', ';']).map(|e| start + e) else {
            break;
        };
        if code.as_bytes()[open] == b';' {
            continue; // a declaration without a body
        }
        let mut depth = 0;
        let mut end = code.len();
        for (i, c) in code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = open + i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        out.push((&code[start..open], &code[open..end]));
    }
    out
}

/// Functions of `src/` that are tables, one entry per tool or command, and
/// may be longer: the MCP tools' specs and their commands, the CLI's
/// dispatch of a session's commands.
const TABLES: &[(&str, &str)] = &[
    ("mcp/tools.rs", "specs"),
    ("mcp/tools.rs", "command"),
    ("commands/execute.rs", "execute"),
];

/// A function a newcomer can hold in their head: none of `src/` (its
/// tests left out) is over 100 lines from `fn` to its closing brace, but
/// the [`TABLES`].
#[test]
fn functions_are_at_most_100_lines_but_the_tables() {
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut long = Vec::new();
    let mut tables = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        let (code, _) = split_with(&text, true);
        let code = code
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        for (head, body) in functions(code) {
            let lines = head.matches('\n').count() + body.matches('\n').count() + 1;
            let name = head[3..]
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .next()
                .unwrap_or_default();
            if TABLES.contains(&(rel.as_str(), name)) {
                tables += 1;
            } else if lines > 100 {
                long.push(format!("{rel}: fn {name}, {lines} lines"));
            }
        }
    }
    assert_eq!(tables, TABLES.len(), "each table is where TABLES says");
    assert!(
        long.is_empty(),
        "split these (or, for a table, list it in TABLES):\n{}",
        long.join("\n")
    );
}

/// A handler fails with `HandlerError`; only one that calls the store
/// (`cx.store()`, or the sweep through `cx.sweep`) meets a `StoreError`,
/// which converts into it. The tests of a file are not its handler.
#[test]
fn handlers_that_never_call_the_store_do_not_name_its_error() {
    let dir = root().join("src/handler");
    let mut problems = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() || path.file_name().is_some_and(|n| n == "mod.rs") {
            continue;
        }
        let (code, _) = split(&std::fs::read_to_string(&path).unwrap());
        let handler = code.split("#[cfg(test)]").next().unwrap_or_default();
        let calls_the_store = handler.contains(".store()") || handler.contains(".sweep(");
        if !handler.contains("-> Result<Response, HandlerError>") {
            problems.push(format!(
                "src/handler/{}: `handle` returns `Result<Response, HandlerError>`",
                path.file_name().unwrap().to_string_lossy()
            ));
        }
        if !calls_the_store && handler.contains("StoreError") {
            problems.push(format!(
                "src/handler/{}: never calls the store, yet names `StoreError` (use `HandlerError`)",
                path.file_name().unwrap().to_string_lossy()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The field names of `memd_proto::Memory`.
fn memory_fields() -> BTreeSet<String> {
    let messages = std::fs::read_to_string(root().join("proto/src/messages/memory.rs")).unwrap();
    let (code, _) = split(&messages);
    let start = code
        .find("pub struct Memory {")
        .expect("memd_proto::Memory");
    let body = &code[start..start + code[start..].find("\n}").unwrap()];
    body.lines()
        .filter_map(|l| l.trim().strip_prefix("pub "))
        .filter_map(|l| l.split(':').next())
        .filter(|f| !f.contains(' '))
        .map(str::to_string)
        .collect()
}

/// The blocks of `code` that open with `opener` (its text up to `{`),
/// braces matched.
fn blocks<'a>(code: &'a str, opener: &str) -> Vec<&'a str> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices(opener) {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let mut depth = 0;
        for (i, c) in code[at..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        out.push(&code[at..=at + i]);
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    out
}

/// The memory row has one shape, `memd_proto::Memory`: a struct that
/// declares ten or more of its fields again is a second spelling of the
/// row (the team's `TeamRow` too: it holds a `Memory`), and a
/// `Memory` literal that names every field instead of starting from
/// another (`..blank_row()`) is one too, but for the one blank row and the
/// one mapping from SQL.
#[test]
fn the_memory_row_is_spelled_once() {
    let fields = memory_fields();
    assert!(fields.len() > 30, "read Memory's fields: {fields:?}");
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut problems = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root()).unwrap();
        let (code, _) = split(&std::fs::read_to_string(f).unwrap());
        for block in blocks(&code, "struct ") {
            let declared: Vec<(&str, &str)> = block
                .lines()
                .map(|l| l.trim().strip_prefix("pub ").unwrap_or(l.trim()))
                .filter_map(|l| l.split_once(':'))
                .map(|(name, ty)| (name.trim(), ty.trim()))
                .filter(|(name, _)| fields.contains(*name))
                .collect();
            // Every field optional: a set of changes (an update's), not a row.
            let changes = declared.iter().all(|(_, ty)| ty.starts_with("Option<"));
            if declared.len() >= 10 && !changes {
                let declared = declared.len();
                let name = block.lines().next().unwrap_or_default();
                problems.push(format!(
                    "{}: `{name}` declares {declared} fields of memd_proto::Memory: use Memory",
                    rel.display()
                ));
            }
        }
        for block in blocks(&code, "Memory {") {
            let at = block.as_ptr() as usize - code.as_ptr() as usize;
            if code[..at].trim_end().ends_with("->") {
                continue; // a function's body, not a literal
            }
            let whole = !block.contains("..");
            let allowed =
                rel == Path::new("src/gate/types.rs") || rel.starts_with("src/store/memories");
            if whole && !allowed && block.lines().count() > 10 {
                problems.push(format!(
                    "{}: a `Memory` built field by field: start from `gate::blank_row()`",
                    rel.display()
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The store is `pub(crate)`, so rustc reports its dead code; the one way
/// in from outside the crate is the façade the `bench` feature exports.
#[test]
fn the_store_is_the_crate_s_own() {
    let (lib, _) = split(&std::fs::read_to_string(root().join("src/lib.rs")).unwrap());
    assert!(
        lib.contains("pub(crate) mod store;"),
        "src/lib.rs: `pub(crate) mod store;`"
    );
    // `split` reads `"bench"` as `""`: the feature's name is checked by
    // the build of memd-bench, which needs it.
    assert!(
        lib.contains("#[cfg(feature = \"\")]\npub use store::facade;"),
        "src/lib.rs: the façade is exported only with the `bench` feature"
    );
    let mut outside = Vec::new();
    for dir in ["bench/src", "fuzz/fuzz_targets", "tests"] {
        let mut files = Vec::new();
        rust_files(&root().join(dir), &mut files);
        for f in files {
            if split(&std::fs::read_to_string(&f).unwrap())
                .0
                .contains("memd::store")
            {
                outside.push(f.strip_prefix(root()).unwrap().display().to_string());
            }
        }
    }
    assert!(
        outside.is_empty(),
        "use `memd::facade` (feature `bench`) instead of `memd::store`: {outside:?}"
    );
}

/// The lines of code that count for a repeated run, with their line
/// numbers: blank lines, comment lines, `use` lines and lines of
/// punctuation alone are passed over, and white space is folded.
fn counted_lines(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .map(|(n, l)| (n + 1, l.split_whitespace().collect::<Vec<_>>().join(" ")))
        .filter(|(_, l)| {
            !l.is_empty()
                && !l.starts_with("//")
                && !l.starts_with("use ")
                && !l.starts_with("pub use ")
                && l.chars().any(char::is_alphanumeric)
        })
        .collect()
}

/// Runs of this many counted lines, or more, may not stand twice.
const REPEATED_RUN: usize = 11;

/// No run of more than ten lines of Rust in `src/` stands twice to the
/// letter. A deliberate copy does not belong in Rust: the fixed migrations
/// are SQL files.
#[test]
fn no_run_of_code_stands_twice() {
    use std::collections::HashMap;
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut seen: HashMap<Vec<String>, (String, usize)> = HashMap::new();
    let mut problems = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root()).unwrap().display().to_string();
        let lines = counted_lines(&std::fs::read_to_string(f).unwrap());
        let mut last_reported = 0;
        for (i, window) in lines.windows(REPEATED_RUN).enumerate() {
            let key: Vec<String> = window.iter().map(|(_, l)| l.clone()).collect();
            let line = window[0].0;
            match seen.get(&key) {
                // The same place, or a window overlapping the first one.
                Some((file, at)) if *file == rel && line < *at + REPEATED_RUN => {}
                Some((file, at)) => {
                    if i >= last_reported {
                        problems.push(format!("{rel}:{line} repeats {file}:{at}"));
                        last_reported = i + REPEATED_RUN;
                    }
                }
                None => {
                    seen.insert(key, (rel.clone(), line));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checks_see_what_they_look_for() {
    let leaks = |src: &str| {
        connection_leaks(&split(src).0)
            .into_iter()
            .map(|(_, f)| f)
            .collect::<Vec<_>>()
    };
    assert!(clears_a_block("view.snapshot = None;"));
    assert!(clears_a_block("lock(&named.view).built\n    = None;"));
    assert!(!clears_a_block("if view.snapshot == None {}"));
    assert_eq!(leaks("use rusqlite::Row;"), ["rusqlite"]);
    assert_eq!(leaks("use tokio_postgres::Client;"), ["tokio_postgres"]);
    assert_eq!(
        leaks("use crate::store::team::conn::pg::{self, Link};"),
        ["team::conn::pg"]
    );
    assert_eq!(
        leaks("fn f(c: &Connection) {}"),
        ["Connection", "|c:&Connection"][..1]
    );
    assert_eq!(leaks("memories::get(ctx.conn, 1)"), [".conn,"]);
    assert_eq!(
        leaks("store.readers.read(kind, move |conn| x(conn))"),
        ["|conn|", ".readers.read("]
    );
    assert_eq!(leaks("store.writer\n  .call(author, f)"), [".writer.call("]);
    // Words that only contain the names are not leaks.
    assert!(leaks("ErrorKind::ConnectionAborted; let conns = 1; self.connection()").is_empty());
    assert!(leaks("// rusqlite in a comment\nlet s = \"Connection\";").is_empty());

    let (code, strings) = split(
        "use crate::{store, drift::x}; // crate::cli\nlet s = \"SELECT 1\"; let c = '\"'; let r = r#\"a \"b\"\"#;",
    );
    assert_eq!(
        crate_imports(&code),
        BTreeSet::from(["drift".to_string(), "store".to_string()])
    );
    assert_eq!(strings, vec!["SELECT 1".to_string(), "a \"b\"".to_string()]);

    assert!(returns_a_number(
        "match e {\n    A => 3,\n    B => exit::ERROR,\n}"
    ));
    assert!(returns_a_number("if x {\n    return 1;\n}\n0"));
    assert!(!returns_a_number(
        "match e {\n    A => exit::DRIFT,\n    B => f(2),\n}"
    ));
    assert!(opens_a_poisoned_lock(
        "m.lock()\n  .unwrap_or_else(std::sync::PoisonError::into_inner)"
    ));
    assert!(opens_a_poisoned_lock(
        "m.lock().unwrap_or_else(|e| e.into_inner())"
    ));
    assert!(!opens_a_poisoned_lock("sync::lock(&m); buf.into_inner()"));
    let run: String = (0..REPEATED_RUN)
        .map(|i| format!("let x{i} = {i};\n"))
        .collect();
    assert_eq!(
        counted_lines(&format!("// c\nuse a;\n}}\n\n{run}")).len(),
        REPEATED_RUN
    );
    let fns = functions("fn a() -> i32 {\n    if x { return 1; }\n    0\n}\nfn b();\nfn c() {}");
    assert_eq!(fns.len(), 2);
    assert!(fns[0].0.contains("-> i32") && returns_a_number(fns[0].1));
    assert_eq!(fns[1], ("fn c() ", "{}"));
}

/// The team code builds on the store's row SQL (`store::memories`), never
/// the other way: no import circle between them.
#[test]
fn the_row_sql_does_not_know_the_team() {
    let mut files = Vec::new();
    rust_files(&root().join("src/store/memories"), &mut files);
    assert!(files.len() > 1, "src/store/memories/ holds the row SQL");
    for f in &files {
        let (code, _) = split(&std::fs::read_to_string(f).unwrap());
        for name in ["team::", "super::team", "TeamRow"] {
            assert!(
                !code.contains(name),
                "{} names `{name}`: pass it plain values instead",
                f.strip_prefix(root()).unwrap().display()
            );
        }
    }
}

/// What in `code` reaches team memory's engine around its one door, the
/// store's wing.
fn team_engine_reaches(code: &str) -> Vec<&'static str> {
    let squeezed = squeeze(code);
    let names = |p: &str| {
        squeezed.match_indices(p).any(|(i, _)| {
            !squeezed[i + p.len()..]
                .chars()
                .next()
                .is_some_and(|c| c.is_alphanumeric() || c == '_')
        })
    };
    ["team::Team", ".team()", ".engine()", "Wing::Postgres"]
        .into_iter()
        .filter(|p| names(p))
        .collect()
}

/// Team memory has one door: outside `src/store/team/`, nothing holds the
/// PostgreSQL engine (`Team`); everything asks the store's `Wing`, whose
/// failing stand-in then tests each caller's failure path.
#[test]
fn team_memory_is_reached_through_the_wing_only() {
    assert_eq!(
        team_engine_reaches("if let Some(t) = store . team () {}"),
        [".team()"]
    );
    assert_eq!(
        team_engine_reaches("fn f(t: &crate::store::team::Team)"),
        ["team::Team"]
    );
    assert!(team_engine_reaches("Err(crate::store::team::TeamError::NotInitialised)").is_empty());
    assert!(team_engine_reaches("store.wing().purge(&uids)").is_empty());
    let src = root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let team = src.join("store/team");
    let mut found = Vec::new();
    for file in files.iter().filter(|f| !f.starts_with(&team)) {
        let (code, _) = split(&std::fs::read_to_string(file).unwrap());
        for p in team_engine_reaches(&code) {
            found.push(format!("{}: {p}", file.display()));
        }
    }
    assert!(
        found.is_empty(),
        "these reach the team engine around the wing (add what they need to \
         `Wing`): {found:#?}"
    );
}
