//! Bad bytes on the real socket: each gets its error frame (when one can be
//! sent) and closes only its own connection; a session connected all along
//! keeps working.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::common::Daemon;
use crate::common::wire::{
    assert_closed, expect_error_then_close, greeted, hello, raw, recv, send, witness_works,
};
use memd_client::proto::{self, ErrorCode, Frame, Request, Response};

#[tokio::test(flavor = "multi_thread")]
async fn bad_frames_close_only_their_connection() {
    let d = Daemon::start();
    let mut witness = d.client().await;
    witness_works(&mut witness, 0).await;

    // Garbage instead of a preamble (neither memd nor HTTP): closed.
    let mut s = UnixStream::connect(d.socket()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"HELO memd\r\n\r\n").unwrap();
    let mut pre = [0u8; proto::PREAMBLE_LEN];
    s.read_exact(&mut pre).unwrap();
    expect_error_then_close(&mut s, ErrorCode::MalformedFrame);
    witness_works(&mut witness, 1).await;

    // Garbage frame body after the handshake.
    let mut s = greeted(&d);
    s.write_all(&[0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff])
        .unwrap();
    expect_error_then_close(&mut s, ErrorCode::MalformedFrame);
    witness_works(&mut witness, 2).await;

    // A length prefix over the maximum.
    let mut s = greeted(&d);
    let too_big = (proto::MAX_FRAME_LEN as u32 + 1).to_be_bytes();
    s.write_all(&too_big).unwrap();
    expect_error_then_close(&mut s, ErrorCode::FrameTooLarge);
    witness_works(&mut witness, 3).await;

    // A zero-length frame.
    let mut s = greeted(&d);
    s.write_all(&[0, 0, 0, 0]).unwrap();
    expect_error_then_close(&mut s, ErrorCode::MalformedFrame);

    // A truncated frame: the header promises 100 bytes, 10 arrive, then EOF.
    let mut s = greeted(&d);
    s.write_all(&[0, 0, 0, 100]).unwrap();
    s.write_all(&[1; 10]).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    assert_closed(&mut s);
    witness_works(&mut witness, 4).await;

    // A frame of an unknown request kind: id 7, variant index 200.
    let mut s = greeted(&d);
    let body = [7u8, 200, 0, 0];
    s.write_all(&(body.len() as u32).to_be_bytes()).unwrap();
    s.write_all(&body).unwrap();
    let frame = expect_error_then_close(&mut s, ErrorCode::UnknownRequest);
    assert_eq!(frame.id, 7, "the error names the request it answers");
    witness_works(&mut witness, 5).await;

    // Invalid UTF-8 inside a string field: a Get is fine, an Add with
    // bytes 0xff in its content is malformed.
    let mut s = greeted(&d);
    let mut body = proto::encode(&Frame {
        id: 9,
        body: Request::Add(memd_client::AddRequest {
            content: "abcd".into(),
            ..Default::default()
        }),
    })
    .unwrap();
    let pos = body.windows(4).position(|w| w == b"abcd").unwrap();
    body[pos..pos + 4].copy_from_slice(&[0xff, 0xfe, 0xff, 0xfe]);
    s.write_all(&body).unwrap();
    expect_error_then_close(&mut s, ErrorCode::MalformedFrame);

    // A request before Hello.
    let mut s = raw(&d);
    send(&mut s, 3, Request::Status(proto::StatusRequest {}));
    expect_error_then_close(&mut s, ErrorCode::HandshakeRequired);

    // A second Hello is refused but the session stays open.
    let mut s = greeted(&d);
    send(&mut s, 2, hello());
    match recv(&mut s).unwrap().body {
        Response::Error(e) => assert_eq!(e.code, ErrorCode::InvalidInput),
        other => panic!("{other:?}"),
    }
    send(&mut s, 3, Request::Status(proto::StatusRequest {}));
    assert!(matches!(recv(&mut s).unwrap().body, Response::Status(_)));

    witness_works(&mut witness, 6).await;
    let status = witness.status().await.unwrap();
    assert_eq!(status["counts"]["memories"], 7);
    assert!(d.log().contains("malformed frame"), "{}", d.log());
}

/// A stand-in peer on `sock` for one client: it answers the client's
/// preamble with protocol `version`, then each request frame with the next
/// of `answers`; the CLI is run against it (`list`, JSON). Returns the
/// preamble version the client sent, the requests it got, and the output.
fn cli_against_peer(
    sock: &std::path::Path,
    version: u32,
    answers: Vec<Response>,
) -> (u32, Vec<Request>, std::process::Output) {
    let listener = std::os::unix::net::UnixListener::bind(sock).unwrap();
    let peer = std::thread::spawn(move || {
        let (mut c, _) = listener.accept().unwrap();
        let mut theirs = [0u8; proto::PREAMBLE_LEN];
        c.read_exact(&mut theirs).unwrap();
        let mut pre = proto::preamble();
        pre[4..].copy_from_slice(&version.to_be_bytes());
        c.write_all(&pre).unwrap();
        let mut got = Vec::new();
        for body in answers {
            let mut header = [0u8; 4];
            c.read_exact(&mut header).unwrap();
            let mut frame = vec![0u8; proto::frame_len(header).unwrap()];
            c.read_exact(&mut frame).unwrap();
            let req: Frame<Request> = proto::decode(&frame).unwrap();
            c.write_all(&proto::encode(&Frame { id: req.id, body }).unwrap())
                .unwrap();
            got.push(req.body);
        }
        (proto::parse_preamble(&theirs).unwrap(), got)
    });
    let out = crate::common::memd_command(sock.parent().unwrap())
        .args([
            "--socket",
            sock.to_str().unwrap(),
            "--no-autostart",
            "--json",
            "list",
        ])
        .output()
        .unwrap();
    let (sent, got) = peer.join().unwrap();
    (sent, got, out)
}

#[tokio::test]
async fn protocol_mismatch_is_reported_with_both_versions() {
    let d = Daemon::start();
    let mut s = UnixStream::connect(d.socket()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut pre = proto::preamble();
    pre[4..].copy_from_slice(&99u32.to_be_bytes());
    s.write_all(&pre).unwrap();
    let mut theirs = [0u8; proto::PREAMBLE_LEN];
    s.read_exact(&mut theirs).unwrap();
    assert_eq!(
        proto::parse_preamble(&theirs).unwrap(),
        proto::PROTOCOL_VERSION
    );
    // No frames in an unknown version: just the close.
    assert_closed(&mut s);

    // The CLI against a peer that speaks protocol 99 (a newer daemon, as
    // far as this client can tell): exit 5, both versions and the fix.
    let (sent, _, out) = cli_against_peer(&d.dir.path().join("v99.sock"), 99, Vec::new());
    assert_eq!(sent, proto::PROTOCOL_VERSION);
    assert_eq!(out.status.code(), Some(5), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["code"], "protocol_mismatch", "{v}");
    let msg = v["error"].as_str().unwrap();
    let both = format!(
        "speaks memd protocol {}, the daemon speaks 99",
        proto::PROTOCOL_VERSION
    );
    assert!(msg.contains(&both) && msg.contains("memd stop"), "{msg}");
}

#[tokio::test]
async fn a_stalled_half_frame_does_not_block_others() {
    let d = Daemon::start();
    let mut stalled = greeted(&d);
    stalled.write_all(&[0, 0, 1, 0, 1, 2, 3]).unwrap();
    let mut witness = d.client().await;
    witness_works(&mut witness, 0).await;
    let status = witness.status().await.unwrap();
    assert_eq!(status["sessions"], 2);
}

/// A daemon of another memd version that speaks the same protocol: the
/// command works and says on stderr which versions differ and the fix.
#[test]
fn another_daemon_version_is_named_on_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let answers = vec![
        Response::Welcome(proto::Welcome {
            session_id: "ab".repeat(16),
            generation: 1,
            server_version: "0.0.1".into(),
            protocol: proto::PROTOCOL_VERSION,
        }),
        Response::Memories(proto::MemoryList {
            memories: Vec::new(),
            generation: 1,
        }),
    ];
    let (_, got, out) = cli_against_peer(
        &dir.path().join("old.sock"),
        proto::PROTOCOL_VERSION,
        answers,
    );
    assert!(
        matches!(got[..], [Request::Hello(_), Request::List(_)]),
        "{got:?}"
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["count"], 0, "{v}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("the daemon runs memd 0.0.1, this client is memd ")
            && err.contains("memd stop"),
        "{err}"
    );
}
