//! MCP Events (SEP-3415) through mcpx, end to end: two servers' event types listed apart as
//! `SERVER__name` with only the delivery modes mcpx carries, polls passed to their server with
//! cursors mcpx seals (a forged or foreign one refused, one from before a restart still good),
//! profiles cutting event types as they cut tools, deliveries mcpx does not carry refused
//! without reaching a server, and nothing of it in a legacy session. The upstream is the
//! fixture with `--events` (no released server delivers events by poll).

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};

const EVENTS: &str = "io.modelcontextprotocol/events";

/// Two fixture servers, `a` and `b`, each with the same event types, and `more` configuration.
fn two_servers(more: &str) -> String {
    format!(
        "[servers.a]\ncommand = {bin:?}\nargs = [\"--events\"]\n[servers.b]\ncommand = {bin:?}\nargs = [\"--events\"]\n{more}",
        bin = fixture_bin()
    )
}

/// A modern request's params declaring the Events extension.
pub(crate) fn declaring(mut params: Value) -> Value {
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {EVENTS: {}}});
    modern(params)
}

/// The next `method` frame of the stream `events/stream` request `stream` opened on `mcpx`
/// (other messages pass by); it must name that stream.
pub(crate) fn stream_frame(mcpx: &mut Serve, stream: i64, method: &str) -> Value {
    loop {
        let message = mcpx.next();
        if message["method"] == method {
            let tag = &message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"];
            assert_eq!(*tag, stream, "{message}");
            return message;
        }
    }
}

/// `events/poll` of `name` from `cursor` over `mcpx`, as request `id`.
fn poll(mcpx: &mut Serve, id: i64, name: &str, cursor: Value) -> Value {
    let params = json!({"name": name, "arguments": {}, "cursor": cursor});
    mcpx.call(id, "events/poll", declaring(params))
}

/// Raises an occurrence of `event` on server `server` with `text`.
fn emit(mcpx: &mut Serve, id: i64, server: &str, event: &str, text: &str) {
    let params = json!({"name": format!("{server}__emit_event"), "arguments": {"name": event, "text": text}});
    let emitted = mcpx.call(id, "tools/call", modern(params));
    assert_eq!(emitted["result"]["isError"], false, "{emitted}");
}

/// The names of what a poll answer delivered, and their ids.
fn delivered(answer: &Value) -> Vec<(String, String, String)> {
    let events = answer["result"]["events"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    events
        .iter()
        .map(|e| {
            let text = |key: &str| e[key].as_str().unwrap_or_default().to_owned();
            (
                text("name"),
                text("eventId"),
                e["data"]["text"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

mod v2026_07_28 {
    pub mod events {
        use super::super::*;

        /// mcpx declares the extension to a 2026-07-28 client, and `events/list` shows both
        /// servers' event types apart under their prefixes, each with only the delivery modes
        /// mcpx carries: a webhook-only type is not shown, rather than shown and then failing.
        #[test]
        fn two_servers_event_types_are_listed_apart_with_only_what_mcpx_carries() {
            let mut mcpx = Serve::start(&two_servers(""));
            let discovered = mcpx.call(1, "server/discover", modern(json!({})));
            let extensions = &discovered["result"]["capabilities"]["extensions"];
            assert!(extensions.get(EVENTS).is_some(), "{discovered}");
            let listed = mcpx.call(2, "events/list", declaring(json!({})));
            let names: Vec<&str> = listed["result"]["events"]
                .as_array()
                .unwrap_or_else(|| panic!("{listed}"))
                .iter()
                .filter_map(|e| e["name"].as_str())
                .collect();
            // mcpx's own first, then each server's, in order.
            assert_eq!(
                names,
                [
                    "mcpx__resource_updated",
                    "mcpx__list_changed",
                    "mcpx__task_ended",
                    "mcpx__pin_held",
                    "a__ticks",
                    "a__alerts",
                    "b__ticks",
                    "b__alerts"
                ],
                "{listed}"
            );
            let ticks = &listed["result"]["events"][4];
            assert_eq!(ticks["delivery"], json!(["poll", "webhook"]), "{listed}");
            assert_eq!(
                listed["result"]["events"][5]["delivery"],
                json!(["push", "webhook"])
            );
            assert!(ticks["inputSchema"].is_object() && ticks["payloadSchema"].is_object());
        }

        /// A poll from `null` starts from now (no events, a cursor); the cursor mcpx hands out is
        /// sealed, and polling from it delivers what happened since, exactly once and in order,
        /// named as exposed, with `maxEvents` and `hasMore` passed through; each server's
        /// occurrences reach only its own event type.
        #[test]
        fn a_poll_from_a_cursor_resumes_without_loss_or_repeat() {
            let mut mcpx = Serve::start(&two_servers(""));
            let first = poll(&mut mcpx, 1, "a__ticks", json!(null));
            assert_eq!(first["result"]["events"], json!([]), "{first}");
            let cursor = first["result"]["cursor"].clone();
            let sealed = cursor.as_str().unwrap_or_else(|| panic!("{first}"));
            // Sealed: not the server's own `c0`, which it holds inside.
            assert!(
                sealed.starts_with("mcpxc1.") && sealed.len() > 40,
                "{first}"
            );
            for (id, text) in [(2, "one"), (3, "two"), (4, "three")] {
                emit(&mut mcpx, id, "a", "ticks", text);
            }
            emit(&mut mcpx, 5, "b", "ticks", "b's");
            let params =
                json!({"name": "a__ticks", "arguments": {}, "cursor": cursor, "maxEvents": 2});
            let some = mcpx.call(6, "events/poll", declaring(params));
            let names = |answer: &Value| -> Vec<String> {
                delivered(answer)
                    .into_iter()
                    .map(|(_, _, text)| text)
                    .collect()
            };
            assert_eq!(names(&some), ["one", "two"], "{some}");
            assert_eq!(some["result"]["hasMore"], true, "{some}");
            assert!(
                delivered(&some)
                    .iter()
                    .all(|(name, _, _)| name == "a__ticks"),
                "{some}"
            );
            let rest = poll(&mut mcpx, 7, "a__ticks", some["result"]["cursor"].clone());
            assert_eq!(names(&rest), ["three"], "{rest}");
            let quiet = poll(&mut mcpx, 8, "a__ticks", rest["result"]["cursor"].clone());
            assert_eq!(quiet["result"]["events"], json!([]), "{quiet}");
            emit(&mut mcpx, 9, "a", "ticks", "four");
            let later = poll(&mut mcpx, 10, "a__ticks", quiet["result"]["cursor"].clone());
            assert_eq!(names(&later), ["four"], "{later}");
            let b = poll(&mut mcpx, 11, "b__ticks", json!(null));
            let b = poll(&mut mcpx, 12, "b__ticks", b["result"]["cursor"].clone());
            assert_eq!(b["result"]["events"], json!([]), "{b}");
            // Every cursor a client holds is mcpx's, an occurrence's too.
            let occurrence = &later["result"]["events"][0];
            let own = occurrence["cursor"].as_str().unwrap_or_default();
            assert!(own.starts_with("mcpxc1."), "{later}");
        }

        /// A cursor mcpx did not seal (the server's own, made up, altered) and one of another
        /// server's or another event type's are refused as invalid, before any server sees them.
        #[test]
        fn a_forged_or_foreign_cursor_is_refused() {
            let mut mcpx = Serve::start(&two_servers(""));
            let a = poll(&mut mcpx, 1, "a__ticks", json!(null));
            let cursor = a["result"]["cursor"].as_str().unwrap().to_owned();
            let mut altered = cursor.clone();
            let last = altered.pop().unwrap();
            altered.push(if last == 'A' { 'B' } else { 'A' });
            for (id, name, forged) in [
                (2, "a__ticks", json!("c0")),
                (3, "a__ticks", json!("mcpxc1.AAAA")),
                (4, "a__ticks", json!(altered)),
                (5, "a__ticks", json!(7)),
                (6, "b__ticks", json!(cursor)),
            ] {
                let refused = poll(&mut mcpx, id, name, forged.clone());
                assert_eq!(refused["error"]["code"], -32602, "{forged}: {refused}");
            }
            // The refused polls never reached a server: only the first poll did.
            assert!(eventually(
                || mcpx.log_shows("fixture: polled \"ticks\" from null")
            ));
            assert!(!mcpx.stderr().contains("from \"c0\""), "{}", mcpx.stderr());
        }

        /// A profile without a server shows none of its event types, and a poll of one is as of a
        /// type that does not exist; `denyTools` globs cut event types by their exposed names.
        #[test]
        fn a_profile_or_rule_without_the_server_sees_none_of_its_events() {
            let config = two_servers("[profiles.only_a]\nservers = [\"a\"]\n");
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("config.toml");
            std::fs::write(&path, config).unwrap();
            let mut mcpx = Serve::spawn(&path, &["--profile", "only_a"]);
            let listed = mcpx.call(1, "events/list", declaring(json!({})));
            let names: Vec<Value> = listed["result"]["events"]
                .as_array()
                .unwrap_or_else(|| panic!("{listed}"))
                .iter()
                .map(|e| e["name"].clone())
                .collect();
            assert_eq!(names, [json!("a__ticks"), json!("a__alerts")], "{listed}");
            let unknown = poll(&mut mcpx, 2, "b__ticks", json!(null));
            assert_eq!(unknown["error"]["code"], -32011, "{unknown}");
        }

        /// A delivery an event type is not shown with (a stream of a type delivered only by
        /// poll) is refused by mcpx as unsupported, saying which, and never reaches the server.
        #[test]
        fn a_delivery_an_event_type_lacks_is_refused_and_never_passed_on() {
            let mut mcpx = Serve::start(&two_servers(""));
            let stream = json!({"name": "a__ticks", "arguments": {}});
            let refused = mcpx.call(1, "events/stream", declaring(stream));
            assert_eq!(refused["error"]["code"], -32014, "{refused}");
            assert_eq!(refused["error"]["data"]["value"], "push", "{refused}");
            let polled = poll(&mut mcpx, 2, "a__ticks", json!(null));
            assert!(polled.get("result").is_some(), "{polled}");
            assert!(
                !mcpx.stderr().contains("fixture: streaming"),
                "{}",
                mcpx.stderr()
            );
        }

        /// A pushed stream passes through: confirmed by `active`, each occurrence delivered as
        /// it happens, renamed, its cursor sealed, every frame naming the client's own request;
        /// heartbeats keep coming; the client's cancellation ends the server's stream, and what
        /// happens after reaches nobody. Opened again from the last cursor it was given, the
        /// stream first delivers what was missed meanwhile, once.
        #[test]
        fn a_stream_delivers_as_it_happens_and_resumes_from_its_cursor() {
            let mut mcpx = Serve::start(&two_servers(""));
            let open = |mcpx: &mut Serve, id: i64, cursor: Value| {
                let params = json!({"name": "a__alerts", "arguments": {}, "cursor": cursor});
                mcpx.request(id, "events/stream", declaring(params));
            };
            // The frames of stream `id` until one of `method`, checking each names the stream.
            let until = |mcpx: &mut Serve, id: i64, method: &str| -> Vec<Value> {
                let mut seen = Vec::new();
                loop {
                    let message = mcpx.next();
                    if message.get("method").is_none() {
                        continue;
                    }
                    let tag = &message["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"];
                    assert_eq!(*tag, id, "{message}");
                    let done = message["method"] == method;
                    seen.push(message);
                    if done {
                        return seen;
                    }
                }
            };
            open(&mut mcpx, 10, json!(null));
            let active = until(&mut mcpx, 10, "notifications/events/active")
                .pop()
                .unwrap();
            let cursor = active["params"]["cursor"].as_str().unwrap_or_default();
            assert!(cursor.starts_with("mcpxc1."), "{active}");
            emit(&mut mcpx, 11, "a", "alerts", "first");
            let event = until(&mut mcpx, 10, "notifications/events/event")
                .pop()
                .unwrap();
            assert_eq!(event["params"]["name"], "a__alerts", "{event}");
            assert_eq!(event["params"]["data"]["text"], "first", "{event}");
            let last = event["params"]["cursor"].clone();
            assert!(
                last.as_str().unwrap_or_default().starts_with("mcpxc1."),
                "{event}"
            );
            let beat = until(&mut mcpx, 10, "notifications/events/heartbeat")
                .pop()
                .unwrap();
            assert!(beat["params"]["cursor"]
                .as_str()
                .unwrap_or_default()
                .starts_with("mcpxc1."));
            mcpx.notify("notifications/cancelled", modern(json!({"requestId": 10})));
            // The server heard the stream cancelled (the same log line has the stream's id).
            let cancelled = |log: String| {
                let line = |l: &str| l.contains("fixture: stream ") && l.contains(" cancelled");
                log.lines().any(line)
            };
            assert!(eventually(|| cancelled(mcpx.stderr())), "{}", mcpx.stderr());
            emit(&mut mcpx, 12, "a", "alerts", "missed");
            emit(&mut mcpx, 13, "a", "alerts", "missed too");
            open(&mut mcpx, 14, last);
            let resumed = until(&mut mcpx, 14, "notifications/events/active");
            assert_eq!(resumed.len(), 1, "{resumed:?}");
            let missed: Vec<Value> = (0..2)
                .map(|_| {
                    until(&mut mcpx, 14, "notifications/events/event")
                        .pop()
                        .unwrap()
                })
                .map(|e| e["params"]["data"]["text"].clone())
                .collect();
            assert_eq!(missed, [json!("missed"), json!("missed too")]);
        }

        /// Over HTTP the stream is the POST's event stream; the client closing it ends the
        /// server's.
        #[test]
        fn a_stream_over_http_ends_upstream_when_the_client_goes() {
            let d = Daemon::start(&two_servers(""), "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let params = declaring(json!({"name": "b__alerts", "arguments": {}, "cursor": null}));
            let (headers, body) = modern_request(7, "events/stream", params);
            let stream = d.send_post(&header_refs(&headers), body.to_string().as_bytes());
            let (mut reader, head) = EventReader::open(stream);
            assert!(head.contains("text/event-stream"), "{head}");
            let active = reader.next_event().unwrap();
            assert_eq!(active["method"], "notifications/events/active", "{active}");
            assert_eq!(
                active["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                7
            );
            let emit =
                json!({"name": "b__emit_event", "arguments": {"name": "alerts", "text": "pushed"}});
            let emitted = d.modern(8, "tools/call", modern(emit)).json();
            assert_eq!(emitted["result"]["isError"], false, "{emitted}");
            let event = loop {
                let frame = reader.next_event().unwrap();
                if frame["method"] == "notifications/events/event" {
                    break frame;
                }
            };
            assert_eq!(event["params"]["name"], "b__alerts", "{event}");
            assert_eq!(event["params"]["data"]["text"], "pushed", "{event}");
            drop(reader);
            // The server heard the stream cancelled (the same log line has the stream's id).
            let cancelled = |log: String| {
                let line = |l: &str| l.contains("fixture: stream ") && l.contains(" cancelled");
                log.lines().any(line)
            };
            assert!(eventually(|| cancelled(d.stderr())), "{}", d.stderr());
        }

        /// A cursor handed out before mcpx restarted is still one of mcpx's after: the key it is
        /// sealed with is kept, so a client's polling resumes rather than starting over.
        #[test]
        fn a_cursor_from_before_a_restart_still_resumes() {
            let mut before = Serve::start(&two_servers(""));
            let first = poll(&mut before, 1, "a__ticks", json!(null));
            let cursor = first["result"]["cursor"].clone();
            drop(before);
            let mut after = Serve::start(&two_servers(""));
            let resumed = poll(&mut after, 1, "a__ticks", cursor);
            assert_eq!(resumed["result"]["events"], json!([]), "{resumed}");
            assert!(resumed.get("error").is_none(), "{resumed}");
        }

        /// The same over the daemon's HTTP door: listed, polled with a sealed cursor, resumed.
        #[test]
        fn event_types_are_listed_and_polled_over_http() {
            let d = Daemon::start(&two_servers(""), "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let listed = d.modern(1, "events/list", declaring(json!({}))).json();
            assert_eq!(
                listed["result"]["events"][6]["name"], "b__ticks",
                "{listed}"
            );
            let params = |cursor: Value| {
                declaring(json!({"name": "b__ticks", "arguments": {}, "cursor": cursor}))
            };
            let first = d.modern(2, "events/poll", params(json!(null))).json();
            let cursor = first["result"]["cursor"].clone();
            let emitted = d.modern(3, "tools/call", modern(json!({"name": "b__emit_event", "arguments": {"name": "ticks", "text": "over http"}}))).json();
            assert_eq!(emitted["result"]["isError"], false, "{emitted}");
            let next = d.modern(4, "events/poll", params(cursor)).json();
            assert_eq!(
                delivered(&next),
                [(
                    "b__ticks".to_owned(),
                    "e0".to_owned(),
                    "over http".to_owned()
                )],
                "{next}"
            );
        }

        /// A client asking for webhook delivery of event types whose servers offer only poll
        /// (`ticks`) or only push (`alerts`) gets it from mcpx: the callback is verified once,
        /// each occurrence is POSTed to it alone, signed with the client's secret as Standard
        /// Webhooks defines, naming the subscription and the event type as exposed; asking again
        /// refreshes the one subscription (same id, no second verification, no duplicate
        /// delivery); `mcpx status`, the console and `/metrics` show them; unsubscribing stops
        /// it, and so does its lifetime passing unrefreshed.
        #[test]
        fn webhooks_are_bridged_from_poll_and_push_signed_refreshed_and_stopped() {
            let receiver = Receiver::start(true);
            let dir = tempfile::tempdir().unwrap();
            let d = Daemon::start(&two_servers(&webhooks_allowed(dir.path())), "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let listed = d.modern(1, "events/list", declaring(json!({}))).json();
            assert_eq!(
                listed["result"]["events"][4]["delivery"],
                json!(["poll", "webhook"]),
                "{listed}"
            );
            let ticks_url = format!("{}/ticks", receiver.url);
            let ticks = subscribe(&d, 2, "a__ticks", &ticks_url, None);
            let id = ticks["result"]["id"]
                .as_str()
                .unwrap_or_else(|| panic!("{ticks}\n{}", d.stderr()))
                .to_owned();
            assert!(
                ticks["result"]["refreshBefore"]
                    .as_str()
                    .is_some_and(|t| t.ends_with('Z')),
                "{ticks}"
            );
            assert!(
                ticks["result"]["cursor"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("mcpxc1.")),
                "{ticks}"
            );
            assert_eq!(receiver.verifications(), 1);
            emit_over(&d, 3, "a", "ticks", "one");
            emit_over(&d, 4, "a", "ticks", "two");
            let texts = |events: Vec<Value>| -> Vec<Value> {
                events.iter().map(|e| e["data"]["text"].clone()).collect()
            };
            assert!(
                eventually(|| receiver.events_at("/ticks", &id).len() == 2),
                "{}",
                d.stderr()
            );
            let delivered = receiver.events_at("/ticks", &id);
            assert_eq!(texts(delivered.clone()), [json!("one"), json!("two")]);
            assert!(
                delivered.iter().all(|e| e["name"] == "a__ticks"),
                "{delivered:?}"
            );
            // Asked again: the same subscription, refreshed.
            let again = subscribe(&d, 5, "a__ticks", &ticks_url, None);
            assert_eq!(again["result"]["id"], id.as_str(), "{again}");
            assert_eq!(receiver.verifications(), 1);
            // A push-only type, at another callback.
            let alerts_url = format!("{}/alerts", receiver.url);
            let alerts = subscribe(&d, 6, "b__alerts", &alerts_url, None);
            let alerts_id = alerts["result"]["id"]
                .as_str()
                .unwrap_or_else(|| panic!("{alerts}"))
                .to_owned();
            emit_over(&d, 7, "b", "alerts", "fire");
            assert!(
                eventually(|| receiver.events_at("/alerts", &alerts_id).len() == 1),
                "{}",
                d.stderr()
            );
            assert_eq!(
                receiver.events_at("/alerts", &alerts_id)[0]["name"],
                "b__alerts"
            );
            emit_over(&d, 8, "a", "ticks", "three");
            assert!(eventually(|| receiver.events_at("/ticks", &id).len() == 3));
            // Shown where the owner looks: `mcpx status` and `/metrics`.
            let status = status_json(d.config_path());
            let held = status["eventSubscriptions"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let ticks_view = held
                .iter()
                .find(|s| s["id"] == id.as_str())
                .unwrap_or_else(|| panic!("{status}"));
            assert_eq!(ticks_view["event"], "a__ticks", "{status}");
            assert_eq!(ticks_view["delivered"], 3, "{status}");
            assert_eq!(ticks_view["callback"], receiver.url.as_str(), "{status}");
            // And live, in the console's Events view.
            {
                use crate::common::console::{open_console, screen_shows, tmux};
                let config = std::fs::read_to_string(d.config_path()).unwrap();
                let socket = mcpx::config::Config::parse(&config).unwrap().admin.socket;
                let name = open_console("events", "", &socket, (160, 30));
                screen_shows(&name, "8 Events (2)");
                tmux(&["send-keys", "-t", &name, "8"]);
                screen_shows(&name, "a__ticks");
                screen_shows(&name, &receiver.url);
                tmux(&["kill-session", "-t", &name]);
            }
            let metrics = d.metrics();
            let delivered = metric_sample(
                &metrics,
                "mcpx_events_total",
                &[
                    ("server", "a"),
                    ("delivery", "webhook"),
                    ("outcome", "delivered"),
                ],
            );
            assert_eq!(delivered, 3.0, "{metrics}");
            // Unsubscribed: what happens after reaches nobody.
            let params = json!({"name": "a__ticks", "arguments": {}, "delivery": {"mode": "webhook", "url": ticks_url}});
            let gone = d
                .modern(9, "events/unsubscribe", declaring(params.clone()))
                .json();
            assert!(gone.get("result").is_some(), "{gone}");
            let again = d.modern(10, "events/unsubscribe", declaring(params)).json();
            assert_eq!(again["error"]["code"], -32011, "{again}");
            // A short-lived one ends by itself.
            let brief_url = format!("{}/brief", receiver.url);
            let brief = subscribe(&d, 11, "a__ticks", &brief_url, Some(1000));
            assert!(brief.get("result").is_some(), "{brief}");
            // One asked to live 2^64-1 ms lives as long as maxTtl lets it, and panics nothing.
            let forever_url = format!("{}/forever", receiver.url);
            let forever = subscribe(&d, 14, "a__ticks", &forever_url, Some(u64::MAX));
            let refresh = forever["result"]["refreshBefore"]
                .as_str()
                .unwrap_or_default();
            assert!(refresh.starts_with("20"), "{forever}");
            assert!(
                eventually(|| d.log_shows("an event subscription ended")),
                "{}",
                d.stderr()
            );
            let ended = |log: String| log.matches("an event subscription ended").count() >= 2;
            assert!(eventually(|| ended(d.stderr())), "{}", d.stderr());
            emit_over(&d, 12, "a", "ticks", "after");
            emit_over(&d, 13, "b", "alerts", "marker");
            assert!(eventually(|| receiver
                .events_at("/alerts", &alerts_id)
                .len()
                == 2));
            assert_eq!(
                receiver.events_at("/ticks", &id).len(),
                3,
                "delivered after unsubscribe"
            );
            let brief_got = receiver
                .got
                .lock()
                .unwrap()
                .iter()
                .filter(|g| g.path == "/brief" && g.body["type"] != "verification")
                .count();
            assert_eq!(brief_got, 0, "delivered after its lifetime");
        }

        /// The callback must be `https://` to a public address (loopback only where allowed),
        /// must echo the verification challenge, and must answer (one that holds the connection
        /// silent is given up on); a bad secret is invalid params. None of these makes a
        /// subscription.
        #[test]
        fn a_callback_that_cannot_be_used_is_refused_and_nothing_is_subscribed() {
            let receiver = Receiver::start(true);
            let d = Daemon::start(&two_servers(""), "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let loopback = subscribe(&d, 1, "a__ticks", &format!("{}/x", receiver.url), None);
            assert_eq!(loopback["error"]["code"], -32015, "{loopback}");
            let https_loopback = subscribe(&d, 2, "a__ticks", "https://127.0.0.1:9/x", None);
            assert_eq!(https_loopback["error"]["code"], -32015, "{https_loopback}");
            assert!(
                https_loopback.to_string().contains("not a public address"),
                "{https_loopback}"
            );
            assert_eq!(receiver.verifications(), 0);
            let silent = Receiver::start(false);
            let dir = tempfile::tempdir().unwrap();
            let allowed = Daemon::start(&two_servers(&webhooks_allowed(dir.path())), "");
            assert!(allowed.upstreams_ready(), "{}", allowed.stderr());
            let unechoed = subscribe(&allowed, 3, "a__ticks", &format!("{}/x", silent.url), None);
            assert_eq!(unechoed["error"]["code"], -32015, "{unechoed}");
            // A callback that takes the connection and never answers is given up on.
            let mute = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let mute_url = format!("http://{}/x", mute.local_addr().unwrap());
            let held = std::thread::spawn(move || {
                mute.accept().map(|(stream, _)| {
                    std::thread::sleep(std::time::Duration::from_secs(15));
                    drop(stream);
                })
            });
            let hung = subscribe(&allowed, 6, "a__ticks", &mute_url, None);
            assert_eq!(hung["error"]["code"], -32015, "{hung}");
            drop(held);
            let params = json!({"name": "a__ticks", "arguments": {},
                "delivery": {"mode": "webhook", "url": format!("{}/x", receiver.url), "secret": "not-a-secret"}});
            let bad = allowed
                .modern(4, "events/subscribe", declaring(params))
                .json();
            assert_eq!(bad["error"]["code"], -32602, "{bad}");
            let params = json!({"name": "a__ticks", "arguments": {}, "delivery": {"mode": "webhook", "url": format!("{}/x", silent.url)}});
            let none = allowed
                .modern(5, "events/unsubscribe", declaring(params))
                .json();
            assert_eq!(none["error"]["code"], -32011, "{none}");
        }

        /// An event type named with a dot keeps its name: listed, polled and subscribed as
        /// `a__ticket.created`.
        #[test]
        fn a_dotted_event_type_keeps_its_name() {
            let receiver = Receiver::start(true);
            let dir = tempfile::tempdir().unwrap();
            let config = format!(
                "[servers.a]\ncommand = {:?}\nargs = [\"--events\", \"--events-named\", \"ticket.created\"]\n{}",
                fixture_bin(),
                webhooks_allowed(dir.path())
            );
            let d = Daemon::start(&config, "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let listed = d.modern(1, "events/list", declaring(json!({}))).json();
            let names = listed["result"]["events"].to_string();
            assert!(names.contains("\"a__ticket.created\""), "{listed}");
            let poll = json!({"name": "a__ticket.created", "arguments": {}, "cursor": null});
            let first = d.modern(2, "events/poll", declaring(poll)).json();
            let cursor = first["result"]["cursor"].clone();
            assert!(cursor.is_string(), "{first}");
            emit_over(&d, 3, "a", "ticket.created", "T-1");
            let poll = json!({"name": "a__ticket.created", "arguments": {}, "cursor": cursor});
            let polled = d.modern(4, "events/poll", declaring(poll)).json();
            let events = polled["result"]["events"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert_eq!(events.len(), 1, "{polled}");
            assert_eq!(events[0]["name"], "a__ticket.created");
            let url = format!("{}/tickets", receiver.url);
            let subscribed = subscribe(&d, 5, "a__ticket.created", &url, None);
            assert!(subscribed.get("result").is_some(), "{subscribed}");
        }

        /// An occurrence delivered by webhook passes its server's guardrails as a polled one
        /// does: under `secrets = "redact"` the token it carries reaches the callback masked.
        #[test]
        fn an_occurrence_delivered_by_webhook_is_redacted_as_a_polled_one_is() {
            let receiver = Receiver::start(true);
            let dir = tempfile::tempdir().unwrap();
            let more = format!(
                "{}[guardrails]\nsecrets = \"redact\"\n",
                webhooks_allowed(dir.path())
            );
            let d = Daemon::start(&two_servers(&more), "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let url = format!("{}/guarded", receiver.url);
            let subscribed = subscribe(&d, 1, "a__ticks", &url, None);
            let id = subscribed["result"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(!id.is_empty(), "{subscribed}");
            let token = format!("ghp_{}", "0123456789abcdefghijklmnopqrstuvwxyz");
            emit_over(&d, 2, "a", "ticks", &format!("deploy with {token}"));
            assert!(eventually(|| !receiver
                .events_at("/guarded", &id)
                .is_empty()));
            let got = receiver.events_at("/guarded", &id);
            let text = serde_json::to_string(&got).unwrap();
            assert!(!text.contains(&token), "{text}");
            assert!(text.contains("[redacted: github-token]"), "{text}");
        }

        /// An occurrence pushed on a client's `events/stream` passes its server's guardrails
        /// too: the token it carries arrives masked.
        #[test]
        fn an_occurrence_on_a_stream_is_redacted_as_a_polled_one_is() {
            let mut mcpx = Serve::start(&two_servers("[guardrails]\nsecrets = \"redact\"\n"));
            let params = json!({"name": "a__alerts", "arguments": {}, "cursor": null});
            mcpx.request(10, "events/stream", declaring(params));
            let next = |mcpx: &mut Serve, method: &str| loop {
                let message = mcpx.next();
                if message["method"] == method {
                    return message;
                }
            };
            next(&mut mcpx, "notifications/events/active");
            let token = format!("ghp_{}", "0123456789abcdefghijklmnopqrstuvwxyz");
            emit(&mut mcpx, 11, "a", "alerts", &format!("leaked {token}"));
            let event = next(&mut mcpx, "notifications/events/event");
            let text = event.to_string();
            assert!(!text.contains(&token), "{text}");
            assert!(text.contains("[redacted: github-token]"), "{text}");
        }

        /// A caller at `events.maxPerCaller` is refused another subscription before mcpx sends
        /// its callback anything: seven more asked for, at seven callbacks, make no verification
        /// POST; a refresh of one it holds still goes through.
        #[test]
        fn a_caller_at_its_limit_makes_mcpx_post_nothing_more() {
            let receiver = Receiver::start(true);
            let dir = tempfile::tempdir().unwrap();
            let config = two_servers(&format!(
                "{}maxPerCaller = 2\n",
                webhooks_allowed(dir.path())
            ));
            let d = Daemon::start(&config, "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            for n in 1..=2 {
                let held = subscribe(
                    &d,
                    n,
                    "a__ticks",
                    &format!("{}/held{n}", receiver.url),
                    None,
                );
                assert!(held.get("result").is_some(), "{held}");
            }
            assert_eq!(receiver.verifications(), 2);
            for n in 3..=9 {
                let more = subscribe(
                    &d,
                    n,
                    "a__ticks",
                    &format!("{}/more{n}", receiver.url),
                    None,
                );
                assert!(more.to_string().contains("events.maxPerCaller"), "{more}");
            }
            assert_eq!(receiver.verifications(), 2, "mcpx posted past the limit");
            let refreshed = subscribe(&d, 10, "a__ticks", &format!("{}/held1", receiver.url), None);
            assert!(refreshed.get("result").is_some(), "{refreshed}");
        }

        /// A webhook subscription outlives the daemon: restarted, it resumes where its delivery
        /// was (no new subscribe, no second verification), delivering what happens next once and
        /// nothing already delivered again. Its secret is kept in a private file.
        #[test]
        fn a_webhook_subscription_resumes_where_it_was_after_a_restart() {
            use std::os::unix::fs::PermissionsExt;
            let receiver = Receiver::start(true);
            let dir = tempfile::tempdir().unwrap();
            let history = dir.path().join("history.jsonl");
            let config = format!(
                "[servers.a]\ncommand = {:?}\nargs = [\"--events\", \"--events-log\", {:?}]\n{}",
                fixture_bin(),
                history.display().to_string(),
                webhooks_allowed(dir.path())
            );
            let url = format!("{}/kept", receiver.url);
            let id = {
                let d = Daemon::start(&config, "");
                assert!(d.upstreams_ready(), "{}", d.stderr());
                let subscribed = subscribe(&d, 1, "a__ticks", &url, None);
                let id = subscribed["result"]["id"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{subscribed}"))
                    .to_owned();
                emit_over(&d, 2, "a", "ticks", "before");
                assert!(
                    eventually(|| receiver.events_at("/kept", &id).len() == 1),
                    "{}",
                    d.stderr()
                );
                // Stopped once the store keeps the position after it (stopped sooner, it is
                // delivered again, under the same webhook-id).
                let kept = dir.path().join("event-subscriptions.json");
                let position = || {
                    let text = std::fs::read_to_string(&kept).unwrap_or_default();
                    let records: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
                    records[0]["cursor"].clone()
                };
                assert!(eventually(|| position() == "c1"), "{}", position());
                id
            };
            let kept = dir.path().join("event-subscriptions.json");
            let mode = std::fs::metadata(&kept).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode, 0o600);
            let d = Daemon::start(&config, "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            assert!(
                eventually(|| d.log_shows("an event subscription resumed")),
                "{}",
                d.stderr()
            );
            emit_over(&d, 3, "a", "ticks", "after");
            assert!(
                eventually(|| receiver.events_at("/kept", &id).len() == 2),
                "{}",
                d.stderr()
            );
            let texts: Vec<Value> = receiver
                .events_at("/kept", &id)
                .iter()
                .map(|e| e["data"]["text"].clone())
                .collect();
            assert_eq!(texts, [json!("before"), json!("after")]);
            assert_eq!(receiver.verifications(), 1);
        }

        /// The AI SDK's own events client (`@ai-sdk/mcp` 2.0, `experimental_events`, the webhook
        /// client ChatGPT-style agents use) in front of mcpx: it finds mcpx offering events,
        /// subscribes by webhook to a type whose server offers only poll, and its own webhook
        /// handler, which checks each request's Standard Webhooks signature, subscription id
        /// and event, is given the occurrence; refreshing keeps the one subscription, and
        /// unsubscribing ends it.
        #[test]
        fn the_ai_sdks_webhook_client_is_delivered_events_bridged_from_a_poll() {
            let dir = tempfile::tempdir().unwrap();
            let d = Daemon::start(&two_servers(&webhooks_allowed(dir.path())), "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let script = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/sdk/ai_sdk_events_client.mjs"
            );
            let url = format!("http://{}/mcp", d.addr);
            let out = std::process::Command::new(deps::node())
                .args([
                    script,
                    &url,
                    "a__ticks",
                    "a__emit_event",
                    r#"{"name": "ticks", "text": "for the agent"}"#,
                ])
                .output()
                .unwrap();
            let said = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{said}{stderr}\n{}", d.stderr());
            let report: Value =
                serde_json::from_str(said.trim()).unwrap_or_else(|e| panic!("{e}: {said}"));
            let ticks = report["listed"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == "a__ticks")
                .cloned();
            assert_eq!(
                ticks.unwrap_or_default()["delivery"],
                json!(["poll", "webhook"]),
                "{report}"
            );
            let id = report["subscribed"]["id"].as_str().unwrap_or_default();
            assert!(id.starts_with("mcpxs_"), "{report}");
            let received = &report["received"][0];
            assert_eq!(received["subscription"], id, "{report}");
            assert_eq!(received["event"]["name"], "a__ticks", "{report}");
            assert_eq!(
                received["event"]["data"]["text"], "for the agent",
                "{report}"
            );
            assert_eq!(report["refreshed"], id, "{report}");
            assert_eq!(report["kept"], 0, "{report}");
        }

        /// Occurrences the server no longer holds are not silently skipped: subscribed from a
        /// cursor older than what the server keeps, the callback is first told of the gap (a
        /// signed `{"type": "gap", "cursor"}`, the cursor sealed), then given what the server
        /// still has, in order.
        #[test]
        fn a_webhook_is_told_of_a_gap_before_what_follows_it() {
            let receiver = Receiver::start(true);
            let dir = tempfile::tempdir().unwrap();
            let config = format!(
                "[servers.r]\ncommand = {:?}\nargs = [\"--events\", \"--events-retain\", \"2\"]\n{}",
                fixture_bin(),
                webhooks_allowed(dir.path())
            );
            let d = Daemon::start(&config, "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let params = declaring(json!({"name": "r__ticks", "arguments": {}, "cursor": null}));
            let first = d.modern(1, "events/poll", params).json();
            let old = first["result"]["cursor"].clone();
            for n in 0..5 {
                emit_over(&d, 2 + n, "r", "ticks", &format!("tick {n}"));
            }
            let url = format!("{}/gaps", receiver.url);
            let subscribed = d
                .modern(
                    10,
                    "events/subscribe",
                    declaring(json!({"name": "r__ticks", "arguments": {},
                    "cursor": old, "delivery": {"mode": "webhook", "url": url, "secret": SECRET}})),
                )
                .json();
            let id = subscribed["result"]["id"]
                .as_str()
                .unwrap_or_else(|| panic!("{subscribed}"))
                .to_owned();
            assert!(
                eventually(|| receiver.events_at("/gaps", &id).len() == 3),
                "{}",
                d.stderr()
            );
            let got = receiver.events_at("/gaps", &id);
            assert_eq!(got[0]["type"], "gap", "{got:?}");
            assert!(
                got[0]["cursor"]
                    .as_str()
                    .is_some_and(|c| c.starts_with("mcpxc1.")),
                "{got:?}"
            );
            let texts: Vec<Value> = got[1..].iter().map(|e| e["data"]["text"].clone()).collect();
            assert_eq!(texts, [json!("tick 3"), json!("tick 4")]);
        }

        /// A hostile server's answers that are not occurrences (a string in a poll's `events`, a
        /// stream frame whose params are a string) crash nothing: the poll passes it as it is,
        /// the stream drops the frame, and both go on delivering what follows.
        #[test]
        fn what_is_not_an_occurrence_crashes_nothing() {
            let mut mcpx = Serve::start(&two_servers(""));
            let first = poll(&mut mcpx, 1, "a__ticks", json!(null));
            let cursor = first["result"]["cursor"].clone();
            let malformed = |server: &str, event: &str| json!({"name": format!("{server}__emit_event"), "arguments": {"name": event, "malformed": true}});
            let emitted = mcpx.call(2, "tools/call", modern(malformed("a", "ticks")));
            assert_eq!(emitted["result"]["isError"], false, "{emitted}");
            emit(&mut mcpx, 3, "a", "ticks", "good");
            let polled = poll(&mut mcpx, 4, "a__ticks", cursor);
            let events = polled["result"]["events"].clone();
            assert_eq!(events[0], "not an occurrence", "{polled}");
            assert_eq!(events[1]["name"], "a__ticks", "{polled}");
            assert_eq!(events[1]["data"]["text"], "good", "{polled}");
            let params = json!({"name": "a__alerts", "arguments": {}, "cursor": null});
            mcpx.request(5, "events/stream", declaring(params));
            let active = mcpx.next();
            assert_eq!(active["method"], "notifications/events/active", "{active}");
            let emitted = mcpx.call(6, "tools/call", modern(malformed("a", "alerts")));
            assert_eq!(emitted["result"]["isError"], false, "{emitted}");
            emit(&mut mcpx, 7, "a", "alerts", "after the garbage");
            let event = loop {
                let frame = mcpx.next();
                if frame["method"] == "notifications/events/event" {
                    break frame;
                }
            };
            assert_eq!(
                event["params"]["data"]["text"], "after the garbage",
                "{event}"
            );
        }

        /// An upstream over Streamable HTTP (a daemon fronting the fixture) is polled and
        /// streamed through as a stdio one is: a poll resumes from its cursor, and a stream's
        /// frames, which arrive on the request's own event stream upstream, reach the client.
        #[test]
        fn poll_and_push_pass_through_an_http_upstream() {
            let remote = Daemon::start(&fixture_config("args = [\"--events\"]\n"), "");
            assert!(remote.upstreams_ready(), "{}", remote.stderr());
            let mut mcpx = Serve::start(&format!(
                "[servers.remote]\nurl = \"http://{}/mcp\"\n",
                remote.addr
            ));
            let ticks = "remote__fixture__ticks";
            let first = poll(&mut mcpx, 1, ticks, json!(null));
            let cursor = first["result"]["cursor"].clone();
            assert!(cursor.is_string(), "{first}\n{}", mcpx.stderr());
            emit(&mut mcpx, 2, "remote__fixture", "ticks", "over http");
            let polled = poll(&mut mcpx, 3, ticks, cursor);
            let got = delivered(&polled);
            assert_eq!(got.len(), 1, "{polled}");
            assert_eq!((got[0].0.as_str(), got[0].2.as_str()), (ticks, "over http"));

            let params = json!({"name": "remote__fixture__alerts", "arguments": {}});
            mcpx.request(10, "events/stream", declaring(params));
            stream_frame(&mut mcpx, 10, "notifications/events/active");
            emit(
                &mut mcpx,
                11,
                "remote__fixture",
                "alerts",
                "pushed over http",
            );
            let event = stream_frame(&mut mcpx, 10, "notifications/events/event");
            assert_eq!(
                event["params"]["name"], "remote__fixture__alerts",
                "{event}"
            );
            assert_eq!(event["params"]["data"]["text"], "pushed over http");
        }
    }
}

mod v2025_11_25 {
    mod events {
        use super::super::*;

        /// Events is of 2026-07-28 and later: a legacy session is neither offered it nor answers
        /// its methods.
        #[test]
        fn a_legacy_session_has_no_events() {
            let mut mcpx = Serve::start(&two_servers(""));
            let initialized = mcpx.initialize("2025-11-25");
            let extensions = &initialized["result"]["capabilities"]["extensions"];
            assert!(extensions.get(EVENTS).is_none(), "{initialized}");
            // Read as a 2026-07-28 request (its method is of that era only), which this one is
            // not: refused, never answered with a list.
            let listed = mcpx.call(2, "events/list", json!({}));
            assert!(listed.get("result").is_none(), "{listed}");
            assert_eq!(listed["error"]["code"], -32602, "{listed}");
        }
    }
}

/// What a webhook receiver was sent: each request's path, headers and body.
#[derive(Clone, Debug)]
struct Delivered {
    path: String,
    headers: std::collections::HashMap<String, String>,
    body: Value,
}

/// A webhook receiver on loopback, as an agent's would be: it echoes a verification's
/// challenge (unless `echo` is false), takes events with 204, and keeps what it was sent.
pub(crate) struct Receiver {
    pub url: String,
    got: std::sync::Arc<std::sync::Mutex<Vec<Delivered>>>,
}

/// The secret every test subscription signs with.
pub(crate) const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

impl Receiver {
    pub fn start(echo: bool) -> Receiver {
        let got: std::sync::Arc<std::sync::Mutex<Vec<Delivered>>> = Default::default();
        let kept = std::sync::Arc::clone(&got);
        let addr = http_server(move |request| {
            let path = request.line.split_whitespace().nth(1).unwrap_or_default();
            let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
            let answer = match (body["type"] == "verification", echo) {
                (true, true) => json!({"challenge": body["challenge"]}).to_string(),
                (true, false) => json!({"challenge": "something else"}).to_string(),
                (false, _) => String::new(),
            };
            let headers = request.headers.iter().cloned().collect();
            let path = path.to_owned();
            kept.lock().unwrap().push(Delivered {
                path,
                headers,
                body,
            });
            let status = if answer.is_empty() {
                "204 No Content"
            } else {
                "200 OK"
            };
            (status.to_owned(), "application/json", answer)
        });
        Receiver {
            url: format!("http://{addr}"),
            got,
        }
    }

    /// The events (not verifications) sent to `path`, each checked to be signed with
    /// [`SECRET`] as Standard Webhooks defines and to name `subscription`.
    pub fn events_at(&self, path: &str, subscription: &str) -> Vec<Value> {
        let got = self.got.lock().unwrap().clone();
        got.into_iter()
            .filter(|d| d.path == path && d.body["type"] != "verification")
            .map(|d| {
                assert_eq!(d.headers["x-mcp-subscription-id"], subscription, "{d:?}");
                assert!(signed(&d), "not signed with the secret: {d:?}");
                d.body
            })
            .collect()
    }

    fn verifications(&self) -> usize {
        let got = self.got.lock().unwrap();
        got.iter()
            .filter(|d| d.body["type"] == "verification")
            .count()
    }
}

/// Whether `delivered` carries a valid Standard Webhooks signature by [`SECRET`].
fn signed(delivered: &Delivered) -> bool {
    use base64::Engine;
    use hmac::Mac;
    let key = base64::engine::general_purpose::STANDARD
        .decode(SECRET.strip_prefix("whsec_").unwrap())
        .unwrap();
    let (id, timestamp) = (
        &delivered.headers["webhook-id"],
        &delivered.headers["webhook-timestamp"],
    );
    let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{id}.{timestamp}.{}", delivered.body).as_bytes());
    let expected = format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    );
    delivered.headers["webhook-signature"]
        .split(' ')
        .any(|s| s == expected)
}

/// `[events]` taking loopback callbacks and keeping subscriptions in `dir`.
pub(crate) fn webhooks_allowed(dir: &std::path::Path) -> String {
    format!(
        "[events]\nallowLoopbackCallbacks = true\nstore = \"{}/event-subscriptions.json\"\n",
        dir.display()
    )
}

/// `events/subscribe` of `name` at `url`, living `ttl_ms` if given, over the daemon.
fn subscribe(d: &Daemon, id: i64, name: &str, url: &str, ttl_ms: Option<u64>) -> Value {
    let mut params = json!({"name": name, "arguments": {}, "cursor": null,
        "delivery": {"mode": "webhook", "url": url, "secret": SECRET}});
    if let Some(ttl) = ttl_ms {
        params["ttlMs"] = json!(ttl);
    }
    d.modern(id, "events/subscribe", declaring(params)).json()
}

/// Raises an occurrence on the daemon's server `server`.
fn emit_over(d: &Daemon, id: i64, server: &str, event: &str, text: &str) {
    let params = json!({"name": format!("{server}__emit_event"), "arguments": {"name": event, "text": text}});
    let emitted = d.modern(id, "tools/call", modern(params)).json();
    assert_eq!(emitted["result"]["isError"], false, "{emitted}");
}
