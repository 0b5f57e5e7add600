use super::*;

/// The corpus files: entries `--- <header>` then their text.
fn entries(file: &str) -> Vec<(&str, String)> {
    let mut out: Vec<(&str, String)> = Vec::new();
    for line in file.lines() {
        if let Some(header) = line.strip_prefix("--- ") {
            out.push((header, String::new()));
        } else if let Some((_, text)) = out.last_mut() {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(line);
        }
    }
    out
}

const CAUGHT: &str = include_str!("../../../tests/fixtures/secrets/caught.txt");
const ORDINARY: &str = include_str!("../../../tests/fixtures/secrets/ordinary.txt");

/// `(kind, bytes that must go, text)` of every shape that must be caught.
fn caught() -> Vec<(&'static str, &'static str, String)> {
    entries(CAUGHT)
        .into_iter()
        .map(|(header, text)| {
            let (kind, keep) = header.split_once(" | ").expect("kind | bytes");
            (kind, keep, text)
        })
        .collect()
}

#[test]
fn every_shape_of_the_corpus_is_caught_and_gone_after_redaction() {
    let all = caught();
    assert!(all.len() >= 120, "{}", all.len());
    let mut failures = Vec::new();
    for (kind, keep, text) in &all {
        let found = find(text);
        let out = redact(text, &found);
        if found.is_empty() {
            failures.push(format!("missed ({kind}): {text}"));
        } else if out.contains(keep) {
            failures.push(format!("left `{keep}` ({kind}): {out}"));
        } else if !found.iter().any(|f| f.kind == *kind) {
            let kinds: Vec<_> = found.iter().map(|f| f.kind).collect();
            failures.push(format!("kind {kinds:?}, expected {kind}: {text}"));
        }
        // What is left is clean, and redacting again changes nothing.
        assert_eq!(redacted(&out), out, "{text}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn each_kind_has_several_shapes() {
    let mut count: std::collections::BTreeMap<&str, usize> = Default::default();
    for (kind, _, _) in caught() {
        *count.entry(kind).or_default() += 1;
    }
    for kind in [
        "private key",
        "AWS access key",
        "AWS session token",
        "GitHub token",
        "GitLab token",
        "OpenAI API key",
        "Anthropic API key",
        "Slack token",
        "Slack webhook",
        "JSON web token",
        "Google OAuth token",
        "npm token",
        "Hugging Face token",
        "Azure key",
        "Stripe key",
        "SendGrid key",
        "DigitalOcean token",
        "credential assignment",
        "bearer token",
        "credentials in a URL",
        "password on a command line",
    ] {
        assert!(
            count.get(kind).copied().unwrap_or(0) >= 2,
            "{kind}: {count:?}"
        );
    }
}

#[test]
fn ordinary_prose_and_code_pass() {
    let all = entries(ORDINARY);
    assert!(all.len() >= 100, "{}", all.len());
    let flagged: Vec<String> = all
        .iter()
        .filter_map(|(label, text)| {
            let found = find(text);
            (!found.is_empty()).then(|| {
                let spans: Vec<_> = found
                    .iter()
                    .map(|f| format!("{}: {:?}", f.kind, &text[f.span.clone()]))
                    .collect();
                format!("{label}: {spans:?}")
            })
        })
        .collect();
    assert!(flagged.is_empty(), "{}", flagged.join("\n"));
}

#[test]
fn redaction_keeps_the_rest() {
    let text = "db password=hunter2 and key AKIAIOSFODNN7EXAMPLE here";
    let out = redact(text, &find(text));
    assert_eq!(out, "db password=[REDACTED] and key [REDACTED] here");
    assert!(find(&out).is_empty(), "redacted text is clean: {out}");
    // A prefixed name keeps its name; only the value goes.
    let text = "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n\
                Authorization: Bearer 8f3d2c1b9a7e6f5d4c3b2a19";
    let out = redact(text, &find(text));
    assert_eq!(
        out,
        "AWS_SECRET_ACCESS_KEY=[REDACTED]\nAuthorization: Bearer [REDACTED]"
    );
    // A quoted passphrase goes whole, its quotes stay.
    let text = r#"passphrase: "correct horse battery staple" for the key"#;
    assert_eq!(
        redact(text, &find(text)),
        r#"passphrase: "[REDACTED]" for the key"#
    );
    // A query string keeps its other parameters.
    let text = "GET /export?access_token=Q8s7d6f5g4h3&page=2";
    assert_eq!(
        redact(text, &find(text)),
        "GET /export?access_token=[REDACTED]&page=2"
    );
    // Capture's marker names the kind.
    let text = "use ghp_abcdefghijklmnopqrstuvwxyz0123456789 for the CI";
    assert_eq!(
        redact_with(text, &find(text), capture_marker),
        "use [redacted:GitHub-token] for the CI"
    );
}

#[test]
fn overlapping_finds_are_one() {
    // A token inside a quoted passphrase: the whole value goes, once.
    let text = r#"token: "x ghp_abcdefghijklmnopqrstuvwxyz0123456789 y""#;
    let found = find(text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(redact(text, &found), r#"token: "[REDACTED]""#);
}

#[test]
fn shortening_redacts_first() {
    // A GitHub token across the cut: the cut keeps none of it.
    let token = "ghp_R8x2kQ9mN4vB7cT1wZ5yL3pH6jF0dS8aE2gU";
    for at in 0..60 {
        let text = format!("{} {token} and more", "w".repeat(at));
        let short = shorten(&text, 40);
        assert!(short.chars().count() <= 40, "{short}");
        for n in 8..token.len() {
            for i in 0..=token.len() - n {
                let piece = &token[i..i + n];
                if piece.len() >= 8 && piece != "ghp_R8x2" {
                    assert!(!short.contains(piece), "{short} holds {piece}");
                }
            }
        }
    }
    assert_eq!(shorten("a  b\n c", 10), "a b c");
    assert_eq!(shorten("abcdef", 4), "abc…");
}

#[test]
fn names_that_hold_no_secret() {
    for text in [
        "password_hint=ask the DBA",
        "token_count: 4096",
        "max_tokens=4096 for the summarizer",
        "next_token = abcdef123456",
        "NextToken: eyJ2IjoxfQ123",
        "first_pass = 3x4y5z6w",
        "token = lexer.next()",
        "password: &'a str",
        "api_key=api_key",
        "token == \"abc123456\"",
        "Token::Ident(name)",
    ] {
        assert_eq!(find(text), Vec::new(), "flagged: {text}");
    }
    for text in [
        "SessionToken: IQoJb3Jp4242",
        "sessionToken = \"abcd1234\"",
        "apiKey: 'k3y-v4lue'",
        "PGPASSWORD=hunter2hunter2",
        "SMTP_PASS=mail-s3cret",
        "x-api-key: 0a1b2c3d4e5f",
        "login with password: Sup3rSecret!",
        "DB_PASSWORD=MyPassword123",
    ] {
        assert!(!find(text).is_empty(), "missed: {text}");
    }
}

/// Detection's cost per add: it runs on every write; a debug build's
/// figure bounds a release build's from above.
#[test]
fn detection_is_cheap() {
    let prose = entries(ORDINARY)
        .into_iter()
        .map(|(_, t)| t)
        .collect::<Vec<_>>()
        .join("\n");
    let text: String = prose.chars().take(2_000).collect();
    let _ = find(&text);
    let runs = 200;
    let t = std::time::Instant::now();
    for _ in 0..runs {
        std::hint::black_box(find(std::hint::black_box(&text)));
    }
    let per = t.elapsed() / runs;
    // Generous for a debug build on a loaded machine: a release build
    // takes a small fraction of it (docs/security.md).
    assert!(
        per < std::time::Duration::from_millis(20),
        "{per:?} per 2 KB"
    );
}

#[test]
fn redaction_leaves_nothing_findable() {
    for text in [
        // A match read past its secret (a URL's host) where the next begins.
        "https://du:p@hhsk-@https://u:q@hghp_",
        // A token glued to a key block: its boundary comes with the marker.
        "kAKIAABCDEFGHIJKLMNOPPuTTY-User-Key-File-2: ssh-rsa",
        // A match that is no secret does not hide the next one inside it.
        "mysql -p$X and then mysql -pS3cretPw",
    ] {
        let out = redact(text, &find(text));
        assert!(find(&out).is_empty(), "{text} -> {out}");
    }
    let text = "mysql -p$X and then mysql -pS3cretPw";
    assert_eq!(
        redact(text, &find(text)),
        "mysql -p$X and then mysql -p[REDACTED]"
    );
}
