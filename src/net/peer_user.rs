//! Which local user holds the other end of a TCP connection.
//!
//! Loopback is no boundary between the users of one machine: any of them can connect to
//! `127.0.0.1:7777`. The kernel knows whose socket called, and tells it in two ways: a
//! `sock_diag` netlink query for exactly one socket (a few syscalls, whatever else is open), and
//! `/proc/net/tcp{,6}` (a table of every socket, read as a fallback where netlink is refused).
//! Neither exists off Linux, and neither knows a peer on another machine: the answer is then
//! `None`, and the caller must treat the peer as a stranger.

use std::net::{IpAddr, SocketAddr};

/// The uid that owns the socket at `peer` which is connected to our socket at `local`.
pub fn uid_of(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let (peer, local) = (canonical(peer), canonical(local));
    if peer.is_ipv4() != local.is_ipv4() {
        return None;
    }
    diag::uid_of(peer, local).or_else(|| proc_table::uid_of(peer, local))
}

/// An IPv4 client of a dual-stack listener shows as `::ffff:a.b.c.d`; its own socket is IPv4.
fn canonical(address: SocketAddr) -> SocketAddr {
    SocketAddr::new(address.ip().to_canonical(), address.port())
}

/// The address's bytes as the kernel lays them out in `inet_diag_sockid`: network order,
/// IPv4 in the first of four words.
fn address_words(ip: IpAddr) -> [u8; 16] {
    let mut words = [0u8; 16];
    match ip {
        IpAddr::V4(v4) => words[..4].copy_from_slice(&v4.octets()),
        IpAddr::V6(v6) => words.copy_from_slice(&v6.octets()),
    }
    words
}

mod diag {
    //! `NETLINK_SOCK_DIAG`: `SOCK_DIAG_BY_FAMILY` with the socket's four-tuple and no dump
    //! flag, which the kernel answers with that one socket's `inet_diag_msg`.
    use super::address_words;
    use rustix::net::{netlink, AddressFamily, RecvFlags, SendFlags, SocketType};
    use std::net::SocketAddr;

    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const NLM_F_REQUEST: u16 = 1;
    const IPPROTO_TCP: u8 = 6;
    /// `nlmsghdr` (16 bytes) and `inet_diag_req_v2` (56).
    const REQUEST_LEN: usize = 72;
    /// Where `idiag_uid` sits in the answer: `nlmsghdr`, then four bytes of family and state,
    /// the 48-byte socket id, and three words (expires, rqueue, wqueue).
    const UID_AT: usize = 16 + 4 + 48 + 12;

    pub(super) fn uid_of(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
        let socket = rustix::net::socket(
            AddressFamily::NETLINK,
            SocketType::DGRAM,
            Some(netlink::SOCK_DIAG),
        )
        .ok()?;
        rustix::net::send(&socket, &request(peer, local), SendFlags::empty()).ok()?;
        let mut answer = [0u8; 512];
        let (length, _) = rustix::net::recv(&socket, &mut answer, RecvFlags::empty()).ok()?;
        let answer = answer.get(..length)?;
        let kind = u16::from_ne_bytes(answer.get(4..6)?.try_into().ok()?);
        if kind != SOCK_DIAG_BY_FAMILY {
            // NLMSG_ERROR: no such socket (the peer is not on this machine, or already gone).
            return None;
        }
        Some(u32::from_ne_bytes(
            answer.get(UID_AT..UID_AT + 4)?.try_into().ok()?,
        ))
    }

    /// The query for the socket whose own end is `peer` and whose remote end is `local`.
    pub(super) fn request(peer: SocketAddr, local: SocketAddr) -> [u8; REQUEST_LEN] {
        let mut message = [0u8; REQUEST_LEN];
        message[0..4].copy_from_slice(&(REQUEST_LEN as u32).to_ne_bytes());
        message[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        message[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        let family = match peer {
            SocketAddr::V4(_) => AddressFamily::INET,
            SocketAddr::V6(_) => AddressFamily::INET6,
        };
        message[16] = family.as_raw() as u8;
        message[17] = IPPROTO_TCP;
        // Every TCP state.
        message[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
        message[24..26].copy_from_slice(&peer.port().to_be_bytes());
        message[26..28].copy_from_slice(&local.port().to_be_bytes());
        message[28..44].copy_from_slice(&address_words(peer.ip()));
        message[44..60].copy_from_slice(&address_words(local.ip()));
        // Any interface (60..64 stay zero); INET_DIAG_NOCOOKIE.
        message[64..72].fill(0xff);
        message
    }
}

mod proc_table {
    //! `/proc/net/tcp` and `tcp6`: a line per socket, addresses as hex words in host order,
    //! the owner's uid in the eighth column.
    use super::address_words;
    use std::net::SocketAddr;

    pub(super) fn uid_of(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
        let table = match peer {
            SocketAddr::V4(_) => "/proc/net/tcp",
            SocketAddr::V6(_) => "/proc/net/tcp6",
        };
        find(&std::fs::read_to_string(table).ok()?, peer, local)
    }

    /// The uid on the line whose own end is `peer` and remote end `local`.
    pub(super) fn find(table: &str, peer: SocketAddr, local: SocketAddr) -> Option<u32> {
        let (own, remote) = (spelled(peer), spelled(local));
        table.lines().skip(1).find_map(|line| {
            let columns: Vec<&str> = line.split_whitespace().collect();
            let matches =
                columns.get(1) == Some(&own.as_str()) && columns.get(2) == Some(&remote.as_str());
            matches.then(|| columns.get(7)?.parse().ok()).flatten()
        })
    }

    /// An address as the table spells it: each 32-bit word of it in host order, in hex.
    fn spelled(address: SocketAddr) -> String {
        let words = address_words(address.ip());
        let count = if address.is_ipv4() { 1 } else { 4 };
        let mut text: String = words
            .chunks(4)
            .take(count)
            .map(|word| {
                format!(
                    "{:08X}",
                    u32::from_ne_bytes(word.try_into().unwrap_or_default())
                )
            })
            .collect();
        text.push_str(&format!(":{:04X}", address.port()));
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    mod every_revision {
        mod http {
            use super::super::*;
            use std::net::TcpListener;

            /// A connection this process made to itself is this process's uid, found by either
            /// of the kernel's tables.
            #[test]
            fn the_peer_of_a_loopback_connection_is_found_by_uid() {
                let me = rustix::process::geteuid().as_raw();
                for bind in ["127.0.0.1:0", "[::1]:0"] {
                    let Ok(listener) = TcpListener::bind(bind) else {
                        continue; // no IPv6 on this machine
                    };
                    let client =
                        std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
                    let (server, peer) = listener.accept().unwrap();
                    let local = server.local_addr().unwrap();
                    assert_eq!(peer, client.local_addr().unwrap());
                    assert_eq!(diag::uid_of(peer, local), Some(me), "{bind}");
                    assert_eq!(proc_table::uid_of(peer, local), Some(me), "{bind}");
                    assert_eq!(uid_of(peer, local), Some(me), "{bind}");
                }
            }

            /// A four-tuple no socket of this machine has (a peer elsewhere) has no uid.
            #[test]
            fn a_peer_with_no_socket_here_has_no_uid() {
                let listener = TcpListener::bind("127.0.0.1:0").unwrap();
                let local = listener.local_addr().unwrap();
                let nobody: SocketAddr = "127.0.0.1:1".parse().unwrap();
                assert_eq!(uid_of(nobody, local), None);
            }

            /// The table's spelling: `0100007F:1F90` for 127.0.0.1:8080 on a little-endian
            /// machine, the uid in the eighth column.
            #[test]
            fn the_proc_table_is_read_by_its_columns() {
                let peer: SocketAddr = "127.0.0.1:40000".parse().unwrap();
                let local: SocketAddr = "127.0.0.1:8080".parse().unwrap();
                let word = |ip: [u8; 4]| format!("{:08X}", u32::from_ne_bytes(ip));
                let table = format!(
                    "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n\
                     0: {lo}:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n\
                     1: {lo}:9C40 {lo}:1F90 01 00000000:00000000 00:00000000 00000000  1000        0 2\n",
                    lo = word([127, 0, 0, 1])
                );
                assert_eq!(proc_table::find(&table, peer, local), Some(1000));
                assert_eq!(proc_table::find(&table, local, peer), None);
            }
        }
    }
}
