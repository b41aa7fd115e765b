//! `mcpx-tui`: the admin console of mcpx. It attaches to a running mcpx's admin socket, shows
//! its upstreams, sessions, streams and requests in flight as they change, and acts on them:
//! cancel a request, end a session, restart an upstream.
//!
//! One thread holds a `watch` on the socket and feeds snapshots to the drawing loop; it
//! reconnects when mcpx restarts. Commands go over a connection of their own. ratatui's
//! `init` restores the terminal on panic, and `main` restores it on every other exit.

#![forbid(unsafe_code)]

use clap::Parser;
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind};
use mcpx::admin::protocol::{Command, Reply, Snapshot};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style, Stylize};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Row, Table, TableState, Tabs, Wrap};
use ratatui::Frame;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::Duration;

/// Watch and steer a running mcpx: its upstreams, sessions, streams and requests in flight.
#[derive(Debug, Parser)]
#[command(name = "mcpx-tui", version)]
struct Args {
    /// The admin socket (default: the daemon's, from mcpx's configuration).
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// List the admin sockets of running mcpx processes and exit.
    #[arg(long)]
    list: bool,
    /// mcpx's configuration file, to find the default socket.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

fn main() -> std::process::ExitCode {
    let args = Args::parse();
    let default_socket = match mcpx::config::Config::load(args.config.as_deref()) {
        Ok((config, _)) => config.admin.socket,
        Err(e) => {
            eprintln!("mcpx-tui: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let running = running_sockets(&default_socket);
    if args.list {
        for socket in &running {
            println!("{}", socket.display());
        }
        return std::process::ExitCode::SUCCESS;
    }
    // The daemon's socket, else the only running mcpx; with several, the first (listed by --list).
    // The picker looks beside the socket given, or the daemon's.
    let default_socket_for_picker = args
        .socket
        .clone()
        .unwrap_or_else(|| default_socket.clone());
    let socket = args.socket.unwrap_or_else(|| match running.first() {
        Some(first) if !running.contains(&default_socket) => first.clone(),
        _ => default_socket,
    });
    let mut terminal = ratatui::init();
    let outcome = App::new(socket, default_socket_for_picker).run(&mut terminal);
    ratatui::restore();
    if let Err(e) = outcome {
        eprintln!("mcpx-tui: {e}");
        return std::process::ExitCode::FAILURE;
    }
    std::process::ExitCode::SUCCESS
}

/// Admin sockets that answer, in the directory of the daemon's: the daemon's and each
/// `mcpx serve` process's.
fn running_sockets(daemon_socket: &Path) -> Vec<PathBuf> {
    let Some(dir) = daemon_socket.parent() else {
        return Vec::new();
    };
    let mut sockets: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| {
            path.extension().is_some_and(|e| e == "sock") && UnixStream::connect(path).is_ok()
        })
        .collect();
    sockets.sort_by_key(|path| path != daemon_socket);
    sockets
}

/// What the watching thread reports.
enum Feed {
    Snapshot(Box<Snapshot>),
    Disconnected(String),
}

/// Holds a `watch` on the socket, reconnecting once a second while mcpx is away.
fn watch(socket: PathBuf, feed: Sender<Feed>) {
    loop {
        let outcome = (|| -> std::io::Result<()> {
            let mut stream = UnixStream::connect(&socket)?;
            let mut line = serde_json::to_vec(&Command::Watch)?;
            line.push(b'\n');
            stream.write_all(&line)?;
            for line in BufReader::new(stream).lines() {
                match serde_json::from_str::<Reply>(&line?) {
                    // A failed send means the drawing loop has ended, and the watch with it.
                    Ok(Reply::Snapshot(snapshot)) => feed
                        .send(Feed::Snapshot(Box::new(snapshot)))
                        .map_err(|_| std::io::Error::other("the console has quit"))?,
                    Ok(Reply::Error { message }) => return Err(std::io::Error::other(message)),
                    _ => {}
                }
            }
            Err(std::io::Error::other("mcpx closed the connection"))
        })();
        let why = outcome
            .err()
            .map_or_else(|| "stopped".to_owned(), |e| e.to_string());
        if feed.send(Feed::Disconnected(why)).is_err() {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The four views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    Upstreams,
    Sessions,
    Streams,
    Requests,
}

const VIEWS: [View; 4] = [
    View::Upstreams,
    View::Sessions,
    View::Streams,
    View::Requests,
];

impl View {
    fn title(self) -> &'static str {
        match self {
            View::Upstreams => "1 Upstreams",
            View::Sessions => "2 Sessions",
            View::Streams => "3 Streams",
            View::Requests => "4 Requests",
        }
    }
}

/// A command waiting for y/n.
struct Pending {
    question: String,
    command: Command,
}

struct App {
    socket: PathBuf,
    feed: Receiver<Feed>,
    snapshot: Option<Snapshot>,
    connection: String,
    view: View,
    table: TableState,
    detail: bool,
    help: bool,
    filter: Option<String>,
    typing_filter: bool,
    pending: Option<Pending>,
    status: String,
    /// The running mcpx processes' sockets, while the picker (`p`) is open, and the selection.
    picker: Option<(Vec<PathBuf>, usize)>,
    /// Where `p` looks for running mcpx processes.
    daemon_socket: PathBuf,
}

impl App {
    fn new(socket: PathBuf, daemon_socket: PathBuf) -> Self {
        App {
            picker: None,
            daemon_socket,
            feed: Self::attach(&socket),
            connection: format!("connecting to {}", socket.display()),
            socket,
            snapshot: None,
            view: View::Requests,
            table: TableState::default().with_selected(Some(0)),
            detail: false,
            help: false,
            filter: None,
            typing_filter: false,
            pending: None,
            status: "? for help".into(),
        }
    }

    /// Starts watching `socket`; the previous watch ends when its channel's receiver is dropped.
    fn attach(socket: &Path) -> Receiver<Feed> {
        let (tx, feed) = mpsc::channel();
        let watched = socket.to_owned();
        std::thread::spawn(move || watch(watched, tx));
        feed
    }

    /// Keys while the picker is open: move, Enter attaches, Esc closes.
    fn on_picker_key(&mut self, key: KeyEvent) {
        let Some((sockets, selected)) = &mut self.picker else {
            return;
        };
        match key.code {
            KeyCode::Down | KeyCode::Char('j') => {
                *selected = (*selected + 1).min(sockets.len().saturating_sub(1))
            }
            KeyCode::Up | KeyCode::Char('k') => *selected = selected.saturating_sub(1),
            KeyCode::Enter => {
                if let Some(socket) = sockets.get(*selected).cloned() {
                    self.feed = Self::attach(&socket);
                    self.connection = format!("connecting to {}", socket.display());
                    self.snapshot = None;
                    self.socket = socket;
                }
                self.picker = None;
            }
            _ => self.picker = None,
        }
    }

    fn run(mut self, terminal: &mut ratatui::DefaultTerminal) -> std::io::Result<()> {
        loop {
            while let Ok(feed) = self.feed.try_recv() {
                match feed {
                    Feed::Snapshot(snapshot) => {
                        self.connection = format!(
                            "mcpx {} (pid {}) at {}",
                            snapshot.version,
                            snapshot.pid,
                            self.socket.display()
                        );
                        self.snapshot = Some(*snapshot);
                    }
                    Feed::Disconnected(why) => {
                        self.connection = format!(
                            "disconnected ({why}); reconnecting to {}",
                            self.socket.display()
                        )
                    }
                }
            }
            terminal.draw(|frame| self.draw(frame))?;
            if event::poll(Duration::from_millis(100))? {
                if let Event::Key(key) = event::read()? {
                    if key.kind == KeyEventKind::Press && !self.on_key(key) {
                        return Ok(());
                    }
                }
            }
        }
    }

    /// Handles a key; false means quit.
    fn on_key(&mut self, key: KeyEvent) -> bool {
        if self.picker.is_some() {
            self.on_picker_key(key);
            return true;
        }
        if let Some(pending) = self.pending.take() {
            if matches!(key.code, KeyCode::Char('y') | KeyCode::Char('Y')) {
                self.status = match mcpx::admin::ask(&self.socket, &pending.command) {
                    Ok(Reply::Done { message }) => message,
                    Ok(Reply::Error { message }) => format!("refused: {message}"),
                    Ok(_) => "unexpected reply".into(),
                    Err(e) => format!("failed: {e}"),
                };
            } else {
                self.status = format!("did not {}", pending.question);
            }
            return true;
        }
        if self.typing_filter {
            let filter = self.filter.get_or_insert_with(String::new);
            match key.code {
                KeyCode::Enter => self.typing_filter = false,
                KeyCode::Esc => {
                    self.filter = None;
                    self.typing_filter = false;
                }
                KeyCode::Backspace => {
                    filter.pop();
                }
                KeyCode::Char(c) => filter.push(c),
                _ => {}
            }
            return true;
        }
        if self.help {
            self.help = false;
            return true;
        }
        let rows = self.rows().len();
        match key.code {
            KeyCode::Char('q') => return false,
            KeyCode::Char('p') => {
                let running = running_sockets(&self.daemon_socket);
                let current = running.iter().position(|s| *s == self.socket).unwrap_or(0);
                self.picker = Some((running, current));
            }
            KeyCode::Char('?') => self.help = true,
            KeyCode::Down | KeyCode::Char('j') => self
                .table
                .select(Some((self.selected() + 1).min(rows.saturating_sub(1)))),
            KeyCode::Up | KeyCode::Char('k') => {
                self.table.select(Some(self.selected().saturating_sub(1)))
            }
            KeyCode::Tab | KeyCode::Right | KeyCode::Char('l') => self.switch(1),
            KeyCode::BackTab | KeyCode::Left | KeyCode::Char('h') => self.switch(VIEWS.len() - 1),
            KeyCode::Char(c @ '1'..='4') => self.set_view(VIEWS[c as usize - '1' as usize]),
            KeyCode::Enter => self.detail = !self.detail,
            KeyCode::Esc => {
                self.detail = false;
                self.filter = None;
            }
            KeyCode::Char('/') => {
                self.typing_filter = true;
                self.filter = Some(String::new());
            }
            KeyCode::Char('c') => self.ask_about(View::Requests),
            KeyCode::Char('d') => self.ask_about(View::Sessions),
            KeyCode::Char('r') => self.ask_about(View::Upstreams),
            _ => {}
        }
        true
    }

    fn selected(&self) -> usize {
        self.table.selected().unwrap_or(0)
    }

    fn switch(&mut self, by: usize) {
        let index = VIEWS.iter().position(|v| *v == self.view).unwrap_or(0);
        self.set_view(VIEWS[(index + by) % VIEWS.len()]);
    }

    fn set_view(&mut self, view: View) {
        self.view = view;
        self.table.select(Some(0));
        self.detail = false;
    }

    /// Prepares the command for the selected row, if the view is the one it acts on.
    fn ask_about(&mut self, view: View) {
        if self.view != view {
            self.status = format!("switch to {} first", view.title());
            return;
        }
        let Some(row) = self.rows().into_iter().nth(self.selected()) else {
            self.status = "nothing selected".into();
            return;
        };
        let (question, command) = match view {
            View::Requests => (
                format!("cancel request #{}", row.key),
                Command::Cancel { request: row.key },
            ),
            View::Sessions => match row.name.clone() {
                Some(id) => (format!("end session {id}"), Command::EndSession { id }),
                None => {
                    self.status = "only legacy HTTP sessions can be ended".into();
                    return;
                }
            },
            _ => {
                let name = row.name.clone().unwrap_or_default();
                (
                    format!("restart upstream {name}"),
                    Command::RestartUpstream { name },
                )
            }
        };
        self.status = format!("{question}? (y/n)");
        self.pending = Some(Pending { question, command });
    }

    /// The rows of the current view, filtered.
    fn rows(&self) -> Vec<ViewRow> {
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
                        u.state.clone(),
                        u.revision.clone().unwrap_or_default(),
                        format!("{}/{}/{}", u.tools, u.prompts, u.resources),
                        u.restarts.to_string(),
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
                        s.id.clone().unwrap_or_default(),
                    ],
                    detail: serde_json::to_string_pretty(s).unwrap_or_default(),
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
                        seconds(r.age_ms),
                        r.progress.to_string(),
                    ],
                    detail: serde_json::to_string_pretty(r).unwrap_or_default(),
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

    fn draw(&mut self, frame: &mut Frame) {
        let [top, tabs, body, bottom] = Layout::vertical([
            Constraint::Length(1),
            Constraint::Length(1),
            Constraint::Min(3),
            Constraint::Length(1),
        ])
        .areas(frame.area());
        frame.render_widget(Line::from(self.connection.clone()).bold(), top);
        let selected = VIEWS.iter().position(|v| *v == self.view).unwrap_or(0);
        let counts = self.snapshot.as_ref().map_or([0; 4], |s| {
            [
                s.upstreams.len(),
                s.sessions.len(),
                s.streams.len(),
                s.requests.len(),
            ]
        });
        let titles: Vec<String> = VIEWS
            .iter()
            .zip(counts)
            .map(|(v, n)| format!("{} ({n})", v.title()))
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
                vec!["NAME", "STATE", "REVISION", "T/P/R", "RESTARTS"],
                vec![
                    Constraint::Length(18),
                    Constraint::Min(10),
                    Constraint::Length(11),
                    Constraint::Length(10),
                    Constraint::Length(8),
                ],
            ),
            View::Sessions => (
                vec!["SESSION", "TRANSPORT", "CLIENT", "REVISION", "IDLE", "ID"],
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
                    "REQUEST", "DOOR", "METHOD", "TARGET", "UPSTREAM", "AGE", "PROGRESS",
                ],
                vec![
                    Constraint::Length(8),
                    Constraint::Length(13),
                    Constraint::Length(15),
                    Constraint::Min(12),
                    Constraint::Length(12),
                    Constraint::Length(8),
                    Constraint::Length(8),
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
            let area = centered(frame.area(), 60, 14);
            frame.render_widget(Clear, area);
            frame.render_widget(
                Paragraph::new(HELP).block(Block::bordered().title(" keys ")),
                area,
            );
        }
    }
}

const HELP: &str = "1-4, Tab, h/l  switch view\n\
j/k, arrows    move\n\
Enter          detail pane\n\
/              filter (Enter keeps, Esc clears)\n\
c              cancel the selected request\n\
p              pick another running mcpx\n\
d              end the selected HTTP session\n\
r              restart the selected upstream\n\
q              quit\n\
(any key closes this help)";

/// One table row and what the detail pane shows for it.
struct ViewRow {
    key: u64,
    name: Option<String>,
    cells: Vec<String>,
    detail: String,
}

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
