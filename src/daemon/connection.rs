//! One connection: preamble, handshake, then frames ↔ requests until the
//! client leaves or the daemon shuts down. A connection is one session.
//!
//! Bad input closes only this connection: a wrong preamble, a frame over
//! [`MAX_FRAME_LEN`], a frame that does not decode (garbage, invalid UTF-8,
//! an unknown request kind) or stops halfway gets an error frame when the
//! peer can still read one, then the connection is closed. Responses go
//! through a bounded queue to a writer task with a write timeout, so a client
//! that never reads is disconnected instead of growing the daemon's memory.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use memd_proto::{
    CodecError, ErrorBody, ErrorCode, Event, Frame, HEADER_LEN, MAX_FRAME_LEN, PREAMBLE_LEN,
    PROTOCOL_VERSION, Request, Response, Welcome,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::net::unix::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::{broadcast, mpsc};
use tokio::time::timeout;

use super::Shared;
use super::shutdown::triggered;
use crate::handler;
use crate::session::Session;

/// How long a new connection may take to send its preamble and `Hello`.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the rest of a frame may take once its header has arrived.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// How long one response may take to be written (a client that stops
/// reading is disconnected after this).
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// Responses queued for one connection before the handler waits.
const OUT_QUEUE: usize = 16;

/// Why reading a frame stopped.
#[derive(Debug)]
enum ReadError {
    /// The peer closed the connection cleanly between frames.
    Closed,
    /// The header announced too much, or nothing.
    Header(CodecError),
    /// The body did not arrive in time.
    Stalled,
    /// The peer closed mid-frame, or another I/O error.
    Io(std::io::Error),
}

async fn read_frame(rd: &mut OwnedReadHalf) -> Result<Vec<u8>, ReadError> {
    let mut header = [0u8; HEADER_LEN];
    // The first byte decides between a clean close and a truncated frame.
    match rd.read(&mut header[..1]).await {
        Ok(0) => return Err(ReadError::Closed),
        Ok(_) => {}
        Err(e) => return Err(ReadError::Io(e)),
    }
    let rest = async {
        rd.read_exact(&mut header[1..])
            .await
            .map_err(ReadError::Io)?;
        let len = memd_proto::frame_len(header).map_err(ReadError::Header)?;
        // Grow with the bytes that actually arrive: a peer that announces a
        // large frame and stalls costs little memory.
        let mut body = Vec::with_capacity(len.min(64 * 1024));
        (&mut *rd)
            .take(len as u64)
            .read_to_end(&mut body)
            .await
            .map_err(ReadError::Io)?;
        if body.len() < len {
            return Err(ReadError::Io(std::io::ErrorKind::UnexpectedEof.into()));
        }
        Ok(body)
    };
    timeout(BODY_TIMEOUT, rest)
        .await
        .map_err(|_| ReadError::Stalled)?
}

async fn write_loop(mut wr: OwnedWriteHalf, mut rx: mpsc::Receiver<Vec<u8>>) {
    while let Some(buf) = rx.recv().await {
        match timeout(WRITE_TIMEOUT, wr.write_all(&buf)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "client went away");
                return;
            }
            Err(_) => {
                tracing::warn!("client does not read its responses; disconnecting it");
                return;
            }
        }
    }
    let _ = wr.shutdown().await;
}

/// Outgoing side of a connection.
struct Out {
    tx: mpsc::Sender<Vec<u8>>,
}

impl Out {
    /// Queues a response; `false` when the connection is gone.
    async fn send(&self, id: u64, body: Response) -> bool {
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
        self.tx.send(bytes).await.is_ok()
    }

    async fn error(&self, id: u64, code: ErrorCode, message: impl Into<String>) -> bool {
        self.send(id, Response::Error(ErrorBody::new(code, message)))
            .await
    }
}

/// Serves one accepted connection to its end.
pub async fn serve(stream: UnixStream, shared: Arc<Shared>) {
    let (rd, wr) = stream.into_split();
    let (tx, rx) = mpsc::channel(OUT_QUEUE);
    let writer = tokio::spawn(write_loop(wr, rx));
    if tx.send(memd_proto::preamble().to_vec()).await.is_ok() {
        run(rd, Out { tx }, &shared).await;
    }
    let _ = writer.await;
}

/// Sends the preamble and one error frame, then closes: used for refused
/// peers (other uid, too many connections) before any session exists.
pub async fn refuse(mut stream: UnixStream, code: ErrorCode, message: String) {
    let frame = Frame {
        id: memd_proto::PUSH_ID,
        body: Response::Error(ErrorBody::new(code, message)),
    };
    let Ok(bytes) = memd_proto::encode(&frame) else {
        return;
    };
    let write = async {
        stream.write_all(&memd_proto::preamble()).await?;
        stream.write_all(&bytes).await?;
        stream.shutdown().await
    };
    let _ = timeout(Duration::from_secs(2), write).await;
}

async fn run(mut rd: OwnedReadHalf, out: Out, shared: &Shared) {
    let Some(mut session) = handshake(&mut rd, &out, shared).await else {
        return;
    };
    shared.sessions.fetch_add(1, Ordering::Relaxed);
    tracing::debug!(session = %session.id, agent = %session.agent, namespace = %session.namespace, "session opened");
    // Frames are read by their own task: the loop below also waits for
    // drift events, and a half-read frame must never be cancelled.
    let (frames_tx, mut frames) = mpsc::channel(1);
    let reader = tokio::spawn(async move {
        loop {
            let frame = read_frame(&mut rd).await;
            let last = frame.is_err();
            if frames_tx.send(frame).await.is_err() || last {
                break;
            }
        }
    });
    let mut events = shared.store.generations.events.subscribe();
    let mut shutdown = shared.shutdown.subscribe();
    loop {
        let frame = tokio::select! {
            biased;
            _ = triggered(&mut shutdown) => break,
            event = events.recv(), if session.subscribed => {
                match event {
                    Ok(e) => {
                        let push = Response::Event(Event::Drift(e));
                        if !out.send(memd_proto::PUSH_ID, push).await {
                            break;
                        }
                    }
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::debug!(session = %session.id, missed = n, "session lagged behind drift events");
                    }
                    Err(broadcast::error::RecvError::Closed) => break,
                }
                continue;
            }
            frame = frames.recv() => frame,
        };
        let body = match frame {
            Some(Ok(body)) => body,
            Some(Err(e)) => {
                report_read_error(e, &out).await;
                break;
            }
            None => break,
        };
        let (id, req) = match memd_proto::decode::<Request>(&body) {
            Ok(f) => (f.id, f.body),
            Err(e) => {
                let id = memd_proto::peek_id(&body).unwrap_or(memd_proto::PUSH_ID);
                let (code, what) = classify(&e);
                tracing::warn!(session = %session.id, error = %e, "{what}; closing the connection");
                out.error(id, code, format!("{what}: {e}; closing the connection"))
                    .await;
                break;
            }
        };
        let resp = handler::dispatch(req, &mut session, shared).await;
        if !out.send(id, resp).await {
            break;
        }
    }
    reader.abort();
    shared.sessions.fetch_sub(1, Ordering::Relaxed);
    tracing::debug!(session = %session.id, "session closed");
}

/// Whether an undecodable body names a request kind we do not know.
fn classify(e: &CodecError) -> (ErrorCode, &'static str) {
    let text = e.to_string();
    if text.contains("variant") {
        (ErrorCode::UnknownRequest, "unknown request kind")
    } else {
        (ErrorCode::MalformedFrame, "malformed frame")
    }
}

async fn report_read_error(e: ReadError, out: &Out) {
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
        ReadError::Stalled => {
            tracing::warn!("a frame stopped arriving halfway; closing the connection");
            out.error(
                memd_proto::PUSH_ID,
                ErrorCode::MalformedFrame,
                format!(
                    "frame incomplete after {}s; closing the connection",
                    BODY_TIMEOUT.as_secs()
                ),
            )
            .await;
        }
        ReadError::Io(e) => {
            tracing::debug!(error = %e, "connection ended mid-frame");
        }
    }
}

/// Reads the preamble and `Hello`, answers `Welcome`. `None` ends the
/// connection (the reason was logged and, when possible, sent).
async fn handshake(rd: &mut OwnedReadHalf, out: &Out, shared: &Shared) -> Option<Session> {
    let mut preamble = [0u8; PREAMBLE_LEN];
    match timeout(HANDSHAKE_TIMEOUT, rd.read_exact(&mut preamble)).await {
        Ok(Ok(_)) => {}
        Ok(Err(e)) => {
            tracing::debug!(error = %e, "connection closed before its preamble");
            return None;
        }
        Err(_) => {
            tracing::debug!("no preamble in time; closing");
            return None;
        }
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
        // Our preamble is already on its way: the client reports the
        // mismatch with both versions. Frames of another version cannot be
        // assumed to decode, so none is sent.
        tracing::warn!(error = %e, "client speaks another protocol version; closing");
        return None;
    }
    let first = match timeout(HANDSHAKE_TIMEOUT, read_frame(rd)).await {
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
    let (id, hello) = match memd_proto::decode::<Request>(&first) {
        Ok(Frame {
            id,
            body: Request::Hello(h),
        }) => (id, h),
        Ok(Frame { id, .. }) => {
            out.error(
                id,
                ErrorCode::HandshakeRequired,
                "the first request of a connection must be Hello",
            )
            .await;
            return None;
        }
        Err(e) => {
            let id = memd_proto::peek_id(&first).unwrap_or(memd_proto::PUSH_ID);
            let (code, what) = classify(&e);
            tracing::warn!(error = %e, "{what} in the handshake; closing");
            out.error(id, code, format!("{what}: {e}")).await;
            return None;
        }
    };
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
    let generation = shared.store.generations.current();
    let session = match Session::open(
        &hello,
        generation,
        shared.config.drift.policy,
        shared.config.inject.budget_chars,
    ) {
        Ok(s) => s,
        Err(message) => {
            out.error(id, ErrorCode::InvalidInput, message).await;
            return None;
        }
    };
    let welcome = Welcome {
        session_id: session.id.clone(),
        generation,
        server_version: env!("CARGO_PKG_VERSION").to_string(),
        protocol: PROTOCOL_VERSION,
    };
    if !out.send(id, Response::Welcome(welcome)).await {
        return None;
    }
    Some(session)
}
