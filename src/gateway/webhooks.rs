//! Webhook delivery as Standard Webhooks defines it, for the event subscriptions mcpx delivers
//! itself ([`super::event_subscriptions`]): each request is signed with the subscription's
//! `whsec_` secret (`webhook-signature: v1,<base64 HMAC-SHA256 of "id.timestamp.body">`), names
//! its message (`webhook-id`, the same on a retry) and when it was signed
//! (`webhook-timestamp`), and carries `X-MCP-Subscription-Id`. A callback is first asked to
//! prove it consents (`{"type": "verification", "challenge"}`, echoed back), and each event is
//! POSTed alone, at most 256 KiB, retried with backoff while the callback fails. Where mcpx is
//! the callback (relaying a server's own webhooks), each request is checked the same way
//! ([`Secret::verify`]).

use base64::Engine;
use hmac::{Hmac, Mac};
use http::{HeaderMap, HeaderValue};
use serde_json::{json, Value};
use sha2::Sha256;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The most bytes one event's body may have.
pub(super) const MAX_EVENT_BYTES: usize = 256 * 1024;

/// How often an event is tried before it is given up, and the first wait between tries (each
/// next one doubles it).
const ATTEMPTS: u32 = 4;
const FIRST_RETRY: Duration = Duration::from_millis(500);

/// How long a callback may take to answer one request.
const CALLBACK_PATIENCE: Duration = Duration::from_secs(10);

/// How much of a callback's answer is read.
const MAX_ANSWER_BYTES: usize = 16 * 1024;

/// A subscription's signing key: the bytes of its `whsec_` secret.
#[derive(Clone, PartialEq)]
pub(super) struct Secret(Vec<u8>);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never printed.
        f.write_str("Secret(..)")
    }
}

impl Secret {
    /// The key a `whsec_` secret holds: 24 to 64 bytes, base64.
    pub(super) fn parse(secret: &str) -> Result<Secret, String> {
        let invalid =
            || "delivery.secret must be whsec_ and 24 to 64 random bytes in base64".to_owned();
        let encoded = secret.strip_prefix("whsec_").ok_or_else(invalid)?;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|_| invalid())?;
        match bytes.len() {
            24..=64 => Ok(Secret(bytes)),
            _ => Err(invalid()),
        }
    }

    /// A fresh secret: 32 bytes from the system's random source.
    pub(super) fn generate() -> Result<Secret, String> {
        let mut bytes = vec![0u8; 32];
        getrandom::fill(&mut bytes)
            .map_err(|e| format!("the system's random source failed: {e}"))?;
        Ok(Secret(bytes))
    }

    /// It as a `whsec_` secret again.
    pub(super) fn to_whsec(&self) -> String {
        format!(
            "whsec_{}",
            base64::engine::general_purpose::STANDARD.encode(&self.0)
        )
    }

    /// The `webhook-signature` of `body`, sent as message `id` at `timestamp`.
    pub(super) fn sign(&self, id: &str, timestamp: u64, body: &str) -> String {
        let signature = self
            .mac(id, timestamp, body.as_bytes())
            .finalize()
            .into_bytes();
        format!(
            "v1,{}",
            base64::engine::general_purpose::STANDARD.encode(signature)
        )
    }

    /// The HMAC of message `id`, sent at `timestamp`, of `body`.
    fn mac(&self, id: &str, timestamp: u64, body: &[u8]) -> Hmac<Sha256> {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC accepts any key length");
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(body);
        mac
    }

    /// Whether `body` came with a signature of this secret's (one of `webhook-signature`'s
    /// `v1,` entries), signed at most [`TOLERANCE`] from now: the message's id, when it did.
    pub(super) fn verify(&self, headers: &HeaderMap, body: &[u8]) -> Result<String, String> {
        let header = |name: &str| {
            let value = headers.get(name).and_then(|v| v.to_str().ok());
            value.ok_or_else(|| format!("{name} is missing"))
        };
        let id = header("webhook-id")?;
        let timestamp: u64 = header("webhook-timestamp")?
            .parse()
            .map_err(|_| "webhook-timestamp is not a time")?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        if now.abs_diff(timestamp) > TOLERANCE.as_secs() {
            return Err("webhook-timestamp is too far from now".into());
        }
        let signed = header("webhook-signature")?
            .split(' ')
            .filter_map(|entry| entry.strip_prefix("v1,"))
            .filter_map(|b64| base64::engine::general_purpose::STANDARD.decode(b64).ok())
            .any(|signature| {
                self.mac(id, timestamp, body)
                    .verify_slice(&signature)
                    .is_ok()
            });
        match signed {
            true => Ok(id.to_owned()),
            false => Err("no signature of the subscription's secret".into()),
        }
    }
}

/// How far a signed request's timestamp may be from now (Standard Webhooks' suggestion), so
/// that a request captured once cannot be replayed later.
const TOLERANCE: Duration = Duration::from_secs(5 * 60);

/// Where one subscription's webhooks go, and as what.
pub(super) struct Callback<'a> {
    pub url: &'a str,
    pub subscription: &'a str,
    pub secret: &'a Secret,
    pub loopback_ok: bool,
}

impl Callback<'_> {
    /// The signed request of `body` as message `id`: its headers.
    fn headers(&self, id: &str, body: &str) -> Result<HeaderMap, String> {
        let timestamp = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let mut headers = HeaderMap::new();
        let value = |v: &str| HeaderValue::try_from(v).map_err(|e| e.to_string());
        headers.insert("webhook-id", value(id)?);
        headers.insert("webhook-timestamp", value(&timestamp.to_string())?);
        let mut signature = value(&self.secret.sign(id, timestamp, body))?;
        signature.set_sensitive(true);
        headers.insert("webhook-signature", signature);
        headers.insert("x-mcp-subscription-id", value(self.subscription)?);
        Ok(headers)
    }

    /// One POST of `body` as message `id`: the callback's answer, if it took it.
    async fn post(&self, id: &str, body: &str) -> Result<Value, String> {
        let headers = self.headers(id, body)?;
        let posted = crate::net::client::post_to_callback(
            self.url,
            headers,
            body.to_owned(),
            self.loopback_ok,
            MAX_ANSWER_BYTES,
        );
        // A callback that takes the connection and never answers holds up nobody.
        let answer = crate::deadline::within(CALLBACK_PATIENCE, posted).await?;
        if !answer.status.is_success() {
            return Err(format!("the callback answered {}", answer.status));
        }
        Ok(serde_json::from_slice(&answer.body).unwrap_or(Value::Null))
    }

    /// Asks the callback to prove it consents: it must echo a fresh challenge.
    pub(super) async fn verify(&self) -> Result<(), String> {
        let challenge = crate::upstream::auth::authorize::random_token(24)?;
        let body = json!({"type": "verification", "challenge": challenge}).to_string();
        let id = format!("msg_verify_{challenge}");
        let answer = self.post(&id, &body).await?;
        match answer["challenge"] == json!(challenge) {
            true => Ok(()),
            false => Err("the callback did not echo the verification challenge".into()),
        }
    }

    /// Delivers `event` as message `id`, trying again with backoff while the callback fails:
    /// whether it was taken.
    pub(super) async fn deliver(&self, id: &str, event: &Value) -> Result<(), String> {
        let body = event.to_string();
        if body.len() > MAX_EVENT_BYTES {
            return Err(format!(
                "the event is {} bytes, over {MAX_EVENT_BYTES}",
                body.len()
            ));
        }
        let mut wait = FIRST_RETRY;
        let mut last = String::new();
        for _ in 0..ATTEMPTS {
            match self.post(id, &body).await {
                Ok(_) => return Ok(()),
                Err(why) => last = why,
            }
            crate::deadline::sleep(wait).await;
            wait *= 2;
        }
        Err(last)
    }
}

#[cfg(test)]
mod v2026_07_28 {
    mod events {
        use super::super::*;

        /// The Standard Webhooks specification's own example.
        #[test]
        fn a_signature_is_standard_webhooks_own() {
            let secret = Secret::parse("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw").unwrap();
            let signed = secret.sign(
                "msg_p5jXN8AQM9LWM0D4loKWxJek",
                1614265330,
                r#"{"test": 2432232314}"#,
            );
            assert_eq!(signed, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        }

        /// What mcpx takes as its relay callback: a request signed with its secret, now; not
        /// one signed with another, replayed from long ago, or with its body changed.
        #[test]
        fn a_signed_request_is_taken_only_as_it_was_signed() {
            let secret = Secret::generate().unwrap();
            let other = Secret::generate().unwrap();
            assert_ne!(secret, other);
            let signed = |by: &Secret, at: u64, body: &str| {
                let mut headers = HeaderMap::new();
                headers.insert("webhook-id", HeaderValue::from_static("msg_1"));
                headers.insert("webhook-timestamp", at.to_string().parse().unwrap());
                // Several signatures (a key being rotated): any one of them will do.
                let both = format!("v1,bm9pc2U= {}", by.sign("msg_1", at, body));
                headers.insert("webhook-signature", both.parse().unwrap());
                headers
            };
            let now = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_secs();
            let body = r#"{"eventId": "e1"}"#;
            let taken = secret.verify(&signed(&secret, now, body), body.as_bytes());
            assert_eq!(taken, Ok("msg_1".to_owned()));
            assert!(secret
                .verify(&signed(&other, now, body), body.as_bytes())
                .is_err());
            assert!(secret
                .verify(&signed(&secret, now - 3600, body), body.as_bytes())
                .is_err());
            assert!(secret
                .verify(&signed(&secret, now, body), b"{\"eventId\": \"e2\"}")
                .is_err());
            assert!(secret.verify(&HeaderMap::new(), body.as_bytes()).is_err());
        }

        #[test]
        fn a_secret_is_whsec_and_24_to_64_bytes() {
            let encode = |n: usize| base64::engine::general_purpose::STANDARD.encode(vec![7u8; n]);
            assert!(Secret::parse(&format!("whsec_{}", encode(24))).is_ok());
            assert!(Secret::parse(&format!("whsec_{}", encode(64))).is_ok());
            assert!(Secret::parse(&format!("whsec_{}", encode(23))).is_err());
            assert!(Secret::parse(&format!("whsec_{}", encode(65))).is_err());
            assert!(Secret::parse(&encode(32)).is_err());
            assert!(!format!(
                "{:?}",
                Secret::parse(&format!("whsec_{}", encode(32))).unwrap()
            )
            .contains('7'));
        }
    }
}
