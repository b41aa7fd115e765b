//! The benchmark's floor: hyper serving HTTP/1.1 on tokio, answering every POST with a JSON-RPC
//! result that echoes its body, with no MCP at all. Nothing that speaks MCP over HTTP/1.1 on this
//! machine can be faster, so mcpx's figures are read as a fraction of this one.
//!
//! Usage: hyper-floor ADDRESS

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;

async fn echo(
    request: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let body = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    // Parse and serialise as an MCP server must, so the floor does the same JSON work once.
    let parsed: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let answer = serde_json::json!({"jsonrpc": "2.0", "id": parsed["id"], "result": {"content": [
        {"type": "text", "text": parsed["params"]["arguments"]["text"]}]}});
    let mut response = Response::new(Full::new(Bytes::from(answer.to_string())));
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let address = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7802".into());
    let listener = tokio::net::TcpListener::bind(address).await?;
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service_fn(echo))
                .await;
        });
    }
}
