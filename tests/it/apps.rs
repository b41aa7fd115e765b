//! MCP Apps through mcpx, end to end: two FastMCP 4 app servers that both use
//! `ui://widget/view.html` (`tests/sdk/fastmcp_app_server.py`), behind `mcpx serve`, asked by a
//! client that renders Apps and by one that does not, in both eras.

use crate::common::*;
use serde_json::{json, Value};

const UI: &str = "io.modelcontextprotocol/ui";

/// `mcpx serve` with the app servers `a` and `b`.
fn two_app_servers() -> Serve {
    let (python, script) = (deps::python(), app_server());
    Serve::start(&format!(
        "{WAIT_FOR_ALL}[servers.a]\ncommand = {python:?}\nargs = [{script:?}, \"a\"]\n\
         [servers.b]\ncommand = {python:?}\nargs = [{script:?}, \"b\"]\n"
    ))
}

fn app_server() -> String {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/fastmcp_app_server.py"
    )
    .to_owned()
}

/// What a client that renders Apps declares.
fn renders_apps() -> Value {
    json!({"extensions": {UI: {"mimeTypes": ["text/html;profile=mcp-app"]}}})
}

/// The legacy handshake at `revision`, declaring `capabilities`.
fn initialize(mcpx: &mut Serve, revision: &str, capabilities: Value) -> Value {
    let response = mcpx.call(
        0,
        "initialize",
        json!({"protocolVersion": revision, "capabilities": capabilities,
            "clientInfo": {"name": "apps-test", "version": "1"}}),
    );
    mcpx.notify("notifications/initialized", json!({}));
    response
}

/// The listed tool `name`.
fn tool<'a>(listed: &'a Value, name: &str) -> Option<&'a Value> {
    listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name)
}

/// The text of a read's first content.
fn read_text(read: &Value) -> &str {
    read["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_default()
}

/// A configuration file with the app servers `a` and `b`.
fn app_servers_file() -> tempfile::NamedTempFile {
    let (python, script) = (deps::python(), app_server());
    let file = tempfile::NamedTempFile::new().unwrap();
    let config = format!(
        "{WAIT_FOR_ALL}[servers.a]\ncommand = {python:?}\nargs = [{script:?}, \"a\"]\n\
         [servers.b]\ncommand = {python:?}\nargs = [{script:?}, \"b\"]\n"
    );
    std::fs::write(file.path(), config).unwrap();
    file
}

fn sdk_file(name: &str) -> String {
    format!("{}/tests/sdk/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// What an SDK client prints, run as `COMMAND... MCPX CONFIG OPTIONS...`: the last line of its
/// stdout, JSON.
fn client_report(command: &[&str], config: &tempfile::NamedTempFile, options: &[&str]) -> Value {
    let out = std::process::Command::new(command[0])
        .args(&command[1..])
        .arg(mcpx_bin())
        .arg(config.path())
        .args(options)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}\n{stderr}");
    serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

/// A client's report ([`client_report`]): each `*__show` tool rendered by its own server's
/// HTML under its renamed URI, the App-only tools listed, the bare call answered by `b`.
fn each_renders_its_own_servers_app(report: &Value) {
    for server in ["a", "b"] {
        let ui = &report["ui"][format!("{server}__show")];
        assert_eq!(
            ui["uri"],
            format!("ui://{server}/widget/view.html"),
            "{report}"
        );
        let html = ui["html"].as_str().unwrap_or_default();
        assert!(
            html.contains(&format!("widget of server {server}")),
            "{report}"
        );
    }
    assert_eq!(report["bare"], "only b", "{report}");
    let tools = report["tools"].as_array().unwrap();
    assert!(tools.contains(&json!("a__refresh")), "{report}");
}

/// Each server's tool is rendered by its own server's HTML: the shared URI is renamed for each
/// server in `tools/list`, `resources/list` and the read's contents, and read from that server.
fn each_tool_renders_its_own_servers_html(mcpx: &mut Serve, params: impl Fn(Value) -> Value) {
    let listed = mcpx.call(1, "tools/list", params(json!({})));
    for server in ["a", "b"] {
        let show = tool(&listed, &format!("{server}__show")).unwrap();
        let uri = show["_meta"]["ui"]["resourceUri"].as_str().unwrap();
        assert_eq!(uri, format!("ui://{server}/widget/view.html"), "{listed}");
        let read = mcpx.call(2, "resources/read", params(json!({"uri": uri})));
        assert!(
            read_text(&read).contains(&format!("widget of server {server}")),
            "{read}"
        );
        assert_eq!(read["result"]["contents"][0]["uri"], uri, "{read}");
        let ui = &read["result"]["contents"][0]["_meta"]["ui"];
        assert_eq!(ui["prefersBorder"], true, "{read}");
    }
    let resources = mcpx.call(3, "resources/list", params(json!({})));
    let mut uris: Vec<&str> = resources["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    uris.sort();
    assert_eq!(
        uris,
        ["ui://a/widget/view.html", "ui://b/widget/view.html"],
        "{resources}"
    );
    // A shared template is renamed the same way, and what it matches is read from its server.
    let templates = mcpx.call(8, "resources/templates/list", params(json!({})));
    let mut patterns: Vec<&str> = templates["result"]["resourceTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|t| t["uriTemplate"].as_str())
        .collect();
    patterns.sort();
    assert_eq!(
        patterns,
        ["ui://a/chart/{id}.html", "ui://b/chart/{id}.html"],
        "{templates}"
    );
    let chart = mcpx.call(
        9,
        "resources/read",
        params(json!({"uri": "ui://b/chart/7.html"})),
    );
    assert!(read_text(&chart).contains("chart 7 of server b"), "{chart}");
    assert_eq!(
        chart["result"]["contents"][0]["uri"], "ui://b/chart/7.html",
        "{chart}"
    );
}

/// An App calls its server's tools by the server's own names.
fn a_bare_name_is_routed_when_one_server_has_it(mcpx: &mut Serve, params: impl Fn(Value) -> Value) {
    let call = mcpx.call(
        4,
        "tools/call",
        params(json!({"name": "only_b", "arguments": {}})),
    );
    assert_eq!(call["result"]["content"][0]["text"], "only b", "{call}");
    let shared = mcpx.call(
        5,
        "tools/call",
        params(json!({"name": "plain", "arguments": {}})),
    );
    let message = shared["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("a__plain") && message.contains("b__plain"),
        "{shared}"
    );
    let unknown = mcpx.call(
        6,
        "tools/call",
        params(json!({"name": "nowhere", "arguments": {}})),
    );
    assert!(unknown["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Unknown tool"));
}

mod v2025_11_25 {
    mod apps {
        use super::super::*;

        #[test]
        fn two_servers_sharing_a_ui_uri_each_render_their_own() {
            let mut mcpx = two_app_servers();
            let init = initialize(&mut mcpx, "2025-11-25", renders_apps());
            assert!(
                init["result"]["capabilities"]["extensions"][UI].is_object(),
                "{init}"
            );
            each_tool_renders_its_own_servers_html(&mut mcpx, |p| p);
            a_bare_name_is_routed_when_one_server_has_it(&mut mcpx, |p| p);
            // FastMCP 4 speaks both eras: under `era = "auto"` mcpx speaks it the newest.
            let report = mcpx.call(
                10,
                "tools/call",
                json!({"name": "mcpx__upstreams", "arguments": {}}),
            );
            for upstream in report["result"]["structuredContent"]["upstreams"]
                .as_array()
                .unwrap()
            {
                assert_eq!(upstream["revision"], "2026-07-28", "{report}");
            }
        }

        /// The TypeScript SDK's clients (v1 and v2, which speak 2025-11-25 over stdio),
        /// declaring Apps.
        #[test]
        fn the_typescript_sdks_render_each_servers_own_app() {
            let config = app_servers_file();
            let client = sdk_file("ts_apps_client.mjs");
            for sdk in ["v1", "v2"] {
                let report = client_report(&[&deps::node(), &client, sdk], &config, &[]);
                each_renders_its_own_servers_app(&report);
            }
        }

        #[test]
        fn app_only_tools_are_shown_only_to_a_client_that_renders_apps() {
            let mut mcpx = two_app_servers();
            initialize(&mut mcpx, "2025-11-25", renders_apps());
            let listed = mcpx.call(1, "tools/list", json!({}));
            assert!(tool(&listed, "a__refresh").is_some(), "{listed}");
            let mut plain = two_app_servers();
            initialize(&mut plain, "2025-11-25", json!({}));
            let listed = plain.call(1, "tools/list", json!({}));
            assert!(tool(&listed, "a__refresh").is_none(), "{listed}");
            assert!(tool(&listed, "a__show").is_some(), "{listed}");
        }
    }
}

mod v2025_03_26 {
    mod apps {
        use super::super::*;

        /// 2025-03-26 defines no `_meta` on a tool and no `structuredContent`, but an App that
        /// was negotiated reads both.
        #[test]
        fn a_negotiated_apps_fields_survive_an_older_revision() {
            let mut mcpx = two_app_servers();
            initialize(&mut mcpx, "2025-03-26", renders_apps());
            let listed = mcpx.call(1, "tools/list", json!({}));
            let show = tool(&listed, "a__show").unwrap();
            assert_eq!(
                show["_meta"]["ui"]["resourceUri"],
                "ui://a/widget/view.html"
            );
            let call = mcpx.call(2, "tools/call", json!({"name": "a__show", "arguments": {}}));
            assert_eq!(call["result"]["structuredContent"]["server"], "a", "{call}");
            let mut plain = two_app_servers();
            initialize(&mut plain, "2025-03-26", json!({}));
            let listed = plain.call(1, "tools/list", json!({}));
            assert!(tool(&listed, "a__show").unwrap().get("_meta").is_none());
        }
    }
}

mod v2026_07_28 {
    mod apps {
        use super::super::*;

        fn with_apps(mut params: Value) -> Value {
            params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = renders_apps();
            modern(params)
        }

        #[test]
        fn two_servers_sharing_a_ui_uri_each_render_their_own() {
            let mut mcpx = two_app_servers();
            let discovered = mcpx.call(0, "server/discover", with_apps(json!({})));
            let extensions = &discovered["result"]["capabilities"]["extensions"];
            assert!(extensions[UI].is_object(), "{discovered}");
            each_tool_renders_its_own_servers_html(&mut mcpx, with_apps);
            a_bare_name_is_routed_when_one_server_has_it(&mut mcpx, with_apps);
            let hidden = mcpx.call(7, "tools/list", modern(json!({})));
            assert!(tool(&hidden, "b__refresh").is_none(), "{hidden}");
        }

        /// FastMCP 4's own client, rendering Apps, then not.
        #[test]
        fn fastmcp_s_client_renders_each_servers_own_app() {
            let config = app_servers_file();
            let python = deps::python();
            let client = sdk_file("fastmcp_apps_client.py");
            let report = client_report(&[&python, &client], &config, &[]);
            assert_eq!(report["era"], "2026-07-28", "{report}");
            each_renders_its_own_servers_app(&report);
            let without = client_report(&[&python, &client], &config, &["--no-apps"]);
            let tools = without["tools"].as_array().unwrap();
            assert!(!tools.contains(&json!("a__refresh")), "{without}");
            assert!(tools.contains(&json!("a__show")), "{without}");
        }

        /// A modern upstream is told of the extensions mcpx carries that the client declared
        /// (Apps and Tasks here), and of no other: an extension's results mcpx cannot carry would reach the client cut.
        #[test]
        fn only_the_extensions_mcpx_carries_are_forwarded() {
            let mut mcpx = Serve::start(&fixture_config(
                "args = [\"--modern-only\"]\nera = \"2026-07-28\"\n",
            ));
            let mut declared = renders_apps();
            declared["extensions"]["io.modelcontextprotocol/tasks"] = json!({});
            declared["extensions"]["com.example/unknown"] = json!({"x": 1});
            let params = json!({"name": "fixture__echo", "arguments": {"text": "hi"},
                "_meta": {"io.modelcontextprotocol/clientCapabilities": declared}});
            let call = mcpx.call(1, "tools/call", modern(params));
            assert_eq!(call["result"]["content"][0]["text"], "hi", "{call}");
            // In whichever order the fixture's JSON keeps keys.
            let carried = ["io.modelcontextprotocol/tasks", UI];
            let [a, b] = carried.map(|id| format!("{id:?}"));
            let forwarded = [format!("[{a}, {b}]"), format!("[{b}, {a}]")];
            assert!(
                forwarded
                    .iter()
                    .any(|ids| mcpx.log_shows(&format!("fixture: echo declared extensions {ids}"))),
                "{}",
                mcpx.stderr()
            );
            let call = mcpx.call(
                2,
                "tools/call",
                modern(json!({"name": "fixture__echo",
                "arguments": {"text": "hi"}})),
            );
            assert_eq!(call["result"]["content"][0]["text"], "hi", "{call}");
            assert!(
                mcpx.log_shows("fixture: echo declared no extension"),
                "{}",
                mcpx.stderr()
            );
        }
    }
}
