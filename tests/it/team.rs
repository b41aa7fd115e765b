//! A team's gateway: a `credentials = "per-identity"` server runs a process of each person's
//! own, with that person's values (`{subject}`), started by their first call, stopped when idle
//! or when `maxInstances` run and a newcomer needs the place of the one idle longest; every
//! local caller is the one identity `owner`.

use crate::access::{
    call as call_with_token, daemon as daemon_for, Provider, EXCHANGE_CLIENT, LIVES_FOREVER,
    NEVER_ACTED_FOR,
};
use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};
use sha2::Digest;

/// The per-identity server `own`: the fixture reporting its environment, with `WHO` its
/// caller's subject, and `more` of `[servers.own.perIdentity]`.
fn own_server(more: &str) -> String {
    format!(
        "[servers.own]\ncommand = {:?}\nargs = [\"--show-environment\"]\ncredentials = \"per-identity\"\nenv = {{ WHO = \"{{subject}}\" }}\n[servers.own.perIdentity]\n{more}",
        fixture_bin()
    )
}

/// What `own__environment` reports to the bearer of `token`: its `WHO` and its process id.
fn whose(d: &Daemon, token: &str) -> (Value, u64) {
    let params = json!({"name": "own__environment", "arguments": {"names": ["WHO"]}});
    let answer = call_with_token(d, "/mcp", Some(token), "tools/call", params).json();
    let reported = &answer["result"]["structuredContent"];
    let pid = reported["pid"]
        .as_u64()
        .unwrap_or_else(|| panic!("{answer}"));
    (reported["variables"]["WHO"].clone(), pid)
}

/// Whether process `pid` runs (a reaped one does not).
fn runs(pid: u64) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|stat| !stat.split(") ").nth(1).unwrap_or("").starts_with('Z'))
}

/// `mcpx status --json`'s view of the server `name`.
pub(crate) fn status_of(d: &Daemon, name: &str) -> Value {
    let out = std::process::Command::new(mcpx_bin())
        .arg("--config")
        .arg(d.config_path())
        .args(["status", "--json"])
        .output()
        .unwrap();
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let upstreams = status["upstreams"].as_array().cloned().unwrap_or_default();
    let found = upstreams.into_iter().find(|u| u["name"] == name);
    found.unwrap_or_else(|| panic!("no {name} in {status}"))
}

/// The FastMCP server `whoami` on a free port, taking only tokens `issuer` signed for it (and,
/// with `advertise`, naming `issuer` as its authorization server): its URL and its process.
pub(crate) fn whoami_server(issuer: &str, advertise: bool) -> (String, std::process::Child) {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let url = format!("http://127.0.0.1:{port}/mcp");
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/fastmcp_whoami_server.py"
    );
    let mut command = std::process::Command::new(deps::python());
    command.args([script, &port.to_string(), issuer, &url]);
    if advertise {
        command.arg("--advertise");
    }
    let server = command
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let answers = || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
    assert!(eventually(answers), "the whoami server did not start");
    (url, server)
}

/// How mcpx proves itself at the provider: `EXCHANGE_CLIENT`'s id and secret.
fn by_secret() -> String {
    let (client, secret) = EXCHANGE_CLIENT;
    format!("clientId = \"{client}\"\nclientSecret = \"{secret}\"\n")
}

/// A daemon at `PUBLIC` taking `provider`'s tokens and exchanging them, proving itself as
/// `proof` says (`[auth.external]` keys), in front of the FastMCP server `remote` (per identity,
/// by exchange), which takes only tokens the provider signed for it; and that server's process.
fn exchanging_daemon(
    provider: &Provider,
    audit: &std::path::Path,
    proof: &str,
) -> (Daemon, std::process::Child) {
    let (url, server) = whoami_server(&provider.issuer, false);
    let d = Daemon::start(
        &format!(
            "[auth]\nmode = \"external\"\npublicUrl = \"{}\"\n\
             [auth.external]\nissuer = \"{}\"\n{proof}\
             [servers.remote]\nurl = \"{url}\"\ncredentials = \"per-identity\"\n\
             [servers.remote.perIdentity]\ntoken = \"exchange\"\n[audit]\npath = {:?}\n",
            crate::access::PUBLIC,
            provider.issuer,
            audit.display().to_string(),
        ),
        "",
    );
    (d, server)
}

mod every_revision {
    pub mod team {
        use super::super::*;

        /// Alice and Bob each reach a process of their own, holding their own `{subject}`;
        /// Alice's second call reuses hers; a third person past `maxInstances = 2` takes the
        /// place of the instance idle longest, whose process stops; `mcpx status` lists whose
        /// instances run, and the shared server stays one process for everyone.
        #[test]
        fn each_person_reaches_a_process_of_their_own_within_max_instances() {
            let provider = Provider::start();
            let d = daemon_for(&provider, &own_server("maxInstances = 2\n"));
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let (alice, bob, carol) = (
                provider.good("alice"),
                provider.good("bob"),
                provider.good("carol"),
            );
            let (who, alices) = whose(&d, &alice);
            assert_eq!(who, "alice");
            let (who, bobs) = whose(&d, &bob);
            assert_eq!(who, "bob");
            assert_ne!(alices, bobs, "one process each");
            assert_eq!(whose(&d, &alice), (json!("alice"), alices), "hers again");
            let instances = status_of(&d, "own")["instances"].clone();
            let people: Vec<&str> = instances
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|i| i["person"].as_str())
                .collect();
            assert!(
                people.len() == 2
                    && people
                        .iter()
                        .all(|p| p.starts_with("alice") || p.starts_with("bob")),
                "{instances}"
            );
            // `mcpx status`, as text: whose instances run, with their calls.
            let out = std::process::Command::new(mcpx_bin())
                .arg("--config")
                .arg(d.config_path())
                .arg("status")
                .output()
                .unwrap();
            let status = String::from_utf8_lossy(&out.stdout).into_owned();
            let own = status.lines().find(|l| l.trim_start().starts_with("own "));
            assert!(
                own.is_some_and(|l| l.contains("serving 2 people")),
                "{status}"
            );
            for (person, calls) in [("alice", 2), ("bob", 1)] {
                let line = status.lines().find(|l| l.trim_start().starts_with(person));
                let shown = format!(": {calls} requests, age ");
                assert!(line.is_some_and(|l| l.contains(&shown)), "{status}");
            }
            let metrics = d.bodiless("GET", "/metrics", &scrape_bearer());
            let text = String::from_utf8_lossy(&metrics.body).into_owned();
            let running = metric_sample(&text, "mcpx_upstream_instances", &[("upstream", "own")]);
            assert_eq!(running, 2.0, "{text}");
            // Bob's instance is idle longest: Carol's takes its place.
            let (who, carols) = whose(&d, &carol);
            assert_eq!(who, "carol");
            assert!(eventually(|| !runs(bobs)), "bob's instance still runs");
            assert!(runs(alices) && runs(carols));
            // A shared server is one process, whoever calls it.
            let echo = json!({"name": "fixture__echo", "arguments": {"text": "x"}});
            for token in [&alice, &bob] {
                let answer = call_with_token(&d, "/mcp", Some(token), "tools/call", echo.clone());
                assert_eq!(answer.json()["result"]["content"][0]["text"], "x");
            }
        }

        /// The Python SDK's client, bearing Alice's or Bob's token, reaches each one's own
        /// process with their own `{subject}`.
        #[test]
        fn the_python_sdk_reaches_each_persons_own_instance() {
            let provider = Provider::start();
            let d = daemon_for(&provider, &own_server(""));
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let script = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/sdk/python_bearer_client.py"
            );
            let url = format!("http://{}/mcp", d.addr);
            let through_sdk = |person: &str| {
                let out = std::process::Command::new(deps::python())
                    .args([
                        script,
                        &url,
                        &provider.good(person),
                        "own__environment",
                        r#"{"names": ["WHO"]}"#,
                    ])
                    .output()
                    .unwrap();
                let said = String::from_utf8_lossy(&out.stdout).into_owned();
                let stderr = String::from_utf8_lossy(&out.stderr);
                assert!(out.status.success(), "{said}{stderr}");
                let reported: Value = serde_json::from_str(said.trim()).unwrap();
                let structured = reported["structured"].clone();
                (
                    structured["variables"]["WHO"].clone(),
                    structured["pid"].clone(),
                )
            };
            let (alices, alice_pid) = through_sdk("alice");
            let (bobs, bob_pid) = through_sdk("bob");
            assert_eq!((alices, bobs), (json!("alice"), json!("bob")));
            assert_ne!(alice_pid, bob_pid);
            assert_eq!(through_sdk("alice").1, alice_pid, "hers again");
        }

        /// An instance with nothing to do for `idleTimeout` is stopped, and its person's next
        /// call starts another.
        #[test]
        fn an_idle_instance_stops_and_the_next_call_starts_another() {
            let provider = Provider::start();
            let d = daemon_for(&provider, &own_server("idleTimeout = \"1s\"\n"));
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let alice = provider.good("alice");
            let (_, first) = whose(&d, &alice);
            assert!(eventually(|| !runs(first)), "the idle instance still runs");
            let (who, second) = whose(&d, &alice);
            assert_eq!(who, "alice");
            assert_ne!(first, second);
        }

        /// A per-identity remote server is reached with each caller's own token for it, had by
        /// exchanging theirs at the identity provider: Alice and Bob reach it as themselves, in
        /// `act` mcpx's client, and neither's own token ever reaches it; its catalog is listed
        /// through its first caller; an exchange the provider refuses is that caller's error
        /// alone.
        #[test]
        fn each_person_reaches_a_remote_server_as_themselves_by_token_exchange() {
            let provider = Provider::start();
            let dir = tempfile::tempdir().unwrap();
            let audit = dir.path().join("audit.jsonl");
            let (d, mut server) = exchanging_daemon(&provider, &audit, &by_secret());
            let (alice, bob) = (provider.good("alice"), provider.good("bob"));
            let listed = call_with_token(&d, "/mcp", Some(&alice), "tools/list", json!({})).json();
            let names = listed["result"]["tools"].to_string();
            assert!(names.contains("remote__whoami"), "{listed}\n{}", d.stderr());
            let whoami = json!({"name": "remote__whoami", "arguments": {}});
            for (token, who) in [(&alice, "alice"), (&bob, "bob"), (&alice, "alice")] {
                let answer =
                    call_with_token(&d, "/mcp", Some(token), "tools/call", whoami.clone()).json();
                let said = &answer["result"]["structuredContent"];
                assert_eq!(said["sub"], who, "{answer}");
                assert_eq!(said["act"]["sub"], EXCHANGE_CLIENT.0, "{answer}");
                let own = format!("{:x}", sha2::Sha256::digest(token.as_bytes()));
                assert_ne!(
                    said["tokenSha256"], own,
                    "the caller's own token reached the server"
                );
            }
            let mallory = provider.good(NEVER_ACTED_FOR);
            let refused =
                call_with_token(&d, "/mcp", Some(&mallory), "tools/call", whoami.clone()).json();
            let said = refused.to_string();
            assert!(said.contains("refused the token exchange"), "{refused}");
            // A provider saying the exchanged token lives 2^64-1 seconds is believed, within
            // the clock's reach, and does not panic the thread that serves the call.
            let forever = provider.good(LIVES_FOREVER);
            let answer =
                call_with_token(&d, "/mcp", Some(&forever), "tools/call", whoami.clone()).json();
            let said = &answer["result"]["structuredContent"];
            assert_eq!(said["sub"], LIVES_FOREVER, "{answer}\n{}", d.stderr());
            assert!(!d.stderr().contains("panicked"), "{}", d.stderr());
            let answer = call_with_token(&d, "/mcp", Some(&alice), "tools/call", whoami).json();
            assert_eq!(
                answer["result"]["structuredContent"]["sub"], "alice",
                "{answer}"
            );
            // Each call's audit line says whose instance it reached and whom the server knows.
            let lines = || std::fs::read_to_string(&audit).unwrap_or_default();
            let calls = || {
                lines()
                    .lines()
                    .filter(|l| l.contains("remote__whoami"))
                    .count()
            };
            assert!(eventually(|| calls() >= 5), "{}", lines());
            for line in lines().lines().filter(|l| l.contains("remote__whoami")) {
                let entry: Value = serde_json::from_str(line).unwrap();
                let sub = entry["caller"]["sub"].as_str().unwrap_or_default();
                if sub == NEVER_ACTED_FOR {
                    continue;
                }
                let instance = &entry["instance"];
                assert_eq!(instance["upstreamSubject"], sub, "{line}");
                assert_eq!(instance["act"]["sub"], EXCHANGE_CLIENT.0, "{line}");
                assert!(instance["started"].is_boolean(), "{line}");
            }
            let _ = server.kill();
            let _ = server.wait();
        }

        /// mcpx proves itself at the provider with a key rather than a secret
        /// (`private_key_jwt`): a JWT signed for the token endpoint, read from a private file.
        /// Alice reaches the server as herself, in `act` the keyed client; a key the provider
        /// does not trust gets her a clear refusal.
        #[test]
        fn a_token_exchange_proves_mcpx_with_a_private_key_jwt() {
            use ring::signature::{EcdsaKeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
            use std::os::unix::fs::PermissionsExt;
            let provider = Provider::start();
            let dir = tempfile::tempdir().unwrap();
            let rng = ring::rand::SystemRandom::new();
            let key = |name: &str| {
                let der =
                    EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
                let pair =
                    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der.as_ref(), &rng)
                        .unwrap();
                use base64::Engine;
                let body = base64::engine::general_purpose::STANDARD.encode(der.as_ref());
                let pem =
                    format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n");
                let path = dir.path().join(name);
                std::fs::write(&path, pem).unwrap();
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
                (path, pair.public_key().as_ref().to_vec())
            };
            let (trusted, public) = key("trusted.pem");
            let (untrusted, _) = key("untrusted.pem");
            provider.trust_client_key("mcpx-keyed", &public);
            let whoami = json!({"name": "remote__whoami", "arguments": {}});
            let alice = provider.good("alice");
            let proof = |path: &std::path::Path| {
                format!("clientId = \"mcpx-keyed\"\nclientKey = \"${{file:{}}}\"\nclientKeyId = \"k1\"\n", path.display())
            };
            let audit = dir.path().join("audit.jsonl");
            let (d, mut server) = exchanging_daemon(&provider, &audit, &proof(&trusted));
            let answer =
                call_with_token(&d, "/mcp", Some(&alice), "tools/call", whoami.clone()).json();
            let said = &answer["result"]["structuredContent"];
            assert_eq!(said["sub"], "alice", "{answer}\n{}", d.stderr());
            assert_eq!(said["act"]["sub"], "mcpx-keyed", "{answer}");
            drop(d);
            let _ = server.kill();
            let _ = server.wait();
            let (d, mut server) = exchanging_daemon(&provider, &audit, &proof(&untrusted));
            let refused = call_with_token(&d, "/mcp", Some(&alice), "tools/call", whoami).json();
            let said = refused.to_string();
            assert!(
                said.contains("refused the token exchange") && said.contains("invalid_client"),
                "{refused}"
            );
            let _ = server.kill();
            let _ = server.wait();
        }

        /// A task a per-identity server runs for Alice is cancelled from the admin socket (the
        /// console's `c`): mcpx's task ends cancelled, and so does the server's task behind it,
        /// in her own instance, which runs it (not the server's shared link, which knows
        /// nothing of it), even when the server's catalog came from the cache and only her
        /// instance's handshake says that it runs tasks itself.
        #[test]
        fn an_admin_cancel_of_a_persons_task_reaches_their_own_instance() {
            let provider = Provider::start();
            let server = format!(
                "{}credentials = \"per-identity\"\ntasks = \"always\"\n",
                crate::tasks::ts_tasks_server("ts")
            );
            let alice = provider.good("alice");
            // A daemon started after one that listed the server reads its catalog from the
            // cache: no handshake has said what the server speaks before Alice's call.
            let first = daemon_for(&provider, &server);
            let listed = call_with_token(&first, "/mcp", Some(&alice), "tools/list", json!({}));
            assert!(listed.text().contains("ts__delay"), "{}", listed.text());
            drop(first);
            let d = daemon_for(&provider, &server);
            assert!(d.upstreams_ready(), "{}", d.stderr());
            let with_tasks = |mut params: Value| {
                params["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
                params
            };
            let call = |method: &str, params: Value| {
                call_with_token(&d, "/mcp", Some(&alice), method, params).json()
            };
            let slow = json!({"name": "ts__delay", "arguments": {"ms": 600_000}});
            let created = call("tools/call", with_tasks(slow));
            let id = created["result"]["taskId"].as_str();
            let id = id.unwrap_or_else(|| panic!("{created}")).to_owned();
            let statuses = || {
                let listed = call(
                    "tools/call",
                    json!({"name": "ts__statuses", "arguments": {}}),
                );
                listed["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or("[]")
                    .to_owned()
            };
            // Her instance runs the server's task before the cancel: cancelling sooner would race
            // the task's making, not test where the cancel goes.
            assert!(
                eventually(|| statuses() == r#"["working"]"#),
                "{}",
                statuses()
            );
            let config = std::fs::read_to_string(d.config_path()).unwrap();
            let socket = mcpx::config::Config::parse(&config).unwrap().admin.socket;
            let cancel = mcpx::admin::protocol::Command::CancelTask { id: id.clone() };
            let reply = mcpx::admin::ask(&socket, &cancel).unwrap();
            assert!(
                matches!(reply, mcpx::admin::protocol::Reply::Done { .. }),
                "{reply:?}\n{}",
                d.stderr()
            );
            let status =
                || call("tasks/get", with_tasks(json!({"taskId": id})))["result"]["status"].clone();
            assert!(eventually(|| status() == "cancelled"), "{}", status());
            assert!(
                eventually(|| statuses() == r#"["cancelled"]"#),
                "{}",
                statuses()
            );
        }

        /// A single user's setup (stdio, no tokens) is the one identity `owner`: one process,
        /// whichever call.
        #[test]
        fn a_single_users_calls_share_one_instance_as_owner() {
            let mut mcpx = Serve::start(&own_server(""));
            let params = json!({"name": "own__environment", "arguments": {"names": ["WHO"]}});
            let first = mcpx.call(1, "tools/call", modern(params.clone()));
            let second = mcpx.call(2, "tools/call", modern(params));
            let reported = |answer: &Value| answer["result"]["structuredContent"].clone();
            assert_eq!(reported(&first)["variables"]["WHO"], "owner", "{first}");
            assert_eq!(reported(&first)["pid"], reported(&second)["pid"]);
        }

        /// A subscription to a per-identity server's resource is refused, saying why, rather
        /// than accepted and never delivered.
        #[test]
        fn a_subscription_to_a_per_identity_servers_resource_is_refused_clearly() {
            let mut mcpx = Serve::start(&own_server(""));
            mcpx.initialize("2025-11-25");
            let listed = mcpx.call(1, "resources/list", json!({}));
            let uri = listed["result"]["resources"][0]["uri"].clone();
            assert!(uri.is_string(), "{listed}");
            let refused = mcpx.call(2, "resources/subscribe", json!({ "uri": uri }));
            let message = refused["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("per-identity"), "{refused}");
        }
    }
}

mod v2026_07_28 {
    pub mod team {
        use super::super::*;
        use crate::common::cluster::{keygen, replica_of, Balance, Nginx};
        use crate::events::declaring;

        /// mcpx's own `mcpx__resource_updated` for a per-identity server's resource is refused
        /// as `resources/subscribe` is, saying why: its lease would subscribe one instance for
        /// everyone.
        #[test]
        fn updates_to_a_per_identity_servers_resource_are_refused_clearly() {
            let mut mcpx = Serve::start(&own_server(""));
            let listed = mcpx.call(1, "resources/list", modern(json!({})));
            let uri = listed["result"]["resources"][0]["uri"].clone();
            assert!(uri.is_string(), "{listed}");
            let params = json!({"name": "mcpx__resource_updated", "arguments": {"uri": uri}});
            for (id, method) in [(2, "events/poll"), (3, "events/stream")] {
                let refused = mcpx.call(id, method, declaring(params.clone()));
                assert_eq!(refused["error"]["code"], -32602, "{refused}");
                let message = refused["error"]["message"].as_str().unwrap_or_default();
                assert!(message.contains("per-identity"), "{refused}");
            }
        }

        /// Two replicas behind the shipped nginx site: each person's calls land on one replica,
        /// so each reaches one instance of theirs, however many calls they make.
        #[test]
        fn behind_the_shipped_nginx_each_persons_calls_reach_one_instance() {
            let provider = Provider::start();
            let dir = tempfile::tempdir().unwrap();
            let key = keygen(dir.path(), "cluster.key");
            let config = format!(
                "[auth]\nmode = \"external\"\npublicUrl = \"{}\"\n[auth.external]\nissuer = \"{}\"\n{}",
                crate::access::PUBLIC,
                provider.issuer,
                own_server("")
            );
            let replicas = [
                replica_of(&config, &key, None),
                replica_of(&config, &key, None),
            ];
            for replica in &replicas {
                assert!(replica.upstreams_ready(), "{}", replica.stderr());
            }
            let nginx = Nginx::start(&[&replicas[0], &replicas[1]], Balance::Shipped);
            let whose_through = |token: &str, id: i64| {
                let params = json!({"name": "own__environment", "arguments": {"names": ["WHO"]}});
                let (mut headers, body) = modern_request(id, "tools/call", params);
                headers.push(("Authorization".into(), format!("Bearer {token}")));
                let reply = post_to_addr(
                    nginx.addr,
                    "/mcp",
                    &header_refs(&headers),
                    body.to_string().as_bytes(),
                );
                let answer = reply.json();
                let reported = &answer["result"]["structuredContent"];
                let pid = reported["pid"]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{answer}\n{}", nginx.errors()));
                (reported["variables"]["WHO"].clone(), pid)
            };
            for person in ["alice", "bob", "carol", "dave"] {
                let token = provider.good(person);
                let (who, first) = whose_through(&token, 1);
                assert_eq!(who, person);
                for id in 2..8 {
                    assert_eq!(
                        whose_through(&token, id),
                        (json!(person), first),
                        "{person}'s call {id}"
                    );
                }
            }
        }
    }
}
