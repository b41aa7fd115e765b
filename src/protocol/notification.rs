//! The table of MCP notifications mcpx sends, forwards or acts on, beside the method table
//! ([`super::method`]): a notification's name is written here once, and what mcpx decides by
//! notification (which eras have it, who sends it, which extension defines it) is a property
//! here. A new notification is a row in [`Notice::ROWS`] and its variant.

use super::method::{Eras, Side};
use super::{Era, Extension};

/// An MCP notification mcpx knows, in either direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Notice {
    /// `notifications/initialized`: a legacy client's handshake is done.
    Initialized,
    /// `notifications/cancelled`: a request is abandoned, either way.
    Cancelled,
    /// `notifications/progress`: a request's progress, either way.
    Progress,
    /// `notifications/message`: a server's log message.
    Message,
    /// `notifications/tools/list_changed`.
    ToolsListChanged,
    /// `notifications/prompts/list_changed`.
    PromptsListChanged,
    /// `notifications/resources/list_changed`.
    ResourcesListChanged,
    /// `notifications/resources/updated`: a subscribed resource changed.
    ResourcesUpdated,
    /// `notifications/roots/list_changed`: a legacy client's roots changed.
    RootsListChanged,
    /// `notifications/subscriptions/acknowledged`: a modern listen is in place.
    SubscriptionsAcknowledged,
    /// `notifications/elicitation/complete` (2025-11-25): a URL elicitation is done.
    ElicitationComplete,
    /// `notifications/tasks/status` (2025-11-25): a task's new status.
    TasksStatus,
    /// `notifications/tasks` (the Tasks extension): the task as `tasks/get` would show it.
    Tasks,
    /// `notifications/events/list_changed` (Events): the event types changed.
    EventsListChanged,
    /// `notifications/events/active` (Events): a stream's subscription is in place, from a
    /// cursor (again, after a gap, `truncated`).
    EventsActive,
    /// `notifications/events/event` (Events): an occurrence on a stream.
    EventsEvent,
    /// `notifications/events/heartbeat` (Events): a stream is alive, checked up to a cursor.
    EventsHeartbeat,
    /// `notifications/events/error` (Events): a stream's upstream failed for now.
    EventsError,
    /// `notifications/events/terminated` (Events): a stream's subscription ended.
    EventsTerminated,
}

/// A frame of an `events/stream`: one of the Events extension's notifications a stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFrame {
    /// `notifications/events/active`: the subscription is in place.
    Active,
    /// `notifications/events/event`: an occurrence.
    Event,
    /// `notifications/events/heartbeat`: the stream is alive.
    Heartbeat,
    /// `notifications/events/error`: its upstream failed for now.
    Error,
    /// `notifications/events/terminated`: the subscription ended.
    Terminated,
}

/// One row of the table.
struct Row {
    notice: Notice,
    name: &'static str,
    eras: Eras,
    sender: Side,
    /// The extension that defines it (`None`: the base protocol).
    extension: Option<Extension>,
}

impl Row {
    /// A server's notification of the base protocol in every era.
    const fn server(notice: Notice, name: &'static str) -> Row {
        Row {
            notice,
            name,
            eras: Eras::Both,
            sender: Side::Server,
            extension: None,
        }
    }

    /// A server's notification of the Events extension (2026-07-28).
    const fn event(notice: Notice, name: &'static str) -> Row {
        Row {
            extension: Some(Extension::Events),
            ..Row::server(notice, name).eras(Eras::Modern)
        }
    }

    const fn eras(self, eras: Eras) -> Row {
        Row { eras, ..self }
    }

    const fn sender(self, sender: Side) -> Row {
        Row { sender, ..self }
    }
}

use Notice::*;

impl Notice {
    /// Every notification and its properties, in the variants' order.
    const ROWS: [Row; 19] = [
        Row::server(Initialized, "notifications/initialized")
            .sender(Side::Client)
            .eras(Eras::Legacy),
        Row::server(Cancelled, "notifications/cancelled").sender(Side::Either),
        Row::server(Progress, "notifications/progress").sender(Side::Either),
        Row::server(Message, "notifications/message"),
        Row::server(ToolsListChanged, "notifications/tools/list_changed"),
        Row::server(PromptsListChanged, "notifications/prompts/list_changed"),
        Row::server(ResourcesListChanged, "notifications/resources/list_changed"),
        Row::server(ResourcesUpdated, "notifications/resources/updated"),
        Row::server(RootsListChanged, "notifications/roots/list_changed")
            .sender(Side::Client)
            .eras(Eras::Legacy),
        Row::server(
            SubscriptionsAcknowledged,
            "notifications/subscriptions/acknowledged",
        )
        .eras(Eras::Modern),
        Row::server(ElicitationComplete, "notifications/elicitation/complete").eras(Eras::Legacy),
        Row::server(TasksStatus, "notifications/tasks/status").eras(Eras::Legacy),
        Row {
            extension: Some(Extension::Tasks),
            ..Row::server(Tasks, "notifications/tasks").eras(Eras::Modern)
        },
        Row::event(EventsListChanged, "notifications/events/list_changed"),
        Row::event(EventsActive, "notifications/events/active"),
        Row::event(EventsEvent, "notifications/events/event"),
        Row::event(EventsHeartbeat, "notifications/events/heartbeat"),
        Row::event(EventsError, "notifications/events/error"),
        Row::event(EventsTerminated, "notifications/events/terminated"),
    ];

    fn row(self) -> &'static Row {
        // The rows are in the variants' order (checked by a test), so this is an index.
        &Self::ROWS[self as usize]
    }

    /// The notification a message names; `None` for one mcpx does not know (a peer may send
    /// any string, and mcpx passes on what it does not act on).
    pub fn parse(name: &str) -> Option<Notice> {
        Self::ROWS.iter().find(|r| r.name == name).map(|r| r.notice)
    }

    /// Its name on the wire.
    pub fn as_str(self) -> &'static str {
        self.row().name
    }

    /// Whether a revision of `era` defines it.
    pub fn in_era(self, era: Era) -> bool {
        self.row().eras.include(era)
    }

    /// Who sends it.
    pub fn sender(self) -> Side {
        self.row().sender
    }

    /// The extension that defines it; `None` for the base protocol.
    pub fn extension(self) -> Option<Extension> {
        self.row().extension
    }

    /// Which frame of an `events/stream` it is, if it is one. Every notification decides
    /// here, so a new one is a compile error until it says.
    pub fn stream_frame(self) -> Option<StreamFrame> {
        match self {
            EventsActive => Some(StreamFrame::Active),
            EventsEvent => Some(StreamFrame::Event),
            EventsHeartbeat => Some(StreamFrame::Heartbeat),
            EventsError => Some(StreamFrame::Error),
            EventsTerminated => Some(StreamFrame::Terminated),
            Initialized
            | Cancelled
            | Progress
            | Message
            | ToolsListChanged
            | PromptsListChanged
            | ResourcesListChanged
            | ResourcesUpdated
            | RootsListChanged
            | SubscriptionsAcknowledged
            | ElicitationComplete
            | TasksStatus
            | Tasks
            | EventsListChanged => None,
        }
    }
}

impl From<Notice> for String {
    fn from(notice: Notice) -> String {
        notice.as_str().to_owned()
    }
}

impl PartialEq<Notice> for &str {
    fn eq(&self, notice: &Notice) -> bool {
        *self == notice.as_str()
    }
}

impl PartialEq<Notice> for str {
    fn eq(&self, notice: &Notice) -> bool {
        self == notice.as_str()
    }
}

impl PartialEq<Notice> for String {
    fn eq(&self, notice: &Notice) -> bool {
        self == notice.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn the_rows_are_in_the_variants_order_and_every_name_parses_back() {
        for (i, row) in Notice::ROWS.iter().enumerate() {
            assert_eq!(row.notice as usize, i, "{}", row.name);
            assert_eq!(Notice::parse(row.name), Some(row.notice));
            assert!(row.name.starts_with("notifications/"));
        }
        assert_eq!(Notice::parse("tools/list"), None);
    }

    #[test]
    fn the_eras_follow_the_schemas() {
        assert!(
            Notice::Initialized.in_era(Era::Legacy) && !Notice::Initialized.in_era(Era::Modern)
        );
        assert!(Notice::SubscriptionsAcknowledged.in_era(Era::Modern));
        assert!(!Notice::SubscriptionsAcknowledged.in_era(Era::Legacy));
        assert!(Notice::Progress.in_era(Era::Legacy) && Notice::Progress.in_era(Era::Modern));
        assert_eq!(Notice::Tasks.extension(), Some(Extension::Tasks));
        assert_eq!(Notice::Cancelled.sender(), Side::Either);
    }

    /// The notifications a revision's schema defines.
    fn notifications_of(revision: &str) -> BTreeSet<String> {
        let path = format!(
            "{}/tests/spec/{revision}/schema.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let schema: serde_json::Value = serde_json::from_str(&text).unwrap();
        let definitions = schema
            .get("definitions")
            .or_else(|| schema.get("$defs"))
            .and_then(serde_json::Value::as_object)
            .unwrap();
        definitions
            .values()
            .filter_map(|d| d["properties"]["method"]["const"].as_str())
            .filter(|m| m.starts_with("notifications/"))
            .map(str::to_owned)
            .collect()
    }

    /// The base protocol's rows of `era` (an extension's are not in the revisions' schemas).
    fn table_of(era: Era) -> BTreeSet<String> {
        Notice::ROWS
            .iter()
            .filter(|r| r.extension.is_none() && r.eras.include(era))
            .map(|r| r.name.to_owned())
            .collect()
    }

    /// Every notification of every revision's schema is a row, in the eras that define it, and
    /// the newest revision of each era defines every row of that era.
    #[test]
    fn the_table_is_the_schemas_notifications_era_by_era() {
        for revision in ["2024-11-05", "2025-03-26", "2025-06-18"] {
            let missing: Vec<_> = notifications_of(revision)
                .difference(&table_of(Era::Legacy))
                .cloned()
                .collect();
            assert!(missing.is_empty(), "{revision}: {missing:?}");
        }
        assert_eq!(notifications_of("2025-11-25"), table_of(Era::Legacy));
        assert_eq!(notifications_of("2026-07-28"), table_of(Era::Modern));
    }
}
