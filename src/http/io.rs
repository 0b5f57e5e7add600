//! The byte stream under an HTTP connection: the bytes the daemon read to
//! tell the protocol are handed back first ([`Io::prefix`]), and a write
//! that cannot go out for `write_timeout` fails, so a client that stops
//! reading (an event stream it never consumes) is disconnected instead of
//! holding a task forever. A request body must arrive whole within its
//! [`Deadline`], so a half-sent one is cut off.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// A stream with bytes already read from it, and a bound on each write.
pub struct Io<S> {
    inner: S,
    prefix: Vec<u8>,
    at: usize,
    write_timeout: Duration,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl<S> Io<S> {
    /// `inner`, whose first bytes `prefix` were read already.
    pub fn new(inner: S, prefix: Vec<u8>, write_timeout: Duration) -> Io<S> {
        Io {
            inner,
            prefix,
            at: 0,
            write_timeout,
            stalled: None,
        }
    }

    /// Runs `op`; while it is pending, a timer runs, and when the timer
    /// fires first the write fails with `TimedOut`.
    fn bounded<T>(
        &mut self,
        cx: &mut Context<'_>,
        op: impl FnOnce(Pin<&mut S>, &mut Context<'_>) -> Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>>
    where
        S: Unpin,
    {
        match op(Pin::new(&mut self.inner), cx) {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => {
                let limit = self.write_timeout;
                let timer = self
                    .stalled
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                ready!(timer.as_mut().poll(cx));
                self.stalled = None;
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client did not read for limits.write_timeout_ms",
                )))
            }
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Io<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.at < this.prefix.len() {
            let left = &this.prefix[this.at..];
            let n = left.len().min(buf.remaining());
            buf.put_slice(&left[..n]);
            this.at += n;
            if this.at == this.prefix.len() {
                this.prefix = Vec::new();
                this.at = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Io<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.get_mut().bounded(cx, |s, cx| s.poll_write(cx, buf))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.get_mut().bounded(cx, AsyncWrite::poll_flush)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.get_mut()
            .bounded(cx, |s, cx| s.poll_write_vectored(cx, bufs))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A request body that fails once `limit` has passed since its head was
/// read and it is still not whole: the handler reading it gets an error,
/// and the connection (whose body was not read to its end) closes.
pub struct Deadline {
    inner: axum::body::Body,
    timer: Pin<Box<Sleep>>,
    limit: Duration,
}

impl Deadline {
    /// `inner`, due within `limit` from now.
    pub fn new(inner: axum::body::Body, limit: Duration) -> Deadline {
        Deadline {
            inner,
            timer: Box::pin(tokio::time::sleep(limit)),
            limit,
        }
    }
}

impl hyper::body::Body for Deadline {
    type Data = axum::body::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => Poll::Ready(frame.map(|f| f.map_err(Into::into))),
            Poll::Pending => {
                ready!(this.timer.as_mut().poll(cx));
                Poll::Ready(Some(Err(format!(
                    "the body did not arrive whole within {} ms (limits.frame_timeout_ms)",
                    this.limit.as_millis()
                )
                .into())))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    #[tokio::test]
    async fn the_prefix_is_read_first_then_the_stream() {
        let (a, mut b) = tokio::io::duplex(64);
        b.write_all(b" /v1/status").await.unwrap();
        drop(b);
        let mut io = Io::new(a, b"GET".to_vec(), Duration::from_secs(1));
        let mut out = String::new();
        io.read_to_string(&mut out).await.unwrap();
        assert_eq!(out, "GET /v1/status");
    }

    #[tokio::test]
    async fn a_body_that_stops_coming_fails_at_its_deadline() {
        use futures_util::StreamExt;
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<axum::body::Bytes, io::Error>>(1);
        tx.send(Ok(axum::body::Bytes::from_static(b"{\"con")))
            .await
            .unwrap();
        let stream = futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|item| (item, rx))
        });
        let body = axum::body::Body::from_stream(stream.boxed());
        let started = std::time::Instant::now();
        let limited = axum::body::Body::new(Deadline::new(body, Duration::from_millis(80)));
        let err = axum::body::to_bytes(limited, 1024).await.unwrap_err();
        assert!(err.to_string().contains("did not arrive whole"), "{err}");
        assert!(started.elapsed() >= Duration::from_millis(80));
        drop(tx);
        let whole = Deadline::new(axum::body::Body::from("{}"), Duration::from_millis(80));
        let bytes = axum::body::to_bytes(axum::body::Body::new(whole), 1024)
            .await
            .unwrap();
        assert_eq!(&bytes[..], b"{}");
    }

    #[tokio::test]
    async fn a_write_nobody_reads_fails_after_the_timeout() {
        let (a, _b) = tokio::io::duplex(16);
        let mut io = Io::new(a, Vec::new(), Duration::from_millis(50));
        let started = std::time::Instant::now();
        let err = io.write_all(&[0u8; 1024]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(50));
    }
}
