//! A TCP stream that reads only when the reactor has said there is something to read.
//!
//! hyper polls its connection's reader every time the task holding the connection is polled:
//! the server side to notice a client that hangs up mid-request (how a 2026-07-28 client
//! cancels), the client side of a pooled upstream link whenever the request it carries is
//! polled. smol's `TcpStream` answers each of those polls with a `recv` syscall first, and
//! only asks the reactor after `EAGAIN`; a forwarded call's task is polled several times (on the
//! client's request, on the upstream's answer, on its own wakeups), so most of those reads came
//! back empty. [`Stream`] remembers that the last read found the socket drained and, until the
//! reactor reports it readable again, answers a read with `Pending` without a syscall. A read
//! that did not fill its buffer counts as finding it drained, as in tokio: a stream socket hands
//! over all it holds, so the read after it would only come back with `EAGAIN`. Whatever arrives
//! meanwhile is not missed: asking the reactor re-arms the socket's interest, and epoll reports
//! a socket that is readable when re-armed.
//!
//! The reactor's word can be stale for a connection nobody polled for a while: a pooled
//! upstream link whose server closed it as it idled has had its close reported to a task that
//! is gone, or not yet at all. A [`Recheck`] makes the next read ask the kernel, so the pool
//! learns of the close before a request is written to a dead connection.

use smol::io::{AsyncRead, AsyncWrite};
use smol::Async;
use std::io::{self, Read, Write};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};

/// A TCP stream whose reads skip the syscall while the socket is known to be drained.
#[derive(Debug)]
pub struct Stream {
    socket: Arc<Async<std::net::TcpStream>>,
    /// The last read returned `EAGAIN` or left room in its buffer, and the reactor has not
    /// reported the socket readable since.
    drained: bool,
    /// Set from outside: the next read goes to the kernel whatever `drained` says.
    recheck: Recheck,
}

/// Tells a [`Stream`] that its next read must ask the kernel, not the reactor.
#[derive(Debug, Clone, Default)]
pub struct Recheck(Arc<AtomicBool>);

impl Recheck {
    /// Asks for it: for a connection taken back into use after idling.
    pub fn request(&self) {
        self.0.store(true, Ordering::Relaxed);
    }

    /// Whether it was asked for, clearing it; a plain load first, since most reads that get
    /// here find it clear (it is asked for once per call, reads come several times).
    fn take(&self) -> bool {
        self.0.load(Ordering::Relaxed) && self.0.swap(false, Ordering::Relaxed)
    }
}

impl Stream {
    /// Connects to `address` (a name is resolved), with `TCP_NODELAY` set: MCP messages are
    /// small and answered one at a time, so Nagle's algorithm would only delay them.
    pub async fn connect(address: impl smol::net::AsyncToSocketAddrs) -> io::Result<Stream> {
        let stream = smol::net::TcpStream::connect(address).await?;
        Ok(Stream::from(stream))
    }

    /// A handle that makes the next read ask the kernel (see [`Recheck`]).
    pub fn recheck(&self) -> Recheck {
        self.recheck.clone()
    }
}

impl From<smol::net::TcpStream> for Stream {
    fn from(stream: smol::net::TcpStream) -> Stream {
        // Failing to set it only costs latency.
        let _ = stream.set_nodelay(true);
        Stream {
            socket: stream.into(),
            drained: false,
            recheck: Recheck::default(),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut [u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            if self.drained && !self.recheck.take() {
                // Registers this task's waker once; later polls with the same waker and no
                // event in between return here without touching the socket.
                ready!(self.socket.poll_readable(cx))?;
            }
            match self.socket.get_ref().read(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.drained = true,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => self.drained = false,
                Ok(n) => {
                    // A read that left room took all the socket held: the next read would
                    // only find it empty.
                    self.drained = n > 0 && n < buf.len();
                    return Poll::Ready(Ok(n));
                }
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut &*self.socket).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut &*self.socket).poll_write_vectored(cx, bufs)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        // Writes go straight to the socket: there is nothing to flush.
        Poll::Ready(self.socket.get_ref().flush())
    }

    fn poll_close(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.socket.get_ref().shutdown(std::net::Shutdown::Write))
    }
}

#[cfg(test)]
mod every_revision {
    mod tcp {
        use crate::net::tcp::Stream;
        use smol::io::{AsyncReadExt, AsyncWriteExt};
        use smol::net::{TcpListener, TcpStream};
        use std::time::Duration;

        /// Both ends of a loopback connection: mcpx's, and its peer's.
        async fn connected() -> (Stream, TcpStream) {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let port = listener.local_addr().unwrap().port();
            let (ours, theirs) =
                smol::future::zip(Stream::connect(("127.0.0.1", port)), listener.accept()).await;
            (ours.unwrap(), theirs.unwrap().0)
        }

        #[test]
        fn a_read_after_a_drained_one_gets_what_arrives_later_and_then_the_peers_close() {
            smol::block_on(async {
                let (mut stream, mut peer) = connected().await;
                let writer = crate::runtime::spawn(async move {
                    for part in [&b"first"[..], b"second"] {
                        smol::Timer::after(Duration::from_millis(50)).await;
                        peer.write_all(part).await.unwrap();
                    }
                    // Closing is what a client hanging up mid-request looks like.
                });
                let mut buf = [0; 16];
                // Nothing is there yet: the first poll finds the socket drained.
                let early = smol::future::poll_once(stream.read(&mut buf)).await;
                assert!(early.is_none(), "{early:?}");
                assert!(stream.drained);
                let n = stream.read(&mut buf).await.unwrap();
                assert_eq!(&buf[..n], b"first");
                let n = stream.read(&mut buf).await.unwrap();
                assert_eq!(&buf[..n], b"second");
                writer.await;
                assert_eq!(stream.read(&mut buf).await.unwrap(), 0);
            });
        }

        #[test]
        fn a_short_read_leaves_the_next_to_the_reactor_which_still_reports_what_came_between() {
            smol::block_on(async {
                let (mut stream, mut peer) = connected().await;
                let mut buf = [0; 16];
                peer.write_all(b"first").await.unwrap();
                assert_eq!(stream.read(&mut buf).await.unwrap(), 5);
                assert!(stream.drained, "a read that left room found all there was");
                // These bytes are in the socket before anything asks the reactor about it; were
                // they missed, the read would wait forever, so it is given a second.
                peer.write_all(b"second").await.unwrap();
                let read = smol::future::or(async { Some(stream.read(&mut buf).await) }, async {
                    smol::Timer::after(Duration::from_secs(1)).await;
                    None
                });
                let n = read.await.expect("the reactor reported the bytes").unwrap();
                assert_eq!(&buf[..n], b"second");
                // A read that fills its buffer may have left more behind: the next asks the
                // kernel at once.
                peer.write_all(&[1; 20]).await.unwrap();
                smol::Timer::after(Duration::from_millis(20)).await;
                assert_eq!(stream.read(&mut buf).await.unwrap(), 16);
                assert!(!stream.drained);
                let rest = smol::future::poll_once(stream.read(&mut buf)).await;
                assert_eq!(rest.map(Result::unwrap), Some(4));
            });
        }

        #[test]
        fn a_recheck_makes_a_drained_read_ask_the_kernel_at_once() {
            smol::block_on(async {
                let (mut stream, mut peer) = connected().await;
                let mut buf = [0; 16];
                assert!(smol::future::poll_once(stream.read(&mut buf))
                    .await
                    .is_none());
                // On loopback the bytes are in the socket once the write returns, whether or not
                // the reactor has looked: the very next poll must find them.
                peer.write_all(b"closing soon").await.unwrap();
                stream.recheck().request();
                let read = smol::future::poll_once(stream.read(&mut buf)).await;
                assert_eq!(read.map(Result::unwrap), Some(12));
                assert!(!stream.recheck.take(), "a recheck serves one read");
            });
        }

        #[test]
        fn what_is_written_arrives_whole() {
            smol::block_on(async {
                let (mut stream, mut peer) = connected().await;
                let reader = crate::runtime::spawn(async move {
                    let mut all = Vec::new();
                    peer.read_to_end(&mut all).await.unwrap();
                    all
                });
                let big = vec![7u8; 4 << 20];
                stream.write_all(&big).await.unwrap();
                stream.close().await.unwrap();
                assert_eq!(reader.await, big);
            });
        }
    }
}
