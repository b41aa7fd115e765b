//! The control API: what a console may ask of a running mcpx ([`protocol::Command`]), who asks
//! it ([`By`]), and the one rule per command on whether they may ([`allowed`]), whichever door
//! it came by: the admin socket ([`crate::admin`]) and the approval page call [`act`]; a web
//! console is one more caller named by [`By`], not one more set of checks.

pub mod protocol;

use crate::access::Person;
use crate::gateway::{CommandError, Gateway};
use protocol::{Command, Refusal, Reply};
use std::sync::Arc;

/// Who asks a command, as the door that took it proved.
#[derive(Debug, Clone, PartialEq)]
pub enum By {
    /// A process on the admin socket: the uid the kernel says it runs as, and whether it
    /// descends from one of mcpx's own upstream servers ([`crate::net::peer_process`]).
    Socket {
        /// The peer's uid (`SO_PEERCRED`); `None` where the kernel would not say.
        uid: Option<u32>,
        /// Whether it is an upstream server of this mcpx, or something one started.
        from_upstream: bool,
    },
    /// A browser that showed the owner secret (the approval page), naming the page.
    OwnerSecret {
        /// Where it decided, for the audit log.
        page: &'static str,
    },
    /// A person signed in through the HTTP door, in their role.
    Person {
        /// Who they are.
        person: Person,
        /// What the gateway's owner lets them do.
        role: Role,
    },
}

/// What a signed-in person may do of the console's work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Runs the gateway: sees and does all a console does.
    Admin,
    /// Uses the gateway: sees and does none of it.
    Member,
}

/// What a command does, which decides who may ask it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// Reads the live state (every session, request and server).
    Reads,
    /// Acts on it: cancels, ends, restarts, reloads.
    Acts,
    /// Decides what a person must (a client's consent, a pinned server's change, a call waiting
    /// for approval): never taken from a server it could be about.
    Decides,
}

/// What `command` does. Every command decides here, so a new one is a compile error until it
/// says.
fn reach(command: &Command) -> Reach {
    match command {
        Command::Snapshot | Command::Watch | Command::Tools => Reach::Reads,
        Command::Cancel { .. }
        | Command::EndSession { .. }
        | Command::RestartUpstream { .. }
        | Command::Reload
        | Command::CancelTask { .. }
        | Command::RefreshPins => Reach::Acts,
        Command::ApproveConsent { .. }
        | Command::DecidePins { .. }
        | Command::DecideApproval { .. } => Reach::Decides,
    }
}

/// Whether `by` may ask `command`; if not, the refusal to answer with.
pub fn allowed(command: &Command, by: &By) -> Result<(), (Refusal, String)> {
    let reach = reach(command);
    match by {
        By::Socket { uid, .. } if *uid != Some(rustix::process::geteuid().as_raw()) => Err((
            Refusal::NotYours,
            "this admin socket belongs to another user".into(),
        )),
        By::Socket {
            from_upstream: true,
            ..
        } if reach == Reach::Decides => Err((
            Refusal::FromAnUpstream,
            "approvals are not taken from mcpx's own upstream servers (or what they run): approve from your own shell or the console".into(),
        )),
        By::Socket { .. } => Ok(()),
        // The owner secret is asked for deciding one call's approval, and only that.
        By::OwnerSecret { .. } => match command {
            Command::DecideApproval { .. } => Ok(()),
            _ => Err((
                Refusal::NotYours,
                "the owner secret decides a call waiting for approval, nothing else".into(),
            )),
        },
        By::Person {
            role: Role::Admin, ..
        } => Ok(()),
        By::Person {
            role: Role::Member,
            person,
        } => Err((
            Refusal::NotYours,
            format!("{person} uses this gateway but does not run it: ask its owner"),
        )),
    }
}

/// Who decided, as the audit log and the waiting call's page say it.
fn decided_by(by: &By, via: &str) -> String {
    match by {
        By::Socket { .. } => {
            let via = crate::view::printable(via).into_owned();
            let via = match via.chars().count() {
                1..=40 => via,
                _ => "admin socket".to_owned(),
            };
            format!("the owner ({via})")
        }
        By::OwnerSecret { page } => format!("the owner ({page})"),
        By::Person { person, .. } => format!("{person} (web console)"),
    }
}

/// Carries out `command` for `by`, if [`allowed`]: its one reply. (`watch` is a stream of
/// replies, which its door runs after asking [`allowed`].)
pub async fn act(gateway: &Arc<Gateway>, command: Command, by: &By) -> Reply {
    if let Err((kind, message)) = allowed(&command, by) {
        return Reply::Error { message, kind };
    }
    let not_found = |message: String| Err((Refusal::NotFound, message));
    let refused = |error: CommandError| (Refusal::from(&error), error.to_string());
    let outcome = match command {
        Command::Snapshot | Command::Watch => return Reply::Snapshot(Box::new(gateway.snapshot())),
        Command::Tools => {
            gateway.listed().await;
            return Reply::Tools(gateway.tools_by_server());
        }
        Command::Cancel { request } => match gateway.live().cancel_request(request) {
            true => Ok(format!("request {request} cancelled")),
            false => not_found(format!("no request {request} is in flight")),
        },
        Command::EndSession { id } => match gateway.live().end_session(&id) {
            true => Ok(format!("session {id} ended")),
            false => not_found(format!("no HTTP session {id}")),
        },
        Command::RestartUpstream { name } => gateway.restart_upstream(&name).await.map_err(refused),
        Command::Reload => gateway.reload_from_disk().await.map_err(refused),
        Command::CancelTask { id } => gateway.cancel_task(&id).await.map_err(refused),
        Command::ApproveConsent { code } => match gateway.live().consents().approve(&code) {
            Some(client) => Ok(format!("approved {client}: its consent page may continue")),
            None => not_found(format!("no consent page waits with the code {code}")),
        },
        Command::DecidePins {
            server,
            item,
            sha256,
            decision,
        } => gateway
            .decide_pins(&server, item.as_deref(), sha256.as_deref(), decision)
            .map_err(refused),
        Command::RefreshPins => Ok(gateway.refresh_pins()),
        Command::DecideApproval { id, approve, via } => {
            let by = decided_by(by, &via);
            gateway.decide_approval(&id, approve, &by).map_err(refused)
        }
    };
    match outcome {
        Ok(message) => Reply::Done { message },
        Err((kind, message)) => Reply::Error { message, kind },
    }
}

#[cfg(test)]
mod every_revision {
    mod control {
        use crate::access::Person;
        use crate::control::protocol::{Command, Refusal};
        use crate::control::{allowed, By, Role};

        /// One of each command.
        fn every_command() -> Vec<Command> {
            vec![
                Command::Snapshot,
                Command::Watch,
                Command::Tools,
                Command::Cancel { request: 1 },
                Command::EndSession { id: "s".into() },
                Command::RestartUpstream { name: "u".into() },
                Command::Reload,
                Command::CancelTask { id: "t".into() },
                Command::ApproveConsent { code: "c".into() },
                Command::DecidePins {
                    server: "u".into(),
                    item: None,
                    sha256: None,
                    decision: crate::pins::Decision::Approve,
                },
                Command::RefreshPins,
                Command::DecideApproval {
                    id: "a".into(),
                    approve: true,
                    via: "console".into(),
                },
            ]
        }

        fn is_a_decision(command: &Command) -> bool {
            matches!(
                command,
                Command::ApproveConsent { .. }
                    | Command::DecidePins { .. }
                    | Command::DecideApproval { .. }
            )
        }

        fn own_uid() -> Option<u32> {
            Some(rustix::process::geteuid().as_raw())
        }

        /// Which commands `by` is refused, and as what.
        fn refusals(by: &By) -> Vec<(Command, Refusal)> {
            every_command()
                .into_iter()
                .filter_map(|c| allowed(&c, by).err().map(|(kind, _)| (c, kind)))
                .collect()
        }

        #[test]
        fn the_owners_shell_on_the_socket_may_ask_everything() {
            let by = By::Socket {
                uid: own_uid(),
                from_upstream: false,
            };
            assert_eq!(refusals(&by), []);
        }

        #[test]
        fn a_server_on_the_socket_reads_and_acts_but_decides_nothing() {
            let by = By::Socket {
                uid: own_uid(),
                from_upstream: true,
            };
            let refused = refusals(&by);
            let decisions: Vec<Command> = (every_command().into_iter())
                .filter(is_a_decision)
                .collect();
            assert_eq!(refused.len(), decisions.len(), "{refused:?}");
            for (command, kind) in refused {
                assert!(is_a_decision(&command), "{command:?}");
                assert_eq!(kind, Refusal::FromAnUpstream);
            }
        }

        #[test]
        fn another_user_on_the_socket_may_ask_nothing() {
            for uid in [own_uid().map(|u| u.wrapping_add(1)), Some(0), None] {
                if uid == own_uid() {
                    continue;
                }
                let by = By::Socket {
                    uid,
                    from_upstream: false,
                };
                let refused = refusals(&by);
                assert_eq!(refused.len(), every_command().len(), "{uid:?}");
                assert!(refused.iter().all(|(_, k)| *k == Refusal::NotYours));
            }
        }

        #[test]
        fn the_owner_secret_decides_a_waiting_call_and_nothing_else() {
            let by = By::OwnerSecret {
                page: "approval page",
            };
            for command in every_command() {
                let decides_a_call = matches!(command, Command::DecideApproval { .. });
                assert_eq!(
                    allowed(&command, &by).is_ok(),
                    decides_a_call,
                    "{command:?}"
                );
            }
        }

        #[test]
        fn a_person_may_ask_what_their_role_lets_them() {
            let person = Person::Caller {
                issuer: "https://idp.test".into(),
                subject: "ada".into(),
            };
            let admin = By::Person {
                person: person.clone(),
                role: Role::Admin,
            };
            assert_eq!(refusals(&admin), []);
            let member = By::Person {
                person,
                role: Role::Member,
            };
            let refused = refusals(&member);
            assert_eq!(refused.len(), every_command().len());
            assert!(refused.iter().all(|(_, k)| *k == Refusal::NotYours));
        }
    }
}
