//! The sink port's contract, run over every sink the registry opens by URL, each behind
//! `BoxedSink`: the `_bulk` sink into the test server, the file sink (read back with plain
//! file reads) and the DynamoDB sink into `dynalite` (read back with the official AWS SDK
//! for Rust, a dev-dependency of this crate for that). Batches respect the document and
//! byte limits and are cut as soon as one is reached; what is sent arrives, compared one
//! by one; sending the same documents again leaves the same documents (idempotent
//! re-delivery); a send dropped part-way (cancellation) and the batch sent again leaves
//! each document once; a document that can never be sent is refused with a typed reason
//! and the others of its batch still arrive; an unreachable or refusing target is an
//! error naming it, without secrets.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use connectors::bulk::BatchLimits;
use connectors::{open_sink, BoxedBatch, BoxedSink, BoxedWriter, Context, OpenedSource, Params};
use coordination::Position;
use engine::{Document, Op, Sink, SinkWriter};
use serde_json::{json, Value};
use testkit::dynamo_sdk::{self, json_of};
use testkit::server::{ServerConfig, TestServer};

const DOCS: usize = 50;
const MAX_DOCS: usize = 7;
/// Small enough that some batches are cut by bytes before they hold `MAX_DOCS`.
const MAX_BYTES: usize = 900;
/// More than any one document of [`docs`] takes in any sink's batch.
const MAX_DOC_BYTES: usize = 1024;

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

/// Documents of sizes from a few bytes to a few hundred.
fn docs() -> Vec<Document> {
    (0..DOCS)
        .map(|i| {
            doc(
                i,
                json!({"n": i, "s": "é\"\\", "a": [1, {"b": null}], "pad": "x".repeat(i * 37 % 300)})
                    .to_string(),
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

/// The batches `docs` are framed into, and the refusals of framing.
fn frame(sink: &BoxedSink, docs: Vec<Document>) -> (Vec<BoxedBatch>, Vec<String>) {
    let mut w = sink.writer();
    let mut batches = Vec::new();
    let mut refused = Vec::new();
    for d in docs {
        match w.push(d) {
            Ok(Some(b)) => batches.push(b),
            Ok(None) => {}
            Err(r) => {
                assert!(!r.reason.is_empty(), "{r:?}");
                refused.push(r.error_type.clone());
            }
        }
    }
    batches.extend(w.finish());
    (batches, refused)
}

/// Frames and sends `docs`; returns (delivered, refused error types). Every batch holds at
/// most `MAX_DOCS` documents and about `MAX_BYTES` (one document over at most), and every
/// batch but the last was cut at a limit.
async fn deliver(sink: &BoxedSink, docs: Vec<Document>) -> (u64, Vec<String>) {
    let (batches, mut refused) = frame(sink, docs);
    let mut delivered = 0;
    let last = batches.len().saturating_sub(1);
    for (i, b) in batches.into_iter().enumerate() {
        let size = <BoxedWriter as SinkWriter>::size(&b);
        assert!(size > 0);
        assert!(size < MAX_BYTES + MAX_DOC_BYTES, "a batch of {size} bytes");
        let d = sink.send(b).await.unwrap();
        let n = d.delivered as usize + d.refused.len();
        assert!(n <= MAX_DOCS, "a batch of {n} documents");
        assert!(
            i == last || n == MAX_DOCS || size >= MAX_BYTES,
            "batch {i} cut early: {n} documents, {size} bytes"
        );
        delivered += d.delivered;
        refused.extend(d.refused.into_iter().map(|r| {
            assert!(!r.reason.is_empty(), "{r:?}");
            r.error_type
        }));
    }
    (delivered, refused)
}

fn source_facts() -> OpenedSource {
    struct Nothing;
    impl engine::Source for Nothing {
        fn identity(&self) -> BTreeMap<String, String> {
            BTreeMap::new()
        }
        fn plan(&self) -> Result<engine::Plan, engine::SourceError> {
            Ok(engine::Plan::default())
        }
        fn read(
            &self,
            _: &coordination::WorkItem,
            _: &coordination::Cursor,
            _: &mut dyn FnMut(engine::Read) -> bool,
        ) -> Result<(), engine::SourceError> {
            Ok(())
        }
    }
    OpenedSource {
        source: connectors::BoxedSource::new(Arc::new(Nothing)),
        kind: "documents",
        key_column: None,
        hints: Default::default(),
        groups: vec!["contract".into()],
        routed: None,
        removed: Vec::new(),
        notes: Vec::new(),
        metadata: None,
        key_check: None,
    }
}

fn settings() -> Context {
    Context {
        batch: BatchLimits {
            max_docs: MAX_DOCS,
            max_bytes: MAX_BYTES,
        },
        bulk: cluster::BulkOptions {
            hard_max_bytes: 4096,
            ..Default::default()
        },
        ..Context::default()
    }
}

fn none() -> Params {
    Params::new()
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
    // Cancellation: each send dropped after a poll, or a little later, then every batch
    // sent again: each document once.
    for wait_ms in [0, 1, 3, 10] {
        let (batches, _) = frame(sink, docs());
        for b in batches {
            let send = sink.send(b);
            if wait_ms == 0 {
                let _ = futures::FutureExt::now_or_never(send);
            } else {
                let _ = tokio::time::timeout(std::time::Duration::from_millis(wait_ms), send).await;
            }
        }
        let (n, refused) = deliver(sink, docs()).await;
        assert_eq!((n, refused.len()), (DOCS as u64, 0), "{name}: {refused:?}");
        assert_eq!(
            held(),
            expected(),
            "{name}: after sends dropped at {wait_ms} ms"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulk_sink_keeps_the_contract() {
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let s = settings();
    let facts = source_facts();
    let opened = open_sink(&server.url(), &none(), &s, &facts).await.unwrap();
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
    let e = open_sink(&format!("http://u:secret@{addr}/x"), &none(), &s, &facts)
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
    let sink = open_sink(&url, &none(), &settings(), &facts)
        .await
        .unwrap()
        .sink;
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
        &none(),
        &settings(),
        &facts,
    )
    .await
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains("format=csv"), "{e}");
    // A directory that cannot be made (a file is in the way): an error naming it.
    std::fs::write(dir.path().join("a-file"), "").unwrap();
    let blocked = dir.path().join("a-file").join("out");
    let e = open_sink(
        &format!("file://{}", blocked.display()),
        &none(),
        &settings(),
        &facts,
    )
    .await
    .err()
    .unwrap()
    .to_string();
    assert!(e.contains(&blocked.display().to_string()), "{e}");
}

/// Every item of `table` by `_id`: its attributes but `_id` and `_index` (which must
/// be the document's index), as JSON.
async fn scan(sdk: &dynamo_sdk::Client, table: &str) -> BTreeMap<String, Value> {
    let mut all = BTreeMap::new();
    for mut item in dynamo_sdk::scan(sdk, table).await {
        let id = item.remove("_id").unwrap().as_s().unwrap().clone();
        let index = item.remove("_index").unwrap();
        assert_eq!(index.as_s().unwrap(), "contract");
        let v = Value::Object(item.iter().map(|(k, v)| (k.clone(), json_of(v))).collect());
        assert!(all.insert(id, v).is_none(), "one item per key");
    }
    all
}

#[test]
fn dynamodb_sink_keeps_the_contract() {
    let Some(dynalite) = testkit::services::Dynalite::start("dynamodb_sink_keeps_the_contract")
    else {
        return;
    };
    // The registry's sink takes its credentials from the environment, as `rfs` does; no
    // other test of this binary reads them.
    std::env::set_var("AWS_ACCESS_KEY_ID", "AKIDCONTRACT");
    std::env::set_var("AWS_SECRET_ACCESS_KEY", "contract-SECRET-key");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let endpoint = dynalite.endpoint();
        let facts = source_facts();
        let s = Context {
            max_in_flight: 4,
            ..settings()
        };
        let creating = Params::new().with("create-table", "true");
        let url = format!("dynamodb://contract?region=us-east-1&endpoint={endpoint}");
        let sink = open_sink(&url, &creating, &s, &facts).await.unwrap().sink;
        let client = dynamo_sdk::client(&endpoint).await;
        let held = || {
            let client = client.clone();
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(scan(&client, "contract"))
            })
            .join()
            .unwrap()
        };
        contract("dynamodb", &sink, &held).await;
        // Never sendable: an item over DynamoDB's 400 KB, and an empty key. Refused,
        // typed; the others of the batch arrive.
        let batch = vec![
            doc(900, json!({"big": "x".repeat(420 * 1024)}).to_string()),
            doc(901, "{\"ok\":true}".into()),
            Document {
                id: String::new(),
                ..doc(902, "{\"ok\":false}".into())
            },
            doc(903, "{\"ok\":3}".into()),
        ];
        let (n, refused) = deliver(&sink, batch).await;
        assert_eq!(n, 2, "{refused:?}");
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(refused.iter().all(|t| !t.is_empty()), "{refused:?}");
        let now = held();
        assert_eq!(now["id-901"], json!({"ok": true}));
        assert_eq!(now["id-903"], json!({"ok": 3}));
        assert!(!now.contains_key("id-900") && !now.contains_key(""));
        assert_eq!(now.len(), DOCS + 2);
        // A table that is not there (without --create-table): an error naming it and
        // where it was looked for.
        let missing = format!("dynamodb://nosuch?region=us-east-1&endpoint={endpoint}");
        let e = open_sink(&missing, &none(), &settings(), &facts)
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("nosuch") && e.contains(&endpoint), "{e}");
        // An endpoint refusing the credentials: an error naming it, without secrets.
        let addr = refusing_dynamo();
        let refusing =
            format!("dynamodb://contract?region=us-east-1&endpoint=http://u:pw-SECRET@{addr}");
        let e = open_sink(&refusing, &none(), &s, &facts)
            .await
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains(&addr) && !e.contains("pw-SECRET") && !e.contains("contract-SECRET-key"),
            "{e}"
        );
    });
}

/// A loopback DynamoDB-API server refusing every request's credentials; its `host:port`.
fn refusing_dynamo() -> String {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for mut c in l.incoming().flatten() {
            let mut buf = [0u8; 8192];
            let _ = c.read(&mut buf);
            let body = r#"{"__type":"com.amazonaws.dynamodb.v20120810#UnrecognizedClientException","message":"The security token included in the request is invalid."}"#;
            let _ = write!(
                c,
                "HTTP/1.1 400 Bad Request\r\ncontent-type: application/x-amz-json-1.0\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}
