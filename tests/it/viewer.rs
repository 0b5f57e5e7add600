//! The web viewer's loopback listener and pages, driven over plain HTTP:
//! every browser rule (login code, browser session under its own path,
//! bearer token, Host, Origin, security headers) tried with a request that
//! breaks it and with one that keeps it, and the pages' content.
//! `viewer_browser` drives the same pages in a real browser.

use std::io::{BufReader, Read, Write};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::Daemon;
use crate::common::http::{Reply, read_reply, tcp_request};

/// `memd ui --no-open --json`: the address and the one-time login code.
pub fn open(d: &Daemon, new_token: bool) -> (String, String) {
    let mut args = vec!["ui", "--no-open"];
    if new_token {
        args.push("--new-token");
    }
    let (v, code) = d.json(&args);
    assert_eq!(code, 0, "{v}");
    let address = v["address"].as_str().unwrap().to_string();
    let url = v["url"].as_str().unwrap();
    let login = url.split("code=").nth(1).unwrap().to_string();
    assert_eq!(url, format!("http://{address}/login?code={login}"));
    assert_eq!(v["expires_secs"], 120, "{v}");
    assert!(v["launcher"].is_null(), "--no-open opens nothing: {v}");
    (address, login)
}

/// Logs in with a login code: the session's cookie (`name=value`) and the
/// path its pages live under (`/s/<key>/`).
pub fn login(address: &str, code: &str) -> (String, String) {
    let r = tcp_request(address, "GET", &format!("/login?code={code}"), &[], None);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let set = r.header("set-cookie").expect("a cookie").to_string();
    let cookie = set.split(';').next().unwrap().trim().to_string();
    let base = set
        .split(';')
        .find_map(|a| a.trim().strip_prefix("Path="))
        .expect("a path")
        .to_string();
    assert!(
        body(&r).contains(&format!("url={base}")),
        "the page moves on to the session's path: {}",
        body(&r)
    );
    (cookie, base)
}

/// The token programs present (`Authorization: Bearer`).
pub fn token(d: &Daemon) -> String {
    std::fs::read_to_string(d.data_dir().join("ui.token"))
        .unwrap()
        .trim()
        .to_string()
}

fn body(r: &Reply) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// Sends one keep-alive request on a new connection and reads its answer;
/// whether the daemon then closed the connection.
fn closes_after(addr: &str, path: &str, headers: &[(&str, &str)]) -> (Reply, bool) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n");
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    let reply = read_reply(&mut r);
    let mut rest = [0u8; 1];
    let closed = matches!(r.read(&mut rest), Ok(0));
    (reply, closed)
}

#[test]
fn a_one_time_code_opens_a_browser_session_under_its_own_path_and_nothing_else_does() {
    let d = Daemon::start();
    d.json(&["--namespace", "web", "add", "the staging database is db-2"]);
    let (addr, code) = open(&d, false);
    let port = addr.rsplit(':').next().unwrap().to_string();
    assert!(addr.starts_with("127.0.0.1:"), "{addr}");
    // No credential: 401, for pages and for the API, and the connection
    // closes.
    for path in ["/", "/v1/memories", "/sessions", "/assets/app.js"] {
        let (r, closed) = closes_after(&addr, path, &[]);
        assert_eq!(r.status, 401, "{path}: {}", body(&r));
        assert_eq!(r.header("connection"), Some("close"), "{path}");
        assert!(closed, "{path}: a refusal closes the connection");
    }
    // A browser is told what to do, in a page.
    let r = tcp_request(
        &addr,
        "GET",
        "/?token=0000",
        &[("Accept", "text/html")],
        None,
    );
    assert_eq!(r.status, 401);
    assert_eq!(
        r.header("content-type"),
        Some("text/html; charset=utf-8"),
        "a page, not text"
    );
    assert!(body(&r).contains("memd ui"), "the page says what to do");
    // The token itself in the URL no longer opens anything.
    let t = token(&d);
    let r = tcp_request(&addr, "GET", &format!("/?token={t}"), &[], None);
    assert_eq!(r.status, 401, "{}", body(&r));
    assert!(r.header("set-cookie").is_none());

    // The code: a session under its own path, a cookie scoped to it.
    let r = tcp_request(&addr, "GET", &format!("/login?code={code}"), &[], None);
    assert_eq!(r.status, 200, "{}", body(&r));
    let set = r.header("set-cookie").unwrap().to_string();
    assert!(set.starts_with(&format!("memd-ui-{port}=")), "{set}");
    assert!(!set.contains(&t), "the cookie is not the token: {set}");
    assert!(!set.contains(&code), "nor the code: {set}");
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/s/"] {
        assert!(set.contains(attr), "{attr}: {set}");
    }
    let cookie = set.split(';').next().unwrap().to_string();
    let base = set
        .split(';')
        .find_map(|a| a.trim().strip_prefix("Path="))
        .unwrap()
        .to_string();
    let key = base.trim_start_matches("/s/").trim_end_matches('/');
    assert!(key.len() >= 32, "128 bits at least: {key}");
    assert!(!t.contains(key) && key != code);
    // Used once: the second time it is refused, with a page that says so.
    let r = tcp_request(
        &addr,
        "GET",
        &format!("/login?code={code}"),
        &[("Accept", "text/html")],
        None,
    );
    assert_eq!(r.status, 401);
    assert!(body(&r).contains("used already"), "{}", body(&r));
    assert!(r.header("set-cookie").is_none());

    // With the cookie, under the session's path: pages and the API, with
    // the security headers, every link relative to the session's path.
    let page = |path: &str, c: &str| {
        tcp_request(
            &addr,
            "GET",
            &format!("{base}{path}"),
            &[("Cookie", c)],
            None,
        )
    };
    let r = page("", &cookie);
    assert_eq!(r.status, 200, "{}", body(&r));
    let html = body(&r);
    assert!(html.contains("the staging database is db-2"));
    assert!(html.contains(&format!("<base href=\"{base}\">")), "{html}");
    assert_eq!(
        html.matches("href=\"/").count(),
        1,
        "the base is the one absolute link: none leaves the session's path"
    );
    let csp = r.header("content-security-policy").unwrap();
    assert!(
        csp.contains("default-src 'self'") && !csp.contains("unsafe"),
        "{csp}"
    );
    assert!(csp.contains("base-uri 'self'"), "{csp}");
    assert_eq!(r.header("x-frame-options"), Some("DENY"));
    assert_eq!(r.header("referrer-policy"), Some("no-referrer"));
    assert!(r.header("access-control-allow-origin").is_none(), "no CORS");
    assert_eq!(page("v1/memories", &cookie).status, 200);
    assert_eq!(page("assets/app.js", &cookie).status, 200);
    // The same cookie anywhere else, or with another key, or a session's
    // path without its cookie: 401.
    for (path, c) in [
        ("/".to_string(), cookie.as_str()),
        ("/v1/memories".to_string(), &cookie),
        (format!("/s/{}/", "0".repeat(32)), &cookie),
        (format!("/s/{key}"), &cookie),
        (base.clone(), ""),
        (base.clone(), &format!("memd-ui-{port}={t}")),
        (base.clone(), &format!("memd-ui-{port}={key}")),
    ] {
        let r = tcp_request(&addr, "GET", &path, &[("Cookie", c)], None);
        assert_eq!(r.status, 401, "{path} with {c:?}");
    }
    // Another cookie of the same name beside it (a page of another port
    // may set one): the session's own still opens it.
    let both = format!("memd-ui-{port}=planted; {cookie}");
    assert_eq!(page("", &both).status, 200);

    // A foreign Host with a valid cookie (DNS rebinding): refused.
    for host in [
        "attacker.example",
        &format!("attacker.example:{port}"),
        "10.0.0.5",
    ] {
        let r = tcp_request(
            &addr,
            "GET",
            &format!("{base}v1/memories"),
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
        &format!("{base}v1/memories?namespace=web"),
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
        &format!("{base}v1/memories?namespace=web"),
        &[("Cookie", &cookie), ("Origin", &own)],
        Some(&json!({"content": "written from the viewer"})),
    );
    assert_eq!(r.status, 201, "{}", body(&r));
    // A forwarded port: Host and Origin name the forwarded address.
    let r = tcp_request(
        &addr,
        "POST",
        &format!("{base}v1/memories?namespace=web"),
        &[
            ("Host", "localhost:9999"),
            ("Origin", "http://localhost:9999"),
            ("Cookie", &cookie),
        ],
        Some(&json!({"content": "written through a forwarded port"})),
    );
    assert_eq!(r.status, 201, "{}", body(&r));

    // A program: the token as a bearer token, at the root.
    let bearer = format!("Bearer {t}");
    let r = tcp_request(
        &addr,
        "GET",
        "/v1/memories",
        &[("Authorization", &bearer)],
        None,
    );
    assert_eq!(r.status, 200, "{}", body(&r));
    let r = tcp_request(
        &addr,
        "GET",
        "/v1/memories",
        &[("Authorization", "Bearer 00")],
        None,
    );
    assert_eq!(r.status, 401);

    // A new token: the old session, an unused code and the old bearer
    // token stop working; the new ones work.
    let (_, unused) = open(&d, false);
    let (addr2, code2) = open(&d, true);
    assert_eq!(addr2, addr, "the same listener");
    assert_eq!(page("", &cookie).status, 401);
    let r = tcp_request(&addr, "GET", &format!("/login?code={unused}"), &[], None);
    assert_eq!(r.status, 401, "codes given before the new token end");
    let r = tcp_request(
        &addr,
        "GET",
        "/v1/memories",
        &[("Authorization", &bearer)],
        None,
    );
    assert_eq!(r.status, 401);
    let t2 = token(&d);
    assert_ne!(t2, t);
    let r = tcp_request(
        &addr,
        "GET",
        "/v1/memories",
        &[("Authorization", &format!("Bearer {t2}"))],
        None,
    );
    assert_eq!(r.status, 200);
    let (cookie2, base2) = login(&addr, &code2);
    assert_ne!(base2, base);
    assert_eq!(
        tcp_request(&addr, "GET", &base2, &[("Cookie", &cookie2)], None).status,
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
    // checked by credentials), relative to its root.
    let r = crate::common::http::get(&d.socket(), "/", &[]);
    assert_eq!(r.status, 200);
    assert!(body(&r).contains("<base href=\"/\">"));
}

#[test]
fn memd_client_viewer_is_a_persons_only_through_a_browser_session() {
    let d = Daemon::start();
    let (addr, code) = open(&d, false);
    let (cookie, base) = login(&addr, &code);
    let origin = |id: i64| {
        let (v, _) = d.json(&["get", &id.to_string()]);
        let o = &v["memory"]["provenance"]["sources"][0];
        (
            o["source"].as_str().unwrap().to_string(),
            o["via"].as_str().unwrap().to_string(),
            v["memory"]["provenance"]["trust"]
                .as_str()
                .unwrap()
                .to_string(),
        )
    };
    let add = |path: &str, headers: &[(&str, &str)], text: &str| {
        let r = tcp_request(
            &addr,
            "POST",
            path,
            headers,
            Some(&json!({"content": text})),
        );
        assert_eq!(r.status, 201, "{}", body(&r));
        r.json()["id"].as_i64().unwrap()
    };
    let ns = ("Memd-Namespace", "default");
    let viewer = ("Memd-Client", "viewer");
    // Through the person's browser session: the person's, trusted high.
    let id = add(
        &format!("{base}v1/memories"),
        &[ns, ("Cookie", &cookie)],
        "the person wrote this in the viewer",
    );
    assert_eq!(origin(id), ("user".into(), "viewer".into(), "high".into()));
    // A program claiming to be the viewer, with the token or on the
    // socket: a program's.
    let bearer = format!("Bearer {}", token(&d));
    let id = add(
        "/v1/memories",
        &[ns, viewer, ("Authorization", &bearer)],
        "a program says it is the viewer",
    );
    assert_eq!(origin(id).0, "agent");
    assert_eq!(origin(id).1, "http");
    let r = crate::common::http::request(
        &d.socket(),
        "POST",
        "/v1/memories",
        &[ns, viewer],
        Some(&json!({"content": "a program on the socket says it is the viewer"})),
    );
    assert_eq!(r.status, 201);
    let id = r.json()["id"].as_i64().unwrap();
    assert_eq!(origin(id).0, "agent");
    assert_eq!(origin(id).1, "http");
    assert_ne!(origin(id).2, "high");
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
    let (a, code) = open(&d, false);
    assert_eq!(a, addr);
    let (cookie, base) = login(&addr, &code);
    let r = tcp_request(&addr, "GET", &base, &[("Cookie", &cookie)], None);
    assert_eq!(r.status, 200);
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
    let (addr, code) = open(&d, false);
    let (cookie, base) = login(&addr, &code);
    let get = |path: &str| {
        let path = format!("{base}{}", path.trim_start_matches('/'));
        let r = tcp_request(&addr, "GET", &path, &[("Cookie", &cookie)], None);
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
    for path in ["drift", "team", "assets/app.css", "assets/app.js"] {
        let r = tcp_request(
            &addr,
            "GET",
            &format!("{base}{path}"),
            &[("Cookie", &cookie)],
            None,
        );
        assert_eq!(r.status, 200, "{path}");
    }
    let r = tcp_request(
        &addr,
        "GET",
        &format!("{base}m/999999"),
        &[("Cookie", &cookie), ("Accept", "text/html")],
        None,
    );
    assert_eq!(r.status, 404);
    let _: Value = json!(null);
}

/// Sockets the process `pid` holds open.
fn sockets(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
        .filter(|e| {
            std::fs::read_link(e.path()).is_ok_and(|t| t.to_string_lossy().starts_with("socket:"))
        })
        .count()
}

/// Sets the open-file limit of process `pid` with the `prlimit` tool.
fn set_open_files(pid: u32, n: u64) -> bool {
    std::process::Command::new("prlimit")
        .args(["--pid", &pid.to_string(), &format!("--nofile={n}:{n}")])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn a_flood_of_idle_connections_and_half_sent_bodies_leaves_the_socket_serving() {
    if !crate::common::tool("prlimit", "the daemon's open-file limit is lowered")
        || !crate::common::require(
            crate::common::allow_open_files(4_096),
            "this test needs 4,096 open files (past the hard limit: root)",
        )
    {
        return;
    }
    let d = Daemon::with_config("[limits]\nframe_timeout_ms = 1500\nhandshake_timeout_ms = 4000\n");
    d.json(&[
        "--namespace",
        "web",
        "add",
        "the flood does not reach the socket",
    ]);
    let pid = d.child.as_ref().unwrap().id();
    // A daemon with 512 descriptors: without a bound, the flood below
    // takes them all and the socket refuses its clients.
    assert!(set_open_files(pid, 512));
    let (addr, code) = open(&d, false);
    let (cookie, base) = login(&addr, &code);
    let before = sockets(pid);
    let search = || {
        let (v, code) = d.json(&["--namespace", "web", "search", "flood"]);
        assert_eq!(code, 0, "the socket answers: {v}");
        assert_eq!(v["count"], 1, "{v}");
    };

    // 1,500 idle connections without a credential (the daemon has 512
    // descriptors; this process holds every connection of the flood).
    let idle: Vec<std::net::TcpStream> = (0..1_500)
        .map(|_| std::net::TcpStream::connect(&addr).unwrap())
        .collect();
    search();
    let held = sockets(pid).saturating_sub(before);
    assert!(
        held <= 64,
        "the viewer holds at most its share of descriptors: {held}"
    );
    // The person's browser still gets in: an idle stranger makes room.
    let r = tcp_request(&addr, "GET", &base, &[("Cookie", &cookie)], None);
    assert_eq!(r.status, 200, "{}", body(&r));

    // 1,024 half-sent bodies without a credential: refused at once, each
    // connection closed.
    let half = |headers: &str| {
        let mut s = std::net::TcpStream::connect(&addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
        let req = format!(
            "POST {base}v1/memories?namespace=web HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Type: \
             application/json\r\nContent-Length: 100\r\n\r\n{{\"content\": \"half"
        );
        let _ = s.write_all(req.as_bytes());
        s
    };
    let strangers: Vec<std::net::TcpStream> = (0..1_024).map(|_| half("")).collect();
    search();
    for s in strangers {
        let mut text = String::new();
        let _ = BufReader::new(s).read_to_string(&mut text);
        assert!(
            text.is_empty() || text.starts_with("HTTP/1.1 401"),
            "refused and closed: {text}"
        );
    }
    // Half-sent bodies with the person's cookie: held at most until their
    // deadline, at most the listener's share at once, then cut off.
    let started = std::time::Instant::now();
    let own: Vec<std::net::TcpStream> = (0..200)
        .map(|_| half(&format!("Cookie: {cookie}\r\n")))
        .collect();
    search();
    let mut cut = 0;
    for s in own {
        let mut text = String::new();
        let _ = BufReader::new(s).read_to_string(&mut text);
        if text.starts_with("HTTP/1.1 400") {
            assert!(text.contains("did not arrive whole"), "{text}");
            cut += 1;
        } else {
            assert!(text.is_empty(), "closed without an answer: {text}");
        }
    }
    assert!(cut >= 1, "a half-sent body is cut off at its deadline");
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "every connection ended: {:?}",
        started.elapsed()
    );
    drop(idle);
    search();
    let r = tcp_request(&addr, "GET", &base, &[("Cookie", &cookie)], None);
    assert_eq!(r.status, 200, "{}", body(&r));
    let (v, _) = d.json(&["--namespace", "web", "list"]);
    assert_eq!(v["count"], 1, "no half-sent body was stored: {v}");
    // A connection that sends nothing is closed after the head timeout
    // (4 s here), as is a keep-alive connection left idle.
    let started = std::time::Instant::now();
    let mut quiet = std::net::TcpStream::connect(&addr).unwrap();
    quiet
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut byte = [0u8; 1];
    let n = quiet.read(&mut byte);
    assert!(matches!(n, Ok(0) | Err(_)), "closed: {n:?}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(3_500) && waited < Duration::from_secs(15),
        "{waited:?}"
    );
}
