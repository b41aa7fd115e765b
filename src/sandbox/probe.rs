//! `mcpx doctor`: what this machine's kernel enforces for a sandboxed server, found by running
//! the helper exactly as a server would be run (every layer asked for), not by reading version
//! numbers, plus whether a cgroup is delegated for `memory` and `pids`.

use super::{Report, Spec, REPORT_PREFIX};
use crate::config::{Network, Sandbox};
use std::process::ExitCode;

/// Prints what a strict sandbox, a `network = "loopback"` one and one allowed a Unix socket get
/// here; fails if even the filesystem layer is missing.
pub fn doctor() -> ExitCode {
    let tmp = std::env::temp_dir().join(format!(
        "mcpx-doctor-{}",
        rustix::process::getpid().as_raw_nonzero()
    ));
    let mut ok = true;
    let allowed_socket = std::env::temp_dir().join("mcpx-doctor.sock");
    let probes = [
        (Network::None, None),
        (Network::Loopback, None),
        (Network::None, Some(allowed_socket.display().to_string())),
    ];
    for (network, socket) in probes {
        let sandbox = Sandbox {
            network,
            memory: Some("1G".into()),
            unix_sockets: socket.iter().cloned().collect(),
            ..Sandbox::default()
        };
        match run_probe(&sandbox, &tmp) {
            Ok(report) => {
                let name = serde_json::to_value(network).unwrap_or_default();
                match socket {
                    Some(socket) => {
                        println!("sandbox with network = {name}, unixSockets = [{socket:?}]:")
                    }
                    None => println!("sandbox with network = {name}:"),
                }
                report
                    .enforced
                    .iter()
                    .for_each(|l| println!("  enforced  {l}"));
                report
                    .missing
                    .iter()
                    .for_each(|l| println!("  MISSING   {l}"));
                ok &= !report.missing.iter().any(|l| l.starts_with("filesystem"));
            }
            Err(e) => {
                println!("sandbox: the helper did not run: {e}");
                ok = false;
            }
        }
    }
    let _ = std::fs::remove_dir_all(&tmp);
    println!("cgroup: {}", cgroup_delegation());
    match ok {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    }
}

/// Runs `/bin/true` under the helper with `sandbox`; the helper's report.
fn run_probe(sandbox: &Sandbox, tmp: &std::path::Path) -> Result<Report, String> {
    // The probe is no server: it gets no cgroup, and says why a server would or would not.
    let cgroup = match super::cgroup::inspect() {
        Ok(own) => format!(
            "a server's is made under {}, not the probe's",
            own.display()
        ),
        Err(reason) => reason,
    };
    let spec = Spec {
        fail_when_unavailable: false,
        cgroup: Some(Err(cgroup)),
        ..Spec::for_server(sandbox, "true", Some("/usr/bin:/bin"), tmp)?
    };
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut command = std::process::Command::new(me);
    command
        .args(["__sandbox-exec", "--spec"])
        .arg(serde_json::to_string(&spec).map_err(|e| e.to_string())?)
        .args(["--", "true"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let (child, _own) =
        crate::upstream::orphans::spawn_own(|| command.spawn(), std::process::Child::id)
            .map_err(|e| e.to_string())?;
    let output = child.wait_with_output().map_err(|e| e.to_string())?;
    let stderr = String::from_utf8_lossy(&output.stderr);
    let line = stderr
        .lines()
        .next()
        .and_then(|l| l.strip_prefix(REPORT_PREFIX))
        .ok_or_else(|| format!("no report: {stderr}"))?;
    serde_json::from_str(line).map_err(|e| e.to_string())
}

/// Whether this process's cgroup could hold its servers' cgroups, and why not.
fn cgroup_delegation() -> String {
    match super::cgroup::inspect() {
        Ok(own) => format!(
            "{} is mcpx's own: each sandboxed server's memory and pids are its cgroup's limits",
            own.display()
        ),
        Err(reason) => {
            format!("{reason} (memory falls back to RLIMIT_DATA; pids cannot be limited)")
        }
    }
}
