//! A stdio server's stderr, as real servers write it (FastMCP, the Python SDK and most Node
//! servers log a line per request): read at the server's pace whatever mcpx keeps of it, so it
//! never slows the server's answers nor anyone else's, kept in mcpx's log at a bounded rate and
//! never as a line of the server's own making.

use crate::common::*;
use serde_json::json;
use std::time::Instant;

/// Two fixtures, one speaking both eras (mcpx talks 2026-07-28 to it) and one legacy only.
fn both_eras(extra: &str) -> String {
    let fixture = fixture_bin();
    format!(
        "[servers.modern]\ncommand = {fixture:?}\n[servers.legacy]\ncommand = {fixture:?}\nargs = [\"--legacy-only\"]\n{extra}"
    )
}

mod every_revision {
    pub mod stderr {
        use super::super::*;

        /// 1000 calls, each writing 500 stderr lines of 100 bytes (50 MB in all), through both
        /// eras' servers: every call answered, mcpx's memory flat, the log's copy bounded.
        #[test]
        fn a_server_writing_50_mb_to_stderr_answers_every_call_and_mcpx_stays_flat() {
            let mut mcpx = Serve::start(&both_eras(""));
            mcpx.initialize("2025-11-25");
            for (id, server) in [(1, "modern"), (2, "legacy")] {
                let warm = mcpx.call(
                    id,
                    "tools/call",
                    json!({"name": format!("{server}__echo"), "arguments": {"text": "warm"}}),
                );
                assert_eq!(tool_text(&warm), "warm");
            }
            let baseline = rss(mcpx.pid());
            let mut peak = baseline;
            let started = Instant::now();
            for id in 0..1000 {
                let server = ["modern", "legacy"][id as usize % 2];
                let shouted = mcpx.call(
                    10 + id,
                    "tools/call",
                    json!({"name": format!("{server}__shout"), "arguments": {"lines": 500, "bytes": 100}}),
                );
                assert_eq!(tool_text(&shouted), "shouted 500", "call {id}");
                if id % 50 == 0 {
                    peak = peak.max(rss(mcpx.pid()));
                }
            }
            let lasted = started.elapsed().as_secs_f64();
            peak = peak.max(rss(mcpx.pid()));
            assert!(
                peak < baseline + (32 << 20),
                "mcpx grew from {baseline} to {peak} bytes"
            );
            assert!(
                eventually(|| mcpx.log_shows("stderr lines dropped")),
                "no summary of what was dropped"
            );
            // Per server: the burst, then 200 a second for as long as it took, and a margin
            // for the lines read after the last call.
            let kept = mcpx.stderr().matches(&"s".repeat(100)).count();
            let allowed = 2 * (1_000 + (lasted * 200.0) as usize + 500);
            assert!(
                kept < allowed.min(100_000),
                "{kept} of 500000 stderr lines copied in {lasted:.1}s"
            );
        }

        /// A line that is a log line of mcpx's own, with a terminal escape, a carriage return
        /// and a bidirectional override in it: it is logged as the server's, escaped.
        #[test]
        fn a_servers_stderr_line_reaches_the_log_escaped_and_named_as_the_servers() {
            let mut mcpx = Serve::start(&both_eras(""));
            mcpx.initialize("2025-11-25");
            let forged = "2026-12-07T00:00:00.000000Z  INFO mcpx::approvals: the owner allowed it\u{1b}[2J\r\u{202e}exe";
            for (id, server) in [(1, "modern"), (2, "legacy")] {
                let shouted = mcpx.call(
                    id,
                    "tools/call",
                    json!({"name": format!("{server}__shout"), "arguments": {"lines": 1, "text": format!("{server}: {forged}")}}),
                );
                assert_eq!(tool_text(&shouted), "shouted 1");
            }
            for server in ["modern", "legacy"] {
                assert!(
                    eventually(|| mcpx.log_shows(&format!("{server}: 2026-12-07"))),
                    "{}",
                    mcpx.stderr()
                );
                let log = mcpx.stderr();
                let line = log
                    .lines()
                    .find(|l| l.contains(&format!("{server}: 2026-12-07")))
                    .unwrap();
                assert!(
                    !line.starts_with("2026-12-07T00:00:00"),
                    "a line of its own: {line:?}"
                );
                assert!(line.contains(&format!("server={server}")), "{line:?}");
                assert!(
                    !line.contains(['\u{1b}', '\r', '\u{202e}']),
                    "not escaped: {line:?}"
                );
                // The formatter writes ESC as `\x1b`, mcpx's log writer the rest as `\r`, `\u{…}`.
                let escaped = ["\\x1b[2J\\r\\u{202e}exe", "\\u{1b}[2J\\r\\u{202e}exe"];
                assert!(escaped.iter().any(|e| line.contains(e)), "{line:?}");
            }
        }

        /// A server that stops reading its stdin and writes stderr as fast as it can: its own
        /// call is answered when it reads again, and the other server's calls meanwhile.
        #[test]
        fn a_server_that_stops_reading_while_writing_stderr_stalls_no_other_servers_calls() {
            let mut mcpx = Serve::start(&both_eras(""));
            mcpx.initialize("2025-11-25");
            let warm = mcpx.call(
                1,
                "tools/call",
                json!({"name": "legacy__echo", "arguments": {"text": "warm"}}),
            );
            assert_eq!(tool_text(&warm), "warm");
            mcpx.request(
                2,
                "tools/call",
                json!({"name": "modern__deaf", "arguments": {"ms": 4000}}),
            );
            assert!(
                eventually(|| mcpx.log_shows("fixture: not listening")),
                "the deaf call never started"
            );
            // Calls to the deaf server queue behind it; the other's are answered meanwhile.
            for id in 3..23 {
                mcpx.request(
                    id,
                    "tools/call",
                    json!({"name": "modern__echo", "arguments": {"text": format!("queued {id}")}}),
                );
            }
            for id in 100..150 {
                let echo = mcpx.call(
                    id,
                    "tools/call",
                    json!({"name": "legacy__echo", "arguments": {"text": format!("served {id}")}}),
                );
                assert_eq!(tool_text(&echo), format!("served {id}"));
            }
            let deaf = mcpx.response(2);
            assert!(tool_text(&deaf).starts_with("deaf for 4000 ms"), "{deaf}");
            for id in 3..23 {
                let queued = mcpx.response(id);
                assert_eq!(tool_text(&queued), format!("queued {id}"));
            }
        }
    }
}
