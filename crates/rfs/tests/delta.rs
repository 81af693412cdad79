//! Deltas between snapshots (`--since`) on the real binary, into the testkit server: one
//! repository holds every delta history (indexes written by real Lucene 8, 9 and 10 through
//! commits A, B, C: soft and hard deletes, forced merges, no `_seq_no`, routing) as one
//! index each, in snapshots `a`, `b` (appended) and `c` (appended); `a` also has an index
//! deleted before `b`, and `b` one created after `a` and deleted before `c`.
//!
//! - full(a) + delta(a→b) equals full(b) on another target, document by document, and
//!   equals Lucene's own live documents of B; `verify --snapshot b` passes; a further
//!   delta(b→c) gives C, and `--delete-removed-indices` deletes the index gone from c;
//! - `export --since` writes the same operations (index and delete lines);
//! - a worker SIGKILLed in the middle of a delta and started again ends in the exact state.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use snapshot::append::append_snapshot;
use snapshot::write::{write_repository, IndexSpec, SnapshotSpec, WriteOptions};
use testkit::server::{Faults, ServerConfig, TestServer};

/// id → source
type Docs = BTreeMap<String, Value>;

fn rfs() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rfs"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("RFS_") {
            c.env_remove(k);
        }
    }
    c.env("NO_COLOR", "1")
        .env("RFS_LOG", "warn")
        .stdin(Stdio::null());
    c
}

fn ok(mut c: Command) -> String {
    let out = c.output().expect("run rfs");
    let text = format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    text
}

/// stdout only (JSON output).
fn ok_stdout(mut c: Command) -> String {
    let out = c.output().expect("run rfs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn golden(history: &Path, commit: &str) -> Docs {
    let text = std::fs::read_to_string(history.join(format!("{commit}.live.jsonl"))).unwrap();
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (v["id"].as_str().unwrap().to_string(), v["source"].clone())
        })
        .collect()
}

fn index(name: &str, history: &Path, commit: &str) -> IndexSpec {
    let mut ix = IndexSpec::from_lucene_dir(name, &history.join(commit)).unwrap();
    let soft = history.to_string_lossy().contains("soft");
    ix.settings.insert(
        "index.soft_deletes.enabled".into(),
        Value::String(soft.to_string()),
    );
    ix
}

struct Fixture {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    work: PathBuf,
    histories: Vec<(String, PathBuf)>,
}

/// The repository: every history as index `h-<name>`, plus `gone` (only in a) and
/// `fresh` (in b only).
fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let histories = testkit::fixtures::delta_histories();
    let other = histories
        .iter()
        .find(|(n, _)| n == "l9-hard")
        .unwrap()
        .1
        .clone();
    let snap = |name: &str, commit: &str, extra: Option<IndexSpec>| {
        let mut s = SnapshotSpec::new(name);
        for (n, h) in &histories {
            s.indices.push(index(&format!("h-{n}"), h, commit));
        }
        s.indices.extend(extra);
        s
    };
    write_repository(
        &repo,
        &[snap("a", "A", Some(index("gone", &other, "A")))],
        &WriteOptions::default(),
    )
    .unwrap();
    append_snapshot(
        &repo,
        &snap("b", "B", Some(index("fresh", &other, "B"))),
        &WriteOptions::default(),
    )
    .unwrap();
    append_snapshot(&repo, &snap("c", "C", None), &WriteOptions::default()).unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    Fixture {
        repo,
        work,
        histories,
        _dir: dir,
    }
}

impl Fixture {
    fn other(&self) -> PathBuf {
        self.histories
            .iter()
            .find(|(n, _)| n == "l9-hard")
            .unwrap()
            .1
            .clone()
    }

    /// `rfs run` of `snapshot` (a delta when `since` is given) with its own store.
    fn run(&self, target: &str, snapshot: &str, since: Option<&str>, extra: &[&str]) -> Command {
        let store = self.work.join(format!(
            "store-{}-{snapshot}-{}.db",
            target.len() ^ target.bytes().map(usize::from).sum::<usize>(),
            since.unwrap_or("full")
        ));
        let mut c = rfs();
        c.arg("run")
            .arg("--repo")
            .arg(&self.repo)
            .args(["--snapshot", snapshot, "--target", target])
            .arg("--store")
            .arg(format!("sqlite://{}", store.display()))
            .arg("--failure-log")
            .arg(self.work.join("failures.jsonl"))
            .args(["--no-progress", "--parallel", "2"])
            .args(extra);
        if let Some(s) = since {
            c.args(["--since", s]);
        }
        c
    }

    /// What each index of the target should hold after `commit`.
    fn expected(&self, commit: &str) -> BTreeMap<String, Docs> {
        let mut out: BTreeMap<String, Docs> = self
            .histories
            .iter()
            .map(|(n, h)| (format!("h-{n}"), golden(h, commit)))
            .collect();
        match commit {
            "A" => {
                out.insert("gone".into(), golden(&self.other(), "A"));
            }
            "B" => {
                out.insert("fresh".into(), golden(&self.other(), "B"));
            }
            _ => {}
        }
        out
    }
}

fn target_docs(server: &TestServer) -> BTreeMap<String, Docs> {
    server
        .index_names()
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .map(|n| {
            let docs = server.documents(&n);
            (n, docs)
        })
        .collect()
}

fn assert_target(server: &TestServer, want: &BTreeMap<String, Docs>, what: &str) {
    let got = target_docs(server);
    for (index, docs) in want {
        let g = got
            .get(index)
            .unwrap_or_else(|| panic!("{what}: no index {index}"));
        assert_eq!(g.len(), docs.len(), "{what}: documents in {index}");
        assert_eq!(g, docs, "{what}: {index}");
    }
}

#[test]
fn full_then_deltas_equal_full_runs_and_lucene() {
    let f = fixture();
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let url = server.url();

    // Full a, then the delta a → b.
    ok(f.run(&url, "a", None, &[]));
    assert_target(&server, &f.expected("A"), "full a");
    let out = ok(f.run(&url, "b", Some("a"), &[]));
    assert!(
        out.contains("gone"),
        "the index deleted since a is reported:\n{out}"
    );
    let mut want_b = f.expected("B");
    // Not deleted without --delete-removed-indices.
    want_b.insert("gone".into(), golden(&f.other(), "A"));
    assert_target(&server, &want_b, "full a + delta a→b");

    // The same as a full run of b on another target, document by document.
    let fresh = TestServer::start(ServerConfig::opensearch("2.11.0"));
    ok(f.run(&fresh.url(), "b", None, &[]));
    let mut delta = target_docs(&server);
    delta.remove("gone");
    assert_eq!(delta, target_docs(&fresh), "full a + delta a→b vs full b");

    // verify --snapshot b passes on the target that got the delta.
    let mut v = rfs();
    v.arg("verify")
        .arg("--repo")
        .arg(&f.repo)
        .args(["--snapshot", "b", "--all", "--target", &url]);
    ok(v);

    // status of the delta: what it sent and what it left alone.
    let store = f
        .work
        .read_dir()
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| p.to_string_lossy().contains("-b-a.db"))
        .unwrap();
    let mut st = rfs();
    st.args([
        "status",
        "--json",
        "--failure-log",
        "/nonexistent",
        "--store",
    ])
    .arg(format!("sqlite://{}", store.display()));
    let status: Value = serde_json::from_str(&ok_stdout(st)).unwrap();
    let d = &status["delta"];
    assert_eq!(d["since"], "a", "{status:#}");
    assert_eq!(d["created_indices"], serde_json::json!(["fresh"]));
    assert_eq!(d["removed_indices"], serde_json::json!(["gone"]));
    let unchanged = d["totals"]["unchanged"].as_u64().unwrap();
    assert!(unchanged > 150 * 14, "{d:#}");
    // Seven histories force-merge before b with _seq_no; six keep every operation.
    assert!(d["totals"]["matched"].as_u64().unwrap() > 150 * 7, "{d:#}");
    assert_eq!(d["totals"]["parts_from_history"], 6, "{d:#}");
    assert!(
        d["totals"]["unproven"].as_u64().unwrap() > 150,
        "no _seq_no: {d:#}"
    );
    let mut text = rfs();
    text.args(["status", "--failure-log", "/nonexistent", "--store"])
        .arg(format!("sqlite://{}", store.display()));
    let text = ok(text);
    assert!(
        text.contains("delta since snapshot a") && text.contains("unchanged and not sent"),
        "{text}"
    );

    // The delta b → c, deleting the index gone since b.
    ok(f.run(&url, "c", Some("b"), &["--delete-removed-indices"]));
    let mut want_c = f.expected("C");
    want_c.insert("gone".into(), golden(&f.other(), "A"));
    assert_target(&server, &want_c, "full a + a→b + b→c");
    assert!(
        !server.index_names().contains(&"fresh".to_string()),
        "fresh was deleted since b: {:?}",
        server.index_names()
    );
}

#[test]
fn export_since_writes_index_and_delete_lines() {
    let f = fixture();
    let out = f.work.join("export");
    let mut c = rfs();
    c.arg("export")
        .arg("--repo")
        .arg(&f.repo)
        .args([
            "--snapshot",
            "b",
            "--since",
            "a",
            "--format",
            "jsonl",
            "--out",
        ])
        .arg(&out)
        .arg("--failure-log")
        .arg(f.work.join("export-failures.jsonl"));
    let said = ok(c);
    assert!(said.contains("gone"), "{said}");
    for (name, history) in &f.histories {
        let text = std::fs::read_to_string(out.join(format!("h-{name}.jsonl"))).unwrap();
        let mut docs = golden(history, "A");
        let mut deletes = 0;
        for line in text.lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            let id = v["_id"].as_str().unwrap().to_string();
            if v.get("_op").and_then(Value::as_str) == Some("delete") {
                deletes += 1;
                docs.remove(&id);
            } else {
                docs.insert(id, v["_source"].clone());
            }
        }
        assert!(deletes > 0, "{name}");
        assert_eq!(docs, golden(history, "B"), "{name}: A + exported delta");
    }
}

#[test]
fn a_worker_killed_in_the_middle_of_a_delta_resumes_exactly() {
    let f = fixture();
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let url = server.url();
    ok(f.run(&url, "a", None, &[]));
    server.set_faults(Faults {
        latency_ms: 20,
        bulk_only: true,
        ..Faults::default()
    });
    let slow = [
        "--max-batch-docs",
        "5",
        "--max-docs-per-sec",
        "150",
        "--checkpoint-seconds",
        "0.2",
        "--lease-seconds",
        "5",
    ];
    let before = server.stats().bulk_requests;
    let mut child = f.run(&url, "b", Some("a"), &slow).spawn().unwrap();
    // Kill it once it has sent part of the delta.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(Instant::now() < deadline, "the delta never started sending");
        if server.stats().bulk_requests > before + 20 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the worker ended before it was killed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let mut want = f.expected("B");
    want.insert("gone".into(), golden(&f.other(), "A"));
    let partial = target_docs(&server);
    assert_ne!(
        partial
            .iter()
            .filter(|(k, _)| want.contains_key(*k))
            .collect::<BTreeMap<_, _>>(),
        want.iter().collect::<BTreeMap<_, _>>(),
        "the kill came after the end"
    );
    // Started again (its lease expires first): the end state is exact.
    ok(f.run(&url, "b", Some("a"), &slow));
    server.set_faults(Faults::default());
    assert_target(&server, &want, "delta a→b killed and resumed");
}
