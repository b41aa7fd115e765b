//! Confining a stdio upstream without Docker: what it may read, write and run, which network it
//! may use, and how much it may hold.
//!
//! The daemon is multi-threaded, so nothing is applied between its `fork` and `execve` (an
//! allocator lock held by another thread at the fork would deadlock the child). Instead the
//! server is started as `mcpx __sandbox-exec --spec JSON -- PROGRAM ARGS`: a fresh, single-threaded
//! process ([`helper`]) that applies each layer to itself and then becomes the program. The
//! layers, in the order the helper applies them:
//!
//! 1. resource limits: open files, no core dumps, data size ([`limits`]);
//! 2. private namespaces: a network namespace for `network = "loopback"`, a mount namespace
//!    that hides the directories where Unix sockets live when some are allowed and Landlock
//!    cannot say which ([`namespaces`], [`unix_sockets`]);
//! 3. no capabilities and `no_new_privs`, so that even root's server holds no privilege
//!    ([`capabilities`]);
//! 4. Landlock: the filesystem allowlists, TCP ports, Unix socket paths, and scoped IPC
//!    ([`filesystem`]);
//! 5. a seccomp filter: only the socket families the network mode needs (Unix sockets only
//!    where some are allowed), never `io_uring` or `ptrace` ([`syscalls`]).
//!
//! The daemon builds the [`Spec`] from the configuration ([`Spec::for_server`]); the helper
//! answers with a [`Report`] of what the kernel actually enforced, as its first stderr line,
//! which the daemon shows in `mcpx status`, the console and `mcpx_sandbox_degraded`. A layer
//! the kernel cannot apply is never passed over in silence: `onUnavailable` refuses to start
//! the server, or starts it and says what is missing.

pub mod capabilities;
pub mod cgroup;
pub mod filesystem;
pub mod helper;
pub mod limits;
pub mod namespaces;
pub mod probe;
pub mod syscalls;
pub mod unix_sockets;

use crate::config::{parse_size, Network, OnUnavailable, Sandbox, PRIVATE_TMP, SYSTEM};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What the helper is to enforce for one server: the configuration with every preset and
/// placeholder resolved to absolute paths.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    /// Readable (and listable).
    pub read: Vec<PathBuf>,
    /// Writable, and readable.
    pub write: Vec<PathBuf>,
    /// Executable, and readable.
    pub exec: Vec<PathBuf>,
    /// What network it may use.
    pub network: Network,
    /// With [`Network::Tcp`]: ports it may connect to.
    pub tcp_connect: Vec<u16>,
    /// With [`Network::Tcp`]: ports it may bind.
    pub tcp_bind: Vec<u16>,
    /// The Unix sockets it may connect to; none when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unix_sockets: Vec<PathBuf>,
    /// `RLIMIT_NOFILE`.
    pub nofile: u64,
    /// Memory in bytes, if limited.
    pub memory: Option<u64>,
    /// Processes and threads, if limited.
    pub pids: Option<u64>,
    /// With `memory` or `pids`: the server's cgroup to join, its limits written by mcpx, or
    /// why there is none (the limits then fall back to rlimits, or are missing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cgroup: Option<Result<PathBuf, String>>,
    /// Whether a missing layer stops the start.
    pub fail_when_unavailable: bool,
    /// Layers to treat as missing, as if the kernel lacked them: `MCPX_SANDBOX_ASSUME_MISSING`
    /// (comma-separated: `landlock`, `seccomp`, `userns`), to rehearse what `onUnavailable`
    /// does on an older kernel before relying on it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assume_missing: Vec<String>,
}

/// What the helper enforced, as it reports it to the daemon.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// Each layer in force, as people read it ("filesystem: landlock v7").
    pub enforced: Vec<String>,
    /// Each layer asked for that the kernel could not apply, with why.
    pub missing: Vec<String>,
}

impl Report {
    /// Whether something asked for is not in force.
    pub fn is_degraded(&self) -> bool {
        !self.missing.is_empty()
    }

    /// One line: what is enforced, then what is missing.
    pub fn summary(&self) -> String {
        let mut line = self.enforced.join("; ");
        if self.is_degraded() {
            line.push_str(&format!("; MISSING: {}", self.missing.join("; ")));
        }
        line
    }
}

/// The prefix of the helper's report line on stderr; the daemon takes it from the first line
/// only, so the server cannot forge one later.
pub const REPORT_PREFIX: &str = "mcpx-sandbox-report: ";

/// The environment variable naming layers to treat as missing (see [`Spec::assume_missing`]).
pub const ASSUME_MISSING: &str = "MCPX_SANDBOX_ASSUME_MISSING";

/// Read-only runtime paths of `"system"`: the libraries, interpreters and configuration that
/// programs read at start (missing ones are skipped).
const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/opt",
    "/nix/store",
    "/etc/alternatives",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/gai.conf",
    "/etc/group",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/mime.types",
    "/etc/nsswitch.conf",
    "/etc/os-release",
    "/etc/passwd",
    "/etc/pki",
    "/etc/resolv.conf",
    "/etc/ssl",
    "/etc/timezone",
    // Runtimes read their own process's entries (Node its cgroup and limits, Python its fds).
    "/proc",
    "/sys/devices/system/cpu",
    "/sys/fs/cgroup",
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// What `"system"` lets run.
const SYSTEM_EXEC: &[&str] = &[
    "/usr",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/bin",
    "/sbin",
    "/opt",
    "/nix/store",
];

/// What every sandboxed server may write: the bit buckets.
const ALWAYS_WRITABLE: &[&str] = &["/dev/null", "/dev/zero", "/dev/full"];

impl Spec {
    /// The spec for server `name` confined by `sandbox`, whose program is `command` (looked up
    /// in `path`, the child's `PATH`, as the kernel will), in `cwd`. Makes its private
    /// temporary directory, `tmp`.
    pub fn for_server(
        sandbox: &Sandbox,
        command: &str,
        path: Option<&str>,
        tmp: &Path,
    ) -> Result<Spec, String> {
        make_private_dir(tmp)?;
        let home = std::env::var_os("HOME").map(PathBuf::from);
        let prefixes = command_prefixes(command, path, home.as_deref());
        let resolve = |entries: &[String], system: &[&str]| -> Result<Vec<PathBuf>, String> {
            let mut paths = Vec::new();
            for entry in entries {
                match entry.as_str() {
                    SYSTEM => {
                        paths.extend(system.iter().map(PathBuf::from));
                        paths.extend(prefixes.iter().cloned());
                    }
                    PRIVATE_TMP => paths.push(tmp.to_path_buf()),
                    _ => paths.push(expand_path(entry, home.as_deref())?),
                }
            }
            Ok(paths)
        };
        let mut write = resolve(&sandbox.fs_write, &[])?;
        write.extend(ALWAYS_WRITABLE.iter().map(PathBuf::from));
        Ok(Spec {
            read: resolve(&sandbox.fs_read, SYSTEM_READ)?,
            write,
            exec: resolve(&sandbox.fs_exec, SYSTEM_EXEC)?,
            network: sandbox.network,
            tcp_connect: sandbox.tcp_connect.clone(),
            tcp_bind: sandbox.tcp_bind.clone(),
            unix_sockets: sandbox
                .unix_sockets
                .iter()
                .map(|entry| expand_path(entry, home.as_deref()))
                .collect::<Result<_, _>>()?,
            nofile: sandbox.nofile,
            memory: sandbox.memory.as_deref().map(parse_size).transpose()?,
            pids: sandbox.pids,
            cgroup: None,
            fail_when_unavailable: sandbox.on_unavailable == OnUnavailable::Fail,
            assume_missing: std::env::var(ASSUME_MISSING)
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect(),
        })
    }

    /// Whether layer `name` is to be treated as missing.
    fn assumes_missing(&self, name: &str) -> bool {
        self.assume_missing.iter().any(|m| m == name)
    }
}

/// `~/x` under the home directory; anything else must be absolute.
fn expand_path(entry: &str, home: Option<&Path>) -> Result<PathBuf, String> {
    let path = match (entry.strip_prefix("~/"), entry == "~", home) {
        (Some(rest), _, Some(home)) => home.join(rest),
        (None, true, Some(home)) => home.to_path_buf(),
        (Some(_), _, None) | (None, true, None) => {
            return Err(format!("sandbox path {entry:?}: HOME is not set"))
        }
        _ => PathBuf::from(entry),
    };
    match path.is_absolute() {
        true => Ok(path),
        false => Err(format!(
            "sandbox path {entry:?} must be absolute, start with ~/, or be \"system\" or \"$TMP\""
        )),
    }
}

/// Where the command's program lives, as `"system"` adds it: its installation prefix (`/opt/node`
/// for `/opt/node/bin/npx`), both as found on `PATH` and after symbolic links (`npx` is a link
/// into npm's own tree), and the same for the interpreter of a script (`#!/usr/bin/env node`,
/// a virtual environment's Python, which links to a pyenv or uv installation). Never the home
/// directory or an ancestor of it: `~/bin/tool` adds `~/bin`, not all of `~`.
fn command_prefixes(command: &str, path: Option<&str>, home: Option<&Path>) -> Vec<PathBuf> {
    let Some(found) = find_program(command, path) else {
        return Vec::new();
    };
    let interpreter = interpreter_of(&found, path);
    let mut programs = vec![found];
    // An interpreter's own interpreter is not followed: one level is what scripts use.
    programs.extend(interpreter);
    let mut prefixes = Vec::new();
    for program in programs
        .iter()
        .flat_map(|p| [Some(p.clone()), std::fs::canonicalize(p).ok()])
        .flatten()
    {
        let Some(dir) = program.parent() else {
            continue;
        };
        let named_bin = dir.file_name().is_some_and(|n| n == "bin" || n == "sbin");
        let prefix = match dir.parent() {
            Some(parent) if named_bin => parent,
            _ => dir,
        };
        let too_wide =
            |p: &Path| p.parent().is_none() || home.is_some_and(|home| home.starts_with(p));
        let chosen = if too_wide(prefix) { dir } else { prefix };
        if !too_wide(chosen) && !prefixes.iter().any(|p: &PathBuf| p == chosen) {
            prefixes.push(chosen.to_path_buf());
        }
    }
    prefixes
}

/// The interpreter a script's `#!` line names, through `env` (and its `-S`) to the program on
/// `path`; `None` for a binary.
fn interpreter_of(program: &Path, path: Option<&str>) -> Option<PathBuf> {
    use std::io::Read;
    let mut head = [0u8; 256];
    let read = std::fs::File::open(program).ok()?.read(&mut head).ok()?;
    let line = head[..read].strip_prefix(b"#!")?;
    let line = String::from_utf8_lossy(line.split(|&b| b == b'\n').next()?).into_owned();
    let mut words = line.split_whitespace();
    let interpreter = words.next()?;
    match interpreter.ends_with("/env") {
        true => find_program(words.find(|w| !w.starts_with('-'))?, path),
        false => Some(PathBuf::from(interpreter)),
    }
}

/// The program `command` names, as `execvp` finds it.
fn find_program(command: &str, path: Option<&str>) -> Option<PathBuf> {
    if command.contains('/') {
        return std::path::absolute(command).ok();
    }
    path?
        .split(':')
        .map(|dir| Path::new(dir).join(command))
        .find(|candidate| candidate.is_file())
}

/// Makes `dir` (and its parents), the server's own: mode 0700, and refused if someone else
/// owns it (another user could have made it first, to read what the server writes).
fn make_private_dir(dir: &Path) -> Result<(), String> {
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
    let fail = |e: std::io::Error| format!("sandbox: cannot make {}: {e}", dir.display());
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(fail)?;
    let metadata = std::fs::symlink_metadata(dir).map_err(fail)?;
    if !metadata.is_dir() || metadata.uid() != rustix::process::geteuid().as_raw() {
        return Err(format!(
            "sandbox: {} is not a directory of this user",
            dir.display()
        ));
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).map_err(fail)
}

#[cfg(test)]
mod tests {
    mod every_revision {
        mod sandbox {
            use crate::config::Sandbox;
            use crate::sandbox::{command_prefixes, expand_path, Report, Spec};
            use std::path::{Path, PathBuf};

            #[test]
            fn the_command_prefix_is_its_installation_not_the_home_directory() {
                let dir = tempfile::tempdir().unwrap();
                let bin = dir.path().join("node/bin");
                std::fs::create_dir_all(&bin).unwrap();
                std::fs::write(bin.join("tool"), "").unwrap();
                let path = bin.display().to_string();
                assert_eq!(
                    command_prefixes("tool", Some(&path), None),
                    vec![dir.path().join("node")]
                );
                // ~/bin/tool: the prefix would be all of HOME, so only ~/bin is added.
                let home = dir.path().join("node");
                assert_eq!(
                    command_prefixes("tool", Some(&path), Some(&home)),
                    vec![bin.clone()]
                );
                assert!(command_prefixes("absent", Some(&path), None).is_empty());
                // A script's interpreter, through env, brings its installation too.
                let runtime = dir.path().join("runtime/bin");
                std::fs::create_dir_all(&runtime).unwrap();
                std::fs::write(runtime.join("node"), "").unwrap();
                std::fs::write(bin.join("script"), "#!/usr/bin/env -S node --flag\n").unwrap();
                let path = format!("{}:{}", bin.display(), runtime.display());
                assert_eq!(
                    command_prefixes("script", Some(&path), None),
                    vec![dir.path().join("node"), dir.path().join("runtime")]
                );
            }

            #[test]
            fn sandbox_paths_are_absolute_or_under_home() {
                let home = Path::new("/home/u");
                assert_eq!(
                    expand_path("~/notes", Some(home)),
                    Ok(PathBuf::from("/home/u/notes"))
                );
                assert!(expand_path("notes", Some(home)).is_err());
                assert!(expand_path("~/x", None).is_err());
            }

            #[test]
            fn the_defaults_read_the_system_write_only_the_private_tmp() {
                let dir = tempfile::tempdir().unwrap();
                let tmp = dir.path().join("tmp/s");
                let spec = Spec::for_server(&Sandbox::default(), "sh", Some("/bin"), &tmp).unwrap();
                assert!(spec.read.contains(&PathBuf::from("/usr")));
                assert!(spec.write.contains(&tmp));
                assert!(!spec.write.contains(&PathBuf::from("/usr")));
                assert!(spec.fail_when_unavailable);
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&tmp).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o700);
            }

            #[test]
            fn a_report_says_what_is_missing() {
                let report = Report {
                    enforced: vec!["filesystem: landlock v7".into()],
                    missing: vec!["pids: no delegated cgroup".into()],
                };
                assert!(report.is_degraded());
                assert_eq!(
                    report.summary(),
                    "filesystem: landlock v7; MISSING: pids: no delegated cgroup"
                );
            }
        }
    }
}
