//! Raw frames on the real socket, for tests that send what the client
//! library never would.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::Duration;

use memd_client::proto::{self, ErrorCode, Frame, Request, Response};

use super::Daemon;

/// A raw connection that has exchanged preambles.
pub fn raw(d: &Daemon) -> UnixStream {
    let mut s = UnixStream::connect(d.socket()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&proto::preamble()).unwrap();
    let mut pre = [0u8; proto::PREAMBLE_LEN];
    s.read_exact(&mut pre).unwrap();
    assert_eq!(pre, proto::preamble());
    s
}

pub fn hello() -> Request {
    Request::Hello(proto::Hello {
        protocol: proto::PROTOCOL_VERSION,
        client_version: "test".into(),
        agent_id: "raw".into(),
        namespace: "default".into(),
        policy: None,
        budget: None,
        seen_generation: None,
        session: None,
        hold_block: false,
        previous_namespaces: Vec::new(),
    })
}

pub fn send(s: &mut UnixStream, id: u64, req: Request) {
    s.write_all(&proto::encode(&Frame { id, body: req }).unwrap())
        .unwrap();
}

/// Reads one response frame; `None` at end of stream.
pub fn recv(s: &mut UnixStream) -> Option<Frame<Response>> {
    let mut header = [0u8; 4];
    if s.read_exact(&mut header).is_err() {
        return None;
    }
    let len = proto::frame_len(header).unwrap();
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    Some(proto::decode(&body).unwrap())
}

pub fn greeted(d: &Daemon) -> UnixStream {
    let mut s = raw(d);
    send(&mut s, 1, hello());
    match recv(&mut s).unwrap().body {
        Response::Welcome(_) => s,
        other => panic!("{other:?}"),
    }
}

/// Expects an error frame with `code`, then the end of the stream.
pub fn expect_error_then_close(s: &mut UnixStream, code: ErrorCode) -> Frame<Response> {
    let frame = recv(s).expect("an error frame");
    match &frame.body {
        Response::Error(e) => assert_eq!(e.code, code, "{e:?}"),
        other => panic!("expected {code:?}, got {other:?}"),
    }
    assert_closed(s);
    frame
}

/// The daemon closed the connection (a reset counts: it closed with our
/// unread bytes in its buffer).
pub fn assert_closed(s: &mut UnixStream) {
    let mut rest = Vec::new();
    match s.read_to_end(&mut rest) {
        Ok(_) => assert!(rest.is_empty(), "connection should be closed"),
        Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::ConnectionReset, "{e}"),
    }
}

/// An add through `client` succeeds: the daemon still serves others.
pub async fn witness_works(client: &mut memd_client::Client, n: usize) {
    let r = client
        .add(memd_client::AddRequest {
            content: format!("witness memory {n}"),
            ..Default::default()
        })
        .await
        .expect("the other session keeps working");
    assert!(r.accepted);
}
