//! Content that looks like a secret: private key blocks, cloud and SaaS
//! tokens (AWS, GitHub, OpenAI/Anthropic, Slack, JWT), `password=` /
//! `api_key:` style assignments that carry a value (under any prefix:
//! `DB_PASSWORD=`, `AWS_SECRET_ACCESS_KEY=`, `github_token:`) and bearer
//! tokens (`Authorization: Bearer …`).
//!
//! The gate rejects them by default; with `[gate] secrets = "redact"` the
//! secret is replaced by `[REDACTED]` and the rest is kept.

use std::ops::Range;
use std::sync::LazyLock;

use regex::Regex;

/// What was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// What kind of secret.
    pub kind: &'static str,
    /// The bytes to redact.
    pub span: Range<usize>,
}

struct Pattern {
    kind: &'static str,
    re: Regex,
    /// Capture group holding the secret (0: the whole match).
    group: usize,
    /// Whether the captured value is a secret (not a placeholder or a word).
    check: fn(&str) -> bool,
}

/// Names that hold a secret when something is assigned to them, as the last
/// part of an identifier: `password`, `DB_PASSWORD`, `aws_secret_access_key`,
/// `STRIPE_API_KEY`, `github_token`, `client-secret` (but not
/// `password_hint` or `token_count`). A bare `pass` only with a prefix
/// (`SMTP_PASS`).
const SECRET_NAME: &str = r"\b(?:(?:[\w.-]*[_.-])?(?:password|passwd|passphrase|pwd|secret|token|apikey|(?:api|access|private|secret|signing|encryption|master|client)[_.-]?key)|[\w.-]*[_.-]pass)\b";

static PATTERNS: LazyLock<Vec<Pattern>> = LazyLock::new(|| {
    let p = |kind, pat: &str, group| Pattern {
        kind,
        re: Regex::new(pat).expect("valid pattern"),
        group,
        check: if group == 0 {
            |_: &str| true
        } else {
            |v: &str| !is_placeholder(v)
        },
    };
    vec![
        p(
            "private key",
            r"-----BEGIN (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z]+ )*PRIVATE KEY(?: BLOCK)?-----|$)",
            0,
        ),
        p(
            "AWS access key",
            r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b",
            0,
        ),
        p(
            "GitHub token",
            r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{60,})\b",
            0,
        ),
        p(
            "API key",
            r"\bsk-(?:ant-|proj-|live_|test_)?[A-Za-z0-9_-]{20,}",
            0,
        ),
        p(
            "Stripe secret key",
            r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
            0,
        ),
        p("Slack token", r"\bxox[abposr]-[A-Za-z0-9-]{10,}", 0),
        p(
            "Slack webhook",
            r"https://hooks\.slack\.com/services/T[A-Za-z0-9]+/B[A-Za-z0-9]+/[A-Za-z0-9]+",
            0,
        ),
        p(
            "JSON web token",
            r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
            0,
        ),
        p(
            "credential assignment",
            &format!(r#"(?i){SECRET_NAME}["']?\s*(?::|=|=>)\s*["']?([^\s"',;]{{4,}})"#),
            1,
        ),
        Pattern {
            check: is_token,
            ..p(
                "bearer token",
                r"(?i)\b(?:bearer|basic)\s+([A-Za-z0-9._~+/-]{16,}=*)",
                1,
            )
        },
        p(
            "credentials in a URL",
            r"\b[a-z][a-z0-9+.-]*://[^\s:/@]+:([^\s@/]{3,})@",
            1,
        ),
    ]
});

/// Values of `key=value` that are placeholders, not secrets.
fn is_placeholder(value: &str) -> bool {
    let v = value.trim_matches(|c| c == '"' || c == '\'');
    let lower = v.to_ascii_lowercase();
    v.starts_with('$')
        || v.starts_with('%')
        || v.starts_with('<')
        || v.starts_with('{')
        || v.starts_with("[redacted")
        || lower.starts_with("[redacted")
        || matches!(
            lower.as_str(),
            "redacted"
                | "none"
                | "null"
                | "undefined"
                | "example"
                | "changeme"
                | "secret"
                | "password"
                | "xxxx"
                | "true"
                | "false"
                | "required"
                | "optional"
        )
        || v.chars()
            .all(|c| c == '*' || c == 'x' || c == 'X' || c == '.' || c == '•')
}

/// A value after `Bearer` / `Basic` is a token when it mixes digits or
/// cases like one does (`Bearer authentication_scheme` is prose).
fn is_token(value: &str) -> bool {
    let digit = value.bytes().any(|b| b.is_ascii_digit());
    let upper = value.bytes().any(|b| b.is_ascii_uppercase());
    let lower = value.bytes().any(|b| b.is_ascii_lowercase());
    (digit || (upper && lower)) && !is_placeholder(value)
}

/// Every secret in `text`, in order.
pub fn find(text: &str) -> Vec<Found> {
    let mut found: Vec<Found> = Vec::new();
    for p in PATTERNS.iter() {
        for caps in p.re.captures_iter(text) {
            let Some(m) = caps.get(p.group) else { continue };
            if !(p.check)(m.as_str()) {
                continue;
            }
            if found
                .iter()
                .any(|f| f.span.start < m.end() && m.start() < f.span.end)
            {
                continue;
            }
            found.push(Found {
                kind: p.kind,
                span: m.range(),
            });
        }
    }
    found.sort_by_key(|f| f.span.start);
    found
}

/// `text` with every secret replaced by `[REDACTED]`.
pub fn redact(text: &str, found: &[Found]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        out.push_str(&text[at..f.span.start]);
        out.push_str("[REDACTED]");
        at = f.span.end;
    }
    out.push_str(&text[at..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const POSITIVES: &[(&str, &str)] = &[
        (
            "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
            "private key",
        ),
        (
            "key: -----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7",
            "private key",
        ),
        ("the deploy user is AKIAIOSFODNN7EXAMPLE", "AWS access key"),
        (
            "staging charges with sk_live_4eC39HqLyjWDarjtT1zdp7dc",
            "Stripe secret key",
        ),
        (
            "use ghp_abcdefghijklmnopqrstuvwxyz0123456789 for the CI",
            "GitHub token",
        ),
        (
            "OPENAI_API_KEY is sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
            "API key",
        ),
        ("anthropic: sk-ant-api03-abcdefghijklmnopqrstuv", "API key"),
        ("bot token xoxb-1234567890-abcdefghij", "Slack token"),
        (
            "alerts go to https://hooks.slack.com/services/T0001/B0002/abcdefXYZ123",
            "Slack webhook",
        ),
        (
            "session eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "JSON web token",
        ),
        ("db password=hunter2", "credential assignment"),
        ("api_key: 'q8s7d6f5g4'", "credential assignment"),
        ("export AUTH_TOKEN=abcd1234efgh", "credential assignment"),
        (
            "\"client_secret\": \"s3cr3tvalue\"",
            "credential assignment",
        ),
        (
            "connect with postgres://app:Tr0ub4dor@db.internal:5432/app",
            "credentials in a URL",
        ),
        // Prefixed names, as in `.env` files and CI settings.
        (
            "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "credential assignment",
        ),
        (
            "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "credential assignment",
        ),
        ("DB_PASSWORD=hunter2hunter2", "credential assignment"),
        ("POSTGRES_PASSWORD=Tr0ub4dor&3", "credential assignment"),
        (
            "STRIPE_API_KEY=rk_live_51HqLyjWDarjtT1zdp7dc",
            "Stripe secret key",
        ),
        ("MY_API_KEY: 9f2c81d07aa4", "credential assignment"),
        (
            "github_token: gho_16C7e42F292c6912E7710c",
            "credential assignment",
        ),
        ("SMTP_PASS=mail-s3cret", "credential assignment"),
        ("x-api-key: 0a1b2c3d4e5f", "credential assignment"),
        (
            "spring.datasource.password=Sup3rSecret",
            "credential assignment",
        ),
        (
            "curl -H 'Authorization: Bearer 8f3d2c1b9a7e6f5d4c3b2a19'",
            "bearer token",
        ),
        (
            "Authorization: Basic dXNlcjpodW50ZXIyaHVudGVyMg==",
            "bearer token",
        ),
    ];

    const NEGATIVES: &[&str] = &[
        "The API key lives in the vault; ask the user for it.",
        "Set password=$DB_PASSWORD in the environment, never inline.",
        "api_key: <your-key-here>",
        "token = ${GITHUB_TOKEN}",
        "password: ******",
        "The password policy needs 12 characters.",
        "Rotate the secret every 90 days.",
        "Task sk-1 is done",
        "Use https://example.com/docs for the API.",
        "The session token expires after an hour.",
        "password=changeme is the default in the dev compose file",
        "Rotate the DB password every 90 days.",
        "the token expires after an hour",
        "DB_PASSWORD is read from the environment at start.",
        "Set DB_PASSWORD=$(vault read -field=pw db) before the migration.",
        "STRIPE_API_KEY=<from the dashboard>",
        "password_hint=ask the DBA",
        "token_count: 4096",
        "max_tokens=4096 for the summarizer",
        "The API uses Bearer authentication over TLS.",
        "Send a bearer token in the Authorization header.",
    ];

    #[test]
    fn secrets_are_found() {
        for (text, kind) in POSITIVES {
            let f = find(text);
            assert!(!f.is_empty(), "missed: {text}");
            assert_eq!(f[0].kind, *kind, "{text}");
        }
    }

    #[test]
    fn prose_about_secrets_passes() {
        for text in NEGATIVES {
            assert_eq!(find(text), Vec::new(), "flagged: {text}");
        }
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
        assert!(find(&out).is_empty(), "redacted text is clean: {out}");
    }
}
