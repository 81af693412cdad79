//! OpenSearch Serverless as a target: the test server plays a time-series collection,
//! which refuses documents that name an `_id` (see `testkit::server::CollectionType`).
//! With `--server-generated-ids auto` and SigV4 `aoss`, the demo snapshot is migrated
//! without ids by a worker killed mid-run and started again; the target then holds every
//! document of the snapshot (compared one by one by content), and the copies the resend
//! made are exactly what `rfs verify` reports as duplicates — and no more than the
//! possible duplicates `rfs status` and the run's summary report (documents of batches in
//! flight when the worker died, recorded in the item before they were sent). A run
//! nobody kills reports none. With `never`, every document is refused, counted and
//! logged, and the exit code says so.

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
    // Slow enough to be killed mid-run, and no periodic checkpoint: what the item records
    // is only what it writes before each batch goes out (id-less: how far it may have
    // sent, with the cursor of the batches acknowledged so far).
    server.set_faults(Faults {
        latency_ms: 30,
        bulk_only: true,
        ..Faults::default()
    });
    // One batch of 20 in flight at a time: at most 20 documents are resent.
    let in_flight_docs = 20u64;
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
    let wait_for = |docs: u64, child: &mut Reaped| {
        while server.total_doc_count() < docs {
            assert!(
                Instant::now() < deadline,
                "the worker never sent {docs} documents"
            );
            let running = child.0.as_mut().unwrap().try_wait().unwrap().is_none();
            assert!(running, "the worker ended before it was killed");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    wait_for(100, &mut child);
    // From now on the target stores a batch and holds its answer: the worker dies with a
    // batch that reached the target unacknowledged, which the next worker sends again —
    // duplicates for certain, whatever the moment of the kill.
    server.set_faults(Faults {
        answer_delay_ms: 20_000,
        bulk_only: true,
        ..Faults::default()
    });
    let held_from = server.total_doc_count();
    wait_for(held_from + 1, &mut child);
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
        extra_total > 0 && extra_total <= in_flight_docs,
        "the batch held when the worker died was sent again, and nothing more: {duplicates:?}"
    );

    // The possible duplicates are reported: by the run that resent them, and by `rfs
    // status` (text and JSON) — at least as many as there are, at most what was in flight.
    let said = possible_duplicates_said(&r.stderr)
        .unwrap_or_else(|| panic!("the run's summary reports possible duplicates: {r}"));
    eprintln!(
        "possible duplicates reported: {said}; duplicates on the target: {extra_total} {duplicates:?}"
    );
    assert!(
        said >= extra_total && said <= in_flight_docs,
        "{said} possible duplicates reported, {extra_total} on the target: {r}"
    );
    assert!(
        r.stderr.contains("counted as possible duplicates"),
        "the takeover says it: {r}"
    );
    let (json, text) = status(dir.path());
    assert_eq!(json["possible_duplicates"], said, "{json}");
    assert_eq!(possible_duplicates_said(&text), Some(said), "{text}");
    assert_eq!(json["docs_refused"], 0, "{json}");
    assert_eq!(
        json["undelivered_by_reason"],
        serde_json::json!({}),
        "{json}"
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

/// The count in "possible duplicates (…): N — …", if the text has that line.
fn possible_duplicates_said(text: &str) -> Option<u64> {
    const SAYS: &str =
        "possible duplicates (id-less target, sent again after a takeover or an unanswered request): ";
    let line = text.lines().find(|l| l.contains(SAYS))?;
    let (_, rest) = line.split_once(SAYS)?;
    assert!(
        rest.contains("rfs verify --server-generated-ids counts them exactly"),
        "{line}"
    );
    rest.split_whitespace().next()?.parse().ok()
}

/// `rfs status --json` and `rfs status` of the store in `dir`.
fn status(dir: &std::path::Path) -> (Value, String) {
    let store = sqlite(dir);
    let json = rfs()
        .args(["status", "--json", "--store", &store])
        .output()
        .unwrap();
    assert!(json.status.success(), "{}", show(&json));
    let text = rfs().args(["status", "--store", &store]).output().unwrap();
    assert!(text.status.success(), "{}", show(&text));
    (
        serde_json::from_slice(&json.stdout).unwrap_or_else(|e| panic!("{e}: {}", show(&json))),
        String::from_utf8_lossy(&text.stdout).into_owned(),
    )
}

#[test]
fn a_run_nobody_kills_reports_no_possible_duplicates() {
    let server = timeseries();
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    let mut c = documents(
        &demo(),
        dir.path(),
        &url,
        &["--server-generated-ids", "auto", "--max-batch-docs", "50"],
    );
    aoss(&mut c, dir.path());
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    assert!(r.stderr.contains("without their _id"), "{r}");
    assert!(r.stderr.contains("migration finished"), "{r}");
    assert_eq!(possible_duplicates_said(&r.stderr), None, "{r}");
    assert!(!r.stderr.contains("possible duplicates"), "{r}");
    let (json, text) = status(dir.path());
    assert_eq!(json["possible_duplicates"], 0, "{json}");
    assert!(!text.contains("possible duplicates"), "{text}");
    // And there are none: every document once, by content.
    let expected = expected_documents();
    for (index, live) in LIVE {
        let want = multiset(
            expected
                .iter()
                .filter(|((i, _), _)| i == index)
                .map(|(_, v)| v),
        );
        assert_eq!(multiset(server.documents(index).values()), want, "{index}");
        assert_eq!(server.doc_count(index), live as u64, "{index}");
    }
}

/// A target that drops connections without an answer, before or after storing the batch
/// (even odds): the worker sends such a batch again, so the documents it stored are there
/// twice. Every document arrives; the resends are counted as possible duplicates, at
/// least as many as the target holds.
#[test]
fn requests_resent_without_an_answer_count_as_possible_duplicates() {
    let server = timeseries();
    let dir = tempfile::tempdir().unwrap();
    let url = server.url();
    server.set_faults(Faults {
        drop_connection: 0.3,
        bulk_only: true,
        ..Faults::default()
    });
    let mut c = documents(
        &demo(),
        dir.path(),
        &url,
        &["--server-generated-ids", "auto", "--max-batch-docs", "50"],
    );
    aoss(&mut c, dir.path());
    let r = run(c);
    assert_eq!(r.code, Some(0), "{r}");
    let said = possible_duplicates_said(&r.stderr)
        .unwrap_or_else(|| panic!("the run's summary reports possible duplicates: {r}"));
    let (json, _) = status(dir.path());
    assert_eq!(json["possible_duplicates"], said, "{json}");
    // Every document is there; what is there beyond is no more than what was said.
    let expected = expected_documents();
    let mut extra_total = 0u64;
    for (index, _) in LIVE {
        let want = multiset(
            expected
                .iter()
                .filter(|((i, _), _)| i == index)
                .map(|(_, v)| v),
        );
        let got = multiset(server.documents(index).values());
        for (doc, n) in &want {
            let have = got.get(doc).copied().unwrap_or(0);
            assert!(have >= *n, "{index}: a document is missing: {doc}");
            extra_total += have - n;
        }
        assert!(
            got.keys().all(|d| want.contains_key(d)),
            "{index}: a document that is not the snapshot's"
        );
    }
    assert!(
        said >= extra_total,
        "{said} possible duplicates said, {extra_total} on the target"
    );
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
