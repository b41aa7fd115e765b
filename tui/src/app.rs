//! The console's state: which view, which row, what is being typed or confirmed, and what the
//! keys do to it. Drawing it is in [`draw`].

mod draw;

use crate::feed::{watch, Feed};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind};
use mcpx::admin::protocol::{Command, Reply, Snapshot};
use mcpx::admin::running_sockets;
use mcpx::pins::Decision;
use ratatui::widgets::TableState;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

/// The views.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    Upstreams,
    Sessions,
    Streams,
    Requests,
    Tasks,
    /// Clients waiting on the built-in authorization server's consent page.
    Consents,
    /// Pinned definitions that changed or appeared, waiting for review.
    Pins,
    /// The webhook subscriptions to event types mcpx delivers.
    Events,
    /// Calls waiting for the owner's approval (`[approvals]`).
    Approvals,
}

const VIEWS: [View; 9] = [
    View::Upstreams,
    View::Sessions,
    View::Streams,
    View::Requests,
    View::Tasks,
    View::Consents,
    View::Pins,
    View::Events,
    View::Approvals,
];

impl View {
    fn title(self) -> &'static str {
        match self {
            View::Upstreams => "1 Upstreams",
            View::Sessions => "2 Sessions",
            View::Streams => "3 Streams",
            View::Requests => "4 Requests",
            View::Tasks => "5 Tasks",
            View::Consents => "6 Consents",
            View::Pins => "7 Pins",
            View::Events => "8 Events",
            View::Approvals => "9 Approvals",
        }
    }
}

/// A command waiting for y/n.
struct Pending {
    question: String,
    command: Command,
}

pub struct App {
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
    /// The upstream whose login `L` asked for, run once the key is handled.
    login: Option<String>,
}

impl App {
    pub fn new(socket: PathBuf, daemon_socket: PathBuf) -> Self {
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
            login: None,
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

    pub fn run(mut self, terminal: &mut ratatui::DefaultTerminal) -> std::io::Result<()> {
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
                    if let Some(name) = self.login.take() {
                        self.status = self.log_in(terminal, &name)?;
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
                    Ok(Reply::Error { message, .. }) => format!("refused: {message}"),
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
            KeyCode::Char(c @ '1'..='9') => self.set_view(VIEWS[c as usize - '1' as usize]),
            KeyCode::Enter => self.detail = !self.detail,
            KeyCode::Esc => {
                self.detail = false;
                self.filter = None;
            }
            KeyCode::Char('/') => {
                self.typing_filter = true;
                self.filter = Some(String::new());
            }
            KeyCode::Char('c') if self.view == View::Tasks => self.ask_about(View::Tasks),
            KeyCode::Char('c') => self.ask_about(View::Requests),
            KeyCode::Char('a') if self.view == View::Approvals => self.ask_approval(true),
            KeyCode::Char('d') if self.view == View::Approvals => self.ask_approval(false),
            KeyCode::Char('d') => self.ask_about(View::Sessions),
            KeyCode::Char('a') if self.view == View::Pins => self.ask_pin(Decision::Approve),
            KeyCode::Char('r') if self.view == View::Pins => self.ask_pin(Decision::Reject),
            KeyCode::Char('r') => self.ask_about(View::Upstreams),
            KeyCode::Char('a') => self.ask_about(View::Consents),
            KeyCode::Char('L') => self.ask_login(),
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

    /// Asks for the selected upstream's login, run by [`App::log_in`].
    fn ask_login(&mut self) {
        if self.view != View::Upstreams {
            self.status = format!("switch to {} first", View::Upstreams.title());
            return;
        }
        match self.rows().into_iter().nth(self.selected()) {
            Some(row) => self.login = row.name,
            None => self.status = "nothing selected".into(),
        }
    }

    /// Runs `mcpx auth login NAME` for the attached mcpx's configuration in this terminal (the
    /// console steps aside while it prints the URL and opens the browser); the login restarts
    /// the upstream in every mcpx running on that configuration.
    fn log_in(
        &mut self,
        terminal: &mut ratatui::DefaultTerminal,
        name: &str,
    ) -> std::io::Result<String> {
        let config = self.snapshot.as_ref().and_then(|s| s.config.clone());
        ratatui::restore();
        println!("mcpx auth login {name} (the console comes back when it ends)");
        let mut login = std::process::Command::new(mcpx_program());
        if let Some(config) = config {
            login.args(["--config", &config]);
        }
        let outcome = login.args(["auth", "login", name]).status();
        *terminal = ratatui::init();
        terminal.clear()?;
        // `mcpx auth login` tells every running mcpx on this configuration, this one included.
        Ok(match outcome {
            Ok(status) if status.success() => format!("logged in to {name}"),
            Ok(status) => format!("login to {name} failed ({status})"),
            Err(e) => format!("cannot run mcpx auth login: {e}"),
        })
    }

    /// Prepares the decision on the selected pinned definition: it names the definition's
    /// digest, so that a change made since it was shown is not what gets approved.
    fn ask_pin(&mut self, decision: Decision) {
        let row = self.rows().into_iter().nth(self.selected());
        let review = row.and_then(|row| {
            let pins = &self.snapshot.as_ref()?.pins;
            pins.get(usize::try_from(row.key).ok()?).cloned()
        });
        let Some(review) = review else {
            self.status = "nothing selected".into();
            return;
        };
        let verb = match decision {
            Decision::Approve => "approve",
            Decision::Reject => "reject",
        };
        let question = format!("{verb} {} of {}", review.item, review.server);
        let command = Command::DecidePins {
            server: review.server,
            item: Some(review.item),
            sha256: review.sha256,
            decision,
        };
        self.status = format!("{question}? (y/n)");
        self.pending = Some(Pending { question, command });
    }

    /// Prepares the decision on the selected call waiting for approval.
    fn ask_approval(&mut self, approve: bool) {
        let row = self.rows().into_iter().nth(self.selected());
        let waiting = row.and_then(|row| {
            let approvals = &self.snapshot.as_ref()?.approvals;
            approvals.get(usize::try_from(row.key).ok()?).cloned()
        });
        let Some(waiting) = waiting else {
            self.status = "nothing selected".into();
            return;
        };
        let verb = if approve { "approve" } else { "deny" };
        let question = format!("{verb} {}'s call of {}", waiting.caller, waiting.tool);
        let command = Command::DecideApproval {
            id: waiting.id,
            approve,
            via: "console".into(),
        };
        self.status = format!("{question}? (y/n)");
        self.pending = Some(Pending { question, command });
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
            View::Tasks => {
                let id = row.name.clone().unwrap_or_default();
                let short = mcpx::view::short_task_id(&id);
                (format!("cancel task {short}"), Command::CancelTask { id })
            }
            View::Consents => {
                let code = row.name.clone().unwrap_or_default();
                let client = row.cells.get(1).cloned().unwrap_or_default();
                (
                    format!("approve {client} (code {code})"),
                    Command::ApproveConsent { code },
                )
            }
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
}

/// One table row and what the detail pane shows for it.
struct ViewRow {
    key: u64,
    name: Option<String>,
    cells: Vec<String>,
    detail: String,
}

/// The `mcpx` program: beside this console when installed together, else from `PATH`.
fn mcpx_program() -> PathBuf {
    let beside = std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("mcpx")))
        .filter(|path| path.is_file());
    beside.unwrap_or_else(|| PathBuf::from("mcpx"))
}
