//! The official MCP conformance suite: its server scenarios run through `mcpx daemon` by
//! `tests/conformance/run`, and its client scenarios with mcpx as the client of the suite's
//! servers (`tests/conformance/client`), for the 2025-11-25 and 2026-07-28 requirement sets and
//! the 2025-03-26 authorization back-compat scenarios, the Tasks extension's `tasks-*` scenarios
//! (with FastMCP 4's tasks server behind mcpx), and the Skills extension's `sep-2640-*`
//! scenarios (with FastMCP 4's Skills server behind mcpx). A failure outside the baseline files,
//! or a baselined scenario that now passes, fails the test.

use crate::common::{deps, mcpx_bin};
use std::process::Command;

/// Runs the suite's client scenarios (`selection`: `--requirements R` or `--scenario S`) with
/// mcpx as the client; returns the suite's report, after checking it passed.
fn client_scenarios(selection: &[&str], baseline: Option<&str>) -> String {
    client_scenarios_with(selection, baseline, &[])
}

/// [`client_scenarios`], with `env` for `tests/conformance/client`.
fn client_scenarios_with(
    selection: &[&str],
    baseline: Option<&str>,
    env: &[(&str, &str)],
) -> String {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance");
    let mut suite = Command::new(deps::node());
    suite
        .arg(deps::conformance_suite())
        .args(["client", "--command", &format!("{dir}/client")])
        .args(selection)
        .env("MCPX_BIN", mcpx_bin())
        .env("MCPX_PYTHON", deps::python())
        .envs(env.iter().copied());
    if let Some(baseline) = baseline {
        suite.args(["--expected-failures", &format!("{dir}/{baseline}")]);
    }
    let out = suite.output().unwrap();
    let report =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    let summary: Vec<&str> = report
        .lines()
        .filter(|l| {
            l.contains('✓') || l.contains('✗') || l.contains("Total") || l.contains("Passed")
        })
        .collect();
    println!("{}", summary.join("\n"));
    assert!(out.status.success(), "{report}");
    report
}

/// Runs the suite's server `scenarios` against `daemon`'s `/mcp`, one at a time, each held to
/// `baseline` (in `tests/conformance`); prints each one's totals.
fn server_scenarios(daemon: &crate::common::http::Daemon, scenarios: &[&str], baseline: &str) {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/conformance");
    // The suite gives each request a few seconds; a Python upstream's start on a busy machine
    // takes longer, and is not what the suite tests.
    assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
    for scenario in scenarios {
        let out = Command::new(deps::node())
            .arg(deps::conformance_suite())
            .args(["server", "--url", &format!("http://{}/mcp", daemon.addr)])
            .args(["--scenario", scenario, "--expected-failures"])
            .arg(format!("{dir}/{baseline}"))
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        let totals: Vec<&str> = report.lines().filter(|l| l.contains("Passed")).collect();
        println!("{scenario}: {}", totals.join(" "));
        assert!(
            out.status.success(),
            "{scenario}: {report}\nmcpx's log:\n{}",
            daemon.stderr()
        );
    }
}

mod every_revision {
    pub mod conformance {
        use super::super::*;

        #[test]
        fn the_official_server_suite_passes_outside_its_baselines() {
            let out = Command::new("bash")
                .arg(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/tests/conformance/run"
                ))
                .env("MCPX_NODE", deps::node())
                .env("MCPX_CONFORMANCE_SUITE", deps::conformance_suite())
                .output()
                .unwrap();
            let report = String::from_utf8_lossy(&out.stdout);
            println!("{report}");
            assert!(
                out.status.success(),
                "{report}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(report.contains("== conformance server --requirements 2026-07-28"));
        }
    }
}

mod v2025_03_26 {
    pub mod conformance {
        use super::super::*;

        #[test]
        fn the_authorization_back_compat_scenarios_pass_with_mcpx_as_the_client() {
            for scenario in [
                "auth/2025-03-26-oauth-metadata-backcompat",
                "auth/2025-03-26-oauth-endpoint-fallback",
            ] {
                let report = client_scenarios(&["--scenario", scenario], None);
                assert!(report.contains("OVERALL: PASSED"), "{scenario}: {report}");
            }
        }
    }
}

mod v2025_11_25 {
    pub mod conformance {
        use super::super::*;

        #[test]
        fn mcpx_as_a_client_passes_the_client_scenarios_outside_its_baseline() {
            let report = client_scenarios(
                &["--requirements", "2025-11-25"],
                Some("client-baseline-2025-11-25.yml"),
            );
            assert!(report.contains("auth/scope-step-up"), "{report}");
        }
    }
}

mod v2026_07_28 {
    pub mod conformance {
        use super::super::*;
        use crate::common::http::Daemon;

        /// The Skills extension's scenarios (`sep-2640-*`): the server ones through `mcpx daemon`
        /// with FastMCP 4's Skills server behind it, the client ones with mcpx as the client.
        #[test]
        fn the_skills_scenarios_pass_through_mcpx_outside_their_baselines() {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
            let daemon = Daemon::start(
                &format!(
                    "[servers.skills]\ncommand = {:?}\nargs = [\"{dir}/sdk/fastmcp_skills_server.py\", \"a\"]\nprefix = \"\"\n",
                    deps::python()
                ),
                "",
            );
            let scenarios = [
                "sep-2640-skills-enumeration",
                "sep-2640-skills-manifest",
                "sep-2640-skills-directory",
            ];
            server_scenarios(&daemon, &scenarios, "baseline-sep-2640.yml");
            for scenario in [
                "sep-2640-client-no-prefetch",
                "sep-2640-client-verify-digest",
                "sep-2640-client-verify-size",
                "sep-2640-client-verify-frontmatter",
            ] {
                client_scenarios(
                    &["--scenario", scenario],
                    Some("client-baseline-sep-2640.yml"),
                );
            }
        }

        /// The Tasks extension's ten `tasks-*` scenarios through `mcpx daemon`, with FastMCP 4's
        /// tasks server behind it (`fastmcp-tasks`): passed through, ids sealed by mcpx.
        #[test]
        fn the_tasks_scenarios_pass_through_mcpx_to_a_tasks_server_outside_their_baseline() {
            let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests");
            let daemon = Daemon::start(
                &format!(
                    "[servers.tasks]\ncommand = {:?}\nargs = [\"{dir}/sdk/fastmcp_tasks_server.py\"]\nprefix = \"\"\n",
                    deps::python()
                ),
                "",
            );
            server_scenarios(&daemon, &TASKS_SCENARIOS, "baseline-tasks.yml");
        }

        /// The same ten scenarios through `mcpx daemon` in front of a server with no tasks (the
        /// fixture's `--conformance-tasks`): mcpx runs the tasks itself. Each tool's `tasks` says
        /// what the scenarios want of it, so that no check rides on a call beating a timer; only
        /// `test_tool_with_task` is promoted by time (its first round asks at once, its second
        /// outlasts `promoteAfter` by a second).
        #[test]
        fn the_tasks_scenarios_pass_with_mcpxs_own_tasks_outside_their_baseline() {
            let policy = |tool: &str, tasks: &str| {
                format!("[servers.tasks.tools.{tool}]\ntasks = \"{tasks}\"\n")
            };
            let always = [
                "slow_compute",
                "protocol_error_job",
                "confirm_delete",
                "multi_input",
            ];
            let tools = always.map(|tool| policy(tool, "always")).concat()
                + &policy("greet", "never")
                + &policy("failing_job", "required");
            let daemon = Daemon::start(
                &format!(
                    "[tasks]\npromoteAfter = \"5s\"\n\
                     [servers.tasks]\ncommand = {:?}\nargs = [\"--conformance-tasks\"]\nprefix = \"\"\n{tools}",
                    crate::common::fixture_bin()
                ),
                "",
            );
            server_scenarios(&daemon, &TASKS_SCENARIOS, "baseline-tasks-own.yml");
        }

        /// The Tasks extension's server scenarios.
        const TASKS_SCENARIOS: [&str; 10] = [
            "tasks-lifecycle",
            "tasks-capability-negotiation",
            "tasks-wire-fields",
            "tasks-request-state-removal",
            "tasks-mrtr-input",
            "tasks-request-headers",
            "tasks-dispatch-and-envelope",
            "tasks-status-notifications",
            "tasks-required-task-error",
            "tasks-mrtr-composition",
        ];

        #[test]
        fn mcpx_as_a_client_passes_the_client_scenarios_outside_its_baseline() {
            let report = client_scenarios(
                &["--requirements", "2026-07-28"],
                Some("client-baseline-2026-07-28.yml"),
            );
            assert!(report.contains("auth/iss-wrong-issuer"), "{report}");
        }

        /// SEP-2352 without a person: the person logs in once, then the server names another
        /// authorization server. mcpx registers there by itself before it asks for a login
        /// (no second `mcpx auth login` is run), and never shows the old server's client there.
        #[test]
        fn a_moved_authorization_server_is_registered_with_before_a_login_is_asked() {
            let report = client_scenarios_with(
                &["--scenario", "auth/authorization-server-migration"],
                None,
                &[("MCPX_CONFORMANCE_LOGINS", "1")],
            );
            assert!(report.contains("OVERALL: PASSED"), "{report}");
            for check in [
                "sep-2352-reregister-on-as-change",
                "sep-2352-no-reuse-on-as-change",
                "sep-2352-no-cross-as-credential-reuse",
            ] {
                let passed = report
                    .lines()
                    .any(|l| l.contains(check) && l.contains("SUCCESS"));
                assert!(passed, "{check}: {report}");
            }
        }
    }
}
