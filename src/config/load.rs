//! Reading the file and refusing what cannot work: every error names the line and the key.

use super::{
    default_path, AuthMode, Config, ConfigError, Credentials, PerIdentity, PersonToken, Start,
    BUILTIN_SERVER,
};
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::de::{DeTable, DeValue};

impl Config {
    /// Loads `explicit` if given (it must exist), else the default file if it exists, else the
    /// defaults.
    pub fn load(explicit: Option<&Path>) -> Result<(Config, Option<PathBuf>), ConfigError> {
        let path = match explicit {
            Some(path) => path.to_owned(),
            None => match default_path().filter(|p| p.exists()) {
                Some(path) => path,
                None => return Ok((Config::default(), None)),
            },
        };
        let text = std::fs::read_to_string(&path).map_err(|source| ConfigError::Read {
            path: path.clone(),
            source,
        })?;
        let config = Config::parse(&text).map_err(|(line, message)| ConfigError::Invalid {
            path: path.clone(),
            line,
            message,
        })?;
        Ok((config, Some(path)))
    }

    /// Parses and validates TOML text; an error is the 1-based line and a message naming the key.
    pub fn parse(text: &str) -> Result<Config, (usize, String)> {
        let config: Config = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |span| line_of(text, span.start));
            (line, e.message().to_owned())
        })?;
        let lines = Lines::of(text);
        let by_token = config.auth.mode == AuthMode::Token;
        if config.daemon.exposed()
            && by_token
            && config.daemon.token.as_deref().is_none_or(str::is_empty)
        {
            return Err((
                lines.at(&["daemon", "address"]),
                format!(
                    "daemon.address {} is reachable from other machines: set daemon.token (clients then send `Authorization: Bearer TOKEN`) or auth.mode = \"external\", or listen on a loopback address",
                    config.daemon.address
                ),
            ));
        }
        config.refuse_zero_caps(&lines)?;
        for (name, server) in &config.servers {
            let line = lines.at(&["servers", name]);
            let fail = |message: String| Err((line, format!("servers.{name}: {message}")));
            if name == BUILTIN_SERVER {
                return fail(format!("the name {BUILTIN_SERVER:?} is reserved for the built-in server; choose another"));
            }
            // `__` separates a prefix from a tool's own name: `a__b`'s `c` and `a`'s `b__c`
            // would both be exposed as `a__b__c`.
            if server.prefix(name).contains("__") {
                return fail(format!(
                    "{:?} holds `__`, which separates the prefix from the tool's own name; use another name or `prefix`",
                    server.prefix(name)
                ));
            }
            match (&server.command, &server.url) {
                (Some(_), Some(_)) => {
                    return fail("give either `command` or `url`, not both".into())
                }
                (None, None) => {
                    return fail(
                        "needs `command` (a program to spawn) or `url` (a remote server)".into(),
                    )
                }
                (Some(command), None) if command.trim().is_empty() => {
                    return fail("`command` is empty".into())
                }
                (None, Some(url))
                    if !(url.starts_with("http://") || url.starts_with("https://")) =>
                {
                    return fail(format!(
                        "`url` must start with http:// or https://, not {url:?}"
                    ))
                }
                (None, Some(_))
                    if !server.args.is_empty()
                        || !server.env.is_empty()
                        || server.inherit_env
                        || server.cwd.is_some()
                        || server.sandbox.is_some() =>
                {
                    return fail(
                        "`args`, `env`, `inheritEnv`, `cwd` and `sandbox` belong to a `command` server, not a `url` one"
                            .into(),
                    )
                }
                (Some(_), None)
                    if !server.headers.is_empty()
                        || server.oauth.is_some()
                        || !server.transport.is_auto() =>
                {
                    return fail(
                        "`headers`, `oauth` and `transport` belong to a `url` server, not a `command` one"
                            .into(),
                    )
                }
                _ => {}
            }
            if let Some(sandbox) = &server.sandbox {
                if server.inherit_env {
                    return fail("a sandboxed server's environment is cleared: name the variables it needs in `env` rather than `inheritEnv`".into());
                }
                if let Some(memory) = &sandbox.memory {
                    if let Err(e) = super::parse_size(memory) {
                        return fail(format!("sandbox.memory: {e}"));
                    }
                }
                let ports = !sandbox.tcp_connect.is_empty() || !sandbox.tcp_bind.is_empty();
                if ports && sandbox.network != super::Network::Tcp {
                    return fail("sandbox.tcpConnect and tcpBind need `network = \"tcp\"`".into());
                }
            }
            if server.credentials == Credentials::PerIdentity {
                match (&server.url, server.per_identity.token) {
                    (Some(_), None) => return fail("a per-identity `url` server needs `perIdentity.token = \"exchange\"`: how each person's token is had".into()),
                    (Some(_), Some(PersonToken::Login)) if config.auth.public_url.is_none() => {
                        return fail("`perIdentity.token = \"login\"` sends each person to sign in at mcpx's own page and back: it needs `[auth] publicUrl`".into())
                    }
                    (Some(_), Some(PersonToken::Exchange)) if config.auth.mode != AuthMode::External || config.auth.external.client_id.is_none() => {
                        return fail("`perIdentity.token = \"exchange\"` exchanges the caller's token at the identity provider: it needs `[auth] mode = \"external\"` and `[auth.external] clientId`".into())
                    }
                    (None, Some(_)) => return fail("`perIdentity.token` is how a `url` server's instance gets its person's token; a `command` server's gets its values from `{subject}`".into()),
                    (Some(_), Some(PersonToken::Exchange | PersonToken::Login)) | (None, None) => {}
                }
                if server.per_identity.max_instances == 0 {
                    return fail("perIdentity.maxInstances must be at least 1".into());
                }
                if server.start == Start::Lazy {
                    return fail("a per-identity server's instances are started by their callers' first calls already: `start = \"lazy\"` says nothing more".into());
                }
            } else if server.per_identity != PerIdentity::default() {
                return fail(
                    "`[servers.NAME.perIdentity]` needs `credentials = \"per-identity\"`".into(),
                );
            }
            if server.idle_timeout.is_some() && server.start != Start::Lazy {
                return fail("`idleTimeout` stops a `start = \"lazy\"` server; this one is started with mcpx and kept running".into());
            }
            if let Some(tool) = server.tools.iter().find_map(|(tool, o)| {
                o.name
                    .as_deref()
                    .filter(|n| n.trim().is_empty())
                    .map(|_| tool)
            }) {
                return fail(format!("tools.{tool}.name is empty"));
            }
        }
        config.check_profiles(&lines)?;
        config.check_auth(&lines)?;
        config.check_limits(&lines)?;
        config.check_hooks(&lines)?;
        let approved = &config.approvals.tools;
        if let Some(Err(e)) = approved
            .iter()
            .map(|g| globset::Glob::new(g))
            .find(Result::is_err)
        {
            return Err((
                lines.at(&["approvals", "tools"]),
                format!("approvals.tools: a glob does not compile: {e}"),
            ));
        }
        Ok(config)
    }

    /// Each hook is asked one way, by a URL or a program, about methods that name a target,
    /// its globs compile.
    fn check_hooks(&self, lines: &Lines) -> Result<(), (usize, String)> {
        let line = lines.at(&["guardrails", "hooks"]);
        for (n, hook) in self.guardrails.hooks.iter().enumerate() {
            let fail = |why: String| Err((line, format!("guardrails.hooks[{n}]: {why}")));
            match (&hook.url, hook.command.is_empty()) {
                (Some(_), false) | (None, true) => {
                    return fail("give either url or command".into())
                }
                (Some(url), true)
                    if !(url.starts_with("http://") || url.starts_with("https://")) =>
                {
                    return fail(format!("{url:?} is not an http:// or https:// URL"))
                }
                _ => {}
            }
            let asked = super::guardrails::HOOKED_METHODS;
            if let Some(method) = hook.methods.iter().find(|m| !asked.contains(&m.as_str())) {
                return fail(format!(
                    "{method:?} is not a method hooks are asked about ({})",
                    asked.join(", ")
                ));
            }
            if let Some(Err(e)) = hook
                .tools
                .iter()
                .map(|g| globset::Glob::new(g))
                .find(Result::is_err)
            {
                return fail(format!("a tools glob does not compile: {e}"));
            }
            if hook.timeout.is_zero() {
                return fail("timeout must be above zero".into());
            }
        }
        Ok(())
    }

    /// `[limits.tools]` keys are globs; no burst is zero (it would refuse every call).
    fn check_limits(&self, lines: &Lines) -> Result<(), (usize, String)> {
        let limits = &self.limits;
        if limits.burst == Some(0) {
            return Err((
                lines.at(&["limits", "burst"]),
                "limits.burst must be at least 1".into(),
            ));
        }
        for (pattern, limit) in &limits.tools {
            let line = lines.at(&["limits", "tools", pattern]);
            if let Err(e) = globset::Glob::new(pattern) {
                return Err((
                    line,
                    format!("limits.tools: {pattern:?} is not a glob pattern: {e}"),
                ));
            }
            if limit.burst == Some(0) {
                return Err((
                    line,
                    format!("limits.tools.{pattern:?}.burst must be at least 1"),
                ));
            }
        }
        if limits
            .loop_guard
            .as_ref()
            .is_some_and(|g| g.identical == 0 || g.window.is_zero())
        {
            return Err((
                lines.at(&["limits", "loopGuard"]),
                "limits.loopGuard needs identical and window above zero".into(),
            ));
        }
        Ok(())
    }

    /// `external` names its provider and the public URL its doors are known by; rules name
    /// profiles that exist and globs that compile.
    fn check_auth(&self, lines: &Lines) -> Result<(), (usize, String)> {
        let auth = &self.auth;
        let at = |path: &[&str]| lines.at(path);
        if let Some(url) = &auth.public_url {
            let parsed = url::Url::parse(url).ok();
            let origin_only = parsed.as_ref().is_some_and(|u| {
                matches!(u.scheme(), "https" | "http")
                    && u.path() == "/"
                    && u.query().is_none()
                    && u.fragment().is_none()
                    && !url.ends_with('/')
            });
            if !origin_only {
                return Err((
                    at(&["auth", "publicUrl"]),
                    format!("auth.publicUrl {url:?} must be an origin, like \"https://mcp.example.com\" (no path, no trailing slash)"),
                ));
            }
        }
        if auth.mode != AuthMode::Token && auth.public_url.is_none() {
            let mode = if auth.mode == AuthMode::External {
                "external"
            } else {
                "builtin"
            };
            return Err((at(&["auth", "mode"]), format!("auth.mode = \"{mode}\" needs auth.publicUrl: the URL clients reach the daemon by, which tokens must name")));
        }
        if auth.mode == AuthMode::External
            && auth.external.issuer.as_deref().is_none_or(str::is_empty)
        {
            return Err((at(&["auth", "mode"]), "auth.mode = \"external\" needs auth.external.issuer: the identity provider whose tokens are accepted".into()));
        }
        let external = &auth.external;
        if external.client_secret.is_some() && external.client_key.is_some() {
            return Err((at(&["auth", "external", "clientKey"]), "auth.external has both clientSecret and clientKey: mcpx proves itself to the provider one way, say which".into()));
        }
        if external.client_key.is_some() && external.client_id.is_none() {
            return Err((at(&["auth", "external", "clientKey"]), "auth.external.clientKey is the key of a client: name it with auth.external.clientId".into()));
        }
        if external.client_key_id.is_some() && external.client_key.is_none() {
            return Err((
                at(&["auth", "external", "clientKeyId"]),
                "auth.external.clientKeyId names clientKey's id, and there is no clientKey".into(),
            ));
        }
        for (n, rule) in auth.rules.iter().enumerate() {
            let line = at(&["auth", "rules"]);
            let fail = |message: String| Err((line, format!("auth.rules[{n}]: {message}")));
            for profile in &rule.profiles {
                if profile != "*" && !self.profiles.contains_key(profile) {
                    return fail(format!(
                        "names profile {profile:?}, which is not configured (\"*\" is every door)"
                    ));
                }
            }
            for pattern in rule.deny_tools.iter().chain(rule.step_up.keys()) {
                if let Err(e) = globset::Glob::new(pattern) {
                    return fail(format!("{pattern:?} is not a glob pattern: {e}"));
                }
            }
        }
        Ok(())
    }

    /// Each profile's name is a URL path segment (`/mcp/NAME`), names servers that exist, and
    /// has patterns that are globs.
    fn check_profiles(&self, lines: &Lines) -> Result<(), (usize, String)> {
        for (name, profile) in &self.profiles {
            let line = lines.at(&["profiles", name]);
            let fail = |message: String| Err((line, format!("profiles.{name}: {message}")));
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return fail(
                    "a profile's name is a URL path segment: letters, digits, `-` and `_`".into(),
                );
            }
            let unknown = profile.servers.iter().flatten().find(|server| {
                server.as_str() != BUILTIN_SERVER && !self.servers.contains_key(*server)
            });
            if let Some(server) = unknown {
                return fail(format!("names server {server:?}, which is not configured"));
            }
            for pattern in profile.include.iter().chain(&profile.exclude) {
                if let Err(e) = globset::Glob::new(pattern) {
                    return fail(format!("{pattern:?} is not a glob pattern: {e}"));
                }
            }
        }
        Ok(())
    }
}

impl Config {
    /// A cap or an interval of zero would refuse everything or spin (a keep-alive every 0 s), so
    /// it is a mistake, not a setting.
    fn refuse_zero_caps(&self, lines: &Lines) -> Result<(), (usize, String)> {
        let (d, t) = (&self.daemon, &self.transport);
        let mut checks: Vec<(Vec<&str>, &str, bool)> = vec![
            (vec!["daemon"], "maxConnections", d.max_connections == 0),
            (vec!["daemon"], "maxHeaders", d.max_headers == 0),
            (vec!["daemon"], "maxHeaderBytes", d.max_header_bytes == 0),
            (vec!["daemon"], "readTimeout", d.read_timeout.is_zero()),
            (
                vec!["transport"],
                "maxMessageBytes",
                t.max_message_bytes == 0,
            ),
            (vec!["transport"], "maxSessions", t.max_sessions == 0),
            (
                vec!["transport"],
                "maxInFlightPerClient",
                t.max_in_flight_per_client == 0,
            ),
            (
                vec!["transport"],
                "sseKeepAlive",
                t.sse_keep_alive.is_zero(),
            ),
            (vec!["audit"], "maxBytes", self.audit.max_bytes == 0),
            (
                vec!["cluster"],
                "sessionLifetime",
                self.cluster.session_lifetime.is_zero(),
            ),
            (
                vec!["transport"],
                "sessionIdleTimeout",
                t.session_idle_timeout.is_zero(),
            ),
        ];
        for (name, server) in &self.servers {
            let table = vec!["servers", name.as_str()];
            let zero_duration = |d: Option<Duration>| d.is_some_and(|d| d.is_zero());
            checks.extend([
                (
                    table.clone(),
                    "maxInFlight",
                    server.max_in_flight == Some(0),
                ),
                (
                    table.clone(),
                    "idleTimeout",
                    zero_duration(server.idle_timeout),
                ),
                (table, "timeout", zero_duration(server.timeout)),
            ]);
        }
        match checks.into_iter().find(|(_, _, zero)| *zero) {
            None => Ok(()),
            Some((mut path, key, _)) => {
                let table = path.join(".");
                path.push(key);
                Err((
                    lines.at(&path),
                    format!("{table}.{key} must be more than zero (leave it out for the default)"),
                ))
            }
        }
    }
}

/// Where each key of the file is written, for errors that name a key after the file has been
/// read: found by the key's path, not by its text, since the same key (`timeout`) is written
/// under many tables.
struct Lines<'t> {
    text: &'t str,
    document: Option<toml::Spanned<DeTable<'t>>>,
}

impl<'t> Lines<'t> {
    fn of(text: &'t str) -> Lines<'t> {
        Lines {
            text,
            document: DeTable::parse(text).ok(),
        }
    }

    /// The 1-based line of the key at `path` (`["servers", "gh", "timeout"]`); of the deepest
    /// key on the way that is written, when it is not (a default); 1 when none is.
    fn at(&self, path: &[&str]) -> usize {
        let Some(document) = &self.document else {
            return 1;
        };
        let mut table = document.get_ref();
        let mut offset = None;
        for key in path {
            let Some((written, value)) = table.iter().find(|(k, _)| k.get_ref() == key) else {
                break;
            };
            offset = Some(written.span().start);
            match value.get_ref() {
                DeValue::Table(inner) => table = inner,
                _ => break,
            }
        }
        offset.map_or(1, |offset| line_of(self.text, offset))
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}
