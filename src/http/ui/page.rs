//! The viewer's HTML: the page frame, escaping, and the pieces pages share.
//! Pages are rendered here, on the server, so reading works with
//! JavaScript off; `app.js` only makes them live (search as you type, live
//! updates, editing).

use std::fmt::Write;

use axum::extract::FromRequestParts;
use axum::http::StatusCode;
use axum::http::request::Parts;
use memd_proto::Memory;

/// Where a browser session's pages live (`/s/<key>/`, `/` on the socket):
/// the base the pages' links are relative to. The guard puts it in a
/// request's extensions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Base(pub String);

/// Where a page is: the base its links are relative to (`/s/<key>/` for a
/// browser session, `/` on the socket) and its own address under it (so
/// the "skip to content" link stays on the page: a fragment alone would
/// resolve against the base).
#[derive(Debug, Clone)]
pub struct Here {
    /// The base, with its trailing `/`.
    pub base: String,
    /// The page's path and query, relative to the base.
    pub own: String,
}

impl<S: Send + Sync> FromRequestParts<S> for Here {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Here, Self::Rejection> {
        let base = parts
            .extensions
            .get::<Base>()
            .map_or_else(|| "/".to_string(), |b| b.0.clone());
        let path = parts.uri.path().trim_start_matches('/');
        let own = match parts.uri.query() {
            Some(q) => format!("{path}?{q}"),
            None if path.is_empty() => "./".to_string(),
            None => path.to_string(),
        };
        Ok(Here { base, own })
    }
}

/// Escapes text for HTML content and attribute values.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Percent-encodes a path segment or query value.
pub fn enc(s: &str) -> String {
    form_urlencoded::byte_serialize(s.as_bytes()).collect()
}

/// Which part of the viewer a page belongs to (its tab is marked).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tab {
    /// Memories and search.
    Memories,
    /// Named sessions.
    Sessions,
    /// Drift events and backups.
    Drift,
    /// Team memory.
    Team,
    /// None of them.
    None,
}

/// A whole page at `here`. Every link in a page is relative: it resolves
/// against the `<base>`, so the same page serves every browser session's
/// path and the socket.
pub fn frame(here: &Here, title: &str, tab: Tab, body: &str) -> String {
    let mut nav = String::new();
    for (t, href, label) in [
        (Tab::Memories, "./", "Memories"),
        (Tab::Sessions, "sessions", "Sessions"),
        (Tab::Drift, "drift", "Drift"),
        (Tab::Team, "team", "Team"),
    ] {
        let current = if t == tab {
            " aria-current=\"page\""
        } else {
            ""
        };
        let _ = write!(nav, "<a href=\"{href}\"{current}>{label}</a>");
    }
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <base href=\"{base}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <title>{title} · memd</title>\n\
         <link rel=\"icon\" href=\"data:,\">\n\
         <link rel=\"stylesheet\" href=\"assets/app.css\">\n\
         <script src=\"assets/app.js\" defer></script>\n</head>\n<body>\n\
         <a class=\"skip\" href=\"{own}#main\">Skip to content</a>\n\
         <header class=\"top\"><a class=\"brand\" href=\"./\">memd</a>\
         <nav aria-label=\"Sections\">{nav}</nav>\
         <span class=\"live\" id=\"live\" hidden title=\"Live: the page follows every change\">live</span>\
         </header>\n<main id=\"main\">\n{body}\n</main>\n</body>\n</html>\n",
        base = esc(&here.base),
        own = esc(&here.own),
        title = esc(title)
    )
}

/// A refusal of the loopback listener, as a small page of its own (no
/// stylesheet, no link: nothing behind the listener opens without a
/// credential).
pub fn refusal(status: StatusCode, detail: &str) -> String {
    let title = esc(status.canonical_reason().unwrap_or("Refused"));
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <link rel=\"icon\" href=\"data:,\">\n<title>{title} · memd</title>\n</head>\n<body>\n\
         <main><h1>{title}</h1><p>{}</p>\
         <p>Run <code>memd ui</code> on this machine: it opens the viewer in your browser with a \
         link that works once.</p></main>\n</body>\n</html>\n",
        esc(detail)
    )
}

/// The answer to a login: a page that moves on to `to` by itself (and a
/// link, should the browser not follow).
pub fn moving_on(to: &str) -> String {
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"refresh\" content=\"0; url={to}\">\n\
         <meta name=\"color-scheme\" content=\"light dark\">\n\
         <link rel=\"icon\" href=\"data:,\">\n<title>memd</title>\n</head>\n<body>\n\
         <main><p><a href=\"{to}\">Open memd's viewer</a></p></main>\n</body>\n</html>\n",
        to = esc(to)
    )
}

/// "3 min ago" for a stored time (`2026-06-07T18:00:00.000Z`), or the time
/// itself when it cannot be read.
pub fn ago(stored: &str) -> String {
    let Ok(t) = time::OffsetDateTime::parse(stored, &time::format_description::well_known::Rfc3339)
    else {
        return stored.to_string();
    };
    let secs = (time::OffsetDateTime::now_utc() - t).whole_seconds();
    match secs {
        s if s < 0 => "just now".into(),
        s if s < 60 => format!("{s} s ago"),
        s if s < 3_600 => format!("{} min ago", s / 60),
        s if s < 86_400 => format!("{} h ago", s / 3_600),
        s if s < 86_400 * 60 => format!("{} d ago", s / 86_400),
        _ => stored.get(..10).unwrap_or(stored).to_string(),
    }
}

/// A `<time>` element: relative, with the exact time as its title.
pub fn when(stored: &str) -> String {
    format!(
        "<time datetime=\"{0}\" title=\"{0}\">{1}</time>",
        esc(stored),
        esc(&ago(stored))
    )
}

/// One memory in a list: a link to its page, with what tells it apart.
pub fn memory_item(m: &Memory, score: Option<f64>) -> String {
    let mut tags = String::new();
    for t in &m.tags {
        let _ = write!(tags, "<span class=\"tag\">{}</span>", esc(t));
    }
    let subject = m
        .subject
        .as_deref()
        .map(|s| format!("<strong>{}:</strong> ", esc(s)))
        .unwrap_or_default();
    let score = score
        .map(|s| format!("<span class=\"score\" title=\"relevance\">{s:.2}</span>"))
        .unwrap_or_default();
    let pin = if m.pinned {
        "<span class=\"pin\" title=\"pinned\">pinned</span>"
    } else {
        ""
    };
    let status = if m.status == "promoted" {
        String::new()
    } else {
        format!("<span class=\"status s-{0}\">{0}</span>", esc(&m.status))
    };
    format!(
        "<li><a class=\"memory\" href=\"m/{id}\" data-id=\"{id}\">\
         <span class=\"line\"><span class=\"cat c-{cat}\">{cat}</span>{pin}{status}\
         <span class=\"content\">{subject}{content}</span>{score}</span>\
         <span class=\"meta\"><span class=\"ns\">{ns}</span> · #{id} · rev {rev} · {by} · {when}{tags}</span>\
         </a></li>",
        id = m.id,
        cat = esc(&m.category),
        content = esc(&clip(&m.content, 280)),
        ns = esc(&m.namespace),
        rev = m.rev,
        by = esc(m.created_by.as_deref().unwrap_or(&m.source)),
        when = when(&m.updated_at),
    )
}

/// The first `n` characters of `s` (whitespace collapsed, a secret
/// redacted before the cut so none is left almost whole), with `…` when
/// cut.
pub fn clip(s: &str, n: usize) -> String {
    crate::handler::preview(s, n + 1)
}

/// A word diff of `old` → `new`: unchanged words as text, removed ones in
/// `<del>`, added ones in `<ins>`. Longer texts than the diff can afford
/// show as removed whole, then added whole.
pub fn word_diff(old: &str, new: &str) -> String {
    let a: Vec<&str> = old.split_inclusive(char::is_whitespace).collect();
    let b: Vec<&str> = new.split_inclusive(char::is_whitespace).collect();
    if a.len() * b.len() > 400_000 {
        return format!("<del>{}</del><ins>{}</ins>", esc(old), esc(new));
    }
    // Longest common subsequence, by words.
    let mut lcs = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut out = String::new();
    let mut run: (Option<&str>, String) = (None, String::new());
    let flush = |run: &mut (Option<&str>, String), out: &mut String| {
        match run.0 {
            Some("del") => {
                let _ = write!(out, "<del>{}</del>", esc(&run.1));
            }
            Some("ins") => {
                let _ = write!(out, "<ins>{}</ins>", esc(&run.1));
            }
            _ => out.push_str(&esc(&run.1)),
        }
        run.1.clear();
    };
    let push = |kind: Option<&'static str>,
                word: &str,
                run: &mut (Option<&str>, String),
                out: &mut String| {
        if run.0 != kind {
            flush(run, out);
            run.0 = kind;
        }
        run.1.push_str(word);
    };
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            push(None, a[i], &mut run, &mut out);
            i += 1;
            j += 1;
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            push(Some("del"), a[i], &mut run, &mut out);
            i += 1;
        } else {
            push(Some("ins"), b[j], &mut run, &mut out);
            j += 1;
        }
    }
    flush(&mut run, &mut out);
    out
}

/// A memory's citations on its page: each place, and the last verdict a
/// client on this machine reported with when (or that none has checked it).
pub fn citations(c: &memd_proto::cite::Cited) -> String {
    let mut out = String::from("<ul class=\"cites\">");
    for cite in &c.cites {
        let last = c.last.iter().find(|l| &l.checked.cite == cite);
        let verdict = match last {
            Some(l) => {
                let v = l.checked.verdict.name();
                let now = l
                    .checked
                    .now
                    .as_ref()
                    .map(|n| format!(" → <code>{}</code>", esc(&n.place())))
                    .unwrap_or_default();
                let reason = l
                    .checked
                    .reason
                    .as_deref()
                    .map(|r| format!(" ({})", esc(r)))
                    .unwrap_or_default();
                format!(
                    "<span class=\"verdict v-{v}\">{v}</span>{now}{reason}, checked {}",
                    when(&l.at)
                )
            }
            None => "<span class=\"verdict v-unchecked\">not checked on this machine</span>".into(),
        };
        let _ = write!(
            out,
            "<li><code>{}</code> {verdict}</li>",
            esc(&cite.place())
        );
    }
    out.push_str("</ul>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn citations_show_the_last_verdict_with_when_or_none() {
        use memd_proto::cite::{Checked, Cite, Cited, LastVerdict, Verdict};
        let a = Cite::parse("src/a.rs:3-4").unwrap();
        let b = Cite::parse("docs/<b>.md").unwrap();
        let html = citations(&Cited {
            id: 1,
            namespace: "n".into(),
            preview: String::new(),
            cites: vec![a.clone(), b],
            last: vec![LastVerdict {
                checked: Checked {
                    id: 1,
                    cite: a,
                    verdict: Verdict::Moved,
                    now: Some(Cite::parse("src/a.rs:9-10").unwrap()),
                    reason: None,
                },
                at: "2026-12-07T06:00:00.000Z".into(),
            }],
        });
        assert!(html.contains("<code>src/a.rs:3-4</code> <span class=\"verdict v-moved\">moved</span> → <code>src/a.rs:9-10</code>, checked <time datetime=\"2026-12-07T06:00:00.000Z\""), "{html}");
        assert!(html.contains("<code>docs/&lt;b&gt;.md</code> <span class=\"verdict v-unchecked\">not checked on this machine</span>"), "{html}");
    }

    #[test]
    fn a_clip_never_leaves_a_secret_almost_whole() {
        let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4).get(..36).unwrap());
        let text = format!("{} {token} and more", "word ".repeat(50));
        for n in [250, 270, 280, 300] {
            let c = clip(&text, n);
            assert!(!c.contains(&token[..12]), "{n}: {c}");
        }
        assert_eq!(clip("short  text", 280), "short text");
    }

    #[test]
    fn text_is_escaped_everywhere() {
        assert_eq!(
            esc("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
    }

    #[test]
    fn a_word_diff_marks_what_changed() {
        assert_eq!(
            word_diff("the cache runs on port 6379", "the cache runs on port 6380"),
            "the cache runs on port <del>6379</del><ins>6380</ins>"
        );
        assert_eq!(word_diff("a <b>", "a <b>"), "a &lt;b&gt;");
    }
}
