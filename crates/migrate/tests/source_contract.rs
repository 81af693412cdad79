//! The source port's contract, run over every source that can be built here: the JSON-lines
//! source (local files with lines across item and read-window boundaries, and on S3 through
//! `s3rver`), the snapshot source (the demo repository) — each read through the registry's
//! `BoxedSource`. For every item: positions strictly increase and stay inside the item;
//! resuming after any cursor gives exactly the rest; `emit` returning false stops the read;
//! over all items every document comes once.

use std::collections::BTreeSet;
use std::sync::Arc;

use bytes::Bytes;
use coordination::{Cursor, Position};
use migrate::connectors::BoxedSource;
use migrate::sources::jsonl::{JsonlOptions, JsonlSource};
use migrate::sources::snapshot::{SnapshotOptions, SnapshotSource};
use migrate::{Read, Source};

fn read_all(s: &dyn Source, item: &coordination::WorkItem, after: &Cursor) -> Vec<Read> {
    let mut out = Vec::new();
    s.read(item, after, &mut |r| {
        out.push(r);
        true
    })
    .unwrap_or_else(|e| panic!("{}: {e}", item.id()));
    out
}

fn key(r: &Read) -> (String, Option<String>) {
    match r {
        Read::Doc(d) => (d.index.to_string(), Some(d.id.clone())),
        Read::Skip(s) => (s.index.to_string(), s.id.clone()),
    }
}

/// Checks the contract and returns every read of the plan.
fn contract(name: &str, s: &dyn Source) -> Vec<Read> {
    let plan = s.plan().unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!plan.items.is_empty(), "{name}: no items");
    assert!(!s.identity().is_empty(), "{name}");
    let mut all = Vec::new();
    for item in &plan.items {
        let reads = read_all(s, item, &item.after);
        for w in reads.windows(2) {
            assert!(
                w[0].position() < w[1].position(),
                "{name} {}: {:?} then {:?}",
                item.id(),
                w[0].position(),
                w[1].position()
            );
        }
        // Resume after a spread of cursors (the first, the last, some between).
        let n = reads.len();
        let cursors: BTreeSet<usize> =
            [0, 1, n / 3, n / 2, n.saturating_sub(2), n.saturating_sub(1)]
                .into_iter()
                .filter(|&i| i < n)
                .collect();
        for i in cursors {
            let after = Some(reads[i].position().clone());
            let rest = read_all(s, item, &after);
            assert_eq!(rest, reads[i + 1..], "{name} {} after {after:?}", item.id());
        }
        // Stopping: emit says no after the first.
        if n > 1 {
            let mut got = 0;
            s.read(item, &item.after, &mut |_| {
                got += 1;
                false
            })
            .unwrap();
            assert_eq!(got, 1, "{name} {}", item.id());
        }
        all.extend(reads);
    }
    let keys: Vec<_> = all
        .iter()
        .filter(|r| matches!(r, Read::Doc(_)))
        .map(key)
        .collect();
    let unique: BTreeSet<_> = keys.iter().collect();
    assert_eq!(unique.len(), keys.len(), "{name}: a document read twice");
    all
}

/// What one line must give: `(index, id, source)` or the skip reason.
type Want = Result<(String, String, String), &'static str>;

/// Lines of every shape, with their expected outcome.
fn lines() -> (String, Vec<Want>) {
    let mut text = String::new();
    let mut want = Vec::new();
    for i in 0..300u32 {
        match i % 23 {
            5 => {
                text.push_str("{oops\n");
                want.push(Err("bad_line"));
            }
            7 => text.push_str("   \n"),
            11 => {
                text.push_str(&format!("{{\"_index\":\"ix\",\"_id\":\"{i}\"}}\n"));
                want.push(Err("no_source"));
            }
            13 => {
                text.push_str(&format!(
                    "{{\"_index\":\"ix\",\"_id\":\"{i}\",\"_source\":{{\"big\":\"{}\"}}}}\n",
                    "z".repeat(3000)
                ));
                want.push(Err("line_too_long"));
            }
            _ => {
                let src = format!(
                    "{{\"n\":{i},\"pad\":\"{}\"}}",
                    "x".repeat((i as usize * 7) % 90)
                );
                text.push_str(&format!(
                    "{{\"_index\":\"ix{}\",\"_id\":\"d{i}\",\"_routing\":\"r\",\"_source\":{src}}}\n",
                    i % 2
                ));
                want.push(Ok((format!("ix{}", i % 2), format!("d{i}"), src)));
            }
        }
    }
    // The last line without a newline.
    text.push_str("{\"_index\":\"ix0\",\"_id\":\"last\",\"_source\":{}}");
    want.push(Ok(("ix0".into(), "last".into(), "{}".into())));
    (text, want)
}

fn check_lines(reads: &[Read], want: &[Want]) {
    assert_eq!(reads.len(), want.len());
    for (r, w) in reads.iter().zip(want) {
        match (r, w) {
            (Read::Doc(d), Ok((index, id, src))) => {
                assert_eq!(
                    (&*d.index, &d.id, &d.source[..]),
                    (index.as_str(), id, src.as_bytes())
                );
                let routing = (id != "last").then_some("r");
                assert_eq!(d.routing.as_deref(), routing);
            }
            (Read::Skip(s), Err(reason)) => {
                assert_eq!(s.reason, *reason, "{}", s.detail);
                assert!(s.detail.contains("a.jsonl at byte"), "{}", s.detail);
            }
            (r, w) => panic!("read {r:?}, wanted {w:?}"),
        }
    }
}

fn small_items() -> JsonlOptions {
    JsonlOptions {
        chunk_bytes: 997,
        read_bytes: 61,
        max_line_bytes: 2048,
    }
}

#[test]
fn jsonl_files_keep_the_contract() {
    let dir = tempfile::tempdir().unwrap();
    let (text, want) = lines();
    std::fs::write(dir.path().join("a.jsonl"), &text).unwrap();
    std::fs::write(dir.path().join("empty.jsonl"), "").unwrap();
    std::fs::write(dir.path().join("notes.txt"), "not read").unwrap();
    let store =
        snapshot::open_blob_store(&dir.path().display().to_string(), &Default::default()).unwrap();
    let source = BoxedSource::new(Arc::new(JsonlSource::open(store, small_items()).unwrap()));
    let plan = source.plan().unwrap();
    assert_eq!(plan.totals.bytes, text.len() as u64);
    assert_eq!(plan.items.len(), text.len().div_ceil(997));
    let reads = contract("jsonl", &source);
    check_lines(&reads, &want);
    // A cursor in the middle of a line (never given by the pipeline, but harmless): the
    // next line.
    let item = &plan.items[0];
    let mid = read_all(&source, item, &Some(Position::Doc(3)));
    assert_eq!(mid[..], reads[1..mid.len() + 1]);
}

#[test]
fn jsonl_on_s3_keeps_the_contract() {
    let Some(s3) = testkit::services::S3rver::start("jsonl_on_s3_keeps_the_contract") else {
        return;
    };
    s3.create_bucket("lines");
    let (text, want) = lines();
    s3.put_object("lines", "export/a.jsonl", text.as_bytes());
    let opts = snapshot::StoreOptions {
        s3_region: Some(s3.region().into()),
        s3_endpoint: Some(s3.endpoint()),
        s3_access_key_id: Some(s3.access_key().into()),
        s3_secret_access_key: Some(s3.secret_key().into()),
        ..Default::default()
    };
    let store = snapshot::open_blob_store("s3://lines/export", &opts).unwrap();
    let source = BoxedSource::new(Arc::new(JsonlSource::open(store, small_items()).unwrap()));
    let reads = contract("jsonl on s3", &source);
    check_lines(&reads, &want);
}

#[test]
fn jsonl_without_files_is_an_error_naming_the_place() {
    let dir = tempfile::tempdir().unwrap();
    let store =
        snapshot::open_blob_store(&dir.path().display().to_string(), &Default::default()).unwrap();
    let e = JsonlSource::open(store, JsonlOptions::default())
        .err()
        .unwrap();
    assert!(
        e.message.contains(&dir.path().display().to_string()) && e.message.contains("no *.jsonl"),
        "{e}"
    );
}

#[test]
fn snapshot_keeps_the_contract() {
    let repo = testkit::fixtures::workspace_root()
        .join("demo")
        .join("repository");
    let store =
        snapshot::open_blob_store(&repo.display().to_string(), &Default::default()).unwrap();
    let snap = snapshot::Repository::open(store)
        .unwrap()
        .snapshot("demo")
        .unwrap();
    let names = snap.index_names();
    let source = BoxedSource::new(Arc::new(SnapshotSource::new(
        snap,
        names,
        SnapshotOptions {
            split_docs: Some(500),
            verify_checksums: true,
            rebuild: Default::default(),
        },
    )));
    let reads = contract("snapshot", &source);
    let docs = reads.iter().filter(|r| matches!(r, Read::Doc(_))).count();
    assert_eq!(docs, 1326 + 473);
}

#[test]
fn live_cluster_keeps_the_contract() {
    use testkit::server::{ServerConfig, TestServer};
    let server = TestServer::start(ServerConfig::opensearch("2.11.0"));
    let mut body = String::new();
    for (index, n) in [("c-1", 230), ("c-2", 57)] {
        for i in 0..n {
            body.push_str(&format!(
                "{{\"index\":{{\"_index\":\"{index}\",\"_id\":\"{i}\"}}}}\n{{\"n\":{i}}}\n"
            ));
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let source = rt.block_on(async {
        let client = cluster::Client::new(cluster::ClientConfig::new(server.url())).unwrap();
        let r = client
            .request_bytes(
                cluster::Method::POST,
                "/_bulk",
                Bytes::from(body),
                "application/x-ndjson",
            )
            .await
            .unwrap();
        assert!(r.is_success());
        migrate::sources::cluster::ClusterSource::open(
            client,
            server.url(),
            "c-*",
            migrate::sources::cluster::ClusterSourceOptions {
                slices: 3,
                page_size: 17,
                keep_alive: "1m".into(),
            },
        )
        .await
        .unwrap()
    });
    let source = BoxedSource::new(Arc::new(source));
    let reads = contract("cluster", &source);
    let ids: BTreeSet<(String, String)> = reads
        .iter()
        .map(|r| match r {
            Read::Doc(d) => (d.index.to_string(), d.id.clone()),
            Read::Skip(s) => panic!("{s:?}"),
        })
        .collect();
    assert_eq!(ids.len(), 230 + 57);
    drop(rt);
}
