//! The benchmark's floor of an HTTP hop: hyper on tokio taking each POST and sending its body
//! on to the target over a pool of kept-alive connections (hyper-util's client, `TCP_NODELAY`
//! on both sides), with the client's headers, answering with the target's status, content type and body. It reads no JSON
//! and knows no MCP, so what it costs is what the HTTP machinery of any gateway costs on this
//! machine; mcpx's own work is read against it.
//!
//! Usage: hyper-proxy LISTEN_ADDRESS TARGET_URL

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::{TokioExecutor, TokioIo};
use std::sync::Arc;

type Upstream = Client<HttpConnector, Full<Bytes>>;

async fn forward(
    upstream: Arc<(Upstream, hyper::Uri)>,
    request: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let (parts, body) = request.into_parts();
    let body = body.collect().await?.to_bytes();
    let mut onward = Request::new(Full::new(body));
    *onward.method_mut() = parts.method;
    *onward.uri_mut() = upstream.1.clone();
    *onward.headers_mut() = parts.headers;
    // The client names the target's host, and the body's length is the body's.
    for hop_only in [hyper::header::HOST, hyper::header::CONTENT_LENGTH] {
        onward.headers_mut().remove(hop_only);
    }
    let Ok(answer) = upstream.0.request(onward).await else {
        let mut failed = Response::new(Full::new(Bytes::new()));
        *failed.status_mut() = StatusCode::BAD_GATEWAY;
        return Ok(failed);
    };
    let (parts, body) = answer.into_parts();
    let body = body.collect().await?.to_bytes();
    let mut response = Response::new(Full::new(body));
    *response.status_mut() = parts.status;
    if let Some(value) = parts.headers.get(hyper::header::CONTENT_TYPE) {
        response
            .headers_mut()
            .insert(hyper::header::CONTENT_TYPE, value.clone());
    }
    Ok(response)
}

// One worker thread, as mcpx runs one executor thread by default.
#[tokio::main(worker_threads = 1)]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (listen, target) = match (args.next(), args.next().and_then(|t| t.parse().ok())) {
        (Some(listen), Some(target)) => (listen, target),
        _ => {
            eprintln!("usage: hyper-proxy LISTEN_ADDRESS TARGET_URL");
            std::process::exit(2);
        }
    };
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client = Client::builder(TokioExecutor::new()).build(connector);
    let upstream = Arc::new((client, target));
    let listener = tokio::net::TcpListener::bind(listen).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        let upstream = Arc::clone(&upstream);
        tokio::spawn(async move {
            let service = service_fn(move |request| forward(Arc::clone(&upstream), request));
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
