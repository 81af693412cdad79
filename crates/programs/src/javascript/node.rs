//! The JavaScript transforms run by V8, in a `node` child process per reader thread, fed
//! batches of documents over its stdin (node.js describes the exchange). rfs waits for
//! every child it starts (killed when its thread or its program goes), so that the CPU
//! node spends is counted as rfs's.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::program::RunError;

/// The glue both engines run, then node's loop.
fn program() -> String {
    format!(
        "const GLUE = {};\n{}",
        serde_json::to_string(super::RUNNER).expect("a string serialises"),
        include_str!("node.js")
    )
}

/// The oldest node whose JavaScript the glue needs.
const OLDEST: u32 = 18;
/// How much of node's stderr is kept for errors.
const STDERR_TAIL: usize = 2048;

/// Why this process has no usable node: the binary could not be run, or it is too old.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoNode {
    #[error("{node}: {why}")]
    NotRun { node: String, why: String },
    #[error("{node} --version says {version:?}; rfs needs node {OLDEST} or later")]
    TooOld { node: String, version: String },
}

/// The node binary this process uses: `RFS_NODE`, else `node` on the PATH, with its
/// version; or why there is none.
pub fn probe() -> &'static Result<(PathBuf, String), NoNode> {
    static PROBE: OnceLock<Result<(PathBuf, String), NoNode>> = OnceLock::new();
    PROBE.get_or_init(|| {
        let node = std::env::var_os("RFS_NODE")
            .filter(|v| !v.is_empty())
            .map_or_else(|| PathBuf::from("node"), PathBuf::from);
        let out = Command::new(&node)
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| NoNode::NotRun {
                node: node.display().to_string(),
                why: e.to_string(),
            })?;
        let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let major = version
            .strip_prefix('v')
            .and_then(|v| v.split('.').next())
            .and_then(|m| m.parse::<u32>().ok());
        match major {
            Some(m) if out.status.success() && m >= OLDEST => Ok((node, version)),
            _ => Err(NoNode::TooOld {
                node: node.display().to_string(),
                version,
            }),
        }
    })
}

/// One node child process running a program's transform.
#[derive(Debug)]
pub struct Node {
    child: Arc<Mutex<Child>>,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    stderr: Arc<Mutex<Vec<u8>>>,
    watch: Arc<Watch>,
    watchdog: JoinHandle<()>,
    line: String,
}

/// What a node's watchdog thread watches: the deadline of the call under way, set and
/// cleared by the caller without waking the thread (it wakes at least once per time
/// limit while no call is under way, so that it is never late).
#[derive(Debug)]
struct Watch {
    /// Nanoseconds from `epoch` at which the call under way runs out of time; 0: none.
    deadline: AtomicU64,
    epoch: Instant,
    /// Whether the watchdog stopped node for running out of time.
    timed_out: AtomicBool,
    /// Set when the node goes: the watchdog ends.
    done: AtomicBool,
}

impl Watch {
    fn now(&self) -> u64 {
        // At least 1: 0 is "no call".
        (self.epoch.elapsed().as_nanos() as u64).max(1)
    }
}

impl Node {
    /// Starts node with the program's script and bindings (JSON text): an error names
    /// what failed, as the QuickJS engine's do.
    pub fn start(
        node: &Path,
        script: &str,
        bindings: &str,
        time_limit: Duration,
    ) -> Result<Node, RunError> {
        let mut child = Command::new(node)
            // node reads the certificates this names when it starts (tens of milliseconds
            // of CPU); the transform makes no TLS connection.
            .env_remove("NODE_EXTRA_CA_CERTS")
            .arg("--max-old-space-size=512")
            .arg("-e")
            .arg(program())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| RunError(format!("starting {}: {e}", node.display())))?;
        let stdin = child.stdin.take().expect("piped");
        widen(&stdin);
        let stdout = BufReader::with_capacity(1 << 20, child.stdout.take().expect("piped"));
        let mut err = child.stderr.take().expect("piped");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        {
            let tail = stderr.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while let Ok(n) = err.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    let mut t = tail.lock().unwrap_or_else(|p| p.into_inner());
                    t.extend_from_slice(&buf[..n]);
                    if t.len() > STDERR_TAIL {
                        let cut = t.len() - STDERR_TAIL;
                        t.drain(..cut);
                    }
                }
            });
        }
        let child = Arc::new(Mutex::new(child));
        let watch = Arc::new(Watch {
            deadline: AtomicU64::new(0),
            epoch: Instant::now(),
            timed_out: AtomicBool::new(false),
            done: AtomicBool::new(false),
        });
        let watchdog = {
            let child = Arc::downgrade(&child);
            let watch = watch.clone();
            std::thread::spawn(move || watchdog(&watch, &child, time_limit))
        };
        let mut n = Node {
            child,
            stdin,
            stdout,
            stderr,
            watch,
            watchdog,
            line: String::new(),
        };
        let init = serde_json::json!({"script": script, "bindings": bindings}).to_string();
        let answer = n.call(&[format!("{init}\n").as_bytes()], time_limit, 0)?;
        if answer.trim_end() == r#"{"ready":true}"# {
            return Ok(n);
        }
        #[derive(serde::Deserialize)]
        struct Init {
            init: String,
        }
        match serde_json::from_str::<Init>(&answer) {
            Ok(i) => Err(RunError(i.init)),
            Err(_) => Err(RunError(format!(
                "node answered {:?} when started",
                answer.chars().take(200).collect::<String>()
            ))),
        }
    }

    /// Sends `lines` (the parts of text ending in a newline) and returns node's answer
    /// line; `docs` is how many documents they hold, for errors.
    pub fn call(
        &mut self,
        lines: &[&[u8]],
        time_limit: Duration,
        docs: usize,
    ) -> Result<String, RunError> {
        let limit = u64::try_from(time_limit.as_nanos()).unwrap_or(u64::MAX / 2);
        let w = &self.watch;
        w.deadline
            .store(w.now().saturating_add(limit), Ordering::SeqCst);
        let sent = lines
            .iter()
            .try_for_each(|l| self.stdin.write_all(l))
            .and_then(|()| self.stdin.flush());
        self.line.clear();
        let read = match sent {
            Ok(()) => self.stdout.read_line(&mut self.line),
            Err(e) => Err(e),
        };
        self.watch.deadline.store(0, Ordering::SeqCst);
        match read {
            Ok(n) if n > 0 && self.line.ends_with('\n') => Ok(std::mem::take(&mut self.line)),
            Ok(_) | Err(_) => Err(self.died(time_limit, docs)),
        }
    }

    /// Why node stopped answering: its time ran out, or it died (with its stderr's tail).
    fn died(&mut self, time_limit: Duration, docs: usize) -> RunError {
        if self.watch.timed_out.load(Ordering::SeqCst) {
            return RunError(format!(
                "the transform was interrupted: it ran over its time limit of {time_limit:?} \
                 on a batch of {docs} document(s), and node was stopped"
            ));
        }
        let status = {
            let mut c = self.child.lock().unwrap_or_else(|p| p.into_inner());
            let _ = c.kill();
            c.wait()
        };
        // The stderr reader ends with the process; give it a moment to take the last words.
        std::thread::sleep(Duration::from_millis(50));
        let tail = self
            .stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let tail = String::from_utf8_lossy(&tail);
        let status = status.map_or_else(|e| e.to_string(), |s| s.to_string());
        RunError(format!(
            "node stopped ({status}) while running the transform; its stderr ends with: {}",
            tail.trim()
        ))
    }

    /// The process, for the program's registry of the processes to reap.
    pub fn process(&self) -> Weak<Mutex<Child>> {
        Arc::downgrade(&self.child)
    }
}

/// How large rfs asks the pipe to node to be: a batch of documents of a few KB fits, so
/// that node reads it in one go (the default, 64 KiB, takes a dozen wake-ups on both
/// sides). The system's limit for one pipe may be lower: then the pipe stays as it is.
const PIPE_SIZE: libc::c_int = 1 << 20;

/// Asks for the pipe to node to be [`PIPE_SIZE`] (Linux); a refusal changes nothing.
fn widen(stdin: &ChildStdin) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: fcntl on a descriptor this process owns, with an integer argument.
        let _ = unsafe { libc::fcntl(stdin.as_raw_fd(), libc::F_SETPIPE_SZ, PIPE_SIZE) };
    }
    #[cfg(not(target_os = "linux"))]
    let _ = stdin;
}

/// Stops and waits for `child`.
pub fn reap(child: &Mutex<Child>) {
    let mut c = child.lock().unwrap_or_else(|p| p.into_inner());
    let _ = c.kill();
    let _ = c.wait();
}

impl Drop for Node {
    fn drop(&mut self) {
        reap(&self.child);
        self.watch.done.store(true, Ordering::SeqCst);
        self.watchdog.thread().unpark();
    }
}

/// Kills the child when a call runs past its deadline; ends with its [`Node`]. It sleeps
/// until the deadline of the call under way, or for `time_limit` when there is none (a
/// call that starts meanwhile ends no sooner than that), and never needs waking for a call.
fn watchdog(watch: &Watch, child: &Weak<Mutex<Child>>, time_limit: Duration) {
    let idle = time_limit.max(Duration::from_millis(1));
    while !watch.done.load(Ordering::SeqCst) {
        let deadline = watch.deadline.load(Ordering::SeqCst);
        if deadline == 0 {
            std::thread::park_timeout(idle);
            continue;
        }
        let now = watch.now();
        if now < deadline {
            std::thread::park_timeout(Duration::from_nanos(deadline - now));
            continue;
        }
        // The same call still under way (its deadline, taken back): it ran out of time.
        if watch
            .deadline
            .compare_exchange(deadline, 0, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
        {
            watch.timed_out.store(true, Ordering::SeqCst);
            if let Some(c) = child.upgrade() {
                let _ = c.lock().unwrap_or_else(|p| p.into_inner()).kill();
            }
        }
    }
}
