//! Tokens on the wire: what a refusal (401, or 403 for more scope) makes
//! of a call: one retry with a refreshed token, or the login that is needed.

use super::HttpUpstream;
use crate::failure::Failure;
use crate::upstream::auth::discovery::Challenge;
use crate::upstream::auth::NeedsLogin;
use std::sync::atomic::Ordering;

impl HttpUpstream {
    /// After the server refused `used`: a fresh token to retry with (once), or the login that
    /// is needed, remembered for supervision to show.
    pub(super) async fn authorize_again(
        &self,
        used: Option<&str>,
        attempt: u32,
        challenge: &Challenge,
    ) -> Result<(), Failure> {
        let Some(auth) = &self.auth else {
            return Err(Failure::gone(&self.name, "refused mcpx (401)"));
        };
        auth.after_refusal(used, attempt, challenge)
            .await
            .map_err(|needed| {
                self.needs_login.store(true, Ordering::Relaxed);
                Failure::Refused(needed.to_string())
            })
    }

    /// The server wants more scope than the token has: remembered for the next login (which
    /// asks for it together with what was granted), and a login is needed.
    pub(super) fn step_up(&self, scope: Option<&str>) -> Failure {
        if let (Some(auth), Some(scope)) = (&self.auth, scope) {
            auth.wants_scope(scope);
        }
        self.needs_login.store(true, Ordering::Relaxed);
        let needed = NeedsLogin::Login(self.name.clone());
        match scope {
            Some(scope) => {
                Failure::Refused(format!("{needed} (the server asks for scope {scope:?})"))
            }
            None => Failure::Refused(needed.to_string()),
        }
    }
}
