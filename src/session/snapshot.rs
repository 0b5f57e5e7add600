//! The frozen snapshot: the memory block a session injects into its
//! model's prompt (ARCHITECTURE.md "Frozen snapshot").
//!
//! Pure rules: rows arrive in priority order (pinned, tier, importance,
//! category, created_at, id); [`Builder`] takes each one that still fits the
//! character budget — an entry that does not fit is left out whole — and
//! renders them grouped by category. Nothing volatile goes into the block:
//! no time, counter, generation or usage figure, so the same rows always
//! give the same bytes.
//!
//! Format:
//!
//! ```text
//! ## Memory
//!
//! ### Preferences
//! - #12 The user prefers tabs over spaces.
//!
//! ### Facts
//! - #3 deploy: The deploy script lives in ops/deploy.sh.
//! ```
//!
//! Sections come in the order of their highest-priority memory (so the
//! section of a pinned memory comes first), lines within a section in
//! priority order; one line per memory: `- #<id> [<subject>: ]<content>`
//! with the content's whitespace (newlines included) collapsed to single
//! spaces.

/// The first line of every block.
pub const HEADER: &str = "## Memory\n";

/// The heading of the person's own memories (the `@me` namespace), after
/// the project's: `\n## Personal\n`, then its sections as above.
pub const PERSONAL_HEADER: &str = "\n## Personal\n";

/// A row offered to the builder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Memory id.
    pub id: i64,
    /// The row's rev (the block's rows join the session's read set).
    pub rev: i64,
    /// Category.
    pub category: String,
    /// Subject.
    pub subject: Option<String>,
    /// Content.
    pub content: String,
    /// What the block says after the content of a memory that cites code
    /// whose last verdict is not `fresh` (`store::citations::block_mark`).
    pub mark: Option<String>,
}

/// What happened to an offered row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    /// In the block.
    Taken,
    /// Too long for what is left of the budget.
    Skipped,
}

/// The rendered block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The bytes to inject.
    pub block: String,
    /// Memories in the block.
    pub included: u32,
    /// Length of the block in characters.
    pub chars: u32,
    /// The memories in the block: (id, rev).
    pub rows: Vec<(i64, i64)>,
}

/// Collects rows within a budget.
#[derive(Debug)]
pub struct Builder {
    header: &'static str,
    budget: usize,
    used: usize,
    /// Sections in the order their first memory was taken.
    sections: Vec<(String, Vec<String>)>,
    /// The rows taken: (id, rev).
    rows: Vec<(i64, i64)>,
    skipped_in_a_row: usize,
}

/// After this many rows in a row that do not fit, the block is considered
/// full (the rest would be scanned for nothing).
pub const GIVE_UP_AFTER: usize = 256;

/// Characters below which nothing more can fit.
const MIN_LINE: usize = 8;

fn title(category: &str) -> String {
    let mut t = String::with_capacity(category.len() + 1);
    let mut chars = category.chars();
    if let Some(first) = chars.next() {
        t.extend(first.to_uppercase());
    }
    t.push_str(chars.as_str());
    // Plural section names read better: "Facts", "Preferences".
    if !t.ends_with('s') {
        t.push('s');
    }
    t
}

/// The line of one memory (with its newline).
pub fn line(row: &Row) -> String {
    let mut out = format!("- #{} ", row.id);
    if let Some(subject) = row.subject.as_deref().filter(|s| !s.trim().is_empty()) {
        push_collapsed(&mut out, subject);
        out.push_str(": ");
    }
    push_collapsed(&mut out, &row.content);
    if let Some(mark) = &row.mark {
        out.push(' ');
        push_collapsed(&mut out, mark);
    }
    out.push('\n');
    out
}

fn push_collapsed(out: &mut String, text: &str) {
    let mut first = true;
    for word in text.split_whitespace() {
        if !first {
            out.push(' ');
        }
        out.push_str(word);
        first = false;
    }
}

fn section_header(category: &str) -> String {
    format!("\n### {}\n", title(category))
}

impl Builder {
    /// A builder for `budget` characters.
    pub fn new(budget: usize) -> Builder {
        Builder::headed(HEADER, budget)
    }

    /// A builder whose block starts with `header` (see [`PERSONAL_HEADER`]).
    pub fn headed(header: &'static str, budget: usize) -> Builder {
        // A budget too small for the header gives an empty block: the block
        // is never longer than its budget.
        let chars = header.chars().count();
        Builder {
            header,
            budget,
            used: if budget < chars { budget + 1 } else { chars },
            sections: Vec::new(),
            rows: Vec::new(),
            skipped_in_a_row: 0,
        }
    }

    /// Offers the next row in priority order.
    pub fn offer(&mut self, row: &Row) -> Offer {
        let line = line(row);
        let section = self.sections.iter().position(|(c, _)| *c == row.category);
        let mut cost = line.chars().count();
        if section.is_none() {
            cost += section_header(&row.category).chars().count();
        }
        if self.used + cost > self.budget {
            self.skipped_in_a_row += 1;
            return Offer::Skipped;
        }
        self.used += cost;
        self.skipped_in_a_row = 0;
        self.rows.push((row.id, row.rev));
        match section {
            Some(i) => self.sections[i].1.push(line),
            None => self.sections.push((row.category.clone(), vec![line])),
        }
        Offer::Taken
    }

    /// Whether more rows cannot change the block (or are not worth trying).
    pub fn is_full(&self) -> bool {
        self.budget.saturating_sub(self.used) < MIN_LINE || self.skipped_in_a_row >= GIVE_UP_AFTER
    }

    /// The block.
    pub fn finish(self) -> Rendered {
        if self.used > self.budget {
            return Rendered {
                block: String::new(),
                included: 0,
                chars: 0,
                rows: Vec::new(),
            };
        }
        let mut block = String::with_capacity(self.used);
        block.push_str(self.header);
        let mut included = 0;
        for (category, lines) in &self.sections {
            block.push_str(&section_header(category));
            for l in lines {
                block.push_str(l);
                included += 1;
            }
        }
        let chars = block.chars().count() as u32;
        debug_assert_eq!(chars as usize, self.used);
        Rendered {
            block,
            included,
            chars,
            rows: self.rows,
        }
    }
}

impl Rendered {
    /// This block followed by `more` (the personal section after the
    /// project's).
    #[must_use]
    pub fn then(mut self, more: Rendered) -> Rendered {
        self.block.push_str(&more.block);
        self.included += more.included;
        self.chars += more.chars;
        self.rows.extend(more.rows);
        self
    }
}

/// A stable 64-bit FNV-1a hash of the block, as 16 hex digits (stable across
/// versions and platforms, unlike std's hasher).
pub fn hash(block: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in block.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: i64, category: &str, content: &str) -> Row {
        Row {
            id,
            rev: 1,
            category: category.into(),
            subject: None,
            content: content.into(),
            mark: None,
        }
    }

    #[test]
    fn renders_sections_in_priority_order() {
        let mut b = Builder::new(4000);
        for r in [
            row(3, "fact", "The deploy script lives in ops/deploy.sh."),
            row(1, "preference", "Tabs,\n  not   spaces."),
            Row {
                subject: Some("ci".into()),
                ..row(7, "fact", "CI runs on main.")
            },
            row(9, "zzz-custom", "custom category"),
        ] {
            assert_eq!(b.offer(&r), Offer::Taken);
        }
        let r = b.finish();
        assert_eq!(r.rows, [(3, 1), (1, 1), (7, 1), (9, 1)]);
        assert_eq!(
            r.block,
            "## Memory\n\n### Facts\n- #3 The deploy script lives in ops/deploy.sh.\n\
             - #7 ci: CI runs on main.\n\n### Preferences\n- #1 Tabs, not spaces.\n\n\
             ### Zzz-customs\n- #9 custom category\n"
        );
        assert_eq!(r.included, 4);
        assert_eq!(r.chars as usize, r.block.chars().count());
    }

    #[test]
    fn budget_leaves_out_whole_entries() {
        let budget = 60;
        let mut b = Builder::new(budget);
        assert_eq!(b.offer(&row(1, "fact", "short one")), Offer::Taken);
        assert_eq!(
            b.offer(&row(2, "fact", &"long ".repeat(20))),
            Offer::Skipped
        );
        assert_eq!(b.offer(&row(3, "fact", "tiny")), Offer::Taken);
        let r = b.finish();
        assert!(r.chars as usize <= budget, "{}", r.block);
        assert!(r.block.contains("#1 short one") && r.block.contains("#3 tiny"));
        assert!(!r.block.contains("long"));
    }

    #[test]
    fn a_budget_smaller_than_the_header_gives_an_empty_block() {
        let mut b = Builder::new(3);
        assert_eq!(b.offer(&row(1, "fact", "x")), Offer::Skipped);
        assert!(b.is_full());
        let r = b.finish();
        assert_eq!((r.block.as_str(), r.chars, r.included), ("", 0, 0));
        let exact = Builder::new(HEADER.chars().count());
        assert_eq!(exact.finish().block, HEADER);
    }

    #[test]
    fn unicode_counts_in_characters() {
        let mut b = Builder::new(40);
        assert_eq!(b.offer(&row(1, "fact", "ééééé")), Offer::Taken);
        let r = b.finish();
        assert_eq!(r.chars as usize, r.block.chars().count());
        assert!(r.block.len() > r.chars as usize);
    }

    #[test]
    fn a_personal_section_follows_under_its_own_heading() {
        let mut b = Builder::new(200);
        b.offer(&row(3, "fact", "The deploy script lives in ops/deploy.sh."));
        let mut p = Builder::headed(PERSONAL_HEADER, 60);
        assert_eq!(
            p.offer(&row(12, "preference", "Tabs, not spaces.")),
            Offer::Taken
        );
        assert_eq!(
            p.offer(&row(13, "preference", &"long ".repeat(20))),
            Offer::Skipped
        );
        let r = b.finish().then(p.finish());
        assert_eq!(
            r.block,
            "## Memory\n\n### Facts\n- #3 The deploy script lives in ops/deploy.sh.\n\n\
             ## Personal\n\n### Preferences\n- #12 Tabs, not spaces.\n"
        );
        assert_eq!((r.included, r.rows.len()), (2, 2));
        assert_eq!(r.chars as usize, r.block.chars().count());
    }

    #[test]
    fn hash_is_stable() {
        assert_eq!(hash(""), "cbf29ce484222325");
        assert_eq!(hash("a"), "af63dc4c8601ec8c");
        assert_ne!(hash("## Memory\n"), hash("## Memory\n "));
    }
}
