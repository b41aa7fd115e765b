//! Hot reload: the configuration's `[servers]` applied to a running gateway. Unchanged servers
//! keep running untouched, removed ones stop, new ones start, and clients hear `list_changed`
//! only for what actually changed.

use super::Supervisor;
use crate::config::Settings;
use crate::gateway::link::UpstreamState;
use crate::gateway::link::STOP_GRACE;
use crate::gateway::upstreams::Upstream;
use crate::gateway::CommandError;
use crate::sync::write;
use std::sync::Arc;

impl Supervisor {
    /// Applies a new configuration's `[servers]`: removed servers stop (their calls in flight
    /// fail), added ones start, changed ones restart; unchanged ones keep running untouched.
    /// Clients hear `list_changed` for what changed. Other sections need a restart of mcpx.
    pub(in crate::gateway) async fn reload(
        self: &Arc<Self>,
        settings: &Settings,
    ) -> Result<String, CommandError> {
        let config = &settings.config;
        self.started()?;
        let current = self.upstreams.all();
        let keep: Vec<Arc<Upstream>> = current
            .iter()
            .filter(|u| {
                config.servers.get(&u.name) == Some(&u.config)
                    && settings.servers.get(&u.name) == Some(&u.expanded)
            })
            .cloned()
            .collect();
        let leaving: Vec<Arc<Upstream>> = current
            .iter()
            .filter(|u| !keep.iter().any(|k| k.id == u.id))
            .cloned()
            .collect();
        let arriving: Vec<Arc<Upstream>> = config
            .servers
            .iter()
            .filter(|(name, _)| !keep.iter().any(|k| &k.name == *name))
            .map(|(name, server)| self.upstreams.make(name, server, settings.server(name)))
            .collect();
        let mut next: Vec<Arc<Upstream>> = keep.iter().chain(&arriving).cloned().collect();
        next.sort_by(|a, b| a.name.cmp(&b.name));
        *write(&self.upstreams.list) = next;
        for upstream in &leaving {
            upstream.removed.cancel();
            let connection = upstream.link.stop(UpstreamState::down("removed".into()));
            if let Some(connection) = connection {
                connection.shutdown(STOP_GRACE).await;
            }
        }
        self.start_all(arriving.clone()).await;
        let collisions = self.publish_catalog();
        let names = |list: &[Arc<Upstream>]| {
            list.iter()
                .map(|u| u.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut message = format!(
            "reloaded: started [{}], stopped [{}], unchanged [{}]",
            names(&arriving),
            names(&leaving),
            names(&keep)
        );
        for collision in &collisions {
            message.push_str(&format!("\n{collision}"));
        }
        tracing::info!("{message}");
        Ok(message)
    }
}
