//! The console's view of the socket: a thread that holds a `watch` on it and reports each
//! snapshot.

use mcpx::admin::protocol::{Command, Reply, Snapshot};
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::sync::mpsc::Sender;
use std::time::Duration;

/// What the watching thread reports.
pub enum Feed {
    /// A new state.
    Snapshot(Box<Snapshot>),
    /// The watch broke, and why; it tries again in a second.
    Disconnected(String),
}

/// Holds a `watch` on the socket, reconnecting once a second while mcpx is away.
pub fn watch(socket: PathBuf, feed: Sender<Feed>) {
    loop {
        let outcome = (|| -> std::io::Result<()> {
            let mut stream = mcpx::net::private_socket::connect(&socket)?;
            let mut line = serde_json::to_vec(&Command::Watch)?;
            line.push(b'\n');
            stream.write_all(&line)?;
            for line in BufReader::new(stream).lines() {
                match serde_json::from_str::<Reply>(&line?) {
                    // A failed send means the drawing loop has ended, and the watch with it.
                    Ok(Reply::Snapshot(snapshot)) => feed
                        .send(Feed::Snapshot(snapshot))
                        .map_err(|_| std::io::Error::other("the console has quit"))?,
                    Ok(Reply::Error { message, .. }) => return Err(std::io::Error::other(message)),
                    _ => {}
                }
            }
            Err(std::io::Error::other("mcpx closed the connection"))
        })();
        let why = outcome
            .err()
            .map_or_else(|| "stopped".to_owned(), |e| e.to_string());
        if feed.send(Feed::Disconnected(why)).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}
