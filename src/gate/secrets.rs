//! Content that looks like a secret, and its redaction.
//!
//! The rules are written from the formats the issuers publish (GitHub's,
//! GitLab's, Slack's, Stripe's token prefixes, the PEM and PuTTY key
//! files, …) and checked against the kinds of gitleaks' rule catalogue;
//! docs/security.md lists them. Three families:
//!
//! - **tokens with a shape of their own** (a prefix, a length, a
//!   checksum): private key blocks, cloud and SaaS tokens, JWTs — the
//!   match is the secret;
//! - **credential assignments**: a value given to a name that holds a
//!   secret (`password=`, `DB_PASSWORD=`, `"SecretAccessKey": "…"`,
//!   `apiKey: …`, `PGPASSWORD=`), unless the value is a placeholder or
//!   code (`token = lexer.next()`, `password: str`, `api_key=api_key`);
//! - **where credentials are passed**: `Authorization` headers, URLs with
//!   a user's password (`postgres://app:pw@db`), a password on a command
//!   line (`mysql -pSECRET`, `docker login -p …`, `sshpass -p …`).
//!
//! The gate rejects them by default; with `[gate] secrets = "redact"` the
//! secret is replaced by `[REDACTED]` and the rest is kept. Capture always
//! replaces them (`[redacted:<kind>]`). Text is redacted before it is ever
//! cut: a cut secret may no longer have its shape (a GitHub token's last
//! six characters are a checksum of the first thirty).

use std::ops::Range;
use std::sync::LazyLock;

use regex::{Regex, RegexSet};

/// What was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// What kind of secret.
    pub kind: &'static str,
    /// The bytes to redact.
    pub span: Range<usize>,
}

/// How a rule's capture is judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Check {
    /// The capture is the secret.
    Always,
    /// The capture is the secret unless it is filler (`sk_test_xxxx…`,
    /// `xoxb-your-token-here`).
    Shaped,
    /// A secret unless it is a placeholder (`$TOKEN`, `<key>`, `****`).
    Value,
    /// Like a token: digits or mixed case, and not a placeholder.
    Token,
    /// Looks like a secret rather than a word (a digit, a symbol, mixed
    /// case), at least 4 characters, not a placeholder: a flag's value,
    /// where prose (`pass --token when calling`) is common.
    Secret,
    /// A credential assignment: the value after the name is read by
    /// [`assignment_value`].
    Assignment,
}

struct Rule {
    kind: &'static str,
    re: Regex,
    /// Capture group holding the secret (0: the whole match).
    group: usize,
    check: Check,
}

/// Secrets with a shape of their own: `(kind, pattern)`, the whole match
/// is the secret.
const SHAPED: &[(&str, &str)] = &[
    (
        "private key",
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:\s|\\[nr])+[A-Za-z0-9+/=:-][\s\S]*?(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\z)",
    ),
    (
        "private key",
        r"PuTTY-User-Key-File-[0-9]+:[\s\S]*?(?:Private-(?:MAC|Hash):[ \t]*[0-9A-Fa-f]+|\z)",
    ),
    ("private key", r"\bAGE-SECRET-KEY-1[0-9A-Z]{58}\b"),
    (
        "AWS access key",
        r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[0-9A-Z]{16}\b",
    ),
    // STS session tokens begin with the same few bytes.
    (
        "AWS session token",
        r"\b(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdz|FQoGZXIvYXdz)[A-Za-z0-9/+=]{40,}",
    ),
    (
        "GitHub token",
        r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{22,})",
    ),
    (
        "GitLab token",
        r"\b(?:gl(?:pat|dt|rt|ptt|ft|imt|agent|oas|soat|ffct|cbt|wt)-[0-9A-Za-z_.-]{20,}|GR1348941[0-9A-Za-z_-]{20,})",
    ),
    ("Anthropic API key", r"\bsk-ant-[A-Za-z0-9_-]{20,}"),
    (
        "OpenAI API key",
        r"\bsk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_-]{20,}|\bsk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}",
    ),
    (
        "Stripe key",
        r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}|\bwhsec_[A-Za-z0-9]{24,}",
    ),
    ("API key", r"\bsk-[A-Za-z0-9_-]{20,}"),
    (
        "Slack token",
        r"\bxox(?:[abposre]|e\.xox[bp])-[A-Za-z0-9-]{10,}|\bxapp-[0-9]-[A-Za-z0-9-]{10,}",
    ),
    (
        "Slack webhook",
        r"(?i)https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{10,}",
    ),
    (
        "JSON web token",
        r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_-]*)?",
    ),
    ("Google API key", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("Google OAuth secret", r"\bGOCSPX-[0-9A-Za-z_-]{20,}"),
    (
        "Google OAuth token",
        r"\bya29\.[0-9A-Za-z_-]{20,}|\b1//0[0-9A-Za-z_-]{30,}",
    ),
    ("npm token", r"\bnpm_[A-Za-z0-9]{36}\b"),
    (
        "SendGrid key",
        r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
    ),
    ("Twilio key", r"\bSK[0-9a-fA-F]{32}\b"),
    ("DigitalOcean token", r"\bdo[opr]_v1_[a-f0-9]{64}\b"),
    // Entra ID (Azure AD) client secrets.
    (
        "Azure key",
        r"\b[A-Za-z0-9_~.]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}",
    ),
    ("Docker Hub token", r"\bdckr_pat_[A-Za-z0-9_-]{20,}"),
    ("PyPI token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    ("Vault token", r"\bhv[sbr]\.[A-Za-z0-9_-]{24,}"),
    ("Shopify token", r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"),
    ("Databricks token", r"\bdapi[a-f0-9]{32}(?:-[0-9])?\b"),
    ("Groq key", r"\bgsk_[A-Za-z0-9]{48,}"),
    ("xAI key", r"\bxai-[A-Za-z0-9]{70,}"),
    ("Linear key", r"\blin_api_[A-Za-z0-9]{40}\b"),
    ("Telegram bot token", r"\b[0-9]{8,10}:AA[0-9A-Za-z_-]{33}\b"),
    ("Postman key", r"\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"),
    (
        "Grafana token",
        r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|\bglc_[A-Za-z0-9+/]{32,}={0,2}",
    ),
    ("Atlassian token", r"\bATATT3[A-Za-z0-9_=-]{100,}"),
    ("Mailchimp key", r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"),
    ("Heroku key", r"\bHRKU-[A-Za-z0-9_-]{60}"),
    ("Replicate token", r"\br8_[A-Za-z0-9]{37}\b"),
];

/// Names that hold a secret when something is assigned to them, as the last
/// part of an identifier in any case and style: `password`, `DB_PASSWORD`,
/// `aws_secret_access_key`, `x-api-key`, `spring.datasource.password`,
/// `SecretAccessKey`, `sessionToken`, `apiKey`, `PGPASSWORD`, `SMTP_PASS`
/// (but not `password_hint`, `token_count` or `max_tokens`).
const SECRET_NAME: &str = concat!(
    // snake, kebab, dotted, upper: the word after a separator (or alone).
    r"(?i:\b(?:[a-z0-9_.-]*[_.-])?(?:password|passwd|passphrase|pwd|secret|token|auth|apikey|(?:api|access|private|secret|signing|encryption|master|client|account|auth)[_.-]?key)\b",
    r"|\b[a-z0-9_.-]*[_.-]pass\b)",
    // camelCase and PascalCase: the word starts a new capitalised part.
    r"|\b(?:[A-Za-z0-9]*[a-z0-9])?(?:[Aa]pi|API|[Aa]ccess|[Pp]rivate|[Ss]ecret|[Ss]igning|[Ee]ncryption|[Mm]aster|[Cc]lient|[Aa]ccount|[Aa]uth)Key\b",
    r"|\b[A-Za-z0-9]*[a-z0-9](?:Password|Passwd|Passphrase|Pwd|Secret|Token|Pass|Auth)\b",
    // glued upper case: PGPASSWORD, NPMTOKEN.
    r"|\b[A-Z0-9]+(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|TOKEN|APIKEY)\b",
);

/// `(kind, pattern, group, check)` of the rules beside [`SHAPED`].
const CONTEXTUAL: &[(&str, &str, usize, Check)] = &[
    (
        "Hugging Face token",
        r"\b(?:hf_|api_org_)[A-Za-z0-9]{30,}\b",
        0,
        Check::Token,
    ),
    (
        "Azure key",
        r"(?i)\b(?:AccountKey|SharedAccessKey)[ \t]*=[ \t]*([A-Za-z0-9+/]{20,}={0,2})",
        1,
        Check::Value,
    ),
    (
        "Azure key",
        r"(?i)[?&]sig=([A-Za-z0-9%+/]{30,}={0,2})",
        1,
        Check::Value,
    ),
    (
        "bearer token",
        r"(?i)\b(?:proxy-)?authorization\\?[\x22']?[ \t]*[:=][ \t]*\\?[\x22']?(?:(?:bearer|basic|token|digest|bot|apikey|sso-key)[ \t]+)?([A-Za-z0-9._~+/:=-]{12,})",
        1,
        Check::Token,
    ),
    (
        "bearer token",
        r"(?i)\b(?:bearer|basic)[ \t]+([A-Za-z0-9._~+/-]{16,}=*)",
        1,
        Check::Token,
    ),
    (
        "credentials in a URL",
        r#"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@?#"'<>]*:([^\s/?#"'<>]+)@[A-Za-z0-9\[_-]"#,
        1,
        Check::Value,
    ),
    (
        "credentials in a URL",
        r"(?i)\bhttps?://([A-Za-z0-9_-]{20,})@",
        1,
        Check::Token,
    ),
    // `mysql -pSECRET` (attached: `-p` alone asks for it).
    (
        "password on a command line",
        r#"\b(?:mysql|mariadb)[a-z-]*\b[^\n|;&]*?[ \t]-p([^\s'"-][^\s'"]*|'[^'\n]*'|"[^"\n]*")"#,
        1,
        Check::Value,
    ),
    (
        "password on a command line",
        r#"\b(?:docker|podman|buildah|skopeo|nerdctl|oras|helm[ \t]+registry)[ \t]+login\b[^\n|;&]*?[ \t](?:-p|--password)(?:[ \t]+|=)?([^\s'"-][^\s'"]*|'[^'\n]*'|"[^"\n]*")"#,
        1,
        Check::Value,
    ),
    (
        "password on a command line",
        r#"\bsshpass[ \t]+(?:-[^p\s]\S*[ \t]+)*-p[ \t]*([^\s'"-][^\s'"]*|'[^'\n]*'|"[^"\n]*")"#,
        1,
        Check::Value,
    ),
    (
        "password on a command line",
        r#"\bmongo(?:sh|dump|restore|import|export)?\b[^\n|;&]*?[ \t]-p[ \t]*([^\s'"-][^\s'"]*|'[^'\n]*'|"[^"\n]*")"#,
        1,
        Check::Value,
    ),
    (
        "password on a command line",
        r#"\bredis-cli\b[^\n|;&]*?[ \t]-a[ \t]+([^\s'"-][^\s'"]*|'[^'\n]*'|"[^"\n]*")"#,
        1,
        Check::Value,
    ),
    (
        "password on a command line",
        r#"\bcurl\b[^\n|;&]*?[ \t](?:-u|--user)[ \t]*['"]?[^\s:'"]*:([^\s'"]+)"#,
        1,
        Check::Value,
    ),
    // `--password VALUE`, `--api-key VALUE`, keytool's `-storepass VALUE`,
    // PowerShell's `-SecretKey VALUE` (`--password=VALUE` is an assignment).
    (
        "password on a command line",
        r#"(?:(?m:^)|[ \t])(?:--(?i:[a-z0-9-]*-)?(?i:password|passwd|pass|passphrase|token|secret|api-?key|access-?key|secret-?key|auth-token|client-secret)|-(?:storepass|keypass|srcstorepass|deststorepass|SecretKey|SecretAccessKey|SessionToken|Password))[ \t]+([^\s'"-][^\s'"]*|'[^'\n]*'|"[^"\n]*")"#,
        1,
        Check::Secret,
    ),
    (
        "password on a command line",
        r"\baws[ \t]+configure[ \t]+set[ \t]+(?:[A-Za-z0-9_.-]*\.)?(?:aws_secret_access_key|aws_session_token)[ \t]+(\S+)",
        1,
        Check::Value,
    ),
    (
        "password on a command line",
        r"\s-pass(?:in|out)?[ \t]+pass:(\S+)",
        1,
        Check::Value,
    ),
    (
        "credential assignment",
        r"(?i)\bmachine[ \t]+\S+[ \t]+login[ \t]+\S+[ \t]+password[ \t]+(\S+)",
        1,
        Check::Value,
    ),
];

/// The assignment after a [`SECRET_NAME`]: an optional (escaped) quote
/// closing a quoted name, then `=`, `:`, `:=` or `=>`; the value is read by
/// [`assignment_value`] from the match's end.
const ASSIGNMENT: &str = r#"\\?["']?[ \t]*(:=|=>|=|:)[ \t]*"#;

struct Rules {
    rules: Vec<Rule>,
    /// One pass over the text telling which rules may match.
    set: RegexSet,
}

/// `\b` as an ASCII word boundary: the same for the text memd sees, and
/// the lazy DFA keeps it on any text (a Unicode one gives up on non-ASCII).
fn ascii_boundaries(pattern: &str) -> String {
    pattern.replace(r"\b", r"(?-u:\b)")
}

static RULES: LazyLock<Rules> = LazyLock::new(|| {
    let mut rules = Vec::new();
    for (kind, pattern) in SHAPED {
        let check = if *kind == "private key" {
            Check::Always
        } else {
            Check::Shaped
        };
        rules.push((*kind, ascii_boundaries(pattern), 0, check));
    }
    for (kind, pattern, group, check) in CONTEXTUAL {
        rules.push((*kind, ascii_boundaries(pattern), *group, *check));
    }
    rules.push((
        "credential assignment",
        ascii_boundaries(&format!("(?:{SECRET_NAME}){ASSIGNMENT}")),
        0,
        Check::Assignment,
    ));
    let set = RegexSet::new(rules.iter().map(|r| r.1.as_str())).expect("valid patterns");
    Rules {
        rules: rules
            .into_iter()
            .map(|(kind, pattern, group, check)| Rule {
                kind,
                re: Regex::new(&pattern).expect("valid pattern"),
                group,
                check,
            })
            .collect(),
        set,
    }
});

/// Every secret in `text`, in order; overlapping finds are one.
pub fn find(text: &str) -> Vec<Found> {
    let rules = &*RULES;
    let mut found: Vec<(usize, Found)> = Vec::new();
    for i in &rules.set.matches(text) {
        let rule = &rules.rules[i];
        let mut at = 0;
        while let Some(caps) = rule.re.captures_at(text, at) {
            let whole = caps.get(0).expect("group 0");
            match judge(rule, text, &caps) {
                Some(span) if !span.is_empty() => {
                    // From the secret's end: what the match read past it
                    // (a URL's host) may begin the next one.
                    at = span.end.max(whole.start());
                    found.push((
                        i,
                        Found {
                            kind: rule.kind,
                            span,
                        },
                    ));
                }
                // Not a secret: the next match may begin inside this one
                // (`mysql -p$X … mysql -pSECRET`).
                _ => at = whole.start(),
            }
            // Past the first character of where this one began.
            if at == whole.start() {
                match text[at..].chars().next() {
                    Some(c) => at += c.len_utf8(),
                    None => break,
                }
            }
        }
    }
    // Overlaps merge into one find, of the first rule's kind.
    found.sort_by_key(|(i, f)| (f.span.start, *i));
    let mut out: Vec<(usize, Found)> = Vec::with_capacity(found.len());
    for (i, f) in found {
        match out.last_mut() {
            Some((j, last)) if f.span.start < last.span.end => {
                last.span.end = last.span.end.max(f.span.end);
                if i < *j {
                    *j = i;
                    last.kind = f.kind;
                }
            }
            _ => out.push((i, f)),
        }
    }
    out.into_iter().map(|(_, f)| f).collect()
}

/// The secret of one match of `rule`, if it is one.
fn judge(rule: &Rule, text: &str, caps: &regex::Captures<'_>) -> Option<Range<usize>> {
    if rule.check == Check::Assignment {
        let whole = caps.get(0).expect("group 0");
        let sep = caps.get(1).map_or("", |m| m.as_str());
        let name = name_before(&text[whole.start()..], sep);
        if excluded_name(name) {
            return None;
        }
        let line = text[..whole.start()].rfind('\n').map_or(0, |n| n + 1);
        let between = &text[whole.start() + name.len()..whole.end()];
        let at = Assignment {
            name,
            name_quoted: between.contains(['"', '\'']),
            between,
            line_before: &text[line..whole.start()],
            sep,
        };
        return assignment_value(text, whole.end(), &at);
    }
    let m = caps.get(rule.group)?;
    let v = m.as_str();
    let ok = match rule.check {
        Check::Always => true,
        Check::Shaped => !is_filler(v),
        Check::Value => !is_placeholder(v),
        Check::Token => is_token(v) && !is_code(v),
        Check::Secret => {
            let v = v.trim_matches(|c| c == '"' || c == '\'');
            v.chars().count() >= 4 && looks_secret(v) && !is_placeholder(v)
        }
        Check::Assignment => unreachable!("handled above"),
    };
    ok.then(|| m.range())
}

/// The name an assignment match begins with (the match less its quote and
/// separator).
fn name_before<'a>(matched: &'a str, sep: &str) -> &'a str {
    let end = matched.find(sep).unwrap_or(matched.len());
    matched[..end].trim_end_matches([' ', '\t', '"', '\'', '\\'])
}

/// Names that end in a secret's word but hold none: a lexer's or a
/// paginated API's tokens, a compiler's passes.
fn excluded_name(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let trimmed = |word: &str| -> Option<String> {
        lower
            .strip_suffix(word)
            .map(|s| s.trim_end_matches(['_', '-', '.']).to_string())
    };
    if let Some(before) = trimmed("token") {
        const NOT_SECRET: &[&str] = &[
            "next",
            "page",
            "continuation",
            "cancel",
            "cancellation",
            "sync",
            "resume",
            "start",
            "end",
            "eof",
            "eos",
            "bos",
            "pad",
            "unk",
            "sep",
            "cls",
            "mask",
            "special",
            "input",
            "output",
            "max",
            "min",
            "num",
            "last",
            "first",
            "prev",
            "previous",
            "current",
            "cur",
            "peek",
            "lookahead",
            "progress",
        ];
        return NOT_SECRET.iter().any(|w| before.ends_with(w));
    }
    if let Some(before) = trimmed("pass") {
        const NOT_SECRET: &[&str] = &[
            "first", "second", "third", "last", "next", "render", "compile", "multi", "single",
            "one", "two", "final", "each", "by",
        ];
        return NOT_SECRET.iter().any(|w| before.ends_with(w));
    }
    false
}

/// An assignment's name and what surrounds it.
struct Assignment<'a> {
    /// The name (`DB_PASSWORD`, `apiKey`).
    name: &'a str,
    /// It had a closing quote (`"password": …`).
    name_quoted: bool,
    /// From the name's end to the value (`" = "`, `": "`).
    between: &'a str,
    /// Its line before it (`let `, `pub const `, `export `, `$`).
    line_before: &'a str,
    /// `=`, `:`, `:=` or `=>`.
    sep: &'a str,
}

impl Assignment<'_> {
    /// The character before the name.
    fn before(&self) -> Option<char> {
        self.line_before.chars().next_back()
    }

    /// A declaration (`let x = y`, `pub const X: c_int`, `type T = U`,
    /// `$x = Read-Host`): an unquoted identifier after it is code.
    fn declared(&self) -> bool {
        const KEYWORDS: &[&str] = &[
            "let", "mut", "const", "var", "val", "auto", "my", "local", "static", "type", "final",
            "pub", "fn", "def", "readonly", "declare",
        ];
        self.before() == Some('$')
            || self
                .line_before
                .split(|c: char| !c.is_ascii_alphanumeric() && c != '_')
                .rev()
                .find(|w| !w.is_empty())
                .is_some_and(|w| KEYWORDS.contains(&w))
    }
}

/// The secret of an assignment whose separator ends at `at`: a quoted
/// value (to its closing quote on that line; spaces and all), or an
/// unquoted one (to a space, a quote, a backslash, `,` or `;`, without a
/// query string's next `&name=`) that is neither a placeholder nor code.
/// After `:` (YAML, JSON, headers, prose, type annotations) an unquoted
/// value must look like a secret (a digit, a symbol or mixed case) and not
/// like a type: `Token: expired yesterday` is prose, `secret: OkmBlock` a
/// field.
///
/// Not assignments: a name after `:` or `/` with `:` after it, a segment
/// of a path (`arn:aws:…:secret:prod/db`); a name inside a quoted prompt
/// (`"Password: "`, `"unexpected token: "`).
fn assignment_value(text: &str, at: usize, a: &Assignment<'_>) -> Option<Range<usize>> {
    let bytes = text.as_bytes();
    let sep = a.sep;
    let mut i = at;
    // `==` compares, `::` is a path.
    if matches!(
        (sep, bytes.get(i)),
        ("=", Some(b'=' | b'~')) | (":", Some(b':' | b'='))
    ) {
        return None;
    }
    if sep == ":" && matches!(a.before(), Some(':' | '/')) {
        return None;
    }
    let escaped = bytes.get(i) == Some(&b'\\') && matches!(bytes.get(i + 1), Some(b'"' | b'\''));
    if escaped {
        i += 1;
    }
    let loose_name = a.name.to_ascii_lowercase().ends_with("auth");
    if let Some(&q) = bytes.get(i).filter(|b| matches!(b, b'"' | b'\'' | b'`')) {
        // The name is inside a string this quote closes: a prompt or a
        // message (`"Password: "`, `"unexpected token: "`).
        let open = a.line_before.matches(char::from(q)).count()
            - a.line_before
                .matches(&format!("\\{}", char::from(q)))
                .count();
        if open % 2 == 1 && !a.name_quoted {
            return None;
        }
        let start = i + 1;
        let mut j = start;
        while j < bytes.len() && bytes[j] != b'\n' {
            if bytes[j] == b'\\' {
                if escaped && bytes.get(j + 1) == Some(&q) {
                    break;
                }
                j += 2;
                continue;
            }
            if bytes[j] == q {
                break;
            }
            j += 1;
        }
        let j = j.min(bytes.len());
        let value = &text[start..j];
        // `private_key: "_RSAPrivateKey"`: a type named in a string.
        let annotation = sep == ":" && !a.name_quoted && is_identifier(value);
        let not_secret = value.chars().count() < 4
            || value.starts_with(char::is_whitespace)
            || is_placeholder(value)
            || describes_itself(value)
            || (annotation && is_type_like(value, sep))
            || (loose_name && !has_digit_or_symbol(value));
        return (!not_secret).then_some(start..j);
    }
    let start = i;
    let mut j = start;
    while j < bytes.len()
        && !bytes[j].is_ascii_whitespace()
        && !matches!(bytes[j], b'"' | b'\'' | b'`' | b',' | b';' | b'\\')
    {
        j += 1;
    }
    let raw = &text[start..j];
    // `$password = Read-Host …`: a variable of a script, given code.
    if is_code(raw) || a.before() == Some('$') {
        return None;
    }
    // `?access_token=abc&page=2`: the value ends where the next one starts.
    if let Some(k) = next_parameter(raw) {
        j = start + k;
    }
    // Closing brackets and sentence punctuation are not the value's.
    while j > start
        && matches!(
            bytes[j - 1],
            b')' | b']' | b'}' | b'>' | b'.' | b':' | b'!' | b'|'
        )
    {
        j -= 1;
    }
    let value = &text[start..j];
    let identifier = is_identifier(value);
    // `self.token = nextchar`: spaces around `=` are code's (a shell's or
    // an env file's `NAME=value` has none), and so is a word given there.
    let spaced = sep != ":"
        && a.between.starts_with(char::is_whitespace)
        && a.between.ends_with(char::is_whitespace);
    let word = identifier && !value.chars().any(|c| c.is_ascii_digit());
    let not_secret = value.chars().count() < 4
        || is_placeholder(value)
        || describes_itself(value)
        || is_variable(value)
        || (identifier && (a.declared() || is_type_like(value, sep)))
        || (spaced && word)
        || (loose_name && !has_digit_or_symbol(value))
        || (sep == ":" && !looks_secret(value));
    (!not_secret).then_some(start..j)
}

/// `[A-Za-z_][A-Za-z0-9_]*`.
fn is_identifier(value: &str) -> bool {
    value
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// An identifier written the way types and constants are: after `:`
/// `c_int`, `__u32`, `status_t`, `OkmBlock`, `HeaderValue`; after `=` a
/// capitalised word (`token = Name`). Not `Summer2024`, not `postgres`.
fn is_type_like(ident: &str, sep: &str) -> bool {
    let capital = ident.starts_with(|c: char| c.is_ascii_uppercase());
    let digits = ident.chars().any(|c| c.is_ascii_digit());
    let inner_capital = ident.chars().skip(1).any(|c| c.is_ascii_uppercase());
    let lower = ident.chars().any(|c| c.is_ascii_lowercase());
    if sep == ":" {
        ident.contains('_') || (capital && inner_capital && lower && !digits)
    } else {
        capital && lower && !digits && ident.chars().all(|c| c.is_ascii_alphabetic())
    }
}

/// A digit or a symbol: what an encoded credential has and a word has not.
fn has_digit_or_symbol(value: &str) -> bool {
    value
        .chars()
        .any(|c| c.is_ascii_digit() || (!c.is_alphanumeric() && !c.is_whitespace()))
}

/// A made-up value that says what it stands for, the word standing apart:
/// `"refresh-token"`, `test-m2m-secret`, `'password with spaces'`,
/// `challengePassword` (not `Sup3rSecret`: a camel-case part counts only
/// in a value without digits).
fn describes_itself(value: &str) -> bool {
    let camel = !value.chars().any(|c| c.is_ascii_digit());
    let mut parts: Vec<String> = Vec::new();
    let mut part = String::new();
    let mut prev_lower = false;
    for c in value.chars() {
        if !c.is_ascii_alphanumeric() || (camel && prev_lower && c.is_ascii_uppercase()) {
            parts.push(std::mem::take(&mut part));
        }
        prev_lower = c.is_ascii_lowercase();
        if c.is_ascii_alphanumeric() {
            part.push(c.to_ascii_lowercase());
        }
    }
    parts.push(part);
    parts.iter().any(|part| {
        ["token", "secret", "password", "passwd"]
            .iter()
            .any(|w| part == w || part.strip_suffix('s') == Some(w))
    })
}

/// Where `&name=` starts in a query string's value.
fn next_parameter(raw: &str) -> Option<usize> {
    let bytes = raw.as_bytes();
    (1..bytes.len()).find(|&k| {
        bytes[k] == b'&' && {
            let rest = &bytes[k + 1..];
            let n = rest
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
                .count();
            n > 0 && rest.get(n) == Some(&b'=')
        }
    })
}

/// An unquoted value that is code, not a literal: a call, an index, a
/// path (`a::b`, `self.token`, `/run/secrets/x`), a keyword or type, a
/// variable or template (`$X`, `%s`, `{x}`, `<x>`), a reference.
fn is_code(raw: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "none",
        "null",
        "nil",
        "undefined",
        "true",
        "false",
        "self",
        "this",
        "super",
        "new",
        "await",
        "async",
        "yield",
        "match",
        "if",
        "else",
        "return",
        "function",
        "fn",
        "lambda",
        "let",
        "const",
        "var",
        "mut",
        "ref",
        "impl",
        "dyn",
        "struct",
        "enum",
        "class",
        "type",
        "string",
        "str",
        "bool",
        "boolean",
        "int",
        "integer",
        "number",
        "float",
        "double",
        "bytes",
        "byte",
        "char",
        "object",
        "any",
        "unknown",
        "void",
        "option",
        "optional",
        "vec",
        "list",
        "dict",
        "map",
        "array",
        "secretstr",
        "secretstring",
        "default",
        "required",
        "env",
    ];
    let first = raw.chars().next().unwrap_or(' ');
    if matches!(
        first,
        '$' | '%' | '<' | '{' | '[' | '(' | '&' | '*' | '@' | '!' | '#' | '\\' | '/' | '~'
    ) || raw.starts_with("./")
    {
        return true;
    }
    if raw.contains('(')
        || raw.contains('[')
        || raw.contains('<')
        || raw.contains('{')
        || raw.contains("::")
        || raw.contains("->")
        || raw.contains("=>")
        || raw.contains("://")
    {
        return true;
    }
    let word = raw.trim_end_matches([')', ']', '}', '.', ':', '!', '?', '>']);
    // A number literal: `0x0017`, `0b1010`.
    if (word.starts_with("0x") || word.starts_with("0b"))
        && word[2..].chars().all(|c| c.is_ascii_hexdigit() || c == '_')
    {
        return true;
    }
    if KEYWORDS.iter().any(|k| word.eq_ignore_ascii_case(k)) {
        return true;
    }
    // `settings.API_KEY`, `lexer.next`, `os.environ`: a path of identifiers.
    let ident = |s: &str| {
        s.chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    };
    word.contains('.') && word.split('.').all(ident)
}

/// An identifier naming a secret (`api_key=api_key`, `token=self_token`,
/// `password=DB_PASSWORD`) is the variable that holds it.
fn is_variable(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    is_identifier(value)
        && !value.chars().any(|c| c.is_ascii_digit())
        && [
            "password", "passwd", "secret", "token", "key", "pass", "pwd", "auth", "cred",
        ]
        .iter()
        .any(|w| lower.contains(w))
}

/// Whether a bare value looks like a secret rather than a word: a digit,
/// a symbol, or case mixed inside it (`Sup3r`, `s3cr3t!`, `hUnTeR`).
fn looks_secret(value: &str) -> bool {
    let digit = value.bytes().any(|b| b.is_ascii_digit());
    let symbol = value
        .chars()
        .any(|c| !c.is_alphanumeric() && !c.is_whitespace());
    let inner_upper = value.chars().skip(1).any(char::is_uppercase);
    let lower = value.chars().any(char::is_lowercase);
    digit || symbol || (inner_upper && lower)
}

/// Values that are placeholders, not secrets.
fn is_placeholder(value: &str) -> bool {
    const WORDS: &[&str] = &[
        "redacted",
        "none",
        "null",
        "nil",
        "undefined",
        "example",
        "changeme",
        "change_me",
        "change-me",
        "secret",
        "password",
        "passwd",
        "token",
        "true",
        "false",
        "required",
        "optional",
        "todo",
        "tbd",
        "dummy",
        "placeholder",
        "test",
        "testing",
        "string",
        "hidden",
        "masked",
        "unset",
        "empty",
        "value",
        "foo",
        "bar",
        "baz",
        "qux",
        "foobar",
        "pass",
        "error",
        "sample",
        "bearer",
        "basic",
    ];
    const PREFIXES: &[&str] = &[
        "your",
        "[redacted",
        "example",
        "replace",
        "insert",
        "enter_",
        "enter-",
        "enter ",
        "changeme",
        "placeholder",
        "dummy",
    ];
    let v = value.trim_matches(|c| c == '"' || c == '\'');
    let lower = v.to_ascii_lowercase();
    let first = v.chars().next();
    matches!(first, Some('$' | '%' | '<' | '{'))
        || WORDS.contains(&lower.as_str())
        || PREFIXES.iter().any(|p| lower.starts_with(p))
        || is_colour(v)
        || v.contains("****")
        || (v.contains('.') && v.chars().all(|c| c.is_ascii_digit() || c == '.'))
        || ((v.starts_with('/') || v.starts_with("~/")) && !v.contains(' '))
        || v.contains("...")
        || v.contains('…')
        || v.chars()
            .all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '•' | '#' | '-' | '_'))
        || (v.chars().count() >= 4 && v.chars().all(|c| Some(c) == first))
        || is_filler(v)
}

/// A token of the right shape made of filler: a run of one character
/// (`xxxxxxxx`, `00000000`) or words of an example (`your-token-here`).
fn is_filler(token: &str) -> bool {
    let lower = token.to_ascii_lowercase();
    let mut run = 0;
    let mut prev = None;
    for c in lower.chars() {
        run = if Some(c) == prev { run + 1 } else { 1 };
        prev = Some(c);
        if run >= 6 {
            return true;
        }
    }
    ["your", "-here", "_here", "example-", "placeholder"]
        .iter()
        .any(|w| lower.contains(w))
}

/// `#d8dee9`: a colour.
fn is_colour(v: &str) -> bool {
    v.strip_prefix('#').is_some_and(|hex| {
        matches!(hex.len(), 3 | 4 | 6 | 8) && hex.chars().all(|c| c.is_ascii_hexdigit())
    })
}

/// A value after `Bearer`, `Basic` or `Authorization:` is a token when it
/// mixes digits or cases like one does (`Bearer authentication_scheme` is
/// prose).
fn is_token(value: &str) -> bool {
    let digit = value.bytes().any(|b| b.is_ascii_digit());
    let upper = value.bytes().any(|b| b.is_ascii_uppercase());
    let lower = value.bytes().any(|b| b.is_ascii_lowercase());
    (digit || (upper && lower)) && !is_placeholder(value)
}

/// `text` with every secret replaced by `[REDACTED]`.
pub fn redact(text: &str, found: &[Found]) -> String {
    redact_with(text, found, |_| "[REDACTED]".to_string())
}

/// `text` with each secret replaced by `marker(kind)`, and then whatever
/// the replacement made a secret: a token glued to a key block
/// (`AKIA…PuTTY-User-Key-File-2: …`) has its word boundary only once the
/// block is a marker.
pub fn redact_with(text: &str, found: &[Found], marker: impl Fn(&str) -> String) -> String {
    if found.is_empty() {
        return text.to_string();
    }
    let mut out = replace(text, found, &marker);
    for _ in 0..4 {
        let more = find(&out);
        if more.is_empty() {
            break;
        }
        out = replace(&out, &more, &marker);
    }
    out
}

fn replace(text: &str, found: &[Found], marker: &impl Fn(&str) -> String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for f in found {
        out.push_str(&text[at..f.span.start]);
        out.push_str(&marker(f.kind));
        at = f.span.end;
    }
    out.push_str(&text[at..]);
    out
}

/// Capture's marker for a secret of `kind`: `[redacted:GitHub-token]`.
pub fn capture_marker(kind: &str) -> String {
    format!("[redacted:{}]", kind.replace(' ', "-"))
}

/// `text` with its secrets replaced by `[REDACTED]`: what a display that
/// shortens text (a list line, a preview, an error) shows before it cuts.
pub fn redacted(text: &str) -> String {
    let found = find(text);
    if found.is_empty() {
        text.to_string()
    } else {
        redact(text, &found)
    }
}

/// `text` on one line, secrets redacted, then cut to at most `max`
/// characters with `…`: the one way memd shortens text it shows.
pub fn shorten(text: &str, max: usize) -> String {
    let text = redacted(text);
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        flat.chars()
            .take(max.saturating_sub(1))
            .chain(['…'])
            .collect()
    } else {
        flat
    }
}

#[cfg(test)]
mod tests;
