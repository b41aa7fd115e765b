//! The stdio front door (`mcpx serve`): newline-delimited JSON-RPC on stdin and stdout.
//!
//! Requests run concurrently, each under its own cancellation, so that a `notifications/cancelled`
//! can be read (and reach the upstream) while the request it names is still running; its reply is
//! then withheld. Notifications and `initialize` run in line: a notification must land before
//! whatever follows it, and `initialize` settles what every later reply looks like. One writer
//! task owns stdout, so frames never interleave. At EOF, requests in flight get the drain period
//! to answer, then are cancelled, and `serve` returns.

use crate::gateway::{Client, Gateway, Inbound, Received, ViewId};
use crate::jsonrpc::{self, ErrorObject, Outbound, Request, Response, INVALID_REQUEST};
use crate::lines::{self, Read};
use crate::metrics::{self, Refusal};
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
    /// What the registry calls its sessions: `stdio`, or `attached` on the daemon.
    pub label: &'static str,
    /// An attached session's editor: its `mcpx serve`'s process id.
    pub editor_pid: Option<u32>,
    /// The view of the catalog its client sees (`mcpx serve --profile`).
    pub view: ViewId,
}

/// Serves one client on `input` and `output` until `input` ends and the drain is over.
pub async fn serve(
    gateway: Arc<Gateway>,
    input: impl AsyncRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
    options: StdioOptions,
) {
    let (outbound, outbound_rx) = async_channel::unbounded::<Outbound>();
    let (frames, frames_rx) = async_channel::unbounded::<Written>();
    let writer = smol::spawn(write_frames(output, outbound_rx, frames_rx));
    let client = gateway.open_client(options.label, options.view, outbound.clone());
    if let Some(pid) = options.editor_pid {
        gateway.note_editor(&client, pid);
    }
    // Every request task holds a clone of `alive`; when the last clone is gone, `all_done` wakes.
    let (alive, all_done) = async_channel::bounded::<()>(1);
    let connection = Connection {
        gateway: Arc::clone(&gateway),
        client: Arc::clone(&client),
        outbound,
        frames,
        alive,
    };
    let mut input = BufReader::new(input);
    let mut buf = Vec::new();
    loop {
        match lines::read_line(&mut input, &mut buf, options.max_message_bytes, |_| {}).await {
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
        smol::Timer::after(options.drain).await;
        false
    })
    .await;
    if !drained {
        tracing::info!(
            "stdin closed; cancelling {} request(s) still in flight after {:?}",
            gateway.in_flight(&client),
            options.drain
        );
        gateway.cancel_all(&client);
        let _ = all_done.recv().await;
    }
    gateway.close_client(&client);
    drop((frames, outbound));
    writer.await;
}

/// One stdio client's reading side.
struct Connection {
    gateway: Arc<Gateway>,
    client: Arc<Client>,
    /// Notifications and mcpx's own requests to the client.
    outbound: Sender<Outbound>,
    frames: Sender<Written>,
    alive: Sender<()>,
}

impl Connection {
    fn send(&self, response: Response) {
        let _ = self.frames.try_send(Written::Response(response));
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
                let frames = self.frames.clone();
                smol::spawn(async move {
                    if let Some(response) = run.await {
                        let _ = frames.send(Written::Response(response)).await;
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
        let (_, run) = self
            .gateway
            .begin_request(&self.client, request, self.outbound.clone());
        let alive = self.alive.clone();
        async move {
            let _alive = alive;
            run.await
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
                    replies.push(smol::spawn(self.start(request)))
                }
                Inbound::Answer(response) => {
                    replies.push(smol::spawn(async move { Some(response) }))
                }
                Inbound::Done | Inbound::Stray => {}
            }
        }
        let frames = self.frames.clone();
        let alive = self.alive.clone();
        smol::spawn(async move {
            let _alive = alive;
            let mut answers = Vec::new();
            for reply in replies {
                answers.extend(reply.await);
            }
            // A batch of notifications (or of requests all cancelled) gets nothing back.
            if !answers.is_empty() {
                let _ = frames.send(Written::Batch(answers)).await;
            }
        })
        .detach();
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
    outbound: Receiver<Outbound>,
    frames: Receiver<Written>,
) {
    use smol::stream::StreamExt;
    let pending = |o: &Receiver<Outbound>, f: &Receiver<Written>| !o.is_empty() || !f.is_empty();
    // `or` polls the notifications first: a request's progress, queued before its response, is
    // written before it.
    let mut outgoing = std::pin::pin!(smol::stream::or(
        outbound.clone().map(Written::Outbound),
        frames.clone()
    ));
    let mut batch = Vec::new();
    while let Some(frame) = outgoing.next().await {
        // Writing into a Vec cannot fail.
        let _ = serde_json::to_writer(&mut batch, &frame);
        batch.push(b'\n');
        if pending(&outbound, &frames) && batch.len() < 64 * 1024 {
            continue;
        }
        metrics::sent(metrics::Door::stdio, batch.len());
        if output.write_all(&batch).await.is_err() || output.flush().await.is_err() {
            tracing::warn!("stdout is closed; stopping");
            break;
        }
        batch.clear();
    }
}
