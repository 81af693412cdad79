//! Automatic request compression: with `RequestCompression::Auto` the client reads `http.compression`
//! from the target's cluster settings and gzips bulk bodies only when it is on. Checked on the
//! project's test server (which counts the gzip bodies it receives) for several dialects, and on
//! `osmem-server`.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use cluster::{BulkDoc, BulkOptions, BulkSender, Client, ClientConfig, RequestCompression};
use serde_json::{json, Value};
use testkit::server::{ServerConfig, TestServer};

/// `n` documents of a few hundred bytes each (compressible, as real sources are).
fn make_docs(index: &str, n: usize) -> (Vec<BulkDoc>, BTreeMap<String, Value>) {
    (0..n)
        .map(|i| {
            let v = json!({
                "i": i,
                "title": format!("document number {i}"),
                "body": "lorem ipsum dolor sit amet ".repeat(1 + i % 12),
                "tags": ["alpha", "beta", if i % 2 == 0 { "even" } else { "odd" }],
            });
            let id = format!("d{i}");
            let d = BulkDoc::new(
                index,
                id.clone(),
                Bytes::from(serde_json::to_vec(&v).unwrap()),
            );
            (d, (id, v))
        })
        .unzip()
}

async fn connect(url: String, compression: RequestCompression) -> Client {
    let mut c = ClientConfig::new(url);
    c.compression = compression;
    c.request_timeout = Duration::from_secs(20);
    Client::connect(c).await.unwrap()
}

/// Sends `docs` in bulks of 100 and checks every one was acknowledged.
async fn send(client: &Client, docs: Vec<BulkDoc>) {
    let opts = BulkOptions {
        max_in_flight: 2,
        ..BulkOptions::default()
    };
    let sender = BulkSender::new(client.clone(), opts).unwrap();
    for chunk in docs.chunks(100) {
        let n = chunk.len() as u64;
        let outcome = sender.send(chunk.to_vec()).await.unwrap();
        assert_eq!(
            (outcome.docs, outcome.indexed, outcome.refused.len()),
            (n, n, 0),
            "{outcome:?}"
        );
    }
}

fn assert_same_documents(got: &BTreeMap<String, Value>, want: &BTreeMap<String, Value>) {
    assert_eq!(got.len(), want.len());
    for (id, v) in want {
        assert_eq!(got.get(id), Some(v), "document {id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_mode_gzips_bulk_bodies_when_the_target_enables_compression() {
    for config in [
        ServerConfig::elasticsearch("7.10.2"),
        ServerConfig::elasticsearch("8.15.0"),
        ServerConfig::opensearch("1.3.20"),
        ServerConfig::opensearch("2.11.0"),
    ] {
        let label = format!("{} {}", config.distribution, config.version);
        let server = TestServer::start(ServerConfig {
            http_compression: true,
            ..config
        });
        let client = connect(server.url(), RequestCompression::Auto).await;
        assert!(client.gzip(), "{label}: compression not detected");
        let (docs, want) = make_docs("zipped", 650);
        send(&client, docs).await;

        let stats = server.stats();
        assert_eq!(stats.bulk_requests, 7, "{label}: {stats:?}");
        assert_eq!(
            stats.gzip_bulk_requests, stats.bulk_requests,
            "{label}: every bulk body arrives compressed: {stats:?}"
        );
        // compressed on the wire: far fewer bytes sent than decoded
        assert!(
            stats.gzip_decoded_bytes > 3 * stats.body_bytes,
            "{label}: {stats:?}"
        );
        assert!(
            stats.gzip_decoded_bytes > stats.source_bytes,
            "{label}: {stats:?}"
        );
        assert_same_documents(&server.documents("zipped"), &want);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_mode_sends_plain_bodies_when_compression_is_off() {
    let server = TestServer::start(ServerConfig {
        http_compression: false,
        ..ServerConfig::opensearch("2.11.0")
    });
    let client = connect(server.url(), RequestCompression::Auto).await;
    assert!(!client.gzip());
    let (docs, want) = make_docs("plain", 650);
    send(&client, docs).await;
    let stats = server.stats();
    assert_eq!(stats.bulk_requests, 7, "{stats:?}");
    assert_eq!(
        (stats.gzip_requests, stats.gzip_decoded_bytes),
        (0, 0),
        "{stats:?}"
    );
    assert!(stats.body_bytes > stats.source_bytes, "{stats:?}");
    assert_same_documents(&server.documents("plain"), &want);

    // the explicit settings win over what the target reports
    let on = connect(server.url(), RequestCompression::On).await;
    assert!(on.gzip());
    let (docs, want) = make_docs("forced", 150);
    send(&on, docs).await;
    let after = server.stats();
    assert_eq!(after.gzip_bulk_requests, 2, "{after:?}");
    assert_same_documents(&server.documents("forced"), &want);
    let zipping = TestServer::start(ServerConfig {
        http_compression: true,
        ..ServerConfig::opensearch("2.11.0")
    });
    let off = connect(zipping.url(), RequestCompression::Off).await;
    assert!(!off.gzip());
    send(&off, make_docs("off", 10).0).await;
    assert_eq!(zipping.stats().gzip_requests, 0);
}

/// `osmem-server` serves `_cluster/settings` (with defaults and `filter_path`) but reports no
/// `http.compression`, so the client in automatic mode stays plain; it accepts gzip bodies when
/// told to send them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn osmem_reports_no_compression_and_accepts_gzip() {
    let Some(osmem) =
        testkit::services::Osmem::start("osmem_reports_no_compression_and_accepts_gzip")
    else {
        return;
    };
    let auto = connect(osmem.url(), RequestCompression::Auto).await;
    assert!(!auto.gzip());
    let (docs_plain, mut want) = make_docs("osm", 120);
    send(&auto, docs_plain).await;

    let on = connect(osmem.url(), RequestCompression::On).await;
    let (zipped, want_zipped) = make_docs("osm-gz", 250);
    send(&on, zipped).await;
    want.extend(want_zipped.into_iter().map(|(k, v)| (format!("gz/{k}"), v)));

    let r = auto
        .request(cluster::Method::POST, "/_refresh", None)
        .await
        .unwrap();
    assert!(r.is_success(), "refresh: {}", r.status);
    for (index, prefix) in [("osm", ""), ("osm-gz", "gz/")] {
        let r = auto
            .request(
                cluster::Method::POST,
                &format!("/{index}/_search?size=1000"),
                Some(&json!({"query": {"match_all": {}}})),
            )
            .await
            .unwrap();
        let v: Value = r.json().unwrap();
        let hits = v["hits"]["hits"].as_array().unwrap();
        let got: BTreeMap<String, Value> = hits
            .iter()
            .map(|h| (h["_id"].as_str().unwrap().to_string(), h["_source"].clone()))
            .collect();
        let expected: BTreeMap<String, Value> = want
            .iter()
            .filter(|(k, _)| {
                if prefix.is_empty() {
                    !k.starts_with("gz/")
                } else {
                    k.starts_with(prefix)
                }
            })
            .map(|(k, v)| (k.trim_start_matches(prefix).to_string(), v.clone()))
            .collect();
        assert_same_documents(&got, &expected);
    }
}
