//! Resource limits on the real daemon: too many connections, a client that
//! stalls mid-frame or never says Hello, a client that never reads its
//! responses, and a thousand idle sessions. Each is refused or disconnected
//! cleanly while a witness session keeps working.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use crate::common::Daemon;
use crate::common::wire::{greeted, raw, recv, send, witness_works};
use memd_client::proto::{self, ErrorCode, Frame, Request, Response};

/// Short timeouts so each limit shows within a second.
const FAST: &str =
    "[limits]\nhandshake_timeout_ms = 300\nframe_timeout_ms = 300\nwrite_timeout_ms = 300\n";

/// Reads until the daemon closes; fails if it is still open after `within`.
fn wait_closed(s: &mut UnixStream, within: Duration) -> Vec<u8> {
    s.set_read_timeout(Some(within)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    let deadline = Instant::now() + within;
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(e) => panic!("connection still open after {within:?}: {e}"),
        }
        assert!(
            Instant::now() < deadline,
            "connection still open after {within:?}"
        );
    }
}

/// The response frames in `bytes`, in order.
fn frames(mut bytes: &[u8]) -> Vec<Frame<Response>> {
    let mut out = Vec::new();
    while bytes.len() >= proto::HEADER_LEN {
        let len = proto::frame_len([bytes[0], bytes[1], bytes[2], bytes[3]]).unwrap();
        if bytes.len() < proto::HEADER_LEN + len {
            break;
        }
        out.push(proto::decode(&bytes[proto::HEADER_LEN..proto::HEADER_LEN + len]).unwrap());
        bytes = &bytes[proto::HEADER_LEN + len..];
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_past_the_limit_are_refused_cleanly() {
    let d = Daemon::with_config("[limits]\nmax_connections = 3\n");
    let mut sessions = Vec::new();
    for _ in 0..3 {
        sessions.push(d.client().await);
    }
    // The fourth gets a `busy` error with the limit's name, not a hang.
    let Err(err) = memd_client::Client::connect(d.opts()).await else {
        panic!("a fourth connection is refused");
    };
    let body = err.body();
    assert_eq!(body.code, ErrorCode::Busy, "{err}");
    assert!(err.to_string().contains("max_connections"), "{err}");
    // The CLI says the same and exits non-zero.
    let out = d.cli(&["--json", "status"]);
    assert_ne!(out.code, 0);
    assert_eq!(out.json()["code"], "busy", "{}", out.stdout);

    // Everyone inside keeps working; a freed place is taken again.
    for (i, s) in sessions.iter_mut().enumerate() {
        witness_works(s, i).await;
    }
    drop(sessions.pop());
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut again = loop {
        match memd_client::Client::connect(d.opts()).await {
            Ok(c) => break c,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Err(e) => panic!("the freed place was not reused: {e}"),
        }
    };
    witness_works(&mut again, 9).await;
    assert!(d.log().contains("connection limit reached"), "{}", d.log());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_half_frame_that_stalls_is_dropped_after_the_frame_timeout() {
    let d = Daemon::with_config(FAST);
    let mut witness = d.client().await;
    let mut stalled = greeted(&d);
    // The header promises 256 bytes; 3 arrive, then nothing.
    stalled.write_all(&[0, 0, 1, 0, 1, 2, 3]).unwrap();
    let started = Instant::now();
    let rest = wait_closed(&mut stalled, Duration::from_secs(10));
    assert!(started.elapsed() >= Duration::from_millis(250));
    let got = frames(&rest);
    assert_eq!(got.len(), 1, "one error frame, then the close");
    match &got[0].body {
        Response::Error(e) => {
            assert_eq!(e.code, ErrorCode::MalformedFrame);
            assert!(e.message.contains("frame_timeout_ms"), "{}", e.message);
        }
        other => panic!("{other:?}"),
    }
    witness_works(&mut witness, 0).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_that_never_says_hello_is_closed() {
    let d = Daemon::with_config(FAST);
    let mut silent = raw(&d);
    let rest = wait_closed(&mut silent, Duration::from_secs(10));
    assert!(rest.is_empty(), "no frame for a peer that never spoke");
    let mut witness = d.client().await;
    witness_works(&mut witness, 0).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_that_never_reads_is_disconnected() {
    let d = Daemon::with_config(FAST);
    let mut witness = d.client().await;
    // A 10 KB memory makes every `get` answer about 10 KB.
    let id = witness
        .add(memd_client::AddRequest {
            content: format!("big {}", "x".repeat(10_000)),
            ..Default::default()
        })
        .await
        .unwrap()
        .id
        .unwrap();
    let mut greedy = greeted(&d);
    // 2,000 requests (about 50 KB, which the socket buffers) ask for about
    // 20 MB of answers, far more than the socket buffers hold; this client
    // reads none of them.
    let mut batch = Vec::new();
    for n in 0..2_000u64 {
        let req = Request::Get(proto::GetRequest {
            id,
            include_inactive: false,
        });
        batch.extend(
            proto::encode(&Frame {
                id: n + 10,
                body: req,
            })
            .unwrap(),
        );
    }
    greedy.write_all(&batch).unwrap();
    // The daemon blocks on the full socket, gives up after the write
    // timeout and closes; meanwhile the witness is served.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !d.log().contains("does not read its responses") {
        assert!(
            Instant::now() < deadline,
            "never disconnected:\n{}",
            d.log()
        );
        witness_works(&mut witness, 1).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let got = wait_closed(&mut greedy, Duration::from_secs(10));
    let answered = frames(&got).len();
    assert!(
        answered < 2_000,
        "the daemon stopped answering a client that does not read ({answered} answers)"
    );
    witness_works(&mut witness, 2).await;
    let status = witness.status().await.unwrap();
    assert_eq!(status["sessions"], 1, "{status}");
}

/// The daemon's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_thousand_idle_sessions() {
    const SESSIONS: usize = 1_000;
    if !crate::common::allow_open_files(4_096) {
        assert!(
            std::env::var_os("MEMD_REQUIRE_TOOLS").is_none(),
            "MEMD_REQUIRE_TOOLS is set: this test must run"
        );
        eprintln!("SKIPPED: a_thousand_idle_sessions needs 4,096 open files");
        return;
    }
    let d = Daemon::start();
    let pid = d.child.as_ref().unwrap().id();
    let mut witness = d.client().await;
    witness_works(&mut witness, 0).await;
    let before = rss_kib(pid);
    let mut idle = Vec::with_capacity(SESSIONS);
    for _ in 0..SESSIONS {
        idle.push(greeted(&d));
    }
    let status = witness.status().await.unwrap();
    assert_eq!(status["sessions"], SESSIONS as u64 + 1, "{status}");
    let after = rss_kib(pid);
    let per_session = (after.saturating_sub(before)) as f64 / SESSIONS as f64;
    eprintln!(
        "{SESSIONS} idle sessions: daemon RSS {before} KiB -> {after} KiB, {per_session:.1} KiB per session"
    );
    assert!(
        per_session < 256.0,
        "an idle session should cost little memory, got {per_session:.1} KiB"
    );
    // Every idle session still answers, and so does a new one.
    for (n, s) in idle.iter_mut().enumerate().step_by(97) {
        send(s, 5, Request::Status(proto::StatusRequest {}));
        match recv(s).unwrap().body {
            Response::Status(_) => {}
            other => panic!("session {n}: {other:?}"),
        }
    }
    witness_works(&mut witness, 1).await;
    let mut late = d.client().await;
    witness_works(&mut late, 2).await;
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = witness.status().await.unwrap();
        if status["sessions"] == 2 {
            break;
        }
        assert!(Instant::now() < deadline, "sessions not released: {status}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
