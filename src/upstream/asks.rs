//! Requests an upstream server makes of its client in the middle of a call: sampling
//! (`sampling/createMessage`), elicitation (`elicitation/create`) and `roots/list`.
//!
//! mcpx is that client. Each such request becomes an [`Ask`] handed to the call it belongs to
//! (the gateway carries it to the real client in whatever way the client's era allows), and the
//! server is answered under its own id with what the client said. Ids the server chose never
//! reach a client, so ids from different upstreams cannot collide.

use crate::json::Member;
use crate::jsonrpc::{ErrorObject, Request, Response, INTERNAL_ERROR, METHOD_NOT_FOUND};
use crate::limit::{Held, Limit};
use crate::protocol::method::{Method, Question};
use crate::sync::lock;
use async_channel::{Receiver, Sender};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// How many asks one call may have open at once. A person or a model answers them one by one;
/// an upstream that sends more without waiting is refused the excess at once, so that it cannot
/// fill the daemon with questions nobody will read.
pub const MAX_OPEN: usize = 16;

/// One request an upstream made of the client, waiting for its answer.
#[derive(Debug)]
pub struct Ask {
    /// What the server asks.
    pub question: Question,
    /// Its params, as the server sent them.
    pub params: Value,
    reply: Sender<Result<Value, ErrorObject>>,
}

impl Ask {
    /// An ask and the receiver its answer arrives on.
    pub fn new(question: Question, params: Value) -> (Ask, Receiver<Result<Value, ErrorObject>>) {
        let (reply, answer) = async_channel::bounded(1);
        let ask = Ask {
            question,
            params,
            reply,
        };
        (ask, answer)
    }

    /// Answers the server. Dropping an ask unanswered answers it with an error instead.
    pub fn answer(self, outcome: Result<Value, ErrorObject>) {
        let _ = self.reply.try_send(outcome);
    }

    /// The ask as an `InputRequest` of 2026-07-28: `{method, params}`, no id, and no 2025-11-25
    /// `related-task` (which names a task by the server's id, where the client knows mcpx's).
    pub fn input_request(&self) -> Value {
        let mut params = self.params.clone();
        crate::protocol::task::drop_related_task(&mut params);
        json!({"method": self.question.as_str(), "params": params})
    }

    /// The client capability it needs, as a `ClientCapabilities` object.
    pub fn required_capability(&self) -> Value {
        match self.question {
            Question::Sampling if self.params.member("tools").is_some() => {
                json!({"sampling": {"tools": {}}})
            }
            Question::Elicitation if self.params["mode"] == "url" => {
                json!({"elicitation": {"url": {}}})
            }
            Question::Sampling => json!({"sampling": {}}),
            Question::Elicitation => json!({"elicitation": {"form": {}}}),
            Question::Roots => json!({"roots": {}}),
        }
    }

    /// Whether a client that declared `capabilities` can take it. An empty `elicitation` object
    /// means form mode only, as the specification says.
    pub fn allowed_by(&self, capabilities: &Value) -> bool {
        let needed = self.required_capability();
        let Some((feature, detail)) = needed.as_object().and_then(|n| n.iter().next()) else {
            return false;
        };
        let Some(declared) = capabilities.member(feature).filter(|d| d.is_object()) else {
            return false;
        };
        let form_by_default = feature == "elicitation"
            && detail.member("form").is_some()
            && declared.as_object().is_some_and(|d| d.is_empty());
        form_by_default
            || detail
                .as_object()
                .into_iter()
                .flatten()
                .all(|(sub, _)| declared.member(sub).is_some())
    }
}

/// A call in flight that takes its upstream's asks: where they go, and how many are open.
#[derive(Debug, Clone)]
pub struct Asker {
    sink: Sender<Ask>,
    /// Its asks waiting for the client, against [`MAX_OPEN`].
    open: Arc<Limit>,
}

/// The calls in flight to one upstream that can take its asks, oldest first.
#[derive(Debug, Default)]
pub struct Askers(Mutex<Vec<(i64, Asker)>>);

impl Askers {
    /// Records that the call with mcpx's id `id` takes asks on `sink`.
    pub fn enter(&self, id: i64, sink: Sender<Ask>) {
        let open = Limit::new("the asks one call may have open", MAX_OPEN);
        self.lock().push((id, Asker { sink, open }));
    }

    /// Forgets the call `id` (it ended).
    pub fn leave(&self, id: i64) {
        self.lock().retain(|(call, _)| *call != id);
    }

    /// Where an ask tied to no call goes: stdio (and a legacy GET stream) cannot say which call a
    /// server request belongs to, so it goes to the newest call still in flight, which is the
    /// one a server asking "before it can go on" is most likely working on.
    pub fn newest(&self) -> Option<Asker> {
        let askers = self.lock();
        askers
            .iter()
            .rev()
            .find(|(_, asker)| !asker.sink.is_closed())
            .map(|(_, asker)| asker.clone())
    }

    /// The call that takes asks on `sink` (a call's own stream says whose its asks are).
    pub fn of(&self, sink: &Sender<Ask>) -> Option<Asker> {
        let askers = self.lock();
        askers
            .iter()
            .find(|(_, asker)| asker.sink.same_channel(sink))
            .map(|(_, asker)| asker.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<(i64, Asker)>> {
        lock(&self.0)
    }
}

/// How a request a server sent mcpx is answered.
pub enum Answer {
    /// At once: `ping`, a method mcpx does not take, an ask with no call to take it or past
    /// [`MAX_OPEN`].
    Now(Response),
    /// When the client has answered.
    Later(Waiting),
}

/// An ask handed to its call, waiting for the client's answer.
pub struct Waiting {
    id: crate::jsonrpc::Id,
    method: String,
    answer: Receiver<Result<Value, ErrorObject>>,
    _open: Option<Held>,
}

impl Waiting {
    /// The response to the server, once the client (or the end of the call) has said.
    pub async fn response(self) -> Response {
        let outcome = self.answer.recv().await.unwrap_or_else(|_| {
            Err(ErrorObject::new(
                METHOD_NOT_FOUND,
                format!("the client cannot answer {} (it did not declare the capability, or the call ended)", self.method),
            ))
        });
        Response {
            id: Some(self.id),
            outcome,
            meta_entry: None,
        }
    }
}

/// Answers a request a server sent mcpx: `ping` at once; an ask through `asker`, the call it
/// belongs to (at once with an error when there is none, or when that call has [`MAX_OPEN`]
/// open); anything else method-not-found. The server's transport writes an answer given at
/// once in line, so that a server that asks faster than it reads is slowed, not queued for.
pub fn answer(request: Request, asker: Option<Asker>, server: &str) -> Answer {
    let Request { id, method, params } = request;
    let now = |outcome| {
        Answer::Now(Response {
            id: Some(id.clone()),
            outcome,
            meta_entry: None,
        })
    };
    let parsed = Method::parse(&method);
    if parsed == Some(Method::Ping) {
        return now(Ok(json!({})));
    }
    let asked = match parsed.and_then(Method::question) {
        Some(question) => question,
        None => {
            let error = ErrorObject::new(METHOD_NOT_FOUND, format!("Method not found: {method}"));
            return now(Err(error));
        }
    };
    let open = asker.as_ref().map(|asker| asker.open.take());
    if let Some(None) = open {
        let error = ErrorObject::new(
            INTERNAL_ERROR,
            format!("{method} refused: this call already has {MAX_OPEN} requests to the client unanswered; wait for their answers"),
        );
        return now(Err(error));
    }
    let (ask, answer) = Ask::new(asked, params.unwrap_or_else(|| json!({})));
    let sent = match asker {
        Some(asker) => asker.sink.try_send(ask).is_ok(),
        None => false,
    };
    if !sent {
        let error = ErrorObject::new(
            METHOD_NOT_FOUND,
            format!("{method} reaches a client only during a call from that client, and upstream {server:?} has none in flight"),
        );
        return now(Err(error));
    }
    Answer::Later(Waiting {
        id,
        method,
        answer,
        _open: open.flatten(),
    })
}

#[cfg(test)]
mod every_revision {
    mod asks {
        use crate::protocol::method::Question;
        use crate::upstream::asks::Ask;
        use serde_json::json;

        #[test]
        fn each_ask_needs_the_capability_of_its_kind() {
            let (form, _) = Ask::new(Question::Elicitation, json!({"message": "m"}));
            assert!(form.allowed_by(&json!({"elicitation": {}})));
            assert!(form.allowed_by(&json!({"elicitation": {"form": {}}})));
            assert!(!form.allowed_by(&json!({"elicitation": {"url": {}}})));
            assert!(!form.allowed_by(&json!({"sampling": {}})));
            let (url, _) = Ask::new(Question::Elicitation, json!({"mode": "url"}));
            assert!(!url.allowed_by(&json!({"elicitation": {}})));
            assert!(url.allowed_by(&json!({"elicitation": {"url": {}}})));
            let (sample, _) = Ask::new(Question::Sampling, json!({"messages": []}));
            assert!(sample.allowed_by(&json!({"sampling": {}})));
            assert_eq!(sample.required_capability(), json!({"sampling": {}}));
            let (roots, _) = Ask::new(Question::Roots, json!({}));
            assert!(roots.allowed_by(&json!({"roots": {"listChanged": true}})));
            assert!(!roots.allowed_by(&json!({})));
        }

        /// A 2026-07-28 client is asked without 2025-11-25's `related-task`, which would name a
        /// task by the server's id; the rest of `_meta` stays.
        #[test]
        fn an_input_request_carries_no_related_task() {
            let related = json!({"taskId": "server-own"});
            let meta = json!({"io.modelcontextprotocol/related-task": related, "k": 1});
            let (ask, _) = Ask::new(
                Question::Elicitation,
                json!({"message": "m", "_meta": meta}),
            );
            let shown = ask.input_request();
            assert_eq!(shown["params"], json!({"message": "m", "_meta": {"k": 1}}));
            let only = json!({"io.modelcontextprotocol/related-task": related});
            let (ask, _) = Ask::new(
                Question::Elicitation,
                json!({"message": "m", "_meta": only}),
            );
            assert_eq!(ask.input_request()["params"], json!({"message": "m"}));
        }
    }
}
