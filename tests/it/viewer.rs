//! The web viewer's loopback listener and pages, driven over plain HTTP:
//! every browser rule (token, cookie, Host, Origin, security headers)
//! tried with a request that breaks it and with one that keeps it, and the
//! pages' content. `viewer_browser` drives the same pages in a real browser.

use serde_json::{Value, json};

use crate::common::Daemon;
use crate::common::http::{Reply, tcp_request};

/// `memd ui --no-open --json`: the address and the token.
pub fn open(d: &Daemon, new_token: bool) -> (String, String) {
    let mut args = vec!["ui", "--no-open"];
    if new_token {
        args.push("--new-token");
    }
    let (v, code) = d.json(&args);
    assert_eq!(code, 0, "{v}");
    let address = v["address"].as_str().unwrap().to_string();
    let url = v["url"].as_str().unwrap();
    let token = url.split("token=").nth(1).unwrap().to_string();
    assert_eq!(url, format!("http://{address}/?token={token}"));
    (address, token)
}

/// The cookie the token is traded for (`name=value`).
pub fn login(address: &str, token: &str) -> String {
    let r = tcp_request(address, "GET", &format!("/?token={token}"), &[], None);
    assert_eq!(r.status, 303, "{}", String::from_utf8_lossy(&r.body));
    let set = r.header("set-cookie").expect("a cookie").to_string();
    set.split(';').next().unwrap().to_string()
}

fn body(r: &Reply) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

#[test]
fn the_token_is_traded_for_a_strict_cookie_and_everything_else_is_refused() {
    let d = Daemon::start();
    d.json(&["--namespace", "web", "add", "the staging database is db-2"]);
    let (addr, token) = open(&d, false);
    let port = addr.rsplit(':').next().unwrap().to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    // No token, a wrong token: 401, for pages and for the API.
    for path in ["/", "/v1/memories", "/sessions"] {
        let r = tcp_request(&addr, "GET", path, &[], None);
        assert_eq!(r.status, 401, "{path}: {}", body(&r));
    }
    let r = tcp_request(
        &addr,
        "GET",
        "/?token=0000",
        &[("Accept", "text/html")],
        None,
    );
    assert_eq!(r.status, 401);
    assert!(body(&r).contains("memd ui"), "the page says what to do");
    // The token: a redirect without it, and a cookie named after the port.
    let r = tcp_request(&addr, "GET", &format!("/m/1?token={token}&x=1"), &[], None);
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/m/1?x=1"));
    let set = r.header("set-cookie").unwrap();
    assert!(set.starts_with(&format!("memd-ui-{port}={token}")), "{set}");
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let cookie = login(&addr, &token);
    // With the cookie: pages and the API, with the security headers.
    let r = tcp_request(&addr, "GET", "/", &[("Cookie", &cookie)], None);
    assert_eq!(r.status, 200, "{}", body(&r));
    assert!(body(&r).contains("the staging database is db-2"));
    let csp = r.header("content-security-policy").unwrap();
    assert!(
        csp.contains("default-src 'self'") && !csp.contains("unsafe"),
        "{csp}"
    );
    assert_eq!(r.header("x-frame-options"), Some("DENY"));
    assert!(r.header("access-control-allow-origin").is_none(), "no CORS");
    let r = tcp_request(&addr, "GET", "/v1/memories", &[("Cookie", &cookie)], None);
    assert_eq!(r.status, 200);
    // A foreign Host with a valid cookie (DNS rebinding): refused.
    for host in [
        "attacker.example",
        &format!("attacker.example:{port}"),
        "10.0.0.5",
    ] {
        let r = tcp_request(
            &addr,
            "GET",
            "/v1/memories",
            &[("Host", host), ("Cookie", &cookie)],
            None,
        );
        assert_eq!(r.status, 403, "Host {host}");
    }
    // A cross-origin write with a valid cookie: refused, nothing written.
    let new = json!({"content": "written from another site"});
    let r = tcp_request(
        &addr,
        "POST",
        "/v1/memories?namespace=web",
        &[("Cookie", &cookie), ("Origin", "http://attacker.example")],
        Some(&new),
    );
    assert_eq!(r.status, 403, "{}", body(&r));
    let (v, _) = d.json(&["--namespace", "web", "list"]);
    assert_eq!(v["count"], 1, "nothing was written: {v}");
    // The same from the page's own origin: accepted.
    let own = format!("http://{addr}");
    let r = tcp_request(
        &addr,
        "POST",
        "/v1/memories?namespace=web",
        &[("Cookie", &cookie), ("Origin", &own)],
        Some(&json!({"content": "written from the viewer"})),
    );
    assert_eq!(r.status, 201, "{}", body(&r));
    // A forwarded port: Host and Origin name the forwarded address.
    let r = tcp_request(
        &addr,
        "POST",
        "/v1/memories?namespace=web",
        &[
            ("Host", "localhost:9999"),
            ("Origin", "http://localhost:9999"),
            ("Cookie", &cookie),
        ],
        Some(&json!({"content": "written through a forwarded port"})),
    );
    assert_eq!(r.status, 201, "{}", body(&r));
    // A new token: the old cookie and link stop working, the new ones work.
    let (addr2, token2) = open(&d, true);
    assert_eq!(addr2, addr, "the same listener");
    assert_ne!(token2, token);
    let r = tcp_request(&addr, "GET", "/", &[("Cookie", &cookie)], None);
    assert_eq!(r.status, 401);
    let r = tcp_request(&addr, "GET", &format!("/?token={token}"), &[], None);
    assert_eq!(r.status, 401);
    let cookie2 = login(&addr, &token2);
    assert_eq!(
        tcp_request(&addr, "GET", "/", &[("Cookie", &cookie2)], None).status,
        200
    );
    // The token file is the daemon user's alone.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(d.data_dir().join("ui.token"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    // The socket serves the same pages without a token (its peers are
    // checked by credentials).
    let r = crate::common::http::get(&d.socket(), "/", &[]);
    assert_eq!(r.status, 200);
}

#[test]
fn a_listener_on_a_non_loopback_address_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("config.toml");
    std::fs::write(&cfg, "[http]\nlisten = \"0.0.0.0:7420\"\n").unwrap();
    let out = crate::common::memd_command(dir.path())
        .arg("--config")
        .arg(&cfg)
        .args(["--data-dir"])
        .arg(dir.path().join("data"))
        .arg("daemon")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a loopback address"), "{err}");
}

#[test]
fn a_configured_listener_opens_at_start() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let d = Daemon::with_config(&format!("[http]\nlisten = \"127.0.0.1:{port}\"\n"));
    let addr = format!("127.0.0.1:{port}");
    let r = tcp_request(&addr, "GET", "/", &[], None);
    assert_eq!(r.status, 401, "listening from the start, locked");
    let (a, _) = open(&d, false);
    assert_eq!(a, addr);
}

#[test]
fn the_pages_show_memories_history_and_the_exact_block_a_session_was_given() {
    let d = Daemon::start();
    let (v, _) = d.json(&[
        "--namespace",
        "web",
        "add",
        "the cache runs on port 6379",
        "--tag",
        "ops",
    ]);
    let id = v["id"].as_i64().unwrap();
    d.json(&[
        "--namespace",
        "web",
        "--agent",
        "deployer",
        "update",
        &id.to_string(),
        "--content",
        "the cache runs on port 6380 <now>",
        "--expect-rev",
        "1",
    ]);
    d.json(&["--namespace", "other", "add", "lunch is at noon"]);
    let (addr, token) = open(&d, false);
    let cookie = login(&addr, &token);
    let get = |path: &str| {
        let r = tcp_request(&addr, "GET", path, &[("Cookie", &cookie)], None);
        assert_eq!(r.status, 200, "{path}: {}", body(&r));
        assert!(r.header("content-type").unwrap().starts_with("text/html"));
        body(&r)
    };
    let page = get("/");
    assert!(
        page.contains("lunch is at noon") && page.contains("port 6380 &lt;now&gt;"),
        "escaped, every namespace"
    );
    assert!(!page.contains("<now>"), "text is escaped");
    let page = get("/?namespace=other");
    assert!(page.contains("lunch is at noon") && !page.contains("6380"));
    let page = get("/?q=cache&fragment=results");
    assert!(
        page.contains("6380") && !page.contains("<html"),
        "a fragment for search as you type"
    );
    let page = get(&format!("/m/{id}"));
    assert!(
        page.contains("<del>6379</del>"),
        "the history marks what changed: {page}"
    );
    assert!(page.contains("<ins>6380 &lt;now&gt;</ins>"), "{page}");
    assert!(page.contains("data-rev=\"2\""));
    assert!(
        page.contains("by agent deployer"),
        "who made the version: {page}"
    );
    // A session's block, byte for byte.
    let (inject, _) = d.json(&["--namespace", "web", "--session", "work", "inject"]);
    let page = get("/sessions");
    assert!(page.contains("work"));
    let page = get("/sessions/web/work");
    let block = inject["block"].as_str().unwrap();
    let shown = page
        .split("<pre class=\"block\" id=\"block\">")
        .nth(1)
        .unwrap()
        .split("</pre>")
        .next()
        .unwrap()
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    assert_eq!(shown, block, "the exact block");
    for path in ["/drift", "/team", "/assets/app.css", "/assets/app.js"] {
        let r = tcp_request(&addr, "GET", path, &[("Cookie", &cookie)], None);
        assert_eq!(r.status, 200, "{path}");
    }
    let r = tcp_request(
        &addr,
        "GET",
        "/m/999999",
        &[("Cookie", &cookie), ("Accept", "text/html")],
        None,
    );
    assert_eq!(r.status, 404);
    let _: Value = json!(null);
}
