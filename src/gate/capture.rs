//! What of a captured conversation turn is stored (pure). A captured turn
//! is kept whatever the write gate would say of a memory: a secret in it is
//! replaced by `[redacted:<kind>]` (the turn is kept, the secret is not),
//! and a turn the gate would refuse for another reason (a stack trace, its
//! size) is stored marked and cut — so a refusal never stops a host's
//! capture at that turn. Text inside `<private>…</private>` never reaches
//! the store (the hook leaves it out; this leaves out what is left).

use super::{code, secrets};

/// A turn as it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// `Speaker: text`, private spans and secrets out, cut to the limit.
    pub content: String,
    /// The kinds of the secrets replaced.
    pub redactions: Vec<&'static str>,
    /// Why the gate would have refused it (`code_derivable`, `too_large`).
    pub marked: Option<&'static str>,
}

/// The uid of a captured turn (by its identity): `cap-` and 32 hex digits.
/// The prefix marks a captured row where only its uid is left (its
/// revisions are not kept: a forgotten turn leaves no copy).
pub fn uid(turn: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(turn.as_bytes());
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("cap-{hex}")
}

/// `text` without its `<private>…</private>` spans (tags in any case, across
/// lines); an unclosed tag hides the rest. Whether anything was left out.
pub fn strip_private(text: &str) -> (String, bool) {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut hid = false;
    while let Some(open) = lower[at..].find("<private>") {
        let start = at + open;
        out.push_str(&text[at..start]);
        hid = true;
        match lower[start..].find("</private>") {
            Some(close) => at = start + close + "</private>".len(),
            None => return (out, true),
        }
    }
    out.push_str(&text[at..]);
    (out, hid)
}

/// A turn of `speaker` as it is stored, `None` when nothing of it is left.
/// `max_bytes` is the content limit (`limits.max_content_bytes`).
pub fn turn(speaker: &str, text: &str, max_bytes: usize) -> Option<Captured> {
    let (text, _) = strip_private(text);
    let text = text.replace('\0', "");
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut content = format!("{speaker}: {text}");
    let found = secrets::find(&content);
    let redactions: Vec<&'static str> = found.iter().map(|f| f.kind).collect();
    if !found.is_empty() {
        let mut out = String::with_capacity(content.len());
        let mut at = 0;
        for f in &found {
            out.push_str(&content[at..f.span.start]);
            out.push_str(&format!("[redacted:{}]", f.kind.replace(' ', "-")));
            at = f.span.end;
        }
        out.push_str(&content[at..]);
        content = out;
    }
    let mut marked = code::detect(&content).map(|_| "code_derivable");
    const CUT: &str = " [cut]";
    if content.len() > max_bytes {
        let mut end = max_bytes.saturating_sub(CUT.len());
        while end > 0 && !content.is_char_boundary(end) {
            end -= 1;
        }
        content.truncate(end);
        content.push_str(CUT);
        marked = Some("too_large");
    }
    Some(Captured {
        content,
        redactions,
        marked,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_spans_never_pass() {
        assert_eq!(
            strip_private("a <private>secret\nplan</private> b <PRIVATE>x</Private> c"),
            ("a  b  c".to_string(), true)
        );
        assert_eq!(
            strip_private("keep <private>the rest is hidden"),
            ("keep ".to_string(), true)
        );
        assert_eq!(
            strip_private("nothing here"),
            ("nothing here".into(), false)
        );
        assert_eq!(turn("User", "<private>all of it</private>", 100), None);
    }

    #[test]
    fn secrets_are_replaced_and_the_turn_kept() {
        let t = turn(
            "User",
            "deploy with AKIAIOSFODNN7EXAMPLE and then restart",
            10_000,
        )
        .unwrap();
        assert!(!t.content.contains("AKIAIOSFODNN7EXAMPLE"), "{}", t.content);
        assert!(t.content.contains("[redacted:"), "{}", t.content);
        assert!(t.content.starts_with("User: deploy with"));
        assert_eq!(t.redactions.len(), 1);
    }

    #[test]
    fn what_the_gate_refuses_is_marked_and_cut_not_dropped() {
        let trace = "thread 'main' panicked at src/main.rs:3:5:\nboom\nstack backtrace:\n   0: rust_begin_unwind\n   1: core::panicking::panic_fmt\n   2: main::main";
        let t = turn("Assistant", trace, 10_000).unwrap();
        assert_eq!(t.marked, Some("code_derivable"));
        let long = "word ".repeat(5_000);
        let t = turn("User", &long, 1_000).unwrap();
        assert_eq!(t.marked, Some("too_large"));
        assert!(t.content.len() <= 1_000 && t.content.ends_with("[cut]"));
        let multibyte = "é".repeat(1_000);
        let t = turn("User", &multibyte, 101).unwrap();
        assert!(t.content.len() <= 101);
    }
}
