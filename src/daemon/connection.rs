//! One connection: the client speaks first, and its first bytes say the
//! protocol — HTTP (handed to [`crate::http`]) or memd's binary protocol:
//! preamble, handshake, then frames ↔ requests until the client leaves or
//! the daemon shuts down. A binary connection is one session.
//!
//! Bad input closes only this connection: a wrong preamble, a frame over
//! [`MAX_FRAME_LEN`], a frame that does not decode (garbage, invalid UTF-8,
//! an unknown request kind) or stops halfway gets an error frame when the
//! peer can still read one, then the connection is closed. Every write has a
//! timeout, so a client that never reads its responses is disconnected
//! instead of holding the daemon's memory.
//!
//! The session loop waits on three things at once (the next frame, a drift
//! event to push, shutdown), so frames are read by a cancel-safe
//! `FrameReader` over the codec's `FrameBuffer`: a half-received frame
//! survives a push.

use std::sync::Arc;
use std::time::Duration;

use memd_proto::{
    CodecError, ErrorBody, ErrorCode, Event, Frame, FrameBuffer, MAX_FRAME_LEN, PREAMBLE_LEN,
    PROTOCOL_VERSION, Request, Response, Welcome,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::broadcast;
use tokio::time::{Instant, timeout, timeout_at};

use crate::handler;
use crate::session::Session;
use crate::state::Shared;
use crate::state::shutdown::triggered;

/// How long a connection may take for each step: its preamble and `Hello`,
/// the rest of a frame once its first byte has arrived, and the write of
/// one response (a client that stops reading is disconnected after it).
/// From `[limits]` in the config.
#[derive(Debug, Clone, Copy)]
struct Timeouts {
    handshake: Duration,
    frame: Duration,
    write: Duration,
}

impl Timeouts {
    fn from(limits: &crate::config::LimitsConfig) -> Timeouts {
        Timeouts {
            handshake: Duration::from_millis(limits.handshake_timeout_ms),
            frame: Duration::from_millis(limits.frame_timeout_ms),
            write: Duration::from_millis(limits.write_timeout_ms),
        }
    }
}
/// Why reading a frame stopped.
#[derive(Debug)]
enum ReadError {
    /// The peer closed the connection cleanly between frames.
    Closed,
    /// The header announced too much, or nothing.
    Header(CodecError),
    /// The rest of a frame did not arrive within this time.
    Stalled(Duration),
    /// The peer closed mid-frame, or another I/O error.
    Io(std::io::Error),
}

/// Reads frames into the codec's [`FrameBuffer`], which outlives a
/// cancelled wait: `next` can sit in a `select!` without ever losing half a
/// frame. Adds the one thing the buffer cannot know: how long a frame that
/// has started arriving may take.
struct FrameReader {
    rd: OwnedReadHalf,
    buf: FrameBuffer,
    /// When the frame that has started arriving must be complete.
    deadline: Option<Instant>,
    /// How long a started frame may take.
    frame_timeout: Duration,
}

impl FrameReader {
    fn new(rd: OwnedReadHalf, frame_timeout: Duration) -> FrameReader {
        FrameReader {
            rd,
            buf: FrameBuffer::new(),
            deadline: None,
            frame_timeout,
        }
    }

    /// One read from the socket (cancel safe: `read_buf` either reads or
    /// does nothing).
    async fn read_some(&mut self) -> Result<(), ReadError> {
        let read = match self.deadline {
            Some(deadline) => timeout_at(deadline, self.rd.read_buf(self.buf.unfilled()))
                .await
                .map_err(|_| ReadError::Stalled(self.frame_timeout))?,
            None => self.rd.read_buf(self.buf.unfilled()).await,
        };
        match read {
            Ok(0) if self.buf.is_empty() => Err(ReadError::Closed),
            Ok(0) => Err(ReadError::Io(std::io::ErrorKind::UnexpectedEof.into())),
            Ok(_) => {
                if self.deadline.is_none() {
                    self.deadline = Some(Instant::now() + self.frame_timeout);
                }
                Ok(())
            }
            Err(e) => Err(ReadError::Io(e)),
        }
    }

    /// The clock for the next frame starts with its first byte.
    fn restart_clock(&mut self) {
        self.deadline = (!self.buf.is_empty()).then(|| Instant::now() + self.frame_timeout);
    }

    /// The next frame's body.
    async fn next(&mut self) -> Result<Vec<u8>, ReadError> {
        loop {
            if let Some(body) = self.buf.next_body().map_err(ReadError::Header)? {
                self.restart_clock();
                return Ok(body);
            }
            self.read_some().await?;
        }
    }

    /// The 8-byte preamble.
    async fn preamble(&mut self) -> Result<[u8; PREAMBLE_LEN], ReadError> {
        loop {
            if let Some(preamble) = self.buf.take_preamble() {
                self.restart_clock();
                return Ok(preamble);
            }
            self.read_some().await?;
        }
    }
}

/// Outgoing side of a connection.
struct Out {
    wr: OwnedWriteHalf,
    /// How long one write may take.
    write_timeout: Duration,
    /// Set once a write failed or timed out: nothing more is sent.
    dead: bool,
}

impl Out {
    async fn write(&mut self, bytes: &[u8]) -> bool {
        if self.dead {
            return false;
        }
        match timeout(self.write_timeout, self.wr.write_all(bytes)).await {
            Ok(Ok(())) => true,
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "client went away");
                self.dead = true;
                false
            }
            Err(_) => {
                tracing::warn!("client does not read its responses; disconnecting it");
                self.dead = true;
                false
            }
        }
    }

    /// Sends a response; `false` when the connection is gone.
    async fn send(&mut self, id: u64, body: Response) -> bool {
        let bytes = match memd_proto::encode(&Frame { id, body }) {
            Ok(b) => b,
            Err(CodecError::TooLarge { len, max }) => {
                let body = Response::Error(ErrorBody::new(
                    ErrorCode::InvalidInput,
                    format!(
                        "the response would be {len} bytes, over the {max}-byte frame limit; \
                         ask for fewer results (--limit)"
                    ),
                ));
                match memd_proto::encode(&Frame { id, body }) {
                    Ok(b) => b,
                    Err(_) => return false,
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "cannot encode a response");
                return false;
            }
        };
        self.write(&bytes).await
    }

    async fn error(&mut self, id: u64, code: ErrorCode, message: impl Into<String>) -> bool {
        self.send(id, Response::Error(ErrorBody::new(code, message)))
            .await
    }

    async fn close(mut self) {
        if !self.dead {
            let _ = timeout(Duration::from_secs(1), self.wr.shutdown()).await;
        }
    }
}

/// What a connection's first bytes say it speaks: the client speaks first,
/// so the daemon writes nothing before it knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Speaks {
    /// memd's binary protocol (`MEMD` and a version), or something that is
    /// neither: the binary handshake refuses it with a reason.
    Binary,
    /// HTTP/1.1 (a request line's method).
    Http,
}

/// The request methods the HTTP API answers (a request line starts with
/// one of them).
const HTTP_METHODS: [&[u8]; 6] = [b"GET ", b"HEAD ", b"POST ", b"PUT ", b"PATCH ", b"DELETE "];

/// Which protocol `first` (the connection's first bytes) starts: `None`
/// while too few bytes have arrived to tell.
fn speaks(first: &[u8]) -> Option<Speaks> {
    if first.starts_with(&memd_proto::MAGIC) {
        return Some(Speaks::Binary);
    }
    let mut undecided = false;
    for method in HTTP_METHODS {
        let n = first.len().min(method.len());
        if first[..n] == method[..n] {
            if n == method.len() {
                return Some(Speaks::Http);
            }
            undecided = true;
        }
    }
    if undecided || (first.len() < memd_proto::MAGIC.len() && memd_proto::MAGIC.starts_with(first))
    {
        None
    } else {
        Some(Speaks::Binary)
    }
}

/// Reads the connection's first bytes until they tell its protocol, within
/// `limit`; `None` when the peer left or said nothing in time.
async fn sniff(stream: &mut UnixStream, limit: Duration) -> Option<(Speaks, Vec<u8>)> {
    let mut first = Vec::with_capacity(64);
    let read = async {
        loop {
            if let Some(kind) = speaks(&first) {
                return Some(kind);
            }
            match stream.read_buf(&mut first).await {
                Ok(0) | Err(_) => return None,
                Ok(_) => {}
            }
        }
    };
    match timeout(limit, read).await {
        Ok(Some(kind)) => Some((kind, first)),
        Ok(None) => {
            tracing::debug!("connection closed before it said anything");
            None
        }
        Err(_) => {
            tracing::debug!("no first bytes in time; closing");
            None
        }
    }
}

/// Serves one accepted connection to its end: the binary protocol, or HTTP.
pub async fn serve(mut stream: UnixStream, shared: Arc<Shared>) {
    let timeouts = Timeouts::from(&shared.config().limits);
    let Some((kind, first)) = sniff(&mut stream, timeouts.handshake).await else {
        return;
    };
    if kind == Speaks::Http {
        crate::http::serve(
            stream,
            first,
            shared,
            crate::http::Door::Socket,
            Arc::default(),
        )
        .await;
        return;
    }
    let (rd, wr) = stream.into_split();
    let mut out = Out {
        wr,
        write_timeout: timeouts.write,
        dead: false,
    };
    let mut reader = FrameReader::new(rd, timeouts.frame);
    reader.buf.extend(&first);
    run(reader, &mut out, &shared, timeouts.handshake).await;
    out.close().await;
}

/// Refuses a peer (other uid, too many connections) before any session
/// exists, in the protocol it speaks: an HTTP peer gets a problem-JSON
/// answer, a binary one the preamble and one error frame.
pub async fn refuse(mut stream: UnixStream, code: ErrorCode, message: String) {
    match sniff(&mut stream, Duration::from_secs(2)).await {
        Some((Speaks::Http, first)) => {
            crate::http::refuse(stream, first, code, message).await;
        }
        _ => refuse_binary(stream, code, message).await,
    }
}

async fn refuse_binary(mut stream: UnixStream, code: ErrorCode, message: String) {
    let frame = Frame {
        id: memd_proto::PUSH_ID,
        body: Response::Error(ErrorBody::new(code, message)),
    };
    let Ok(bytes) = memd_proto::encode(&frame) else {
        return;
    };
    // Then wait (briefly) for the peer to hang up: closing first would make
    // the client's own preamble or Hello fail with a broken pipe before it
    // reads the reason.
    let exchange = async {
        stream.write_all(&memd_proto::preamble()).await?;
        stream.write_all(&bytes).await?;
        stream.shutdown().await?;
        let mut sink = [0u8; 1024];
        let mut left: usize = 64 * 1024;
        while left > 0 {
            match stream.read(&mut sink).await? {
                0 => break,
                n => left = left.saturating_sub(n),
            }
        }
        Ok::<_, std::io::Error>(())
    };
    let _ = timeout(Duration::from_secs(2), exchange).await;
}

async fn run(mut reader: FrameReader, out: &mut Out, shared: &Shared, handshake_timeout: Duration) {
    let Some((mut session, hello_id, welcome)) =
        handshake(&mut reader, out, shared, handshake_timeout).await
    else {
        return;
    };
    // Counted before the client hears its Welcome: a client that has been
    // welcomed finds itself in `status`.
    handler::began(shared, &session);
    tracing::debug!(session = %session.id(), agent = %session.agent(), namespace = %session.namespace(), "session opened");
    if out.send(hello_id, Response::Welcome(welcome)).await {
        serve_requests(&mut reader, out, &mut session, shared).await;
    }
    handler::ended(shared, &session).await;
    tracing::debug!(session = %session.id(), "session closed");
}

/// Answers a welcomed session's requests, and pushes its events, until the
/// client leaves, a frame is bad, a write fails or the daemon shuts down.
async fn serve_requests(
    reader: &mut FrameReader,
    out: &mut Out,
    session: &mut Session,
    shared: &Shared,
) {
    let mut events = shared.store.generations.events.subscribe();
    let mut similar = shared.embed.similar.subscribe();
    let mut purges = shared.purge_told.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let frame = tokio::select! {
            biased;
            () = triggered(&mut shutdown) => break,
            event = events.recv(), if session.subscribed => {
                match event {
                    Ok(e) => {
                        let push = Response::Event(Event::Drift(e));
                        if !out.send(memd_proto::PUSH_ID, push).await {
                            break;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::debug!(session = %session.id(), missed = n, "session lagged behind drift events");
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                }
                continue;
            }
            event = similar.recv(), if session.subscribed => {
                match event {
                    Ok(e) if e.namespace == session.namespace() => {
                        let push = Response::Event(Event::Similar(e));
                        if !out.send(memd_proto::PUSH_ID, push).await {
                            break;
                        }
                    }
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => break,
                }
                continue;
            }
            event = purges.recv() => {
                match event {
                    Ok(mut e) => {
                        e.block_dropped =
                            session.drop_block_holding(&e.ids.iter().copied().collect());
                        if session.subscribed
                            && !out
                                .send(memd_proto::PUSH_ID, Response::Event(Event::Purged(e)))
                                .await
                        {
                            break;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {}
                    Err(broadcast::error::RecvError::Closed) => break,
                }
                continue;
            }
            frame = reader.next() => frame,
        };
        let body = match frame {
            Ok(body) => body,
            Err(e) => {
                report_read_error(e, out).await;
                break;
            }
        };
        let (id, req) = match memd_proto::decode_request(&body) {
            Ok(f) => (f.id, f.body),
            Err(e) => {
                let id = memd_proto::peek_id(&body).unwrap_or(memd_proto::PUSH_ID);
                let (code, what) = classify(&e);
                tracing::warn!(session = %session.id(), error = %e, "{what}; closing the connection");
                out.error(id, code, format!("{what}: {e}; closing the connection"))
                    .await;
                break;
            }
        };
        let resp = handler::dispatch(req, session, shared).await;
        if !out.send(id, resp).await {
            break;
        }
    }
}

/// Whether an undecodable body names a request kind we do not know (told
/// by its tag: [`CodecError::UnknownKind`]) or is malformed.
fn classify(e: &CodecError) -> (ErrorCode, &'static str) {
    match e {
        CodecError::UnknownKind { .. } => (ErrorCode::UnknownRequest, "unknown request kind"),
        _ => (ErrorCode::MalformedFrame, "malformed frame"),
    }
}

async fn report_read_error(e: ReadError, out: &mut Out) {
    match e {
        ReadError::Closed => {}
        ReadError::Header(e) => {
            let code = match e {
                CodecError::TooLarge { .. } => ErrorCode::FrameTooLarge,
                _ => ErrorCode::MalformedFrame,
            };
            tracing::warn!(error = %e, "bad frame header; closing the connection");
            out.error(
                memd_proto::PUSH_ID,
                code,
                format!("{e} (limit {MAX_FRAME_LEN}); closing the connection"),
            )
            .await;
        }
        ReadError::Stalled(after) => {
            tracing::warn!("a frame stopped arriving halfway; closing the connection");
            out.error(
                memd_proto::PUSH_ID,
                ErrorCode::MalformedFrame,
                format!(
                    "frame incomplete after {} ms (limits.frame_timeout_ms); closing the connection",
                    after.as_millis()
                ),
            )
            .await;
        }
        ReadError::Io(e) => {
            tracing::debug!(error = %e, "connection ended mid-frame");
        }
    }
}

/// Reads the client's preamble and sends the daemon's; `None` (logged,
/// and when possible sent) when the client is not a memd client of this
/// protocol version, or too slow.
async fn preambles(reader: &mut FrameReader, out: &mut Out, limit: Duration) -> Option<()> {
    let preamble = match timeout(limit, reader.preamble()).await {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => {
            tracing::debug!(error = ?e, "connection closed before its preamble");
            return None;
        }
        Err(_) => {
            tracing::debug!("no preamble in time; closing");
            return None;
        }
    };
    // The client spoke first; now the daemon's preamble, so that even a
    // refusal below reaches a client that reads it.
    if !out.write(&memd_proto::preamble()).await {
        return None;
    }
    let theirs = match memd_proto::parse_preamble(&preamble) {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(error = %e, "not a memd client; closing");
            out.error(
                memd_proto::PUSH_ID,
                ErrorCode::MalformedFrame,
                e.to_string(),
            )
            .await;
            return None;
        }
    };
    if let Err(e) = memd_proto::check_version(theirs) {
        // Our preamble is on its way: the client reports the mismatch with
        // both versions. Frames of another version cannot be assumed to
        // decode, so none is sent.
        tracing::warn!(error = %e, "client speaks another protocol version; closing");
        return None;
    }
    Some(())
}

/// Reads the connection's first request, which must be `Hello`; returns
/// its frame id with it.
async fn hello(
    reader: &mut FrameReader,
    out: &mut Out,
    limit: Duration,
) -> Option<(u64, memd_proto::Hello)> {
    let first = match timeout(limit, reader.next()).await {
        Ok(Ok(body)) => body,
        Ok(Err(e)) => {
            report_read_error(e, out).await;
            return None;
        }
        Err(_) => {
            tracing::debug!("no Hello in time; closing");
            return None;
        }
    };
    match memd_proto::decode_request(&first) {
        Ok(Frame {
            id,
            body: Request::Hello(h),
        }) => Some((id, h)),
        Ok(Frame { id, .. }) => {
            out.error(
                id,
                ErrorCode::HandshakeRequired,
                "the first request of a connection must be Hello",
            )
            .await;
            None
        }
        Err(e) => {
            let id = memd_proto::peek_id(&first).unwrap_or(memd_proto::PUSH_ID);
            let (code, what) = classify(&e);
            tracing::warn!(error = %e, "{what} in the handshake; closing");
            out.error(id, code, format!("{what}: {e}")).await;
            None
        }
    }
}

/// Reads the preamble and `Hello` and opens the session; returns it with the
/// `Hello`'s frame id and the `Welcome` to answer once the session is
/// counted. `None` ends the connection (the reason was logged and, when
/// possible, sent).
async fn handshake(
    reader: &mut FrameReader,
    out: &mut Out,
    shared: &Shared,
    limit: Duration,
) -> Option<(Session, u64, Welcome)> {
    preambles(reader, out, limit).await?;
    let (id, hello) = hello(reader, out, limit).await?;
    if hello.protocol != PROTOCOL_VERSION {
        out.error(
            id,
            ErrorCode::ProtocolMismatch,
            format!(
                "client speaks protocol {}, daemon {PROTOCOL_VERSION}",
                hello.protocol
            ),
        )
        .await;
        return None;
    }
    // Before the view's generation is read: the move is not a change the
    // new session missed.
    for previous in &hello.previous_namespaces {
        crate::jobs::namespaces::adopt(shared, previous, &hello.namespace).await;
    }
    let generation = shared.store.generations.current();
    let config = shared.config();
    let session = match Session::open(
        &hello,
        generation,
        config.drift.policy,
        config.inject.budget_chars,
        config.drift.read_set_rows,
        &shared.named,
    ) {
        Ok(s) => s,
        Err(message) => {
            out.error(id, ErrorCode::InvalidInput, message).await;
            return None;
        }
    };
    let welcome = Welcome {
        session_id: session.id().to_string(),
        generation,
        server_version: env!("CARGO_PKG_VERSION").to_string(),
        protocol: PROTOCOL_VERSION,
    };
    Some((session, id, welcome))
}
