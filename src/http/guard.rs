//! The browser rules of the viewer's loopback listener (they do not apply
//! on the daemon's socket, whose peers are checked by credentials). Every
//! local user can reach a loopback port: the token is what keeps them out.
//!
//! - `Host` must be a loopback name or address (`localhost`, `*.localhost`,
//!   `127.0.0.0/8`, `::1`): a page of another site whose name was made to
//!   resolve to 127.0.0.1 (DNS rebinding) is refused.
//! - A request whose `Origin` is not its own `Host` is refused (CSRF); a
//!   port forwarded to the listener still works, since the browser's Host
//!   and Origin name the same forwarded address.
//! - `?token=` (what `memd ui` prints) is answered by a redirect to the same
//!   page without it, setting a cookie named after the port (cookies are not
//!   port-scoped) that is `HttpOnly` and `SameSite=Strict`; afterwards the
//!   cookie must match the token. A wrong or missing one is `401`.
//! - Every answer says `Content-Security-Policy: default-src 'self'` (no
//!   inline script, no other origin), no framing, no referrer, no caching;
//!   no CORS header is ever sent.

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::problem::Problem;
use super::{App, Door};

/// The policy every answer on the loopback listener carries.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
    form-action 'self'";

/// The cookie that carries the token on `port`.
pub fn cookie_name(port: u16) -> String {
    format!("memd-ui-{port}")
}

/// Whether `host` (a `Host` header: a name or address, maybe a port) names
/// this machine's loopback.
pub fn loopback_host(host: &str) -> bool {
    let host = host.trim();
    let name = if let Some(rest) = host.strip_prefix('[') {
        match rest.split_once(']') {
            Some((addr, tail)) if tail.is_empty() || tail.starts_with(':') => addr,
            _ => return false,
        }
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
            Some(_) => return false,
            None => host,
        }
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name == "localhost" || name.ends_with(".localhost") {
        return true;
    }
    name.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Compares in time that does not depend on where the strings differ.
fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_string())
}

/// Adds the headers every loopback answer carries.
fn harden(mut r: Response) -> Response {
    let h = r.headers_mut();
    for (name, value) in [
        ("content-security-policy", CSP),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
        ("cache-control", "no-store"),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    r
}

/// A refusal: a short page for a browser, a problem for anyone else.
fn refuse(headers: &HeaderMap, status: StatusCode, code: &str, detail: &str) -> Response {
    let wants_html = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"));
    if wants_html {
        let page = super::ui::page::refusal(status, detail);
        return harden((status, page).into_response());
    }
    harden(Problem::new(status, code, detail).into_response())
}

/// The middleware: the rules above on the loopback listener.
pub async fn check(State(app): State<App>, req: Request, next: Next) -> Response {
    let Door::Loopback { port } = app.door else {
        return next.run(req).await;
    };
    let headers = req.headers().clone();
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_string();
    if !loopback_host(&host) {
        return refuse(
            &headers,
            StatusCode::FORBIDDEN,
            "forbidden",
            "this listener answers only to a loopback Host (localhost, 127.0.0.1, [::1])",
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let own = format!("http://{host}");
        if !origin.to_str().is_ok_and(|o| o.eq_ignore_ascii_case(&own)) {
            return refuse(
                &headers,
                StatusCode::FORBIDDEN,
                "forbidden",
                "a request from another origin is refused (its Origin is not this page's)",
            );
        }
    }
    let Some(token) = app.shared.web.token() else {
        return refuse(
            &headers,
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "the viewer has no token yet",
        );
    };
    let name = cookie_name(port);
    let query = req.uri().query().unwrap_or("").to_string();
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    if let Some((_, given)) = pairs.iter().find(|(k, _)| k == "token") {
        if !same(given, &token) {
            return refuse(
                &headers,
                StatusCode::UNAUTHORIZED,
                "permission_denied",
                "this link's token is not the viewer's (it was rotated?): run `memd ui` for a new \
                 link",
            );
        }
        let rest: Vec<&(String, String)> = pairs.iter().filter(|(k, _)| k != "token").collect();
        let mut location = req.uri().path().to_string();
        if !rest.is_empty() {
            location.push('?');
            location.push_str(
                &form_urlencoded::Serializer::new(String::new())
                    .extend_pairs(rest.iter().map(|(k, v)| (k.as_str(), v.as_str())))
                    .finish(),
            );
        }
        let mut r = StatusCode::SEE_OTHER.into_response();
        if let (Ok(loc), Ok(set)) = (
            HeaderValue::from_str(&location),
            HeaderValue::from_str(&format!(
                "{name}={token}; Path=/; HttpOnly; SameSite=Strict"
            )),
        ) {
            r.headers_mut().insert(header::LOCATION, loc);
            r.headers_mut().insert(header::SET_COOKIE, set);
        }
        return harden(r);
    }
    if !cookie(&headers, &name).is_some_and(|c| same(&c, &token)) {
        return refuse(
            &headers,
            StatusCode::UNAUTHORIZED,
            "permission_denied",
            "open the viewer with the link `memd ui` prints (it carries the token)",
        );
    }
    harden(next.run(req).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_loopback_hosts_pass() {
        for ok in [
            "localhost",
            "localhost:7420",
            "127.0.0.1:7420",
            "127.1.2.3",
            "[::1]:7420",
            "[::1]",
            "viewer.localhost:9000",
            "LOCALHOST.",
        ] {
            assert!(loopback_host(ok), "{ok}");
        }
        for bad in [
            "evil.example",
            "evil.example:7420",
            "localhost.evil.example",
            "10.0.0.1:7420",
            "[::2]:7420",
            "[::1]x",
            "127.0.0.1:port",
            "",
        ] {
            assert!(!loopback_host(bad), "{bad}");
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
    }
}
