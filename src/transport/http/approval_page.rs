//! `{publicUrl}/approvals/ID`: a call waiting for approval (`[approvals]`), decided in a
//! browser by whoever holds the owner secret, for an owner away from the host, where
//! `mcpx approvals` is. Served only with the built-in authorization server and an
//! `ownerSecret`. The id is the capability to see the call (72 random bits, told to its caller
//! and in `mcpx status`), the secret the one to decide it: a form without it decides nothing,
//! so another site's form cannot either. Wrong secrets lock that call's page (five, then it is
//! decided on the host only); an unknown id is a 404 whatever was sent. The page is never
//! cached, framed, or sent on as a referrer.

use super::reply::{plain, Body};
use super::FrontDoor;
use crate::access::builtin::consent::escape;
use crate::access::builtin::AuthServer;
use crate::control::protocol::{Command, Reply};
use crate::control::By;
use crate::gateway::Approval;
use bytes::Bytes;
use http::{header, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;

/// The most bytes of a decision's form.
const MAX_FORM: usize = 4096;

impl FrontDoor {
    /// `GET` shows the call; `POST` (`secret`, `decision`) decides it.
    pub(super) async fn approval_page(
        &self,
        server: &AuthServer,
        request: Request<Incoming>,
    ) -> Response<Body> {
        let (parts, body) = request.into_parts();
        let id = parts.uri.path().strip_prefix(crate::gateway::APPROVAL_PAGE);
        let id = id.unwrap_or_default().to_owned();
        let Some(waiting) = self.gateway.approval(&id) else {
            return plain(StatusCode::NOT_FOUND, "no call waits for approval here\n");
        };
        let response = match parts.method {
            Method::GET => page(StatusCode::OK, &waiting, None),
            Method::POST => {
                let form = match self.read_body(&parts.headers, body, MAX_FORM).await {
                    Ok(form) => form,
                    Err(refusal) => return *refusal,
                };
                self.decided(server, &id, &waiting, &form).await
            }
            _ => plain(
                StatusCode::METHOD_NOT_ALLOWED,
                "this page takes GET and POST\n",
            ),
        };
        guarded(response)
    }

    /// What a `POST` of `form` decides for the call waiting as `id`.
    async fn decided(
        &self,
        server: &AuthServer,
        id: &str,
        waiting: &Approval,
        form: &[u8],
    ) -> Response<Body> {
        let mut secret = String::new();
        let mut approve = None;
        for (key, value) in url::form_urlencoded::parse(form) {
            match key.as_ref() {
                "secret" => secret = value.into_owned(),
                "decision" => approve = Some(value == "approve"),
                _ => {}
            }
        }
        if waiting.locked {
            let said = "Too many wrong secrets: decide this call on the host (mcpx approvals).";
            return page(StatusCode::FORBIDDEN, waiting, Some(said));
        }
        if !server.is_owner_secret(&secret) {
            self.gateway.approval_secret_failed(id);
            return page(
                StatusCode::FORBIDDEN,
                waiting,
                Some("That is not the owner secret."),
            );
        }
        let Some(approve) = approve else {
            return page(StatusCode::BAD_REQUEST, waiting, Some("Approve or deny."));
        };
        let by = By::OwnerSecret {
            page: "approval page",
        };
        let decision = Command::DecideApproval {
            id: id.to_owned(),
            approve,
            via: String::new(),
        };
        match crate::control::act(&self.gateway, decision, &by).await {
            Reply::Done { message } | Reply::Error { message, .. } => done(&message),
            Reply::Snapshot(_) | Reply::Tools(_) => done("mcpx answered something else"),
        }
    }
}

/// The page for `waiting`, with `notice` above its form.
fn page(status: StatusCode, waiting: &Approval, notice: Option<&str>) -> Response<Body> {
    let view = &waiting.view;
    let notice = notice.map_or(String::new(), |n| {
        format!("<p class=notice>{}</p>", escape(n))
    });
    let html = format!(
        "<!doctype html><html lang=en><head><meta charset=utf-8>\
<meta name=viewport content=\"width=device-width\"><title>mcpx: approve a call?</title>\
<style>body{{font:16px system-ui,sans-serif;max-width:40em;margin:3em auto;padding:0 1em}}\
pre{{background:#eee;padding:.5em;white-space:pre-wrap;word-break:break-all}}.notice{{color:#a00}}\
button{{font-size:1em;margin-right:1em}}</style></head><body>\
<h1>Approve <q>{tool}</q>?</h1>{notice}\
<ul><li>Called by: <b>{caller}</b></li><li>Tool: <b>{tool}</b></li>\
<li>Waiting for {waited} s; refused in {left} s unless decided</li></ul>\
<p>Arguments (SHA-256 {sha256}):</p><pre>{arguments}</pre>\
<form method=post><p><label>Owner secret <input type=password name=secret \
autocomplete=current-password autofocus></label></p>\
<p><button name=decision value=approve>Approve</button>\
<button name=decision value=deny>Deny</button></p></form></body></html>",
        tool = escape(&view.tool),
        caller = escape(&view.caller),
        waited = view.age_ms / 1000,
        left = view.ends_in_ms / 1000,
        sha256 = escape(&view.arguments_sha256),
        arguments = escape(&waiting.arguments),
    );
    html_response(status, html)
}

/// The page after a decision.
fn done(said: &str) -> Response<Body> {
    let html = format!(
        "<!doctype html><meta charset=utf-8><title>mcpx</title><p>{}</p>",
        escape(said)
    );
    html_response(StatusCode::OK, html)
}

fn html_response(status: StatusCode, html: String) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(html)).boxed());
    *response.status_mut() = status;
    let value = http::HeaderValue::from_static("text/html; charset=utf-8");
    response.headers_mut().insert(header::CONTENT_TYPE, value);
    response
}

/// `response` never cached, framed, sniffed or sent on as a referrer; no script runs in it.
fn guarded(mut response: Response<Body>) -> Response<Body> {
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
        ),
    ] {
        headers.insert(name, http::HeaderValue::from_static(value));
    }
    response
}
