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

/// Waits until the tmux session's screen shows `text`; the screen.
pub fn screen_shows(session: &str, text: &str) -> String {
    let deadline = Instant::now() + PATIENCE;
    loop {
        let screen = tmux(&["capture-pane", "-t", session, "-p"]);
        if screen.contains(text) {
            return screen;
        }
        assert!(
            Instant::now() < deadline,
            "{text:?} never appeared:\n{screen}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}
