//! hyper's I/O traits over smol's, for the HTTP server and the upstream client alike.
//!
//! hyper reads into a buffer of uninitialized memory (8 KiB and up) that safe code can only
//! write through after initializing it; smol-hyper's adapter zeroed the whole buffer before
//! every read, including the many that find nothing, which cost a forwarded call more than
//! parsing its request did. [`HyperIo`] reads into a per-thread buffer initialized once and
//! copies only the bytes read into hyper's.

use smol::io::{AsyncRead, AsyncWrite};
use std::cell::RefCell;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

/// The most bytes one read takes: a large body takes several reads, each a syscall's worth.
const SCRATCH_BYTES: usize = 64 * 1024;

thread_local! {
    /// Where reads land before hyper's buffer. Only [`HyperIo::poll_read`] borrows it, and
    /// nothing it calls reads through another `HyperIo`, so the borrow never nests.
    static SCRATCH: RefCell<Box<[u8]>> = RefCell::new(vec![0; SCRATCH_BYTES].into_boxed_slice());
}

/// A smol stream seen through hyper's `Read` and `Write`.
#[derive(Debug)]
pub struct HyperIo<S>(pub S);

impl<S: AsyncRead + Unpin> hyper::rt::Read for HyperIo<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        SCRATCH.with_borrow_mut(|scratch| {
            let room = buf.remaining().min(scratch.len());
            let n = ready!(Pin::new(&mut self.0).poll_read(cx, &mut scratch[..room]))?;
            buf.put_slice(&scratch[..n]);
            Poll::Ready(Ok(()))
        })
    }
}

impl<S: AsyncWrite + Unpin> hyper::rt::Write for HyperIo<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.0).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.0).poll_close(cx)
    }
}
