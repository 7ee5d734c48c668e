//! Slack's answers read within a bound: a connector that wraps each
//! connection slack-morphism's client opens, and fails a read once the
//! peer has sent more than [`MAX_ANSWER_BYTES`] since askgate last wrote.
//!
//! slack-morphism reads every answer whole (`collect()` on the body) and
//! offers no limit; what it takes is a hyper connector, so the bound sits
//! there. Over HTTP/1.1 without pipelining (hyper's client never
//! pipelines, and only HTTP/1.1 is offered: [`crate::api::connector`])
//! everything the peer sends between two requests is one answer, so "bytes
//! since the last write" bounds each answer, its headers included, whatever
//! its `Content-Length` or chunking claims. The failed read ends the call
//! with an error slack-morphism reports, which askgate treats as Slack
//! failing (retryable, as a 5xx is). Hand-written: no crate offers a
//! byte-counting hyper connection.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use askgate_adapter::read::{MAX_ANSWER_BYTES, ReadError};
use hyper::Uri;
use hyper::rt::{Read, ReadBuf, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};

/// How much one read takes at most (a copy through the stack).
const READ_CHUNK: usize = 8 * 1024;

/// A connector whose connections fail a read past `limit` bytes received
/// since the last write.
#[derive(Debug, Clone)]
pub struct Bounded<C> {
    inner: C,
    limit: usize,
}

impl<C> Bounded<C> {
    /// `inner`'s connections, each answer bounded by [`MAX_ANSWER_BYTES`].
    pub fn new(inner: C) -> Self {
        Self::with_limit(inner, MAX_ANSWER_BYTES)
    }

    /// `inner`'s connections, each answer bounded by `limit` bytes.
    pub fn with_limit(inner: C, limit: usize) -> Self {
        Self { inner, limit }
    }
}

impl<C> tower::Service<Uri> for Bounded<C>
where
    C: tower::Service<Uri>,
    C::Future: Send + 'static,
{
    type Response = BoundedIo<C::Response>;
    type Error = C::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let (connecting, limit) = (self.inner.call(uri), self.limit);
        Box::pin(async move {
            let io = connecting.await?;
            Ok(BoundedIo {
                inner: io,
                limit,
                received: 0,
            })
        })
    }
}

/// One connection of [`Bounded`].
#[derive(Debug)]
pub struct BoundedIo<T> {
    inner: T,
    limit: usize,
    /// Bytes received since the last write.
    received: usize,
}

impl<T> BoundedIo<T> {
    fn too_large(&self) -> io::Error {
        io::Error::other(ReadError::TooLarge { limit: self.limit })
    }
}

impl<T: Read + Unpin> Read for BoundedIo<T> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, mut buf: ReadBufCursor<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.received > this.limit {
            return Poll::Ready(Err(this.too_large()));
        }
        // Read into a buffer of our own to count what came (the cursor
        // does not say how much the inner read put in it).
        let mut chunk = [0_u8; READ_CHUNK];
        let room = buf.remaining().min(READ_CHUNK);
        let mut read = ReadBuf::new(&mut chunk[..room]);
        ready!(Pin::new(&mut this.inner).poll_read(cx, read.unfilled()))?;
        let got = read.filled();
        this.received = this.received.saturating_add(got.len());
        if this.received > this.limit {
            return Poll::Ready(Err(this.too_large()));
        }
        buf.put_slice(got);
        Poll::Ready(Ok(()))
    }
}

impl<T: Write + Unpin> Write for BoundedIo<T> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = ready!(Pin::new(&mut this.inner).poll_write(cx, buf))?;
        if written > 0 {
            // A new request: what comes next is its answer.
            this.received = 0;
        }
        Poll::Ready(Ok(written))
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let written = ready!(Pin::new(&mut this.inner).poll_write_vectored(cx, bufs))?;
        if written > 0 {
            this.received = 0;
        }
        Poll::Ready(Ok(written))
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

impl<T: Connection> Connection for BoundedIo<T> {
    fn connected(&self) -> Connected {
        self.inner.connected()
    }
}
