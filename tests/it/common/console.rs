//! `mcpx-tui` under tmux: a real terminal the tests type into and read back.

use super::PATIENCE;
use std::time::{Duration, Instant};

/// Runs `tmux` with `args`; its stdout.
pub fn tmux(args: &[&str]) -> String {
    let out = std::process::Command::new("tmux")
        .args(args)
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Starts `mcpx-tui` on the admin socket `socket` (after `prefix`, e.g. `env BROWSER=…`) in a
/// new detached tmux session of `size` (columns, rows), named for `label` and this test
/// process; the session's name.
pub fn open_console(
    label: &str,
    prefix: &str,
    socket: &std::path::Path,
    size: (u16, u16),
) -> String {
    let tui = super::workspace_bin("mcpx-tui", "mcpx-tui");
    let command = format!("{prefix} {} --socket {}", tui.display(), socket.display());
    open_terminal(&format!("mcpx-tui-{label}"), &command, size)
}

/// Runs the shell command `command` in a new detached tmux session of `size` (columns, rows),
/// named for `label` and this test process; the session's name.
pub fn open_terminal(label: &str, command: &str, size: (u16, u16)) -> String {
    let name = format!("{label}-{}", std::process::id());
    tmux(&["kill-session", "-t", &name]);
    let (width, height) = (size.0.to_string(), size.1.to_string());
    tmux(&[
        "new-session",
        "-d",
        "-s",
        &name,
        "-x",
        &width,
        "-y",
        &height,
        command,
    ]);
    name
}

/// Waits until the tmux session's screen shows `text`; the screen.
pub fn screen_shows(session: &str, text: &str) -> String {
    screen_where(
        session,
        |screen| screen.contains(text),
        &format!("{text:?} never appeared"),
    )
}

/// Waits until the tmux session's screen no longer shows `text`; the screen. A key sent while
/// the console still shows what the previous key closes may be read with it (an Escape and the
/// next key arrive as one Alt chord), so a test waits for the screen before the next key.
pub fn screen_lacks(session: &str, text: &str) -> String {
    screen_where(
        session,
        |screen| !screen.contains(text),
        &format!("{text:?} never went"),
    )
}

fn screen_where(session: &str, holds: impl Fn(&str) -> bool, failure: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let screen = tmux(&["capture-pane", "-t", session, "-p"]);
        if holds(&screen) {
            return screen;
        }
        assert!(Instant::now() < deadline, "{failure}:\n{screen}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
