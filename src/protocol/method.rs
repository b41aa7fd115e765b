//! The one table of MCP methods mcpx serves or asks: a request's method is parsed once, and what
//! mcpx decides by method (which eras have it, what it is routed by, what its answer holds,
//! whether it is audited or may ask the client for input, whether its modern result is
//! cacheable, which header names its target) is a property here. A new method is a row in
//! [`Method::ROWS`] and its variant; each `match` on the enum that must learn it fails to compile.
//!
//! Method names still appear as literals where mcpx writes a request of its own to a fixed method
//! (`initialize` and `server/discover` to an upstream, a login's probe) and in tests; the
//! notifications have a table of their own ([`super::notification`]).

use super::{Era, Extension};
use crate::json::Member;
use serde_json::Value;

/// An MCP request method mcpx knows, in either direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `initialize`: the legacy handshake.
    Initialize,
    /// `ping`, either way.
    Ping,
    /// `server/discover`: what a modern server offers, in place of a handshake.
    ServerDiscover,
    /// `subscriptions/listen`: a modern client's stream of notifications.
    SubscriptionsListen,
    /// `tools/list`.
    ToolsList,
    /// `tools/call`.
    ToolsCall,
    /// `prompts/list`.
    PromptsList,
    /// `prompts/get`.
    PromptsGet,
    /// `resources/list`.
    ResourcesList,
    /// `resources/templates/list`.
    ResourcesTemplatesList,
    /// `resources/read`.
    ResourcesRead,
    /// `resources/subscribe`: legacy only (a modern client listens).
    ResourcesSubscribe,
    /// `resources/unsubscribe`: legacy only.
    ResourcesUnsubscribe,
    /// `completion/complete`.
    CompletionComplete,
    /// `logging/setLevel`: legacy only (a modern request carries its level).
    LoggingSetLevel,
    /// `sampling/createMessage`: a server asks the client's model.
    SamplingCreateMessage,
    /// `elicitation/create`: a server asks the user.
    ElicitationCreate,
    /// `roots/list`: a server asks for the client's roots.
    RootsList,
    /// `skills/list` (Skills): the merged list of skills.
    SkillsList,
    /// `skills/get` (Skills): one skill, by its entry URI.
    SkillsGet,
    /// `resources/directory/read` (Skills): a skill directory's files.
    ResourcesDirectoryRead,
    /// `tasks/get`: a task's state (2025-11-25; the Tasks extension's, inlining its outcome).
    TasksGet,
    /// `tasks/result` (2025-11-25 only): waits for a task's outcome, carrying its questions.
    TasksResult,
    /// `tasks/list` (2025-11-25 only).
    TasksList,
    /// `tasks/cancel`: 2025-11-25's final `cancelled`, or the extension's cooperative ack.
    TasksCancel,
    /// `tasks/update` (the Tasks extension only): answers to a task's input requests.
    TasksUpdate,
    /// `events/list` (Events): the merged event types.
    EventsList,
    /// `events/poll` (Events): one event type's occurrences since a cursor.
    EventsPoll,
    /// `events/stream` (Events): one event type's occurrences pushed as notifications on a
    /// request that stays open.
    EventsStream,
    /// `events/subscribe` (Events): webhook delivery to a callback.
    EventsSubscribe,
    /// `events/unsubscribe` (Events): a webhook subscription ended.
    EventsUnsubscribe,
}

/// What a server may ask its client, mid-call: the methods [`Side::Server`] sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Question {
    /// `sampling/createMessage`: the client's model.
    Sampling,
    /// `elicitation/create`: the user.
    Elicitation,
    /// `roots/list`: the client's roots.
    Roots,
}

impl Question {
    /// The method that asks it.
    pub fn method(self) -> Method {
        match self {
            Question::Sampling => SamplingCreateMessage,
            Question::Elicitation => ElicitationCreate,
            Question::Roots => RootsList,
        }
    }

    /// Its method's name on the wire.
    pub fn as_str(self) -> &'static str {
        self.method().as_str()
    }

    /// A short name for it: its capability's key, and an `inputRequests` key's stem.
    pub fn short_name(self) -> &'static str {
        match self {
            Question::Sampling => "sampling",
            Question::Elicitation => "elicitation",
            Question::Roots => "roots",
        }
    }
}

impl std::fmt::Display for Question {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request about a task, named by its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TaskRequest {
    /// `tasks/get`.
    Get,
    /// `tasks/result` (2025-11-25).
    Result,
    /// `tasks/list` (2025-11-25).
    List,
    /// `tasks/cancel`.
    Cancel,
    /// `tasks/update` (the Tasks extension).
    Update,
}

impl TaskRequest {
    /// The method that makes it.
    pub fn method(self) -> Method {
        match self {
            TaskRequest::Get => TasksGet,
            TaskRequest::Result => TasksResult,
            TaskRequest::List => TasksList,
            TaskRequest::Cancel => TasksCancel,
            TaskRequest::Update => TasksUpdate,
        }
    }
}

/// Which eras define a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Eras {
    /// 2024-11-05 to 2025-11-25 only.
    Legacy,
    /// 2026-07-28 only.
    Modern,
    /// Every revision.
    Both,
}

impl Eras {
    /// Whether a revision of `era` is among them.
    pub fn include(self, era: Era) -> bool {
        matches!(
            (self, era),
            (Eras::Both, _) | (Eras::Legacy, Era::Legacy) | (Eras::Modern, Era::Modern)
        )
    }
}

/// Who sends a method's requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// A client asks a server (mcpx serves these, and sends them upstream).
    Client,
    /// A server asks a client (an upstream asks mcpx, which asks its own client).
    Server,
    /// Either side (`ping`).
    Either,
}

/// What in a request's params says where it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoutedBy {
    /// Nothing: answered by mcpx or from the merged catalog.
    Nothing,
    /// `params.name`: a tool or a prompt.
    Name,
    /// `params.uri`: a resource.
    Uri,
    /// `params.ref`: a prompt's name or a resource template's URI.
    Ref,
    /// `params.taskId`: a task, whose sealed id names its upstream.
    TaskId,
}

/// What a request's answer holds, for what reads it on its way out (the guardrails, the
/// response hooks, a tool result's budget).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultKind {
    /// A tool's result, of its call (`tools/call`).
    ToolResult,
    /// A tool's result, read by its task's id (`tasks/result`): it names no tool.
    TaskResult,
    /// A task's state, which may hold its tool's result inline (`tasks/get`).
    TaskState,
    /// A prompt's messages (`prompts/get`).
    Prompt,
    /// A resource's contents (`resources/read`).
    Resource,
    /// Anything else: a list, a completion, a skill, an event's page, an acknowledgement.
    Other,
}

/// One row of the table.
struct Row {
    method: Method,
    name: &'static str,
    eras: Eras,
    sender: Side,
    /// What its answer holds.
    result_kind: ResultKind,
    routed_by: RoutedBy,
    /// Recorded by the audit log, with its arguments.
    audited: bool,
    /// Its upstream may ask the client for input while it runs (sampling, elicitation).
    may_ask: bool,
    /// A 2026-07-28 result of it is a `CacheableResult`.
    cacheable: bool,
    /// The array its `*/list` result holds.
    list_key: Option<&'static str>,
    /// The trace attribute that names its target (OpenTelemetry's MCP conventions).
    span_attribute: Option<&'static str>,
    /// The extension that defines it (`None`: the base protocol).
    extension: Option<Extension>,
}

impl Row {
    /// A client's request of the base protocol in every era, answered by mcpx itself.
    const fn base(method: Method, name: &'static str) -> Row {
        Row {
            method,
            name,
            eras: Eras::Both,
            sender: Side::Client,
            result_kind: ResultKind::Other,
            routed_by: RoutedBy::Nothing,
            audited: false,
            may_ask: false,
            cacheable: false,
            list_key: None,
            span_attribute: None,
            extension: None,
        }
    }

    /// A merged list, answered a page at a time from the catalog.
    const fn list(method: Method, name: &'static str, key: &'static str) -> Row {
        Row {
            cacheable: true,
            list_key: Some(key),
            ..Row::base(method, name)
        }
    }

    /// A call routed to the upstream owning what it names, which may ask for input on the way.
    const fn call(method: Method, name: &'static str, routed_by: RoutedBy) -> Row {
        Row {
            routed_by,
            audited: true,
            may_ask: true,
            ..Row::base(method, name)
        }
    }

    /// A request a server sends its client.
    const fn ask(method: Method, name: &'static str) -> Row {
        Row {
            sender: Side::Server,
            ..Row::base(method, name)
        }
    }

    /// A request about a task, routed by its id: base protocol in 2025-11-25, the Tasks
    /// extension's in 2026-07-28.
    const fn task(method: Method, name: &'static str) -> Row {
        Row {
            routed_by: RoutedBy::TaskId,
            extension: Some(Extension::Tasks),
            ..Row::base(method, name)
        }
    }

    /// A request of the Events extension (2026-07-28), routed to the upstream whose event type
    /// it names: audited like a call, but never asking the client anything.
    const fn event(method: Method, name: &'static str) -> Row {
        Row {
            routed_by: RoutedBy::Name,
            audited: true,
            extension: Some(Extension::Events),
            ..Row::base(method, name)
        }
        .eras(Eras::Modern)
    }

    const fn eras(self, eras: Eras) -> Row {
        Row { eras, ..self }
    }
}

use Method::*;

impl Method {
    /// Every method and its properties, in the order the specification lists them, then the
    /// extensions' methods.
    const ROWS: [Row; 31] = [
        Row::base(Initialize, "initialize").eras(Eras::Legacy),
        // 2026-07-28 has no `ping`: every request stands alone.
        Row {
            sender: Side::Either,
            ..Row::base(Ping, "ping")
        }
        .eras(Eras::Legacy),
        Row {
            cacheable: true,
            ..Row::base(ServerDiscover, "server/discover")
        }
        .eras(Eras::Modern),
        Row::base(SubscriptionsListen, "subscriptions/listen").eras(Eras::Modern),
        Row::list(ToolsList, "tools/list", "tools"),
        Row {
            span_attribute: Some("gen_ai.tool.name"),
            result_kind: ResultKind::ToolResult,
            ..Row::call(ToolsCall, "tools/call", RoutedBy::Name)
        },
        Row::list(PromptsList, "prompts/list", "prompts"),
        Row {
            span_attribute: Some("gen_ai.prompt.name"),
            result_kind: ResultKind::Prompt,
            ..Row::call(PromptsGet, "prompts/get", RoutedBy::Name)
        },
        Row::list(ResourcesList, "resources/list", "resources"),
        Row::list(
            ResourcesTemplatesList,
            "resources/templates/list",
            "resourceTemplates",
        ),
        Row {
            cacheable: true,
            span_attribute: Some("mcp.resource.uri"),
            result_kind: ResultKind::Resource,
            ..Row::call(ResourcesRead, "resources/read", RoutedBy::Uri)
        },
        Row {
            routed_by: RoutedBy::Uri,
            ..Row::base(ResourcesSubscribe, "resources/subscribe")
        }
        .eras(Eras::Legacy),
        Row::base(ResourcesUnsubscribe, "resources/unsubscribe").eras(Eras::Legacy),
        Row {
            routed_by: RoutedBy::Ref,
            ..Row::base(CompletionComplete, "completion/complete")
        },
        Row::base(LoggingSetLevel, "logging/setLevel").eras(Eras::Legacy),
        Row::ask(SamplingCreateMessage, "sampling/createMessage"),
        Row::ask(ElicitationCreate, "elicitation/create"),
        Row::ask(RootsList, "roots/list"),
        Row {
            extension: Some(Extension::Skills),
            ..Row::list(SkillsList, "skills/list", "skills")
        },
        Row {
            extension: Some(Extension::Skills),
            cacheable: true,
            may_ask: false,
            ..Row::call(SkillsGet, "skills/get", RoutedBy::Uri)
        },
        Row {
            extension: Some(Extension::Skills),
            may_ask: false,
            ..Row::call(
                ResourcesDirectoryRead,
                "resources/directory/read",
                RoutedBy::Uri,
            )
        },
        Row {
            result_kind: ResultKind::TaskState,
            ..Row::task(TasksGet, "tasks/get")
        },
        Row {
            may_ask: true,
            result_kind: ResultKind::TaskResult,
            ..Row::task(TasksResult, "tasks/result")
        }
        .eras(Eras::Legacy),
        Row::task(TasksList, "tasks/list").eras(Eras::Legacy),
        Row::task(TasksCancel, "tasks/cancel"),
        Row::task(TasksUpdate, "tasks/update").eras(Eras::Modern),
        Row {
            extension: Some(Extension::Events),
            cacheable: false,
            ..Row::list(EventsList, "events/list", "events")
        }
        .eras(Eras::Modern),
        Row::event(EventsPoll, "events/poll"),
        Row::event(EventsStream, "events/stream"),
        Row::event(EventsSubscribe, "events/subscribe"),
        Row::event(EventsUnsubscribe, "events/unsubscribe"),
    ];

    fn row(self) -> &'static Row {
        // The rows are in the variants' order (checked by a test), so this is an index.
        &Self::ROWS[self as usize]
    }

    /// The method a request names; `None` for one mcpx does not know (a client may send any
    /// string).
    pub fn parse(name: &str) -> Option<Method> {
        Self::ROWS.iter().find(|r| r.name == name).map(|r| r.method)
    }

    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        self.row().name
    }

    /// What it asks a client, if it is a server's question. Every method decides here, so a new
    /// one is a compile error until it says whether a server may ask it.
    pub fn question(self) -> Option<Question> {
        match self {
            SamplingCreateMessage => Some(Question::Sampling),
            ElicitationCreate => Some(Question::Elicitation),
            RootsList => Some(Question::Roots),
            Initialize
            | Ping
            | ServerDiscover
            | SubscriptionsListen
            | ToolsList
            | ToolsCall
            | PromptsList
            | PromptsGet
            | ResourcesList
            | ResourcesTemplatesList
            | ResourcesRead
            | ResourcesSubscribe
            | ResourcesUnsubscribe
            | CompletionComplete
            | LoggingSetLevel
            | SkillsList
            | SkillsGet
            | ResourcesDirectoryRead
            | TasksGet
            | TasksResult
            | TasksList
            | TasksCancel
            | TasksUpdate
            | EventsList
            | EventsPoll
            | EventsStream
            | EventsSubscribe
            | EventsUnsubscribe => None,
        }
    }

    /// What it asks of a task, if it is a request about one.
    pub fn task_request(self) -> Option<TaskRequest> {
        match self {
            TasksGet => Some(TaskRequest::Get),
            TasksResult => Some(TaskRequest::Result),
            TasksList => Some(TaskRequest::List),
            TasksCancel => Some(TaskRequest::Cancel),
            TasksUpdate => Some(TaskRequest::Update),
            Initialize
            | Ping
            | ServerDiscover
            | SubscriptionsListen
            | ToolsList
            | ToolsCall
            | PromptsList
            | PromptsGet
            | ResourcesList
            | ResourcesTemplatesList
            | ResourcesRead
            | ResourcesSubscribe
            | ResourcesUnsubscribe
            | CompletionComplete
            | LoggingSetLevel
            | SamplingCreateMessage
            | ElicitationCreate
            | RootsList
            | SkillsList
            | SkillsGet
            | ResourcesDirectoryRead
            | EventsList
            | EventsPoll
            | EventsStream
            | EventsSubscribe
            | EventsUnsubscribe => None,
        }
    }

    /// Whether a revision of `era` defines it.
    pub fn in_era(self, era: Era) -> bool {
        self.row().eras.include(era)
    }

    /// Which eras define it.
    pub fn eras(self) -> Eras {
        self.row().eras
    }

    /// Who sends its requests.
    pub fn sender(self) -> Side {
        self.row().sender
    }

    /// What its answer holds.
    pub fn result_kind(self) -> ResultKind {
        self.row().result_kind
    }

    /// What in its params says where it goes.
    pub fn routed_by(self) -> RoutedBy {
        self.row().routed_by
    }

    /// Whether the audit log records it.
    pub fn is_audited(self) -> bool {
        self.row().audited
    }

    /// Whether its upstream may ask the client for input while it runs.
    pub fn may_ask(self) -> bool {
        self.row().may_ask
    }

    /// Whether its 2026-07-28 result is a `CacheableResult` (`ttlMs`, `cacheScope`).
    pub fn is_cacheable(self) -> bool {
        self.row().cacheable
    }

    /// The trace attribute that names what it calls, if it names something a trace shows.
    pub fn span_attribute(self) -> Option<&'static str> {
        self.row().span_attribute
    }

    /// The array a `*/list` result of it holds; `None` for anything but a list.
    pub fn list_key(self) -> Option<&'static str> {
        self.row().list_key
    }

    /// The extension that defines it in `era`; `None` for the base protocol (2025-11-25 has
    /// tasks in its own; 2026-07-28 moved them to an extension).
    pub fn extension_in(self, era: Era) -> Option<Extension> {
        match (self.row().extension, era) {
            (Some(Extension::Tasks), Era::Legacy) => None,
            (extension, _) => extension,
        }
    }

    /// Whether 2026-07-28's `Mcp-Name` header mirrors its target: the name of a tool called or
    /// a prompt got, the URI of a resource read.
    pub fn names_in_header(self) -> bool {
        matches!(
            self,
            ToolsCall | PromptsGet | ResourcesRead | TasksGet | TasksUpdate | TasksCancel
        )
    }

    /// What a request of it names, by [`Method::routed_by`]: a tool's or prompt's name, a
    /// resource's URI, a completion reference's name or URI. `None` when it names nothing or
    /// its params lack a string there.
    pub fn target(self, params: Option<&Value>) -> Option<&str> {
        let params = params?;
        match self.routed_by() {
            RoutedBy::Nothing => None,
            RoutedBy::Name => field(params, "name"),
            RoutedBy::TaskId => field(params, "taskId"),
            RoutedBy::Uri => field(params, "uri"),
            RoutedBy::Ref => {
                let reference = params.member("ref")?;
                field(reference, "name").or_else(|| field(reference, "uri"))
            }
        }
    }

    /// Every method, in the table's order.
    pub fn all() -> impl Iterator<Item = Method> {
        Self::ROWS.iter().map(|r| r.method)
    }
}

/// `value[key]` when it is a string.
fn field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.member(key)?.as_str()
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod every_revision {
    mod method {
        use crate::protocol::method::{Method, ResultKind, RoutedBy, Side};
        use crate::protocol::{Era, Extension};
        use serde_json::{json, Value};
        use std::collections::BTreeSet;

        /// Each result the door reads for what it is (a tool's, a task's, a prompt's, a
        /// resource's) is one method's; everything else is `Other`.
        #[test]
        fn each_kind_of_result_is_one_methods() {
            let kinds = [
                (ResultKind::ToolResult, Method::ToolsCall),
                (ResultKind::TaskResult, Method::TasksResult),
                (ResultKind::TaskState, Method::TasksGet),
                (ResultKind::Prompt, Method::PromptsGet),
                (ResultKind::Resource, Method::ResourcesRead),
            ];
            for method in Method::all() {
                let expected = kinds.iter().find(|(_, m)| *m == method);
                let expected = expected.map_or(ResultKind::Other, |(kind, _)| *kind);
                assert_eq!(method.result_kind(), expected, "{method}");
            }
        }

        #[test]
        fn each_row_sits_at_its_variant_and_parses_back() {
            for (index, method) in Method::all().enumerate() {
                assert_eq!(method as usize, index, "{method}");
                assert_eq!(Method::parse(method.as_str()), Some(method));
            }
            assert_eq!(Method::parse("tools/cal"), None);
            assert_eq!(Method::parse("notifications/cancelled"), None);
        }

        /// The requests a revision's schema defines.
        fn requests_of(revision: &str) -> BTreeSet<String> {
            let path = format!(
                "{}/tests/spec/{revision}/schema.json",
                env!("CARGO_MANIFEST_DIR")
            );
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            let schema: Value = serde_json::from_str(&text).unwrap();
            let definitions = schema
                .get("definitions")
                .or_else(|| schema.get("$defs"))
                .and_then(Value::as_object)
                .unwrap();
            definitions
                .iter()
                .filter(|(name, _)| name.ends_with("Request"))
                .filter_map(|(_, d)| d["properties"]["method"]["const"].as_str())
                .filter(|m| !m.starts_with("notifications/"))
                .map(str::to_owned)
                .collect()
        }

        /// The base protocol's rows of `era` (an extension's are not in the revisions' schemas).
        fn table_of(era: Era) -> BTreeSet<String> {
            Method::all()
                .filter(|m| m.in_era(era) && m.extension_in(era).is_none())
                .map(|m| m.as_str().to_owned())
                .collect()
        }

        /// The table holds every request of every revision's schema, in the eras that define
        /// it, and the newest revision of each era defines every row of that era.
        #[test]
        fn the_table_is_the_schemas_requests_era_by_era() {
            for revision in ["2024-11-05", "2025-03-26", "2025-06-18"] {
                let missing: Vec<_> = requests_of(revision)
                    .difference(&table_of(Era::Legacy))
                    .cloned()
                    .collect();
                assert!(missing.is_empty(), "{revision}: {missing:?}");
            }
            assert_eq!(requests_of("2025-11-25"), table_of(Era::Legacy));
            assert_eq!(requests_of("2026-07-28"), table_of(Era::Modern));
        }

        #[test]
        fn calls_are_routed_audited_and_may_ask_lists_are_cacheable() {
            assert_eq!(Method::ToolsCall.routed_by(), RoutedBy::Name);
            assert!(Method::ToolsCall.is_audited() && Method::ToolsCall.may_ask());
            assert!(!Method::ToolsCall.is_cacheable());
            assert!(Method::ResourcesRead.is_cacheable() && Method::ResourcesRead.may_ask());
            assert_eq!(Method::ToolsList.list_key(), Some("tools"));
            assert!(Method::ToolsList.is_cacheable());
            assert!(!Method::CompletionComplete.is_audited());
            assert_eq!(Method::ElicitationCreate.sender(), Side::Server);
            assert!(!Method::ServerDiscover.in_era(Era::Legacy));
            assert!(!Method::Initialize.in_era(Era::Modern));
            for skills in [
                Method::SkillsList,
                Method::SkillsGet,
                Method::ResourcesDirectoryRead,
            ] {
                assert_eq!(skills.extension_in(Era::Modern), Some(Extension::Skills));
            }
            assert_eq!(Method::SkillsGet.routed_by(), RoutedBy::Uri);
            assert!(Method::SkillsList.is_cacheable() && Method::SkillsGet.is_cacheable());
            // Tasks are 2025-11-25's own, and an extension's in 2026-07-28.
            assert_eq!(Method::TasksGet.extension_in(Era::Legacy), None);
            assert_eq!(
                Method::TasksGet.extension_in(Era::Modern),
                Some(Extension::Tasks)
            );
            assert!(
                !Method::TasksResult.in_era(Era::Modern) && !Method::TasksList.in_era(Era::Modern)
            );
            assert!(!Method::TasksUpdate.in_era(Era::Legacy));
            let get = json!({"taskId": "t1"});
            assert_eq!(Method::TasksGet.target(Some(&get)), Some("t1"));
            assert!(
                Method::TasksCancel.names_in_header() && !Method::TasksResult.names_in_header()
            );
        }

        #[test]
        fn the_target_is_the_name_the_uri_or_the_reference() {
            let call = json!({"name": "a__echo", "uri": "x"});
            assert_eq!(Method::ToolsCall.target(Some(&call)), Some("a__echo"));
            assert_eq!(
                Method::ResourcesRead.target(Some(&json!({"uri": "file:///x"}))),
                Some("file:///x")
            );
            let reference = json!({"ref": {"type": "ref/resource", "uri": "db://{t}"}});
            assert_eq!(
                Method::CompletionComplete.target(Some(&reference)),
                Some("db://{t}")
            );
            assert_eq!(Method::ToolsList.target(Some(&call)), None);
            assert_eq!(Method::ToolsCall.target(Some(&json!({"name": 5}))), None);
            assert_eq!(Method::ToolsCall.target(None), None);
            assert!(Method::ResourcesRead.names_in_header());
            assert!(!Method::CompletionComplete.names_in_header());
        }
    }
}
