//! Bulk indexing against the project's fault-injecting test server: every document ends on
//! the target exactly once by id, or refused with its reason, and counts add up.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use bytes::Bytes;
use cluster::{
    BulkDoc, BulkOptions, BulkSender, Client, ClientConfig, ClusterError, Refused,
    RequestCompression, RetryPolicy,
};
use serde_json::{json, Value};
use testkit::server::{Faults, ServerConfig, TestServer};

fn doc(index: &str, i: usize) -> (BulkDoc, Value) {
    let v = json!({ "i": i, "text": "x".repeat(i % 300), "sub": { "even": i.is_multiple_of(2) } });
    let d = BulkDoc::new(
        index,
        format!("doc-{i}"),
        Bytes::from(serde_json::to_vec(&v).unwrap()),
    );
    (d, v)
}

fn fast_retries(attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts: attempts,
        initial_backoff: Duration::from_millis(5),
        max_backoff: Duration::from_millis(100),
        max_retry_after: Duration::from_secs(5),
    }
}

async fn client_for(server: &TestServer, gzip: bool) -> Client {
    let mut c = ClientConfig::new(server.url());
    c.compression = if gzip {
        RequestCompression::On
    } else {
        RequestCompression::Off
    };
    c.retry = fast_retries(20);
    c.request_timeout = Duration::from_secs(10);
    Client::connect(c).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_under_faults_loses_nothing() {
    let failing: BTreeSet<String> = [3, 77, 512, 1999, 2400]
        .iter()
        .map(|i| format!("doc-{i}"))
        .collect();
    let faults = Faults {
        reject_429: 0.30,
        retry_after_secs: 1,
        error_500: 0.025,
        error_503: 0.025,
        drop_connection: 0.05,
        bulk_item_429: 0.05,
        failing_ids: failing.clone(),
        bulk_only: true,
        ..Faults::default()
    };
    let server = TestServer::start(ServerConfig {
        seed: Some(5),
        faults,
        ..ServerConfig::opensearch("2.11.0")
    });
    let client = client_for(&server, true).await;
    let opts = BulkOptions {
        max_in_flight: 4,
        retry: fast_retries(25),
        ..BulkOptions::default()
    };
    let sender = BulkSender::new(client, opts).unwrap();

    let n = 2500;
    let (docs, expected): (Vec<BulkDoc>, Vec<Value>) = (0..n).map(|i| doc("faulty", i)).unzip();
    let started = Instant::now();
    // Like the migration pipeline: bodies of 100, four sends at a time.
    let (mut docs_n, mut indexed, mut accepted, mut retries, mut throttled) = (0, 0, 0, 0, 0);
    let mut refused: Vec<Refused> = Vec::new();
    for group in docs.chunks(400) {
        let sends = group.chunks(100).map(|b| sender.send(b.to_vec()));
        for r in futures::future::join_all(sends).await {
            let r = r.unwrap();
            docs_n += r.docs;
            indexed += r.indexed;
            accepted += r.accepted;
            retries += r.retries;
            throttled += r.throttled;
            refused.extend(r.refused);
        }
    }
    let elapsed = started.elapsed();

    // Counts add up.
    assert_eq!(docs_n, n as u64);
    assert_eq!(indexed + accepted + refused.len() as u64, n as u64);
    assert_eq!(refused.len(), failing.len(), "{refused:?}");
    assert!(retries > 0 && throttled > 0, "faults were injected");
    // Retry-After: 1 s was honoured at least once.
    assert!(elapsed >= Duration::from_secs(1), "{elapsed:?}");

    // Exactly the failing ids are refused, each once, with the server's reason.
    let logged: BTreeMap<String, &Refused> =
        refused.iter().map(|r| (r.meta.id.clone(), r)).collect();
    assert_eq!(refused.len(), logged.len(), "an id refused twice");
    assert_eq!(logged.keys().cloned().collect::<BTreeSet<_>>(), failing);
    for r in logged.values() {
        assert_eq!(&*r.meta.index, "faulty");
        assert_eq!(r.error.error_type, "mapper_parsing_exception");
        assert_eq!(r.error.status, 400);
        assert!(!r.error.reason.is_empty() && r.attempts >= 1, "{r:?}");
        let sent: Value = serde_json::from_slice(&r.source).unwrap();
        let i: usize = r.meta.id["doc-".len()..].parse().unwrap();
        assert_eq!(sent, expected[i], "the refused source is the one sent");
    }

    // Every other document is on the server exactly once, identical to what was sent.
    let stored = server.documents("faulty");
    assert_eq!(stored.len() as u64, indexed);
    for (i, v) in expected.iter().enumerate() {
        let id = format!("doc-{i}");
        if failing.contains(&id) {
            assert!(!stored.contains_key(&id), "{id} failed but is stored");
        } else {
            assert_eq!(stored.get(&id), Some(v), "{id}");
        }
    }
    let stats = sender.stats();
    assert_eq!(stats.indexed, indexed);
    assert!(stats.concurrency_limit >= 1.0 && stats.concurrency_limit <= 4.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn target_down_past_the_budget_is_an_error_and_recovers() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let client = client_for(&server, false).await;
    let opts = BulkOptions {
        retry: fast_retries(4),
        ..BulkOptions::default()
    };
    let sender = BulkSender::new(client.clone(), opts).unwrap();
    let docs: Vec<BulkDoc> = (0..50).map(|i| doc("down", i).0).collect();

    server.set_down(true);
    let e = sender.send(docs.clone()).await.unwrap_err();
    assert!(matches!(e, ClusterError::RetriesExhausted { .. }), "{e}");
    assert!(
        e.to_string().contains("50 documents still unacknowledged"),
        "{e}"
    );
    assert_eq!(
        sender.stats().refused,
        0,
        "nothing is refused when the target is down"
    );

    // Down for a while, then up again within a patient budget: everything arrives.
    let patient = BulkOptions {
        retry: RetryPolicy {
            max_attempts: 30,
            initial_backoff: Duration::from_millis(20),
            max_backoff: Duration::from_millis(200),
            max_retry_after: Duration::from_secs(1),
        },
        ..BulkOptions::default()
    };
    let sender = BulkSender::new(client, patient).unwrap();
    let up = async {
        tokio::time::sleep(Duration::from_millis(700)).await;
        server.set_down(false);
    };
    let (out, ()) = tokio::join!(sender.send(docs), up);
    let out = out.unwrap();
    assert_eq!(out.indexed, 50);
    assert!(out.retries > 0);
    assert_eq!(server.documents("down").len(), 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_dialect_for_elasticsearch_6_and_rate_limit() {
    let server = TestServer::start(ServerConfig::elasticsearch("6.8.23"));
    let client = client_for(&server, false).await;
    assert_eq!(
        client.target().unwrap().dialect(),
        cluster::DocAddressing::Typed
    );
    let opts = BulkOptions {
        max_docs_per_sec: Some(400.0),
        ..BulkOptions::default()
    };
    let sender = BulkSender::new(client.clone(), opts).unwrap();
    let (docs, expected): (Vec<BulkDoc>, Vec<Value>) = (0..800)
        .map(|i| {
            let (mut d, v) = doc("typed", i);
            d.doc_type = Some("_doc".into());
            (d, v)
        })
        .unzip();
    let started = Instant::now();
    let mut out = cluster::BulkResult::default();
    for body in docs.chunks(50) {
        let r = sender.send(body.to_vec()).await.unwrap();
        out.indexed += r.indexed;
    }
    // 800 documents at 400/s with one second of burst cannot take less than one second.
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out.indexed, 800);
    let stored = server.documents("typed");
    for (i, v) in expected.iter().enumerate() {
        assert_eq!(stored.get(&format!("doc-{i}")), Some(v));
    }
    let d = client.get_doc("typed", "doc-5").await.unwrap().unwrap();
    assert_eq!(d.source.unwrap(), expected[5]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsendable_and_malformed_documents_are_refused_not_dropped() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let client = client_for(&server, false).await;
    let opts = BulkOptions {
        hard_max_bytes: 4096,
        ..BulkOptions::default()
    };
    let sender = BulkSender::new(client, opts).unwrap();
    let mut docs: Vec<BulkDoc> = (0..40).map(|i| doc("mixed", i).0).collect();
    docs[5].source = Bytes::from_static(b"   ");
    docs[9].source = Bytes::from(format!("{{\"big\":\"{}\"}}", "y".repeat(5000)));
    docs[17].source = Bytes::from_static(b"{\"broken\": ");
    let out = sender.send(docs.clone()).await.unwrap();
    assert_eq!(out.indexed + out.refused.len() as u64, 40, "{out:?}");
    assert_eq!(out.refused.len(), 3, "{out:?}");

    struct Rec {
        error_type: String,
        status: u16,
        source: Bytes,
    }
    let records: BTreeMap<String, Rec> = out
        .refused
        .into_iter()
        .map(|r| {
            (
                r.meta.id,
                Rec {
                    error_type: r.error.error_type,
                    status: r.error.status,
                    source: r.source,
                },
            )
        })
        .collect();
    assert_eq!(
        records.keys().cloned().collect::<Vec<_>>(),
        ["doc-17", "doc-5", "doc-9"]
    );
    assert_eq!(records["doc-5"].error_type, "invalid_document");
    assert_eq!(
        (
            records["doc-9"].error_type.as_str(),
            records["doc-9"].status
        ),
        ("document_too_large", 0)
    );
    assert_eq!(records["doc-17"].status, 400);
    assert_eq!(&records["doc-17"].source[..], b"{\"broken\":");
    let stored = server.documents("mixed");
    assert_eq!(stored.len(), 37);
    for (i, d) in docs.iter().enumerate() {
        if ![5, 9, 17].contains(&i) {
            let v: Value = serde_json::from_slice(&d.source).unwrap();
            assert_eq!(stored.get(&d.id), Some(&v));
        }
    }
}
