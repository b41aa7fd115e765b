//! The daemon's HTTP endpoints as a table: which paths each answers ([`ROUTES`], first match
//! wins), and, on each [`Endpoint`], how it admits a request once the host and head checks
//! passed. [`super::FrontDoor`] finds a request's endpoint and matches on it, so a new endpoint
//! is a compile error until the door says how it is answered.

use crate::access::builtin::AuthServer;
use crate::gateway::{event_relay, person_login, APPROVAL_PAGE};

/// An endpoint of the HTTP door.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Endpoint {
    /// `/healthz`: admits anyone; what it says is only whether mcpx serves (more to a local
    /// caller).
    Health,
    /// RFC 9728 metadata of each door: admits anyone, as the RFC asks.
    ResourceMetadata,
    /// The built-in authorization server's endpoints: admits anyone, and proves its clients
    /// itself (PKCE, its own client authentication, the owner's consent).
    AuthorizationServer,
    /// A person's sign-in to a per-identity server, and its callback: proved by the
    /// sign-in's own single-use state.
    PersonLogin,
    /// A relayed webhook's callback: proved by the subscription's signature.
    RelayedWebhook,
    /// A call waiting for approval: its id shows it, the owner secret decides it.
    ApprovalPage,
    /// `/metrics`: `[daemon] metricsToken`'s bearer, or the MCP door's admission where that is
    /// unset on a daemon that admits only its owner.
    Metrics,
    /// `/mcp` and `/mcp/NAME`: the MCP door's admission (a local caller's proof or a token,
    /// the Origin rules, a profile's door).
    Mcp,
}

/// Which paths a row answers.
enum Paths {
    /// This path only.
    Exactly(&'static str),
    /// This path and every one under it.
    Under(&'static str),
    /// What the authorization server says it serves.
    OfTheAuthorizationServer,
}

impl Paths {
    fn take(&self, path: &str) -> bool {
        match self {
            Paths::Exactly(exactly) => path == *exactly,
            Paths::Under(prefix) => path.starts_with(prefix),
            Paths::OfTheAuthorizationServer => AuthServer::serves(path),
        }
    }
}

/// Every endpoint's paths, in the order they are tried.
const ROUTES: [(Paths, Endpoint); 10] = [
    (Paths::Exactly("/mcp"), Endpoint::Mcp),
    (Paths::Under("/mcp/"), Endpoint::Mcp),
    (Paths::Exactly("/healthz"), Endpoint::Health),
    (
        Paths::Under(crate::access::METADATA_PREFIX),
        Endpoint::ResourceMetadata,
    ),
    (
        Paths::OfTheAuthorizationServer,
        Endpoint::AuthorizationServer,
    ),
    (Paths::Exactly(person_login::START), Endpoint::PersonLogin),
    (
        Paths::Exactly(person_login::CALLBACK),
        Endpoint::PersonLogin,
    ),
    (Paths::Under(event_relay::PATH), Endpoint::RelayedWebhook),
    (Paths::Under(APPROVAL_PAGE), Endpoint::ApprovalPage),
    (Paths::Exactly("/metrics"), Endpoint::Metrics),
];

/// The endpoint `path` names; `None` for a path mcpx does not serve.
pub(super) fn endpoint(path: &str) -> Option<Endpoint> {
    ROUTES
        .iter()
        .find(|(paths, _)| paths.take(path))
        .map(|(_, endpoint)| *endpoint)
}

#[cfg(test)]
mod every_revision {
    mod routes {
        use super::super::{endpoint, Endpoint};

        #[test]
        fn each_path_names_its_endpoint_and_nothing_else_is_served() {
            for (path, expected) in [
                ("/mcp", Some(Endpoint::Mcp)),
                ("/mcp/coding", Some(Endpoint::Mcp)),
                ("/mcpx", None),
                ("/healthz", Some(Endpoint::Health)),
                (
                    "/.well-known/oauth-protected-resource/mcp",
                    Some(Endpoint::ResourceMetadata),
                ),
                (
                    "/.well-known/oauth-authorization-server",
                    Some(Endpoint::AuthorizationServer),
                ),
                ("/upstreams/login", Some(Endpoint::PersonLogin)),
                ("/upstreams/login/callback", Some(Endpoint::PersonLogin)),
                ("/events/webhooks/abc", Some(Endpoint::RelayedWebhook)),
                ("/approvals/x1", Some(Endpoint::ApprovalPage)),
                ("/metrics", Some(Endpoint::Metrics)),
                ("/metrics/x", None),
                ("/", None),
            ] {
                assert_eq!(endpoint(path), expected, "{path}");
            }
        }
    }
}
