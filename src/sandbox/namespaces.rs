//! Private namespaces, entered inside a user namespace of the server's own.
//!
//! `network = "loopback"`: a private network namespace, whose only interface is a loopback of
//! its own. The server and its children reach each other on 127.0.0.1; the host's 127.0.0.1
//! (where the user's databases and the mcpx daemon itself listen) and every other network are
//! out of reach, whatever the port.
//!
//! Allowed Unix sockets that Landlock cannot name: a private mount namespace in which the
//! directories where sockets live are covered ([`super::unix_sockets::hide`]).
//!
//! Creating either needs `CAP_SYS_ADMIN`, which an unprivileged user has only inside a user
//! namespace of their own: so a user namespace first, with this user mapped to itself (the
//! program sees its own uid), then the others, then the new loopback brought up (a namespace's
//! `lo` starts down) with one netlink request. Where unprivileged user namespaces are off (a
//! sysctl, Ubuntu's AppArmor policy, a container's seccomp profile), `unshare` fails and each
//! layer that needed it is reported missing.

use super::{unix_sockets, Report, Spec};
use crate::config::Network;
use nix::sched::CloneFlags;
use rustix::net::{netlink, AddressFamily, RecvFlags, SendFlags, SocketType};

/// Enters the namespaces `spec` needs: a network namespace for `loopback`, a mount namespace
/// when `hide_sockets`. Returns whether the sockets are hidden.
pub fn apply(spec: &Spec, hide_sockets: bool, report: &mut Report) -> bool {
    let network = spec.network == Network::Loopback;
    if !network && !hide_sockets {
        return false;
    }
    let mut wanted = Vec::new();
    network.then(|| wanted.push("network: private namespace"));
    hide_sockets.then(|| wanted.push("unix sockets: private mount namespace"));
    let entered = match spec.assumes_missing("userns") {
        true => Err("assumed missing: MCPX_SANDBOX_ASSUME_MISSING".to_owned()),
        false => enter(network, hide_sockets),
    };
    if let Err(e) = entered {
        report
            .missing
            .extend(wanted.iter().map(|layer| format!("{layer}: {e}")));
        return false;
    }
    if network {
        match loopback_up() {
            Ok(()) => report
                .enforced
                .push("network: private namespace, its own loopback only".into()),
            Err(e) => report
                .missing
                .push(format!("network: private namespace: bringing lo up: {e}")),
        }
    }
    hide_sockets && {
        match unix_sockets::hide(spec) {
            Ok(()) => true,
            Err(e) => {
                report
                    .missing
                    .push(format!("unix sockets: private mount namespace: {e}"));
                false
            }
        }
    }
}

fn enter(network: bool, mount: bool) -> Result<(), String> {
    let (uid, gid) = (rustix::process::getuid(), rustix::process::getgid());
    let mut flags = CloneFlags::CLONE_NEWUSER;
    if network {
        flags |= CloneFlags::CLONE_NEWNET;
    }
    if mount {
        flags |= CloneFlags::CLONE_NEWNS;
    }
    nix::sched::unshare(flags)
        .map_err(|e| format!("unshare: {e} (unprivileged user namespaces unavailable?)"))?;
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/self/{file}"), text).map_err(|e| format!("{file}: {e}"))
    };
    // setgroups must be denied before an unprivileged process may write its gid_map.
    write("setgroups", "deny".into())?;
    write("uid_map", format!("{0} {0} 1", uid.as_raw()))?;
    write("gid_map", format!("{0} {0} 1", gid.as_raw()))
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
