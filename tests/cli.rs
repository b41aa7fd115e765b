//! The command line for people: `mcpx tools` and `mcpx call`, on the real binary.

mod common;

use common::*;
use std::io::Write;
use std::process::{Command, Output};

fn mcpx(config: &str, args: &[&str]) -> Output {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(config.as_bytes()).unwrap();
    Command::new(mcpx_bin())
        .arg("--config")
        .arg(file.path())
        .args(args)
        .output()
        .unwrap()
}

mod every_revision {
    pub mod cli {
        use super::super::*;

        #[test]
        fn tools_groups_the_catalog_by_upstream_with_state_and_revision() {
            let out = mcpx(&fixture_config(""), &["tools"]);
            assert!(out.status.success());
            let text = String::from_utf8(out.stdout).unwrap();
            assert!(text.contains("mcpx (built-in)"), "{text}");
            assert!(
                text.contains("fixture [ready, revision 2025-11-25]"),
                "{text}"
            );
            assert!(text.contains("  fixture__echo"), "{text}");
        }

        #[test]
        fn call_prints_the_result_and_exits_zero() {
            let out = mcpx(
                &fixture_config(""),
                &["call", "fixture__echo", "--args", r#"{"text":"hello"}"#],
            );
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let result: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(result["content"][0]["text"], "hello");
        }

        #[test]
        fn call_exits_non_zero_on_a_tool_error_or_an_unknown_tool() {
            assert!(!mcpx(&fixture_config(""), &["call", "fixture__fail"])
                .status
                .success());
            let unknown = mcpx("", &["call", "nope"]);
            assert!(!unknown.status.success());
            assert!(String::from_utf8_lossy(&unknown.stderr).contains("Unknown tool"));
        }

        #[test]
        fn runs_with_no_configuration_at_all() {
            let out = Command::new(mcpx_bin())
                .args(["call", "mcpx__about"])
                .env("XDG_CONFIG_HOME", "/nonexistent")
                .output()
                .unwrap();
            assert!(out.status.success());
            assert!(String::from_utf8_lossy(&out.stdout).contains("2026-07-28"));
        }
    }
}
