//! Text a person marked `<private>…</private>`: left out of whatever memd
//! stores (captured turns, ingested transcripts).
//!
//! Tags in any case, with spaces inside (`< PRIVATE >`, `</private >`).
//! Spans nest: a span closes at its matching close tag, not the first
//! (`<private>a <private>b</private> c</private>` hides all three). A
//! close tag with no span open is dropped, the text around it kept. A span
//! still open at the end of a message hides the rest of that message: the
//! message is fed whole — all its parts, across the lines a transcript
//! splits it into — to one [`Private`], so a span opened in one part and
//! closed in a later one hides everything between.

use std::sync::LazyLock;

use regex::Regex;

static TAG: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)<\s*(/?)\s*private\s*(/?)\s*>").expect("valid pattern"));

/// The spans open so far in one message.
#[derive(Debug, Default, Clone)]
pub struct Private {
    depth: usize,
    hid: bool,
}

impl Private {
    /// A message with no span open.
    pub fn new() -> Private {
        Private::default()
    }

    /// The next part of the message, less what is inside a span (the
    /// spans it opens stay open for the parts after it).
    pub fn feed(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for tag in TAG.captures_iter(text) {
            let whole = tag.get(0).expect("group 0");
            if self.depth == 0 {
                out.push_str(&text[at..whole.start()]);
            } else if whole.start() > at {
                self.hid = true;
            }
            at = whole.end();
            let close = !tag[1].is_empty();
            let empty = !tag[2].is_empty();
            if close {
                self.depth = self.depth.saturating_sub(1);
            } else if !empty {
                self.depth += 1;
                self.hid = true;
            }
        }
        if self.depth == 0 {
            out.push_str(&text[at..]);
        } else if at < text.len() {
            self.hid = true;
        }
        out
    }

    /// Whether a span is open (what comes next is hidden).
    pub fn open(&self) -> bool {
        self.depth > 0
    }

    /// Whether anything was hidden so far.
    pub fn hid(&self) -> bool {
        self.hid
    }
}

/// `text` (one whole message) without its private spans; whether anything
/// was left out.
pub fn strip(text: &str) -> (String, bool) {
    let mut p = Private::new();
    let out = p.feed(text);
    (out, p.hid())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_nest_and_close_at_their_match() {
        assert_eq!(
            strip("a <private>x <private>y</private> still hidden</private> b").0,
            "a  b"
        );
        assert_eq!(
            strip("a <private>1<private>2<private>3</private></private>4</private> b").0,
            "a  b"
        );
        // Two spans one after the other.
        assert_eq!(
            strip("a <private>x</private> b <PRIVATE>y</Private> c").0,
            "a  b  c"
        );
    }

    #[test]
    fn tags_in_any_case_and_spacing() {
        assert_eq!(strip("a < PRIVATE >x</ private > b").0, "a  b");
        assert_eq!(strip("a <Private>x\ny\n</PRIVATE> b").0, "a  b");
        // A self-closed tag hides nothing.
        assert_eq!(strip("a <private/> b").0, "a  b");
    }

    #[test]
    fn an_unclosed_span_hides_the_rest_of_the_message() {
        assert_eq!(
            strip("keep <private>the rest is hidden"),
            ("keep ".into(), true)
        );
        assert_eq!(
            strip("keep <private>a <private>b</private> still open"),
            ("keep ".into(), true)
        );
    }

    #[test]
    fn a_stray_close_tag_is_dropped() {
        assert_eq!(strip("a </private> b"), ("a  b".into(), false));
        assert_eq!(strip("nothing here"), ("nothing here".into(), false));
    }

    #[test]
    fn a_span_carries_across_the_parts_of_a_message() {
        let mut p = Private::new();
        assert_eq!(p.feed("first part <private>secret"), "first part ");
        assert!(p.open());
        assert_eq!(p.feed("[Bash: echo hunter2]"), "");
        assert_eq!(p.feed("more secret</private> visible"), " visible");
        assert!(!p.open() && p.hid());
        // Nested across parts.
        let mut p = Private::new();
        assert_eq!(p.feed("a <private>b <private>c"), "a ");
        assert_eq!(p.feed("d</private> e"), "");
        assert_eq!(p.feed("f</private> g"), " g");
    }
}
