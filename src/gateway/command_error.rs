//! Why an admin command on the gateway (a restart, a reload, a task's cancel) was refused, by what the one who
//! asked does next: name another upstream, ask again in a moment, or fix the file.

/// A refused restart or reload.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CommandError {
    /// No configured server has that name.
    #[error("no upstream is named {0:?}")]
    NoSuchUpstream(String),
    /// mcpx holds no live task of that id.
    #[error("no task {0:?} is held")]
    NoSuchTask(String),
    /// No call waits for approval under that id (decided already, or never held).
    #[error("no call waits for approval as {0:?}")]
    NoSuchApproval(String),
    /// The upstream running the task refused to cancel it, or cannot be reached.
    #[error("{0}")]
    Upstream(String),
    /// The first start of the upstreams is still under way; the command may be given again.
    #[error("mcpx is still starting its upstreams")]
    NotReady,
    /// The configuration file cannot be used (it names its line and key); the running
    /// configuration stays.
    #[error("{0}")]
    InvalidConfig(String),
}
