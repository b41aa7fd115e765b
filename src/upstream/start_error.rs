//! Why an upstream did not come up, told by what its supervisor does about it: try again after
//! the backoff, wait for a person to log in, or wait for the configuration to change.

/// Why an upstream's start failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartError {
    /// What the configuration says cannot work (an unset `${VAR}`, a `url` that is not a URL, a
    /// header that cannot be sent): starting it again changes nothing until the file (or mcpx's
    /// environment) does.
    #[error("{0}")]
    Misconfigured(String),
    /// The server refuses mcpx until a person logs in; supervision keeps trying, so that the
    /// login's tokens are picked up without a restart.
    #[error("needs a login")]
    NeedsLogin,
    /// It could not be spawned, it exited, or its handshake or a listing failed.
    #[error("{0}")]
    Failed(String),
}

impl StartError {
    /// Whether supervision starts it again after the backoff.
    pub fn is_retried(&self) -> bool {
        !matches!(self, StartError::Misconfigured(_))
    }
}

impl From<String> for StartError {
    /// A failure of the running server, which the next start may not meet.
    fn from(reason: String) -> StartError {
        StartError::Failed(reason)
    }
}

#[cfg(test)]
mod every_revision {
    mod supervision {
        use crate::upstream::StartError;

        #[test]
        fn only_a_misconfigured_upstream_is_left_for_the_file_to_change() {
            assert!(!StartError::Misconfigured("servers.a.env.K: unset".into()).is_retried());
            assert!(StartError::NeedsLogin.is_retried());
            assert!(StartError::from("exited: status 1".to_owned()).is_retried());
        }
    }
}
