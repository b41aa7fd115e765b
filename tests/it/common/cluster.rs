//! Several `mcpx daemon` replicas sharing a cluster key, behind a real nginx configured with the
//! shipped `packaging/nginx/mcpx.conf`.

use super::http::*;
use super::*;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

/// A fresh cluster key in `dir`, made by `mcpx keygen`.
pub fn keygen(dir: &Path, name: &str) -> PathBuf {
    let out = Command::new(mcpx_bin()).arg("keygen").output().unwrap();
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim().len(), 64);
    let path = dir.join(name);
    std::fs::write(&path, &out.stdout).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// A daemon serving `servers` (configuration text) with these cluster keys.
pub fn replica_of(servers: &str, key: &Path, previous: Option<&Path>) -> Daemon {
    let previous = previous.map_or(String::new(), |p| {
        format!("previousKeyFile = {:?}\n", p.display().to_string())
    });
    Daemon::start(
        &format!(
            "[cluster]\nkeyFile = {:?}\n{previous}{servers}",
            key.display().to_string()
        ),
        "",
    )
}

/// How the proxy spreads requests over the replicas.
#[derive(Clone, Copy, PartialEq)]
pub enum Balance {
    /// The shipped configuration: a legacy session's requests on one replica, the rest spread.
    Shipped,
    /// Round-robin, the shipped file's `hash` line taken out.
    RoundRobin,
}

/// nginx on a free loopback port in front of `replicas`; killed when dropped.
pub struct Nginx {
    child: Child,
    pub addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Nginx {
    pub fn start(replicas: &[&Daemon], balance: Balance) -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let shipped = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/packaging/nginx/mcpx.conf"
        ))
        .unwrap();
        let servers: String = replicas
            .iter()
            .map(|r| format!("server {};\n    ", r.addr))
            .collect();
        let listed =
            "server 127.0.0.1:7777;\n    server 127.0.0.1:7778;\n    server 127.0.0.1:7779;\n    ";
        let hash = "hash $mcpx_affinity consistent;\n";
        assert!(
            shipped.contains(listed) && shipped.contains(hash),
            "the shipped configuration's upstream block changed"
        );
        let mut site = shipped.replace(listed, &servers).replace(
            "listen 127.0.0.1:8080;",
            &format!("listen 127.0.0.1:{port};"),
        );
        if balance == Balance::RoundRobin {
            site = site.replace(hash, "\n");
        }
        let prefix = dir.path().display().to_string();
        // A replica without a token serves only its own user: the workers run as the tests do.
        let user = match rustix::process::geteuid().is_root() {
            true => "user root;\n",
            false => "",
        };
        let conf = format!(
            "{user}daemon off;\nworker_processes 1;\npid {prefix}/nginx.pid;\nerror_log {prefix}/error.log;\n\
             events {{ worker_connections 1024; }}\nhttp {{\n access_log off;\n\
             client_body_temp_path {prefix}/body;\n proxy_temp_path {prefix}/proxy;\n\
             fastcgi_temp_path {prefix}/fastcgi;\n uwsgi_temp_path {prefix}/uwsgi;\n scgi_temp_path {prefix}/scgi;\n\
             {site}\n}}\n"
        );
        let path = dir.path().join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        let child = Command::new(deps::nginx())
            .args(["-p", &prefix, "-c", path.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        assert!(
            eventually(|| std::net::TcpStream::connect(addr).is_ok()),
            "nginx did not start: {}",
            std::fs::read_to_string(dir.path().join("error.log")).unwrap_or_default()
        );
        Nginx {
            child,
            addr,
            _dir: dir,
        }
    }
}

impl Nginx {
    /// nginx's error log, for a failure's message.
    pub fn errors(&self) -> String {
        std::fs::read_to_string(self._dir.path().join("error.log")).unwrap_or_default()
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Three replicas that reach one shared remote upstream (a daemon serving `backend`'s servers,
/// the fixture, as a team's remote server would be), behind nginx: what a client sees is the same whichever
/// replica serves it, and the upstream's `list_changed` reaches every replica.
pub struct Cluster {
    pub backend: Daemon,
    pub replicas: Vec<Daemon>,
    pub nginx: Nginx,
    _dir: tempfile::TempDir,
}

impl Cluster {
    pub fn start(backend: &str, balance: Balance) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let key = keygen(dir.path(), "cluster.key");
        let backend = Daemon::start(backend, "");
        // The backend's names kept as they are, but for its own built-in tools (the replica has
        // its own).
        let builtins: String = ["upstreams", "echo", "login", "about"]
            .iter()
            .map(|tool| format!("[servers.fixture.tools.mcpx__{tool}]\ndisabled = true\n"))
            .collect();
        let servers = format!(
            "[servers.fixture]\nurl = \"http://{}/mcp\"\nprefix = \"\"\n{builtins}",
            backend.addr
        );
        let replicas: Vec<Daemon> = (0..3).map(|_| replica_of(&servers, &key, None)).collect();
        let nginx = Nginx::start(&replicas.iter().collect::<Vec<_>>(), balance);
        Cluster {
            backend,
            replicas,
            nginx,
            _dir: dir,
        }
    }

    /// The URL clients are given.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.nginx.addr)
    }
}
