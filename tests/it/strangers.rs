//! Strangers at the built-in authorization server's door, who need no credential to register a
//! client and open consent pages: what they send never becomes a log line of its own, and they
//! can neither lock the owner's secret nor push the owner's waiting page out.

use crate::authserver::{pkce, Builtin, Page, OWNER_SECRET};
use crate::common::http::*;
use serde_json::json;

const LOOPBACK: &str = "http://127.0.0.1:4567/callback";

/// A name crafted to forge a whole log line, overwrite a terminal and read reversed.
const FORGED: &str = "Evil\n2026-12-05T00:00:00.000000Z  INFO mcpx::access::builtin::authorize: the owner allowed Claude\r\u{1b}[2J\u{202e}exe.gnp";

/// Lines of `log` that are not one whole line of mcpx's formatter: each starts with its
/// timestamp, and holds no carriage return, escape or bidirectional override.
fn forged_lines(log: &str) -> Vec<String> {
    log.lines()
        .filter(|line| {
            let stamped = line.len() > 20 && line.as_bytes()[..4].iter().all(u8::is_ascii_digit);
            !stamped || line.contains(['\r', '\u{1b}', '\u{202e}'])
        })
        .map(str::to_owned)
        .collect()
}

mod every_revision {
    pub mod access {
        use super::super::*;

        #[test]
        fn what_a_stranger_sends_is_never_a_log_line_of_its_own() {
            let b = Builtin::start("");
            let body = json!({"client_name": FORGED, "redirect_uris": [LOOPBACK],
                "token_endpoint_auth_method": "none", "x_padding": "x".repeat(1000)})
            .to_string();
            let head = format!(
                "POST /oauth/register HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                b.d.addr,
                body.len()
            );
            let registered = b.d.raw(head.as_bytes());
            assert_eq!(registered.status, 201);
            let registered = registered.json();
            // Stored normalised: one printable line, and nothing it was not asked for.
            let name = registered["client_name"].as_str().unwrap();
            assert!(!name.contains(['\n', '\r', '\u{1b}', '\u{202e}']), "{name}");
            assert!(registered.get("x_padding").is_none(), "{registered}");
            let client = registered["client_id"].as_str().unwrap();
            // Its authorization request carries the same text in state and scope, and in a
            // User-Agent; then a wrong secret, logged with the client's id.
            let (_, challenge) = pkce();
            b.authorize(client, LOOPBACK, &challenge, &[("scope", FORGED)]);
            let page = Page::of(&b.authorize(client, LOOPBACK, &challenge, &[("state", FORGED)]));
            assert_eq!(b.decide(&page, "allow", Some(FORGED)).status, 403);
            let agent = format!(
                "GET /oauth/authorize?client_id={client}&response_type=code HTTP/1.1\r\nHost: {}\r\n\
                 User-Agent: x\u{1b}[2J\u{202e}\r\nConnection: close\r\n\r\n",
                b.d.addr
            );
            b.d.raw(agent.as_bytes());
            let bad_client = format!("{client}\u{202e}\u{1b}[2J");
            b.authorize(&bad_client, LOOPBACK, &challenge, &[]);
            let stamp = "the owner allowed Claude";
            assert!(
                !b.d.stderr()
                    .lines()
                    .any(|l| l.contains(stamp) && !l.contains("Evil")),
                "{}",
                b.d.stderr()
            );
            let forged = forged_lines(&b.d.stderr());
            assert!(forged.is_empty(), "{forged:#?}\n{}", b.d.stderr());
            assert!(b.d.log_shows("a wrong owner secret on a consent page"));
        }

        /// A server is a stranger too: what it prints on stderr is logged, one line as one line.
        #[test]
        fn what_a_server_prints_is_never_a_log_line_of_its_own() {
            let fixture = crate::common::fixture_bin();
            let config = format!("[servers.loud]\ncommand = {fixture:?}\nargs = [\"--hostile\"]\n");
            let daemon = Daemon::start(&config, "");
            assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
            let forged = FORGED.replace('\n', " ");
            let call = json!({"name": "loud__hostile", "arguments": {"stderr": forged}});
            daemon.modern(1, "tools/call", call).json();
            assert!(daemon.log_shows("exe.gnp"), "{}", daemon.stderr());
            let lines = forged_lines(&daemon.stderr());
            assert!(lines.is_empty(), "{lines:#?}");
            let logged = daemon
                .stderr()
                .lines()
                .find(|l| l.contains("exe.gnp"))
                .map(str::to_owned);
            assert!(
                logged
                    .as_deref()
                    .unwrap_or_default()
                    .contains("\\u{202e}exe.gnp"),
                "{logged:?}"
            );
        }

        #[test]
        fn a_strangers_wrong_secrets_and_requests_never_lock_out_the_owner_or_push_out_their_page()
        {
            let b = Builtin::start("maxRegistrations = 20\n");
            let (_, challenge) = pkce();
            let owner = b.register("Laptop", LOOPBACK, &["authorization_code"]);
            let owners_page = Page::of(&b.authorize(&owner, LOOPBACK, &challenge, &[]));
            // The stranger's own page: five wrong secrets lock it.
            let stranger = b.register("Stranger", LOOPBACK, &["authorization_code"]);
            let strangers_page = Page::of(&b.authorize(&stranger, LOOPBACK, &challenge, &[]));
            let tries: Vec<u16> = (0..6)
                .map(|_| b.decide(&strangers_page, "allow", Some("guess")).status)
                .collect();
            assert_eq!(tries, [403, 403, 403, 403, 429, 429]);
            // 64 more requests, from the stranger's client and eight more of its own: the room
            // refuses the newcomers, never the owner's page.
            let mut clients = vec![stranger.clone()];
            clients.extend(
                (0..8).map(|n| {
                    b.register(&format!("Stranger {n}"), LOOPBACK, &["authorization_code"])
                }),
            );
            let statuses: Vec<u16> = (0..64)
                .map(|n| {
                    let client = &clients[n % clients.len()];
                    b.authorize(client, LOOPBACK, &challenge, &[]).status
                })
                .collect();
            let refused = statuses.iter().filter(|s| **s == 429).count();
            assert!(refused > 0, "{statuses:?}");
            assert!(
                statuses.iter().all(|s| *s == 200 || *s == 429),
                "{statuses:?}"
            );
            let one_more = b.authorize(&stranger, LOOPBACK, &challenge, &[]);
            assert_eq!(one_more.status, 429);
            assert!(String::from_utf8_lossy(&one_more.body).contains("already"));
            // The owner's page still waits, and takes the owner's secret.
            let back = b.decide(&owners_page, "allow", Some(OWNER_SECRET));
            assert_eq!(back.status, 303, "{}", String::from_utf8_lossy(&back.body));
            assert!(back.header("location").unwrap().contains("code="));
        }
    }
}
