//! How fast the test server accepts `_bulk` in `discard_documents` mode (the loopback sink for
//! sender benchmarks). Prints one figure per line: MB/s of document source and docs/s, with the
//! client in the same process (so the figure is a lower bound for the sink alone).
//!
//! `cargo run --release -p testkit --example bulk_sink [-- DOCS_PER_REQUEST CONCURRENCY SECONDS]`

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use testkit::server::{ServerConfig, TestServer};

fn body(docs: usize, doc_bytes: usize) -> (String, usize) {
    let filler = "x".repeat(doc_bytes.saturating_sub(40));
    let mut s = String::new();
    let mut source = 0;
    for i in 0..docs {
        s.push_str(&format!(
            "{{\"index\":{{\"_index\":\"sink\",\"_id\":\"doc-{i}\"}}}}\n"
        ));
        let line = format!("{{\"n\":{i},\"title\":\"document {i}\",\"body\":\"{filler}\"}}");
        source += line.len();
        s.push_str(&line);
        s.push('\n');
    }
    (s, source)
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let docs = args.first().copied().unwrap_or(1000);
    let concurrency = args.get(1).copied().unwrap_or(4);
    let seconds = args.get(2).copied().unwrap_or(5) as u64;
    let server = TestServer::start(ServerConfig {
        discard_documents: true,
        threads: 1,
        ..ServerConfig::default()
    });
    let (payload, source_per_request) = body(docs, 1024);
    let payload = bytes::Bytes::from(payload);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let sent = Arc::new(AtomicU64::new(0));
    let url = format!("{}/_bulk", server.url());
    let started = Instant::now();
    rt.block_on(async {
        let client = reqwest::Client::new();
        let deadline = started + Duration::from_secs(seconds);
        let mut tasks = Vec::new();
        for _ in 0..concurrency {
            let (client, url, payload, sent) = (
                client.clone(),
                url.clone(),
                payload.clone(),
                Arc::clone(&sent),
            );
            tasks.push(tokio::spawn(async move {
                while Instant::now() < deadline {
                    let r = client
                        .post(&url)
                        .header("content-type", "application/x-ndjson")
                        .body(payload.clone())
                        .send()
                        .await
                        .expect("bulk request");
                    assert!(r.status().is_success());
                    let _ = r.bytes().await.expect("bulk response");
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            }));
        }
        for t in tasks {
            t.await.expect("sender task");
        }
    });
    let secs = started.elapsed().as_secs_f64();
    let requests = sent.load(Ordering::Relaxed);
    let accepted = server.doc_count("sink");
    assert_eq!(accepted, requests * docs as u64, "every item accepted");
    let mb = (requests as f64 * source_per_request as f64) / 1e6;
    println!("sink_source_mb_per_s {:.1}", mb / secs);
    println!("sink_docs_per_s {:.0}", accepted as f64 / secs);
    println!("sink_requests_per_s {:.1}", requests as f64 / secs);
    println!("sink_docs_per_request {docs}");
    println!("sink_concurrency {concurrency}");
}
