//! The byte stream under an HTTP connection: the bytes the daemon read to
//! tell the protocol are handed back first ([`Io::prefix`]), and a write
//! that cannot go out for `write_timeout` fails, so a client that stops
//! reading (an event stream it never consumes) is disconnected instead of
//! holding a task forever.

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
    async fn a_write_nobody_reads_fails_after_the_timeout() {
        let (a, _b) = tokio::io::duplex(16);
        let mut io = Io::new(a, Vec::new(), Duration::from_millis(50));
        let started = std::time::Instant::now();
        let err = io.write_all(&[0u8; 1024]).await.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(started.elapsed() >= Duration::from_millis(50));
    }
}
