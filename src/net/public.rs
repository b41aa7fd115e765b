//! Whether an address is on the public internet: what a URL a stranger hands mcpx (a client's
//! metadata document, its keys) may lead to. Anything else (loopback, the private ranges,
//! link-local, carrier-grade NAT, documentation, multicast, the reserved blocks, IPv6's
//! unique-local and the IPv4 mapped into it) is the machine or the network around it, which a
//! stranger must not make mcpx reach (server-side request forgery).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is a public unicast address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => public_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => public_v4(v4),
            None => public_v6(v6),
        },
    }
}

fn public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || a == 0
        || a >= 240
        // 100.64.0.0/10, carrier-grade NAT (Tailscale's addresses among them).
        || (a == 100 && (64..128).contains(&b))
        // 192.0.0.0/24, protocol assignments.
        || (a == 192 && b == 0 && c == 0)
        // 198.18.0.0/15, benchmarking.
        || (a == 198 && (b == 18 || b == 19)))
}

fn public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    !(ip.is_unspecified()
        || ip.is_loopback()
        || ip.is_multicast()
        // fc00::/7 unique local, fe80::/10 link-local.
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        // 2001:db8::/32 documentation.
        || (first == 0x2001 && ip.segments()[1] == 0x0db8)
        // 64:ff9b::/96 and 64:ff9b:1::/48, NAT64: an IPv4 address behind it may be private.
        || (first == 0x0064 && ip.segments()[1] == 0xff9b)
        // ::/96, the IPv4-compatible addresses.
        || ip.segments()[..6] == [0; 6])
}

#[cfg(test)]
mod every_revision {
    mod net {
        use super::super::is_public;

        #[test]
        fn only_public_unicast_addresses_are_public() {
            for private in [
                "127.0.0.1",
                "10.1.2.3",
                "172.16.0.1",
                "192.168.1.1",
                "169.254.169.254",
                "100.100.1.1",
                "0.0.0.0",
                "255.255.255.255",
                "224.0.0.1",
                "198.18.0.1",
                "::1",
                "::",
                "fd00::1",
                "fe80::1",
                "::ffff:127.0.0.1",
                "::ffff:10.0.0.1",
                "64:ff9b::a00:1",
                "2001:db8::1",
                "::127.0.0.1",
            ] {
                assert!(!is_public(private.parse().unwrap()), "{private}");
            }
            for public in [
                "1.1.1.1",
                "93.184.216.34",
                "2606:4700::1111",
                "::ffff:8.8.8.8",
            ] {
                assert!(is_public(public.parse().unwrap()), "{public}");
            }
        }
    }
}
