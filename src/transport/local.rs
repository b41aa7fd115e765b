//! The daemon's door for editors: an editor's `mcpx serve --attach` connects to a local socket
//! and is served by the daemon's one set of upstreams, instead of starting its own.
//!
//! After one handshake line each way (which configuration the attaching `mcpx serve` runs with;
//! attached, or refused and why), a connection is a stdio session: the very transport `mcpx
//! serve` runs on its pipes ([`super::stdio`]), so every stdio rule holds by construction. The
//! socket is the admin socket's kind: 0600 in a 0700 directory, and a peer of another uid is
//! refused.

use super::stdio::{self, StdioOptions};
use crate::admin;
use crate::cancel::Cancel;
use crate::gateway::{Gateway, ViewId};
use crate::lines::{self, Read};
use serde::{Deserialize, Serialize};
use smol::io::{AsyncWriteExt, BufReader};
use smol::net::unix::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// The first line an attaching `mcpx serve` sends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attach {
    /// The configuration file it runs with, if any: it must be the daemon's.
    pub config: Option<String>,
    /// Its process id, for the logs and the ledger.
    pub pid: u32,
    /// The editor's working directory (its project), for the logs; per-project behaviour can
    /// key on it.
    #[serde(default)]
    pub cwd: Option<String>,
    /// The profile its editor sees the catalog through (`mcpx serve --profile`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<String>,
}

impl Attach {
    /// This process, running with `config`, for an editor that chose `profile`.
    pub fn this_process(config: Option<&std::path::Path>, profile: Option<&str>) -> Attach {
        Attach {
            config: config.map(|p| p.display().to_string()),
            pid: std::process::id(),
            cwd: std::env::current_dir()
                .ok()
                .map(|dir| dir.display().to_string()),
            profile: profile.map(str::to_owned),
        }
    }
}

/// The daemon's answer to [`Attach`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Answer {
    /// From the next line on, the connection is a stdio session.
    Attached,
    /// Not served, and why.
    Refused(String),
}

/// The longest handshake line taken.
const MAX_ATTACH_LINE: usize = 16 * 1024;

/// How long an attaching process may take to say who it is.
const ATTACH_PATIENCE: Duration = Duration::from_secs(5);

/// Serves attaching editors on `listener` until `stop` fires, then removes the socket file.
/// `config` is the daemon's configuration file; sessions run with `options`.
pub async fn serve(
    gateway: Arc<Gateway>,
    listener: UnixListener,
    path: PathBuf,
    config: Option<String>,
    options: StdioOptions,
    stop: Cancel,
) {
    let shutdown = stop.clone();
    admin::accept_until(listener, path, stop, |stream| {
        let (gateway, config) = (Arc::clone(&gateway), config.clone());
        crate::runtime::spawn(session(gateway, stream, config, options, shutdown.clone())).detach();
    })
    .await
}

/// One attached editor: the handshake, then its stdio session.
async fn session(
    gateway: Arc<Gateway>,
    stream: UnixStream,
    config: Option<String>,
    options: StdioOptions,
    shutdown: Cancel,
) {
    let mut writer = stream.clone();
    let mut reader = BufReader::new(stream.clone());
    let attach = match crate::net::private_socket::same_user(&stream) {
        true => read_attach(&mut reader).await,
        false => Err("this socket belongs to another user".to_owned()),
    };
    let mut options = options;
    let view = |attach: &Attach| match &attach.profile {
        Some(name) => gateway.profile(name),
        None => Ok(ViewId::EVERYTHING),
    };
    let answer = match attach {
        Ok(attach) if attach.config == config => match view(&attach) {
            Ok(view) => {
                let cwd = attach.cwd.as_deref().unwrap_or("?");
                tracing::info!(
                    pid = attach.pid,
                    cwd,
                    profile = attach.profile,
                    "an editor's mcpx serve attached"
                );
                options.editor_pid = Some(attach.pid);
                options.view = view;
                Answer::Attached
            }
            Err(why) => Answer::Refused(why),
        },
        Ok(attach) => Answer::Refused(format!(
            "this daemon runs with {}, not {}",
            shown(config.as_deref()),
            shown(attach.config.as_deref())
        )),
        Err(why) => Answer::Refused(why),
    };
    let mut line = serde_json::to_vec(&answer).unwrap_or_default();
    line.push(b'\n');
    if writer.write_all(&line).await.is_err() || answer != Answer::Attached {
        return;
    }
    // Bytes the editor sent after its handshake are already in `reader`: it is the input.
    stdio::serve(gateway, reader, writer, options, shutdown).await;
}

/// Reads the handshake line, within [`ATTACH_PATIENCE`].
async fn read_attach(reader: &mut BufReader<UnixStream>) -> Result<Attach, String> {
    let mut buf = Vec::new();
    let read = smol::future::or(
        async { Some(lines::read_line(reader, &mut buf, MAX_ATTACH_LINE, |_| {}).await) },
        async {
            smol::Timer::after(ATTACH_PATIENCE).await;
            None
        },
    );
    match read.await {
        Some(Read::Line) => {
            serde_json::from_slice(&buf).map_err(|e| format!("not an attach line: {e}"))
        }
        Some(Read::TooLong { .. }) => Err("the attach line is too long".into()),
        Some(Read::Eof) => Err("closed before attaching".into()),
        None => Err(format!("no attach line within {ATTACH_PATIENCE:?}")),
    }
}

fn shown(config: Option<&str>) -> &str {
    config.unwrap_or("no configuration file")
}
