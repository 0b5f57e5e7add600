//! `memd import-md`: notes people and agents already keep — `CLAUDE.md`,
//! `AGENTS.md`, `MEMORY.md` (memd's own sidecar too) — become memories,
//! read by this client.
//!
//! Each bullet (with its indented continuation lines) and each paragraph is
//! one memory; its category comes from the nearest heading when one fits
//! (`## Conventions` → `convention`, `## Build and test` → `procedure`, …),
//! else `note`. Code blocks, tables, HTML comments and headings themselves
//! are not memories. Each memory keeps its source file, line and heading in
//! metadata (`source`, `line`, `heading`) and goes through the write gate.
//! Importing a file again adds only what its earlier imports did not: an
//! item whose text a memory from the same file already holds is skipped.

use std::collections::HashSet;

use memd_proto::{AddRequest, Filter, ListRequest};
use serde_json::json;

/// One memory found in a notes file.
#[derive(Debug, Clone, PartialEq)]
pub struct Item {
    /// Line where it starts (from 1).
    pub line: usize,
    /// The nearest heading above it.
    pub heading: Option<String>,
    /// Category from that heading.
    pub category: &'static str,
    /// The text.
    pub content: String,
}

/// The category a heading names, if one fits.
fn category_of(heading: &str) -> &'static str {
    let h = heading.to_lowercase();
    let has = |words: &[&str]| words.iter().any(|w| h.contains(w));
    if has(&["preference"]) {
        "preference"
    } else if has(&["decision"]) {
        "decision"
    } else if has(&[
        "gotcha", "pitfall", "caveat", "warning", "don't", "do not", "avoid",
    ]) {
        "gotcha"
    } else if has(&["convention", "style", "rule", "guideline", "standard"]) {
        "convention"
    } else if has(&["pattern"]) {
        "pattern"
    } else if has(&[
        "procedure",
        "workflow",
        "how to",
        "build",
        "test",
        "command",
        "setup",
        "deploy",
        "release",
        "run",
    ]) {
        "procedure"
    } else if has(&["fact"]) {
        "fact"
    } else if has(&["project", "overview", "architecture", "structure", "layout"]) {
        "project"
    } else if has(&["identity", "about me", "who i am"]) {
        "identity"
    } else if has(&["task", "todo", "to do"]) {
        "task"
    } else {
        "note"
    }
}

/// A bullet's text: `- x`, `* x`, `+ x`, `1. x`, `1) x`.
fn bullet(line: &str) -> Option<&str> {
    let t = line.trim_start();
    if let Some(rest) = t
        .strip_prefix("- ")
        .or_else(|| t.strip_prefix("* "))
        .or_else(|| t.strip_prefix("+ "))
    {
        return Some(rest);
    }
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 {
        let rest = &t[digits..];
        return rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") "));
    }
    None
}

/// memd's own block lines carry the memory's id: `- #12 text`.
fn without_memd_id(text: &str) -> &str {
    if let Some(rest) = text.strip_prefix('#') {
        let digits = rest.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && rest[digits..].starts_with(' ') {
            return rest[digits..].trim_start();
        }
    }
    text
}

/// The memories of a notes file, in order.
pub fn parse(text: &str) -> Vec<Item> {
    let mut items = Vec::new();
    let mut heading: Option<String> = None;
    let mut current: Option<(usize, String, bool)> = None; // (line, text, is_bullet)
    let mut in_fence = false;
    let mut in_comment = false;
    let flush = |current: &mut Option<(usize, String, bool)>,
                 items: &mut Vec<Item>,
                 heading: &Option<String>| {
        if let Some((line, text, _)) = current.take() {
            let content = text.split_whitespace().collect::<Vec<_>>().join(" ");
            if content.chars().count() >= 3 {
                items.push(Item {
                    line,
                    heading: heading.clone(),
                    category: heading.as_deref().map_or("note", category_of),
                    content,
                });
            }
        }
    };
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let t = raw.trim();
        if in_comment {
            if t.contains("-->") {
                in_comment = false;
            }
            continue;
        }
        if t.starts_with("```") || t.starts_with("~~~") {
            flush(&mut current, &mut items, &heading);
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        if t.starts_with("<!--") {
            flush(&mut current, &mut items, &heading);
            in_comment = !t.contains("-->");
            continue;
        }
        if t.is_empty() {
            flush(&mut current, &mut items, &heading);
            continue;
        }
        if t.starts_with('#') && t.trim_start_matches('#').starts_with(' ') {
            flush(&mut current, &mut items, &heading);
            let title = t.trim_start_matches('#').trim().to_string();
            // memd's block title and a file's own title are not sections.
            heading = (!matches!(
                title.to_lowercase().as_str(),
                "memory" | "claude.md" | "agents.md"
            ))
            .then_some(title);
            continue;
        }
        if t.starts_with('|') {
            flush(&mut current, &mut items, &heading);
            continue;
        }
        if let Some(text) = bullet(raw) {
            flush(&mut current, &mut items, &heading);
            current = Some((n, without_memd_id(text.trim()).to_string(), true));
            continue;
        }
        match &mut current {
            // An indented line continues a bullet; any line continues a
            // paragraph.
            Some((_, text, is_bullet)) if !*is_bullet || raw.starts_with([' ', '\t']) => {
                text.push(' ');
                text.push_str(t);
            }
            _ => {
                flush(&mut current, &mut items, &heading);
                current = Some((n, t.to_string(), false));
            }
        }
    }
    flush(&mut current, &mut items, &heading);
    items
}

/// What `import-md` did.
#[derive(Debug, Default)]
pub struct Counts {
    /// Files read.
    pub files: usize,
    /// Items found.
    pub items: usize,
    /// Stored.
    pub added: usize,
    /// Already imported from the same file (or merged into an equal memory).
    pub existing: usize,
    /// Refused by the write gate.
    pub rejected: usize,
    /// The first refusals.
    pub errors: Vec<String>,
}

/// Imports one file's items (`source`: its path as recorded).
///
/// # Errors
/// The client's errors but gate refusals.
pub async fn send(
    client: &mut memd_client::Client,
    source: &str,
    items: Vec<Item>,
    counts: &mut Counts,
) -> Result<(), memd_client::Error> {
    counts.files += 1;
    counts.items += items.len();
    // What earlier imports of this file stored.
    let mut known: HashSet<String> = HashSet::new();
    let mut offset = 0;
    loop {
        let page = client
            .list(ListRequest {
                filter: Filter {
                    meta: vec![("source".into(), json!(source).to_string())],
                    include_superseded: true,
                    include_archived: true,
                    ..Filter::default()
                },
                limit: 500,
                offset,
            })
            .await?;
        let n = page.memories.len();
        known.extend(page.memories.into_iter().map(|m| m.content));
        if n < 500 {
            break;
        }
        offset += 500;
    }
    for item in items {
        if known.contains(&item.content) {
            counts.existing += 1;
            continue;
        }
        let metadata = json!({"source": source, "line": item.line, "heading": item.heading});
        let add = AddRequest {
            content: item.content.clone(),
            category: Some(item.category.to_string()),
            metadata: Some(metadata.to_string()),
            ..AddRequest::default()
        };
        match client.add(add).await {
            Ok(r) if r.deduped || r.merged_into.is_some() => counts.existing += 1,
            Ok(_) => {
                counts.added += 1;
                known.insert(item.content);
            }
            Err(memd_client::Error::Rejected(b)) => {
                counts.rejected += 1;
                if counts.errors.len() < 5 {
                    counts
                        .errors
                        .push(format!("{source}:{}: {}", item.line, b.message));
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bullets_and_paragraphs_under_their_headings() {
        let text = "# CLAUDE.md\n\nThis repo is the billing service.\nIt talks to Stripe.\n\n\
            ## Build & test\n- Run `make test` before pushing\n  (the CI runs the same target)\n\
            1. Use `cargo fmt`\n\n```sh\ncargo build\n```\n\n## Code style\n* Tabs in Makefiles\n\
            | a | b |\n<!-- a comment\nspanning lines -->\n### Gotchas\n- Never log card numbers\n";
        let items = parse(text);
        let got: Vec<(usize, &str, &str)> = items
            .iter()
            .map(|i| (i.line, i.category, i.content.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                (
                    3,
                    "note",
                    "This repo is the billing service. It talks to Stripe."
                ),
                (
                    7,
                    "procedure",
                    "Run `make test` before pushing (the CI runs the same target)"
                ),
                (9, "procedure", "Use `cargo fmt`"),
                (16, "convention", "Tabs in Makefiles"),
                (21, "gotcha", "Never log card numbers"),
            ]
        );
        assert_eq!(items[1].heading.as_deref(), Some("Build & test"));
    }

    #[test]
    fn memds_own_sidecar_imports_without_its_ids() {
        let text = "# Memory\n\n<!-- generated by memd from namespace `default`; edits here are overwritten -->\n\
            ## Memory\n\n### Preferences\n- #12 The user prefers tabs over spaces.\n\n### Facts\n\
            - #3 deploy: The deploy script lives in ops/deploy.sh.\n<!-- end of memd memory -->\n";
        let items = parse(text);
        let got: Vec<(&str, &str)> = items
            .iter()
            .map(|i| (i.category, i.content.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("preference", "The user prefers tabs over spaces."),
                ("fact", "deploy: The deploy script lives in ops/deploy.sh."),
            ]
        );
    }
}
