//! Real SDK clients through mcpx, over both front doors, at every revision each can offer: list
//! tools, call one, receive progress, cancel a call (the fixture upstream must see it), hear
//! tools/list_changed. Each test prints its row of the client × revision × transport matrix.
//! Then the SDKs that implement the client side answer upstreams' questions (elicitation,
//! sampling, roots) in both eras, from legacy and modern upstreams.

use crate::common::cluster::*;
use crate::common::http::*;
use crate::common::*;
use serde_json::Value;
use std::process::Command;

const REVISIONS: [&str; 5] = [
    "2024-11-05",
    "2025-03-26",
    "2025-06-18",
    "2025-11-25",
    "2026-07-28",
];

fn sdk_dir() -> String {
    format!("{}/tests/sdk", env!("CARGO_MANIFEST_DIR"))
}

/// Where a client reaches mcpx: a daemon's URL, a config for `mcpx serve` it spawns, or nginx in
/// front of three replicas that share one remote fixture.
enum Door {
    Http(Daemon),
    Stdio(tempfile::NamedTempFile),
    Nginx(Cluster),
}

impl Door {
    fn open(transport: &str, config: &str) -> Door {
        match transport {
            "http" => Door::Http(Daemon::start(config, "")),
            "nginx" => Door::Nginx(Cluster::start(config, Balance::Shipped)),
            _ => {
                let mut file = tempfile::NamedTempFile::new().unwrap();
                std::io::Write::write_all(&mut file, config.as_bytes()).unwrap();
                Door::Stdio(file)
            }
        }
    }

    fn args(&self) -> Vec<String> {
        match self {
            Door::Http(d) => vec!["http".into(), format!("http://{}/mcp", d.addr)],
            Door::Nginx(cluster) => vec!["http".into(), cluster.url()],
            Door::Stdio(config) => vec![
                "stdio".into(),
                mcpx_bin().display().to_string(),
                config.path().display().to_string(),
            ],
        }
    }

    /// What the door's proxy logged, if it has one.
    fn diagnostics(&self) -> String {
        match self {
            Door::Nginx(cluster) => format!(
                "\nnginx: {}\nreplica: {}",
                cluster.nginx.errors(),
                cluster.replicas[0].stderr()
            ),
            _ => String::new(),
        }
    }

    /// The mcpx log that shows the fixture upstream saw a cancellation.
    fn saw_cancel(&self, client_stderr: &str) -> bool {
        match self {
            Door::Http(d) => d.log_shows("fixture: cancelled request"),
            Door::Nginx(cluster) => cluster.backend.log_shows("fixture: cancelled request"),
            Door::Stdio(_) => client_stderr.contains("fixture: cancelled request"),
        }
    }
}

/// Runs one scripted client (Python, Node), checks its report, prints its matrix row.
fn run(client: &str, program: &str, script: &str, first: &str, transport: &str) -> Value {
    run_program(
        client,
        program,
        Some(&format!("{}/{script}", sdk_dir())),
        first,
        transport,
    )
}

/// Runs one client program, checks its report, prints its matrix row.
fn run_program(
    client: &str,
    program: &str,
    script: Option<&str>,
    first: &str,
    transport: &str,
) -> Value {
    let door = Door::open(transport, &fixture_config(""));
    let out = Command::new(program)
        .args(script)
        .arg(first)
        .args(door.args())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{client} {first} {transport}: {stderr}{}",
        door.diagnostics()
    );
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    for field in ["listed", "called", "cancelled", "list_changed"] {
        assert_eq!(
            report[field], true,
            "{client} {first} {transport}: {field} in {report}"
        );
    }
    assert!(
        report["progress"].as_u64().unwrap_or(0) >= 1,
        "{client} {first} {transport}: no progress in {report}"
    );
    assert!(
        door.saw_cancel(&stderr),
        "{client} {first} {transport}: the upstream never saw the cancellation"
    );
    println!(
        "| {client} | {} | {transport} | list, call, progress, cancel, list_changed |",
        report["negotiated"].as_str().unwrap_or("its newest")
    );
    report
}

fn python(transport: &str) {
    for revision in REVISIONS {
        let report = run(
            "Python SDK v2",
            &deps::python(),
            "python_matrix_client.py",
            revision,
            transport,
        );
        assert_eq!(report["negotiated"], revision);
    }
}

fn rust(transport: &str) {
    let client = workspace_bin("mcpx-rmcp-client", "rmcp-client")
        .display()
        .to_string();
    for revision in REVISIONS {
        let report = run_program("Rust SDK (rmcp 3)", &client, None, revision, transport);
        assert_eq!(report["negotiated"], revision);
    }
}

fn typescript(sdk: &str, transport: &str) -> Value {
    let node = deps::node();
    let name = if sdk.starts_with("v1") {
        "TypeScript SDK v1"
    } else {
        "TypeScript SDK v2"
    };
    run(name, &node, "ts_client.mjs", sdk, transport)
}

/// Runs a client script that answers the fixture's questions in `era` over `transport`, with a
/// legacy or a modern fixture behind mcpx; checks every answer reached the tool.
fn answers_questions(client: &str, program: &str, script: &str, era: &str, transport: &str) {
    for upstream in ["legacy", "modern"] {
        let args = if upstream == "modern" {
            "args = [\"--modern-only\"]\n"
        } else {
            ""
        };
        let config = format!("[servers.fixture]\ncommand = {:?}\n{args}", fixture_bin());
        let door = Door::open(transport, &config);
        let out = Command::new(program)
            .arg(format!("{}/{script}", sdk_dir()))
            .arg(era)
            .args(door.args())
            .output()
            .unwrap();
        let row = format!("{client} {era} {transport}, {upstream} upstream");
        assert!(
            out.status.success(),
            "{row}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{row}: {e}: {}", String::from_utf8_lossy(&out.stdout)));
        assert_eq!(report["fixture__ask"], "accept: Ada", "{row}: {report}");
        assert_eq!(
            report["fixture__sample"], "sampled: Paris",
            "{row}: {report}"
        );
        assert_eq!(
            report["fixture__roots"], "roots: file:///work",
            "{row}: {report}"
        );
        println!("| {client} | {era} | {transport} | elicitation, sampling, roots from a {upstream} upstream |");
    }
}

mod every_revision {
    pub mod clients {
        use super::super::*;

        #[test]
        fn python_sdk_v2_at_every_revision_over_stdio() {
            python("stdio");
        }

        #[test]
        fn python_sdk_v2_at_every_revision_over_http() {
            python("http");
        }

        #[test]
        fn rust_sdk_at_every_revision_over_stdio() {
            rust("stdio");
        }

        #[test]
        fn rust_sdk_at_every_revision_over_http() {
            rust("http");
        }

        #[test]
        fn typescript_sdk_v1_over_stdio_and_http() {
            typescript("v1", "stdio");
            typescript("v1", "http");
        }

        #[test]
        fn python_sdk_v2_answers_upstream_questions_in_both_eras_over_both_doors() {
            for era in ["legacy", "2026-07-28"] {
                for transport in ["stdio", "http"] {
                    let script = "python_input_client.py";
                    answers_questions("Python SDK v2", &deps::python(), script, era, transport);
                }
            }
        }

        #[test]
        fn typescript_sdk_v2_answers_upstream_questions_in_both_eras_over_both_doors() {
            let node = deps::node();
            for era in ["legacy", "2026-07-28"] {
                for transport in ["stdio", "http"] {
                    let script = "ts_input_client.mjs";
                    answers_questions("TypeScript SDK v2", &node, script, era, transport);
                }
            }
        }

        /// The matrix through the shipped nginx site and three replicas with a cluster key,
        /// which share a remote upstream: calls, progress, cancellation and list_changed work
        /// whichever replica each request reaches.
        #[test]
        fn python_sdk_v2_at_every_revision_through_nginx_and_three_replicas() {
            python("nginx");
        }

        /// Through nginx and three replicas whose upstream is another mcpx: a legacy client's
        /// answers reach the replica that asked (the session's affinity); a modern client's
        /// retries carry the inner mcpx's `requestState`, which the replicas pass through.
        #[test]
        fn python_sdk_v2_answers_upstream_questions_through_nginx_and_three_replicas() {
            for era in ["legacy", "2026-07-28"] {
                let script = "python_input_client.py";
                answers_questions("Python SDK v2", &deps::python(), script, era, "nginx");
            }
        }

        #[test]
        fn typescript_sdks_at_every_revision_through_nginx_and_three_replicas() {
            for revision in &REVISIONS[..3] {
                let report = typescript(&format!("v1@{revision}"), "nginx");
                assert_eq!(report["negotiated"], *revision);
            }
            for sdk in ["v1", "v2", "v2@2026-07-28"] {
                typescript(sdk, "nginx");
            }
        }

        #[test]
        fn typescript_sdk_v2_over_stdio_and_http_in_both_eras() {
            for sdk in ["v2", "v2@2026-07-28"] {
                typescript(sdk, "stdio");
                typescript(sdk, "http");
            }
        }
    }
}
