//! Server-sent events: a response body fed from a channel, one `message` event per JSON-RPC
//! message, with `:` comments to keep an idle stream open. No event ids: 2026-07-28 has no
//! resumption.

use super::Body;
use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde::Serialize;
use smol::stream::StreamExt;
use std::convert::Infallible;

/// The writing end of an event stream.
#[derive(Debug, Clone)]
pub struct EventSender {
    tx: async_channel::Sender<Bytes>,
}

impl EventSender {
    /// Sends one message as an event; false once the client is gone.
    pub async fn message(&self, message: &impl Serialize) -> bool {
        self.tx.send(event(message)).await.is_ok()
    }

    /// Queues one message without waiting; false if the client is gone or so far behind that
    /// its queue is full (a slow consumer is dropped, not buffered for forever).
    pub fn try_message(&self, message: &impl Serialize) -> bool {
        let sent = self.tx.try_send(event(message));
        if let Err(async_channel::TrySendError::Full(_)) = sent {
            tracing::warn!("closing an event stream whose client stopped reading");
        }
        sent.is_ok()
    }

    /// Completes when the client is gone (hyper dropped the response body): a stream with nothing
    /// to write would otherwise notice only at its next keep-alive.
    pub async fn gone(&self) {
        self.tx.closed().await
    }

    /// Sends a keep-alive comment; false once the client is gone.
    pub async fn keep_alive(&self) -> bool {
        self.tx
            .send(Bytes::from_static(b": keep-alive\n\n"))
            .await
            .is_ok()
    }
}

/// A 200 `text/event-stream` response and the sender that feeds it. Dropping the sender ends
/// the stream.
pub fn stream() -> (Response<Body>, EventSender) {
    // A small buffer: a client that stops reading slows its own stream, not the daemon.
    let (tx, rx) = async_channel::bounded::<Bytes>(16);
    let frames = rx.map(|bytes| Ok::<_, Infallible>(Frame::data(bytes)));
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(frames)));
    *response.status_mut() = StatusCode::OK;
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    (response, EventSender { tx })
}

/// One `message` event, the message written straight into it (JSON has no raw newlines, so one
/// `data:` line carries it).
fn event(message: &impl Serialize) -> Bytes {
    let mut event = b"event: message\ndata: ".to_vec();
    // Writing into a Vec cannot fail, and the messages have string keys only.
    let _ = serde_json::to_writer(&mut event, message);
    event.extend_from_slice(b"\n\n");
    crate::metrics::sent(crate::metrics::Door::http, event.len());
    Bytes::from(event)
}

#[cfg(test)]
mod v2025_11_25 {
    mod http {
        use crate::transport::http::sse;
        use serde_json::json;

        /// A GET stream whose client stops reading fills a bounded queue and is then dropped,
        /// never buffered without end.
        #[test]
        fn a_slow_consumer_is_dropped_not_buffered() {
            let (_response, events) = sse::stream();
            let sent = (0..1000)
                .take_while(|i| events.try_message(&json!({ "n": i })))
                .count();
            assert!(sent < 1000, "the queue never filled");
            assert!(
                !events.try_message(&json!({})),
                "a full stream accepted more"
            );
        }
    }
}
