//! A coordination store kept in an index of the target cluster reaches it the way the
//! documents do: with the target's credentials, through `cluster::Client`. The target (the
//! test server) sits behind a basic-auth gate; the store URL names no user.

use testkit::gate::AuthGate;
use testkit::server::{ServerConfig, TestServer};

mod common;
use common::rfs;

/// Live documents of `demo/repository` (books 1326, reviews 473).
const DEMO_LIVE: u64 = 1799;

#[test]
fn a_store_on_the_target_uses_the_target_credentials() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let gate = AuthGate::start(server.addr(), "migrator", "s3cret");
    let dir = tempfile::tempdir().unwrap();
    let store = format!("{}/rfs_state", gate.url());
    let out = rfs()
        .arg("run")
        .arg("--repo")
        .arg(testkit::fixtures::workspace_root().join("demo/repository"))
        .args(["--snapshot", "demo", "--target", &gate.url()])
        .args(["--target-username", "migrator"])
        .env("RFS_TARGET_PASSWORD", "s3cret")
        .args(["--store", &store, "--no-progress"])
        .arg("--failure-log")
        .arg(dir.path().join("failures.jsonl"))
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let (accepted, refused) = gate.counts();
    assert_eq!(refused, 0, "{:?}", gate.seen.lock().unwrap());
    // The store's requests went through the gate too: the index it keeps is on the server.
    let store_requests = gate
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(line, _)| line.contains("/rfs_state"))
        .count();
    assert!(
        store_requests > 10,
        "{accepted} requests, {store_requests} for the store"
    );
    assert!(
        server.doc_count("rfs_state") > 0,
        "{:?}",
        server.index_names()
    );
    assert_eq!(
        server.doc_count("books") + server.doc_count("reviews"),
        DEMO_LIVE
    );

    // `rfs status` on the same store with the user in the store URL.
    let with_user = store.replacen("http://", "http://migrator:s3cret@", 1);
    let out = rfs()
        .args(["status", "--json", "--store", &with_user])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(status["finished"], true, "{status:#}");
    assert_eq!(status["docs_done"], DEMO_LIVE, "{status:#}");
}
