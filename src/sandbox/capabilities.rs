//! No privilege at all: every capability set emptied and `no_new_privs`, so that a server mcpx
//! runs as root holds no more than one run as a user. Without it, root's server keeps
//! `CAP_SYS_PTRACE` and `CAP_DAC_OVERRIDE` and reads any process's `/proc/PID/environ`.
//!
//! The bounding set goes first (dropping from it needs `CAP_SETPCAP`, about to go), then the
//! ambient set, then effective, permitted and inheritable at once. An unprivileged process
//! cannot drop from its bounding set, and needs not: with `no_new_privs`, `execve` grants
//! nothing, setuid programs included.

use super::Report;
use rustix::thread::{CapabilitySet, CapabilitySets};

/// Empties every capability set of this process and sets `no_new_privs`.
pub fn drop_all(report: &mut Report) {
    match drop_every_set() {
        Ok(bounding) => report.enforced.push(format!(
            "capabilities: none (effective, permitted, inheritable, ambient{bounding}); \
             no_new_privs"
        )),
        Err(e) => report.missing.push(format!("capabilities: {e}")),
    }
}

/// `", bounding"` when the bounding set was emptied too (only a privileged process can).
fn drop_every_set() -> Result<&'static str, String> {
    // Landlock and seccomp both require it; set here so neither depends on the other.
    rustix::thread::set_no_new_privs(true).map_err(|e| format!("no_new_privs: {e}"))?;
    let mut bounding = ", bounding";
    for bit in 0..u64::BITS {
        let capability = CapabilitySet::from_bits_retain(1 << bit);
        match rustix::thread::remove_capability_from_bounding_set(capability) {
            Ok(()) => {}
            // Past the kernel's last capability.
            Err(rustix::io::Errno::INVAL) => break,
            Err(rustix::io::Errno::PERM) => bounding = "",
            Err(e) => return Err(format!("bounding set: {e}")),
        }
    }
    rustix::thread::clear_ambient_capability_set().map_err(|e| format!("ambient set: {e}"))?;
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    rustix::thread::set_capabilities(None, none).map_err(|e| format!("capset: {e}"))?;
    Ok(bounding)
}
