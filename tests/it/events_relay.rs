//! MCP Events relayed from a server's own webhooks, end to end, with Vercel's `mcp-handler` 2.4
//! (webhook only, as it serves events) behind the daemon: mcpx lists its event type for webhook
//! delivery, subscribes there with a callback and secret of its own (never the client's), keeps
//! that subscription refreshed, checks the signature of each request the server sends it, and
//! delivers each occurrence to the client's callback signed with the client's secret; an
//! unsubscribe ends the server's subscription too.

use super::events::{declaring, webhooks_allowed, Receiver, SECRET};
use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};

/// The bearer token the `mcp-handler` server takes.
const TOKEN: &str = "relay-test-token";

/// Where the daemon says it is reached (behind a TLS proxy, which the server's delivery plays).
const PUBLIC: &str = "https://mcpx.test";

/// A free loopback port.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// The `mcp-handler` events server and daemons relaying its webhooks: the server reaches
/// callbacks under [`PUBLIC`] at the daemons' port; the daemons keep subscriptions in `dir`.
struct Relaying {
    server: std::process::Child,
    url: String,
    daemon_port: u16,
    dir: tempfile::TempDir,
}

impl Relaying {
    fn start() -> Relaying {
        let (port, daemon_port) = (free_port(), free_port());
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/sdk/mcp_handler_events_server.mjs"
        );
        let reach = format!("http://127.0.0.1:{daemon_port}");
        let server = std::process::Command::new(deps::node())
            .args([script, &port.to_string(), TOKEN, PUBLIC, &reach])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let answers = || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
        assert!(eventually(answers), "the mcp-handler server did not start");
        Relaying {
            server,
            url: format!("http://127.0.0.1:{port}/mcp"),
            daemon_port,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// A daemon at [`PUBLIC`] in front of the server, serving.
    fn daemon(&self) -> Daemon {
        let config = format!(
            "[auth]\npublicUrl = \"{PUBLIC}\"\n\
             [servers.h]\nurl = \"{}\"\nheaders = {{ Authorization = \"Bearer {TOKEN}\" }}\n{}",
            self.url,
            webhooks_allowed(self.dir.path())
        );
        let address = format!("address = \"127.0.0.1:{}\"", self.daemon_port);
        let d = Daemon::start(&config, &address);
        assert!(d.upstreams_ready(), "{}", d.stderr());
        d
    }
}

impl Drop for Relaying {
    fn drop(&mut self) {
        let _ = self.server.kill();
        let _ = self.server.wait();
    }
}

/// `events/subscribe` to the deployments of project `web` at `callback`, over `d`.
fn subscribe_to_web(d: &Daemon, id: i64, callback: &str) -> Value {
    let params = json!({"name": "h__deploys", "arguments": {"project": "web"},
        "delivery": {"mode": "webhook", "url": callback, "secret": SECRET}});
    d.modern(id, "events/subscribe", declaring(params)).json()
}

/// `events/unsubscribe` from the deployments of project `web` at `callback`, over `d`.
fn unsubscribe_from_web(d: &Daemon, id: i64, callback: &str) -> Value {
    let params = json!({"name": "h__deploys", "arguments": {"project": "web"},
        "delivery": {"url": callback}});
    d.modern(id, "events/unsubscribe", declaring(params)).json()
}

/// The text of tool `name`'s result, called with `arguments` over the daemon, as JSON.
fn tool(d: &Daemon, id: i64, name: &str, arguments: Value) -> Value {
    let params = json!({"name": name, "arguments": arguments});
    let answer = d.modern(id, "tools/call", modern(params)).json();
    let text = answer["result"]["content"][0]["text"].as_str();
    serde_json::from_str(text.unwrap_or_else(|| panic!("{answer}"))).unwrap()
}

mod v2026_07_28 {
    mod events {
        use super::super::*;

        #[test]
        fn a_webhook_only_servers_events_are_relayed_without_it_learning_the_callback() {
            let relaying = Relaying::start();
            let d = relaying.daemon();

            // Listed for webhook delivery, which mcpx relays.
            let listed = d.modern(1, "events/list", declaring(json!({}))).json();
            let events = listed["result"]["events"].as_array().cloned();
            let deploys = events.unwrap_or_default();
            let deploys = deploys.iter().find(|e| e["name"] == "h__deploys");
            let deploys = deploys.unwrap_or_else(|| panic!("{listed}\n{}", d.stderr()));
            assert_eq!(deploys["delivery"], json!(["webhook"]), "{listed}");

            let receiver = Receiver::start(true);
            let callback = format!("{}/relayed", receiver.url);
            let subscribed = subscribe_to_web(&d, 2, &callback);
            let id = subscribed["result"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(id.starts_with("mcpxs_"), "{subscribed}\n{}", d.stderr());

            // The server holds one subscription: mcpx's callback and secret, not the client's.
            let held = tool(&d, 3, "h__held", json!({}));
            let held = held.as_array().unwrap().clone();
            assert_eq!(held.len(), 1, "{held:?}");
            assert_eq!(
                held[0]["url"],
                format!("{PUBLIC}/events/webhooks/{id}"),
                "{held:?}"
            );
            assert_ne!(held[0]["secret"], SECRET);
            assert_eq!(held[0]["arguments"], json!({"project": "web"}));

            // An occurrence the server sends mcpx reaches the client's callback, renamed and
            // signed with the client's secret; one for another project is not sent at all.
            let statuses = tool(
                &d,
                4,
                "h__deploy",
                json!({"project": "web", "state": "ready"}),
            );
            assert_eq!(statuses, json!([204]), "{}", d.stderr());
            tool(
                &d,
                5,
                "h__deploy",
                json!({"project": "api", "state": "ready"}),
            );
            let got = receiver.events_at("/relayed", &id);
            assert_eq!(got.len(), 1, "{got:?}");
            assert_eq!(got[0]["name"], "h__deploys");
            assert_eq!(got[0]["data"], json!({"project": "web", "state": "ready"}));
            assert!(got[0]["eventId"].as_str().unwrap().starts_with("evt_"));

            // The server's subscription lapses in 3 s unless refreshed: mcpx refreshes it.
            let refreshed =
                || tool(&d, 6, "h__held", json!({}))[0]["refreshes"].as_u64() >= Some(1);
            assert!(eventually(refreshed), "{}", d.stderr());
            // The client's refresh is the same subscription, at the server too.
            assert_eq!(subscribe_to_web(&d, 7, &callback)["result"]["id"], id);
            assert_eq!(
                tool(&d, 8, "h__held", json!({})).as_array().unwrap().len(),
                1
            );

            // Unsubscribed, mcpx ends the server's subscription too.
            let ended = unsubscribe_from_web(&d, 9, &callback);
            assert!(
                ended["error"].is_null() && ended["result"].is_object(),
                "{ended}"
            );
            let emptied = || tool(&d, 10, "h__held", json!({})) == json!([]);
            assert!(eventually(emptied), "{}", d.stderr());
        }

        /// mcpx's relay callback is on its public door without mcpx's token: only a request
        /// signed with the secret mcpx gave the server is taken. Unsigned, signed with another
        /// secret, replayed from long ago, or for a subscription that does not exist, it is
        /// refused, and nothing reaches the client's callback. What the server does sign is
        /// taken, once however often it comes, its end of the subscription included.
        #[test]
        fn a_forged_webhook_to_mcpxs_relay_is_refused() {
            let relaying = Relaying::start();
            let d = relaying.daemon();
            let receiver = Receiver::start(true);
            let callback = format!("{}/r", receiver.url);
            let subscribed = subscribe_to_web(&d, 1, &callback);
            let id = subscribed["result"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(!id.is_empty(), "{subscribed}\n{}", d.stderr());

            let occurrence = json!({"eventId": "evt_forged", "name": "deploys",
                "timestamp": "2026-12-05T00:00:00Z", "data": {"project": "web", "state": "pwned"}, "cursor": null});
            let body = occurrence.to_string();
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let sign = |secret: &str, at: u64| {
                use base64::Engine;
                use hmac::Mac;
                let key = base64::engine::general_purpose::STANDARD
                    .decode(secret.strip_prefix("whsec_").unwrap())
                    .unwrap();
                let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
                mac.update(format!("evt_forged.{at}.{body}").as_bytes());
                let signature = mac.finalize().into_bytes();
                format!(
                    "v1,{}",
                    base64::engine::general_purpose::STANDARD.encode(signature)
                )
            };
            let post = |path: &str, signature: Option<String>, at: u64| {
                let at = at.to_string();
                let mut headers: Vec<(&str, &[u8])> = vec![
                    ("content-type", b"application/json"),
                    ("webhook-id", b"evt_forged"),
                    ("webhook-timestamp", at.as_bytes()),
                ];
                if let Some(signature) = &signature {
                    headers.push(("webhook-signature", signature.as_bytes()));
                }
                post_to_addr(d.addr, path, &headers, body.as_bytes()).status
            };
            let path = format!("/events/webhooks/{id}");
            // The client's own secret is no key to mcpx's relay either.
            assert_eq!(post(&path, None, now), 401);
            assert_eq!(post(&path, Some(sign(SECRET, now)), now), 401);
            let held = tool(&d, 2, "h__held", json!({}));
            let server_secret = held[0]["secret"].as_str().unwrap().to_owned();
            assert_eq!(
                post(&path, Some(sign(&server_secret, now - 3600)), now - 3600),
                401
            );
            assert_eq!(
                post(
                    "/events/webhooks/mcpxs_nobody",
                    Some(sign(&server_secret, now)),
                    now
                ),
                410
            );
            assert!(receiver.events_at("/r", &id).is_empty());
            // What the server itself signs is taken; the same signed request again (a
            // replay, or the server's retry) is taken too, and passed on once.
            assert_eq!(post(&path, Some(sign(&server_secret, now)), now), 204);
            assert!(eventually(|| receiver.events_at("/r", &id).len() == 1));
            assert_eq!(post(&path, Some(sign(&server_secret, now)), now), 204);

            // The server ends the subscription for good: the client's callback is told why,
            // and mcpx holds it no more.
            assert_eq!(
                tool(&d, 3, "h__revoke", json!({"project": "web"})),
                json!([204])
            );
            let got = receiver.events_at("/r", &id);
            assert_eq!(got.len(), 2, "{got:?}");
            assert_eq!(got[1]["type"], "terminated", "{got:?}");
            assert_eq!(got[1]["error"]["code"], -32012, "{got:?}");
            let gone = unsubscribe_from_web(&d, 4, &callback);
            assert_eq!(gone["error"]["code"], -32011, "{gone}");
        }

        /// A relayed subscription outlives the daemon: restarted (same callback, same secret,
        /// kept in the store), mcpx asserts its subscription at the server again and goes on
        /// relaying, with no new subscribe from the client.
        #[test]
        fn a_relayed_subscription_resumes_after_a_restart() {
            let relaying = Relaying::start();
            let receiver = Receiver::start(true);
            let id = {
                let d = relaying.daemon();
                let subscribed = subscribe_to_web(&d, 1, &format!("{}/kept", receiver.url));
                let id = subscribed["result"]["id"].as_str().unwrap_or_default();
                assert!(!id.is_empty(), "{subscribed}\n{}", d.stderr());
                id.to_owned()
            };
            let d = relaying.daemon();
            assert!(
                eventually(|| d.log_shows("an event subscription resumed")),
                "{}",
                d.stderr()
            );
            let delivered = || {
                tool(
                    &d,
                    2,
                    "h__deploy",
                    json!({"project": "web", "state": "again"}),
                ) == json!([204])
            };
            assert!(eventually(delivered), "{}", d.stderr());
            let got = receiver.events_at("/kept", &id);
            assert_eq!(got[0]["data"]["state"], "again", "{got:?}");
            assert_eq!(
                tool(&d, 3, "h__held", json!({})).as_array().unwrap().len(),
                1
            );
        }
    }
}
