//! Whether the process at the other end of a local socket descends from this one: one of the
//! upstream servers mcpx started, or anything they started in turn.
//!
//! Every server runs under a supervisor that is a subreaper ([`crate::upstream::supervisor`]),
//! so a descendant that double-forks or whose parent exits is adopted inside the tree, never by
//! init: walking up the parents from the peer meets this process exactly when the peer is one
//! of its servers' processes. The kernel records the peer's pid when it connects, and the walk
//! is made when the connection is accepted, while that process still holds its end.

use std::os::fd::AsFd;

/// The longest chain of parents followed: deeper than any real process tree.
const MAX_DEPTH: usize = 4096;

/// Whether the peer of `stream` is this process's descendant; `true` (refuse) when the kernel
/// cannot say who the peer is.
pub fn descends_from_this_process(stream: &impl AsFd) -> bool {
    let Ok(peer) = rustix::net::sockopt::socket_peercred(stream) else {
        return true;
    };
    let me = rustix::process::getpid().as_raw_nonzero().get() as u32;
    let mut pid = peer.pid.as_raw_nonzero().get() as u32;
    for _ in 0..MAX_DEPTH {
        if pid == me {
            return true;
        }
        match parent_of(pid) {
            Some(parent) if parent > 1 => pid = parent,
            // Init's (or a container's first process's) child, or a process gone: not ours.
            Some(_) => return false,
            None => return true,
        }
    }
    true
}

/// The parent of `pid`, from `/proc/PID/stat` (its fourth field, after the command's
/// parenthesised name, which may itself hold spaces and parentheses).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod admin {
            use crate::net::peer_process::{descends_from_this_process, parent_of};
            use std::os::unix::net::UnixStream;

            #[test]
            fn the_parent_is_read_past_a_name_with_spaces_and_parentheses() {
                let me = std::process::id();
                assert_eq!(parent_of(me), Some(std::os::unix::process::parent_id()));
            }

            #[test]
            fn a_socket_pair_within_this_process_descends_from_it() {
                let (a, _b) = UnixStream::pair().unwrap();
                assert!(descends_from_this_process(&a));
            }
        }
    }
}
