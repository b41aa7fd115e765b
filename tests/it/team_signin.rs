//! A team's gateway where each person signs in to a remote server as themselves
//! (`perIdentity.token = "login"`): a call from someone without a login there is answered with
//! a link to mcpx's own sign-in page (a URL elicitation, or in the call's error for a client
//! that cannot open one); they sign in at the server's own authorization server, and their
//! calls reach the server with their own tokens, kept apart from everyone else's.

use crate::access::{call as call_with_token, Provider, PUBLIC};
use crate::common::http::*;
use crate::common::*;
use crate::team::whoami_server;
use serde_json::{json, Value};
use sha2::Digest;
use std::io::{Read, Write};

/// A daemon at `PUBLIC` taking `idp`'s tokens, in front of the server at `url` (`remote`), which
/// each person signs in to as themselves; its credentials file in `dir`.
fn signing_in_daemon(idp: &Provider, url: &str, dir: &std::path::Path) -> Daemon {
    Daemon::start(
        &format!(
            "[auth]\nmode = \"external\"\npublicUrl = \"{PUBLIC}\"\ncredentials = \"{}/credentials.json\"\n\
             [auth.external]\nissuer = \"{}\"\n\
             [servers.remote]\nurl = \"{url}\"\ncredentials = \"per-identity\"\n\
             [servers.remote.perIdentity]\ntoken = \"login\"\n",
            dir.display(),
            idp.issuer,
        ),
        "",
    )
}

/// The Python SDK's client in `era`, bearing `token`, taking `steps`; when asked to sign in,
/// its browser signs in at the authorization server as `user`.
fn through_sdk(d: &Daemon, era: &str, token: &str, user: &str, steps: &[&str]) -> Value {
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/sdk/python_signin_client.py"
    );
    let (url, origin) = (
        format!("http://{}/mcp", d.addr),
        format!("http://{}", d.addr),
    );
    let out = std::process::Command::new(deps::python())
        .args([script, era, &url, token, PUBLIC, &origin, user])
        .args(steps)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}{stderr}\n{}", d.stderr());
    serde_json::from_str(said.trim()).unwrap_or_else(|e| panic!("{e}: {said}"))
}

/// What `remote__whoami` said in a call's text: whose token reached the server.
fn who(text: &Value) -> Value {
    serde_json::from_str(text.as_str().unwrap_or_default())
        .unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A GET of `url` (an `http://` one) as a browser sends it, without following a redirect.
fn get(url: &str) -> Reply {
    let parsed = url::Url::parse(url).unwrap();
    let addr = format!("{}:{}", parsed.host_str().unwrap(), parsed.port().unwrap());
    let target = &url[url.find(parsed.path()).unwrap()..];
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    let head = format!(
        "GET {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        parsed.host_str().unwrap()
    );
    stream.write_all(head.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    Reply::parse(&raw)
}

/// A browser at mcpx (by its public name): the cookie mcpx named it by, once it has.
#[derive(Default)]
struct Browser {
    cookie: Option<String>,
}

impl Browser {
    /// GETs `url` at mcpx, sending and keeping its cookie.
    fn get(&mut self, d: &Daemon, url: &str) -> Reply {
        let cookie = self.cookie.as_ref().map(|c| format!("Cookie: {c}\r\n"));
        let reply = d.bodiless(
            "GET",
            url.strip_prefix(PUBLIC).unwrap(),
            &cookie.unwrap_or_default(),
        );
        self.keep(&reply);
        reply
    }

    /// POSTs the form `body` to mcpx's `path`, sending its cookie.
    fn post(&mut self, d: &Daemon, path: &str, body: &str) -> Reply {
        let mut headers: Vec<(&str, &[u8])> =
            vec![("Content-Type", b"application/x-www-form-urlencoded")];
        let cookie = self.cookie.clone().unwrap_or_default();
        if self.cookie.is_some() {
            headers.push(("Cookie", cookie.as_bytes()));
        }
        d.post_to(path, &headers, body.as_bytes())
    }

    fn keep(&mut self, reply: &Reply) {
        if let Some(set) = reply.header("set-cookie") {
            self.cookie = Some(set.split(';').next().unwrap().to_owned());
        }
    }

    /// Opens mcpx's sign-in `link` and confirms it: where mcpx sends it (the authorization
    /// server's page), or the page that refused.
    fn begin(&mut self, d: &Daemon, link: &str) -> Result<String, Reply> {
        let confirm = self.get(d, link);
        if confirm.status != 200 {
            return Err(confirm);
        }
        let text = confirm.text();
        let ticket = text
            .split("name=ticket value=\"")
            .nth(1)
            .and_then(|t| t.split('"').next());
        let ticket = ticket.unwrap_or_else(|| panic!("no form: {text}"));
        let begun = self.post(d, "/upstreams/login", &format!("ticket={ticket}"));
        match begun.status {
            303 => Ok(begun.header("location").unwrap().to_owned()),
            _ => Err(begun),
        }
    }
}

/// The authorization server's page `authorize`, signed in at as `user`: where it sends the
/// browser back (mcpx's callback).
fn authorize_as(authorize: &str, user: &str) -> String {
    let signed_in = get(&format!("{authorize}&user={user}"));
    assert_eq!(signed_in.status, 302, "{}", signed_in.text());
    signed_in.header("location").unwrap().to_owned()
}

/// A person's browser on mcpx's sign-in `link`: at mcpx (by its public name) it confirms and
/// is sent to the authorization server, signs in there as `user`, and comes back to mcpx:
/// mcpx's last page.
fn browse(d: &Daemon, link: &str, user: &str) -> Reply {
    let mut browser = Browser::default();
    match browser.begin(d, link) {
        Ok(authorize) => browser.get(d, &authorize_as(&authorize, user)),
        Err(refused) => refused,
    }
}

/// `mcpx auth ARGS` on the daemon's configuration: whether it succeeded, and what it printed.
fn auth(d: &Daemon, args: &[&str]) -> (bool, String) {
    let out = std::process::Command::new(mcpx_bin())
        .arg("--config")
        .arg(d.config_path())
        .arg("auth")
        .args(args)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
    (out.status.success(), said.into_owned())
}

mod every_revision {
    pub mod team {
        use super::super::*;

        /// Login CSRF, every way round: Mallory's sign-in link opened in Alice's browser names
        /// whose it is and does nothing until confirmed; a sign-in Mallory began in his browser,
        /// whose authorization page he has Alice sign in at, does not complete in hers; a form
        /// POSTed from another site (no cookie) begins nothing. Alice's account at the server is
        /// never kept for Mallory: he is still asked to sign in, then signs in as himself.
        #[test]
        fn a_sign_in_completes_only_in_the_browser_that_began_it() {
            let (idp, upstream_as) = (Provider::start(), Provider::start());
            let (url, mut server) = whoami_server(&upstream_as.issuer, true);
            let dir = tempfile::tempdir().unwrap();
            let d = signing_in_daemon(&idp, &url, dir.path());
            let mallory = idp.good("mallory");
            let whoami = json!({"name": "remote__whoami", "arguments": {}});
            let login = json!({"name": "mcpx__login", "arguments": {"server": "remote"}});
            let link_for_mallory = || {
                let asked =
                    call_with_token(&d, "/mcp", Some(&mallory), "tools/call", login.clone());
                let text = asked.json()["result"]["content"][0]["text"].clone();
                let text = text.as_str().unwrap_or_default().to_owned();
                let at = text.find(PUBLIC).unwrap_or_else(|| panic!("{text}"));
                text[at..].split_whitespace().next().unwrap().to_owned()
            };
            let link = link_for_mallory();
            let mut alices = Browser::default();
            let page = alices.get(&d, &link);
            assert_eq!(page.status, 200, "{}", page.text());
            assert!(
                page.text().contains("Continue only if you are mallory"),
                "{}",
                page.text()
            );
            assert!(alices.cookie.is_some(), "the page names the browser");
            // Mallory begins in his own browser and has Alice sign in at the authorization page.
            let mut mallorys = Browser::default();
            let authorize = mallorys
                .begin(&d, &link)
                .unwrap_or_else(|r| panic!("{}", r.text()));
            let back = authorize_as(&authorize, "alice-gh");
            // Refused, and spent: the code Alice's sign-in gave is good for nothing after.
            let finished = alices.get(&d, &back);
            assert_eq!(finished.status, 400, "{}", finished.text());
            let said = finished.text();
            assert!(
                said.contains("begun for mallory") && said.contains("another browser"),
                "{said}"
            );
            let again = mallorys.get(&d, &back);
            assert_eq!(again.status, 400, "{}", again.text());
            // A form POSTed from another site carries no cookie: it begins nothing.
            let link = link_for_mallory();
            let ticket = link.split("ticket=").nth(1).unwrap();
            let forged =
                Browser::default().post(&d, "/upstreams/login", &format!("ticket={ticket}"));
            assert_eq!(forged.status, 400, "{}", forged.text());
            // Nothing was kept for Mallory: asked again, he signs in as himself and is served so.
            let done = browse(&d, &link, "mallory-gh");
            assert_eq!(done.status, 200, "{}", done.text());
            let served = call_with_token(&d, "/mcp", Some(&mallory), "tools/call", whoami.clone());
            let said = &served.json()["result"]["structuredContent"];
            assert_eq!(said["sub"], "mallory-gh", "{}", served.text());
            let _ = server.kill();
            let _ = server.wait();
        }

        /// Before anyone signs in, a call is told how to. Alice (a 2025-11-25 client) signs in
        /// with `mcpx__login`: asked by URL elicitation to
        /// open mcpx's own sign-in link, she signs in at the server's authorization server and
        /// is then served as herself. Bob (2026-07-28), not signed in, calls the tool and is
        /// asked in turn (`input_required`), then served as himself. Carol's client cannot open
        /// a link: her call's error names one, which works once; after it she is served. Nobody's
        /// own token reaches the server; `mcpx auth list` shows each login by person, and
        /// `mcpx auth logout --identity` forgets one.
        #[test]
        fn each_person_signs_in_to_a_remote_server_as_themselves_and_is_served() {
            let (idp, upstream_as) = (Provider::start(), Provider::start());
            let (url, mut server) = whoami_server(&upstream_as.issuer, true);
            let dir = tempfile::tempdir().unwrap();
            let d = signing_in_daemon(&idp, &url, dir.path());
            // Before anyone signs in, nothing lists the server: a call by its tool's name is
            // told how to sign in.
            let whoami = json!({"name": "remote__whoami", "arguments": {}});
            let early = call_with_token(
                &d,
                "/mcp",
                Some(&idp.good("dave")),
                "tools/call",
                whoami.clone(),
            );
            assert!(
                early
                    .text()
                    .contains(r#"sign in with mcpx__login {\"server\": \"remote\"}"#),
                "{}",
                early.text()
            );
            let alice = idp.good("alice");
            let first = through_sdk(
                &d,
                "legacy",
                &alice,
                "alice-gh",
                &[r#"mcpx__login={"server": "remote"}"#, "remote__whoami"],
            );
            let asked = &first["asked"][0];
            assert_eq!(asked["mode"], "url", "{first}");
            let link = asked["url"].as_str().unwrap_or_default();
            assert!(
                link.starts_with(&format!("{PUBLIC}/upstreams/login?ticket=")),
                "{first}"
            );
            let pages = &asked["pages"];
            assert_eq!(pages[0]["status"], 200, "{first}");
            assert_eq!(pages[1]["status"], 303, "{first}");
            assert_eq!(
                pages[2]["back"],
                format!("{PUBLIC}/upstreams/login/callback")
            );
            assert_eq!(pages[3]["status"], 200, "{first}");
            let page = pages[3]["text"].as_str().unwrap_or_default();
            assert!(page.contains("Signed in to remote for alice"), "{page}");
            let signed = first["calls"][0].as_str().unwrap_or_default();
            assert!(signed.contains("Signed in to remote as alice"), "{first}");
            assert_eq!(who(&first["calls"][1])["sub"], "alice-gh", "{first}");

            let bob = idp.good("bob");
            let second = through_sdk(&d, "2026-07-28", &bob, "bob-gh", &["remote__whoami"]);
            assert_eq!(
                second["asked"].as_array().map(Vec::len),
                Some(1),
                "{second}"
            );
            assert_eq!(who(&second["calls"][0])["sub"], "bob-gh", "{second}");

            // Alice's login serves her next call from any client, without a question; her own
            // token never reached the server.
            let again = call_with_token(&d, "/mcp", Some(&alice), "tools/call", whoami.clone());
            let said = &again.json()["result"]["structuredContent"];
            assert_eq!(said["sub"], "alice-gh", "{}", again.text());
            let own = format!("{:x}", sha2::Sha256::digest(alice.as_bytes()));
            assert_ne!(
                said["tokenSha256"], own,
                "the caller's own token reached the server"
            );

            // Carol's client cannot open a link: the error names one; it works once.
            let carol = idp.good("carol");
            let refused = call_with_token(&d, "/mcp", Some(&carol), "tools/call", whoami.clone());
            let result = &refused.json()["result"];
            assert_eq!(result["isError"], true, "{}", refused.text());
            let text = result["content"][0]["text"].as_str().unwrap_or_default();
            let at = text.find(PUBLIC).unwrap_or_else(|| panic!("{text}"));
            let link = text[at..].split_whitespace().next().unwrap();
            let done = browse(&d, link, "carol-gh");
            assert_eq!(done.status, 200, "{}", done.text());
            let used = browse(&d, link, "mallory-gh");
            assert_eq!(used.status, 400, "{}", used.text());
            assert!(
                used.text().contains("unknown, used or expired"),
                "{}",
                used.text()
            );
            let served = call_with_token(&d, "/mcp", Some(&carol), "tools/call", whoami);
            let said = &served.json()["result"]["structuredContent"];
            assert_eq!(said["sub"], "carol-gh", "{}", served.text());
            let ticket = link.split("ticket=").nth(1).unwrap();
            assert!(!d.stderr().contains(ticket), "a sign-in link was logged");

            let (listed, list) = auth(&d, &["list"]);
            assert!(listed, "{list}");
            for person in ["alice", "bob", "carol"] {
                let line = format!(
                    "  {person} ({}): logged in at {}",
                    idp.issuer, upstream_as.issuer
                );
                assert!(list.contains(&line), "{person}: {list}");
            }
            let (forgot, said) = auth(&d, &["logout", "remote", "--identity", "bob"]);
            assert!(forgot, "{said}");
            let (_, list) = auth(&d, &["list"]);
            assert!(!list.contains("  bob ("), "{list}");
            assert!(list.contains("  alice ("), "{list}");
            let (missing, said) = auth(&d, &["logout", "remote", "--identity", "bob"]);
            assert!(!missing && said.contains("no login of their own"), "{said}");
            let _ = server.kill();
            let _ = server.wait();
        }

        /// A person's login that lapses (their access token expired, its refresh refused)
        /// gets them a fresh sign-in link in the next call's answer, not a stale error; after
        /// signing in again they are served.
        #[test]
        fn a_lapsed_login_asks_the_person_to_sign_in_again() {
            let idp = Provider::start();
            let server = crate::auth::AuthServer::start(std::time::Duration::from_secs(1), false);
            let dir = tempfile::tempdir().unwrap();
            let d = signing_in_daemon(&idp, &format!("{}/mcp", server.url()), dir.path());
            let alice = idp.good("alice");
            let whoami = json!({"name": "remote__whoami", "arguments": {}});
            let call = || call_with_token(&d, "/mcp", Some(&alice), "tools/call", whoami.clone());
            let login = json!({"name": "mcpx__login", "arguments": {"server": "remote"}});
            let told = call_with_token(&d, "/mcp", Some(&alice), "tools/call", login).json();
            let link = |answer: &Value| {
                let text = answer["result"]["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default();
                let at = text.find(PUBLIC)?;
                Some(text[at..].split_whitespace().next()?.to_owned())
            };
            let first = link(&told).unwrap_or_else(|| panic!("{told}"));
            assert_eq!(browse(&d, &first, "alice-gh").status, 200);
            let served = call().json();
            let text = &served["result"]["content"][0]["text"];
            assert_eq!(text, "you are logged in", "{served}\n{}", d.stderr());
            // The token expires within a second and cannot be refreshed: the next calls are
            // answered with a new link (not with what the server said to mcpx).
            let again = std::cell::RefCell::new(None);
            assert!(eventually(|| {
                *again.borrow_mut() = link(&call().json());
                again.borrow().is_some()
            }));
            let again = again.into_inner().unwrap();
            assert_ne!(again, first);
            assert_eq!(browse(&d, &again, "alice-gh").status, 200);
            let served = call().json();
            assert_eq!(
                served["result"]["content"][0]["text"], "you are logged in",
                "{served}"
            );
        }
    }
}
