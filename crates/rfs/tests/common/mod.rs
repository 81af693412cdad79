//! What the binary's integration tests share: running `rfs` with a clean environment,
//! its output, the demo repository and its expected documents.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::server::TestServer;

pub const SNAPSHOT: &str = "demo";
/// The demo's indices and live documents.
pub const LIVE: [(&str, usize); 2] = [("books", 1326), ("reviews", 473)];

/// `demo/repository`: `books` 1326 live documents in 2 shards, `reviews` 473 in 1.
pub fn demo() -> PathBuf {
    testkit::fixtures::workspace_root()
        .join("demo")
        .join("repository")
}

/// A copy of the demo repository at `to` (a different place: a different repository).
pub fn copy_demo(to: &Path) {
    fn copy(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let dest = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy(&e.path(), &dest);
            } else {
                std::fs::copy(e.path(), dest).unwrap();
            }
        }
    }
    copy(&demo(), to);
}

/// The binary with no `RFS_*` variable of the caller's environment.
pub fn rfs() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rfs"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("RFS_") {
            c.env_remove(k);
        }
    }
    c.env("NO_COLOR", "1").stdin(Stdio::null());
    c
}

/// A finished command's exit code and output, for assertion messages.
pub fn show(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// What a run printed and how it ended.
pub struct Ran {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub took: Duration,
}

impl Ran {
    pub fn all(&self) -> String {
        format!("{}\n{}", self.stdout, self.stderr)
    }
}

impl std::fmt::Display for Ran {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "exit {:?} after {:?}\n--- stdout\n{}\n--- stderr\n{}",
            self.code, self.took, self.stdout, self.stderr
        )
    }
}

pub fn ran(out: Output, took: Duration) -> Ran {
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took,
    }
}

pub fn run(mut c: Command) -> Ran {
    let t = Instant::now();
    let out = c.output().expect("run rfs");
    ran(out, t.elapsed())
}

/// A child's output once it exits.
pub fn finish(child: Child, started: Instant) -> Ran {
    ran(child.wait_with_output().unwrap(), started.elapsed())
}

pub fn sqlite(dir: &Path) -> String {
    format!("sqlite://{}", dir.join("state.db").display())
}

/// `rfs copy --from --to` with the store and failure log in `dir` (run there).
pub fn copy(dir: &Path, from: &str, to: &str, extra: &[&str]) -> Command {
    let mut c = rfs();
    c.arg("copy")
        .args(["--from", from, "--to", to])
        .arg("--store")
        .arg(sqlite(dir))
        .arg("--failure-log")
        .arg(dir.join("failures.jsonl"))
        .arg("--no-progress")
        .args(extra)
        .current_dir(dir);
    c
}

/// `rfs documents` on `repo` into `target` with the store and failure log in `dir`.
pub fn documents(repo: &Path, dir: &Path, target: &str, extra: &[&str]) -> Command {
    documents_with_store(repo, dir, &sqlite(dir), target, extra)
}

/// `rfs documents` on `repo` into `target` with `store`, the failure log in `dir`.
pub fn documents_with_store(
    repo: &Path,
    dir: &Path,
    store: &str,
    target: &str,
    extra: &[&str],
) -> Command {
    let mut c = rfs();
    c.arg("documents")
        .arg("--repo")
        .arg(repo)
        .args(["--snapshot", SNAPSHOT, "--target", target])
        .arg("--store")
        .arg(store)
        .arg("--failure-log")
        .arg(dir.join("failures.jsonl"))
        .arg("--no-progress")
        .args(extra)
        .current_dir(dir);
    c
}

/// `rfs status --json` of the SQLite store in `dir`.
pub fn status(dir: &Path) -> Value {
    let mut c = rfs();
    c.args(["status", "--json", "--store", &sqlite(dir)])
        .arg("--failure-log")
        .arg(dir.join("failures.jsonl"));
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r}"))
}

/// `rfs status --json` of the SQLite store in `dir`, or `None` while it does not exist
/// (the first worker creates it).
pub fn try_status(dir: &Path) -> Option<Value> {
    if !dir.join("state.db").exists() {
        return None;
    }
    Some(status(dir))
}

/// Polls `f` every 100 ms for up to `limit`.
pub fn wait_for(what: &str, limit: Duration, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every live document of the demo as `rfs export` writes it: (index, id) → `_source`.
pub fn expected_documents() -> BTreeMap<(String, String), Value> {
    let mut c = rfs();
    c.arg("export")
        .arg(demo())
        .args(["--snapshot", SNAPSHOT, "--out", "-"]);
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    let mut out = BTreeMap::new();
    for line in r.stdout.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        let key = (
            v["_index"].as_str().unwrap().to_string(),
            v["_id"].as_str().unwrap().to_string(),
        );
        assert!(out.insert(key, v["_source"].clone()).is_none(), "{line}");
    }
    for (index, live) in LIVE {
        assert_eq!(out.keys().filter(|(i, _)| i == index).count(), live);
    }
    out
}

/// The target holds exactly the demo's documents of `indices`, compared one by one.
pub fn assert_target_holds(target: &TestServer, indices: &[&str]) {
    let expected: BTreeMap<_, _> = expected_documents()
        .into_iter()
        .filter(|((i, _), _)| indices.contains(&i.as_str()))
        .collect();
    let mut held = BTreeMap::new();
    for index in indices {
        for (id, source) in target.documents(index) {
            held.insert((index.to_string(), id), source);
        }
    }
    assert_eq!(held.len(), expected.len());
    for (key, source) in &expected {
        assert_eq!(held.get(key), Some(source), "{key:?}");
    }
}

/// Kills (and reaps) a child when dropped, whatever happens in the test.
pub struct Reaped(pub Option<Child>);

impl Drop for Reaped {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            // Our own child, not yet reaped: its pid cannot belong to anyone else.
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// `bin ARGS` with only warnings logged (the fleet and chaos tests run a built binary of
/// their choice, e.g. a release build).
pub fn rfs_at(bin: &Path, args: &[&str]) -> Output {
    Command::new(bin)
        .args(args)
        .env("RFS_LOG", "warn")
        .output()
        .expect("run rfs")
}

/// `bin status --json` over `store`.
pub fn status_at(bin: &Path, store: &str) -> Value {
    let out = rfs_at(
        bin,
        &[
            "status",
            "--json",
            "--store",
            store,
            "--failure-log",
            "/nonexistent",
        ],
    );
    assert!(
        out.status.success(),
        "rfs status: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("status JSON: {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

/// The last 12 lines of every `*.log` in `dir`, for a failing test's message.
pub fn log_tails(dir: &Path) -> String {
    let mut out = String::new();
    let mut logs: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "log"))
        .collect();
    logs.sort();
    for p in logs {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        out.push_str(&format!(
            "--- {}\n{}\n",
            p.display(),
            lines[lines.len().saturating_sub(12)..].join("\n")
        ));
    }
    out
}

/// The live documents a generated Lucene index holds, from its `DIR.expected.txt`.
pub fn expected_live(dir: &Path) -> u64 {
    let path = format!("{}.expected.txt", dir.display());
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    text.split_whitespace()
        .find_map(|t| t.strip_prefix("expectedLive="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no expectedLive= in {path}"))
}

/// A snapshot `snapshot` with one single-shard index per `(index, fixture)`, each shard a
/// generated Lucene index of the fixtures (`lucene/generated/FIXTURE`); returns the live
/// documents per index.
pub fn lucene_repository(
    fixtures: &Path,
    repo: &Path,
    snapshot: &str,
    shards: &[(&str, &str)],
) -> BTreeMap<String, u64> {
    use snapshot::write::{write_repository, IndexSpec, ShardSource, SnapshotSpec, WriteOptions};
    let mut spec = SnapshotSpec::new(snapshot);
    let mut expected = BTreeMap::new();
    for (name, fixture) in shards {
        let dir = fixtures.join("lucene/generated").join(fixture);
        let mut ix = IndexSpec::from_lucene_dir(name, &dir).unwrap();
        ix.settings.insert(
            "index.soft_deletes.enabled".into(),
            Value::String("true".into()),
        );
        ix.shards = vec![ShardSource::Lucene(std::sync::Arc::new(
            lucene::FsDirectory::open(&dir).unwrap(),
        ))];
        spec.indices.push(ix);
        expected.insert(name.to_string(), expected_live(&dir));
    }
    write_repository(repo, &[spec], &WriteOptions::default()).unwrap();
    expected
}
