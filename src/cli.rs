//! The command line: one definition, from which the binary parses its arguments, the man page
//! `mcpx(1)` is rendered, and shell completions are generated, so the three cannot disagree.

use clap::{CommandFactory, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

/// One MCP server made of many: merges your upstream MCP servers for every client.
#[derive(Debug, Parser)]
#[command(
    name = "mcpx",
    version,
    about = "an MCP gateway: many upstream MCP servers, one server to every client",
    long_about = "mcpx runs your upstream MCP servers, merges their tools, prompts and resources into one \
catalog, and serves it to every client in whichever protocol revision the client speaks \
(2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25 and 2026-07-28), over stdio (mcpx serve) and \
Streamable HTTP (mcpx daemon). Its configuration is described in mcpx.toml(5)."
)]
pub struct Cli {
    /// Configuration file (default: $XDG_CONFIG_HOME/mcpx/config.toml; none is needed).
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve MCP on stdin and stdout (what an editor launches).
    ///
    /// With a daemon running on the same configuration file, the editor is served by it and its
    /// one set of upstreams (through its local socket); otherwise here, with upstreams of its own.
    Serve {
        /// Only through the daemon: fail if none answers.
        #[arg(long, conflicts_with = "standalone")]
        attach: bool,
        /// Never through the daemon: start the upstreams here.
        #[arg(long)]
        standalone: bool,
        /// See the catalog through this `[profiles.NAME]`: its servers and names only.
        #[arg(long, value_name = "NAME")]
        profile: Option<String>,
    },
    /// Serve MCP over Streamable HTTP at /mcp on daemon.address until SIGTERM or SIGINT.
    Daemon,
    /// List the merged tools, grouped by upstream, with each upstream's state: the running
    /// daemon's, when one runs on this configuration, else of servers started for the listing.
    Tools {
        /// Start the servers for this listing, even when a daemon runs.
        #[arg(long)]
        standalone: bool,
    },
    /// Call one tool and print its result; exits non-zero on a tool error. A daemon running on
    /// this configuration serves it (its server processes, policies, audit log), as it serves
    /// an editor's `mcpx serve`; without one, the servers are started for the call.
    Call {
        /// The exposed tool name (for example time__get_current_time).
        tool: String,
        /// The tool's arguments as a JSON object.
        #[arg(long, default_value = "{}", value_name = "JSON")]
        args: String,
        /// Start the servers for this call, even when a daemon runs.
        #[arg(long)]
        standalone: bool,
    },
    /// Convert an editor's MCP server configuration (Claude Desktop, VS Code, Cursor) into
    /// [servers.*] tables, and say which remote servers need `mcpx auth login`. No credential
    /// is written into the configuration: each token, key, password or Authorization header
    /// is replaced by `${keyring:NAME}` (kept in the keyring, or where none answers in a 0600
    /// file named by `${file:PATH}`). An `mcp-remote URL` bridge becomes the `url` server it
    /// stood for; mcpx's own entry is left out.
    Import {
        /// The editor's file: claude_desktop_config.json, .vscode/mcp.json, VS Code settings.json
        /// or .cursor/mcp.json.
        file: PathBuf,
        /// Add the servers to the configuration file (rewritten readable by you only) and keep
        /// their credentials, instead of printing the tables; a name already configured is
        /// skipped and said.
        #[arg(long)]
        write: bool,
    },
    /// Show what a running mcpx is doing: upstreams, sessions, streams, requests in flight.
    Status {
        /// Print the admin socket's JSON snapshot instead of text.
        #[arg(long)]
        json: bool,
        /// The admin socket (default: admin.socket, the daemon's).
        #[arg(long, value_name = "PATH")]
        socket: Option<PathBuf>,
    },
    /// Log in to remote servers that need it, and list or forget those logins.
    Auth {
        /// What to do.
        #[command(subcommand)]
        action: AuthAction,
    },
    /// Ask the running daemon to re-read its configuration (as SIGHUP does): added servers
    /// start, removed ones stop, changed ones restart.
    Reload,
    /// Print a new random key for `[cluster] keyFile` (64 hexadecimal digits), e.g.
    /// `(umask 077; mcpx keygen > /etc/mcpx/cluster.key)`.
    Keygen,
    /// How mcpx starts an upstream server so that it dies with mcpx (internal).
    #[command(hide = true)]
    ExecUpstream {
        /// The server's program and arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// How mcpx confines a sandboxed upstream before running it (internal).
    #[command(name = "__sandbox-exec", hide = true)]
    SandboxExec {
        /// What to enforce, as JSON ([`crate::sandbox::Spec`]).
        #[arg(long)]
        spec: String,
        /// The server's program and arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Review the definitions of pinned servers that changed, or appeared, since they were
    /// approved: list them, show what changed, approve or reject it.
    Pins {
        /// What to do.
        #[command(subcommand)]
        action: PinsAction,
    },
    /// The calls that wait for your approval (`[approvals]`): list them, approve or deny one.
    Approvals {
        /// What to do (default: list).
        #[command(subcommand)]
        action: Option<ApprovalsAction>,
    },
    /// Keep secrets in the desktop's keyring, where `${keyring:NAME}` in the configuration
    /// reads them, and restart the servers that use a secret when it changes.
    Secret {
        /// What to do.
        #[command(subcommand)]
        action: SecretAction,
    },
    /// Check what this machine can enforce for sandboxed servers (Landlock's ABI, seccomp,
    /// private network namespaces, cgroup delegation) and whether a keyring answers for
    /// `${keyring:…}`.
    Doctor,
    /// Print a completion script for a shell.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: Shell,
    },
}

/// `mcpx approvals …`.
#[derive(Debug, Subcommand)]
pub enum ApprovalsAction {
    /// The calls waiting, in every running mcpx: id, caller, tool and arguments.
    List,
    /// Let the call waiting as ID go on (once: the id then names nothing).
    Approve {
        /// The id `mcpx approvals` and `mcpx status` show.
        id: String,
    },
    /// Refuse the call waiting as ID: its caller is told it was denied.
    Deny {
        /// The id `mcpx approvals` and `mcpx status` show.
        id: String,
    },
}

/// `mcpx auth …`.
#[derive(Debug, Subcommand)]
pub enum AuthAction {
    /// Log in to the server NAME in the browser ($BROWSER, else xdg-open; the URL is printed
    /// too), store its tokens, and tell every mcpx running on this configuration (the daemon,
    /// editors' `mcpx serve`) to use them.
    Login {
        /// The server's name in `[servers]`.
        name: String,
    },
    /// Each remote server's login, and each person's own login to a per-identity server: its
    /// authorization server, scopes and expiry (never a token).
    #[command(visible_alias = "list")]
    Status,
    /// Forget the server NAME's tokens (or one person's, with --identity), revoking them where
    /// its authorization server offers it.
    Logout {
        /// The server's name in `[servers]`.
        name: String,
        /// The subject of the person whose own login to forget (a per-identity server's).
        #[arg(long)]
        identity: Option<String>,
        /// Their identity provider, where people of two providers share a subject.
        #[arg(long, requires = "identity")]
        issuer: Option<String>,
    },
    /// Approve the client waiting on the built-in authorization server's consent page that
    /// shows CODE (`auth.mode = "builtin"`); the page then continues with Allow.
    Approve {
        /// The code the page shows (any case; the dash may be left out).
        code: String,
    },
}

/// `mcpx pins …`.
#[derive(Debug, Subcommand)]
pub enum PinsAction {
    /// What waits for review (changed or new definitions), and what was rejected.
    Status,
    /// What changed: the description word by word, anything else line by line.
    Diff {
        /// The server's name in `[servers]`.
        server: String,
        /// One item: a tool's or prompt's name, a resource's URI, or `tool:NAME` and the like.
        item: Option<String>,
    },
    /// Serve what the server lists now (every change of SERVER waiting, or ITEM's), and tell
    /// every running mcpx.
    Approve {
        /// The server's name in `[servers]`.
        server: String,
        /// One item (as for `diff`).
        item: Option<String>,
    },
    /// Keep refusing what the server lists now (every change of SERVER waiting, or ITEM's),
    /// without asking again until it changes.
    Reject {
        /// The server's name in `[servers]`.
        server: String,
        /// One item (as for `diff`).
        item: Option<String>,
    },
}

/// `mcpx secret …`.
#[derive(Debug, Subcommand)]
pub enum SecretAction {
    /// Keep the secret NAME, read from standard input (typed without echo on a terminal,
    /// else the whole input without its final line break), never from the command line where
    /// other users' `ps` sees it; every running mcpx restarts the servers that use it.
    Set {
        /// Its name: what `${keyring:NAME}` says.
        name: String,
    },
    /// The secrets the keyring holds for mcpx and the servers that name each (never a value),
    /// and those the configuration names that it lacks.
    List,
    /// Forget the secret NAME; the servers that use it stop, saying it is missing.
    Rm {
        /// Its name.
        name: String,
    },
}

/// Shells with completion scripts.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Shell {
    /// GNU Bash.
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
}

/// The completion script for `shell`.
pub fn completions(shell: Shell) -> Vec<u8> {
    let generator = match shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(generator, &mut Cli::command(), "mcpx", &mut script);
    script
}

/// The man pages rendered from this definition: `mcpx.1`, and `mcpx-SUBCOMMAND.1` for each
/// subcommand a user types (not the hidden plumbing mcpx runs itself), as (file name, page).
pub fn man_pages() -> Vec<(String, Vec<u8>)> {
    let mut command = Cli::command();
    command.build();
    let render = |command: clap::Command| {
        let mut page = Vec::new();
        // Rendering into a Vec cannot fail.
        let _ = clap_mangen::Man::new(command).render(&mut page);
        page
    };
    let mut pages = vec![("mcpx.1".to_owned(), render(command.clone()))];
    for subcommand in command
        .get_subcommands()
        .filter(|c| c.get_name() != "help" && !c.is_hide_set())
    {
        let name = format!("mcpx-{}", subcommand.get_name());
        pages.push((
            format!("{name}.1"),
            render(
                subcommand
                    .clone()
                    .name(name)
                    .version(env!("CARGO_PKG_VERSION")),
            ),
        ));
    }
    pages
}

#[cfg(test)]
mod every_revision {
    mod cli {
        use crate::cli::{completions, man_pages, Cli, Shell};
        use clap::CommandFactory;

        #[test]
        fn the_definition_is_consistent() {
            Cli::command().debug_assert();
        }

        /// `man/mcpx*.1` are the pages this definition renders; after changing the CLI,
        /// regenerate them with `MCPX_BLESS=1 cargo test --lib man_pages`.
        #[test]
        fn the_committed_man_pages_match_the_cli() {
            for (name, page) in man_pages() {
                let path = format!("{}/man/{name}", env!("CARGO_MANIFEST_DIR"));
                if std::env::var_os("MCPX_BLESS").is_some() {
                    std::fs::write(&path, &page).unwrap();
                }
                let committed = std::fs::read(&path).unwrap_or_default();
                assert!(
                    committed == page,
                    "man/{name} drifted from the CLI: run MCPX_BLESS=1 cargo test --lib man_pages"
                );
            }
        }

        #[test]
        fn completions_name_every_subcommand() {
            let bash = String::from_utf8(completions(Shell::Bash)).unwrap();
            for subcommand in [
                "serve",
                "daemon",
                "tools",
                "call",
                "import",
                "status",
                "completions",
            ] {
                assert!(bash.contains(subcommand), "{subcommand}");
            }
        }
    }
}
