//! The stdio front door (`mcpx serve`): newline-delimited JSON-RPC on stdin and stdout.
//!
//! Requests run concurrently, each under its own cancellation, so that a `notifications/cancelled`
//! can be read (and reach the upstream) while the request it names is still running; its reply is
//! then withheld. Notifications and `initialize` run in line: a notification must land before
//! whatever follows it, and `initialize` settles what every later reply looks like. One writer
//! task owns stdout, so frames never interleave. At EOF, requests in flight get the drain period
//! to answer, then are cancelled, and `serve` returns. When mcpx itself stops (`shutdown`: a
//! SIGTERM), reading stops, and the requests in flight are cancelled at once and each answered
//! -32603 "mcpx is shutting down".
//!
//! What waits to be written is bounded ([`outbox::CAPACITY`] frames of each kind): a client that
//! stops reading its output while its upstreams keep talking loses superseded progress and log
//! messages first ([`outbox`]), and when an answer cannot be queued either, its connection ends
//! (requests in flight are cancelled at once), rather than the process growing without end.

use crate::access::{Identity, Kind};
use crate::cancel::Cancel;
use crate::gateway::{Client, Gateway, Inbound, Received, ViewId};
use crate::jsonrpc::{self, ErrorObject, Outbound, Request, Response, INVALID_REQUEST};
use crate::lines::{self, Read};
use crate::metrics::{self, Refusal};
use crate::outbox;
use async_channel::{Receiver, Sender};
use smol::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use smol::Task;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// How `serve` behaves at its edges.
#[derive(Debug, Clone, Copy)]
pub struct StdioOptions {
    /// How long requests in flight at EOF may take before they are cancelled.
    pub drain: Duration,
    /// The longest line accepted; a longer one is answered with -32600 and skipped.
    pub max_message_bytes: usize,
    /// What the ledger calls its sessions: `stdio`, or `attached` on the daemon.
    pub label: &'static str,
    /// An attached session's editor: its `mcpx serve`'s process id.
    pub editor_pid: Option<u32>,
    /// The view of the catalog its client sees (`mcpx serve --profile`).
    pub view: ViewId,
}

impl StdioOptions {
    /// The options `config` gives a session the ledger calls `label`, on the whole catalog.
    pub fn from_config(config: &crate::config::Config, label: &'static str) -> StdioOptions {
        StdioOptions {
            drain: config.transport.stdio_drain,
            max_message_bytes: config.transport.max_message_bytes,
            label,
            editor_pid: None,
            view: ViewId::EVERYTHING,
        }
    }
}

/// Serves one client on `input` and `output` until `input` ends and the drain is over, or
/// `shutdown` fires.
pub async fn serve(
    gateway: Arc<Gateway>,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
    options: StdioOptions,
    shutdown: Cancel,
) {
    let (outbound, outbound_rx) = outbox::bounded(outbox::CAPACITY);
    let (frames, frames_rx) = async_channel::bounded::<Written>(outbox::CAPACITY);
    // Fired when something for the client cannot be queued: it is not reading.
    let stalled = outbound_rx.overflowed().clone();
    let writer = crate::runtime::spawn(write_frames(output, outbound_rx, frames_rx));
    let client = gateway.open_client(options.label, options.view, outbound.clone());
    if let Some(pid) = options.editor_pid {
        gateway.live().note_editor(&client, pid);
    }
    let caller = match options.editor_pid {
        Some(_) => Kind::AttachedEditor,
        None => Kind::LocalOwner,
    };
    let caller = Arc::new(Identity::of_kind(caller));
    gateway.live().note_caller(&client, &caller);
    // Every request task holds a clone of `alive`; when the last clone is gone, `all_done` wakes.
    let (alive, all_done) = async_channel::bounded::<()>(1);
    let connection = Connection {
        gateway: Arc::clone(&gateway),
        client: Arc::clone(&client),
        outbound,
        frames,
        stalled: stalled.clone(),
        shutdown: shutdown.clone(),
        alive,
        caller,
    };
    // What ends the session early: mcpx stopping, or a client that stopped reading.
    let cut_short = || smol::future::or(stalled.cancelled(), shutdown.cancelled());
    let mut input = BufReader::new(input);
    let mut buf = Vec::new();
    loop {
        let read = smol::future::or(
            lines::read_line(&mut input, &mut buf, options.max_message_bytes, |_| {}),
            async {
                cut_short().await;
                Read::Eof
            },
        )
        .await;
        match read {
            Read::Eof => break,
            Read::TooLong { .. } => {
                metrics::refused(Refusal::too_large);
                connection.send(Response::error(
                    None,
                    ErrorObject::new(
                        INVALID_REQUEST,
                        format!(
                            "Invalid Request: message longer than {} bytes",
                            options.max_message_bytes
                        ),
                    ),
                ))
            }
            Read::Line if buf.iter().all(u8::is_ascii_whitespace) => {}
            Read::Line => {
                metrics::received(metrics::Door::stdio, buf.len() + 1);
                connection.receive(&buf)
            }
        }
    }
    // EOF: listens complete now; other requests get the drain period, then are cancelled.
    client.closing.cancel();
    let Connection {
        frames,
        alive,
        outbound,
        ..
    } = connection;
    drop(alive);
    let drained = smol::future::or(async { all_done.recv().await.is_err() }, async {
        let drain = async {
            smol::Timer::after(options.drain).await;
        };
        smol::future::or(drain, cut_short()).await;
        false
    })
    .await;
    if !drained {
        let in_flight = gateway.live().in_flight(&client);
        if stalled.is_cancelled() {
            tracing::warn!(
                "the client stopped reading mcpx's output ({} frames wait for it); ending its connection and cancelling {in_flight} request(s)",
                outbox::CAPACITY
            );
        } else if !shutdown.is_cancelled() {
            tracing::info!(
                "stdin closed; cancelling {in_flight} request(s) still in flight after {:?}",
                options.drain
            );
        }
        gateway.live().cancel_all(&client);
        let _ = all_done.recv().await;
    }
    gateway.close_client(&client);
    drop((frames, outbound));
    if stalled.is_cancelled() {
        // Its write would never finish: the client does not read.
        drop(writer);
    } else {
        writer.await;
    }
}

/// One stdio client's reading side.
struct Connection {
    gateway: Arc<Gateway>,
    client: Arc<Client>,
    /// Notifications and mcpx's own requests to the client.
    outbound: outbox::Sender,
    frames: Sender<Written>,
    stalled: Cancel,
    /// Fired when mcpx stops: a request it cancels then is answered, not dropped.
    shutdown: Cancel,
    alive: Sender<()>,
    /// Who is on the other end: whoever can reach these pipes or the daemon's private socket.
    caller: Arc<Identity>,
}

impl Connection {
    fn send(&self, response: Response) {
        queue(&self.frames, &self.stalled, Written::Response(response));
    }

    fn receive(&self, line: &[u8]) {
        let frame = match jsonrpc::parse_frame(line) {
            Ok(frame) => frame,
            Err(rejection) => return self.send(*rejection),
        };
        match self
            .gateway
            .receive(Some(&self.client), self.client.revision(), frame)
        {
            Err(refusal) => self.send(Response::error(None, refusal)),
            Ok(Received::Batch(elements)) => self.batch(elements),
            Ok(Received::One(inbound)) => self.single(inbound),
        }
    }

    /// A message alone: a request runs in a task of its own and its answer is written when it
    /// comes; nothing else waits.
    fn single(&self, inbound: Inbound) {
        match inbound {
            Inbound::Run(request) => {
                let run = self.start(request);
                let (frames, stalled) = (self.frames.clone(), self.stalled.clone());
                crate::runtime::spawn(async move {
                    if let Some(response) = run.await {
                        queue(&frames, &stalled, Written::Response(response));
                    }
                })
                .detach();
            }
            Inbound::Initialize(request) => {
                self.send(self.gateway.initialize(&self.client, &request))
            }
            Inbound::Answer(response) => self.send(response),
            Inbound::Done | Inbound::Stray => {}
        }
    }

    /// Begins a request under its own cancellation; the future (run in a task of the caller's)
    /// yields its response, or `None` if it was cancelled (then nothing may be written for it).
    fn start(&self, request: Request) -> impl Future<Output = Option<Response>> + Send + 'static {
        let id = request.id.clone();
        let (_, run) = self.gateway.begin_request(
            &self.client,
            request,
            self.outbound.clone(),
            Arc::clone(&self.caller),
        );
        let (alive, shutdown) = (self.alive.clone(), self.shutdown.clone());
        async move {
            let _alive = alive;
            let answer = run.await;
            match answer.is_none() && shutdown.is_cancelled() {
                true => Some(crate::transport::shutting_down(id)),
                false => answer,
            }
        }
    }

    /// A batch's elements run concurrently, and their answers go back together, as one array
    /// in the order of the elements.
    fn batch(&self, elements: Vec<Inbound>) {
        let mut replies: Vec<Task<Option<Response>>> = Vec::new();
        for element in elements {
            match element {
                // The core never puts `initialize` in a batch: it refuses it there.
                Inbound::Run(request) | Inbound::Initialize(request) => {
                    replies.push(crate::runtime::spawn(self.start(request)))
                }
                Inbound::Answer(response) => {
                    replies.push(crate::runtime::spawn(async move { Some(response) }))
                }
                Inbound::Done | Inbound::Stray => {}
            }
        }
        let (frames, stalled) = (self.frames.clone(), self.stalled.clone());
        let alive = self.alive.clone();
        crate::runtime::spawn(async move {
            let _alive = alive;
            let mut answers = Vec::new();
            for reply in replies {
                answers.extend(reply.await);
            }
            // A batch of notifications (or of requests all cancelled) gets nothing back.
            if !answers.is_empty() {
                queue(&frames, &stalled, Written::Batch(answers));
            }
        })
        .detach();
    }
}

/// Queues an answer for the writer; one that finds the queue full (or the writer gone) stalls
/// the connection, which then ends.
fn queue(frames: &Sender<Written>, stalled: &Cancel, frame: Written) {
    if frames.try_send(frame).is_err() {
        stalled.cancel();
    }
}

/// One line of output, written straight from the message (a result is never copied into a
/// `Value` to be sent).
#[derive(serde::Serialize)]
#[serde(untagged)]
enum Written {
    /// A notification, or a request of mcpx's own.
    Outbound(Outbound),
    /// The answer to one request.
    Response(Response),
    /// The answers to a batch, as one array.
    Batch(Vec<Response>),
}

/// Owns the output: one frame per line, notifications (and requests) before any response
/// queued after them. Frames that are ready together go out in one write and one flush: a flush
/// per line would cost a thread hand-off each (stdout is blocking I/O behind `Unblock`).
async fn write_frames(
    mut output: impl AsyncWrite + Unpin,
    outbound: outbox::Receiver,
    frames: Receiver<Written>,
) {
    let pending = |o: &outbox::Receiver, f: &Receiver<Written>| !o.is_empty() || !f.is_empty();
    let mut batch = Vec::new();
    while let Some(frame) = next_frame(&outbound, &frames).await {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut batch, &frame);
        batch.push(b'\n');
        if pending(&outbound, &frames) && batch.len() < 64 * 1024 {
            continue;
        }
        metrics::sent(metrics::Door::stdio, batch.len());
        if output.write_all(&batch).await.is_err() || output.flush().await.is_err() {
            // The client went away: an editor stops its servers by closing the pipe or by a
            // signal, which is how a session normally ends, not a fault.
            tracing::info!("the client closed its end of stdout; stopping");
            break;
        }
        batch.clear();
    }
}

/// The next frame to write; `None` once the answers' queue is closed (every request is done)
/// and no notification waits. Notifications are polled first: a request's progress, queued
/// before its response, is written before it.
async fn next_frame(outbound: &outbox::Receiver, frames: &Receiver<Written>) -> Option<Written> {
    let notification = async {
        match outbound.recv().await {
            Ok(message) => Some(Written::Outbound(message)),
            Err(_) => smol::future::pending().await,
        }
    };
    let answer = async {
        match frames.recv().await {
            Ok(frame) => Some(frame),
            Err(_) => outbound.try_recv().map(Written::Outbound),
        }
    };
    smol::future::or(notification, answer).await
}
