//! `mcpx pins`: the review of pinned definitions, from this machine only. What waits is read
//! from the book itself (every mcpx writes what it sees there); a decision is taken by a
//! running mcpx, which serves it at once, and the others are told to read the book again.
//! With none running, the book is changed directly and read at the next start.

use crate::admin::protocol::Command as AdminCommand;
use crate::cli::PinsAction;
use crate::config::Config;
use crate::pins::{diff, Decision, Pins, Review};
use std::io::IsTerminal;
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
    let reviews = reviews_of(pins, server, item)?;
    Ok(reviews.iter().map(changes).collect())
}

/// What waits for review of `server` (or only `item`), and what was rejected; an error when
/// there is none.
fn reviews_of(pins: &Pins, server: &str, item: Option<&str>) -> Result<Vec<Review>, String> {
    let reviews: Vec<Review> = pins
        .reviews()
        .into_iter()
        .filter(|r| r.server == server && item.is_none_or(|i| r.is(i)))
        .collect();
    match reviews.is_empty() {
        true => Err(format!("nothing of {server} waits for review")),
        false => Ok(reviews),
    }
}

/// One item's change as a person reads it. A server wrote these words, its item's name among
/// them: nothing in them may drive the terminal.
fn changes(review: &Review) -> String {
    let mut text = format!(
        "{} ({})\n",
        crate::view::printable(&review.item),
        review.state.as_str()
    );
    let changes = diff::render(review.approved.as_ref(), review.seen.as_ref());
    for line in changes.lines() {
        text.push_str(&crate::view::printable(line));
        text.push('\n');
    }
    text
}

/// Decides on what waits now, each item by the digest read here, so that a change made after
/// it was read is refused rather than decided on unseen. On a terminal an approval first shows
/// what it approves and asks. The decision is taken through a running mcpx (the daemon first),
/// which serves it at once, and the others are told to read the book.
fn decide(
    config: &Config,
    server: &str,
    item: &Option<String>,
    decision: Decision,
) -> Result<String, String> {
    let pins = Pins::open(&config.pins.file);
    let waiting: Vec<Review> = reviews_of(&pins, server, item.as_deref())?
        .into_iter()
        .filter(|r| r.sha256.is_some() && !matches!(r.state, crate::pins::State::Rejected))
        .collect();
    if waiting.is_empty() {
        return Err(format!("nothing of {server} waits for review"));
    }
    if decision == Decision::Approve && std::io::stdin().is_terminal() && !confirmed(&waiting)? {
        return Err("nothing approved".into());
    }
    let running = crate::admin::running_sockets(&config.admin.socket);
    let mut said = String::new();
    for review in &waiting {
        let sha256 = review.sha256.as_deref();
        let message = match running.first() {
            None => pins
                .decide(server, Some(&review.item), sha256, decision)?
                .join(", "),
            Some(first) => ask_decided(first, server, review, decision)?,
        };
        said.push_str(&format!("{message}\n"));
    }
    match running.split_first() {
        None => said.push_str("(no mcpx is running: the next one to start serves it)\n"),
        Some((_, others)) => {
            for other in others {
                if let Err(e) = crate::admin::ask(other, &AdminCommand::RefreshPins) {
                    eprintln!("mcpx pins: {} did not hear of it: {e}", other.display());
                }
            }
        }
    }
    Ok(said)
}

/// Shows what an approval would serve and asks; whether the answer was yes.
fn confirmed(waiting: &[Review]) -> Result<bool, String> {
    for review in waiting {
        eprint!("{}", changes(review));
    }
    eprint!("approve {} item(s)? [y/N] ", waiting.len());
    let mut answer = String::new();
    std::io::stdin()
        .read_line(&mut answer)
        .map_err(|e| e.to_string())?;
    Ok(matches!(answer.trim(), "y" | "Y" | "yes"))
}

/// Has the mcpx at `socket` take `decision` on `review`, naming the digest that was read.
fn ask_decided(
    socket: &std::path::Path,
    server: &str,
    review: &Review,
    decision: Decision,
) -> Result<String, String> {
    let command = AdminCommand::DecidePins {
        server: server.to_owned(),
        item: Some(review.item.clone()),
        sha256: review.sha256.clone(),
        decision,
    };
    crate::admin::done(socket, &command)
}
