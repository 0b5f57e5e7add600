//! The docs are tested, so a command renamed without its docs, or a page
//! moved without its links, fails here with the file, line and command.
//!
//! - Every command line in a fenced ```` ```sh ```` block of README.md and
//!   docs/*.md runs, in order, against a real daemon on a temporary data dir
//!   (one per page: a tour that adds then searches works), through `sh` with
//!   the `memd` under test first on `PATH`, `HOME` and the XDG dirs inside
//!   the temp dir (so `memd setup` writes there). Its exit code must be what
//!   the text says: 0, or the `exit N` of a trailing comment
//!   (`memd get 99   # not found: exit 1`).
//! - A block that cannot run says why in its info string:
//!   ```` ```sh no-run: needs PostgreSQL ````. Its `memd` lines are still
//!   parsed by the real command-line definitions.
//! - Every relative link and `#anchor` of the docs resolves (anchors as
//!   GitHub makes them from headings); every docs page is reachable from the
//!   README; every `memd help` topic has its page; every error code the CLI
//!   can print has its entry in docs/troubleshooting.md.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{BIN, Daemon, memd_command, require};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The pages whose commands run: README.md and docs/*.md.
fn command_pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    pages.extend(docs_pages());
    pages
}

fn docs_pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/ exists")
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    pages.sort();
    pages
}

/// The pages whose links are checked.
fn linked_pages() -> Vec<PathBuf> {
    let mut pages = command_pages();
    for p in [
        "CONTRIBUTING.md",
        "CHANGELOG.md",
        "ARCHITECTURE.md",
        "src/store/team/README.md",
        "bench/RESULTS.md",
    ] {
        pages.push(root().join(p));
    }
    pages
}

fn rel(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

/// A fenced block.
struct Block {
    /// The info string after the fence (`sh`, `sh no-run: why`, `toml`).
    info: String,
    /// The line of the opening fence (1-based).
    line: usize,
    /// The lines inside, each with its line number.
    lines: Vec<(usize, String)>,
}

/// The fenced blocks of a page, and its other lines (prose and headings).
fn blocks(text: &str) -> (Vec<Block>, Vec<(usize, String)>) {
    let mut blocks = Vec::new();
    let mut prose = Vec::new();
    // The open block, its fence and the fence's indent (a block inside a
    // list item is indented like the item's text).
    let mut open: Option<(Block, String, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let trimmed = line.trim_start_matches(' ');
        let indent = line.len() - trimmed.len();
        match &mut open {
            Some((block, fence, fence_indent)) => {
                if trimmed.trim_end() == fence.as_str() {
                    blocks.push(open.take().unwrap().0);
                } else {
                    let cut = indent.min(*fence_indent);
                    block.lines.push((n, line[cut..].to_string()));
                }
            }
            None => {
                if let Some(rest) = trimmed.strip_prefix("```") {
                    let ticks = 3 + rest.chars().take_while(|c| *c == '`').count();
                    open = Some((
                        Block {
                            info: trimmed[ticks..].trim().to_string(),
                            line: n,
                            lines: Vec::new(),
                        },
                        "`".repeat(ticks),
                        indent,
                    ));
                } else {
                    prose.push((n, line.to_string()));
                }
            }
        }
    }
    assert!(open.is_none(), "a fenced block is never closed");
    (blocks, prose)
}

/// One command of a block: its line, its text (continuation lines
/// joined), the exit code the text expects.
struct Cmd {
    line: usize,
    text: String,
    expect: i32,
}

/// Where a `#` comment starts on a shell line (outside quotes), if any.
fn comment_start(line: &str) -> Option<usize> {
    let (mut single, mut double) = (false, false);
    let mut prev = ' ';
    for (i, c) in line.char_indices() {
        match c {
            '\'' if !double => single = !single,
            '"' if !single && prev != '\\' => double = !double,
            '#' if !single && !double && (prev == ' ' || prev == '\t' || i == 0) => {
                return Some(i);
            }
            _ => {}
        }
        prev = c;
    }
    None
}

fn commands(block: &Block, file: &str) -> Vec<Cmd> {
    let exit = regex::Regex::new(r"\bexit (\d+)\b").unwrap();
    let mut out = Vec::new();
    let mut pending: Option<(usize, String)> = None;
    for (n, line) in &block.lines {
        let (start, text) = match pending.take() {
            Some((start, text)) => (start, text + "\n" + line),
            None => {
                let t = line.trim();
                if t.is_empty() || t.starts_with('#') {
                    continue;
                }
                assert!(
                    !t.starts_with("$ "),
                    "{file}:{n}: a ```sh block holds commands only; show output in a \
                     ```text block"
                );
                (*n, line.clone())
            }
        };
        if text.ends_with('\\') {
            pending = Some((start, text));
            continue;
        }
        let last = text.lines().last().unwrap_or("").to_string();
        let expect = comment_start(&last)
            .and_then(|at| exit.captures(&last[at..]))
            .map_or(0, |c| c[1].parse().unwrap());
        out.push(Cmd {
            line: start,
            text,
            expect,
        });
    }
    assert!(pending.is_none(), "{file}: a command ends with `\\`");
    out
}

/// The words of a `memd …` command, when it is one plain command (no
/// pipes, redirections or variables), for the parser check.
fn memd_words(text: &str) -> Option<Vec<String>> {
    let code = match comment_start(text) {
        Some(at) => &text[..at],
        None => text,
    };
    let code = code.replace("\\\n", " ");
    if code.contains(['|', ';', '&', '<', '>', '$', '`', '(']) {
        return None;
    }
    let words = shlex::split(&code)?;
    (words.first().map(String::as_str) == Some("memd")).then_some(words)
}

/// Whether a command line calls `memd` (for the count).
fn calls_memd(text: &str) -> bool {
    let code = comment_start(text).map_or(text, |at| &text[..at]);
    code.split(|c: char| c.is_whitespace() || "|;&(".contains(c))
        .any(|w| w == "memd")
}

/// The programs a command runs first on its line (to skip a page whose
/// tool is missing), ignoring `memd` and shell built-ins.
fn external_tool(text: &str) -> Option<String> {
    let first = text.split_whitespace().next()?;
    let builtins = [
        "memd", "cd", "export", "echo", "printf", "test", "[", "true", "false", "cat", "mkdir",
        "ls", "rm", "cp", "mv", "grep", "head", "tail", "wc", "sed", "sort", "touch", "chmod",
    ];
    (!builtins.contains(&first) && !first.contains('=')).then(|| first.to_string())
}

fn on_path(name: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
}

/// What running a page found.
#[derive(Default)]
struct Tally {
    ran: usize,
    memd_ran: usize,
    parsed: usize,
    no_run: Vec<String>,
}

/// Runs one page's blocks in order against one daemon; returns failures.
fn run_page(page: &Path, tally: &mut Tally) -> Vec<String> {
    let file = rel(page);
    let text = std::fs::read_to_string(page).unwrap();
    let (blocks, _) = blocks(&text);
    let sh: Vec<&Block> = blocks
        .iter()
        .filter(|b| b.info.split_whitespace().next() == Some("sh"))
        .collect();
    let mut failures = Vec::new();
    let mut runnable = Vec::new();
    for block in &sh {
        let rest = block.info["sh".len()..].trim();
        if rest.is_empty() {
            runnable.push(*block);
            continue;
        }
        let reason = rest.strip_prefix("no-run:").map(str::trim);
        match reason {
            Some(why) if !why.is_empty() => {
                tally.no_run.push(format!("{file}:{}: {why}", block.line));
                for cmd in commands(block, &file) {
                    if let Some(words) = memd_words(&cmd.text) {
                        tally.parsed += 1;
                        if let Err(e) = memd::cli::help::command().try_get_matches_from(&words) {
                            failures.push(format!(
                                "{file}:{}: `{}` does not parse:\n{}",
                                cmd.line,
                                cmd.text.trim(),
                                e.render()
                            ));
                        }
                    }
                }
            }
            _ => failures.push(format!(
                "{file}:{}: the block's info string must be `sh` or `sh no-run: <why it \
                 cannot run in a test>`, not `{}`",
                block.line, block.info
            )),
        }
    }
    if runnable.is_empty() {
        return failures;
    }
    for block in &runnable {
        for cmd in commands(block, &file) {
            if let Some(tool) = external_tool(&cmd.text)
                && !on_path(&tool)
                && !require(
                    false,
                    &format!("`{tool}` is not installed ({file}:{})", cmd.line),
                )
            {
                return failures;
            }
        }
    }

    let d = Daemon::start();
    let home = d.dir.path().to_path_buf();
    let work = home.join("work");
    let bin = home.join("bin");
    let out_dir = home.join("out");
    for dir in [&work, &bin, &out_dir] {
        std::fs::create_dir_all(dir).unwrap();
    }
    std::os::unix::fs::symlink(BIN, bin.join("memd")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let env = |cmd: &mut Command| {
        // memd_command's hermetic environment, and the page's data dir.
        let base = memd_command(&home);
        for (k, v) in base.get_envs() {
            match v {
                Some(v) => cmd.env(k, v),
                None => cmd.env_remove(k),
            };
        }
        cmd.env("PATH", &path).env("MEMD_DATA_DIR", d.data_dir());
    };
    for block in runnable {
        let cmds = commands(block, &file);
        let mut script = String::from("cd \"$MEMD_DOCS_WORK\" || exit 99\n");
        for (i, cmd) in cmds.iter().enumerate() {
            script.push_str(&format!(
                "{{ {}\n}} >\"$MEMD_DOCS_OUT/{i}.out\" 2>\"$MEMD_DOCS_OUT/{i}.err\" </dev/null\n\
                 rc=$?\nif [ \"$rc\" -ne {} ]; then echo \"{i} $rc\" >\"$MEMD_DOCS_OUT/fail\"; \
                 exit 0; fi\n",
                cmd.text, cmd.expect
            ));
        }
        let _ = std::fs::remove_file(out_dir.join("fail"));
        let mut sh = Command::new("sh");
        env(&mut sh);
        sh.arg("-c")
            .arg(&script)
            .env("MEMD_DOCS_WORK", &work)
            .env("MEMD_DOCS_OUT", &out_dir)
            .current_dir(&work)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = sh.spawn().unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                failures.push(format!(
                    "{file}:{}: the block did not finish in 120 s",
                    block.line
                ));
                break child.wait().unwrap();
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let read = |name: String| std::fs::read_to_string(out_dir.join(name)).unwrap_or_default();
        if let Ok(fail) = std::fs::read_to_string(out_dir.join("fail")) {
            let mut parts = fail.split_whitespace();
            let i: usize = parts.next().unwrap().parse().unwrap();
            let rc = parts.next().unwrap();
            let cmd = &cmds[i];
            failures.push(format!(
                "{file}:{}: `{}` exited {rc}, the docs say {}\nstdout: {}\nstderr: {}",
                cmd.line,
                cmd.text.trim(),
                cmd.expect,
                read(format!("{i}.out")).trim(),
                read(format!("{i}.err")).trim()
            ));
            break;
        }
        if !status.success() {
            failures.push(format!(
                "{file}:{}: the block's shell failed ({status})",
                block.line
            ));
            break;
        }
        tally.ran += cmds.len();
        tally.memd_ran += cmds.iter().filter(|c| calls_memd(&c.text)).count();
    }
    // Stop whatever daemon the page left (its own, or one a command
    // autostarted after a `memd stop`).
    let mut stop = Command::new(BIN);
    env(&mut stop);
    let _ = stop
        .args(["--no-autostart", "stop"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    failures
}

#[test]
fn every_command_in_the_docs_runs_with_the_exit_code_they_state() {
    let mut tally = Tally::default();
    let mut failures = Vec::new();
    for page in command_pages() {
        failures.extend(run_page(&page, &mut tally));
    }
    eprintln!(
        "docs: {} command lines run ({} calling memd), {} memd lines of no-run blocks \
         parsed; no-run blocks:\n  {}",
        tally.ran,
        tally.memd_ran,
        tally.parsed,
        tally.no_run.join("\n  ")
    );
    assert!(failures.is_empty(), "\n{}", failures.join("\n\n"));
    assert!(tally.memd_ran > 0, "no memd command ran");
}

/// GitHub's anchor for a heading: markup and punctuation dropped,
/// lower-cased, spaces to `-`.
fn slug(heading: &str) -> String {
    let link = regex::Regex::new(r"\[([^\]]*)\]\([^)]*\)").unwrap();
    let text = link.replace_all(heading, "$1");
    text.trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings (duplicates get `-1`, `-2`, …).
fn anchors(text: &str) -> BTreeSet<String> {
    let (_, prose) = blocks(text);
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut out = BTreeSet::new();
    for (_, line) in prose {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if (1..=6).contains(&hashes) && line[hashes..].starts_with(' ') {
            let s = slug(&line[hashes..]);
            let n = seen.entry(s.clone()).or_insert(0);
            out.insert(if *n == 0 {
                s.clone()
            } else {
                format!("{s}-{n}")
            });
            *n += 1;
        }
    }
    out
}

/// The link targets of a page's prose (code spans and blocks left out).
fn links(text: &str) -> Vec<(usize, String)> {
    let code = regex::Regex::new(r"`+[^`]*`+").unwrap();
    let link = regex::Regex::new(r"\]\(([^)\s]+)(?:\s+\x22[^\x22]*\x22)?\)").unwrap();
    let (_, prose) = blocks(text);
    let mut out = Vec::new();
    for (n, line) in prose {
        let line = code.replace_all(&line, "");
        for c in link.captures_iter(&line) {
            out.push((n, c[1].to_string()));
        }
    }
    out
}

fn is_external(target: &str) -> bool {
    ["http://", "https://", "mailto:"]
        .iter()
        .any(|p| target.starts_with(p))
}

#[test]
fn every_link_and_anchor_in_the_docs_resolves() {
    let mut failures = Vec::new();
    let mut count = 0;
    for page in linked_pages() {
        let file = rel(&page);
        let text = std::fs::read_to_string(&page).unwrap_or_else(|e| panic!("{file}: {e}"));
        for (n, target) in links(&text) {
            if is_external(&target) {
                continue;
            }
            count += 1;
            let (path, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let dest = if path.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(path)
            };
            if !dest.exists() {
                failures.push(format!("{file}:{n}: `{target}`: no file {}", rel(&dest)));
                continue;
            }
            if anchor.is_empty() {
                continue;
            }
            if dest.extension().is_none_or(|e| e != "md") {
                failures.push(format!("{file}:{n}: `{target}`: an anchor into a non-page"));
                continue;
            }
            let known = anchors(&std::fs::read_to_string(&dest).unwrap());
            if !known.contains(anchor) {
                failures.push(format!(
                    "{file}:{n}: `{target}`: {} has no heading `#{anchor}`",
                    rel(&dest)
                ));
            }
        }
    }
    eprintln!("docs: {count} relative links checked");
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
    assert!(count > 0);
}

#[test]
fn every_docs_page_is_reachable_from_the_readme() {
    let mut seen = BTreeSet::new();
    let mut queue = VecDeque::from([root().join("README.md")]);
    while let Some(page) = queue.pop_front() {
        let Ok(page) = page.canonicalize() else {
            continue;
        };
        if page.extension().is_none_or(|e| e != "md") || !seen.insert(page.clone()) {
            continue;
        }
        let text = std::fs::read_to_string(&page).unwrap();
        for (_, target) in links(&text) {
            if !is_external(&target) {
                let path = target.split('#').next().unwrap();
                if !path.is_empty() {
                    queue.push_back(page.parent().unwrap().join(path));
                }
            }
        }
    }
    let mut pages = docs_pages();
    pages.extend(
        ["CONTRIBUTING.md", "CHANGELOG.md", "bench/RESULTS.md"]
            .iter()
            .map(|p| root().join(p)),
    );
    let missing: Vec<String> = pages
        .iter()
        .filter(|p| !seen.contains(&p.canonicalize().unwrap()))
        .map(|p| rel(p))
        .collect();
    assert!(
        missing.is_empty(),
        "not reachable from README.md: {missing:?}"
    );
}

#[test]
fn every_help_topic_has_its_page() {
    for t in memd::cli::help::TOPICS {
        assert!(
            root().join(t.page).is_file(),
            "memd help {} names {}, which does not exist",
            t.name,
            t.page
        );
    }
}

/// Every `code` the CLI can print: the wire's error codes, the client's
/// own, and the CLI's.
fn error_codes() -> BTreeSet<String> {
    let read = |p: &str| std::fs::read_to_string(root().join(p)).unwrap();
    let mut codes = BTreeSet::new();
    let wire = regex::Regex::new(r#"ErrorCode::\w+ => "([a-z_]+)""#).unwrap();
    for c in wire.captures_iter(&read("proto/src/messages/errors.rs")) {
        codes.insert(c[1].to_string());
    }
    let client = read("client/src/error.rs");
    let code_fn = client
        .split("pub fn code(&self)")
        .nth(1)
        .and_then(|s| s.split("\n    }\n").next())
        .expect("memd_client::Error::code");
    let arm = regex::Regex::new(r#"=> "([a-z_]+)""#).unwrap();
    for c in arm.captures_iter(code_fn) {
        codes.insert(c[1].to_string());
    }
    let cli = regex::Regex::new(r#""code"(?:\]\s*=\s*json!\(|:\s*)"([a-z_]+)""#).unwrap();
    for p in ["src/commands/error.rs", "src/main.rs"] {
        for c in cli.captures_iter(&read(p)) {
            codes.insert(c[1].to_string());
        }
    }
    codes
}

#[test]
fn every_error_code_has_its_troubleshooting_entry() {
    let codes = error_codes();
    for expected in [
        "drift",
        "usage",
        "unreachable",
        "check_failed",
        "team_outcome_unknown",
    ] {
        assert!(
            codes.contains(expected),
            "{expected} not found in {codes:?}"
        );
    }
    let page = std::fs::read_to_string(root().join("docs/troubleshooting.md")).unwrap();
    let known = anchors(&page);
    let missing: Vec<&String> = codes.iter().filter(|c| !known.contains(*c)).collect();
    assert!(
        missing.is_empty(),
        "docs/troubleshooting.md has no heading for {missing:?}"
    );
}

#[test]
fn the_block_parser_reads_what_the_docs_write() {
    let (blocks, _) = blocks(
        "text\n```sh\nmemd add x   # stored\nmemd get 9   # not found: exit 1\nprintf 'a # b' \\\n  | memd shell\n```\n\n- item\n\n  ```sh no-run: needs PostgreSQL\n  memd team init\n  ```\n",
    );
    assert_eq!(blocks.len(), 2);
    let cmds = commands(&blocks[0], "t");
    let got: Vec<(usize, i32)> = cmds.iter().map(|c| (c.line, c.expect)).collect();
    assert_eq!(got, vec![(3, 0), (4, 1), (5, 0)]);
    assert!(cmds[2].text.contains("| memd shell"));
    assert!(calls_memd(&cmds[2].text));
    assert_eq!(blocks[1].info, "sh no-run: needs PostgreSQL");
    assert_eq!(
        memd_words(&commands(&blocks[1], "t")[0].text),
        Some(vec!["memd".into(), "team".into(), "init".into()])
    );
    assert_eq!(slug("`team_outcome_unknown`"), "team_outcome_unknown");
    assert_eq!(
        slug("What a shared write's answer means"),
        "what-a-shared-writes-answer-means"
    );
    assert_eq!(
        slug("The memory block (`inject`)"),
        "the-memory-block-inject"
    );
    assert_eq!(comment_start("printf '#x' # c"), Some(12));
}
