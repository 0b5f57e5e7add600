//! The HTTP API on the daemon's own socket, driven as curl or another
//! language's client drives it: the resources, the drift guard as ETag and
//! If-Match, namespaces and sessions, every kind of bad input, the event
//! stream, and the binary protocol on the same socket at the same time.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::Daemon;
use crate::common::http::{Reply, get, raw, read_reply, request};

const NS: (&str, &str) = ("Memd-Namespace", "web");

fn create(d: &Daemon, text: &str) -> i64 {
    let r = request(
        &d.socket(),
        "POST",
        "/v1/memories",
        &[NS],
        Some(&json!({"content": text, "tags": ["http"]})),
    );
    assert_eq!(r.status, 201, "{}", String::from_utf8_lossy(&r.body));
    r.json()["id"].as_i64().unwrap()
}

fn etag(r: &Reply) -> String {
    r.header("etag").expect("an ETag").to_string()
}

#[test]
fn the_socket_serves_http_and_the_binary_protocol_side_by_side() {
    let d = Daemon::start();
    let id = create(&d, "the build uses make");
    let r = request(
        &d.socket(),
        "POST",
        "/v1/memories",
        &[NS],
        Some(&json!({"content": "the build uses make"})),
    );
    assert_eq!(r.status, 200, "a merged add is not a new resource");
    assert_eq!(r.json()["deduped"], true);
    // The CLI (binary protocol) sees what HTTP stored, and the other way.
    let (v, code) = d.json(&["--namespace", "web", "get", &id.to_string()]);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["memory"]["content"], "the build uses make");
    d.json(&["--namespace", "web", "add", "the tests run with nextest"]);
    let r = get(&d.socket(), "/v1/memories?namespace=web", &[]);
    assert_eq!(r.status, 200);
    let v = r.json();
    let contents: Vec<&str> = v["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(
        contents,
        ["the tests run with nextest", "the build uses make"],
        "newest first"
    );
    // One memory: the CLI's object, its rev as ETag.
    let r = get(&d.socket(), &format!("/v1/memories/{id}"), &[]);
    assert_eq!(r.status, 200);
    assert_eq!(etag(&r), "\"1\"");
    let (cli, _) = d.json(&["--namespace", "web", "get", &id.to_string()]);
    let mut http = r.json()["memory"].clone();
    let mut cli = cli["memory"].clone();
    // Access tracking moves with every read.
    for m in [&mut http, &mut cli] {
        for k in ["use_count", "last_used_at", "access_score"] {
            m.as_object_mut().unwrap().remove(k);
        }
    }
    assert_eq!(http, cli, "one memory shape for the CLI and HTTP");
    // Search with q= and mode=.
    let r = get(&d.socket(), "/v1/memories?q=nextest&mode=lexical", &[]);
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["mode"], "lexical");
    assert_eq!(v["hits"][0]["content"], "the tests run with nextest");
    assert!(v["hits"][0]["score"].as_f64().unwrap() > 0.0);
    // Status and the socket path.
    let r = get(&d.socket(), "/v1/status", &[]);
    assert_eq!(r.json()["counts"]["memories"], 2);
    let out = d.cli(&["socket"]);
    assert_eq!(out.stdout.trim(), d.socket().display().to_string());
}

#[test]
fn if_match_is_the_drift_guard_and_a_stale_one_gets_412_with_the_row_now() {
    let d = Daemon::start();
    let id = create(&d, "the cache runs on port 6379");
    let path = format!("/v1/memories/{id}");
    let read = get(&d.socket(), &path, &[]);
    let seen = etag(&read);
    // Without If-Match and without a session: 428.
    let patch = json!({"content": "the cache runs on port 6380"});
    let r = request(&d.socket(), "PATCH", &path, &[], Some(&patch));
    assert_eq!(r.status, 428, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    // Another writer (the CLI, as another session) changes it meanwhile.
    let (v, code) = d.json(&[
        "--namespace",
        "web",
        "--agent",
        "deployer",
        "update",
        &id.to_string(),
        "--content",
        "the cache runs on port 7000",
        "--expect-rev",
        "1",
    ]);
    assert_eq!(code, 0, "{v}");
    // The change made on the old read is refused: 412, nothing written,
    // the row as it is now and who changed it.
    let r = request(
        &d.socket(),
        "PATCH",
        &path,
        &[("If-Match", &seen)],
        Some(&patch),
    );
    assert_eq!(r.status, 412, "{}", String::from_utf8_lossy(&r.body));
    let p = r.json();
    assert_eq!(p["code"], "drift");
    assert_eq!(p["status"], 412);
    assert_eq!(p["current"]["content"], "the cache runs on port 7000");
    assert_eq!(p["changed_by"]["agent"], "deployer");
    assert_eq!(p["rev_seen"], 1);
    assert_eq!(p["rev_now"], 2);
    let r = request(&d.socket(), "DELETE", &path, &[("If-Match", &seen)], None);
    assert_eq!(r.status, 412, "a stale forget is refused too");
    // Read again: the new ETag passes.
    let fresh = etag(&get(&d.socket(), &path, &[]));
    assert_eq!(fresh, "\"2\"");
    let r = request(
        &d.socket(),
        "PATCH",
        &path,
        &[("If-Match", &fresh)],
        Some(&patch),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(etag(&r), "\"3\"");
    assert_eq!(r.json()["memory"]["content"], "the cache runs on port 6380");
    // A named session: its reads protect its writes (no If-Match needed).
    let s = [NS, ("Memd-Session", "editor"), ("Memd-Agent", "viewer")];
    let r = get(&d.socket(), &path, &s);
    assert_eq!(r.status, 200);
    let r = request(
        &d.socket(),
        "PATCH",
        &path,
        &s,
        Some(&json!({"tags": ["cache", "ports"]})),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    d.json(&[
        "--namespace",
        "web",
        "update",
        &id.to_string(),
        "--tier",
        "1",
        "--expect-rev",
        "4",
    ]);
    let r = request(&d.socket(), "DELETE", &path, &s, None);
    assert_eq!(r.status, 412, "the session read rev 4; the row moved to 5");
    let r = get(&d.socket(), &path, &s);
    assert_eq!(r.status, 200);
    let r = request(&d.socket(), "DELETE", &path, &s, None);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(get(&d.socket(), &path, &[]).status, 404);
}

#[test]
fn if_match_compares_strongly_and_reads_every_tag() {
    let d = Daemon::start();
    let id = create(&d, "the queue holds 100 jobs");
    let path = format!("/v1/memories/{id}");
    let patch = |headers: &[(&str, &str)], text: &str| {
        request(
            &d.socket(),
            "PATCH",
            &path,
            headers,
            Some(&json!({ "content": text })),
        )
    };
    // A weak tag never matches, even of the version the memory is at:
    // 412, nothing written, the memory as it is now.
    let r = patch(&[("If-Match", "W/\"1\"")], "the queue holds 200 jobs");
    assert_eq!(r.status, 412, "{}", String::from_utf8_lossy(&r.body));
    let p = r.json();
    assert_eq!(p["code"], "precondition_failed");
    assert_eq!(p["current"]["content"], "the queue holds 100 jobs");
    assert_eq!(p["rev_now"], 1);
    // Repeated lines and lists: every tag counts.
    let r = patch(
        &[("If-Match", "W/\"7\""), ("If-Match", "\"9\", \"1\"")],
        "the queue holds 300 jobs",
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(etag(&r), "\"2\"");
    // A list none of whose versions the memory is at: the row rule's own
    // refusal, with who changed it.
    let r = patch(&[("If-Match", "\"1\", \"5\"")], "the queue holds 400 jobs");
    assert_eq!(r.status, 412, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["code"], "drift");
    assert_eq!(r.json()["current"]["content"], "the queue holds 300 jobs");
    let r = request(
        &d.socket(),
        "DELETE",
        &path,
        &[("If-Match", "W/\"2\"")],
        None,
    );
    assert_eq!(r.status, 412);
    let r = patch(&[("If-Match", "*, \"2\"")], "x");
    assert_eq!(r.status, 400, "`*` stands alone");
    let (v, _) = d.json(&["--namespace", "web", "get", &id.to_string()]);
    assert_eq!(v["memory"]["content"], "the queue holds 300 jobs");
}

#[test]
fn a_made_up_session_does_not_skip_the_precondition() {
    let d = Daemon::start();
    let id = create(&d, "the deploy window is friday");
    let path = format!("/v1/memories/{id}");
    // A session nobody opened has read nothing: 428, as without one.
    let made_up = [NS, ("Memd-Session", "never-used-4711")];
    let r = request(
        &d.socket(),
        "PATCH",
        &path,
        &made_up,
        Some(&json!({"content": "the deploy window is monday"})),
    );
    assert_eq!(r.status, 428, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["code"], "precondition_required");
    assert!(
        r.json()["detail"]
            .as_str()
            .unwrap()
            .contains("never-used-4711"),
        "{}",
        r.json()
    );
    let r = request(&d.socket(), "DELETE", &path, &made_up, None);
    assert_eq!(r.status, 428);
    let r = request(
        &d.socket(),
        "POST",
        &format!("{path}/task"),
        &made_up,
        Some(&json!({"status": "in_progress"})),
    );
    assert_eq!(r.status, 428);
    let (v, _) = d.json(&["--namespace", "web", "get", &id.to_string()]);
    assert_eq!(v["memory"]["content"], "the deploy window is friday");
    // Once the session read the memory, its read protects the change.
    assert_eq!(get(&d.socket(), &path, &made_up).status, 200);
    let r = request(
        &d.socket(),
        "PATCH",
        &path,
        &made_up,
        Some(&json!({"content": "the deploy window is monday"})),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
}

#[test]
fn namespaces_sessions_and_history_as_the_contract_says() {
    let d = Daemon::start();
    // A create needs a namespace.
    let r = request(
        &d.socket(),
        "POST",
        "/v1/memories",
        &[],
        Some(&json!({"content": "nowhere"})),
    );
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["code"], "invalid_input");
    d.json(&["--namespace", "alpha", "add", "alpha note"]);
    d.json(&[
        "--namespace",
        "beta",
        "--agent",
        "bot",
        "add",
        "beta note",
        "--scope",
        "agent",
    ]);
    // Reads without a namespace cover every one (and every agent's rows).
    let v = get(&d.socket(), "/v1/memories", &[]).json();
    let mut seen: Vec<(String, String)> = v["memories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["namespace"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("alpha".to_string(), "alpha note".to_string()),
            ("beta".to_string(), "beta note".to_string())
        ]
    );
    // Named namespace: only its rows; an agent sees its own agent rows.
    let v = get(&d.socket(), "/v1/memories", &[("Memd-Namespace", "alpha")]).json();
    assert_eq!(v["count"], 1);
    let v = get(
        &d.socket(),
        "/v1/memories",
        &[("Memd-Namespace", "beta"), ("Memd-Agent", "other")],
    )
    .json();
    assert_eq!(
        v["count"], 0,
        "another agent's agent-scope row is not shown to it"
    );
    // A change by id acts on the memory wherever it lives.
    let id = v["memories"].as_array().map_or(0, Vec::len) as i64;
    let _ = id;
    let alpha = get(&d.socket(), "/v1/memories?namespace=alpha", &[]).json()["memories"][0]["id"]
        .as_i64()
        .unwrap();
    let path = format!("/v1/memories/{alpha}");
    let tag = etag(&get(&d.socket(), &path, &[]));
    let r = request(
        &d.socket(),
        "PATCH",
        &path,
        &[("If-Match", &tag)],
        Some(&json!({"subject": "alpha"})),
    );
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.json()["memory"]["namespace"], "alpha");
    // History.
    let v = get(&d.socket(), &format!("{path}/history"), &[]).json();
    assert_eq!(v["revisions"].as_array().unwrap().len(), 1);
    // Sessions: the block a named session was given, byte for byte.
    let out = d.cli(&["--namespace", "alpha", "--session", "work", "inject"]);
    assert_eq!(out.code, 0, "{out:?}");
    let v = get(&d.socket(), "/v1/sessions", &[]).json();
    assert_eq!(v["sessions"][0]["name"], "work");
    assert_eq!(v["sessions"][0]["namespace"], "alpha");
    let v = get(&d.socket(), "/v1/sessions/alpha/work", &[]).json();
    let inject = d
        .json(&["--namespace", "alpha", "--session", "work", "inject"])
        .0;
    assert_eq!(v["block"]["text"], inject["block"], "{v}");
    assert_eq!(v["block"]["hash"], inject["hash"]);
    assert_eq!(v["block"]["memories"], json!([{"id": alpha, "rev": 2}]));
    assert_eq!(
        get(&d.socket(), "/v1/sessions/alpha/nobody", &[]).status,
        404
    );
    // A namespace with a slash is one path segment, percent-encoded.
    d.cli(&[
        "--namespace",
        "github.com/acme/api",
        "--session",
        "s1",
        "inject",
    ]);
    let r = get(&d.socket(), "/v1/sessions/github.com%2Facme%2Fapi/s1", &[]);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    // Drift and team.
    let v = get(&d.socket(), "/v1/drift", &[]).json();
    assert_eq!(v["policy"], "standard");
    assert_eq!(
        get(&d.socket(), "/v1/team", &[]).json()["configured"],
        false
    );
}

#[test]
fn every_route_of_the_openapi_document_is_routed() {
    let d = Daemon::start();
    let id = create(&d, "a memory for the routes");
    d.cli(&["--namespace", "web", "--session", "s", "inject"]);
    let doc = get(&d.socket(), "/v1/openapi.json", &[]).json();
    assert_eq!(doc["openapi"], "3.1.0");
    let mut checked = 0;
    for (path, item) in doc["paths"].as_object().unwrap() {
        let concrete = path
            .replace("{id}", &id.to_string())
            .replace("{namespace}", "web")
            .replace("{name}", "s");
        let mut methods: Vec<&String> = item.as_object().unwrap().keys().collect();
        // The delete last: the other methods still find the memory.
        methods.sort_by_key(|m| *m == "delete");
        for method in methods {
            if path == "/v1/events" {
                continue;
            }
            let method = method.to_uppercase();
            let body = matches!(method.as_str(), "POST" | "PATCH").then(|| json!({"content": "x"}));
            let r = request(
                &d.socket(),
                &method,
                &concrete,
                &[NS, ("If-Match", "*")],
                body.as_ref(),
            );
            let unrouted = r.status == 405
                || (r.status == 404
                    && r.json()["detail"]
                        .as_str()
                        .is_some_and(|d| d.starts_with("no such resource")));
            assert!(
                !unrouted,
                "{method} {concrete}: {} {}",
                r.status,
                String::from_utf8_lossy(&r.body)
            );
            checked += 1;
        }
    }
    assert!(checked >= 12, "{checked}");
    // And what is not documented is not routed.
    assert_eq!(get(&d.socket(), "/v1/nothing", &[]).status, 404);
    assert_eq!(
        request(&d.socket(), "PUT", "/v1/status", &[], None).status,
        405
    );
}

#[test]
fn bad_input_gets_a_clear_4xx_and_the_daemon_goes_on() {
    let d = Daemon::start();
    let id = create(&d, "still here");
    let s = d.socket();
    let post = |body: &[u8], content_type: &str| {
        let mut req = format!(
            "POST /v1/memories HTTP/1.1\r\nHost: memd\r\nConnection: close\r\nMemd-Namespace: web\r\n\
             Content-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        req.extend_from_slice(body);
        raw(&s, &req)
    };
    let cases: Vec<(&str, Reply, u16)> = vec![
        ("malformed JSON", post(b"{\"content\": ", "application/json"), 400),
        ("a wrong content type", post(b"content=x", "application/x-www-form-urlencoded"), 415),
        ("an unknown field", post(br#"{"content": "x", "colour": "red"}"#, "application/json"), 400),
        ("invalid UTF-8", post(b"{\"content\": \"\xff\xfe\"}", "application/json"), 400),
        ("a body over the frame limit", post(&vec![b' '; 9 << 20], "application/json"), 413),
        ("content over the gate's limit", post(format!("{{\"content\": \"{}\"}}", "x".repeat(20_000)).as_bytes(), "application/json"), 422),
        ("a non-numeric id", get(&s, "/v1/memories/abc", &[]), 400),
        ("an unknown query parameter", get(&s, "/v1/memories?colour=red", &[]), 400),
        ("a bad number", get(&s, "/v1/memories?limit=many", &[]), 400),
        ("FTS operators as text", get(&s, "/v1/memories?q=%22still%20AND%20(", &[]), 200),
        ("an unknown memory", get(&s, "/v1/memories/999999", &[]), 404),
        ("a header that is not UTF-8", raw(&s, b"GET /v1/memories HTTP/1.1\r\nHost: memd\r\nConnection: close\r\nMemd-Namespace: \xff\r\n\r\n"), 400),
    ];
    for (what, r, want) in &cases {
        assert_eq!(
            r.status,
            *want,
            "{what}: {}",
            String::from_utf8_lossy(&r.body)
        );
        if *want >= 400 {
            assert!(
                r.header("content-type")
                    .is_some_and(|c| c.starts_with("application/problem+json")),
                "{what}: {:?}",
                r.headers
            );
            let p = r.json();
            assert!(
                p["code"].is_string() && p["detail"].is_string(),
                "{what}: {p}"
            );
        }
    }
    // A huge query string: refused, connection closed, nothing else hurt.
    let huge = format!(
        "GET /v1/memories?q={} HTTP/1.1\r\nHost: memd\r\n\r\n",
        "a".repeat(200_000)
    );
    let mut c = UnixStream::connect(&s).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = c.write_all(huge.as_bytes());
    let mut answer = Vec::new();
    let _ = c.read_to_end(&mut answer);
    let text = String::from_utf8_lossy(&answer);
    assert!(
        text.is_empty() || text.starts_with("HTTP/1.1 4"),
        "a huge request line gets a 4xx or a close: {text}"
    );
    // The daemon and other sessions go on.
    let r = get(&s, &format!("/v1/memories/{id}"), &[]);
    assert_eq!(r.status, 200);
    assert_eq!(d.json(&["--namespace", "web", "list"]).1, 0);
}

#[test]
fn slow_and_silent_clients_are_dropped_after_the_stated_timeouts() {
    let d = Daemon::with_config("[limits]\nhandshake_timeout_ms = 500\nwrite_timeout_ms = 500\n");
    let s = d.socket();
    // A header sent a byte at a time that stops: dropped after the
    // handshake timeout.
    let mut slow = UnixStream::connect(&s).unwrap();
    for b in b"GET /v1/status HTTP/1.1\r\nHost: me" {
        slow.write_all(&[*b]).unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = slow.read_to_end(&mut rest);
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "a stalled header is dropped after the timeout ({:?})",
        started.elapsed()
    );
    // A client that stops reading (an event stream it never consumes, or
    // a big answer): a write that cannot go out for the write timeout ends
    // the connection, and others are served meanwhile.
    for i in 0..400 {
        let text = format!("{i} {}", "y".repeat(4_000));
        let r = request(
            &s,
            "POST",
            "/v1/memories",
            &[NS],
            Some(&json!({"content": text})),
        );
        assert_eq!(r.status, 201);
    }
    let mut silent = UnixStream::connect(&s).unwrap();
    silent
        .write_all(b"GET /v1/memories?limit=1000 HTTP/1.1\r\nHost: memd\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(1_500));
    assert_eq!(get(&s, "/v1/status", &[]).status, 200);
    silent
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let mut got = Vec::new();
    let read = silent.read_to_end(&mut got);
    assert!(read.is_ok(), "the daemon closed the connection: {read:?}");
    let text = String::from_utf8_lossy(&got);
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        body.len() < len,
        "the answer was cut off ({} of {len} bytes): the stalled write ended it",
        body.len()
    );
}

/// Reads SSE lines until an event named `name` arrives; its data.
fn next_event(r: &mut impl BufRead, name: &str) -> Value {
    let mut current = String::new();
    loop {
        let mut line = String::new();
        let n = r.read_line(&mut line).unwrap();
        assert!(n > 0, "the stream ended before a `{name}` event");
        let line = line.trim_end();
        if let Some(e) = line
            .strip_prefix("event: ")
            .or_else(|| line.strip_prefix("event:"))
        {
            current = e.trim().to_string();
        } else if let Some(data) = line
            .strip_prefix("data: ")
            .or_else(|| line.strip_prefix("data:"))
            && current == name
        {
            return serde_json::from_str(data.trim()).unwrap();
        }
    }
}

#[test]
fn the_event_stream_tells_each_change_and_ends_at_once_on_sigterm() {
    let mut d = Daemon::start();
    let mut c = UnixStream::connect(d.socket()).unwrap();
    c.write_all(b"GET /v1/events HTTP/1.1\r\nHost: memd\r\n\r\n")
        .unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut r = BufReader::new(c);
    let mut status = String::new();
    r.read_line(&mut status).unwrap();
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let start = next_event(&mut r, "change")["generation"].as_u64().unwrap();
    // A change made with the CLI arrives.
    d.json(&["add", "seen by the stream"]);
    let g = next_event(&mut r, "change")["generation"].as_u64().unwrap();
    assert!(g > start);
    // SIGTERM: the stream ends at once and the daemon exits.
    let started = Instant::now();
    let exit = d.terminate();
    assert!(exit.success(), "{exit}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "an open event stream held the shutdown for {:?}",
        started.elapsed()
    );
    let mut rest = Vec::new();
    let _ = r.read_to_end(&mut rest);
}

#[test]
fn keep_alive_serves_many_requests_on_one_connection() {
    let d = Daemon::start();
    create(&d, "kept alive");
    let c = UnixStream::connect(d.socket()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut w = c.try_clone().unwrap();
    let mut r = BufReader::new(c);
    for _ in 0..5 {
        w.write_all(b"GET /v1/memories?namespace=web HTTP/1.1\r\nHost: memd\r\n\r\n")
            .unwrap();
        let reply = read_reply(&mut r);
        assert_eq!(reply.status, 200);
        assert_eq!(reply.json()["count"], 1);
    }
}
