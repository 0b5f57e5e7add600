//! What of a captured conversation turn is stored (pure). A captured turn
//! is kept whatever the write gate would say of a memory: a secret in it is
//! replaced by `[redacted:<kind>]` (the turn is kept, the secret is not),
//! and a turn the gate would refuse for another reason (a stack trace, its
//! size) is stored marked and cut — so a refusal never stops a host's
//! capture at that turn. Secrets go before the cut, so a cut never keeps a
//! secret's first part. Text inside `<private>…</private>` never reaches
//! the store (the hook leaves it out of the whole message; this leaves out
//! what is left, see [`super::private`]).

use super::{code, private, secrets};

/// A turn as it is stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// `Speaker: text`, private spans and secrets out, cut to the limit.
    pub content: String,
    /// Secrets replaced: here, and by the hook before it sent the turn
    /// (its `[redacted:<kind>]` markers).
    pub redactions: usize,
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

/// A turn of `speaker` as it is stored, `None` when nothing of it is left.
/// `max_bytes` is the content limit (`limits.max_content_bytes`).
pub fn turn(speaker: &str, text: &str, max_bytes: usize) -> Option<Captured> {
    let (text, _) = private::strip(text);
    let text = text.replace('\0', "");
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let content = format!("{speaker}: {text}");
    let found = secrets::find(&content);
    let content = secrets::redact_with(&content, &found, secrets::capture_marker);
    let redactions = content.matches("[redacted:").count();
    let mut marked = code::detect(&content).map(|_| "code_derivable");
    const CUT: &str = " [cut]";
    let mut content = content;
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
        assert_eq!(turn("User", "<private>all of it</private>", 100), None);
        assert_eq!(
            turn(
                "User",
                "a <private>x <private>y</private> z</private> b",
                100
            )
            .unwrap()
            .content,
            "User: a  b"
        );
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
        assert_eq!(t.redactions, 1);
        // A secret the hook replaced counts as well.
        let t = turn(
            "User",
            "key [redacted:AWS-access-key] and sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            10_000,
        )
        .unwrap();
        assert_eq!(t.redactions, 2, "{}", t.content);
    }

    #[test]
    fn a_secret_is_redacted_before_the_cut() {
        let token = "ghp_R8x2kQ9mN4vB7cT1wZ5yL3pH6jF0dS8aE2gU";
        for at in 900..1_000 {
            let text = format!("{} {token} more words after it", "w".repeat(at));
            let t = turn("User", &text, 1_000).unwrap();
            assert!(t.content.len() <= 1_000);
            assert!(!t.content.contains("R8x2kQ9m"), "{}", t.content);
        }
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
