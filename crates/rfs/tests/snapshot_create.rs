//! `rfs snapshot create` and `rfs run --source-cluster` end to end: the real binary against
//! the project's test server acting as the source cluster. The server "takes" a snapshot by
//! copying a fixture repository (a copy in a temp dir) into the location of the registered
//! `fs` repository, so `rfs run` can then read that location and migrate it into a second
//! test server; the documents there are compared one by one with the fixture's expected
//! documents.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use testkit::gate::AuthGate;
use testkit::server::{ServerConfig, TestServer};

/// A small fixture: two indices, four live documents, templates in the global state.
const FIXTURE: &str = "ES_7_10_Single";
const SNAPSHOT: &str = "global_state_snapshot";
const REPOSITORY: &str = "backups";

fn rfs() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rfs"));
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("RFS_") {
            c.env_remove(k);
        }
    }
    c.env("RFS_LOG", "warn");
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn ok(out: &Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\nstdout: {}\nstderr: {}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
}

/// The fixture repository copied into `dir/source` (the server's snapshot source), and the
/// fixture's expected documents: index → id → `_source`.
/// index → id → `_source`
type Expected = BTreeMap<String, BTreeMap<String, Value>>;

fn fixture(test: &str, dir: &Path) -> Option<(PathBuf, Expected)> {
    let root = testkit::fixtures::require_fixtures(test)?;
    let snapshots = root.join("snapshots");
    let source = dir.join("source");
    copy_tree(&snapshots.join(FIXTURE), &source);
    let expected: Value = serde_json::from_slice(
        &std::fs::read(snapshots.join(format!("{FIXTURE}.expected.json"))).unwrap(),
    )
    .unwrap();
    let mut docs = BTreeMap::new();
    for (index, iexp) in expected["snapshots"][SNAPSHOT]["indices"]
        .as_object()
        .expect("expected indices")
    {
        let by_id: BTreeMap<String, Value> = iexp["documents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                (
                    d["_id"].as_str().unwrap().to_string(),
                    serde_json::from_str(d["_source"].as_str().unwrap()).unwrap(),
                )
            })
            .collect();
        assert_eq!(by_id.len() as u64, iexp["live_docs"].as_u64().unwrap());
        docs.insert(index.clone(), by_id);
    }
    Some((source, docs))
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).unwrap();
        }
    }
}

/// A source cluster that snapshots `source` into whatever `fs` repository is registered.
fn source_server(source: Option<&Path>) -> TestServer {
    TestServer::start(ServerConfig {
        snapshot_source: source.map(Path::to_path_buf),
        ..ServerConfig::elasticsearch("7.10.2")
    })
}

/// Snapshot-creation requests (PUT/POST `_snapshot/<repo>/<snap>`) the server received.
fn creations(server: &TestServer, repo: &str, snap: &str) -> usize {
    let path = format!("/_snapshot/{repo}/{snap}");
    server
        .requests()
        .iter()
        .filter(|r| {
            (r.method == "PUT" || r.method == "POST")
                && r.path.split('?').next() == Some(path.as_str())
        })
        .count()
}

/// The snapshot as the source cluster reports it.
fn snapshot_info(server: &TestServer, repo: &str, snap: &str) -> Option<Value> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = cluster::Client::connect(cluster::ClientConfig::new(server.url()))
            .await
            .unwrap();
        client.get_snapshot(repo, snap).await.unwrap()
    })
}

fn create_args(server: &TestServer, repo: &str, location: Option<&Path>) -> Command {
    let mut c = rfs();
    c.args(["snapshot", "create", "--source-cluster", &server.url()])
        .args(["--source-repository", repo, "--snapshot", SNAPSHOT]);
    if let Some(l) = location {
        c.arg("--register-fs").arg(l);
    }
    c
}

#[test]
fn snapshot_create_is_idempotent_and_names_what_failed() {
    let dir = tempfile::tempdir().unwrap();
    let Some((source, expected)) = fixture("snapshot_create_is_idempotent", dir.path()) else {
        return;
    };
    let server = source_server(Some(&source));
    let location = dir.path().join("repo");

    let out = create_args(&server, REPOSITORY, Some(&location))
        .output()
        .unwrap();
    ok(&out, "snapshot create");
    let printed: Value = serde_json::from_slice(&out.stdout).expect("JSON result on stdout");
    assert_eq!(printed["state"], "SUCCESS", "{printed}");
    assert_eq!(printed["snapshot"], SNAPSHOT);
    assert_eq!(printed["repository"], REPOSITORY);
    let info = snapshot_info(&server, REPOSITORY, SNAPSHOT).expect("snapshot on the server");
    assert_eq!(info["state"], "SUCCESS", "{info}");
    assert_eq!(creations(&server, REPOSITORY, SNAPSHOT), 1);

    // What the server wrote is a readable repository holding the snapshot's indices.
    let out = rfs()
        .arg("inspect")
        .arg(&location)
        .args(["--snapshot", SNAPSHOT, "--json"])
        .output()
        .unwrap();
    ok(&out, "inspect the new repository");
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut indices: Vec<&str> = report["snapshots"][0]["indices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    indices.sort();
    assert_eq!(
        indices,
        expected.keys().map(String::as_str).collect::<Vec<_>>()
    );

    // Again, through the environment this time: found, not re-created; exit 0.
    let out = rfs()
        .args(["snapshot", "create"])
        .env("RFS_SOURCE_CLUSTER", server.url())
        .env("RFS_SOURCE_REPOSITORY", REPOSITORY)
        .env("RFS_SNAPSHOT", SNAPSHOT)
        .output()
        .unwrap();
    ok(&out, "second snapshot create");
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["state"], "SUCCESS");
    assert_eq!(creations(&server, REPOSITORY, SNAPSHOT), 1);

    // A repository the cluster does not know.
    let out = create_args(&server, "no_such_repo", None).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains("no_such_repo") && err.contains(SNAPSHOT),
        "{err}"
    );

    // A cluster that cannot take snapshots (the server has no snapshot source).
    let plain = source_server(None);
    let out = create_args(&plain, REPOSITORY, Some(&dir.path().join("other")))
        .args(["--source-max-attempts", "2"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(
        err.contains(&format!("{REPOSITORY}/{SNAPSHOT}")) && err.contains("snapshot_source"),
        "{err}"
    );

    // Without a source cluster: a usage error.
    let out = rfs()
        .args(["snapshot", "create", "--snapshot", SNAPSHOT])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("--source-cluster"));
}

#[test]
fn run_takes_the_snapshot_once_then_migrates_it() {
    let dir = tempfile::tempdir().unwrap();
    let Some((source, expected)) = fixture("run_takes_the_snapshot_once", dir.path()) else {
        return;
    };
    let server = source_server(Some(&source));
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let location = dir.path().join("repo");
    let store = format!("sqlite://{}", dir.path().join("state.db").display());

    let source_url = server.url();
    let run = |i: usize| {
        let mut c = rfs();
        c.args(["run", "--source-cluster", &source_url])
            .args(["--source-repository", REPOSITORY, "--register-fs"])
            .arg(&location)
            .args(["--snapshot", SNAPSHOT, "--repo"])
            .arg(&location)
            .args(["--target", &target.url(), "--store", &store])
            .args(["--control-seconds", "0.2", "--failure-log"])
            .arg(dir.path().join(format!("failures-{i}.jsonl")))
            .current_dir(dir.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        c
    };

    // Two workers of one fleet, started together.
    let workers: Vec<_> = (0..2).map(|i| run(i).spawn().unwrap()).collect();
    for (i, w) in workers.into_iter().enumerate() {
        let out = w.wait_with_output().unwrap();
        ok(&out, &format!("rfs run #{i}"));
    }

    // The snapshot was created (and the repository registered) once for the fleet.
    assert_eq!(creations(&server, REPOSITORY, SNAPSHOT), 1);
    let registrations = server
        .requests()
        .iter()
        .filter(|r| r.method == "PUT" && r.path.split('?').next() == Some("/_snapshot/backups"))
        .count();
    assert_eq!(registrations, 1);
    assert_eq!(
        snapshot_info(&server, REPOSITORY, SNAPSHOT).unwrap()["state"],
        "SUCCESS"
    );

    // Every live document of the fixture is on the target with its _id and _source, and
    // nothing else is.
    assert_eq!(
        target.index_names(),
        expected.keys().cloned().collect::<Vec<_>>()
    );
    for (index, want) in &expected {
        let have = target.documents(index);
        for (id, source) in want {
            assert_eq!(have.get(id), Some(source), "{index}/{id}");
        }
        assert_eq!(have.len(), want.len(), "{index}: {:?}", have.keys());
    }
    for i in 0..2 {
        let log = dir.path().join(format!("failures-{i}.jsonl"));
        let failures = std::fs::read_to_string(&log).unwrap_or_default();
        assert!(failures.is_empty(), "{}: {failures}", log.display());
    }

    let out = rfs()
        .args(["status", "--json", "--store", &store])
        .args(["--failure-log", "/nonexistent"])
        .output()
        .unwrap();
    ok(&out, "status");
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["finished"], true, "{status:#}");
    let live: usize = expected.values().map(BTreeMap::len).sum();
    assert_eq!(status["docs_done"], live as u64, "{status:#}");
    let phases: BTreeMap<&str, &str> = status["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["name"].as_str().unwrap(), p["state"].as_str().unwrap()))
        .collect();
    assert_eq!(phases.get("snapshot"), Some(&"done"), "{phases:?}");

    // A worker started after the snapshot phase does not need the source cluster (gone now).
    server.shutdown();
    let out = run(2).output().unwrap();
    ok(&out, "rfs run after the source cluster is gone");
    let live: usize = expected.values().map(BTreeMap::len).sum();
    assert_eq!(target.total_doc_count(), live as u64);
}

#[test]
fn source_cluster_credentials_reach_the_source() {
    let dir = tempfile::tempdir().unwrap();
    let Some((source, expected)) = fixture("source_cluster_credentials", dir.path()) else {
        return;
    };
    let server = source_server(Some(&source));
    let gate = AuthGate::start(server.addr(), "migrator", "s3cret");
    let target = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let location = dir.path().join("repo");
    let create = |extra: &[&str]| {
        let mut c = rfs();
        c.args(["snapshot", "create", "--source-cluster", &gate.url()])
            .args(["--source-repository", REPOSITORY, "--snapshot", SNAPSHOT])
            .arg("--register-fs")
            .arg(&location)
            .args(extra);
        c.output().unwrap()
    };

    // No credentials, then a wrong password: refused, nothing reaches the cluster.
    for extra in [
        &[][..],
        &["--source-username", "migrator", "--source-password", "nope"][..],
    ] {
        let out = create(extra);
        assert_eq!(out.status.code(), Some(1), "{extra:?}");
        let err = text(&out.stderr);
        assert!(
            err.contains("401") || err.contains("security_exception"),
            "{err}"
        );
    }
    let (accepted, refused) = gate.counts();
    assert_eq!(accepted, 0);
    assert!(refused >= 2);
    assert_eq!(creations(&server, REPOSITORY, SNAPSHOT), 0);
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    // `rfs run`, credentials from the environment: every request carries them.
    let store = format!("sqlite://{}", dir.path().join("state.db").display());
    let out = rfs()
        .args(["run", "--source-cluster", &gate.url()])
        .args(["--source-repository", REPOSITORY, "--register-fs"])
        .arg(&location)
        .args(["--snapshot", SNAPSHOT, "--repo"])
        .arg(&location)
        .args(["--target", &target.url(), "--store", &store])
        .arg("--failure-log")
        .arg(dir.path().join("failures.jsonl"))
        .env("RFS_SOURCE_USERNAME", "migrator")
        .env("RFS_SOURCE_PASSWORD", "s3cret")
        .current_dir(dir.path())
        .output()
        .unwrap();
    ok(&out, "rfs run through the auth gate");
    let (accepted, refused_after) = gate.counts();
    assert_eq!(refused_after, refused, "{:?}", gate.seen.lock().unwrap());
    assert!(accepted >= 3, "{:?}", gate.seen.lock().unwrap());
    assert_eq!(creations(&server, REPOSITORY, SNAPSHOT), 1);
    let live: usize = expected.values().map(BTreeMap::len).sum();
    assert_eq!(target.total_doc_count(), live as u64);
}
