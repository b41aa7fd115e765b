//! Relaying a server's own webhooks (an event type it delivers only by webhook): mcpx
//! subscribes at the server with a callback of its own, `{publicUrl}/events/webhooks/ID` (the
//! client's subscription id), and a secret of its own, keeps that subscription refreshed for as
//! long as the client's lives, and unsubscribes when it ends. What the server POSTs there is
//! checked against that secret (Standard Webhooks), then delivered to the client's callback
//! as any bridged occurrence is: renamed, its cursor sealed, signed with the client's secret.
//! The server never learns the client's callback or secret; the client never learns the
//! server's.
//!
//! Only the daemon with `[auth] publicUrl` relays (it is the one a server can reach, and the
//! one that keeps subscriptions); elsewhere webhook-only event types are not carried.

use super::event_delivery::{pause, BACKOFF};
use super::event_subscriptions::Subscription;
use super::webhooks::{Secret, MAX_EVENT_BYTES};
use super::Gateway;
use crate::cancel::Cancel;
use crate::failure::Failure;
use crate::jsonrpc::{ErrorObject, NOT_FOUND};
use crate::protocol::Method;
use crate::upstream::Caller;
use http::{HeaderMap, StatusCode};
use serde_json::{json, Value};
use std::time::{Duration, SystemTime};

/// The path under `publicUrl` where servers POST the webhooks mcpx relays, the subscription's
/// id after it.
pub const PATH: &str = "/events/webhooks/";

/// The most bytes a relayed request's body may have: one event.
pub const MAX_BODY: usize = MAX_EVENT_BYTES;

/// How often a server's subscription granted without an end is asserted again anyway.
const NO_EXPIRY_REFRESH: Duration = Duration::from_secs(60 * 60);

/// How many of the servers' message ids the relay remembers: the newest, within the signature's
/// tolerance (a replay older than that is refused by its timestamp anyway).
const REMEMBERED: usize = 4096;

/// The message ids (`webhook-id`, by subscription) the relay passed on or is passing on, newest
/// last: a server's retry of one it took, or a replay of a captured request, is taken and
/// dropped, never a second copy at the client's callback.
#[derive(Debug, Default)]
pub(super) struct PassedOn(std::sync::Mutex<std::collections::VecDeque<(String, String)>>);

impl PassedOn {
    /// Whether `(subscription, message)` is new: then it is remembered.
    fn first(&self, subscription: &str, message: &str) -> bool {
        let mut passed = crate::sync::lock(&self.0);
        if passed
            .iter()
            .any(|(s, m)| s == subscription && m == message)
        {
            return false;
        }
        if passed.len() >= REMEMBERED {
            passed.pop_front();
        }
        passed.push_back((subscription.to_owned(), message.to_owned()));
        true
    }

    /// Forgets `(subscription, message)`: it was not passed on, and its retry is to be.
    fn forget(&self, subscription: &str, message: &str) {
        crate::sync::lock(&self.0).retain(|(s, m)| s != subscription || m != message);
    }
}

/// What mcpx answers a server's POST to its relay callback.
#[derive(Debug, PartialEq)]
pub enum Relayed {
    /// The callback verification's answer: the challenge, echoed.
    Echo(Value),
    /// Taken (and, for an occurrence, delivered to the client's callback).
    Taken,
    /// Not taken: the status says why (410: no such subscription, so the server stops).
    Refused(StatusCode),
}

impl Gateway {
    /// The server's subscription of mcpx's own callback for `subscription`, made or refreshed
    /// from where its delivery is: the server's answer. Notes when to refresh it next.
    pub(super) async fn relay_subscribe(
        &self,
        subscription: &Subscription,
    ) -> Result<Value, ErrorObject> {
        let (url, secret) = self.relay_callback(subscription)?;
        let connection = (self.reach(subscription).await).map_err(Failure::Refused)?;
        let mut params = Self::asking(subscription, &subscription.cursor());
        params["delivery"] = json!({"mode": "webhook", "url": url, "secret": secret.to_whsec()});
        let method = Method::EventsSubscribe.as_str();
        let ended = &subscription.ended;
        let answer = connection
            .request(method, Some(params), ended, Caller::default())
            .await?;
        subscription.relay_refresh_at(Some(refresh_time(&answer)));
        Ok(answer)
    }

    /// Keeps `subscription`'s server subscription refreshed while it lives, then unsubscribes
    /// it there. A resumed one (after a restart) is refreshed at once, from where it was.
    pub(super) async fn keep_relaying(&self, subscription: &Subscription) {
        let mut backoff = BACKOFF.0;
        while subscription.live() {
            if let Some(due) = subscription.relay_refresh() {
                let wait = due.duration_since(SystemTime::now()).unwrap_or_default();
                pause(subscription, wait).await;
                if !subscription.live() {
                    break;
                }
            }
            match self.relay_subscribe(subscription).await {
                Ok(answer) => {
                    backoff = BACKOFF.0;
                    if answer["truncated"] == json!(true) {
                        self.gap(subscription, &answer["cursor"]).await;
                    }
                }
                Err(error) if error.code == NOT_FOUND => {
                    return self.terminated(subscription, &error).await;
                }
                Err(error) => {
                    tracing::warn!(subscription = %subscription.id, "refreshing a relayed event subscription failed: {}", error.message);
                    subscription.relay_refresh_at(None);
                    pause(subscription, backoff).await;
                    backoff = (backoff * 2).min(BACKOFF.1);
                }
            }
        }
        self.relay_unsubscribe(subscription).await;
    }

    /// Ends the server's subscription of mcpx's callback for `subscription` (which ended).
    async fn relay_unsubscribe(&self, subscription: &Subscription) {
        let Ok((url, _)) = self.relay_callback(subscription) else {
            return;
        };
        let Ok(connection) = self.reach(subscription).await else {
            return;
        };
        let params = json!({"name": subscription.own, "arguments": subscription.arguments,
            "delivery": {"url": url}});
        let method = Method::EventsUnsubscribe.as_str();
        let ended = connection
            .request(method, Some(params), &Cancel::new(), Caller::default())
            .await;
        match ended {
            Ok(_) => {}
            Err(error) if error.code == NOT_FOUND => {}
            Err(error) => {
                tracing::warn!(subscription = %subscription.id, "a relayed event subscription was not ended at its server: {}", error.message);
            }
        }
    }

    /// mcpx's own callback for `subscription` at its server, and the secret it is signed with.
    fn relay_callback(&self, subscription: &Subscription) -> Result<(String, Secret), Failure> {
        let base = self.event_subscriptions.relay_base();
        let secret = subscription.relay_secret.clone();
        match (base, secret) {
            (Some(base), Some(secret)) => Ok((format!("{base}{PATH}{}", subscription.id), secret)),
            _ => Err(Failure::Refused(
                "mcpx relays webhooks only as the daemon with auth.publicUrl".into(),
            )),
        }
    }

    /// A server's POST of `body` to the relay callback of subscription `id`: checked against
    /// the secret mcpx gave that server, then answered (a verification), or passed on to the
    /// client's callback (an occurrence, a gap, the subscription's end).
    pub async fn relay_webhook(&self, id: &str, headers: &HeaderMap, body: &[u8]) -> Relayed {
        let Some(subscription) = self.event_subscriptions.relayed(id) else {
            return Relayed::Refused(StatusCode::GONE);
        };
        let Some(secret) = &subscription.relay_secret else {
            return Relayed::Refused(StatusCode::GONE);
        };
        let Ok(message) = secret.verify(headers, body) else {
            return Relayed::Refused(StatusCode::UNAUTHORIZED);
        };
        let Ok(sent) = serde_json::from_slice::<Value>(body) else {
            return Relayed::Refused(StatusCode::BAD_REQUEST);
        };
        match sent["type"].as_str() {
            Some("verification") => match sent["challenge"].as_str() {
                Some(challenge) => Relayed::Echo(json!({"challenge": challenge})),
                None => Relayed::Refused(StatusCode::BAD_REQUEST),
            },
            Some("gap") => {
                self.gap(&subscription, &sent["cursor"]).await;
                self.moved_to(&subscription, &sent["cursor"]);
                Relayed::Taken
            }
            Some("terminated") => {
                let error = super::event_delivery::ended_by(&sent);
                self.terminated(&subscription, &error).await;
                self.event_subscriptions.forget(&subscription.id);
                Relayed::Taken
            }
            Some(_) => Relayed::Refused(StatusCode::BAD_REQUEST),
            None if sent["name"] != json!(subscription.own) => {
                Relayed::Refused(StatusCode::BAD_REQUEST)
            }
            None => {
                if !self.relayed.first(&subscription.id, &message) {
                    return Relayed::Taken;
                }
                let cursor = sent.get("cursor").cloned().unwrap_or_default();
                // Not taken: the server tries again, as it would had it delivered directly.
                if !self.deliver(&subscription, sent).await {
                    self.relayed.forget(&subscription.id, &message);
                    return Relayed::Refused(StatusCode::BAD_GATEWAY);
                }
                self.moved_to(&subscription, &cursor);
                Relayed::Taken
            }
        }
    }

    /// Notes that `subscription`'s delivery is at the server's `cursor`, if it names one.
    fn moved_to(&self, subscription: &Subscription, cursor: &Value) {
        if !cursor.is_null() && *cursor != subscription.cursor() {
            self.event_subscriptions.moved(subscription, cursor.clone());
        }
    }
}

/// When to refresh a server's subscription that answered `answer`: four fifths into the
/// lifetime it granted (`refreshBefore`), at least a second from now; or, granted without an
/// end, [`NO_EXPIRY_REFRESH`] from now.
fn refresh_time(answer: &Value) -> SystemTime {
    let now = SystemTime::now();
    let granted = answer["refreshBefore"].as_str();
    let Some(ends) = granted.and_then(|at| humantime::parse_rfc3339_weak(at).ok()) else {
        return now + NO_EXPIRY_REFRESH;
    };
    let left = ends.duration_since(now).unwrap_or_default();
    now + (left * 4 / 5).max(Duration::from_secs(1))
}

#[cfg(test)]
mod v2026_07_28 {
    mod events {
        use super::super::*;

        #[test]
        fn a_relayed_subscription_is_refreshed_before_the_server_lets_it_lapse() {
            let now = SystemTime::now();
            let in_100s = humantime::format_rfc3339_seconds(now + Duration::from_secs(100));
            let due = refresh_time(&json!({"refreshBefore": in_100s.to_string()}));
            let wait = due.duration_since(now).unwrap();
            assert!(wait >= Duration::from_secs(70) && wait <= Duration::from_secs(81));
            let lapsed = humantime::format_rfc3339_seconds(now - Duration::from_secs(5));
            let due = refresh_time(&json!({"refreshBefore": lapsed.to_string()}));
            assert!(due.duration_since(now).unwrap() >= Duration::from_millis(900));
            let due = refresh_time(&json!({"refreshBefore": null}));
            assert!(due.duration_since(now).unwrap() > Duration::from_secs(3000));
        }
    }
}
