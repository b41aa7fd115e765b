//! The `Origin` check, for every revision: a browser page may reach the daemon only from an
//! origin the user named. The allowed set comes from configuration, never from the request's
//! `Host`, which is exactly what a DNS-rebinding attacker controls.

use std::net::{IpAddr, SocketAddr};

/// Which origins may send requests.
#[derive(Debug, Clone)]
pub struct OriginPolicy {
    allowed: Vec<String>,
    daemon: SocketAddr,
}

impl OriginPolicy {
    /// Loopback origins, the daemon's own address when it is a specific one, and `allowed`.
    pub fn new(allowed: &[String], daemon: SocketAddr) -> Self {
        OriginPolicy {
            allowed: allowed
                .iter()
                .map(|o| o.trim_end_matches('/').to_owned())
                .collect(),
            daemon,
        }
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
                "192.168.1.5:7777".parse().unwrap(),
            )
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
            let p = OriginPolicy::new(&[], "0.0.0.0:7777".parse().unwrap());
            assert!(!p.allows(Some(b"http://0.0.0.0:7777")));
        }
    }
}
