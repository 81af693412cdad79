//! `rfs run --follow` on the real binary, into the testkit server: the repository holds
//! only snapshot `a` when the followers start (every delta history of the fixtures as one
//! index each, at commit A, plus `gone`); `b` (commit B, without `gone`, with `fresh`) is
//! appended while they run, then `c` (commit C, without `fresh`).
//!
//! - after each snapshot appears, `rfs status` shows it applied and the target equals it,
//!   index by index, document by document, deletes applied (documents and, with
//!   `--delete-removed-indices`, indices);
//! - two followers run side by side; one is SIGKILLed while the delta b→c is being sent
//!   and replaced by a third with the same flags: the end state is exact;
//! - `rfs stop` ends every follower with exit 5.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
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
    other: PathBuf,
}

impl Fixture {
    /// The repository with snapshot `a` only.
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let histories = testkit::fixtures::delta_histories();
        let other = histories
            .iter()
            .find(|(n, _)| n == "l9-hard")
            .unwrap()
            .1
            .clone();
        let f = Fixture {
            repo: dir.path().join("repo"),
            work: dir.path().join("work"),
            histories,
            other,
            _dir: dir,
        };
        std::fs::create_dir_all(&f.work).unwrap();
        write_repository(&f.repo, &[f.spec("a", "A")], &WriteOptions::default()).unwrap();
        f
    }

    /// Snapshot `name` of every history at `commit`, with `gone` in A and `fresh` in B.
    fn spec(&self, name: &str, commit: &str) -> SnapshotSpec {
        let mut s = SnapshotSpec::new(name);
        for (n, h) in &self.histories {
            s.indices.push(index(&format!("h-{n}"), h, commit));
        }
        match commit {
            "A" => s.indices.push(index("gone", &self.other, "A")),
            "B" => s.indices.push(index("fresh", &self.other, "B")),
            _ => {}
        }
        s
    }

    /// Takes snapshot `name` (the repository now lists it).
    fn append(&self, name: &str, commit: &str) {
        append_snapshot(
            &self.repo,
            &self.spec(name, commit),
            &WriteOptions::default(),
        )
        .unwrap();
    }

    /// Exactly what the target holds after `commit` (removed indices deleted).
    fn expected(&self, commit: &str) -> BTreeMap<String, Docs> {
        let mut out: BTreeMap<String, Docs> = self
            .histories
            .iter()
            .map(|(n, h)| (format!("h-{n}"), golden(h, commit)))
            .collect();
        match commit {
            "A" => {
                out.insert("gone".into(), golden(&self.other, "A"));
            }
            "B" => {
                out.insert("fresh".into(), golden(&self.other, "B"));
            }
            _ => {}
        }
        out
    }

    fn store(&self) -> String {
        format!("sqlite://{}", self.work.join("state.db").display())
    }

    /// A follower: `rfs run --snapshot a --follow`, the same flags every time.
    fn follower(&self, target: &str, name: &str) -> Child {
        let mut c = rfs();
        c.arg("run")
            .arg("--repo")
            .arg(&self.repo)
            .args(["--snapshot", "a", "--target", target])
            .args(["--store", &self.store()])
            .arg("--failure-log")
            .arg(self.work.join(format!("failures-{name}.jsonl")))
            .args([
                "--follow",
                "--follow-every",
                "0.2",
                "--delete-removed-indices",
                "--no-progress",
                "--parallel",
                "2",
                "--max-batch-docs",
                "5",
                "--max-docs-per-sec",
                "150",
                "--checkpoint-seconds",
                "0.2",
                "--lease-seconds",
                "3",
                "--renew-seconds",
                "1",
                "--control-seconds",
                "0.1",
            ])
            .stdout(Stdio::from(
                std::fs::File::create(self.work.join(format!("{name}.out"))).unwrap(),
            ))
            .stderr(Stdio::from(
                std::fs::File::create(self.work.join(format!("{name}.err"))).unwrap(),
            ));
        c.spawn().unwrap()
    }

    fn said(&self, name: &str) -> String {
        let read = |ext: &str| {
            std::fs::read_to_string(self.work.join(format!("{name}.{ext}"))).unwrap_or_default()
        };
        format!(
            "--- {name} stdout\n{}\n--- {name} stderr\n{}",
            read("out"),
            read("err")
        )
    }

    /// `rfs status --json`, when the store exists.
    fn status(&self) -> Option<Value> {
        let out = rfs()
            .args(["status", "--json", "--failure-log", "/nonexistent"])
            .args(["--store", &self.store()])
            .output()
            .unwrap();
        if out.status.code() != Some(0) {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    }

    /// Waits until `rfs status` shows `snapshot` applied and nothing being applied.
    fn wait_applied(&self, snapshot: &str, followers: &mut [(&str, &mut Child)]) -> Value {
        let deadline = Instant::now() + Duration::from_secs(180);
        loop {
            if let Some(v) = self.status() {
                let f = &v["snapshot_follow"];
                if f["applied"]["snapshot"] == snapshot && f["state"] == "watching" {
                    return v;
                }
            }
            for (name, child) in followers.iter_mut() {
                if let Some(code) = child.try_wait().unwrap() {
                    panic!(
                        "{name} ended ({code}) before {snapshot} was applied\n{}",
                        self.said(name)
                    );
                }
            }
            assert!(
                Instant::now() < deadline,
                "{snapshot} never applied: {:#}",
                self.status().unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn assert_target(server: &TestServer, want: &BTreeMap<String, Docs>, what: &str) {
    let names: Vec<String> = server
        .index_names()
        .into_iter()
        .filter(|n| !n.starts_with('.'))
        .collect();
    assert_eq!(
        names,
        want.keys().cloned().collect::<Vec<_>>(),
        "{what}: the indices of the target"
    );
    for (index, docs) in want {
        let got = server.documents(index);
        assert_eq!(got.len(), docs.len(), "{what}: documents in {index}");
        for (id, source) in docs {
            assert_eq!(got.get(id), Some(source), "{what}: {index}/{id}");
        }
        assert_eq!(&got, docs, "{what}: {index}");
    }
}

#[test]
fn followers_apply_each_new_snapshot_until_stopped_one_killed_and_replaced() {
    let f = Fixture::new();
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let url = server.url();

    let mut p1 = f.follower(&url, "p1");
    let mut p2 = f.follower(&url, "p2");
    let v = f.wait_applied("a", &mut [("p1", &mut p1), ("p2", &mut p2)]);
    assert_eq!(
        v["snapshot_follow"]["pending"],
        serde_json::json!([]),
        "{v:#}"
    );
    assert_eq!(v["snapshot_follow"]["deltas_applied"], 0, "{v:#}");
    assert_target(&server, &f.expected("A"), "a migrated");

    // Snapshot b appears: applied as a delta, `gone` deleted with its documents.
    f.append("b", "B");
    let v = f.wait_applied("b", &mut [("p1", &mut p1), ("p2", &mut p2)]);
    let follow = &v["snapshot_follow"];
    assert_eq!(follow["deltas_applied"], 1, "{v:#}");
    assert_eq!(follow["history"][0]["since"], "a", "{v:#}");
    assert!(follow["applied"]["age_seconds"].as_f64().is_some(), "{v:#}");
    assert_target(&server, &f.expected("B"), "a, then the delta a→b");

    // Snapshot c appears while the target is slow; p1 is killed while the delta is sent.
    server.set_faults(Faults {
        latency_ms: 20,
        bulk_only: true,
        ..Faults::default()
    });
    let before = server.stats().bulk_requests;
    f.append("c", "C");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(
            Instant::now() < deadline,
            "the delta b→c never started sending"
        );
        if server.stats().bulk_requests > before + 10 {
            break;
        }
        for (name, child) in [("p1", &mut p1), ("p2", &mut p2)] {
            assert!(
                child.try_wait().unwrap().is_none(),
                "{name} ended\n{}",
                f.said(name)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let v = f.status().unwrap();
    assert_eq!(v["snapshot_follow"]["state"], "applying", "{v:#}");
    assert_eq!(v["snapshot_follow"]["applying"]["snapshot"], "c", "{v:#}");
    p1.kill().unwrap(); // SIGKILL
    p1.wait().unwrap();
    let want_c = f.expected("C");
    let partial: BTreeMap<String, Docs> = want_c
        .keys()
        .map(|n| (n.clone(), server.documents(n)))
        .collect();
    assert_ne!(
        partial, want_c,
        "the kill came after the end of the delta b→c"
    );
    let mut p3 = f.follower(&url, "p3");
    let v = f.wait_applied("c", &mut [("p2", &mut p2), ("p3", &mut p3)]);
    server.set_faults(Faults::default());
    let follow = &v["snapshot_follow"];
    assert_eq!(follow["deltas_applied"], 2, "{v:#}");
    assert_eq!(follow["pending"], serde_json::json!([]), "{v:#}");
    assert_target(&server, &want_c, "a, a→b, b→c (one follower killed)");
    // Each delta counted what it sent (b→c: at least the documents changed since b).
    let history = follow["history"].as_array().unwrap();
    assert_eq!(history.len(), 2, "{v:#}");
    assert_eq!(history[1]["since"], "b", "{v:#}");
    assert_eq!(history[1]["snapshot"], "c", "{v:#}");
    assert!(history[1]["delivered"].as_u64().unwrap() > 0, "{v:#}");
    assert_eq!(follow["totals"]["refused"], 0, "{v:#}");
    assert_eq!(follow["totals"]["skipped"], 0, "{v:#}");

    // `rfs stop` ends the followers: exit 5, status says stopped.
    let out = rfs()
        .args(["stop", "--store", &f.store()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    for (name, child) in [("p2", &mut p2), ("p3", &mut p3)] {
        let deadline = Instant::now() + Duration::from_secs(30);
        let code = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s.code();
            }
            assert!(Instant::now() < deadline, "{name} did not stop");
            std::thread::sleep(Duration::from_millis(50));
        };
        assert_eq!(code, Some(5), "{name}\n{}", f.said(name));
        assert!(
            f.said(name)
                .contains("stopped following: snapshot c applied"),
            "{}",
            f.said(name)
        );
    }
    let v = f.status().unwrap();
    assert_eq!(v["snapshot_follow"]["state"], "stopped", "{v:#}");
    let text = rfs()
        .args([
            "status",
            "--failure-log",
            "/nonexistent",
            "--store",
            &f.store(),
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        text.contains("following the repository: stopped; snapshot c applied"),
        "{text}"
    );
    assert_target(&server, &f.expected("C"), "after the stop");
}

#[test]
fn follow_flags_are_checked_by_the_parser() {
    let out = rfs()
        .args(["run", "--repo", "/nonexistent", "--snapshot", "a"])
        .args(["--target", "http://127.0.0.1:1", "--follow-every", "5"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--follow"), "{err}");
    let out = rfs()
        .args(["run", "--repo", "/nonexistent", "--snapshot", "a"])
        .args([
            "--target",
            "http://127.0.0.1:1",
            "--follow",
            "--follow-every",
            "0",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("0.1"));
}
