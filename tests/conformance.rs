//! The official MCP conformance suite's server scenarios, run through `mcpx daemon` by
//! `tests/conformance/run` for the 2025-11-25 and 2026-07-28 requirement sets: a failure outside
//! `tests/conformance/baseline-*.yml`, or a baselined scenario that now passes, fails the test.

mod common;

use common::deps;
use std::process::Command;

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
