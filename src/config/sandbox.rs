//! `[servers.NAME.sandbox]`: what a stdio server may touch. Its presence confines the server;
//! every key has a default that confines it tightly (the runtime's own files to read, a private
//! temporary directory to write, no network), so `sandbox = {}` is already a strict sandbox.
//! [`crate::sandbox`] turns it into what the helper enforces.

use serde::{Deserialize, Serialize};

/// `[servers.NAME.sandbox]`.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default, rename_all = "camelCase")]
pub struct Sandbox {
    /// Paths it may read (and list), besides what it may write or run. `"system"` stands for
    /// the usual runtime paths and the command's own prefix; `~` is the home directory; `$TMP`
    /// its private temporary directory.
    pub fs_read: Vec<String>,
    /// Paths it may write, create and remove under (and read).
    pub fs_write: Vec<String>,
    /// Paths it may run programs from (and read).
    pub fs_exec: Vec<String>,
    /// What network it may use.
    pub network: Network,
    /// With `network = "tcp"`: the TCP ports it may connect to.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tcp_connect: Vec<u16>,
    /// With `network = "tcp"`: the TCP ports it may listen on.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tcp_bind: Vec<u16>,
    /// The Unix sockets it may connect to, by path (`~` is the home directory). None by
    /// default, in every network mode: mcpx's own admin socket, the session bus and the
    /// Docker socket are each a way out of a sandbox.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unix_sockets: Vec<String>,
    /// The most files it may hold open (`RLIMIT_NOFILE`).
    pub nofile: u64,
    /// Its memory, as `"512M"`: its cgroup's `memory.max` where mcpx has a delegated cgroup,
    /// and `RLIMIT_DATA` per process (never `RLIMIT_AS`, which breaks Node: it reserves far more
    /// address space than it uses).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// The most processes and threads it may run: its cgroup's `pids.max`, which needs a
    /// delegated cgroup (`RLIMIT_NPROC` counts every process of the user, so it cannot stand in).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pids: Option<u64>,
    /// What happens when the kernel cannot apply a layer asked for.
    pub on_unavailable: OnUnavailable,
}

impl Default for Sandbox {
    fn default() -> Self {
        Sandbox {
            fs_read: vec![SYSTEM.into()],
            fs_write: vec![PRIVATE_TMP.into()],
            fs_exec: vec![SYSTEM.into()],
            network: Network::None,
            tcp_connect: Vec::new(),
            tcp_bind: Vec::new(),
            unix_sockets: Vec::new(),
            nofile: 1024,
            memory: None,
            pids: None,
            on_unavailable: OnUnavailable::Fail,
        }
    }
}

/// The preset in `fsRead` and `fsExec` for the runtime's own files.
pub const SYSTEM: &str = "system";

/// The server's private temporary directory, also its `TMPDIR`.
pub const PRIVATE_TMP: &str = "$TMP";

/// `network`: what a sandboxed server may reach.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Network {
    /// No Internet sockets at all, TCP or UDP.
    #[default]
    None,
    /// A private network namespace: its own loopback, for itself and its children, and not
    /// the host's (needs unprivileged user namespaces).
    Loopback,
    /// TCP only to the ports in `tcpConnect` and on those in `tcpBind` (Landlock ABI 4); UDP
    /// stays open, so name lookups work.
    Tcp,
    /// Not restricted.
    Any,
}

/// `onUnavailable`: whether a sandbox the kernel cannot fully apply still runs the server.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OnUnavailable {
    /// The server is not started; its state says which layer was missing.
    #[default]
    Fail,
    /// The server starts with what could be applied; the log, `mcpx status` and
    /// `mcpx_sandbox_degraded` say what is missing.
    Warn,
}

/// Server `name`'s private temporary directory (`$TMP`, its `TMPDIR`): under mcpx's runtime
/// directory, which only this user can enter.
pub fn private_tmp_of(name: &str) -> std::path::PathBuf {
    super::daemon::runtime_dir().join("sandbox").join(name)
}

/// A size such as `512M`, `2G` or `1048576`, in bytes.
pub fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, ""), |at| text.split_at(at));
    let scale: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        _ => return Err(format!("{text:?} is not a size such as \"512M\" or \"2G\"")),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("{text:?} is not a size such as \"512M\" or \"2G\""))
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod sandbox {
            use crate::config::sandbox::parse_size;

            #[test]
            fn memory_sizes_read_with_binary_units() {
                assert_eq!(parse_size("512M"), Ok(512 << 20));
                assert_eq!(parse_size("2G"), Ok(2 << 30));
                assert_eq!(parse_size("4096"), Ok(4096));
                assert!(parse_size("lots").is_err());
                assert!(parse_size("0").is_err());
            }
        }
    }
}
