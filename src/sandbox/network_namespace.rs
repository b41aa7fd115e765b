//! `network = "loopback"`: a private network namespace, whose only interface is a loopback of
//! its own. The server and its children reach each other on 127.0.0.1; the host's 127.0.0.1
//! (where the user's databases and the mcpx daemon itself listen) and every other network are
//! out of reach, whatever the port.
//!
//! Creating a network namespace needs `CAP_SYS_ADMIN`, which an unprivileged user has only
//! inside a user namespace of their own: so a user namespace first, with this user mapped to
//! itself (the program sees its own uid), then the network namespace, then the new loopback
//! brought up (a namespace's `lo` starts down) with one netlink request. Where unprivileged user
//! namespaces are off (a sysctl, Ubuntu's AppArmor policy, a container's seccomp profile),
//! `unshare` fails and the layer is reported missing.

use super::{Report, Spec};
use nix::sched::CloneFlags;
use rustix::net::{netlink, AddressFamily, RecvFlags, SendFlags, SocketType};

/// Moves this process into a private user and network namespace, loopback up.
pub fn apply(spec: &Spec, report: &mut Report) {
    if spec.assumes_missing("userns") {
        report.missing.push(
            "network: private namespace (assumed missing: MCPX_SANDBOX_ASSUME_MISSING)".into(),
        );
        return;
    }
    match enter() {
        Ok(()) => report
            .enforced
            .push("network: private namespace, its own loopback only".into()),
        Err(e) => report
            .missing
            .push(format!("network: private namespace: {e}")),
    }
}

fn enter() -> Result<(), String> {
    let (uid, gid) = (rustix::process::getuid(), rustix::process::getgid());
    nix::sched::unshare(CloneFlags::CLONE_NEWUSER | CloneFlags::CLONE_NEWNET)
        .map_err(|e| format!("unshare: {e} (unprivileged user namespaces unavailable?)"))?;
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/self/{file}"), text).map_err(|e| format!("{file}: {e}"))
    };
    // setgroups must be denied before an unprivileged process may write its gid_map.
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{0} {0} 1", uid.as_raw()))?;
    write("gid_map", format!("{0} {0} 1", gid.as_raw()))?;
    loopback_up().map_err(|e| format!("bringing lo up: {e}"))
}

/// `ip link set lo up`, as one `RTM_NEWLINK` request on a route netlink socket.
fn loopback_up() -> std::io::Result<()> {
    const RTM_NEWLINK: u16 = 16;
    const NLMSG_ERROR: u16 = 2;
    const NLM_F_REQUEST: u16 = 1;
    const NLM_F_ACK: u16 = 4;
    const IFF_UP: u32 = 1;
    // A new namespace's loopback is always its first interface.
    const LOOPBACK_INDEX: i32 = 1;
    let socket = rustix::net::socket(AddressFamily::NETLINK, SocketType::RAW, None)?;
    let mut message = Vec::with_capacity(32);
    // struct nlmsghdr: length, type, flags, sequence, port id.
    message.extend_from_slice(&32u32.to_ne_bytes());
    message.extend_from_slice(&RTM_NEWLINK.to_ne_bytes());
    message.extend_from_slice(&(NLM_F_REQUEST | NLM_F_ACK).to_ne_bytes());
    message.extend_from_slice(&1u32.to_ne_bytes());
    message.extend_from_slice(&0u32.to_ne_bytes());
    // struct ifinfomsg: family, padding, type, index, flags, the flags to change.
    message.extend_from_slice(&[0, 0]);
    message.extend_from_slice(&0u16.to_ne_bytes());
    message.extend_from_slice(&LOOPBACK_INDEX.to_ne_bytes());
    message.extend_from_slice(&IFF_UP.to_ne_bytes());
    message.extend_from_slice(&IFF_UP.to_ne_bytes());
    let kernel = netlink::SocketAddrNetlink::new(0, 0);
    rustix::net::sendto(&socket, &message, SendFlags::empty(), &kernel)?;
    let mut answer = [0u8; 64];
    let (read, _) = rustix::net::recv(&socket, &mut answer, RecvFlags::empty())?;
    // The acknowledgement is an NLMSG_ERROR whose error is 0, or minus an errno.
    let kind = u16::from_ne_bytes([answer[4], answer[5]]);
    if read < 20 || kind != NLMSG_ERROR {
        return Err(std::io::Error::other("no acknowledgement from the kernel"));
    }
    match i32::from_ne_bytes([answer[16], answer[17], answer[18], answer[19]]) {
        0 => Ok(()),
        errno => Err(std::io::Error::from_raw_os_error(-errno)),
    }
}
