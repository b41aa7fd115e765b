//! The processes mcpx adopts. Each server's tree runs under a supervisor that is its subreaper
//! ([`super::supervisor`]), but the supervisor is the server's user's process too: a server that
//! kills it (or a descendant in a group of its own, left when mcpx stops the server) would be
//! adopted by init, out of mcpx's tree, and the admin socket's "not one of mcpx's upstreams"
//! ([`crate::net::peer_process`]) would take it for its owner. So mcpx, while it runs servers,
//! is a subreaper too: whatever leaves a server's tree is adopted by mcpx, still its descendant,
//! and each [`sweep`] kills and reaps such strays, as their supervisor would have.
//!
//! mcpx's own children are told from strays by a register ([`spawn_own`]) that a sweep and a
//! spawn take in turn, so that a child just started is never taken for one.

use crate::sync::lock;
use rustix::process::{Pid, Signal, WaitOptions};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// The children mcpx started, by pid (a count: a pid can be reused while a guard is held).
static OWN: Mutex<Option<HashMap<u32, usize>>> = Mutex::new(None);

/// Whether this process adopts its servers' strays (`mcpx daemon`, `mcpx serve`).
static ADOPTING: AtomicBool = AtomicBool::new(false);

/// Makes this process the subreaper of everything it starts, for as long as it runs.
pub fn adopt() {
    if rustix::process::set_child_subreaper(Some(rustix::process::getpid())).is_ok() {
        ADOPTING.store(true, Ordering::Relaxed);
    } else {
        tracing::warn!("cannot become a subreaper: a server's process that leaves its supervisor is adopted by init");
    }
}

/// A child mcpx started itself: a sweep leaves it be while this is held.
#[derive(Debug)]
pub struct Own(u32);

impl Drop for Own {
    fn drop(&mut self) {
        let mut own = lock(&OWN);
        let counts = own.get_or_insert_with(HashMap::new);
        if let Some(count) = counts.get_mut(&self.0) {
            *count -= 1;
            if *count == 0 {
                counts.remove(&self.0);
            }
        }
    }
}

/// Starts a child with `spawn`, registered as mcpx's own (by `pid_of` it) before any sweep can
/// look at it.
pub fn spawn_own<C>(
    spawn: impl FnOnce() -> std::io::Result<C>,
    pid_of: impl FnOnce(&C) -> u32,
) -> std::io::Result<(C, Own)> {
    let mut own = lock(&OWN);
    let child = spawn()?;
    let pid = pid_of(&child);
    *own.get_or_insert_with(HashMap::new).entry(pid).or_default() += 1;
    Ok((child, Own(pid)))
}

/// Kills and reaps every child of this process that it did not start: strays of a server's
/// tree whose supervisor is gone. One still dying (or a child of a stray, adopted as it dies) is
/// reaped by the next sweep: a sweep never waits.
pub fn sweep() {
    if !ADOPTING.load(Ordering::Relaxed) {
        return;
    }
    let own = lock(&OWN);
    let is_own = |pid: &u32| own.as_ref().is_some_and(|o| o.contains_key(pid));
    let strays = children().into_iter().filter(|pid| !is_own(pid));
    for pid in strays.filter_map(|pid| Pid::from_raw(pid as i32)) {
        let _ = rustix::process::kill_process(pid, Signal::KILL);
        let _ = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG);
    }
}

/// This process's children, as its threads' `/proc` entries list them.
fn children() -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return Vec::new();
    };
    let mut children: Vec<u32> = tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|pid| pid.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect();
    children.sort_unstable();
    children.dedup();
    children
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod supervision {
            use crate::upstream::orphans::{children, spawn_own};

            #[test]
            fn a_child_started_as_its_own_is_listed_and_registered() {
                let (mut child, own) = spawn_own(
                    || std::process::Command::new("sleep").arg("5").spawn(),
                    |c| c.id(),
                )
                .unwrap();
                assert!(children().contains(&child.id()));
                assert_eq!(own.0, child.id());
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}
