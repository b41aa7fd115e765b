//! Requests one replica passes to others.
//!
//! A 2026-07-28 retry that lands on a replica other than the one holding the call it resumes
//! (its `requestState` names the holder and where it is reached, signed under the cluster key,
//! so the address is trusted), and a `tasks/*` request of either era for a task another replica
//! holds (its sealed id says so), go to the holder: the request as the client sent it, the answer
//! streamed back as the holder writes it, progress events included. The client closing its
//! stream closes the forwarded one, which cancels the call there as it would anywhere.
//!
//! A legacy session's `DELETE` goes to every peer (`[cluster] peers`), so that each refuses the
//! id from then on, not only the replica that took it.

use super::{json_response, status, Body};
use crate::json::Member;
use crate::jsonrpc::{self, ErrorObject, INVALID_PARAMS};
use crate::metrics::{self, PassedOn};
use crate::net::client::Pool;
use crate::protocol::Era;
use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, Method, Response};
use http_body_util::BodyExt;
use hyper::body::{Frame, Incoming};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

/// Marks a forwarded request: its receiver serves it, never forwards it again.
pub(super) const FORWARDED: HeaderName = HeaderName::from_static("mcpx-forwarded");

/// Headers of one hop only, never passed on.
const HOP_BY_HOP: [HeaderName; 6] = [
    header::HOST,
    header::CONNECTION,
    header::CONTENT_LENGTH,
    header::TRANSFER_ENCODING,
    header::TE,
    header::UPGRADE,
];

/// How long a peer may take to hear of a `DELETE`.
const PEER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Passes a `DELETE` received with `headers` at `path` to every address of every peer, in the
/// background; an address that cannot be told is logged and counted, and the others are told all
/// the same (it refuses the id only once its `sessionLifetime` ends).
pub(super) fn tell_peers(peers: &[String], path: &str, headers: &HeaderMap) {
    if peers.is_empty() {
        return;
    }
    let (peers, path) = (peers.to_vec(), path.to_owned());
    let mut passed = passed_on(headers);
    passed.remove(header::CONTENT_TYPE);
    crate::runtime::spawn(async move {
        for peer in peers {
            let addresses = match smol::net::resolve(peer.as_str()).await {
                Ok(addresses) => addresses,
                Err(e) => {
                    metrics::passed_on(PassedOn::end, false);
                    tracing::warn!("could not tell peer {peer} of a session's end: {e}");
                    continue;
                }
            };
            for address in addresses {
                let told = smol::future::or(tell(address, &path, &passed), async {
                    crate::deadline::sleep(PEER_TIMEOUT).await;
                    Err(format!("no answer in {PEER_TIMEOUT:?}"))
                })
                .await;
                metrics::passed_on(PassedOn::end, told.is_ok());
                if let Err(why) = told {
                    tracing::warn!(
                        "could not tell peer {peer} ({address}) of a session's end: {why}"
                    );
                }
            }
        }
    })
    .detach();
}

/// Sends the `DELETE` to one address of a peer.
async fn tell(address: SocketAddr, path: &str, headers: &HeaderMap) -> Result<(), String> {
    let uri = format!("http://{address}{path}")
        .parse()
        .map_err(|e| format!("{e}"))?;
    let pool = Pool::new(uri, HeaderMap::new());
    let delete = pool.build(Method::DELETE, String::new(), headers.clone())?;
    let mut sender = pool.detached().await?;
    let answer = sender
        .send_request(delete)
        .await
        .map_err(|e| e.to_string())?;
    match answer.status().is_success() {
        true => Ok(()),
        false => Err(format!("answered {}", answer.status())),
    }
}

/// `headers` without those of one hop, marked as passed on by a replica.
fn passed_on(headers: &HeaderMap) -> HeaderMap {
    let mut passed = headers.clone();
    for name in HOP_BY_HOP {
        passed.remove(name);
    }
    passed.insert(FORWARDED, http::HeaderValue::from_static("1"));
    passed
}

/// Sends `request`, received with `headers` at `path`, to the replica at `at`, and relays its
/// answer.
pub(super) async fn to_holder(
    at: &str,
    path: &str,
    headers: &HeaderMap,
    request: &jsonrpc::Request,
    era: Era,
) -> Response<Body> {
    let relayed = relay(at, path, headers, request).await;
    metrics::passed_on(PassedOn::retry, relayed.is_ok());
    match relayed {
        Ok(response) => response,
        Err(why) => {
            tracing::warn!("a request for what {at} holds could not be forwarded: {why}");
            let retry = request
                .params
                .as_ref()
                .and_then(|p| p.member("requestState"));
            let message = match retry {
                Some(_) => format!("Invalid params: the replica holding this call ({at}) cannot be reached; call again without requestState"),
                None => format!("Invalid params: the replica holding this task ({at}) cannot be reached; the task is lost with it, so call the tool again"),
            };
            let error = ErrorObject::new(INVALID_PARAMS, message);
            let refusal = jsonrpc::Response::error(Some(request.id.clone()), error);
            // A legacy session's errors are answers like any other; the modern era's have a
            // status of their own.
            let status = match era {
                Era::Legacy => http::StatusCode::OK,
                Era::Modern => status::modern_status(&refusal),
            };
            json_response(status, &refusal)
        }
    }
}

async fn relay(
    at: &str,
    path: &str,
    headers: &HeaderMap,
    request: &jsonrpc::Request,
) -> Result<Response<Body>, String> {
    let uri = format!("http://{at}{path}")
        .parse()
        .map_err(|e| format!("{at:?}: {e}"))?;
    let pool = Pool::new(uri, HeaderMap::new());
    let forwarded = pool.build(
        Method::POST,
        serde_json::to_string(request).map_err(|e| e.to_string())?,
        passed_on(headers),
    )?;
    let mut sender = pool.detached().await?;
    let answer = sender
        .send_request(forwarded)
        .await
        .map_err(|e| e.to_string())?;
    let (mut parts, body) = answer.into_parts();
    for name in HOP_BY_HOP {
        parts.headers.remove(name);
    }
    Ok(Response::from_parts(parts, Relayed(body).boxed()))
}

/// The holder's body as the client's: a failure mid-way ends it (the client sees the stream
/// end without its answer, as when any replica dies under it).
struct Relayed(Incoming);

impl hyper::body::Body for Relayed {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match Pin::new(&mut self.0).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => Poll::Ready(Some(Ok(frame))),
            Poll::Ready(Some(Err(_)) | None) => Poll::Ready(None),
            Poll::Pending => Poll::Pending,
        }
    }
}
