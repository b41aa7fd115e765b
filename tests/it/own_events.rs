//! mcpx's own event types (`mcpx__…`), end to end: what mcpx hears (a view's list changes, a
//! caller's task ending, a resource's update, a pinned definition withheld) offered by poll
//! from a sealed cursor, by stream as it happens, and by webhook; each only to whom it
//! concerns.

use super::events::{declaring, stream_frame, webhooks_allowed, Receiver, SECRET};
use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};

const TASKS: &str = "io.modelcontextprotocol/tasks";

/// The fixture as server `fixture`, running every call as a task of mcpx's where the client
/// declares tasks, and `more` configuration.
fn fixture(more: &str) -> String {
    format!(
        "[servers.fixture]\ncommand = {:?}\ntasks = \"always\"\n{more}",
        fixture_bin()
    )
}

/// `events/poll` of mcpx's own `name` with `arguments` from `cursor`, over `mcpx`.
fn poll(mcpx: &mut Serve, id: i64, name: &str, arguments: Value, cursor: Value) -> Value {
    let params = json!({"name": name, "arguments": arguments, "cursor": cursor});
    mcpx.call(id, "events/poll", declaring(params))
}

/// Polls `name` from `cursor` until it delivers something: what it delivered.
fn polled_until_heard(mcpx: &mut Serve, name: &str, arguments: &Value, cursor: &Value) -> Value {
    let deadline = std::time::Instant::now() + PATIENCE;
    for id in 1000.. {
        let answer = poll(mcpx, id, name, arguments.clone(), cursor.clone());
        let events = &answer["result"]["events"];
        if events.as_array().is_some_and(|e| !e.is_empty()) {
            return events.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "nothing heard: {answer}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    unreachable!()
}

/// A `tools/call` of `tool` declaring Tasks, over `mcpx`: the id of the task it became.
fn task_of(mcpx: &mut Serve, id: i64, tool: &str, arguments: Value) -> String {
    let mut params = json!({"name": tool, "arguments": arguments});
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
        json!({"extensions": {TASKS: {}}});
    let created = mcpx.call(id, "tools/call", modern(params));
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_owned()
}

mod v2026_07_28 {
    mod events {
        use super::super::*;

        /// Polled from a cursor mcpx sealed, a list change of the caller's view and the end of
        /// the caller's task are each delivered once, named as exposed; a cursor is one event
        /// type's own, and arguments are checked.
        #[test]
        fn a_list_change_and_a_tasks_end_are_polled_from_a_cursor() {
            let mut mcpx = Serve::start(&fixture(""));
            let none = json!({});
            let lists = poll(
                &mut mcpx,
                1,
                "mcpx__list_changed",
                none.clone(),
                Value::Null,
            );
            let lists_from = lists["result"]["cursor"].clone();
            assert!(
                lists_from
                    .as_str()
                    .unwrap_or_default()
                    .starts_with("mcpxc1."),
                "{lists}"
            );
            assert_eq!(lists["result"]["events"], json!([]));
            let tasks = poll(&mut mcpx, 2, "mcpx__task_ended", none.clone(), Value::Null);
            let tasks_from = tasks["result"]["cursor"].clone();

            let added = mcpx.call(
                3,
                "tools/call",
                modern(json!({"name": "fixture__add_tool", "arguments": {}})),
            );
            assert_eq!(added["result"]["isError"], false, "{added}");
            let heard = polled_until_heard(&mut mcpx, "mcpx__list_changed", &none, &lists_from);
            assert_eq!(heard[0]["name"], "mcpx__list_changed", "{heard}");
            assert_eq!(heard[0]["data"]["lists"], json!(["tools"]), "{heard}");
            let at = heard[0]["cursor"].as_str().unwrap_or_default();
            assert!(at.starts_with("mcpxc1."), "{heard}");
            // From the occurrence's own cursor, nothing again.
            let after = poll(&mut mcpx, 4, "mcpx__list_changed", none.clone(), json!(at));
            assert_eq!(after["result"]["events"], json!([]), "{after}");

            let task = task_of(&mut mcpx, 5, "fixture__echo", json!({"text": "hi"}));
            let heard = polled_until_heard(&mut mcpx, "mcpx__task_ended", &none, &tasks_from);
            assert_eq!(
                heard[0]["data"],
                json!({"taskId": task, "tool": "fixture__echo", "status": "completed"}),
                "{heard}"
            );

            // A cursor of one event type is no cursor of another, and one never given is
            // refused.
            let foreign = poll(&mut mcpx, 6, "mcpx__task_ended", none.clone(), json!(at));
            assert_eq!(foreign["error"]["code"], -32602, "{foreign}");
            let forged = poll(&mut mcpx, 7, "mcpx__task_ended", none, json!("o1"));
            assert_eq!(forged["error"]["code"], -32602, "{forged}");
            let no_uri = poll(
                &mut mcpx,
                8,
                "mcpx__resource_updated",
                json!({}),
                Value::Null,
            );
            assert_eq!(no_uri["error"]["code"], -32602, "{no_uri}");
            let unknown = json!({"uri": "fixture://nowhere"});
            let unknown = poll(&mut mcpx, 9, "mcpx__resource_updated", unknown, Value::Null);
            assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
        }

        /// A poll of a resource's updates holds the server's subscription to it: what the
        /// server then says changed is heard.
        #[test]
        fn a_resources_update_is_heard_while_someone_polls_for_it() {
            let mut mcpx = Serve::start(&fixture(""));
            let hello = json!({"uri": "fixture://hello"});
            let first = poll(
                &mut mcpx,
                1,
                "mcpx__resource_updated",
                hello.clone(),
                Value::Null,
            );
            let cursor = first["result"]["cursor"].clone();
            assert!(cursor.is_string(), "{first}");
            let touched = mcpx.call(
                2,
                "tools/call",
                modern(json!({"name": "fixture__touch", "arguments": {}})),
            );
            assert_eq!(touched["result"]["isError"], false, "{touched}");
            let heard = polled_until_heard(&mut mcpx, "mcpx__resource_updated", &hello, &cursor);
            assert_eq!(
                heard[0]["data"],
                json!({"uri": "fixture://hello"}),
                "{heard}"
            );
        }

        /// A stream of mcpx's own events is confirmed, then hears each occurrence as it
        /// happens, every frame naming the stream; cancelled, it ends.
        #[test]
        fn a_stream_of_mcpxs_own_events_delivers_as_they_happen() {
            let mut mcpx = Serve::start(&fixture(""));
            let params = json!({"name": "mcpx__list_changed", "arguments": {}});
            mcpx.request(10, "events/stream", declaring(params));
            let active = stream_frame(&mut mcpx, 10, "notifications/events/active");
            assert!(active["params"]["cursor"].is_string(), "{active}");
            mcpx.request(
                11,
                "tools/call",
                modern(json!({"name": "fixture__add_tool", "arguments": {}})),
            );
            let event = stream_frame(&mut mcpx, 10, "notifications/events/event");
            assert_eq!(event["params"]["name"], "mcpx__list_changed", "{event}");
            assert_eq!(
                event["params"]["data"]["lists"],
                json!(["tools"]),
                "{event}"
            );
            mcpx.notify("notifications/cancelled", json!({"requestId": 10}));
            // Still served after the stream's end.
            let echoed = mcpx.call(
                12,
                "tools/call",
                modern(json!({"name": "mcpx__echo", "arguments": {"text": "on"}})),
            );
            assert_eq!(echoed["result"]["content"][0]["text"], "on", "{echoed}");
        }

        /// By webhook: a subscription to the caller's tasks' ends is delivered, signed with the
        /// client's secret, when a task of theirs ends.
        #[test]
        fn a_tasks_end_is_delivered_by_webhook() {
            let receiver = Receiver::start(true);
            let dir = tempfile::tempdir().unwrap();
            let d = Daemon::start(&fixture(&webhooks_allowed(dir.path())), "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let callback = format!("{}/tasks", receiver.url);
            let params = json!({"name": "mcpx__task_ended", "arguments": {},
                "delivery": {"mode": "webhook", "url": callback, "secret": SECRET}});
            let subscribed = d.modern(1, "events/subscribe", declaring(params)).json();
            let id = subscribed["result"]["id"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(id.starts_with("mcpxs_"), "{subscribed}");
            let mut params = json!({"name": "fixture__echo", "arguments": {"text": "hook"}});
            params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                json!({"extensions": {TASKS: {}}});
            let created = d.modern(2, "tools/call", modern(params)).json();
            let task = created["result"]["taskId"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(!task.is_empty(), "{created}");
            assert!(
                eventually(|| receiver.events_at("/tasks", &id).len() == 1),
                "{}",
                d.stderr()
            );
            let got = receiver.events_at("/tasks", &id);
            assert_eq!(got[0]["name"], "mcpx__task_ended");
            assert_eq!(got[0]["data"]["taskId"], task.as_str(), "{got:?}");
            assert_eq!(got[0]["data"]["status"], "completed", "{got:?}");
        }

        /// A pinned definition withheld for review is told to the views that show its server,
        /// and to no other.
        #[test]
        fn a_withheld_pin_is_told_only_to_views_that_show_its_server() {
            let dir = tempfile::tempdir().unwrap();
            let config = format!(
                "[pins]\nfile = {:?}\n[profiles.elsewhere]\nservers = [\"mcpx\", \"other\"]\n{}args = [\"--rug-pull\", \"description:1\"]\n[servers.fixture.pin]\n[servers.other]\ncommand = {:?}\n",
                dir.path().join("pins.json").display().to_string(),
                fixture_config(""),
                fixture_bin()
            );
            let d = Daemon::start(&config, "");
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let poll_at = |path: &str, id: i64, cursor: &Value| {
                let params = json!({"name": "mcpx__pin_held", "arguments": {}, "cursor": cursor});
                d.modern_to(path, id, "events/poll", declaring(params))
                    .json()
            };
            let first = poll_at("/mcp", 1, &Value::Null);
            let everything = first["result"]["cursor"].clone();
            let there = poll_at("/mcp/elsewhere", 2, &Value::Null);
            let elsewhere = there["result"]["cursor"].clone();
            assert!(everything.is_string(), "{first}");
            assert!(elsewhere.is_string(), "{there}");
            let echoed = d
                .modern(
                    3,
                    "tools/call",
                    modern(json!({"name": "fixture__echo", "arguments": {"text": "hi"}})),
                )
                .json();
            assert_eq!(echoed["result"]["isError"], false, "{echoed}");
            let heard = || {
                let answer = poll_at("/mcp", 4, &everything);
                let events = answer["result"]["events"].clone();
                (!events.as_array().is_none_or(Vec::is_empty)).then_some(events)
            };
            assert!(eventually(|| heard().is_some()), "{}", d.stderr());
            let events = heard().unwrap();
            assert_eq!(events[0]["data"]["server"], "fixture", "{events}");
            assert_eq!(events[0]["data"]["change"], "changed", "{events}");
            let there = poll_at("/mcp/elsewhere", 5, &elsewhere);
            assert_eq!(there["result"]["events"], json!([]), "{there}");
        }

        /// Each person hears of their own tasks' ends alone: alice's task is told to alice,
        /// and bob, polling from the same moment, hears nothing.
        #[test]
        fn a_tasks_end_is_told_to_its_caller_alone() {
            use crate::access::{call, daemon, Provider};
            let provider = Provider::start();
            let d = daemon(
                &provider,
                "[servers.fixture.tools.echo]\ntasks = \"always\"\n",
            );
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let (alice, bob) = (provider.good("alice"), provider.good("bob"));
            let poll_as = |token: &str, cursor: &Value| {
                let params = json!({"name": "mcpx__task_ended", "arguments": {}, "cursor": cursor});
                call(&d, "/mcp", Some(token), "events/poll", declaring(params)).json()
            };
            let alices = poll_as(&alice, &Value::Null)["result"]["cursor"].clone();
            let bobs = poll_as(&bob, &Value::Null)["result"]["cursor"].clone();
            assert!(alices.is_string() && bobs.is_string(), "{}", d.stderr());
            let mut params = json!({"name": "fixture__echo", "arguments": {"text": "mine"}});
            params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                json!({"extensions": {TASKS: {}}});
            let created = call(&d, "/mcp", Some(&alice), "tools/call", modern(params)).json();
            let task = created["result"]["taskId"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            assert!(!task.is_empty(), "{created}");
            let heard = || {
                let events = poll_as(&alice, &alices)["result"]["events"].clone();
                (!events.as_array().is_none_or(Vec::is_empty)).then_some(events)
            };
            assert!(eventually(|| heard().is_some()), "{}", d.stderr());
            assert_eq!(heard().unwrap()[0]["data"]["taskId"], task.as_str());
            let bob_heard = poll_as(&bob, &bobs);
            assert_eq!(bob_heard["result"]["events"], json!([]), "{bob_heard}");
        }
    }
}
