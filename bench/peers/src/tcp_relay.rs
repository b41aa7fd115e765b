//! The benchmark's hop floor: a TCP relay on tokio that copies bytes between each client and a
//! new connection to the target, with no HTTP and no MCP. Whatever it adds to a call's latency is
//! what any extra process in the path costs on this machine (two more wakeups per call); the
//! gateway's own overhead is read against it.
//!
//! Usage: tcp-relay LISTEN_ADDRESS TARGET_ADDRESS

use tokio::net::{TcpListener, TcpStream};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let (listen, target) = match (args.next(), args.next()) {
        (Some(listen), Some(target)) => (listen, target),
        _ => {
            eprintln!("usage: tcp-relay LISTEN_ADDRESS TARGET_ADDRESS");
            std::process::exit(2);
        }
    };
    let listener = TcpListener::bind(&listen).await?;
    loop {
        let (mut client, _) = listener.accept().await?;
        let target = target.clone();
        tokio::spawn(async move {
            let Ok(mut server) = TcpStream::connect(&target).await else {
                return;
            };
            let _ = client.set_nodelay(true);
            let _ = server.set_nodelay(true);
            let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
        });
    }
}
