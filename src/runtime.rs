//! The executor every task of mcpx runs on. It is smol's global executor over again (worker
//! threads that each run it, started by the first task) with one difference: mcpx sizes it
//! itself (`[daemon] threads`), where smol's reads `SMOL_THREADS`, which mcpx could set only with
//! `std::env::set_var`, unsound once other threads may read the environment (and `unsafe` from
//! edition 2024).

use smol::{Executor, Task};
use std::future::Future;
use std::sync::{Once, OnceLock};

static EXECUTOR: Executor<'static> = Executor::new();
static THREADS: OnceLock<usize> = OnceLock::new();
static STARTED: Once = Once::new();

/// Runs tasks on `threads` threads (at least one). Only the first call counts, and only before
/// the first task is spawned: `SMOL_THREADS`, when set, sizes it instead, as it did smol's.
pub fn set_threads(threads: usize) {
    let _ = THREADS.set(chosen(threads));
}

fn chosen(threads: usize) -> usize {
    let from_environment = std::env::var("SMOL_THREADS")
        .ok()
        .and_then(|n| n.parse().ok());
    from_environment.unwrap_or(threads).max(1)
}

/// Spawns `future` as a task; the first one starts the executor's threads.
pub fn spawn<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) -> Task<T> {
    STARTED.call_once(start);
    EXECUTOR.spawn(future)
}

fn start() {
    let threads = *THREADS.get_or_init(|| chosen(1));
    for n in 1..=threads {
        let worker = std::thread::Builder::new()
            .name(format!("mcpx-{n}"))
            .spawn(|| loop {
                // A task that panics ends itself, not the thread that ran it.
                let run = || smol::block_on(EXECUTOR.run(std::future::pending::<()>()));
                let _ = std::panic::catch_unwind(run);
            });
        if let Err(e) = worker {
            // Without one worker no task would ever run: nothing mcpx can serve.
            assert!(n > 1, "cannot start an executor thread: {e}");
            tracing::warn!("runs with {} executor threads, not {threads}: {e}", n - 1);
            break;
        }
    }
}
