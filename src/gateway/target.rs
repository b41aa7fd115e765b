//! What a request names, resolved once: every route a call can take (a tool's exposed name, its
//! server's own name as an App calls it, `mcpx__call_tool` naming either, a task's call, a retry
//! carrying `requestState`; a prompt; a resource by URI, by template or by a renamed `ui://` or
//! `skill://` URI; a completion's reference) comes out as one [`Target`]: the server, the name
//! or URI the server knows, the name the caller's catalog shows. The policies
//! ([`super::policies`]) judge the target, the call goes to it, and nothing after this looks at
//! the name as sent again.

use super::catalog::Catalog;
use super::kept_results::PREFIX as KEPT_RESULTS;
use super::{search, Owner};
use crate::json::Member;
use crate::jsonrpc::{ErrorObject, INVALID_PARAMS};
use crate::protocol::method::RoutedBy;
use crate::protocol::Method;
use serde_json::{json, Value};
use std::borrow::Cow;

/// What kind of definition a call uses (what a pin holds it as).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Tool,
    Prompt,
    Resource,
    Skill,
    /// An event type (Events).
    Event,
}

/// The one definition a request uses.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Target {
    pub kind: Kind,
    /// Its server.
    pub owner: Owner,
    /// Its name or URI on that server.
    pub own: String,
    /// What the caller's catalog shows it as (the exposed name, the URI as shown).
    pub exposed: String,
    /// The server's own template a URI was matched by, when no listed resource has it.
    pub template: Option<String>,
}

/// A request resolved: its target, and its params as a direct call of it (a call through
/// `mcpx__call_tool` unwrapped to the call of the tool it names).
#[derive(Debug)]
pub(super) struct Resolved<'p> {
    pub target: Target,
    pub params: Cow<'p, Value>,
}

impl<'p> Resolved<'p> {
    /// The arguments that run with the target: a tool's, a prompt's.
    pub fn arguments(&self) -> Option<&Value> {
        self.params.member("arguments")
    }

    /// Whether the call asks for a 2025-11-25 task (`params.task`): its client expects a task
    /// where a tool result would be, so a refusal is an error, never a tool result.
    pub fn asks_for_task(&self) -> bool {
        self.params.member("task").is_some()
    }

    /// The params, as routes take them.
    pub fn params(&self) -> Option<&Value> {
        Some(self.params.as_ref())
    }
}

/// Why a request names nothing the caller may reach.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Unresolved {
    /// No tool of that name in the caller's view.
    Tool(String),
    /// No prompt of that name.
    Prompt(String),
    /// No event type of that name.
    Event(String),
    /// No resource at that URI, nor a template matching it.
    Resource(String),
    /// A completion's reference is neither a prompt nor a resource mcpx knows.
    Reference(String),
    /// The request cannot name anything as sent.
    Invalid(ErrorObject),
}

/// Resolves what a request of `method` with `params` names in `catalog` (the caller's view);
/// `Ok(None)` for a method that names nothing.
pub(super) fn resolve<'p>(
    catalog: &Catalog,
    method: Method,
    params: Option<&'p Value>,
) -> Result<Option<Resolved<'p>>, Unresolved> {
    let text = |value: Option<&Value>, key: &str| -> String {
        let found = value.and_then(|v| v.member(key)).and_then(Value::as_str);
        found.unwrap_or_default().to_owned()
    };
    let resolved = |target: Target, params: Cow<'p, Value>| Ok(Some(Resolved { target, params }));
    match method {
        Method::ToolsCall => {
            let (name, params) = unwrapped(catalog, params)?;
            let exposed = catalog
                .called_tool(&name)
                .map_err(Unresolved::Invalid)?
                .map(str::to_owned);
            let route = exposed.as_deref().and_then(|e| catalog.tool(e));
            match (route, exposed) {
                (Some(route), Some(exposed)) => {
                    let target = tool_target(route.owner, &route.name, exposed, Kind::Tool);
                    resolved(target, params)
                }
                _ => Err(Unresolved::Tool(name)),
            }
        }
        Method::PromptsGet => {
            let name = text(params, "name");
            match catalog.prompt(&name) {
                Some(route) => {
                    let target = tool_target(route.owner, &route.name, name, Kind::Prompt);
                    resolved(target, as_sent(params))
                }
                None => Err(Unresolved::Prompt(name)),
            }
        }
        Method::ResourcesRead
        | Method::ResourcesSubscribe
        | Method::SkillsGet
        | Method::ResourcesDirectoryRead => {
            let kind = if method == Method::SkillsGet {
                Kind::Skill
            } else {
                Kind::Resource
            };
            let uri = text(params, "uri");
            // A result mcpx cut and kept is mcpx's own, whichever view (it is its caller's).
            if method == Method::ResourcesRead && uri.starts_with(KEPT_RESULTS) {
                let target = tool_target(Owner::Builtin, &uri, uri.clone(), Kind::Resource);
                return resolved(target, as_sent(params));
            }
            let target = uri_target(catalog, kind, &uri).ok_or(Unresolved::Resource(uri))?;
            resolved(target, as_sent(params))
        }
        Method::CompletionComplete => {
            let reference = params.and_then(|p| p.member("ref"));
            let target = match reference
                .and_then(|r| r.member("type"))
                .and_then(Value::as_str)
            {
                Some("ref/prompt") => {
                    let name = text(reference, "name");
                    let route = catalog
                        .prompt(&name)
                        .ok_or_else(|| Unresolved::Prompt(name.clone()))?;
                    tool_target(route.owner, &route.name, name, Kind::Prompt)
                }
                Some("ref/resource") => {
                    let uri = text(reference, "uri");
                    let exact = catalog.template_owner(&uri).map(|owner| Target {
                        kind: Kind::Resource,
                        owner,
                        own: own_uri(catalog, owner, &uri),
                        exposed: uri.clone(),
                        template: Some(own_uri(catalog, owner, &uri)),
                    });
                    exact
                        .or_else(|| uri_target(catalog, Kind::Resource, &uri))
                        .ok_or(Unresolved::Reference(uri))?
                }
                _ => {
                    return Err(Unresolved::Invalid(ErrorObject::new(
                        INVALID_PARAMS,
                        "Invalid params: ref must be ref/prompt or ref/resource",
                    )))
                }
            };
            resolved(target, as_sent(params))
        }
        Method::EventsPoll
        | Method::EventsStream
        | Method::EventsSubscribe
        | Method::EventsUnsubscribe => {
            let name = text(params, "name");
            match catalog.event(&name) {
                Some(route) => {
                    let target = tool_target(route.owner, &route.name, name, Kind::Event);
                    resolved(target, as_sent(params))
                }
                None => Err(Unresolved::Event(name)),
            }
        }
        // Lists, mcpx's own answers, a server's questions and tasks (named by a sealed id, which
        // [`super::tasks`] opens) name no target here.
        Method::Initialize
        | Method::Ping
        | Method::ServerDiscover
        | Method::SubscriptionsListen
        | Method::ToolsList
        | Method::PromptsList
        | Method::ResourcesList
        | Method::ResourcesTemplatesList
        | Method::ResourcesUnsubscribe
        | Method::LoggingSetLevel
        | Method::SamplingCreateMessage
        | Method::ElicitationCreate
        | Method::RootsList
        | Method::SkillsList
        | Method::TasksGet
        | Method::TasksResult
        | Method::TasksList
        | Method::TasksCancel
        | Method::TasksUpdate
        | Method::EventsList => Ok(None),
    }
}

/// The server a request of `method` that names `named` (its [`Method::target`]) resolves to:
/// how the console shows where a request in flight went, by the same resolution as its gates.
pub(super) fn owner_of_named(catalog: &Catalog, method: Method, named: &str) -> Option<Owner> {
    let owner = |params: Value| {
        let resolved = resolve(catalog, method, Some(&params)).ok().flatten();
        resolved.map(|r| r.target.owner)
    };
    match method.routed_by() {
        RoutedBy::Name => owner(json!({ "name": named })),
        RoutedBy::Uri => owner(json!({ "uri": named })),
        RoutedBy::Ref => owner(json!({"ref": {"type": "ref/prompt", "name": named}}))
            .or_else(|| owner(json!({"ref": {"type": "ref/resource", "uri": named}}))),
        RoutedBy::Nothing | RoutedBy::TaskId => None,
    }
}

/// The params as sent; none are an empty object.
fn as_sent(params: Option<&Value>) -> Cow<'_, Value> {
    params.map_or_else(
        || Cow::Owned(Value::Object(Default::default())),
        Cow::Borrowed,
    )
}

/// A tool's or a prompt's target.
fn tool_target(owner: Owner, own: &str, exposed: String, kind: Kind) -> Target {
    Target {
        kind,
        owner,
        own: own.to_owned(),
        exposed,
        template: None,
    }
}

/// The target of a URI: the server that listed it, else the first whose template matches it;
/// a renamed URI is its owner's own.
fn uri_target(catalog: &Catalog, kind: Kind, uri: &str) -> Option<Target> {
    let (owner, template) = catalog.resource_route(uri)?;
    Some(Target {
        kind,
        owner,
        own: own_uri(catalog, owner, uri),
        exposed: uri.to_owned(),
        template: template.map(|t| own_uri(catalog, owner, t)),
    })
}

/// `owner`'s own URI for `shown` (the same, unless mcpx renamed it).
fn own_uri(catalog: &Catalog, owner: Owner, shown: &str) -> String {
    catalog
        .shared_uris()
        .own_uri(owner, shown)
        .unwrap_or_else(|| shown.to_owned())
}

/// The tool a `tools/call` runs and its params as a direct call of it: a call of
/// `mcpx__call_tool` (where the caller's catalog has it) is the call of the tool it names.
fn unwrapped<'p>(
    catalog: &Catalog,
    params: Option<&'p Value>,
) -> Result<(String, Cow<'p, Value>), Unresolved> {
    let name = Method::ToolsCall.target(params).unwrap_or_default();
    let wraps = name == search::call_tool_name()
        && catalog
            .tool(name)
            .is_some_and(|route| route.owner == Owner::Builtin);
    let params = match wraps {
        true => Cow::Owned(search::called(params).map_err(Unresolved::Invalid)?),
        false => as_sent(params),
    };
    let name = Method::ToolsCall
        .target(Some(&params))
        .unwrap_or_default()
        .to_owned();
    Ok((name, params))
}
