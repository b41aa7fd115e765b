//! The browser checks, for every revision: a browser page may reach the daemon only from an
//! origin the user named. The allowed set comes from configuration, never from the request's
//! `Host`, which is exactly what a DNS-rebinding attacker controls. And a loopback daemon
//! answers only a `Host` that names loopback or a host the user named: a page rebound to
//! 127.0.0.1 sends no `Origin` on a same-origin GET, but its `Host` is still the attacker's name.

use std::net::{IpAddr, SocketAddr};

/// Which origins may send requests, and which hosts they may name.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    allowed: Vec<String>,
    daemon: SocketAddr,
    /// The host names a request may carry besides loopback's and the daemon's address, in
    /// lower case: `allowedOrigins`' and `allowedHosts`'. `None`: any (the daemon is exposed,
    /// and its token is what guards it).
    hosts: Option<Vec<String>>,
}

impl OriginPolicy {
    /// Loopback origins, the daemon's own address when it is a specific one, and `allowed`;
    /// on a loopback daemon, `Host`s naming loopback, `allowed`'s hosts and `hosts`.
    pub fn new(allowed: &[String], hosts: &[String], daemon: SocketAddr) -> Self {
        let allowed: Vec<String> = allowed
            .iter()
            .map(|o| o.trim_end_matches('/').to_owned())
            .collect();
        let named = allowed
            .iter()
            .filter_map(|origin| origin.split_once("://"))
            .map(|(_, authority)| split_authority(authority).0)
            .chain(hosts.iter().map(|h| split_authority(h).0))
            .map(str::to_ascii_lowercase)
            .collect();
        OriginPolicy {
            allowed,
            daemon,
            hosts: daemon.ip().is_loopback().then_some(named),
        }
    }

    /// Whether a request naming this `Host` (or none: HTTP/1.0) may proceed.
    pub fn allows_host(&self, host: Option<&[u8]>) -> bool {
        let (Some(named), Some(host)) = (&self.hosts, host) else {
            return true;
        };
        let Ok(host) = std::str::from_utf8(host) else {
            return false;
        };
        // Every request passes here: compared without copying the header.
        let name = split_authority(host.trim()).0;
        let ip = name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok();
        name.eq_ignore_ascii_case("localhost")
            || ip.is_some_and(|ip| ip.is_loopback() || ip == self.daemon.ip())
            || named.iter().any(|n| n.eq_ignore_ascii_case(name))
    }

    /// Whether a request with this `Origin` (or none) may proceed. No `Origin` is every
    /// non-browser client; `null` names nobody and is refused.
    pub fn allows(&self, origin: Option<&[u8]>) -> bool {
        let Some(origin) = origin else { return true };
        let Ok(origin) = std::str::from_utf8(origin) else {
            return false;
        };
        let origin = origin.trim();
        if self.allowed.iter().any(|a| a == origin) {
            return true;
        }
        let Some((scheme, authority)) = origin.split_once("://") else {
            return false;
        };
        if !matches!(scheme, "http" | "https") || authority.contains('/') {
            return false;
        }
        let (host, port) = split_authority(authority);
        if matches!(host, "localhost" | "127.0.0.1" | "[::1]") {
            return true;
        }
        // The daemon's own address, when it listens on one specific address.
        let specific = !self.daemon.ip().is_unspecified();
        let host_ip = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .ok();
        specific && host_ip == Some(self.daemon.ip()) && port == Some(self.daemon.port())
    }
}

/// Splits `host[:port]`, keeping IPv6 brackets on the host.
fn split_authority(authority: &str) -> (&str, Option<u16>) {
    let (host, port) = match authority.rfind(':') {
        Some(colon) if !authority[colon..].contains(']') => {
            (&authority[..colon], authority[colon + 1..].parse().ok())
        }
        _ => (authority, None),
    };
    (host, port)
}

#[cfg(test)]
mod every_revision {
    mod origin {
        use crate::transport::http::origin::OriginPolicy;

        fn policy() -> OriginPolicy {
            OriginPolicy::new(
                &["https://app.example".into()],
                &[],
                "192.168.1.5:7777".parse().unwrap(),
            )
        }

        fn loopback_policy() -> OriginPolicy {
            OriginPolicy::new(
                &["https://app.example:8443".into()],
                &["mcp.internal".into()],
                "127.0.0.1:7777".parse().unwrap(),
            )
        }

        /// DNS rebinding: a loopback daemon answers only a `Host` naming loopback, the daemon,
        /// an allowed origin's host or an allowed host.
        #[test]
        fn a_loopback_daemon_answers_only_hosts_it_was_told_of() {
            let p = loopback_policy();
            for host in [
                None,
                Some("127.0.0.1:7777"),
                Some("localhost"),
                Some("LOCALHOST:7777"),
                Some("127.3.4.5"),
                Some("[::1]:7777"),
                Some("app.example"),
                Some("mcp.internal:80"),
            ] {
                assert!(p.allows_host(host.map(str::as_bytes)), "{host:?}");
            }
            for host in [
                "evil.example:7777",
                "localhost.evil.example",
                "app.example.evil",
                "",
            ] {
                assert!(!p.allows_host(Some(host.as_bytes())), "{host}");
            }
        }

        /// An exposed daemon is guarded by its token and may be reached by any of its names.
        #[test]
        fn an_exposed_daemon_answers_any_host() {
            assert!(policy().allows_host(Some(b"anything.example")));
        }

        #[test]
        fn no_origin_and_loopback_origins_are_allowed() {
            let p = policy();
            for origin in [
                None,
                Some("http://localhost:3000"),
                Some("https://127.0.0.1"),
                Some("http://[::1]:9"),
            ] {
                assert!(p.allows(origin.map(str::as_bytes)), "{origin:?}");
            }
        }

        #[test]
        fn the_daemon_address_and_configured_origins_are_allowed() {
            let p = policy();
            assert!(p.allows(Some(b"http://192.168.1.5:7777")));
            assert!(p.allows(Some(b"https://app.example")));
        }

        #[test]
        fn null_and_other_origins_are_refused() {
            let p = policy();
            for origin in [
                "null",
                "https://evil.example",
                "http://localhost.evil.example",
                "https://app.example.evil",
                "http://192.168.1.5:8000",
            ] {
                assert!(!p.allows(Some(origin.as_bytes())), "{origin}");
            }
        }

        #[test]
        fn an_unspecified_daemon_address_allows_no_extra_origin() {
            let p = OriginPolicy::new(&[], &[], "0.0.0.0:7777".parse().unwrap());
            assert!(!p.allows(Some(b"http://0.0.0.0:7777")));
        }
    }
}
