//! `rfs documents` as an operator sees it: the progress bar on a terminal (a pseudo-terminal
//! here) with its final count, no bar with `--no-progress` or without a terminal, and a
//! fleet of `documents` workers that ends with the migration marked finished.

use std::io::Read;
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};

use serde_json::Value;
use testkit::server::{ServerConfig, TestServer};

/// Two indices with 1 and 3 live documents, one shard each.
const FIXTURE: &str = "ES_7_10_Single";
const SNAPSHOT: &str = "global_state_snapshot";
const LIVE_DOCS: u64 = 4;
const BAR_TEXT: &str = "docs by this worker";

fn rfs() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rfs"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("RFS_") {
            c.env_remove(k);
        }
    }
    c.env("RFS_LOG", "warn").env("TERM", "xterm");
    c
}

/// `rfs documents` over the fixture into `target`, with a fresh SQLite store in `dir`.
fn documents(repo: &Path, target: &TestServer, dir: &Path, extra: &[&str]) -> Command {
    let mut c = rfs();
    c.arg("documents")
        .arg("--repo")
        .arg(repo)
        .args(["--snapshot", SNAPSHOT, "--target", &target.url()])
        .arg("--store")
        .arg(format!("sqlite://{}", dir.join("state.db").display()))
        .arg("--failure-log")
        .arg(dir.join("failures.jsonl"))
        .args(extra)
        .current_dir(dir);
    c
}

/// Runs `cmd` with stderr on a pseudo-terminal (200 columns); returns its exit status and
/// everything written to the terminal.
fn run_on_pty(mut cmd: Command) -> (ExitStatus, String) {
    let size = nix::pty::Winsize {
        ws_row: 50,
        ws_col: 200,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    let pty = nix::pty::openpty(Some(&size), None).expect("openpty");
    let mut master = std::fs::File::from(pty.master);
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::from(pty.slave));
    let mut child = cmd.spawn().expect("spawn rfs");
    // The slave end must be closed here, so that reading the master ends with the child.
    drop(cmd);
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let mut buf = [0u8; 4096];
        loop {
            match master.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                // EIO: every slave descriptor is closed (the child exited).
                Err(_) => break,
            }
        }
        out
    });
    let status = child.wait().unwrap();
    let out = reader.join().unwrap();
    (status, String::from_utf8_lossy(&out).into_owned())
}

fn fixture_repo(test: &str) -> Option<std::path::PathBuf> {
    testkit::fixtures::require_fixtures(test).map(|f| f.join("snapshots").join(FIXTURE))
}

fn status(dir: &Path) -> Value {
    let out = rfs()
        .args(["status", "--json", "--store"])
        .arg(format!("sqlite://{}", dir.join("state.db").display()))
        .args(["--failure-log"])
        .arg(dir.join("failures.jsonl"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn progress_bar_on_a_terminal_ends_at_the_live_count() {
    let Some(repo) = fixture_repo("progress_bar_on_a_terminal") else {
        return;
    };
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let (code, screen) = run_on_pty(documents(&repo, &target, dir.path(), &[]));
    assert!(code.success(), "{code}: {screen}");
    assert!(screen.contains(BAR_TEXT), "no progress bar: {screen:?}");
    let last = format!("{LIVE_DOCS}/{LIVE_DOCS} {BAR_TEXT}");
    assert!(
        screen.contains(&last),
        "no final count {last:?}: {screen:?}"
    );
    assert!(screen.contains("0 refused"), "{screen:?}");
    assert_eq!(target.total_doc_count(), LIVE_DOCS);
}

#[test]
fn no_progress_bar_when_disabled_or_not_a_terminal() {
    let Some(repo) = fixture_repo("no_progress_bar") else {
        return;
    };
    // --no-progress on a terminal.
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let (code, screen) = run_on_pty(documents(&repo, &target, dir.path(), &["--no-progress"]));
    assert!(code.success(), "{code}: {screen}");
    assert!(!screen.contains(BAR_TEXT), "{screen:?}");
    // The worker did run (its summary line is on the terminal).
    assert!(screen.contains("migration finished"), "{screen:?}");
    assert_eq!(target.total_doc_count(), LIVE_DOCS);

    // stderr is a pipe.
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    let out = documents(&repo, &target, dir.path(), &[]).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains(BAR_TEXT), "{err}");
    assert!(err.contains("migration finished"), "{err}");
    assert_eq!(target.total_doc_count(), LIVE_DOCS);
}

#[test]
fn documents_workers_mark_the_migration_finished() {
    let Some(repo) = fixture_repo("documents_workers_mark_finished") else {
        return;
    };
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let dir = tempfile::tempdir().unwrap();
    // Two workers of one fleet at once, then a late one that finds nothing to do.
    let workers: Vec<_> = (0..2)
        .map(|_| {
            documents(&repo, &target, dir.path(), &["--wait"])
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for w in workers {
        let out = w.wait_with_output().unwrap();
        // 0, or 3 for a worker that found every item taken by the other.
        assert!(
            matches!(out.status.code(), Some(0 | 3)),
            "{}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let s = status(dir.path());
    assert_eq!(s["finished"], true, "{s:#}");
    assert_eq!(s["items"]["total"], 2, "{s:#}");
    assert_eq!(s["items"]["done"], 2, "{s:#}");
    assert_eq!(s["items"]["failed"], 0, "{s:#}");
    assert_eq!(s["docs_done"], LIVE_DOCS, "{s:#}");
    assert_eq!(s["live_docs"], LIVE_DOCS, "{s:#}");
    assert_eq!(target.total_doc_count(), LIVE_DOCS);

    let late = documents(&repo, &target, dir.path(), &[]).output().unwrap();
    assert_eq!(
        late.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&late.stderr)
    );
    assert_eq!(status(dir.path())["finished"], true);
}
