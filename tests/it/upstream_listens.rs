//! A 2026-07-28 upstream's notifications, end to end: such a server (the fixture, which speaks
//! both eras, as real servers do) sends `list_changed` and `resources/updated` only on a
//! `subscriptions/listen` that asked for them, which mcpx keeps open to it. Every client of mcpx
//! hears them as its era has it, whatever era the upstream speaks; a listen the upstream ends is
//! opened again; and listings answered out of order never put back an older catalog.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};

/// The next message of `mcpx`'s stdout whose method is `method` (others are passed over).
fn next_notification(mcpx: &mut Serve, method: &str) -> Value {
    loop {
        let message = mcpx.next();
        if message["method"] == method {
            return message;
        }
    }
}

/// Whether `listed` (a `*/list` response) has an entry whose `key` is `value`.
fn lists(listed: &Value, kind: &str, key: &str, value: &str) -> bool {
    listed["result"][kind]
        .as_array()
        .is_some_and(|entries| entries.iter().any(|e| e[key] == value))
}

/// How many listens the fixture has acknowledged so far, as mcpx logged its stderr.
fn listens_opened(mcpx: &Serve) -> usize {
    mcpx.stderr().matches("fixture: listening on").count()
}

mod v2026_07_28 {
    pub mod upstream_listens {
        use super::super::*;

        /// Tools, prompts and resources: each change the 2026-07-28 upstream announces on
        /// mcpx's listen reaches a legacy stdio client as `list_changed`, and the catalog
        /// shows it.
        #[test]
        fn each_list_change_of_a_modern_upstream_reaches_a_legacy_stdio_client() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-11-25");
            let state = mcpx.call(
                1,
                "tools/call",
                json!({"name": "mcpx__upstreams", "arguments": {}}),
            );
            let upstreams = &state["result"]["structuredContent"]["upstreams"];
            assert_eq!(upstreams[0]["revision"], "2026-07-28", "{state}");
            assert!(
                eventually(|| listens_opened(&mcpx) >= 1),
                "{}",
                mcpx.stderr()
            );
            for (id, kind, list, key, added) in [
                (10, "tools", "tools/list", "name", "fixture__extra"),
                (20, "prompts", "prompts/list", "name", "fixture__extra"),
                (30, "resources", "resources/list", "uri", "fixture://extra"),
            ] {
                let changed = json!({"name": "fixture__change", "arguments": {"kind": kind}});
                mcpx.call(id, "tools/call", changed);
                let method = format!("notifications/{kind}/list_changed");
                let heard = next_notification(&mut mcpx, &method);
                assert!(
                    heard.get("params").is_none_or(|p| p.get("_meta").is_none()),
                    "{heard}"
                );
                let listed = mcpx.call(id + 1, list, json!({}));
                assert!(lists(&listed, kind, key, added), "{kind}: {listed}");
            }
        }

        /// `resources/subscribe` of a legacy client becomes a listen's `resourceSubscriptions`:
        /// once its answer came, a change of that resource reaches the client.
        #[test]
        fn a_subscribed_resource_of_a_modern_upstream_reports_its_updates() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-11-25");
            let subscribed = mcpx.call(1, "resources/subscribe", json!({"uri": "fixture://hello"}));
            assert!(subscribed.get("error").is_none(), "{subscribed}");
            mcpx.call(
                2,
                "tools/call",
                json!({"name": "fixture__touch", "arguments": {}}),
            );
            let updated = next_notification(&mut mcpx, "notifications/resources/updated");
            assert_eq!(updated["params"]["uri"], "fixture://hello", "{updated}");
            // Unsubscribed: the next listen leaves it out.
            let opened = listens_opened(&mcpx);
            mcpx.call(
                3,
                "resources/unsubscribe",
                json!({"uri": "fixture://hello"}),
            );
            assert!(
                eventually(|| listens_opened(&mcpx) > opened),
                "{}",
                mcpx.stderr()
            );
            let last = mcpx
                .stderr()
                .lines()
                .rfind(|l| l.contains("fixture: listening on"))
                .map(str::to_owned);
            assert!(!last.unwrap_or_default().contains("fixture://hello"));
        }

        /// A 2026-07-28 client's own listen, through the daemon: the upstream's changes arrive on
        /// it tagged with the client's subscription id, a resource's among them.
        #[test]
        fn a_modern_clients_listen_hears_a_modern_upstreams_changes() {
            let d = Daemon::start(&fixture_config(""), "");
            let (headers, body) = modern_request(
                7,
                "subscriptions/listen",
                json!({"notifications": {"promptsListChanged": true, "resourceSubscriptions": ["fixture://hello"]}}),
            );
            let stream = d.send_post(&header_refs(&headers), body.to_string().as_bytes());
            let (mut events, _) = EventReader::open(stream);
            let ack = events.next_event().unwrap();
            assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
            d.modern(
                8,
                "tools/call",
                json!({"name": "fixture__change", "arguments": {"kind": "prompts"}}),
            );
            d.modern(
                9,
                "tools/call",
                json!({"name": "fixture__touch", "arguments": {}}),
            );
            assert_eq!(
                events.tagged_methods(2, 7),
                [
                    "notifications/prompts/list_changed",
                    "notifications/resources/updated"
                ]
            );
        }

        /// The upstream ends its listens (as a server restarting its streams does): mcpx opens
        /// another, and the next change still arrives.
        #[test]
        fn a_listen_the_upstream_ends_is_opened_again() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-11-25");
            assert!(
                eventually(|| listens_opened(&mcpx) >= 1),
                "{}",
                mcpx.stderr()
            );
            let opened = listens_opened(&mcpx);
            let ended = mcpx.call(
                1,
                "tools/call",
                json!({"name": "fixture__drop_listens", "arguments": {}}),
            );
            assert_eq!(
                ended["result"]["content"][0]["text"], "ended 1 listens",
                "{ended}"
            );
            assert!(
                eventually(|| listens_opened(&mcpx) > opened),
                "{}",
                mcpx.stderr()
            );
            mcpx.call(
                2,
                "tools/call",
                json!({"name": "fixture__add_tool", "arguments": {}}),
            );
            next_notification(&mut mcpx, "notifications/tools/list_changed");
            let tools = mcpx.call(3, "tools/list", json!({}));
            assert!(lists(&tools, "tools", "name", "fixture__extra"), "{tools}");
        }

        /// Two listings in flight: the resources' answered late, after the tools' listing that a
        /// later change caused. The late answer changes the resources alone: the new tool stays,
        /// and a pinned server's book records it. Whichever era the upstream speaks.
        #[test]
        fn a_late_listing_never_puts_back_an_older_catalog() {
            for args in ["args = [\"--legacy-only\"]\n", ""] {
                let dir = tempfile::tempdir().unwrap();
                let config = format!(
                    "[pins]\nfile = {:?}\n{}[servers.fixture.pin]\nonNew = \"accept\"\n",
                    dir.path().join("pins.json").display().to_string(),
                    fixture_config(args)
                );
                let mut mcpx = Serve::start(&config);
                mcpx.initialize("2025-11-25");
                let race = json!({"name": "fixture__race_lists", "arguments": {}});
                mcpx.call(1, "tools/call", race);
                // The late answer is in once the resource it adds is listed.
                let deadline = std::time::Instant::now() + PATIENCE;
                for id in 10.. {
                    let listed = mcpx.call(id, "resources/list", json!({}));
                    if lists(&listed, "resources", "uri", "fixture://late") {
                        break;
                    }
                    assert!(std::time::Instant::now() < deadline, "{args}: {listed}");
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                assert!(mcpx.log_shows("fixture: answering resources/list late"));
                let tools = mcpx.call(2, "tools/list", json!({}));
                assert!(
                    lists(&tools, "tools", "name", "fixture__extra"),
                    "{args}: {tools}"
                );
                let book = std::fs::read_to_string(dir.path().join("pins.json")).unwrap();
                assert!(book.contains("extra"), "{args}: {book}");
            }
        }
    }
}
