//! OpenSearch Serverless as a target: the test server plays a time-series collection,
//! which refuses documents that name an `_id` (see `testkit::server::CollectionType`).
//! With `--server-generated-ids auto` and SigV4 `aoss`, the demo snapshot is migrated
//! without ids by a worker killed mid-run and started again; the target then holds every
//! document of the snapshot (compared one by one by content), and the copies the resend
//! made are exactly what `rfs verify` reports as duplicates. With `never`, every document
//! is refused, counted and logged, and the exit code says so.

mod common;

use std::collections::BTreeMap;
use std::process::Command;
use std::time::{Duration, Instant};

use common::{demo, documents, expected_documents, rfs, run, show, sqlite, Reaped, LIVE};
use serde_json::Value;
use testkit::server::{CollectionType, Faults, ServerConfig, TestServer};

/// The flags of a Serverless target: SigV4 for `aoss`, static keys from the environment
/// (the test server does not check signatures), no profile of the machine running it.
fn aoss(c: &mut Command, dir: &std::path::Path) {
    c.args(["--target-sigv4", "aoss", "--target-aws-region", "us-east-1"])
        .env("AWS_ACCESS_KEY_ID", "AKIDTESTSERVERLESS")
        .env("AWS_SECRET_ACCESS_KEY", "serverless-test-secret")
        .env_remove("AWS_SESSION_TOKEN")
        .env_remove("AWS_PROFILE")
        .env("AWS_CONFIG_FILE", dir.join("no-aws-config"))
        .env(
            "AWS_SHARED_CREDENTIALS_FILE",
            dir.join("no-aws-credentials"),
        );
}

/// A document's content in one canonical text (keys sorted: `serde_json`'s map is a
/// BTreeMap here), to count documents by content.
fn canonical(v: &Value) -> String {
    v.to_string()
}

/// Per index: canonical content → how many documents have it.
fn multiset<'a>(docs: impl Iterator<Item = &'a Value>) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for d in docs {
        *m.entry(canonical(d)).or_default() += 1;
    }
    m
}

fn timeseries() -> TestServer {
    TestServer::start(ServerConfig {
        serverless: Some(CollectionType::Timeseries),
        ..ServerConfig::opensearch("2.11.0")
    })
}

#[test]
fn a_worker_killed_mid_run_into_a_timeseries_collection_loses_nothing_and_duplicates_are_reported()
{
    let server = timeseries();
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    // Slow enough to be killed mid-run, and no checkpoint before the kill: what was sent
    // is sent again by the next worker (each resent document a duplicate).
    server.set_faults(Faults {
        latency_ms: 30,
        bulk_only: true,
        ..Faults::default()
    });
    let slow = [
        "--server-generated-ids",
        "auto",
        "--max-batch-docs",
        "20",
        "--concurrency",
        "1",
        "--parallel",
        "1",
        "--checkpoint-seconds",
        "3600",
        "--lease-seconds",
        "3",
        "--renew-seconds",
        "0",
    ];
    let mut c = documents(&demo(), dir.path(), &url, &slow);
    aoss(&mut c, dir.path());
    let mut child = Reaped(Some(c.spawn().unwrap()));
    let deadline = Instant::now() + Duration::from_secs(60);
    while server.total_doc_count() < 100 {
        assert!(Instant::now() < deadline, "the worker never sent documents");
        let running = child.0.as_mut().unwrap().try_wait().unwrap().is_none();
        assert!(running, "the worker ended before it was killed");
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut killed = child.0.take().unwrap();
    killed.kill().unwrap(); // SIGKILL
    killed.wait().unwrap();
    let at_kill = server.total_doc_count();
    let total: u64 = LIVE.iter().map(|(_, n)| *n as u64).sum();
    assert!(at_kill < total, "the kill came after the end ({at_kill})");
    // No id went out: every request the server answered was accepted (no 400 item).
    server.set_faults(Faults::default());

    // Started again once the dead worker's lease has expired: it finishes the run.
    std::thread::sleep(Duration::from_secs(4));
    let mut again = documents(&demo(), dir.path(), &url, &slow);
    aoss(&mut again, dir.path());
    let r = run(again);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(
        r.stderr.contains("without their _id"),
        "the id-less mode is said: {r}"
    );

    // Every document of the snapshot is there, one by one by content; what is there
    // beyond them are copies of sent documents.
    let expected = expected_documents();
    let mut duplicates = BTreeMap::new();
    for (index, live) in LIVE {
        let want = multiset(
            expected
                .iter()
                .filter(|((i, _), _)| i == index)
                .map(|(_, v)| v),
        );
        let held_docs = server.documents(index);
        let held = multiset(held_docs.values());
        for (content, n) in &want {
            let h = held.get(content).copied().unwrap_or(0);
            assert!(h >= *n, "{index}: {content} held {h} times, sent {n}");
        }
        for content in held.keys() {
            assert!(want.contains_key(content), "{index}: a stranger: {content}");
        }
        let extra = held_docs.len() as u64 - live as u64;
        duplicates.insert(index.to_string(), extra);
    }
    let extra_total: u64 = duplicates.values().sum();
    assert!(
        extra_total > 0 && extra_total <= at_kill,
        "the {at_kill} documents sent before the kill were sent again: {duplicates:?}"
    );

    // `rfs verify` by content reports exactly those duplicates, and nothing missing.
    let mut v = rfs();
    v.arg("verify")
        .arg("--repo")
        .arg(demo())
        .args(["--snapshot", common::SNAPSHOT, "--target", &url, "--json"])
        .current_dir(dir.path());
    aoss(&mut v, dir.path());
    let r = run(v);
    assert_eq!(r.code, Some(6), "duplicates are a mismatch: {r}");
    let report: Value = serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {r}"));
    for (index, live) in LIVE {
        let iv = report["indices"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["index"] == index)
            .unwrap_or_else(|| panic!("{index} in {report}"));
        let content = &iv["content"];
        assert_eq!(content["expected"], live as u64, "{iv}");
        assert_eq!(content["held"], server.doc_count(index), "{iv}");
        assert_eq!(content["missing"], 0, "{iv}");
        assert_eq!(content["extra"], duplicates[index], "{iv}");
        assert_eq!(content["duplicates"], duplicates[index], "{iv}");
    }
    assert!(r.stderr.contains("by content"), "{r}");
}

#[test]
fn ids_sent_to_a_timeseries_collection_are_refused_counted_and_logged() {
    let server = timeseries();
    let dir = tempfile::tempdir().unwrap();
    let mut c = documents(
        &demo(),
        dir.path(),
        &server.url(),
        &["--server-generated-ids", "never"],
    );
    aoss(&mut c, dir.path());
    let out = c.output().unwrap();
    assert_eq!(out.status.code(), Some(7), "{}", show(&out));
    assert_eq!(server.total_doc_count(), 0);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let total: usize = LIVE.iter().map(|(_, n)| n).sum();
    assert!(
        stderr.contains(&format!("{total} refused:illegal_argument_exception")),
        "{stderr}"
    );
    // Each document in the failure log, by its own id, with the server's reason.
    let records = engine::FailureLog::read(&dir.path().join("failures.jsonl")).unwrap();
    assert_eq!(records.len(), total);
    let expected = expected_documents();
    for r in &records {
        assert_eq!(r.stage, engine::Stage::Target);
        assert_eq!(r.error_type, "illegal_argument_exception");
        assert!(
            r.reason
                .contains("Document ID is not supported in create/index operation request"),
            "{r:?}"
        );
        assert!(
            expected.contains_key(&(r.index.clone(), r.id.clone())),
            "{r:?}"
        );
    }
    // And the store counts them.
    let st = rfs()
        .args(["status", "--json", "--store", &sqlite(dir.path())])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&st.stdout).unwrap();
    assert_eq!(v["docs_refused"], total as u64, "{v}");
    assert_eq!(v["docs_done"], 0, "{v}");
}
