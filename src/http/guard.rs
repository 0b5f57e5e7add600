//! What every HTTP request passes before the router: on every door, a
//! deadline on its body and the `Memd-Client` mark decided here; on the
//! viewer's loopback listener, the browser rules (the daemon's socket
//! checks its peers by credentials instead). Every local user, and every
//! page a browser opens, can reach a loopback port: these rules are what
//! keeps them out.
//!
//! - `Host` must be a loopback name or address (`localhost`, `*.localhost`,
//!   `127.0.0.0/8`, `::1`): a page of another site whose name was made to
//!   resolve to 127.0.0.1 (DNS rebinding) is refused.
//! - A request whose `Origin` is not its own `Host` is refused (CSRF); a
//!   port forwarded to the listener still works, since the browser's Host
//!   and Origin name the same forwarded address.
//! - A browser logs in with a one-time code (`GET /login?code=…`, what
//!   `memd ui` opens): it gets a session whose pages live under a path of
//!   its own, `/s/<key>/`, and a cookie `memd-ui-<port>=<secret>` scoped to
//!   that path (`HttpOnly`, `SameSite=Strict`). Cookies are scoped by host
//!   and path, never by port, so a server on another loopback port gets
//!   the cookie only when the browser is sent to `/s/<key>/` there — and
//!   the key lives only in the person's browser. The guard checks the
//!   cookie against the session of the key, strips `/s/<key>` and routes
//!   the rest; the pages link relative to `<base href="/s/<key>/">`.
//! - A program presents the token of `<data_dir>/ui.token` as
//!   `Authorization: Bearer <token>` (a browser never sends that header to
//!   another port on its own).
//! - Anything else is `401`, and the refusal closes the connection. Every
//!   answer says `Content-Security-Policy: default-src 'self'` (no inline
//!   script, no other origin), no framing, no referrer, no caching; no
//!   CORS header is ever sent.
//! - `Memd-Client: viewer` (a person's, in provenance) holds only for a
//!   request of a browser session: the guard sets it there and removes it
//!   from every other request, on every door.

use std::sync::atomic::Ordering;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::Request;
use axum::http::uri::PathAndQuery;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use tower::ServiceExt;

use super::problem::Problem;
use super::{App, Door};

/// The policy every answer on the loopback listener carries.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'self'; \
    form-action 'self'";

/// The header that marks a person's request through the viewer.
const CLIENT: HeaderName = HeaderName::from_static("memd-client");

/// The cookie of a browser session on `port`.
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

/// Every value of the cookies named `name` (a page of another port may
/// have set more cookies of the same name: each is tried).
fn cookies<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .filter(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
        .collect()
}

/// The token of `Authorization: Bearer <token>`, if that is the header.
fn bearer(headers: &HeaderMap) -> Option<&str> {
    let v = headers.get(header::AUTHORIZATION)?.to_str().ok()?.trim();
    let (scheme, token) = v.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// Splits `/s/<key>/<rest>` into the key and `/<rest>`.
fn session_path(path: &str) -> Option<(&str, &str)> {
    let rest = path.strip_prefix("/s/")?;
    let slash = rest.find('/')?;
    let (key, tail) = rest.split_at(slash);
    (!key.is_empty()).then_some((key, tail))
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

fn wants_html(headers: &HeaderMap) -> bool {
    headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/html"))
}

/// A refusal: a short page for a browser, a problem for anyone else; the
/// connection closes after it (a client without a credential cannot keep
/// one open by asking again and again).
fn refuse(headers: &HeaderMap, status: StatusCode, code: &str, detail: &str) -> Response {
    let mut r = if wants_html(headers) {
        let mut r = (status, super::ui::page::refusal(status, detail)).into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/html; charset=utf-8"),
        );
        r
    } else {
        Problem::new(status, code, detail).into_response()
    };
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    harden(r)
}

/// Routes `req`, its body bounded by `limit` in time.
async fn route(router: Router, mut req: Request, limit: Duration) -> Response {
    if !axum::body::HttpBody::is_end_stream(req.body()) {
        req = req.map(|b| Body::new(super::io::Deadline::new(b, limit)));
    }
    match router.oneshot(req).await {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

/// Runs `req` through the rules of its door, then the router.
pub async fn handle(app: App, router: Router, mut req: Request) -> Response {
    let limit = Duration::from_millis(app.shared.config().limits.frame_timeout_ms);
    req.headers_mut().remove(CLIENT);
    let Door::Loopback { port } = app.door else {
        return route(router, req, limit).await;
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
    let path = req.uri().path().to_string();
    if path == "/login" {
        return login(&app, port, &req);
    }
    if let Some((key, tail)) = session_path(&path) {
        let name = cookie_name(port);
        if !app.shared.web.check(key, &cookies(&headers, &name)) {
            return refuse(
                &headers,
                StatusCode::UNAUTHORIZED,
                "permission_denied",
                "this browser session ended (memd ui --new-token, a restart of the daemon, or 12 \
                 hours unused) or was never opened in this browser: run `memd ui` to log in again",
            );
        }
        let base = format!("/s/{key}/");
        let rest = match req.uri().query() {
            Some(q) => format!("{tail}?{q}"),
            None => tail.to_string(),
        };
        let Ok(pq) = PathAndQuery::try_from(rest) else {
            return refuse(
                &headers,
                StatusCode::BAD_REQUEST,
                "invalid_input",
                "bad path",
            );
        };
        *req.uri_mut() = Uri::from(pq);
        req.extensions_mut().insert(super::ui::page::Base(base));
        req.headers_mut()
            .insert(CLIENT, HeaderValue::from_static("viewer"));
        app.authenticated.store(true, Ordering::Relaxed);
        return harden(route(router, req, limit).await);
    }
    if let Some(given) = bearer(&headers) {
        if crate::state::web::same(given, &token) {
            app.authenticated.store(true, Ordering::Relaxed);
            return harden(route(router, req, limit).await);
        }
        return refuse(
            &headers,
            StatusCode::UNAUTHORIZED,
            "permission_denied",
            "this bearer token is not the viewer's (it was rotated?): read <data_dir>/ui.token \
             again",
        );
    }
    let detail = if req.uri().query().is_some_and(|q| q.contains("token=")) {
        "a link with ?token= no longer opens the viewer: run `memd ui` for a one-time link"
    } else {
        "open the viewer with `memd ui` (it logs this browser in with a one-time link); a \
         program sends Authorization: Bearer with the token of <data_dir>/ui.token"
    };
    refuse(
        &headers,
        StatusCode::UNAUTHORIZED,
        "permission_denied",
        detail,
    )
}

/// `GET /login?code=…`: trades a one-time code for a browser session and
/// sends the browser to its pages. The answer is a page that moves on by
/// itself, not a redirect: a `SameSite=Strict` cookie is not sent on a
/// redirect whose navigation began elsewhere (the launcher file `memd ui`
/// opens is another site), but it is on a navigation this page starts.
fn login(app: &App, port: u16, req: &Request) -> Response {
    let headers = req.headers();
    let code = form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    let Some(opened) = app.shared.web.redeem(&code) else {
        return refuse(
            headers,
            StatusCode::UNAUTHORIZED,
            "permission_denied",
            "this login link was used already, is more than 2 minutes old, or was ended by a new \
             token: run `memd ui` again for a new one",
        );
    };
    app.authenticated.store(true, Ordering::Relaxed);
    let to = format!("/s/{}/", opened.key);
    let mut r = super::ui::page::moving_on(&to).into_response();
    let set = format!(
        "{}={}; Path={to}; HttpOnly; SameSite=Strict",
        cookie_name(port),
        opened.secret
    );
    if let Ok(v) = HeaderValue::from_str(&set) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    harden(r)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A daemon's state on a temporary directory, with the listener's token.
    fn app(door: Door) -> (App, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let config = crate::config::Config::parse(
            std::path::Path::new("config.toml"),
            "[embed]\nprovider = \"none\"\n",
        )
        .unwrap();
        let shared = crate::state::testing::shared(dir.path(), config);
        shared.web.set_token("the-token");
        let app = App {
            shared: Arc::new(shared),
            door,
            authenticated: Arc::default(),
        };
        (app, dir)
    }

    async fn send(app: &App, path: &str, headers: &[(&str, &str)]) -> Response {
        let mut req = Request::builder()
            .uri(path)
            .header("host", "127.0.0.1:7420");
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let req = req.body(Body::empty()).unwrap();
        handle(app.clone(), super::super::router(app.clone()), req).await
    }

    async fn text(r: Response) -> String {
        let b = axum::body::to_bytes(r.into_body(), 1 << 20).await.unwrap();
        String::from_utf8_lossy(&b).into_owned()
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_login_code_opens_a_session_under_its_path_once() {
        let (app, _dir) = app(Door::Loopback { port: 7420 });
        let code = app.shared.web.issue_code().unwrap();
        let r = send(&app, "/v1/status", &[]).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(r.headers()[header::CONNECTION], "close");
        assert!(!app.authenticated.load(Ordering::Relaxed));
        let r = send(&app, &format!("/login?code={code}"), &[]).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert!(app.authenticated.load(Ordering::Relaxed));
        let set = r.headers()[header::SET_COOKIE]
            .to_str()
            .unwrap()
            .to_string();
        let cookie = set.split(';').next().unwrap().to_string();
        let path = set
            .split(';')
            .find_map(|a| a.trim().strip_prefix("Path="))
            .unwrap()
            .to_string();
        assert!(cookie.starts_with("memd-ui-7420="), "{set}");
        assert!(path.starts_with("/s/") && path.ends_with('/'), "{set}");
        assert!(text(r).await.contains(&format!("url={path}")));
        let again = send(
            &app,
            &format!("/login?code={code}"),
            &[("accept", "text/html")],
        )
        .await;
        assert_eq!(again.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            again.headers()[header::CONTENT_TYPE],
            "text/html; charset=utf-8"
        );
        // Under the session's path, with its cookie: the route of the rest,
        // with the base in the page.
        let r = send(&app, &format!("{path}v1/status"), &[("cookie", &cookie)]).await;
        assert_eq!(r.status(), StatusCode::OK);
        let r = send(&app, &path, &[("cookie", &cookie)]).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert!(text(r).await.contains(&format!("<base href=\"{path}\">")));
        let r = send(&app, "/v1/status", &[("cookie", &cookie)]).await;
        assert_eq!(
            r.status(),
            StatusCode::UNAUTHORIZED,
            "the cookie is not the token"
        );
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn a_program_uses_the_bearer_token_at_the_root() {
        let (app, _dir) = app(Door::Loopback { port: 7420 });
        let r = send(&app, "/v1/status", &[("authorization", "Bearer the-token")]).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert!(app.authenticated.load(Ordering::Relaxed));
        let r = send(&app, "/v1/status", &[("authorization", "Bearer the-tokem")]).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        let r = send(&app, "/?token=the-token", &[]).await;
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert!(text(r).await.contains("no longer opens"));
    }

    #[tokio::test(flavor = "multi_thread")]
    async fn the_socket_routes_as_it_is() {
        let (app, _dir) = app(Door::Socket);
        let r = send(&app, "/v1/status", &[]).await;
        assert_eq!(r.status(), StatusCode::OK);
        assert!(r.headers().get(header::CONTENT_SECURITY_POLICY).is_none());
    }

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
    fn a_session_path_is_its_key_and_the_rest() {
        assert_eq!(session_path("/s/abc/"), Some(("abc", "/")));
        assert_eq!(session_path("/s/abc/m/5"), Some(("abc", "/m/5")));
        assert_eq!(session_path("/s/abc"), None, "no cookie is sent there");
        assert_eq!(session_path("/s//m/5"), None);
        assert_eq!(session_path("/m/5"), None);
        assert_eq!(session_path("/sessions"), None);
    }

    #[test]
    fn every_cookie_of_the_name_is_read() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("memd-ui-7420=a; other=b; memd-ui-7420=c"),
        );
        h.append(header::COOKIE, HeaderValue::from_static("memd-ui-7420=d"));
        h.append(header::COOKIE, HeaderValue::from_static("memd-ui-74200=e"));
        assert_eq!(cookies(&h, "memd-ui-7420"), vec!["a", "c", "d"]);
    }

    #[test]
    fn a_bearer_token_is_read_from_authorization() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h), None);
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer abc"),
        );
        assert_eq!(bearer(&h), Some("abc"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("bearer  abc "),
        );
        assert_eq!(bearer(&h), Some("abc"));
        h.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&h), None);
    }
}
