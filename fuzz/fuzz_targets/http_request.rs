//! Any bytes as a request to the daemon's HTTP front door: the real server (hyper, the origin and
//! token checks, both eras' handlers, the gateway with its built-in server) on a loopback socket
//! in this process. A first byte of 0 sends the rest raw (the head parser's side); any other
//! builds a well-formed head around the input (`METHOD` from that byte, header lines, a blank
//! line, the body) so that the MCP handling behind the parser is reached. Nothing may panic, and
//! every answer must be HTTP with no server error but the capacity one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpx::config::{Config, Settings};
use mcpx::gateway::Gateway;
use mcpx::transport::http::{serve, HttpOptions};
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The daemon, started once for the whole run on its own thread.
fn daemon() -> SocketAddr {
    static ADDRESS: OnceLock<SocketAddr> = OnceLock::new();
    *ADDRESS.get_or_init(|| {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        std::thread::spawn(move || {
            smol::block_on(async move {
                let settings = Settings::from_environment(Config::default());
                let gateway = Gateway::new(&settings, None, None, None);
                let consents = gateway.live().consents();
                let gate = mcpx::access::Gate::from_settings(&settings, None, consents).unwrap();
                gateway.start().await.unwrap();
                let options = HttpOptions {
                    address,
                    allowed_origins: Vec::new(),
                    allowed_hosts: Vec::new(),
                    sse_keep_alive: Duration::from_millis(100),
                    max_message_bytes: 64 * 1024,
                    grace: Duration::from_millis(100),
                    read_timeout: Duration::from_secs(1),
                    session_idle_timeout: Duration::from_secs(60),
                    max_sessions: 64,
                    gate: std::sync::Arc::new(gate),
                    max_connections: 256,
                    max_headers: 100,
                    max_header_bytes: 16 * 1024,
                    metrics: true,
                    metrics_access: mcpx::transport::http::MetricsAccess::AsMcp,
                    sealer: None,
                    peers: Vec::new(),
                };
                let listener = smol::net::TcpListener::try_from(listener).unwrap();
                serve(listener, gateway, options, mcpx::cancel::Cancel::new())
                    .await
                    .unwrap();
            })
        });
        address
    })
}

/// The request bytes for `data`: raw, or a head built around it.
fn request(data: &[u8]) -> (Vec<u8>, bool) {
    let (&mode, rest) = data.split_first().unwrap_or((&0, &[]));
    if mode == 0 {
        return (rest.to_vec(), true);
    }
    let method = ["POST", "GET", "DELETE"][usize::from(mode % 3)];
    let split = rest.windows(2).position(|w| w == b"\n\n");
    let (headers, body) = match split {
        Some(at) => (&rest[..at], &rest[at + 2..]),
        None => (&[][..], rest),
    };
    let mut bytes = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    )
    .into_bytes();
    for line in headers.split(|&b| b == b'\n') {
        bytes.extend_from_slice(line);
        bytes.extend_from_slice(b"\r\n");
    }
    bytes.extend_from_slice(b"\r\n");
    bytes.extend_from_slice(body);
    (bytes, false)
}

fuzz_target!(|data: &[u8]| {
    let (bytes, raw) = request(data);
    let mut socket = TcpStream::connect(daemon()).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_millis(150)))
        .unwrap();
    if socket.write_all(&bytes).is_err() {
        return; // the server closed first: it refused the head early
    }
    if raw {
        let _ = socket.shutdown(Shutdown::Write);
    }
    let mut answer = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    let until = Instant::now() + Duration::from_millis(150);
    // Until the server closes; an event stream left open (a listen, a GET stream) is cut short.
    while Instant::now() < until {
        match socket.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&chunk[..n]),
        }
    }
    if answer.is_empty() {
        return;
    }
    // An HTTP/1.0 request is answered in HTTP/1.0.
    assert!(answer.starts_with(b"HTTP/1."), "not HTTP: {answer:?}");
    let status = &answer[9..12.min(answer.len())];
    assert!(
        !status.starts_with(b"5") || status == b"503",
        "a server error: {}",
        String::from_utf8_lossy(&answer)
    );
});
