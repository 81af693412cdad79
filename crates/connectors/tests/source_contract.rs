//! The source port's contract, run over every source: the JSON-lines source (local files
//! with lines across item and read-window boundaries, and on S3 through `s3rver`), the
//! snapshot source (the demo repository) and its delta form (`--since`, on a history
//! written by real Lucene), the live-cluster source (the test server), the PostgreSQL
//! table source (a real PostgreSQL: several key types, rows across slot boundaries, rows
//! that cannot be rendered, NULL keys) and the failure-log source (`rfs redrive`) — each
//! read through the registry's `BoxedSource`. For every item: positions strictly increase
//! (in the source's key order) and stay inside the item; resuming after any cursor gives
//! exactly the rest; `emit` returning false stops the read at once, and resuming after the
//! last emitted position gives exactly the rest (cancellation); over all items every
//! document comes once. What a source cannot deliver comes as a `Read::Skip` with a
//! reason, compared one by one with what the input holds. Errors name what failed (a
//! missing file, table, column or blob, an unreachable or refusing server) without
//! secrets, and keep their cause as `source()` where the error type carries one.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use bytes::Bytes;
use connectors::jsonl::{JsonlOptions, JsonlSource};
use connectors::snapshot::{SnapshotOptions, SnapshotSource};
use connectors::BoxedSource;
use coordination::{Cursor, Position};
use engine::{Read, Source};

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

/// How a source orders its positions (a table's keys compare as the column's type).
type Order = fn(&Position, &Position) -> Ordering;

/// Checks the contract and returns every read of the plan.
fn contract(name: &str, s: &dyn Source) -> Vec<Read> {
    contract_in(name, s, Position::cmp)
}

/// [`contract`], with positions compared by `order`.
fn contract_in(name: &str, s: &dyn Source, order: Order) -> Vec<Read> {
    let plan = s.plan().unwrap_or_else(|e| panic!("{name}: {e}"));
    assert!(!plan.items.is_empty(), "{name}: no items");
    assert!(!s.identity().is_empty(), "{name}");
    let mut all = Vec::new();
    for item in &plan.items {
        let reads = read_all(s, item, &item.after);
        for r in &reads {
            let p = r.position();
            assert!(
                item.after
                    .as_ref()
                    .is_none_or(|a| order(a, p) == Ordering::Less)
                    && item
                        .until
                        .as_ref()
                        .is_none_or(|u| order(p, u) != Ordering::Greater),
                "{name} {}: {p:?} outside the item",
                item.id()
            );
        }
        for w in reads.windows(2) {
            assert!(
                order(w[0].position(), w[1].position()) == Ordering::Less,
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
        // Cancellation: emit says no after the k-th read; the read returns without
        // another, and resuming after the k-th position gives exactly the rest.
        let stops: BTreeSet<usize> = [1, 2, n / 2, n.saturating_sub(1)]
            .into_iter()
            .filter(|&k| k > 0 && k < n)
            .collect();
        for k in stops {
            let mut got = Vec::new();
            s.read(item, &item.after, &mut |r| {
                got.push(r);
                got.len() < k
            })
            .unwrap_or_else(|e| panic!("{name} {}: {e}", item.id()));
            assert_eq!(got[..], reads[..k], "{name} {}: stopped at {k}", item.id());
            let after = Some(got[k - 1].position().clone());
            let rest = read_all(s, item, &after);
            assert_eq!(rest, reads[k..], "{name} {}: resumed after {k}", item.id());
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
    live_cluster_contract(testkit::server::ServerConfig::opensearch("2.11.0"), None);
}

/// Elasticsearch 6.8 has no point in time: read by sliced scroll, resumed by count.
#[test]
fn live_cluster_by_scroll_keeps_the_contract() {
    live_cluster_contract(
        testkit::server::ServerConfig::elasticsearch("6.8.23"),
        Some("doc"),
    );
}

/// Every other version read by scroll: Elasticsearch 5.6 (typed, `hits.total` a number),
/// 7.9 (typeless, `hits.total` an object) and OpenSearch 1.3.
#[test]
fn live_cluster_by_scroll_keeps_the_contract_on_5_7_and_opensearch_1() {
    live_cluster_contract(
        testkit::server::ServerConfig::elasticsearch("5.6.16"),
        Some("doc"),
    );
    live_cluster_contract(testkit::server::ServerConfig::elasticsearch("7.9.3"), None);
    live_cluster_contract(testkit::server::ServerConfig::opensearch("1.3.20"), None);
}

/// The contract over a live cluster holding `c-1` (230 documents) and `c-2` (57), of
/// mapping type `doc_type` when the cluster has types. Then, for a scroll: a resume after
/// the index changed fails its item by name rather than lose or double documents.
fn live_cluster_contract(config: testkit::server::ServerConfig, doc_type: Option<&str>) {
    use testkit::server::TestServer;
    let server = TestServer::start(config);
    let mut body = String::new();
    for (index, n) in [("c-1", 230), ("c-2", 57)] {
        for i in 0..n {
            let t = doc_type.map_or(String::new(), |t| format!(",\"_type\":\"{t}\""));
            body.push_str(&format!(
                "{{\"index\":{{\"_index\":\"{index}\",\"_id\":\"{i}\"{t}}}}}\n{{\"n\":{i}}}\n"
            ));
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = cluster::Client::new(cluster::ClientConfig::new(server.url())).unwrap();
    let source = rt.block_on(async {
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
        connectors::cluster::ClusterSource::open(
            client.clone(),
            server.url(),
            "c-*",
            connectors::cluster::ClusterSourceOptions {
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
            Read::Doc(d) => {
                assert_eq!(d.doc_type.as_deref(), doc_type, "{d:?}");
                (d.index.to_string(), d.id.clone())
            }
            Read::Skip(s) => panic!("{s:?}"),
        })
        .collect();
    assert_eq!(ids.len(), 230 + 57);
    if doc_type.is_some() {
        // A document the first part of a slice held is deleted: resuming that slice after
        // it finds other documents in its place and says so.
        let item = &source.plan().unwrap().items[0];
        let whole = read_all(&source, item, &item.after);
        let Read::Doc(gone) = &whole[2] else {
            unreachable!()
        };
        let r = rt.block_on(client.request(
            cluster::Method::DELETE,
            &format!("/{}/doc/{}", gone.index, gone.id),
            None,
        ));
        assert!(r.unwrap().is_success());
        let err = source
            .read(item, &Some(whole[5].position().clone()), &mut |_| true)
            .unwrap_err();
        assert!(err.message.contains("cannot be resumed by scroll"), "{err}");
        assert!(err.message.contains("/c-1 slice 0"), "{err}");
    }
    // Every read, whole, resumed, stopped or failed, closed its scroll or point in time.
    assert_eq!(server.open_search_contexts(), 0);
    drop(rt);
}

#[test]
fn delta_snapshot_keeps_the_contract() {
    use snapshot::append::append_snapshot;
    use snapshot::write::{write_repository, IndexSpec, SnapshotSpec, WriteOptions};
    let histories = testkit::fixtures::delta_histories();
    let (_, history) = histories.iter().find(|(n, _)| n == "l10-soft").unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dest = tmp.path().join("repo");
    let index = |commit: &str| {
        let mut ix = IndexSpec::from_lucene_dir("idx", &history.join(commit)).unwrap();
        ix.settings.insert(
            "index.soft_deletes.enabled".into(),
            serde_json::Value::String("true".into()),
        );
        ix
    };
    let mut a = SnapshotSpec::new("a");
    a.indices = vec![index("A")];
    write_repository(&dest, &[a], &WriteOptions::default()).unwrap();
    let mut b = SnapshotSpec::new("b");
    b.indices = vec![index("B")];
    append_snapshot(&dest, &b, &WriteOptions::default()).unwrap();
    let repo =
        snapshot::Repository::open(Arc::new(snapshot::LocalStore::open(&dest).unwrap())).unwrap();
    let source = SnapshotSource::new(
        repo.snapshot("b").unwrap(),
        vec!["idx".into()],
        SnapshotOptions::default(),
    )
    .since(repo.snapshot("a").unwrap(), vec!["idx".into()]);
    let reads = contract("delta", &BoxedSource::new(Arc::new(source)));
    assert!(reads
        .iter()
        .any(|r| matches!(r, Read::Doc(d) if d.op == engine::Op::Delete)));
    assert!(reads
        .iter()
        .any(|r| matches!(r, Read::Doc(d) if d.op == engine::Op::Index)));
}

#[test]
fn a_jsonl_file_gone_after_the_plan_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("gone.jsonl"), lines().0).unwrap();
    let store =
        snapshot::open_blob_store(&dir.path().display().to_string(), &Default::default()).unwrap();
    let source = BoxedSource::new(Arc::new(JsonlSource::open(store, small_items()).unwrap()));
    let plan = source.plan().unwrap();
    std::fs::remove_file(dir.path().join("gone.jsonl")).unwrap();
    let e = source
        .read(&plan.items[0], &None, &mut |_| true)
        .unwrap_err();
    assert!(e.message.contains("gone.jsonl"), "{e}");
}

#[test]
fn a_snapshot_blob_gone_after_the_plan_is_an_error_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = tmp.path().join("repo");
    copy_dir(
        &testkit::fixtures::workspace_root()
            .join("demo")
            .join("repository"),
        &repo,
    );
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
        SnapshotOptions::default(),
    )));
    let plan = source.plan().unwrap();
    // Every data blob of every shard goes.
    let mut gone = Vec::new();
    for shard in walk(&repo.join("indices")) {
        let name = shard.file_name().unwrap().to_string_lossy().to_string();
        if name.starts_with("__") {
            std::fs::remove_file(&shard).unwrap();
            gone.push(name);
        }
    }
    assert!(!gone.is_empty());
    for item in &plan.items {
        let e = source.read(item, &None, &mut |_| true).unwrap_err();
        // Where in the message, the missing blob in the chain under it.
        let chain = redact::chain(&e);
        assert!(gone.iter().any(|g| chain.contains(g)), "{chain}");
        assert!(std::error::Error::source(&e).is_some(), "{e}: no cause");
    }
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &to.join(e.file_name()));
        } else {
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn a_refusing_cluster_is_an_error_naming_it_without_secrets() {
    let addr = refusing_server();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let url = format!("http://u:pw-SECRET@{addr}/c-*");
    let e = rt
        .block_on(connectors::open_source(
            &url,
            &Default::default(),
            &Default::default(),
        ))
        .err()
        .unwrap();
    assert!(std::error::Error::source(&e).is_some(), "{e}: no cause");
    let e = e.to_string();
    assert!(e.contains(&addr) && !e.contains("pw-SECRET"), "{e}");
}

/// A loopback HTTP server answering every request `401 Unauthorized`; its `host:port`.
fn refusing_server() -> String {
    use std::io::{Read as _, Write};
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

/// A PostgreSQL server, a runtime for the table source, and a client of our own.
struct Pg {
    server: testkit::services::Postgres,
    rt: tokio::runtime::Runtime,
    client: tokio_postgres::Client,
}

impl Pg {
    fn start(test: &str) -> Option<Pg> {
        let server = testkit::services::Postgres::start(test)?;
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let client = rt.block_on(async {
            let (client, conn) = tokio_postgres::connect(&server.url(), tokio_postgres::NoTls)
                .await
                .unwrap();
            tokio::spawn(conn);
            client
        });
        Some(Pg { server, rt, client })
    }

    fn exec(&self, sql: &str) {
        self.rt
            .block_on(self.client.batch_execute(sql))
            .unwrap_or_else(|e| panic!("{sql}: {e:?}"));
    }

    fn params() -> connectors::Params {
        connectors::Params::new()
            .with("page-rows", "7")
            .with("source-attempts", "1")
    }

    fn open(&self, query: &str) -> Result<BoxedSource, connectors::ConnectError> {
        let url = format!("{}?{query}", self.server.url());
        self.rt
            .block_on(connectors::open_source(
                &url,
                &Pg::params(),
                &Default::default(),
            ))
            .map(|o| o.source)
    }

    /// What the table holds, read here: key text (None: NULL) → (n, t, f).
    fn rows(&self, table: &str) -> Vec<(Option<String>, i32, String, f64)> {
        self.rt
            .block_on(
                self.client
                    .query(&format!("SELECT k::text, n, t, f FROM {table}"), &[]),
            )
            .unwrap()
            .iter()
            .map(|r| (r.get(0), r.get(1), r.get(2), r.get(3)))
            .collect()
    }
}

/// Table keys in their type's order: numbers by value; the NULL-key skips after all.
fn numeric_keys(a: &Position, b: &Position) -> Ordering {
    let num = |p: &Position| p.key().and_then(|k| k.parse::<i64>().ok());
    match (num(a), num(b)) {
        (Some(x), Some(y)) => x.cmp(&y),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => a.cmp(b),
    }
}

/// The contract over one table, and every row compared with what our own client reads.
fn table_contract(pg: &Pg, table: &str, numeric: bool, order: Order) {
    let source = pg
        .open(&format!("table={table}&key=k&slots=5"))
        .unwrap_or_else(|e| panic!("{e}"));
    let plan = source.plan().unwrap();
    assert!(plan.items.len() > 1, "{table}: one slot");
    let reads = contract_in(table, &source, order);
    let mut docs = BTreeMap::new();
    let mut skips = BTreeMap::<Option<String>, usize>::new();
    for r in &reads {
        match r {
            Read::Doc(d) => {
                assert_eq!(&*d.index, format!("public.{table}"));
                let v: serde_json::Value = serde_json::from_slice(&d.source).unwrap();
                assert!(docs.insert(d.id.clone(), v).is_none());
            }
            Read::Skip(s) => {
                assert_eq!(s.reason, "bad_row", "{s:?}");
                assert!(!s.detail.is_empty());
                *skips.entry(s.id.clone()).or_default() += 1;
            }
        }
    }
    let rows = pg.rows(table);
    let mut want_skips = BTreeMap::<Option<String>, usize>::new();
    let mut want_docs = 0;
    for (k, n, t, f) in rows {
        if k.is_none() || f.is_nan() {
            *want_skips.entry(k).or_default() += 1;
            continue;
        }
        want_docs += 1;
        let k = k.unwrap();
        let v = docs
            .get(&k)
            .unwrap_or_else(|| panic!("{table}: row {k} not read"));
        let key = if numeric {
            v["k"].to_string()
        } else {
            v["k"].as_str().unwrap().to_string()
        };
        assert_eq!(key, k);
        assert_eq!(v["n"], n, "{table} {k}");
        assert_eq!(v["t"], t, "{table} {k}");
        assert_eq!(v["f"].as_f64(), Some(f), "{table} {k}");
        assert_eq!(v.as_object().unwrap().len(), 4, "{table} {k}: {v}");
    }
    assert_eq!(docs.len(), want_docs, "{table}");
    assert_eq!(skips, want_skips, "{table}");
}

#[test]
fn table_keeps_the_contract() {
    let Some(pg) = Pg::start("table_keeps_the_contract") else {
        return;
    };
    // Rows that cannot be rendered (NaN) are bad_row skips; NULL keys come last as skips.
    let cols = "n int4, t text, f float8";
    let f = "CASE WHEN i % 37 = 5 THEN 'NaN'::float8 ELSE i * 0.5 END";
    pg.exec(&format!(
        "CREATE TABLE ints (k bigint PRIMARY KEY, {cols});
         INSERT INTO ints SELECT i * 3 - 200, i, 'row ' || i || ' é', {f} FROM generate_series(0, 249) i;
         CREATE TABLE texts (k text COLLATE \"C\" UNIQUE, {cols});
         INSERT INTO texts SELECT 'key-' || i || '-ü', i, repeat('x', i % 50), {f} FROM generate_series(0, 199) i;
         INSERT INTO texts SELECT NULL, 1000 + i, 'no key', 1.0 FROM generate_series(1, 3) i;
         CREATE TABLE uuids (k uuid PRIMARY KEY, {cols});
         INSERT INTO uuids SELECT md5(i::text)::uuid, i, '', {f} FROM generate_series(0, 179) i;"
    ));
    table_contract(&pg, "ints", true, numeric_keys);
    table_contract(&pg, "texts", false, Position::cmp);
    table_contract(&pg, "uuids", false, Position::cmp);
}

#[test]
fn table_errors_name_what_failed_without_secrets() {
    let Some(pg) = Pg::start("table_errors_name_what_failed_without_secrets") else {
        return;
    };
    pg.exec("CREATE TABLE gone (k int PRIMARY KEY, n int4); INSERT INTO gone SELECT i, i FROM generate_series(1, 50) i;");
    let caused = |e: &connectors::ConnectError| {
        assert!(std::error::Error::source(e).is_some(), "{e}: no cause");
        redact::chain(e)
    };
    let e = caused(&pg.open("table=nosuch&key=k").err().unwrap());
    assert!(e.contains("nosuch"), "{e}");
    let e = caused(&pg.open("table=gone&key=nokey").err().unwrap());
    assert!(e.contains("nokey"), "{e}");
    let e = pg.open("table=gone").err().unwrap().to_string();
    assert!(e.contains("key="), "{e}");
    // Nothing listens there.
    let port = testkit::services::free_port();
    let url = format!("postgres://postgres:pw-SECRET@127.0.0.1:{port}/postgres?table=gone&key=k");
    let e = caused(
        &pg.rt
            .block_on(connectors::open_source(
                &url,
                &Pg::params(),
                &Default::default(),
            ))
            .err()
            .unwrap(),
    );
    assert!(
        e.contains(&format!("127.0.0.1:{port}")) && !e.contains("pw-SECRET"),
        "{e}"
    );
    // The table dropped after the plan: the read fails naming it.
    let source = pg.open("table=gone&key=k").unwrap();
    let plan = source.plan().unwrap();
    pg.exec("DROP TABLE gone");
    let e = source
        .read(&plan.items[0], &plan.items[0].after, &mut |_| true)
        .unwrap_err();
    assert!(e.message.contains("gone"), "{e}");
    assert!(std::error::Error::source(&e).is_some(), "{e}: no cause");
}

#[test]
fn failure_log_keeps_the_contract() {
    use connectors::failure_log::{FailureLogSource, NO_SOURCE, SKIPPED_BY_SOURCE};
    use engine::failure_log::source_value;
    use engine::{FailureLog, FailureRecord, Stage};
    let record = |stage: Stage, id: String, source: Option<String>, delete: bool| FailureRecord {
        time: String::new(),
        stage,
        index: format!("ix{}", id.len() % 2),
        id,
        doc_type: None,
        routing: None,
        group: None,
        part: None,
        position: None,
        error_type: "mapper_parsing_exception".into(),
        reason: "bad".into(),
        status: 400,
        attempts: 1,
        delete,
        source: source.map(|s| source_value(s.as_bytes())),
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("failures.jsonl");
    let log = FailureLog::open(&path).unwrap().with_sources(true);
    // What each record must read as: a document (id, delete, source) or a skip reason.
    let mut want: Vec<Result<(String, bool, String), &str>> = Vec::new();
    let mut records = Vec::new();
    for i in 0..120u32 {
        let id = format!("d{i}");
        let src = format!("{{\"n\":{i}}}");
        match i % 9 {
            0 => {
                records.push(record(Stage::Target, id, None, false));
                want.push(Err(NO_SOURCE));
            }
            1 => {
                records.push(record(Stage::Source, id, None, false));
                want.push(Err(SKIPPED_BY_SOURCE));
            }
            2 => {
                records.push(record(Stage::Transform, id, Some(src), false));
                want.push(Err(SKIPPED_BY_SOURCE));
            }
            3 => {
                records.push(record(Stage::Target, id.clone(), None, true));
                want.push(Ok((id, true, String::new())));
            }
            4 if i > 10 => {
                // A re-sent batch refused again: read once.
                records.push(record(
                    Stage::Target,
                    "d4".into(),
                    Some("{\"n\":4}".into()),
                    false,
                ));
            }
            _ => {
                records.push(record(Stage::Target, id.clone(), Some(src.clone()), false));
                want.push(Ok((id, false, src)));
            }
        }
    }
    log.append(&records).unwrap();
    let source = FailureLogSource::open(&path).unwrap();
    assert!(source.duplicates() > 0);
    let reads = contract("failure log", &BoxedSource::new(Arc::new(source)));
    assert_eq!(reads.len(), want.len());
    for (r, w) in reads.iter().zip(&want) {
        match (r, w) {
            (Read::Doc(d), Ok((id, delete, src))) => {
                assert_eq!(&d.id, id);
                assert_eq!(d.op == engine::Op::Delete, *delete, "{id}");
                assert_eq!(&d.source[..], src.as_bytes(), "{id}");
                assert_eq!(&*d.index, format!("ix{}", id.len() % 2));
            }
            (Read::Skip(s), Err(reason)) => {
                assert_eq!(s.reason, *reason, "{s:?}");
                assert!(!s.detail.is_empty());
            }
            (r, w) => panic!("read {r:?}, wanted {w:?}"),
        }
    }
    // A log with a line that is not a record: an error naming the file and the line,
    // with the cause kept.
    let bad = dir.path().join("bad.jsonl");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str("{not a record\n");
    std::fs::write(&bad, text).unwrap();
    let e = FailureLogSource::open(&bad).err().unwrap();
    let shown = redact::chain(&e);
    assert!(
        shown.contains("bad.jsonl") && shown.contains("line 121"),
        "{shown}"
    );
    assert!(std::error::Error::source(&e).is_some(), "{shown}");
}
