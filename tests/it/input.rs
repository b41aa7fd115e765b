//! Server-to-client requests end to end: an upstream's elicitation, sampling and roots requests
//! reaching the client whatever both sides speak. Legacy and modern clients, legacy and modern
//! upstreams (the fixture, `--modern-only` for modern), through `mcpx serve` and `mcpx daemon`.
//! Test paths are `<revision>::<area>::<rule>`.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};

/// Everything a client can take from an upstream.
fn all_capabilities() -> Value {
    json!({"elicitation": {}, "sampling": {}, "roots": {"listChanged": true}})
}

/// A legacy upstream, or a modern-only one.
fn upstream(modern: bool, extra: &str) -> String {
    let args = if modern {
        "args = [\"--modern-only\"]\n"
    } else {
        ""
    };
    format!(
        "[servers.fixture]\ncommand = {:?}\n{args}{extra}",
        fixture_bin()
    )
}

/// The answer a person would give to "What is your name?".
fn accept(name: &str) -> Value {
    json!({"action": "accept", "content": {"name": name}})
}

/// A modern call's params declaring `capabilities`.
fn modern_call(tool: &str, capabilities: Value) -> Value {
    modern(json!({"name": tool, "arguments": {},
        "_meta": {"io.modelcontextprotocol/clientCapabilities": capabilities}}))
}

/// The text of a tool result.
fn text_of(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text in {response}"))
}

/// Answers every question a legacy stdio client is asked until the response to `id` arrives;
/// returns the questions and the response.
fn answer_on_stdio(
    mcpx: &mut Serve,
    id: i64,
    answer: impl Fn(&Value) -> Value,
) -> (Vec<Value>, Value) {
    let mut questions = Vec::new();
    loop {
        let message = mcpx.next();
        if message["id"] == id && message.get("method").is_none() {
            return (questions, message);
        }
        if message.get("method").is_some() && message.get("id").is_some() {
            let reply = answer(&message);
            mcpx.send(json!({"jsonrpc": "2.0", "id": message["id"], "result": reply}));
            questions.push(message);
        }
    }
}

/// `mcpx serve` with a 2025-11-25 client that declared every capability.
fn serve_asking_everything(config: &str) -> Serve {
    let mut mcpx = Serve::start(config);
    mcpx.send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": all_capabilities(),
        "clientInfo": {"name": "t", "version": "1"}}}),
    );
    mcpx.response(0);
    mcpx
}

/// Calls `tool` (id 1) in a legacy session; the reply's event stream, read as it arrives.
fn call_in_session(d: &Daemon, session: &str, tool: &str) -> (EventReader, String) {
    let call = request(1, "tools/call", json!({"name": tool, "arguments": {}}));
    let stream = d.send_post(
        &[
            ("Accept", b"application/json, text/event-stream"),
            ("Content-Type", b"application/json"),
            ("Mcp-Session-Id", session.as_bytes()),
            ("MCP-Protocol-Version", b"2025-11-25"),
        ],
        call.to_string().as_bytes(),
    );
    EventReader::open(stream)
}

/// A modern client's rounds: retries with each `InputRequiredResult`'s answers until a complete
/// result; returns the input required results seen and the final response.
fn rounds(
    mut call: impl FnMut(i64, Value) -> Value,
    params: Value,
    answer: impl Fn(&str, &Value) -> Value,
) -> (Vec<Value>, Value) {
    let mut seen = Vec::new();
    let mut response = call(1, params.clone());
    for id in 2..10 {
        let result = &response["result"];
        if result["resultType"] != "input_required" {
            break;
        }
        assert_schema("2026-07-28", "InputRequiredResult", result);
        let mut retry = params.clone();
        let requests = result["inputRequests"].as_object().unwrap();
        retry["inputResponses"] = requests
            .iter()
            .map(|(key, request)| (key.clone(), answer(key, request)))
            .collect();
        if let Some(state) = result.get("requestState") {
            retry["requestState"] = state.clone();
        }
        seen.push(result.clone());
        response = call(id, retry);
    }
    (seen, response)
}

mod v2025_03_26 {
    mod http {
        use super::super::*;

        /// A batch may carry responses: each is delivered to the question waiting for it, and a
        /// batch of only responses is 202.
        #[test]
        fn a_response_in_a_batch_answers_the_question_it_names() {
            let d = Daemon::start(&upstream(false, ""), "");
            let session = initialize_session(&d, "2025-03-26", json!({"roots": {}}));
            let (mut events, _) = call_in_session(&d, &session, "fixture__roots");
            let question = events.next_event().expect("no question on the stream");
            assert_eq!(question["method"], "roots/list");
            let roots = json!({"roots": [{"uri": "file:///batch", "name": "batch"}]});
            let batch = json!([{"jsonrpc": "2.0", "id": question["id"], "result": roots}]);
            assert_eq!(
                post(&d, Some(&session), Some("2025-03-26"), &batch).status,
                202
            );
            let response = events.next_event().expect("no result on the stream");
            assert_eq!(text_of(&response), "roots: file:///batch");
        }
    }
}

mod v2025_11_25 {
    mod stdio {
        use super::super::*;

        /// An upstream's elicitation reaches the client under an id of mcpx's, and the answer
        /// goes back to the upstream under its own.
        #[test]
        fn an_elicitation_reaches_the_client_under_an_id_of_mcpx_and_the_answer_returns() {
            let mut mcpx = serve_asking_everything(&upstream(false, ""));
            mcpx.request(
                1,
                "tools/call",
                json!({"name": "fixture__ask", "arguments": {}}),
            );
            let (questions, response) = answer_on_stdio(&mut mcpx, 1, |_| accept("Ada"));
            assert_eq!(questions.len(), 1, "{questions:?}");
            let question = &questions[0];
            assert_eq!(question["method"], "elicitation/create");
            assert!(
                question["id"].as_str().unwrap().starts_with("mcpx-"),
                "the upstream's id leaked: {question}"
            );
            assert_schema("2025-11-25", "ElicitRequest", question);
            assert_eq!(text_of(&response), "accept: Ada");
        }

        #[test]
        fn sampling_and_roots_reach_the_client_too() {
            let mut mcpx = serve_asking_everything(&upstream(false, ""));
            mcpx.request(
                1,
                "tools/call",
                json!({"name": "fixture__sample", "arguments": {}}),
            );
            let (questions, response) = answer_on_stdio(
                &mut mcpx,
                1,
                |_| json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}),
            );
            assert_schema("2025-11-25", "CreateMessageRequest", &questions[0]);
            assert_eq!(text_of(&response), "sampled: Paris");
            mcpx.request(
                2,
                "tools/call",
                json!({"name": "fixture__roots", "arguments": {}}),
            );
            let (questions, response) = answer_on_stdio(
                &mut mcpx,
                2,
                |_| json!({"roots": [{"uri": "file:///work", "name": "work"}]}),
            );
            assert_eq!(questions[0]["method"], "roots/list");
            assert_eq!(text_of(&response), "roots: file:///work");
        }

        /// A client that declared nothing is never asked: the upstream gets an error at once.
        #[test]
        fn a_client_without_the_capability_is_not_asked_and_the_upstream_hears_so() {
            let mut mcpx = Serve::start(&upstream(false, ""));
            mcpx.initialize("2025-11-25");
            let response = mcpx.call(
                1,
                "tools/call",
                json!({"name": "fixture__ask", "arguments": {}}),
            );
            assert_eq!(response["result"]["isError"], true, "{response}");
            assert!(text_of(&response).contains("did not declare"), "{response}");
        }

        /// A response to no question (unknown id, or answered twice) is ignored with a log line;
        /// the client's other requests are served.
        #[test]
        fn a_response_to_no_question_is_ignored_with_a_log_line() {
            let mut mcpx = Serve::start(&upstream(false, ""));
            mcpx.initialize("2025-11-25");
            mcpx.send(json!({"jsonrpc": "2.0", "id": "mcpx-99", "result": {}}));
            assert!(mcpx.log_shows("ignored a response to no question"));
            let ping = mcpx.call(2, "ping", json!({}));
            assert_eq!(ping["result"], json!({}));
        }

        /// A modern upstream's InputRequiredResult becomes questions for a legacy client, one
        /// round after another, and the call is retried with the answers.
        #[test]
        fn a_modern_upstreams_input_rounds_become_questions_for_a_legacy_client() {
            let mut mcpx = serve_asking_everything(&upstream(true, ""));
            mcpx.request(
                1,
                "tools/call",
                json!({"name": "fixture__ask_twice", "arguments": {}}),
            );
            let (questions, response) = answer_on_stdio(&mut mcpx, 1, |q| {
                let colour = q["params"]["message"].as_str().unwrap().contains("colour");
                accept(if colour { "green" } else { "Ada" })
            });
            assert_eq!(questions.len(), 2, "{questions:?}");
            assert_eq!(text_of(&response), "accept: Ada; accept: green");
            assert_result("2025-11-25", "tools/call", &response);
        }

        /// A client that never answers: the upstream call times out with an error, and the
        /// question is withdrawn (a late answer then answers nothing).
        #[test]
        fn a_client_that_never_answers_times_out_and_nothing_is_left_waiting() {
            let mut mcpx = serve_asking_everything(&upstream(false, "timeout = \"400ms\"\n"));
            mcpx.request(
                1,
                "tools/call",
                json!({"name": "fixture__ask", "arguments": {}}),
            );
            let question = mcpx.next();
            assert_eq!(question["method"], "elicitation/create");
            let response = mcpx.response(1);
            assert!(
                response["error"]["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("did not answer within"),
                "{response}"
            );
            assert!(mcpx.log_shows("fixture: told to cancel request"));
            mcpx.send(json!({"jsonrpc": "2.0", "id": question["id"], "result": accept("late")}));
            assert!(mcpx.log_shows("ignored a response to no question"));
        }
    }

    mod http {
        use super::super::*;

        /// Over HTTP the question rides the POST's event stream, the client answers with a POST
        /// of its own (202), and the call's result follows on the same stream.
        #[test]
        fn a_question_rides_the_posts_stream_and_the_answer_is_a_post_of_its_own() {
            let d = Daemon::start(&upstream(false, ""), "");
            let session = initialize_session(&d, "2025-11-25", all_capabilities());
            let (mut events, head) = call_in_session(&d, &session, "fixture__ask");
            assert!(head.contains("text/event-stream"), "{head}");
            let question = events.next_event().expect("no question on the stream");
            assert_eq!(question["method"], "elicitation/create");
            let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": accept("Ada")});
            let posted = post(&d, Some(&session), Some("2025-11-25"), &answer);
            assert_eq!(posted.status, 202);
            let response = events.next_event().expect("no result on the stream");
            assert_eq!(response["id"], 1);
            assert_eq!(text_of(&response), "accept: Ada");
            // The same answer again answers nothing now.
            let again = post(&d, Some(&session), Some("2025-11-25"), &answer);
            assert_eq!(again.status, 400);
            assert_eq!(again.json()["error"]["code"], -32600);
        }

        #[test]
        fn a_modern_upstreams_input_rounds_reach_a_legacy_session() {
            let d = Daemon::start(&upstream(true, ""), "");
            let session = initialize_session(&d, "2025-11-25", all_capabilities());
            let (mut events, _) = call_in_session(&d, &session, "fixture__roots");
            let question = events.next_event().unwrap();
            assert_eq!(question["method"], "roots/list");
            let roots = json!({"roots": [{"uri": "file:///src", "name": "src"}]});
            let answer = json!({"jsonrpc": "2.0", "id": question["id"], "result": roots});
            assert_eq!(
                post(&d, Some(&session), Some("2025-11-25"), &answer).status,
                202
            );
            let response = events.next_event().unwrap();
            assert_eq!(text_of(&response), "roots: file:///src");
        }
    }
}

mod v2026_07_28 {
    mod stdio {
        use super::super::*;

        /// A legacy upstream's question becomes an InputRequiredResult with a signed state; the
        /// retry with inputResponses resumes the same upstream call.
        #[test]
        fn a_legacy_upstreams_question_becomes_an_input_required_result_and_the_retry_resumes_it() {
            let mut mcpx = Serve::start(&upstream(false, ""));
            let (seen, response) = rounds(
                |id, params| mcpx.call(id, "tools/call", params),
                modern_call("fixture__ask", all_capabilities()),
                |_, request| {
                    assert_eq!(request["method"], "elicitation/create");
                    accept("Ada")
                },
            );
            assert_eq!(seen.len(), 1);
            assert!(seen[0]["requestState"]
                .as_str()
                .unwrap()
                .starts_with("mcpx1."));
            assert_eq!(text_of(&response), "accept: Ada");
            assert_result("2026-07-28", "tools/call", &response);
            assert_eq!(
                mcpx.stderr().matches("fixture: asking").count(),
                1,
                "the retry started a second upstream call"
            );
        }

        #[test]
        fn a_modern_upstreams_input_required_result_passes_through_unchanged() {
            let mut mcpx = Serve::start(&upstream(true, ""));
            let (seen, response) = rounds(
                |id, params| mcpx.call(id, "tools/call", params),
                modern_call("fixture__ask_twice", all_capabilities()),
                |key, _| accept(if key == "colour" { "green" } else { "Ada" }),
            );
            assert_eq!(seen.len(), 2);
            assert_eq!(
                seen[0]["requestState"], "[]",
                "the state was not passed through"
            );
            assert!(seen[0]["inputRequests"].get("name").is_some());
            assert_eq!(text_of(&response), "accept: Ada; accept: green");
        }

        #[test]
        fn a_tampered_or_replayed_request_state_is_refused_with_invalid_params() {
            let mut mcpx = Serve::start(&upstream(false, ""));
            let params = modern_call("fixture__ask", all_capabilities());
            let first = mcpx.call(1, "tools/call", params.clone());
            let state = first["result"]["requestState"].as_str().unwrap().to_owned();
            let mut tampered = params.clone();
            // One character of the sealed part changed: the seal no longer opens.
            let middle = state.len() - 20;
            let flipped = if &state[middle..=middle] == "A" {
                "B"
            } else {
                "A"
            };
            let altered = format!("{}{flipped}{}", &state[..middle], &state[middle + 1..]);
            tampered["requestState"] = json!(altered);
            tampered["inputResponses"] = json!({"elicitation-1": accept("Eve")});
            let refused = mcpx.call(2, "tools/call", tampered);
            assert_eq!(refused["error"]["code"], -32602, "{refused}");
            assert!(refused["error"]["message"]
                .as_str()
                .unwrap()
                .contains("integrity"));
            let mut retry = params.clone();
            retry["requestState"] = json!(state);
            retry["inputResponses"] = json!({"elicitation-1": accept("Ada")});
            assert_eq!(
                text_of(&mcpx.call(3, "tools/call", retry.clone())),
                "accept: Ada"
            );
            let replayed = mcpx.call(4, "tools/call", retry);
            assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
        }

        #[test]
        fn a_missing_answer_is_asked_again_rather_than_failed() {
            let mut mcpx = Serve::start(&upstream(false, ""));
            let params = modern_call("fixture__ask", all_capabilities());
            let first = mcpx.call(1, "tools/call", params.clone());
            let mut retry = params.clone();
            retry["requestState"] = first["result"]["requestState"].clone();
            retry["inputResponses"] = json!({"something-else": {}});
            let again = mcpx.call(2, "tools/call", retry);
            assert_eq!(again["result"]["resultType"], "input_required", "{again}");
            assert_eq!(
                again["result"]["inputRequests"],
                first["result"]["inputRequests"]
            );
        }

        /// A question the request's capabilities do not cover is -32021 naming what is needed.
        #[test]
        fn an_undeclared_capability_is_32021_with_required_capabilities() {
            let mut mcpx = Serve::start(&upstream(false, ""));
            let refused = mcpx.call(
                1,
                "tools/call",
                modern_call("fixture__sample", json!({"elicitation": {}})),
            );
            assert_eq!(refused["error"]["code"], -32021, "{refused}");
            assert_eq!(
                refused["error"]["data"]["requiredCapabilities"],
                json!({"sampling": {}})
            );
            assert_error("2026-07-28", &refused);
        }

        /// A state nobody comes back with expires: the upstream call is cancelled and the state
        /// is refused.
        #[test]
        fn an_abandoned_wait_is_cancelled_upstream_when_its_state_expires() {
            let mut mcpx = Serve::start(&format!(
                "{}[transport]\ninputTimeout = \"300ms\"\n",
                upstream(false, "")
            ));
            let params = modern_call("fixture__ask", all_capabilities());
            let first = mcpx.call(1, "tools/call", params.clone());
            assert!(first["result"]["requestState"].is_string(), "{first}");
            assert!(mcpx.log_shows("waited 300ms for the client's input; cancelled"));
            assert!(
                mcpx.log_shows("fixture: told to cancel request"),
                "the upstream was not told: {}",
                mcpx.stderr()
            );
            let mut late = params.clone();
            late["requestState"] = first["result"]["requestState"].clone();
            late["inputResponses"] = json!({"elicitation-1": accept("Ada")});
            let refused = mcpx.call(2, "tools/call", late);
            assert_eq!(refused["error"]["code"], -32602, "{refused}");
        }
    }

    mod http {
        use super::super::*;

        #[test]
        fn a_legacy_upstreams_question_becomes_an_input_required_result_over_http() {
            let d = Daemon::start(&upstream(false, ""), "");
            let (seen, response) = rounds(
                |id, params| {
                    let reply = d.modern(id, "tools/call", params);
                    assert_eq!(reply.status, 200);
                    reply.json()
                },
                modern_call("fixture__sample", all_capabilities()),
                |_, request| {
                    assert_eq!(request["method"], "sampling/createMessage");
                    json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"})
                },
            );
            assert_eq!(seen.len(), 1);
            assert_eq!(text_of(&response), "sampled: Paris");
        }

        #[test]
        fn a_modern_upstreams_input_required_result_passes_through_over_http() {
            let d = Daemon::start(&upstream(true, ""), "");
            let (seen, response) = rounds(
                |id, params| d.modern(id, "tools/call", params).json(),
                modern_call("fixture__ask", all_capabilities()),
                |_, _| accept("Ada"),
            );
            assert_eq!(seen.len(), 1);
            assert_eq!(
                seen[0]["inputRequests"]["name"]["method"],
                "elicitation/create"
            );
            assert_eq!(text_of(&response), "accept: Ada");
        }

        #[test]
        fn an_undeclared_capability_is_400_with_32021() {
            let d = Daemon::start(&upstream(false, ""), "");
            let reply = d.modern(1, "tools/call", modern_call("fixture__ask", json!({})));
            assert_eq!(reply.status, 400);
            assert_eq!(reply.json()["error"]["code"], -32021);
            assert_eq!(
                reply.json()["error"]["data"]["requiredCapabilities"],
                json!({"elicitation": {"form": {}}})
            );
        }
    }
}
