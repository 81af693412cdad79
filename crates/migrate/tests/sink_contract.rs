//! The sink port's contract, run over the sinks the registry opens by URL, each behind
//! `BoxedSink`: the `_bulk` sink into the test server and the file sink (read back with
//! plain file reads). Batches respect the document limit; what is sent arrives, compared
//! one by one; sending the same documents again leaves the same documents (idempotent
//! re-delivery); a document that can never be sent is refused with a typed reason and
//! the others of its batch still arrive; an unreachable target is an error naming it.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use coordination::Position;
use migrate::connectors::{open_sink, BoxedSink, OpenedSource, Settings};
use migrate::sinks::bulk::BatchLimits;
use migrate::{Document, Op, Sink, SinkWriter};
use serde_json::{json, Value};
use testkit::server::{ServerConfig, TestServer};

const DOCS: usize = 50;
const MAX_DOCS: usize = 7;

fn doc(i: usize, source: String) -> Document {
    Document {
        position: Position::Doc(i as u64),
        op: Op::Index,
        index: Arc::from("contract"),
        id: format!("id-{i}"),
        doc_type: None,
        routing: None,
        source: Bytes::from(source),
    }
}

fn docs() -> Vec<Document> {
    (0..DOCS)
        .map(|i| {
            doc(
                i,
                json!({"n": i, "s": "é\"\\", "a": [1, {"b": null}]}).to_string(),
            )
        })
        .collect()
}

fn expected() -> BTreeMap<String, Value> {
    docs()
        .into_iter()
        .map(|d| (d.id, serde_json::from_slice(&d.source).unwrap()))
        .collect()
}

/// Frames and sends `docs`; returns (delivered, refused error types).
async fn deliver(sink: &BoxedSink, docs: Vec<Document>) -> (u64, Vec<String>) {
    let mut w = sink.writer();
    let mut batches = Vec::new();
    let mut refused = Vec::new();
    for d in docs {
        match w.push(d) {
            Ok(Some(b)) => batches.push(b),
            Ok(None) => {}
            Err(r) => refused.push(r.error_type.clone()),
        }
    }
    batches.extend(w.finish());
    let mut delivered = 0;
    for b in batches {
        assert!(<migrate::connectors::BoxedWriter as SinkWriter>::size(&b) > 0);
        let d = sink.send(b).await.unwrap();
        delivered += d.delivered;
        refused.extend(d.refused.into_iter().map(|r| r.error_type));
    }
    (delivered, refused)
}

fn source_facts() -> OpenedSource {
    struct Nothing;
    impl migrate::Source for Nothing {
        fn identity(&self) -> BTreeMap<String, String> {
            BTreeMap::new()
        }
        fn plan(&self) -> Result<migrate::Plan, migrate::SourceError> {
            Ok(migrate::Plan::default())
        }
        fn read(
            &self,
            _: &coordination::WorkItem,
            _: &coordination::Cursor,
            _: &mut dyn FnMut(migrate::Read) -> bool,
        ) -> Result<(), migrate::SourceError> {
            Ok(())
        }
    }
    OpenedSource {
        source: migrate::connectors::BoxedSource::new(Arc::new(Nothing)),
        kind: "documents",
        key_column: None,
        hints: Default::default(),
        groups: vec!["contract".into()],
        routed: None,
    }
}

fn settings() -> Settings {
    Settings {
        batch: BatchLimits {
            max_docs: MAX_DOCS,
            max_bytes: 1 << 20,
        },
        bulk: cluster::BulkOptions {
            hard_max_bytes: 4096,
            ..Default::default()
        },
        ..Settings::default()
    }
}

/// The contract over one sink; `held` reads the target back independently.
async fn contract(name: &str, sink: &BoxedSink, held: &dyn Fn() -> BTreeMap<String, Value>) {
    assert!(!sink.identity().is_empty(), "{name}");
    let (n, refused) = deliver(sink, docs()).await;
    assert_eq!((n, refused.len()), (DOCS as u64, 0), "{name}: {refused:?}");
    assert_eq!(held(), expected(), "{name}");
    // Again: the same documents, nothing more.
    let (n, _) = deliver(sink, docs()).await;
    assert_eq!(n, DOCS as u64, "{name}");
    assert_eq!(held(), expected(), "{name}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_sink_keeps_the_contract() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let s = settings();
    let facts = source_facts();
    let opened = open_sink(&server.url(), &s, &facts).await.unwrap();
    assert_eq!(opened.index, None);
    let sink = opened.sink;
    let srv = &server;
    contract("bulk", &sink, &|| srv.documents("contract")).await;
    // Too large for one entry: refused when framed, typed; the others arrive.
    let mut batch = vec![doc(900, json!({"big": "x".repeat(5000)}).to_string())];
    batch.push(doc(901, "{\"ok\":true}".into()));
    let (n, refused) = deliver(&sink, batch).await;
    assert_eq!(n, 1);
    assert_eq!(refused.len(), 1);
    assert!(!refused[0].is_empty());
    assert_eq!(server.documents("contract")["id-901"], json!({"ok": true}));
    assert!(!server.documents("contract").contains_key("id-900"));
    // A target that refuses the credentials (401 is not retried, unlike a refused
    // connection, which the client retries for about two minutes): an error naming it,
    // without its credentials.
    let addr = refusing_server();
    let e = open_sink(&format!("http://u:secret@{addr}/x"), &s, &facts)
        .await
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains(&addr) && !e.contains("secret"), "{e}");
}

/// A loopback HTTP server answering every request `401 Unauthorized`; its `host:port`.
fn refusing_server() -> String {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let _ = c.read(&mut buf);
            let body = r#"{"error":{"type":"security_exception","reason":"missing authentication credentials"},"status":401}"#;
            let _ = write!(
                c,
                "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_sink_keeps_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let facts = source_facts();
    let url = format!("file://{}?format=jsonl", dir.path().display());
    let sink = open_sink(&url, &settings(), &facts).await.unwrap().sink;
    let path = dir.path().join("contract.jsonl");
    // Readers of the files keep the last line of each id (re-delivery appends).
    let held = || {
        let mut m = BTreeMap::new();
        for line in std::fs::read_to_string(&path).unwrap_or_default().lines() {
            let v: Value = serde_json::from_str(line).unwrap();
            assert_eq!(v["_index"], "contract");
            m.insert(v["_id"].as_str().unwrap().to_string(), v["_source"].clone());
        }
        m
    };
    contract("files", &sink, &held).await;
    let e = open_sink(
        &format!("file://{}?format=csv", dir.path().display()),
        &settings(),
        &facts,
    )
    .await
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("format=csv"), "{e}");
}
