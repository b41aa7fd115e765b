//! `mcpx pins`: the review of pinned definitions, from this machine only. What waits is read
//! from the book itself (every mcpx writes what it sees there); a decision is taken by a
//! running mcpx, which serves it at once, and the others are told to read the book again.
//! With none running, the book is changed directly and read at the next start.

use crate::admin::protocol::{Command as AdminCommand, Reply};
use crate::cli::PinsAction;
use crate::config::Config;
use crate::pins::{diff, Decision, Pins, Review};
use std::process::ExitCode;

/// Runs `mcpx pins ACTION`.
pub fn run(action: &PinsAction, config: &Config) -> ExitCode {
    let pins = Pins::open(&config.pins.file);
    let outcome = match action {
        PinsAction::Status => Ok(status(&pins)),
        PinsAction::Diff { server, item } => show_diff(&pins, server, item.as_deref()),
        PinsAction::Approve { server, item } => decide(config, server, item, Decision::Approve),
        PinsAction::Reject { server, item } => decide(config, server, item, Decision::Reject),
    };
    match outcome {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(message) => {
            eprintln!("mcpx pins: {message}");
            ExitCode::FAILURE
        }
    }
}

fn status(pins: &Pins) -> String {
    let reviews = pins.reviews();
    if reviews.is_empty() {
        return format!("nothing waits for review ({})\n", pins.path().display());
    }
    let mut text = String::new();
    for Review {
        server,
        item,
        state,
        ..
    } in &reviews
    {
        let hint = match state {
            crate::pins::State::Rejected => format!("mcpx pins diff {server} {item}"),
            _ => format!("mcpx pins diff {server} {item}; mcpx pins approve {server} {item}"),
        };
        text.push_str(&format!(
            "{:<16} {:<32} {:<9} {hint}\n",
            crate::view::printable(server),
            crate::view::printable(item),
            state.as_str()
        ));
    }
    text
}

fn show_diff(pins: &Pins, server: &str, item: Option<&str>) -> Result<String, String> {
    let reviews: Vec<Review> = pins
        .reviews()
        .into_iter()
        .filter(|r| r.server == server && item.is_none_or(|i| r.is(i)))
        .collect();
    if reviews.is_empty() {
        return Err(format!("nothing of {server} waits for review"));
    }
    let mut text = String::new();
    for review in reviews {
        text.push_str(&format!("{} ({})\n", review.item, review.state.as_str()));
        let changes = diff::render(review.approved.as_ref(), review.seen.as_ref());
        // A server wrote these words: nothing in them may drive the terminal.
        for line in changes.lines() {
            text.push_str(&crate::view::printable(line));
            text.push('\n');
        }
    }
    Ok(text)
}

/// Decides through a running mcpx (the daemon first), then has the others read the book.
fn decide(
    config: &Config,
    server: &str,
    item: &Option<String>,
    decision: Decision,
) -> Result<String, String> {
    let running = crate::admin::running_sockets(&config.admin.socket);
    let Some((first, others)) = running.split_first() else {
        let pins = Pins::open(&config.pins.file);
        let decided = pins.decide(server, item.as_deref(), None, decision)?;
        return Ok(format!(
            "{} (no mcpx is running: the next one to start serves it)\n",
            decided.join(", ")
        ));
    };
    let command = AdminCommand::DecidePins {
        server: server.to_owned(),
        item: item.clone(),
        sha256: None,
        decision,
    };
    let message = match crate::admin::ask(first, &command) {
        Ok(Reply::Done { message }) => message,
        Ok(Reply::Error { message, .. }) => return Err(message),
        Ok(_) => return Err("the running mcpx answered something else".into()),
        Err(e) => return Err(format!("cannot reach {}: {e}", first.display())),
    };
    for other in others {
        if let Err(e) = crate::admin::ask(other, &AdminCommand::RefreshPins) {
            eprintln!("mcpx pins: {} did not hear of it: {e}", other.display());
        }
    }
    Ok(format!("{message}\n"))
}
