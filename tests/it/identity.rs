//! A person is never someone else: a token is let in only naming a subject (a string), the
//! local owner is an identity no token can name, and a subject that would name another
//! directory or the owner's values gets no process of its own; a person's own instance without a
//! sandbox lives in a private home of its own, not the user's.

use crate::access::{call, challenge, legacy_post, now, Provider, PUBLIC};
use crate::common::http::*;
use crate::common::*;
use serde_json::{json, Value};

/// A daemon taking `provider`'s tokens (JWTs, and opaque ones by introspection) in front of the
/// per-identity server `own` (the fixture reporting its environment, `WHO` its caller's
/// subject), its state under `state`.
fn daemon(provider: &Provider, state: &std::path::Path) -> Daemon {
    let config = format!(
        "[auth]\nmode = \"external\"\npublicUrl = \"{PUBLIC}\"\n\
         [auth.external]\nissuer = \"{}\"\n\
         [auth.external.introspection]\nclientId = \"mcpx\"\nclientSecret = \"pw\"\n\
         [servers.own]\ncommand = {:?}\nargs = [\"--show-environment\"]\n\
         credentials = \"per-identity\"\nenv = {{ WHO = \"{{subject}}\" }}\n",
        provider.issuer,
        fixture_bin()
    );
    let state = state.to_str().unwrap();
    Daemon::start_with_env(&config, "", &[("XDG_STATE_HOME", state)])
}

/// What `own__environment` answers the bearer of `token`, in 2026-07-28.
fn environment(d: &Daemon, token: &str) -> Value {
    let params =
        json!({"name": "own__environment", "arguments": {"names": ["WHO", "HOME", "TMPDIR"]}});
    call(d, "/mcp", Some(token), "tools/call", params).json()
}

/// What `own__environment` answers the bearer of `token` in a 2025-11-25 session.
fn environment_in_a_session(d: &Daemon, token: &str) -> Value {
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let opened = legacy_post(d, token, None, &initialize);
    assert_eq!(
        opened.status,
        200,
        "{}",
        String::from_utf8_lossy(&opened.body)
    );
    let session = opened.header("mcp-session-id").unwrap().to_owned();
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    legacy_post(d, token, Some(&session), &initialized);
    let params = json!({"name": "own__environment", "arguments": {"names": ["WHO", "HOME"]}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let reply = legacy_post(d, token, Some(&session), &body);
    sse_or_json(&reply)
}

/// A reply's JSON-RPC message, whether it came as JSON or as one SSE event.
fn sse_or_json(reply: &Reply) -> Value {
    let text = String::from_utf8_lossy(&reply.body).into_owned();
    let data = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .next_back()
        .map_or(text.clone(), |d| d.trim().to_owned());
    serde_json::from_str(&data).unwrap_or_else(|_| panic!("{text}"))
}

/// The persons whose instances of `own` run, as `mcpx status` lists them.
fn instances(d: &Daemon) -> Vec<String> {
    let own = crate::team::status_of(d, "own");
    let listed = own["instances"].as_array().cloned().unwrap_or_default();
    listed
        .iter()
        .filter_map(|i| i["person"].as_str().map(str::to_owned))
        .collect()
}

mod every_revision {
    mod identity {
        use super::super::*;

        /// A token whose claims name no subject, or one that is not a string or is empty, is
        /// refused at the door (401, `invalid_token`), JWT or introspected, rather than served as
        /// nobody in particular (which mcpx served as the local owner).
        #[test]
        fn a_token_without_a_string_subject_is_refused_at_the_door() {
            let provider = Provider::start();
            let state = tempfile::tempdir().unwrap();
            let d = daemon(&provider, state.path());
            let mut claims = provider.claims("x", "/mcp", "mcp");
            let mut tokens = Vec::new();
            for sub in [None, Some(json!(42)), Some(json!("")), Some(json!(["a"]))] {
                match &sub {
                    Some(sub) => claims["sub"] = sub.clone(),
                    None => drop(claims.as_object_mut().unwrap().remove("sub")),
                }
                tokens.push((
                    format!("jwt sub {sub:?}"),
                    provider.signed("ES256", "ec", &claims),
                ));
                let opaque = format!("opaque-{}", tokens.len());
                let mut answer = json!({"active": true, "scope": "mcp", "exp": now() + 300});
                if let Some(sub) = &sub {
                    answer["sub"] = sub.clone();
                }
                provider
                    .opaque
                    .lock()
                    .unwrap()
                    .insert(opaque.clone(), answer);
                tokens.push((format!("introspected sub {sub:?}"), opaque));
            }
            for (what, token) in &tokens {
                let reply = call(&d, "/mcp", Some(token), "tools/list", json!({}));
                assert_eq!(
                    reply.status,
                    401,
                    "{what}: {}",
                    String::from_utf8_lossy(&reply.body)
                );
                let challenge = challenge(&reply);
                assert_eq!(challenge["error"], "invalid_token", "{what}: {challenge:?}");
                assert!(
                    challenge["error_description"].contains("sub"),
                    "{what}: {challenge:?}"
                );
            }
            assert!(instances(&d).is_empty(), "{:?}", instances(&d));
        }

        /// Subjects `.` and `..` (which in `{subject}` would name the directory above a
        /// person's, or their own parent's) and `owner` (the local owner's `{subject}`, whose
        /// process, home and `${keyring:…}` secrets are the owner's) get no process: the call is
        /// refused saying why, in both eras; a person with an ordinary subject is served apart.
        #[test]
        fn a_subject_naming_a_directory_or_the_owner_gets_no_process_in_either_era() {
            let provider = Provider::start();
            let state = tempfile::tempdir().unwrap();
            let d = daemon(&provider, state.path());
            for sub in [".", "..", "owner"] {
                let token = provider.good(sub);
                for answer in [
                    environment(&d, &token),
                    environment_in_a_session(&d, &token),
                ] {
                    let text = answer.to_string();
                    assert!(
                        answer["result"]["structuredContent"].is_null(),
                        "{sub}: {text}"
                    );
                    assert!(text.contains("subject"), "{sub}: {text}");
                }
            }
            assert!(instances(&d).is_empty(), "{:?}", instances(&d));
            let alice = provider.good("alice");
            for answer in [
                environment(&d, &alice),
                environment_in_a_session(&d, &alice),
            ] {
                let variables = &answer["result"]["structuredContent"]["variables"];
                assert_eq!(variables["WHO"], "alice", "{answer}");
            }
            assert_eq!(instances(&d).len(), 1, "{:?}", instances(&d));
        }

        /// A person's own instance without a sandbox gets a home of its own, 0700 under mcpx's
        /// state directory and named for the issuer and subject together, with its `TMPDIR`
        /// inside: never the user's home, where the owner's files and credentials are.
        #[test]
        fn an_unsandboxed_persons_instance_has_a_private_home_and_tmpdir() {
            let provider = Provider::start();
            let state = tempfile::tempdir().unwrap();
            let d = daemon(&provider, state.path());
            let answer = environment(&d, &provider.good("alice"));
            let variables = &answer["result"]["structuredContent"]["variables"];
            let home = std::path::PathBuf::from(
                variables["HOME"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{answer}")),
            );
            let tmp = std::path::PathBuf::from(variables["TMPDIR"].as_str().unwrap());
            let instances = state.path().join("mcpx").join("instances");
            assert_eq!(home.parent(), Some(instances.as_path()), "{answer}");
            let name = home.file_name().unwrap().to_string_lossy().into_owned();
            assert!(name.starts_with("own@alice~"), "{name}");
            assert_eq!(tmp, home.join("tmp"));
            use std::os::unix::fs::PermissionsExt;
            for dir in [&home, &tmp] {
                let mode = std::fs::metadata(dir).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o700, "{}", dir.display());
            }
            assert_ne!(Some(home.as_os_str()), std::env::var_os("HOME").as_deref());
        }

        /// One person's instance that is slow to start (its start waits here until the test
        /// lets it go) holds no one else's call: Alice (2026-07-28) and Bob (2025-11-25) are
        /// served by instances of their own meanwhile, and the slow one is served once it starts.
        #[test]
        fn a_slow_instance_start_holds_no_one_elses_call() {
            let provider = Provider::start();
            let state = tempfile::tempdir().unwrap();
            let (started, go) = (state.path().join("started"), state.path().join("go"));
            let script = format!(
                "if [ \"$WHO\" = slow ]; then touch {started:?}; while [ ! -e {go:?} ]; do sleep 0.05; done; fi; exec {:?} --show-environment",
                fixture_bin()
            );
            let config = format!(
                "[auth]\nmode = \"external\"\npublicUrl = \"{PUBLIC}\"\n\
                 [auth.external]\nissuer = \"{}\"\n\
                 [servers.own]\ncommand = \"sh\"\nargs = [\"-c\", {script:?}]\ntimeout = \"120s\"\n\
                 credentials = \"per-identity\"\nenv = {{ WHO = \"{{subject}}\" }}\n",
                provider.issuer,
            );
            let d = Daemon::start_with_env(
                &config,
                "",
                &[("XDG_STATE_HOME", state.path().to_str().unwrap())],
            );
            let slow_token = provider.good("slow");
            let slow = std::thread::scope(|scope| {
                let slow = scope.spawn(|| environment(&d, &slow_token));
                assert!(eventually(|| started.exists()), "{}", d.stderr());
                let alice = environment(&d, &provider.good("alice"));
                let who = &alice["result"]["structuredContent"]["variables"]["WHO"];
                assert_eq!(who, "alice", "{alice}");
                let bob = environment_in_a_session(&d, &provider.good("bob"));
                let who = &bob["result"]["structuredContent"]["variables"]["WHO"];
                assert_eq!(who, "bob", "{bob}");
                assert!(
                    !slow.is_finished(),
                    "the slow start ended before the others were served"
                );
                std::fs::write(&go, "").unwrap();
                slow.join().unwrap()
            });
            let who = &slow["result"]["structuredContent"]["variables"]["WHO"];
            assert_eq!(who, "slow", "{slow}");
        }
    }
}
