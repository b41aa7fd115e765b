//! Drawing the console: the tabs, the current view's table, the detail pane, the help and the
//! picker, from the state in [`super::App`].

use super::{App, View, ViewRow, VIEWS};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Row, Table, Tabs, Wrap};
use ratatui::Frame;

impl App {
    /// The rows of the current view, filtered.
    pub(super) fn rows(&self) -> Vec<ViewRow> {
        let Some(snapshot) = &self.snapshot else {
            return Vec::new();
        };
        let seconds = |ms: u64| format!("{:.1}s", ms as f64 / 1000.0);
        let rows: Vec<ViewRow> = match self.view {
            View::Upstreams => snapshot
                .upstreams
                .iter()
                .enumerate()
                .map(|(i, u)| ViewRow {
                    key: i as u64,
                    name: Some(u.name.clone()),
                    cells: vec![
                        u.name.clone(),
                        // A per-identity server's people's instances: whose, in the detail.
                        match u.instances.len() {
                            0 => u.state.clone(),
                            running => format!("{} · {running} people's instances", u.state),
                        },
                        u.revision.clone().unwrap_or_default(),
                        format!("{}/{}/{}", u.tools, u.prompts, u.resources),
                        u.restarts.to_string(),
                        match &u.sandbox {
                            None => "-".into(),
                            Some(s) if s.is_degraded() => "DEGRADED".into(),
                            Some(_) => "confined".into(),
                        },
                    ],
                    detail: serde_json::to_string_pretty(u).unwrap_or_default(),
                })
                .collect(),
            View::Sessions => snapshot
                .sessions
                .iter()
                .map(|s| ViewRow {
                    key: s.key,
                    name: s.id.clone(),
                    cells: vec![
                        format!("#{}", s.key),
                        s.transport.clone(),
                        s.client
                            .as_ref()
                            .and_then(|c| c["name"].as_str())
                            .unwrap_or("-")
                            .to_owned(),
                        s.revision.clone().unwrap_or_default(),
                        seconds(s.idle_ms),
                        [
                            s.caller.clone(),
                            s.profile.as_deref().map(|p| format!("profile {p}")),
                            s.id.as_deref().map(mcpx::view::short_session_id),
                            s.editor_pid.map(|pid| format!("editor pid {pid}")),
                        ]
                        .into_iter()
                        .flatten()
                        .collect::<Vec<_>>()
                        .join(" · "),
                    ],
                    detail: {
                        let mut shown = s.clone();
                        shown.id = s.id.as_deref().map(mcpx::view::short_session_id);
                        serde_json::to_string_pretty(&shown).unwrap_or_default()
                    },
                })
                .collect(),
            View::Streams => snapshot
                .streams
                .iter()
                .map(|s| ViewRow {
                    key: s.session,
                    name: None,
                    cells: vec![
                        format!("#{}", s.session),
                        s.kind.clone(),
                        s.events.to_string(),
                        seconds(s.age_ms),
                        s.filter.join(" "),
                    ],
                    detail: serde_json::to_string_pretty(s).unwrap_or_default(),
                })
                .collect(),
            View::Requests => snapshot
                .requests
                .iter()
                .map(|r| ViewRow {
                    key: r.key,
                    name: None,
                    cells: vec![
                        format!("#{}", r.key),
                        r.transport.clone(),
                        r.method.clone(),
                        r.target.clone().unwrap_or_default(),
                        r.upstream.clone().unwrap_or_default(),
                        r.caller.clone(),
                        seconds(r.age_ms),
                        r.progress.to_string(),
                    ],
                    detail: serde_json::to_string_pretty(r).unwrap_or_default(),
                })
                .collect(),
            View::Tasks => snapshot
                .tasks
                .iter()
                .enumerate()
                .map(|(i, t)| ViewRow {
                    key: i as u64,
                    name: Some(t.id.clone()),
                    cells: vec![
                        mcpx::view::short_task_id(&t.id),
                        t.tool.clone(),
                        format!("#{}", t.session),
                        t.status.clone(),
                        seconds(t.age_ms),
                        t.kind.clone(),
                    ],
                    detail: serde_json::to_string_pretty(t).unwrap_or_default(),
                })
                .collect(),
            View::Consents => snapshot
                .consents
                .iter()
                .enumerate()
                .map(|(i, c)| ViewRow {
                    key: i as u64,
                    name: Some(c.code.clone()),
                    cells: vec![
                        c.code.clone(),
                        c.client.clone(),
                        match c.verified {
                            true => "document".into(),
                            false => "self-registered".into(),
                        },
                        c.redirect_host.clone(),
                        c.door.clone(),
                        match c.approved {
                            true => "approved".into(),
                            false => "waiting".into(),
                        },
                        seconds(c.age_ms),
                    ],
                    detail: serde_json::to_string_pretty(c).unwrap_or_default(),
                })
                .collect(),
            View::Pins => snapshot
                .pins
                .iter()
                .enumerate()
                .map(|(i, p)| ViewRow {
                    key: i as u64,
                    name: Some(p.item.clone()),
                    cells: vec![p.server.clone(), p.item.clone(), p.state.as_str().into()],
                    // A server wrote these words: nothing in them may drive the terminal.
                    detail: [
                        mcpx::pins::diff::side_by_side(p.approved.as_ref(), p.seen.as_ref(), 48),
                        mcpx::pins::diff::render(p.approved.as_ref(), p.seen.as_ref()),
                    ]
                    .concat()
                    .lines()
                    .map(|line| mcpx::view::printable(line).into_owned() + "\n")
                    .collect(),
                })
                .collect(),
            View::Events => snapshot
                .event_subscriptions
                .iter()
                .enumerate()
                .map(|(i, e)| ViewRow {
                    key: i as u64,
                    name: Some(e.id.clone()),
                    cells: vec![
                        e.event.clone(),
                        e.person.clone(),
                        e.callback.clone(),
                        e.delivered.to_string(),
                        e.failed.to_string(),
                        seconds(e.ends_in_ms),
                    ],
                    detail: serde_json::to_string_pretty(e).unwrap_or_default(),
                })
                .collect(),
            View::Approvals => snapshot
                .approvals
                .iter()
                .enumerate()
                .map(|(i, a)| ViewRow {
                    key: i as u64,
                    name: Some(a.id.clone()),
                    // A caller wrote the arguments: nothing in them may drive the terminal.
                    cells: [&a.caller, &a.tool, &a.arguments]
                        .map(|text| mcpx::view::printable(text).into_owned())
                        .into_iter()
                        .chain([seconds(a.age_ms), seconds(a.ends_in_ms)])
                        .collect(),
                    detail: serde_json::to_string_pretty(a).unwrap_or_default(),
                })
                .collect(),
        };
        match &self.filter {
            Some(filter) if !filter.is_empty() => rows
                .into_iter()
                .filter(|r| r.cells.iter().any(|c| c.contains(filter.as_str())))
                .collect(),
            _ => rows,
        }
    }

    pub(super) fn draw(&mut self, frame: &mut Frame) {
        let [top, tabs, body, bottom] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        let profiles = self.snapshot.as_ref().map_or(String::new(), |s| {
            s.profiles
                .iter()
                .map(|p| format!("{} ({} sessions)", p.name, p.sessions))
                .collect::<Vec<_>>()
                .join(", ")
        });
        let top_line = match profiles.is_empty() {
            true => self.connection.clone(),
            false => format!("{} · profiles: {profiles}", self.connection),
        };
        frame.render_widget(Line::from(top_line).bold(), top);
        let selected = VIEWS.iter().position(|v| *v == self.view).unwrap_or(0);
        // Each view's count, by a match: a new view cannot be left without one.
        let count = |view: View| {
            let Some(s) = self.snapshot.as_ref() else {
                return 0;
            };
            match view {
                View::Upstreams => s.upstreams.len(),
                View::Sessions => s.sessions.len(),
                View::Streams => s.streams.len(),
                View::Requests => s.requests.len(),
                View::Tasks => s.tasks.len(),
                View::Consents => s.consents.len(),
                View::Pins => s.pins.len(),
                View::Events => s.event_subscriptions.len(),
                View::Approvals => s.approvals.len(),
            }
        };
        let titles: Vec<String> = VIEWS
            .iter()
            .map(|v| format!("{} ({})", v.title(), count(*v)))
            .collect();
        frame.render_widget(Tabs::new(titles).select(selected), tabs);
        let rows = self.rows();
        if self.selected() >= rows.len() && !rows.is_empty() {
            self.table.select(Some(rows.len() - 1));
        }
        let (table_area, detail_area) = if self.detail {
            let [left, right] =
                Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)])
                    .areas(body);
            (left, Some(right))
        } else {
            (body, None)
        };
        let (header, widths): (Vec<&str>, Vec<Constraint>) = match self.view {
            View::Upstreams => (
                vec!["NAME", "STATE", "REVISION", "T/P/R", "RESTARTS", "SANDBOX"],
                vec![
                    Constraint::Length(18),
                    Constraint::Min(10),
                    Constraint::Length(11),
                    Constraint::Length(10),
                    Constraint::Length(8),
                    Constraint::Length(9),
                ],
            ),
            View::Sessions => (
                vec![
                    "SESSION",
                    "TRANSPORT",
                    "CLIENT",
                    "REVISION",
                    "IDLE",
                    "CALLER · ID",
                ],
                vec![
                    Constraint::Length(8),
                    Constraint::Length(13),
                    Constraint::Length(16),
                    Constraint::Length(11),
                    Constraint::Length(8),
                    Constraint::Min(10),
                ],
            ),
            View::Streams => (
                vec!["SESSION", "KIND", "EVENTS", "AGE", "FILTER"],
                vec![
                    Constraint::Length(8),
                    Constraint::Length(7),
                    Constraint::Length(7),
                    Constraint::Length(8),
                    Constraint::Min(10),
                ],
            ),
            View::Requests => (
                vec![
                    "REQUEST", "DOOR", "METHOD", "TARGET", "UPSTREAM", "CALLER", "AGE", "PROGRESS",
                ],
                vec![
                    Constraint::Length(8),
                    Constraint::Length(13),
                    Constraint::Length(15),
                    Constraint::Min(12),
                    Constraint::Length(12),
                    Constraint::Length(16),
                    Constraint::Length(8),
                    Constraint::Length(8),
                ],
            ),
            View::Consents => (
                vec![
                    "CODE", "CLIENT", "NAMED BY", "SENDS TO", "DOOR", "STATE", "WAITED",
                ],
                vec![
                    Constraint::Length(10),
                    Constraint::Min(14),
                    Constraint::Length(16),
                    Constraint::Length(18),
                    Constraint::Min(16),
                    Constraint::Length(9),
                    Constraint::Length(8),
                ],
            ),
            View::Pins => (
                vec!["SERVER", "ITEM", "STATE"],
                vec![
                    Constraint::Length(16),
                    Constraint::Min(24),
                    Constraint::Length(10),
                ],
            ),
            View::Approvals => (
                vec!["CALLER", "TOOL", "ARGUMENTS", "WAITED", "ENDS IN"],
                vec![
                    Constraint::Length(14),
                    Constraint::Length(24),
                    Constraint::Min(24),
                    Constraint::Length(8),
                    Constraint::Length(8),
                ],
            ),
            View::Events => (
                vec!["EVENT", "FOR", "CALLBACK", "SENT", "FAILED", "ENDS IN"],
                vec![
                    Constraint::Min(16),
                    Constraint::Length(14),
                    Constraint::Min(20),
                    Constraint::Length(6),
                    Constraint::Length(6),
                    Constraint::Length(9),
                ],
            ),
            View::Tasks => (
                vec!["TASK", "TOOL", "CLIENT", "STATE", "AGE", "RUN BY"],
                vec![
                    Constraint::Length(10),
                    Constraint::Min(16),
                    Constraint::Length(8),
                    Constraint::Length(15),
                    Constraint::Length(8),
                    Constraint::Length(7),
                ],
            ),
        };
        let title = match &self.filter {
            Some(filter) => format!(" {} — filter: {filter} ", self.view.title()),
            None => format!(" {} ", self.view.title()),
        };
        let table = Table::new(rows.iter().map(|r| Row::new(r.cells.clone())), widths)
            .header(Row::new(header).style(Style::new().add_modifier(Modifier::BOLD)))
            .block(Block::bordered().title(title))
            .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED));
        frame.render_stateful_widget(table, table_area, &mut self.table);
        if let Some(area) = detail_area {
            let detail = rows
                .get(self.selected())
                .map_or(String::new(), |r| r.detail.clone());
            frame.render_widget(
                Paragraph::new(detail)
                    .wrap(Wrap { trim: false })
                    .block(Block::bordered().title(" detail ")),
                area,
            );
        }
        frame.render_widget(Line::from(self.status.clone()), bottom);
        if let Some((sockets, selected)) = &self.picker {
            let area = centered(frame.area(), 80, sockets.len() as u16 + 4);
            frame.render_widget(Clear, area);
            let lines: Vec<Line> = match sockets.is_empty() {
                true => vec![Line::from("no running mcpx found")],
                false => sockets
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let marker = if i == *selected { "> " } else { "  " };
                        Line::from(format!("{marker}{}", s.display()))
                    })
                    .collect(),
            };
            frame.render_widget(
                Paragraph::new(lines)
                    .block(Block::bordered().title(" running mcpx (Enter attaches, Esc closes) ")),
                area,
            );
        }
        if self.help {
            let area = centered(frame.area(), 60, 15);
            frame.render_widget(Clear, area);
            frame.render_widget(
                Paragraph::new(HELP).block(Block::bordered().title(" keys ")),
                area,
            );
        }
    }
}

const HELP: &str = "1-9, Tab, h/l  switch view\n\
j/k, arrows    move\n\
Enter          detail pane\n\
/              filter (Enter keeps, Esc clears)\n\
c              cancel the selected request or task\n\
p              pick another running mcpx\n\
d              end the selected HTTP session\n\
r              restart the selected upstream\n\
L              log in to the selected upstream\n\
a              approve the selected client's consent, or pinned change\n\
r (Pins)       reject the selected pinned change\n\
a/d (Approvals) approve or deny the selected call\n\
q              quit\n\
(any key closes this help)";

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let width = width.min(area.width);
    let height = height.min(area.height);
    Rect::new(
        area.x + (area.width - width) / 2,
        area.y + (area.height - height) / 2,
        width,
        height,
    )
}
