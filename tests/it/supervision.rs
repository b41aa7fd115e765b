//! Upstreams that stay up, end to end: supervision after a crash, timeouts, hot reload, no
//! orphans when mcpx is killed, and the era choice.

use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use std::io::Write;
use std::time::{Duration, Instant};

/// The state the built-in `mcpx__upstreams` tool reports for `name`.
fn upstream_state(mcpx: &mut Serve, id: i64, name: &str) -> Value {
    let report = mcpx.call(
        id,
        "tools/call",
        json!({"name": "mcpx__upstreams", "arguments": {}}),
    );
    report["result"]["structuredContent"]["upstreams"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == name)
        .cloned()
        .unwrap()
}

/// A daemon's one upstream, as `mcpx__upstreams` tells it.
fn daemon_upstream(d: &Daemon) -> Value {
    let report = d
        .modern(
            9,
            "tools/call",
            json!({"name": "mcpx__upstreams", "arguments": {}}),
        )
        .json();
    report["result"]["structuredContent"]["upstreams"][0].clone()
}

/// The fixture's pid, from the line it logs at start.
fn fixture_pids(log: &str) -> Vec<u32> {
    log.lines()
        .filter_map(|l| l.split("fixture: pid ").nth(1))
        .filter_map(|p| p.split_whitespace().next()?.parse().ok())
        .collect()
}

fn alive(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
        && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .unwrap_or_default()
            .contains(") Z ")
}

mod every_revision {
    pub mod supervision {
        use super::super::*;

        /// `mcpx status` says why a server failed (its exit status and what it said last on
        /// stderr, on one line) and how long one has been starting, and that it is its first
        /// start; neither needs the daemon's log.
        #[test]
        fn status_says_why_a_server_failed_and_how_long_one_has_been_starting() {
            let config = "[servers.docker]\ncommand = \"sh\"\n\
                args = [\"-c\", \"echo pulling >&2; echo 'Cannot connect to the Docker daemon at unix:///var/run/docker.sock.' >&2; exit 125\"]\n\
                [servers.slow]\ncommand = \"sleep\"\nargs = [\"600\"]\n";
            let d = Daemon::start(config, "");
            let status = || {
                let out = std::process::Command::new(mcpx_bin())
                    .arg("--config")
                    .arg(d.config_path())
                    .arg("status")
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).into_owned()
            };
            let said = "exited with status 125: pulling | Cannot connect to the Docker daemon at unix:///var/run/docker.sock.";
            assert!(eventually(|| status().contains(said)), "{}", status());
            let line = |text: &str, name: &str| {
                let found = text.lines().find(|l| l.trim_start().starts_with(name));
                found.unwrap_or_default().to_owned()
            };
            assert!(
                eventually(|| line(&status(), "slow").contains("s (first start)")),
                "{}",
                status()
            );
            assert!(
                line(&status(), "slow").contains("starting for "),
                "{}",
                status()
            );
        }

        #[test]
        fn a_crashed_upstream_fails_its_call_at_once_then_restarts_without_list_changed() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-11-25");
            let started = Instant::now();
            let crashed = mcpx.call(
                1,
                "tools/call",
                json!({"name": "fixture__crash", "arguments": {}}),
            );
            assert_eq!(crashed["error"]["code"], -32603);
            // At once: not after the upstream's timeout (five minutes), with room for a loaded machine.
            assert!(
                started.elapsed() < Duration::from_secs(3),
                "the caller waited {:?}",
                started.elapsed()
            );
            let deadline = Instant::now() + PATIENCE;
            let mut id = 10;
            loop {
                id += 1;
                let echo = mcpx.call(
                    id,
                    "tools/call",
                    json!({"name": "fixture__echo", "arguments": {"text": "back"}}),
                );
                if echo["result"]["content"][0]["text"] == "back" {
                    break;
                }
                assert!(Instant::now() < deadline, "never came back: {echo}");
                std::thread::sleep(Duration::from_millis(50));
            }
            assert_eq!(upstream_state(&mut mcpx, 100, "fixture")["restarts"], 1);
            // The same tools came back: nothing to announce.
            let heard = mcpx.drain(Duration::from_millis(300));
            assert!(
                heard
                    .iter()
                    .all(|m| m["method"] != "notifications/tools/list_changed"),
                "{heard:?}"
            );
        }

        #[test]
        fn a_server_that_keeps_failing_is_damped_as_a_crash_loop() {
            let mut mcpx =
                Serve::start("[servers.flaky]\ncommand = \"sh\"\nargs = [\"-c\", \"exit 3\"]\n");
            mcpx.initialize("2025-11-25");
            let deadline = Instant::now() + PATIENCE;
            loop {
                let state = upstream_state(&mut mcpx, 1, "flaky")["state"]
                    .as_str()
                    .unwrap()
                    .to_owned();
                if state.contains("crash loop") {
                    assert!(state.starts_with("failed"), "{state}");
                    break;
                }
                assert!(Instant::now() < deadline, "never damped: {state}");
                std::thread::sleep(Duration::from_millis(200));
            }
        }

        #[test]
        fn an_upstream_that_writes_garbage_or_answers_twice_is_heard_once_and_serves_on() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-11-25");
            let answer = mcpx.call(
                1,
                "tools/call",
                json!({"name": "fixture__misbehave", "arguments": {}}),
            );
            assert_eq!(
                answer["result"]["content"][0]["text"], "first answer",
                "{answer}"
            );
            let later = mcpx.drain(Duration::from_millis(300));
            assert!(
                later.iter().all(|frame| frame.get("id").is_none()),
                "a second answer or a stray response reached the client: {later:?}"
            );
            assert!(mcpx.log_shows("bytes that is not JSON-RPC: this line is not JSON"));
            let echo = mcpx.call(
                2,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "still here"}}),
            );
            assert_eq!(echo["result"]["content"][0]["text"], "still here");
        }

        #[test]
        fn past_max_in_flight_a_call_is_refused_at_once_and_other_servers_serve_on() {
            let mut mcpx = Serve::start(&format!(
                "[servers.fixture]\ncommand = {0:?}\nmaxInFlight = 2\n[servers.other]\ncommand = {0:?}\n",
                fixture_bin()
            ));
            mcpx.initialize("2025-11-25");
            let sleep = json!({"name": "fixture__sleep", "arguments": {}});
            mcpx.request(1, "tools/call", sleep.clone());
            mcpx.request(2, "tools/call", sleep);
            let deadline = Instant::now() + PATIENCE;
            while mcpx.stderr().matches("fixture: sleeping request").count() < 2 {
                assert!(Instant::now() < deadline, "{}", mcpx.stderr());
                std::thread::sleep(Duration::from_millis(10));
            }
            let echo = |text: &str| json!({"name": "fixture__echo", "arguments": {"text": text}});
            let refused = mcpx.call(3, "tools/call", echo("refused"));
            let message = refused["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("servers.fixture.maxInFlight (2)"),
                "{refused}"
            );
            assert!(mcpx.log_shows("servers.fixture.maxInFlight (2) reached"));
            let other = mcpx.call(
                4,
                "tools/call",
                json!({"name": "other__echo", "arguments": {"text": "other"}}),
            );
            assert_eq!(other["result"]["content"][0]["text"], "other");
            mcpx.notify("notifications/cancelled", json!({"requestId": 1}));
            assert!(mcpx.log_shows("fixture: cancelled request"));
            let served = mcpx.call(5, "tools/call", echo("served"));
            assert_eq!(served["result"]["content"][0]["text"], "served", "{served}");
        }

        #[test]
        fn an_upstream_that_never_answers_hits_its_timeout() {
            let mut mcpx = Serve::start(&format!(
                "[servers.fixture]\ncommand = {:?}\ntimeout = \"300ms\"\n",
                fixture_bin()
            ));
            mcpx.initialize("2025-11-25");
            let started = Instant::now();
            let slow = mcpx.call(
                1,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {}}),
            );
            assert!(
                slow["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("did not answer within"),
                "{slow}"
            );
            assert!(started.elapsed() < Duration::from_secs(3));
            assert!(
                mcpx.log_shows("fixture: cancelled request"),
                "the upstream was not told"
            );
        }

        #[test]
        fn killing_mcpx_with_sigkill_leaves_no_upstream_behind() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-11-25");
            assert!(mcpx.log_shows("fixture: pid "));
            let pids = fixture_pids(&mcpx.stderr());
            assert_eq!(pids.len(), 1);
            assert!(alive(pids[0]));
            mcpx.kill();
            let deadline = Instant::now() + Duration::from_secs(5);
            while alive(pids[0]) {
                assert!(Instant::now() < deadline, "the upstream outlived mcpx");
                std::thread::sleep(Duration::from_millis(20));
            }
        }

        /// Real launchers are wrappers (`npx`, `uvx`, `sh -c`): the server and what it started
        /// are grandchildren of mcpx. Killed with SIGKILL, mcpx leaves no process of the tree
        /// behind: not the wrapper, not the server, not a background child of the wrapper.
        #[test]
        fn killing_mcpx_with_sigkill_leaves_no_process_of_a_wrapped_upstreams_tree() {
            let mark = format!("MCPX_TREE_MARK={}", std::process::id());
            let config = format!(
                "[servers.fixture]\ncommand = \"sh\"\nargs = [\"-c\", \"sleep 1000 & {} ; wait\"]\nenv = {{ MCPX_TREE_MARK = \"{}\" }}\n",
                fixture_bin(),
                std::process::id()
            );
            let marked = || -> Vec<u32> {
                std::fs::read_dir("/proc")
                    .unwrap()
                    .flatten()
                    .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
                    .filter(|&pid| alive(pid))
                    .filter(|pid| {
                        std::fs::read(format!("/proc/{pid}/environ"))
                            .unwrap_or_default()
                            .split(|&b| b == 0)
                            .any(|entry| entry == mark.as_bytes())
                    })
                    .collect()
            };
            let mut mcpx = Serve::start(&config);
            mcpx.initialize("2025-11-25");
            assert!(mcpx.log_shows("fixture: pid "));
            // The wrapper, its sleep and the server (and mcpx's supervisor, which has no mark).
            assert!(eventually(|| marked().len() >= 3), "{:?}", marked());
            mcpx.kill();
            assert!(
                eventually(|| marked().is_empty()),
                "outlived mcpx: {:?}",
                marked()
            );
        }

        /// `era = "auto"` over stdio: a server that speaks both eras is spoken to in
        /// 2026-07-28 (the published `mcp-server-time`, and the fixture, which speaks both), a
        /// legacy one (the fixture with `--legacy-only`) in its revision after refusing
        /// `server/discover`.
        #[test]
        fn auto_speaks_the_newest_era_a_stdio_server_knows() {
            let config = format!(
                "[servers.time]\ncommand = {:?}\n[servers.dual]\ncommand = {:?}\n[servers.legacy]\ncommand = {:?}\nargs = [\"--legacy-only\"]\n",
                deps::mcp_server_time(),
                fixture_bin(),
                fixture_bin()
            );
            let mut mcpx = Serve::start(&config);
            mcpx.initialize("2025-11-25");
            assert!(mcpx.upstreams_ready(), "{}", mcpx.stderr());
            for (id, (name, revision)) in [
                ("time", "2026-07-28"),
                ("dual", "2026-07-28"),
                ("legacy", "2025-11-25"),
            ]
            .into_iter()
            .enumerate()
            {
                let state = upstream_state(&mut mcpx, id as i64 + 1, name);
                assert_eq!(state["revision"], revision, "{name}: {state}");
                assert_eq!(state["restarts"], 0, "{name}: {state}");
            }
            let now = mcpx.call(
                9,
                "tools/call",
                json!({"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}),
            );
            assert_eq!(now["result"]["isError"], false, "{now}");
        }

        /// The first list waits `[daemon] listWait` for servers starting, not for the slowest:
        /// with one server that starts only when the test lets it, `tools/list` answers with the
        /// others (in both eras); once it has started, a legacy session hears `list_changed`
        /// and lists it too.
        #[test]
        fn a_slow_server_does_not_hold_the_first_list() {
            let dir = tempfile::tempdir().unwrap();
            let go = dir.path().join("go");
            let script = format!(
                "while [ ! -e {go:?} ]; do sleep 0.05; done; exec {:?}",
                fixture_bin()
            );
            let config = format!(
                "{}\n[servers.slow]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n",
                fixture_config("")
            );
            let names = |listed: &Value| listed["result"]["tools"].to_string();
            let mut modern_client = Serve::start(&config);
            // Answered, with mcpx's own tools (and the fixture's, if it was quick enough), and
            // without the server that cannot have started.
            let first = |listed: &Value| {
                names(listed).contains("mcpx__") && !names(listed).contains("slow__")
            };
            let listed = modern_client.call(1, "tools/list", modern(json!({})));
            assert!(first(&listed), "{listed}");
            let mut legacy = Serve::start(&config);
            legacy.initialize("2025-11-25");
            let listed = legacy.call(1, "tools/list", json!({}));
            assert!(first(&listed), "{listed}");
            std::fs::write(&go, "").unwrap();
            loop {
                let message = legacy.next();
                if message["method"] == "notifications/tools/list_changed" {
                    break;
                }
            }
            let listed = legacy.call(2, "tools/list", json!({}));
            let both =
                names(&listed).contains("slow__echo") && names(&listed).contains("fixture__echo");
            assert!(both, "{listed}");
        }

        /// While one server is still starting, a call to another that serves (and to mcpx's
        /// own tools) is answered at once, not held for the slow one; on the next start, the
        /// slow server's tools are listed from its last run's catalog before it has started,
        /// in both eras, and a call to it waits for it.
        #[test]
        fn a_slow_server_holds_no_other_call_and_is_listed_from_its_last_run() {
            let dir = tempfile::tempdir().unwrap();
            let go = dir.path().join("go");
            let script = format!(
                "while [ ! -e {go:?} ]; do sleep 0.05; done; exec {:?}",
                fixture_bin()
            );
            let config = dir.path().join("mcpx.toml");
            std::fs::write(
                &config,
                format!(
                    "{}\n[servers.slow]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n",
                    fixture_config("")
                ),
            )
            .unwrap();
            let serve = || {
                let mut command = serve_command(&config, &[]);
                command.env("XDG_CACHE_HOME", dir.path().join("cache"));
                Serve::from_command(command)
            };
            let names = |listed: &Value| listed["result"]["tools"].to_string();
            let mut first = serve();
            // Lists until the list names `tool` (bounded by PATIENCE).
            let listed_until = |mcpx: &mut Serve, tool: &str| {
                let deadline = Instant::now() + PATIENCE;
                for request in 1000.. {
                    if names(&mcpx.call(request, "tools/list", modern(json!({})))).contains(tool) {
                        return true;
                    }
                    if Instant::now() > deadline {
                        return false;
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
                false
            };
            assert!(listed_until(&mut first, "fixture__echo"));
            let echo = json!({"name": "fixture__echo", "arguments": {"text": "now"}});
            assert_eq!(
                tool_text(&first.call(100, "tools/call", modern(echo.clone()))),
                "now"
            );
            let about = json!({"name": "mcpx__about", "arguments": {}});
            let answered = first.call(101, "tools/call", modern(about));
            assert!(answered.get("result").is_some(), "{answered}");
            std::fs::write(&go, "").unwrap();
            assert!(listed_until(&mut first, "slow__echo"));
            drop(first);
            std::fs::remove_file(&go).unwrap();
            // Its next start: listed from the cache while it waits.
            let mut next = serve();
            let listed = next.call(1, "tools/list", modern(json!({})));
            assert!(names(&listed).contains("slow__echo"), "{listed}");
            let mut legacy = serve();
            legacy.initialize("2025-11-25");
            let listed = legacy.call(1, "tools/list", json!({}));
            assert!(names(&listed).contains("slow__echo"), "{listed}");
            let slow = json!({"name": "slow__echo", "arguments": {"text": "late"}});
            next.request(2, "tools/call", modern(slow));
            std::fs::write(&go, "").unwrap();
            assert_eq!(tool_text(&next.response(2)), "late");
        }

        /// A server's first start (it never started, no catalog of it is cached: an `npx -y`
        /// download) is given `firstStartTimeout`; later starts `startTimeout`. The server here
        /// takes two seconds to start each time: its first start under a `startTimeout` of one
        /// second serves; once it crashed, its restart is held to the one second, and the state
        /// says why it failed.
        #[test]
        fn a_first_start_gets_first_start_timeout_and_later_ones_start_timeout() {
            let cache = tempfile::tempdir().unwrap();
            let script = format!("sleep 2; exec {:?}", fixture_bin());
            let config = format!(
                "[servers.fixture]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\n\
                 startTimeout = \"1s\"\nfirstStartTimeout = \"5m\"\n"
            );
            let env = [("XDG_CACHE_HOME", cache.path().to_str().unwrap())];
            let d = Daemon::start_with_env(&config, "", &env);
            let state = daemon_upstream;
            assert!(
                eventually(|| state(&d)["state"] == "ready"),
                "{}",
                d.stderr()
            );
            let crash = json!({"name": "fixture__crash", "arguments": {}});
            d.modern(1, "tools/call", crash);
            let failed = || {
                state(&d)["state"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("no answer within 1s")
            };
            assert!(eventually(failed), "{}\n{}", state(&d), d.stderr());
        }

        /// A legacy server that exits on any first request but `initialize` is started again
        /// with `initialize` alone, and serves; later starts skip the probe, in this run (a
        /// crash) and the next (noted beside the catalogs in the cache directory).
        #[test]
        fn a_server_that_exits_on_the_discover_probe_is_restarted_with_initialize() {
            let cache = tempfile::tempdir().unwrap();
            let config = fixture_config("args = [\"--exit-on-unknown\"]\n");
            let env = [("XDG_CACHE_HOME", cache.path().to_str().unwrap())];
            let state = daemon_upstream;
            let ready = |d: &Daemon| eventually(|| state(d)["state"] == "ready");
            let echo = |d: &Daemon| {
                let params = json!({"name": "fixture__echo", "arguments": {"text": "up"}});
                d.modern(3, "tools/call", params).json()["result"]["content"][0]["text"].clone()
            };
            let first = Daemon::start_with_env(&config, "", &env);
            assert!(
                first.log_shows("exited on server/discover"),
                "{}",
                first.stderr()
            );
            assert!(ready(&first), "{}", first.stderr());
            assert_eq!(state(&first)["revision"], "2025-11-25");
            assert_eq!(echo(&first), "up");
            // A crash later restarts it without the probe: it exits on nothing else.
            first.modern(
                4,
                "tools/call",
                json!({"name": "fixture__crash", "arguments": {}}),
            );
            assert!(
                eventually(|| state(&first)["restarts"] == 2 && state(&first)["state"] == "ready"),
                "{}",
                first.stderr()
            );
            // Counted where the server says it (its stderr), not where mcpx quotes it.
            let said = |log: String| {
                let own = log.lines().filter(|l| l.contains(" upstream: "));
                own.filter(|l| l.contains("exiting on a first request"))
                    .count()
            };
            assert_eq!(said(first.stderr()), 1, "{}", first.stderr());
            drop(first);
            let second = Daemon::start_with_env(&config, "", &env);
            assert!(ready(&second), "{}", second.stderr());
            assert_eq!(echo(&second), "up");
            assert_eq!(state(&second)["restarts"], 0, "{}", second.stderr());
            assert!(!second.stderr().contains("exiting on a first request"));
        }

        /// A server noted as exiting on the probe is asked `initialize` first, not only: one
        /// that then answers as a modern server (here: one that exits on any first request but
        /// `initialize`, and speaks only 2026-07-28) is still spoken to in 2026-07-28.
        #[test]
        fn a_modern_server_that_exits_on_the_probe_is_still_found_modern() {
            let cache = tempfile::tempdir().unwrap();
            let config = fixture_config("args = [\"--modern-only\", \"--exit-on-unknown\"]\n");
            let env = [("XDG_CACHE_HOME", cache.path().to_str().unwrap())];
            let d = Daemon::start_with_env(&config, "", &env);
            let state = || daemon_upstream(&d);
            assert!(eventually(|| state()["state"] == "ready"), "{}", d.stderr());
            assert_eq!(state()["revision"], "2026-07-28", "{}", d.stderr());
        }

        #[test]
        fn era_can_be_fixed_per_upstream() {
            let modern = format!("[servers.fixture]\ncommand = {:?}\nargs = [\"--modern-only\"]\nera = \"2026-07-28\"\n", fixture_bin());
            let mut mcpx = Serve::start(&modern);
            mcpx.initialize("2025-11-25");
            assert_eq!(
                upstream_state(&mut mcpx, 1, "fixture")["revision"],
                "2026-07-28"
            );
            // Probing would have started with initialize; the fixed era never sends it.
            assert!(!mcpx.stderr().contains("Unsupported protocol version"));
            let legacy_only = format!(
                "[servers.fixture]\ncommand = {:?}\nargs = [\"--modern-only\"]\nera = \"legacy\"\n",
                fixture_bin()
            );
            let mut mcpx = Serve::start(&legacy_only);
            mcpx.initialize("2025-11-25");
            let state = upstream_state(&mut mcpx, 1, "fixture")["state"]
                .as_str()
                .unwrap()
                .to_owned();
            assert!(state.starts_with("failed: initialize failed"), "{state}");
        }
    }

    pub mod footprint {
        use super::super::*;

        /// The supervisor's own binary, beside mcpx's.
        fn supervisor_bin() -> std::path::PathBuf {
            mcpx_bin().with_file_name("mcpx-exec-upstream")
        }

        /// The memory a supervisor holds of its own: anonymous pages outside its executable's
        /// image (its heap, its stack). The image's pages are the binary's, shared text and
        /// relocated data, larger in a debug build than in a release one; the whole figure,
        /// release, is `bench/per_upstream`'s.
        fn own_memory_kib(pid: u32) -> Option<u64> {
            let smaps = std::fs::read_to_string(format!("/proc/{pid}/smaps")).ok()?;
            let image = supervisor_bin().display().to_string();
            let mut in_image = false;
            let mut total = 0;
            for line in smaps.lines() {
                let mut words = line.split_whitespace();
                match words.next() {
                    Some(first) if first.contains('-') && !first.ends_with(':') => {
                        in_image = line.ends_with(image.as_str());
                    }
                    Some("Anonymous:") if !in_image => {
                        total += words.next()?.parse::<u64>().ok()?;
                    }
                    _ => {}
                }
            }
            Some(total)
        }

        /// Twenty stdio servers: each one's supervisor is `mcpx-exec-upstream` (not mcpx's own,
        /// larger binary), one thread, and holds at most 1 MiB of its own (it used to be the
        /// whole of mcpx: an executor, threads, logging, ~7 MiB).
        #[test]
        fn a_stdio_servers_supervisor_is_one_thread_and_holds_under_a_mebibyte() {
            let fixture = fixture_bin();
            let servers: String = (0..20)
                .map(|n| format!("[servers.s{n}]\ncommand = {fixture:?}\n"))
                .collect();
            let daemon = Daemon::start(&servers, "");
            assert!(daemon.upstreams_ready(), "{}", daemon.stderr());
            let children = std::fs::read_dir(format!("/proc/{}/task", daemon.pid()))
                .unwrap()
                .flatten()
                .flat_map(|task| std::fs::read_to_string(task.path().join("children")))
                .collect::<String>();
            let supervisors: Vec<u32> = children
                .split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .filter(|pid| {
                    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                    String::from_utf8_lossy(&cmdline).contains("exec-upstream")
                })
                .collect();
            assert_eq!(supervisors.len(), 20, "{children}");
            for pid in supervisors {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
                let program = cmdline.split(|&b| b == 0).next().unwrap();
                assert_eq!(
                    std::path::Path::new(&*String::from_utf8_lossy(program)),
                    supervisor_bin()
                );
                let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
                assert!(status.lines().any(|l| l == "Threads:\t1"), "{status}");
                // Supervisors are not dumpable: only root reads their memory map.
                let Some(own) = own_memory_kib(pid) else {
                    eprintln!("SKIPPED the memory bound: /proc/{pid}/smaps needs root here");
                    continue;
                };
                assert!(own <= 1024, "supervisor {pid} holds {own} KiB of its own");
            }
        }
    }

    pub mod limits {
        use super::super::*;

        /// An upstream that writes a 400 MB answer (its id last) and a 400 MB stderr line: mcpx
        /// holds neither, the call fails at once with the reason, and both upstreams still serve.
        #[test]
        fn an_upstream_flooding_stdout_and_stderr_keeps_mcpx_memory_flat_and_fails_its_call_at_once(
        ) {
            let config = format!(
                "{}[servers.healthy]\ncommand = {:?}\n",
                fixture_config(""),
                fixture_bin()
            );
            let mut mcpx = Serve::start(&config);
            mcpx.initialize("2025-11-25");
            let warm = mcpx.call(
                1,
                "tools/call",
                json!({"name": "healthy__echo", "arguments": {"text": "warm"}}),
            );
            assert_eq!(warm["result"]["content"][0]["text"], "warm");
            let baseline = rss(mcpx.pid());
            let flood: u64 = 400 << 20;
            mcpx.request(
                2,
                "tools/call",
                json!({"name": "fixture__flood", "arguments": {"bytes": flood}}),
            );
            let mut peak = baseline;
            let deadline = Instant::now() + Duration::from_secs(120);
            let answer = loop {
                assert!(Instant::now() < deadline, "no answer to the flooding call");
                peak = peak.max(rss(mcpx.pid()));
                match mcpx.next_line(Duration::from_millis(20)) {
                    Some(message) if message["id"] == 2 => break message,
                    _ => {}
                }
            };
            assert_eq!(answer["error"]["code"], -32603, "{answer}");
            let message = answer["error"]["message"].as_str().unwrap();
            assert!(message.contains("transport.maxMessageBytes"), "{message}");
            assert!(
                peak < baseline + (64 << 20),
                "mcpx grew from {baseline} to {peak} bytes"
            );
            assert!(mcpx.log_shows(&format!("[cut: {} bytes]", flood + 15)));
            assert!(mcpx.log_shows("over transport.maxMessageBytes (4194304)"));
            for (id, server) in [(3, "healthy"), (4, "fixture")] {
                let echo = mcpx.call(
                    id,
                    "tools/call",
                    json!({"name": format!("{server}__echo"), "arguments": {"text": server}}),
                );
                assert_eq!(echo["result"]["content"][0]["text"], server, "{echo}");
            }
        }
    }

    pub mod shutdown {
        use super::super::*;

        /// SIGTERM to `mcpx serve` with a call in flight: the call is answered -32603 "mcpx is
        /// shutting down" (not dropped), and mcpx exits.
        #[test]
        fn sigterm_answers_the_calls_in_flight_and_exits() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-11-25");
            mcpx.request(
                1,
                "tools/call",
                json!({"name": "fixture__sleep", "arguments": {}}),
            );
            assert!(mcpx.log_shows("fixture: sleeping request"));
            let killed = std::process::Command::new("kill")
                .args(["-TERM", &mcpx.pid().to_string()])
                .status()
                .unwrap();
            assert!(killed.success());
            let answer = mcpx.response(1);
            assert_eq!(answer["error"]["code"], -32603, "{answer}");
            assert_eq!(answer["error"]["message"], "mcpx is shutting down");
            assert!(mcpx.wait(PATIENCE).is_some(), "mcpx did not exit");
        }
    }

    /// An upstream that talks without end costs mcpx a bounded share of its work and log.
    pub mod noisy {
        use super::super::*;

        /// 100 `tools/list_changed` in a second: mcpx lists the tools at most once per quarter
        /// second (today: once per notification), and what clients see at the end is the newest
        /// list.
        #[test]
        fn a_list_changed_storm_is_listed_a_few_times_and_ends_on_the_newest_list() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-11-25");
            let listings = |mcpx: &Serve| mcpx.stderr().matches("fixture: listing tools").count();
            assert!(mcpx.log_shows("upstream ready"));
            let before = listings(&mcpx);
            let started = Instant::now();
            let storm = mcpx.call(
                1,
                "tools/call",
                json!({"name": "fixture__storm", "arguments": {"count": 100, "everyMs": 10}}),
            );
            let lasted = started.elapsed();
            assert_eq!(
                storm["result"]["content"][0]["text"], "stormed 100",
                "{storm}"
            );
            let has_extra = |mcpx: &mut Serve, id| {
                let listed = mcpx.call(id, "tools/list", json!({}));
                listed["result"]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|t| t["name"] == "fixture__extra")
            };
            let deadline = Instant::now() + PATIENCE;
            let mut id = 2;
            while !has_extra(&mut mcpx, id) {
                assert!(Instant::now() < deadline, "the newest list never arrived");
                id += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
            // Four listings a second for as long as the storm lasted (a second, more on a busy
            // machine), the first and the last, and one more for a late notification.
            let allowed = (lasted.as_millis() / 250) as usize + 3;
            let during = listings(&mcpx) - before;
            assert!(
                (1..=allowed).contains(&during),
                "{during} listings for 100 list_changed in {lasted:?}"
            );
        }

        /// 20,000 log messages as fast as the upstream can write them: mcpx copies a burst and
        /// then a steady rate into its log, and says how many it dropped, instead of a line each.
        #[test]
        fn an_upstream_flooding_log_messages_is_summarised_not_copied_line_by_line() {
            let mut mcpx = Serve::start(&fixture_config(""));
            mcpx.initialize("2025-11-25");
            let started = Instant::now();
            let chatter = mcpx.call(
                1,
                "tools/call",
                json!({"name": "fixture__chatter", "arguments": {"count": 20_000}}),
            );
            let lasted = started.elapsed().as_secs_f64();
            assert_eq!(
                chatter["result"]["content"][0]["text"], "chattered 20000",
                "{chatter}"
            );
            assert!(
                mcpx.log_shows("upstream said too much"),
                "{}",
                mcpx.stderr()
            );
            // The burst, then the steady rate for as long as the call took (longer on a busy
            // machine), and the last lines read after it.
            let allowed = 1_000 + (lasted * 200.0) as usize + 500;
            let copied = mcpx.stderr().matches("chatter ").count();
            assert!(
                copied < allowed.min(19_000),
                "{copied} of 20000 log messages copied in {lasted:.1}s"
            );
            let served = mcpx.call(
                2,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "still here"}}),
            );
            assert_eq!(served["result"]["content"][0]["text"], "still here");
        }
    }

    pub mod fairness {
        use super::super::*;

        /// One client's sleeps take an upstream's places up to all but a quarter of them (the
        /// rest refused at once, naming the fair share), so another client's call is still served.
        #[test]
        fn one_client_cannot_take_every_place_an_upstream_has() {
            let d = Daemon::start(
                &format!(
                    "[servers.fixture]\ncommand = {:?}\nmaxInFlight = 8\n",
                    fixture_bin()
                ),
                "",
            );
            let greedy = initialize_session(&d, "2025-11-25", json!({}));
            let other = initialize_session(&d, "2025-11-25", json!({}));
            let headers = |session: &str| -> Vec<(String, String)> {
                vec![
                    (
                        "Accept".into(),
                        "application/json, text/event-stream".into(),
                    ),
                    ("Content-Type".into(), "application/json".into()),
                    ("Mcp-Session-Id".into(), session.to_owned()),
                    ("MCP-Protocol-Version".into(), "2025-11-25".into()),
                ]
            };
            let greedy_headers = headers(&greedy);
            let sleeps: Vec<_> = (1..=8)
                .map(|id| {
                    let sleep = request(
                        id,
                        "tools/call",
                        json!({"name": "fixture__sleep", "arguments": {}}),
                    );
                    d.send_post(&header_refs(&greedy_headers), sleep.to_string().as_bytes())
                })
                .collect();
            assert!(
                eventually(|| d.stderr().matches("fixture: sleeping request").count() == 6),
                "{}",
                d.stderr()
            );
            let echo = request(
                9,
                "tools/call",
                json!({"name": "fixture__echo", "arguments": {"text": "room"}}),
            );
            let served = d.post(&header_refs(&headers(&other)), echo.to_string().as_bytes());
            assert_eq!(served.json()["result"]["content"][0]["text"], "room");
            // What each of the greedy client's POSTs has said by now: the refused ones, all.
            let said = |mut stream: std::net::TcpStream| {
                use std::io::Read;
                stream
                    .set_read_timeout(Some(Duration::from_millis(300)))
                    .unwrap();
                let (mut raw, mut buf) = (Vec::new(), [0u8; 4096]);
                while let Ok(n @ 1..) = stream.read(&mut buf) {
                    raw.extend_from_slice(&buf[..n]);
                }
                String::from_utf8_lossy(&raw).into_owned()
            };
            let refused = sleeps
                .into_iter()
                .map(said)
                .filter(|text| text.contains("its fair share beside other clients"))
                .count();
            assert_eq!(refused, 2, "{}", d.stderr());
        }
    }

    /// What a client that stops reading, or an upstream that asks without waiting, cannot do:
    /// grow mcpx.
    pub mod backpressure {
        use super::super::*;
        use std::io::{BufRead, BufReader};
        use std::process::{Child, ChildStdin, ChildStdout, Stdio};

        /// How much mcpx may grow in these tests: far less than what the floods would cost if
        /// they were held.
        const GROWTH: u64 = 48 << 20;

        /// How many progress reports and log messages the upstream sends: held, they would be
        /// well over [`GROWTH`].
        const CHATTER: u64 = 60_000;

        /// A `mcpx serve` whose stdout the test does not read until it says so.
        struct Unread {
            child: Child,
            stdin: ChildStdin,
            stdout: Option<ChildStdout>,
            log: Log,
            _config: tempfile::NamedTempFile,
        }

        impl Unread {
            fn start(config: &str, options: &[&str]) -> Unread {
                let mut file = tempfile::NamedTempFile::new().unwrap();
                file.write_all(config.as_bytes()).unwrap();
                let mut child = serve_command(file.path(), options).spawn().unwrap();
                Unread {
                    stdin: child.stdin.take().unwrap(),
                    stdout: child.stdout.take(),
                    log: Log::capture(child.stderr.take().unwrap(), |_| {}),
                    child,
                    _config: file,
                }
            }

            fn send(&mut self, message: Value) {
                writeln!(self.stdin, "{message}").unwrap();
                self.stdin.flush().unwrap();
            }

            /// Starts reading: every line until the response `id`, which is the last.
            fn read_until(&mut self, id: i64) -> Vec<Value> {
                let stdout = BufReader::new(self.stdout.take().unwrap());
                let mut seen = Vec::new();
                for line in stdout.lines() {
                    let message: Value = serde_json::from_str(&line.unwrap()).unwrap();
                    let done = message["id"] == id && message.get("method").is_none();
                    seen.push(message);
                    if done {
                        return seen;
                    }
                }
                panic!(
                    "stdout ended without response {id}; log:\n{}",
                    self.log.text()
                );
            }
        }

        impl Drop for Unread {
            fn drop(&mut self) {
                let _ = self.child.kill();
                let _ = self.child.wait();
            }
        }

        fn initialize(revision: &str) -> Value {
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": revision, "capabilities": {"roots": {}},
                "clientInfo": {"name": "test", "version": "1"}}})
        }

        /// The upstream's chatter, as call `id`: it writes `done` when it has said everything.
        fn chatter(id: i64, done: &std::path::Path) -> Value {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
                "name": "fixture__chatter", "arguments": {"count": CHATTER, "doneFile": done},
                "_meta": {"progressToken": "p"}}})
        }

        /// The largest RSS of `pids` seen until the upstream has written `done`.
        fn peak_while_chattering(pids: &[u32], done: &std::path::Path) -> Vec<u64> {
            let deadline = Instant::now() + Duration::from_secs(120);
            let mut peaks: Vec<u64> = pids.iter().map(|pid| rss(*pid)).collect();
            while !done.exists() {
                assert!(Instant::now() < deadline, "the upstream never finished");
                for (peak, pid) in peaks.iter_mut().zip(pids) {
                    *peak = (*peak).max(rss(*pid));
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            // What was read from the upstream by then is queued (or dropped) by now.
            std::thread::sleep(Duration::from_millis(200));
            for (peak, pid) in peaks.iter_mut().zip(pids) {
                *peak = (*peak).max(rss(*pid));
            }
            peaks
        }

        /// What the client reads once it reads again: the answer, the newest progress before
        /// it, and one warning counting the log messages it was not there for.
        fn assert_caught_up(seen: &[Value], id: i64) {
            let answer = seen.last().unwrap();
            assert_eq!(answer["id"], id);
            assert_eq!(
                answer["result"]["content"][0]["text"],
                format!("chattered {CHATTER}"),
                "{answer}"
            );
            let last_progress = seen
                .iter()
                .rfind(|m| m["method"] == "notifications/progress")
                .expect("no progress at all");
            assert_eq!(
                last_progress["params"]["progress"], CHATTER,
                "{last_progress}"
            );
            let warning = seen
                .iter()
                .find(|m| m["method"] == "notifications/message" && m["params"]["logger"] == "mcpx")
                .expect("no count of the dropped log messages");
            assert!(
                warning["params"]["data"]
                    .as_str()
                    .unwrap()
                    .contains("log message(s) that this client was not reading fast enough"),
                "{warning}"
            );
            assert!(
                (seen.len() as u64) < CHATTER,
                "{} messages: nothing was dropped",
                seen.len()
            );
        }

        /// An upstream that sends `roots/list` 50,000 times without waiting: past 16 open in
        /// its call, each is refused at once (the upstream hears an error), the client is asked
        /// the rest, and mcpx does not grow.
        #[test]
        fn an_upstream_asking_without_waiting_is_refused_past_sixteen_open_questions() {
            let mut mcpx = Unread::start(&fixture_config(""), &[]);
            mcpx.send(initialize("2025-11-25"));
            let stdout = BufReader::new(mcpx.stdout.take().unwrap());
            let mut lines = stdout.lines();
            let _ = lines.next();
            mcpx.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
            let baseline = rss(mcpx.child.id());
            let count = 50_000;
            mcpx.send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "fixture__pester", "arguments": {"count": count}}}));
            let (mut asked, mut peak) = (0u64, baseline);
            let answer = loop {
                let message: Value = serde_json::from_str(&lines.next().unwrap().unwrap()).unwrap();
                if message["method"] == "roots/list" {
                    asked += 1;
                    mcpx.send(
                        json!({"jsonrpc": "2.0", "id": message["id"], "result": {"roots": []}}),
                    );
                    if asked % 256 == 0 {
                        peak = peak.max(rss(mcpx.child.id()));
                    }
                } else if message["id"] == 1 {
                    break message;
                }
            };
            let said = answer["result"]["content"][0]["text"].as_str().unwrap();
            let (answered, refused) = said
                .split_once(" answered, ")
                .map(|(a, r)| {
                    (
                        a.parse::<u64>().unwrap(),
                        r.trim_end_matches(" refused").parse::<u64>().unwrap(),
                    )
                })
                .unwrap_or_else(|| panic!("{answer}"));
            assert_eq!(answered + refused, count, "{said}");
            assert_eq!(answered, asked, "the client answered {asked}: {said}");
            assert!(refused > 0, "nothing was refused: {said}");
            assert!(
                peak < baseline + GROWTH,
                "mcpx grew from {baseline} to {peak} bytes"
            );
        }

        /// `mcpx serve` whose client stops reading while the upstream floods progress and log
        /// messages: mcpx stays flat, and what the client reads later is the newest progress,
        /// a count of the dropped logs, and the answer.
        #[test]
        fn a_client_that_stops_reading_stdout_keeps_mcpx_flat_and_hears_the_latest_progress() {
            let mut mcpx = Unread::start(&fixture_config(""), &[]);
            mcpx.send(initialize("2025-11-25"));
            mcpx.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
            assert!(mcpx.log.shows("fixture: pid"), "{}", mcpx.log.text());
            let baseline = rss(mcpx.child.id());
            let marks = tempfile::tempdir().unwrap();
            let done = marks.path().join("done");
            mcpx.send(chatter(1, &done));
            let peak = peak_while_chattering(&[mcpx.child.id()], &done)[0];
            assert!(
                peak < baseline + GROWTH,
                "mcpx grew from {baseline} to {peak} bytes"
            );
            let seen = mcpx.read_until(1);
            assert_caught_up(&seen, 1);
        }

        /// The same through `mcpx serve --attach`: neither the shim nor the daemon grows.
        #[test]
        fn a_client_that_stops_reading_an_attached_shim_keeps_shim_and_daemon_flat() {
            let daemon = Daemon::start(&fixture_config(""), "");
            assert!(daemon.log_shows("fixture: pid"), "{}", daemon.stderr());
            let door = daemon.local_socket();
            assert!(eventually(|| std::os::unix::net::UnixStream::connect(
                &door
            )
            .is_ok()));
            let mut shim = serve_command(daemon.config_path(), &["--attach"])
                .stderr(Stdio::null())
                .spawn()
                .unwrap();
            let mut stdin = shim.stdin.take().unwrap();
            for message in [
                initialize("2025-11-25"),
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
            ] {
                writeln!(stdin, "{message}").unwrap();
            }
            let mut stdout = BufReader::new(shim.stdout.take().unwrap());
            let mut first = String::new();
            stdout.read_line(&mut first).unwrap();
            let before = [rss(shim.id()), rss(daemon.pid())];
            let marks = tempfile::tempdir().unwrap();
            let done = marks.path().join("done");
            writeln!(stdin, "{}", chatter(1, &done)).unwrap();
            let peaks = peak_while_chattering(&[shim.id(), daemon.pid()], &done);
            for (name, (before, peak)) in ["the shim", "the daemon"]
                .iter()
                .zip(before.iter().zip(&peaks))
            {
                assert!(
                    *peak < before + GROWTH,
                    "{name} grew from {before} to {peak} bytes"
                );
            }
            let mut seen = Vec::new();
            for line in stdout.lines() {
                let message: Value = serde_json::from_str(&line.unwrap()).unwrap();
                let done = message["id"] == 1;
                seen.push(message);
                if done {
                    break;
                }
            }
            assert_caught_up(&seen, 1);
            let _ = shim.kill();
            let _ = shim.wait();
        }

        /// A legacy POST whose client stops reading its event stream: the daemon stays flat,
        /// and the stream, read later, carries the newest progress, the count and the answer.
        #[test]
        fn a_client_that_stops_reading_a_post_stream_keeps_the_daemon_flat() {
            let d = Daemon::start(&fixture_config(""), "");
            let session = initialize_session(&d, "2025-11-25", json!({}));
            assert!(d.log_shows("fixture: pid"), "{}", d.stderr());
            let baseline = rss(d.pid());
            let marks = tempfile::tempdir().unwrap();
            let done = marks.path().join("done");
            let stream = d.send_post(
                &[
                    ("Accept", b"application/json, text/event-stream"),
                    ("Content-Type", b"application/json"),
                    ("Mcp-Session-Id", session.as_bytes()),
                    ("MCP-Protocol-Version", b"2025-11-25"),
                ],
                chatter(1, &done).to_string().as_bytes(),
            );
            let peak = peak_while_chattering(&[d.pid()], &done)[0];
            assert!(
                peak < baseline + GROWTH,
                "the daemon grew from {baseline} to {peak} bytes"
            );
            let (mut events, head) = EventReader::open(stream);
            assert!(head.starts_with("HTTP/1.1 200"), "{head}");
            let mut seen = Vec::new();
            while let Some(event) = events.next_event() {
                let done = event["id"] == 1;
                seen.push(event);
                if done {
                    break;
                }
            }
            assert_caught_up(&seen, 1);
        }
    }

    pub mod reload {
        use super::super::*;

        #[test]
        fn sighup_adds_and_removes_servers_and_connected_clients_hear_list_changed() {
            let dir = tempfile::tempdir().unwrap();
            let socket = dir.path().join("admin.sock");
            let one = format!(
                "[admin]\nsocket = {:?}\n[servers.fixture]\ncommand = {:?}\n",
                socket.display().to_string(),
                fixture_bin()
            );
            let d = Daemon::start(&one, "");
            let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
            let session = d
                .post(&[], init.to_string().as_bytes())
                .header("mcp-session-id")
                .unwrap()
                .to_owned();
            let mut stream = std::net::TcpStream::connect(d.addr).unwrap();
            stream.set_read_timeout(Some(PATIENCE)).unwrap();
            write!(
                stream,
                "GET /mcp HTTP/1.1\r\nHost: localhost\r\nMcp-Session-Id: {session}\r\n\r\n"
            )
            .unwrap();
            let (mut events, _) = EventReader::open(stream);
            let list = |d: &Daemon| -> Vec<String> {
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
                let reply = d
                    .post(
                        &[("Mcp-Session-Id", session.as_bytes())],
                        body.to_string().as_bytes(),
                    )
                    .json();
                reply["result"]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["name"].as_str().unwrap().to_owned())
                    .collect()
            };
            assert!(list(&d).contains(&"fixture__echo".to_owned()));
            // Add a second server, by SIGHUP.
            let two = format!("{one}[servers.other]\ncommand = {:?}\n", fixture_bin());
            std::fs::write(d.config_path(), d.config_with(&two)).unwrap();
            d.signal_only("HUP");
            // The fixture brings tools, prompts and resources: each list is announced once.
            let mut announced: Vec<String> = (0..3)
                .map(|_| {
                    events.next_event().unwrap()["method"]
                        .as_str()
                        .unwrap()
                        .to_owned()
                })
                .collect();
            announced.sort();
            assert_eq!(
                announced,
                [
                    "notifications/prompts/list_changed",
                    "notifications/resources/list_changed",
                    "notifications/tools/list_changed"
                ]
            );
            assert!(d.log_shows("reloaded: started [other]"), "{}", d.stderr());
            assert!(list(&d).contains(&"other__echo".to_owned()));
            // Remove the first, by `mcpx reload`.
            let only_other = format!(
                "[admin]\nsocket = {:?}\n[servers.other]\ncommand = {:?}\n",
                socket.display().to_string(),
                fixture_bin()
            );
            std::fs::write(d.config_path(), d.config_with(&only_other)).unwrap();
            let out = std::process::Command::new(mcpx_bin())
                .args(["--config"])
                .arg(d.config_path())
                .arg("reload")
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(String::from_utf8_lossy(&out.stdout).contains("stopped [fixture]"));
            assert_eq!(
                events.next_event().unwrap()["method"],
                "notifications/tools/list_changed"
            );
            let tools = list(&d);
            assert!(
                !tools.contains(&"fixture__echo".to_owned())
                    && tools.contains(&"other__echo".to_owned()),
                "{tools:?}"
            );
            // A broken file is refused as one, and the running configuration stays.
            std::fs::write(d.config_path(), "[servers.x]\nbogus = 1\n").unwrap();
            let refused =
                mcpx::admin::ask(&socket, &mcpx::admin::protocol::Command::Reload).unwrap();
            assert!(
                matches!(&refused, mcpx::admin::protocol::Reply::Error { message, kind: mcpx::admin::protocol::Refusal::InvalidConfig } if message.contains("bogus")),
                "{refused:?}"
            );

            assert!(list(&d).contains(&"other__echo".to_owned()));
        }
    }

    pub mod environment {
        use super::super::*;

        /// The environment the fixture started with, as `NAME=value` lines; mcpx itself runs
        /// with `MCPX_LOG=info`, which is not in the safe set.
        fn child_environment(server_keys: &str) -> String {
            let dir = tempfile::tempdir().unwrap();
            let out = dir.path().join("env");
            let config = format!(
                "[servers.fixture]\ncommand = \"sh\"\nargs = [\"-c\", \"env > {} && exec {}\"]\n{server_keys}",
                out.display(),
                fixture_bin()
            );
            let mut mcpx = Serve::start(&config);
            mcpx.initialize("2025-11-25");
            let listed = mcpx.call(1, "tools/list", json!({}));
            assert!(listed["result"]["tools"].as_array().unwrap().len() > 1);
            std::fs::read_to_string(out).unwrap()
        }

        #[test]
        fn a_child_gets_the_safe_set_and_its_env_but_not_the_rest_of_mcpx_environment() {
            let seen = child_environment("env = { GIVEN = \"from-${MCPX_LOG}\" }\n");
            let names: Vec<&str> = seen.lines().filter_map(|l| l.split('=').next()).collect();
            assert!(names.contains(&"PATH"), "{seen}");
            assert!(!names.contains(&"MCPX_LOG"), "{seen}");
            assert!(seen.lines().any(|l| l == "GIVEN=from-info"), "{seen}");
        }

        /// The variable cannot appear while mcpx runs, so supervision does not spawn the server
        /// again and again: it stays misconfigured, saying which key names which variable,
        /// while the other servers serve.
        #[test]
        fn an_env_naming_an_unset_variable_is_misconfigured_and_not_restarted() {
            let mut mcpx = Serve::start(&format!(
                "[servers.fixture]\ncommand = \"{}\"\nenv = {{ K = \"${{MCPX_TEST_SURELY_UNSET}}\" }}\n[servers.other]\ncommand = \"{}\"\n",
                fixture_bin(),
                fixture_bin()
            ));
            mcpx.initialize("2025-11-25");
            let state = upstream_state(&mut mcpx, 1, "fixture");
            let said = state["state"].as_str().unwrap();
            assert!(
                said.starts_with("misconfigured: servers.fixture.env.K: ${MCPX_TEST_SURELY_UNSET}"),
                "{state}"
            );
            assert_eq!(upstream_state(&mut mcpx, 2, "other")["state"], "ready");
            // Six first backoffs: a server handed to supervision would have restarted by now.
            std::thread::sleep(Duration::from_millis(1500));
            assert_eq!(upstream_state(&mut mcpx, 3, "fixture")["restarts"], 0);
        }

        #[test]
        fn inherit_env_gives_a_child_all_of_it() {
            let seen = child_environment("inheritEnv = true\n");
            assert!(seen.lines().any(|l| l == "MCPX_LOG=info"), "{seen}");
        }
    }
}
