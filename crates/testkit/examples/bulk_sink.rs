//! How fast the test server accepts `_bulk` in `discard_documents` mode (the loopback sink for
//! sender benchmarks). Prints one figure per line: MB/s of document source and docs/s, with the
//! client in the same process (so the figure is a lower bound for the sink alone).
//!
//! `cargo run --release -p testkit --example bulk_sink [-- DOCS_PER_REQUEST CONCURRENCY SECONDS]
//! [--filter-path]` (`--filter-path` asks for the trimmed item results the cluster client asks for)

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

/// CPU seconds (user + system) used so far by this process's threads whose name starts with
/// `prefix` (all threads when empty), from `/proc/self/task/*/stat`.
fn cpu_seconds(prefix: &str) -> f64 {
    let ticks = 100.0; // USER_HZ on Linux
    let mut total = 0u64;
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    for t in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        if !stat[open + 1..close].starts_with(prefix) {
            continue;
        }
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        // after the command: state is field 3, utime 14 and stime 15 (1-based over the whole line)
        let utime: u64 = fields.get(11).and_then(|f| f.parse().ok()).unwrap_or(0);
        let stime: u64 = fields.get(12).and_then(|f| f.parse().ok()).unwrap_or(0);
        total += utime + stime;
    }
    total as f64 / ticks
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
    let filtered = std::env::args().any(|a| a == "--filter-path");
    let url = if filtered {
        format!(
            "{}/_bulk?filter_path=errors,items.*.status,items.*._id,items.*.error",
            server.url()
        )
    } else {
        format!("{}/_bulk", server.url())
    };
    let started = Instant::now();
    let (cpu0, server_cpu0) = (cpu_seconds(""), cpu_seconds("testkit-server"));
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
    let cpu = cpu_seconds("") - cpu0;
    let server_cpu = cpu_seconds("testkit-server") - server_cpu0;
    let requests = sent.load(Ordering::Relaxed);
    let accepted = server.doc_count("sink");
    assert_eq!(accepted, requests * docs as u64, "every item accepted");
    let mb = (requests as f64 * source_per_request as f64) / 1e6;
    println!("sink_source_mb_per_s {:.1}", mb / secs);
    println!("sink_docs_per_s {:.0}", accepted as f64 / secs);
    println!(
        "sink_server_source_mb_per_cpu_s {:.1}",
        mb / server_cpu.max(1e-9)
    );
    println!("process_source_mb_per_cpu_s {:.1}", mb / cpu.max(1e-9));
    println!("server_cpu_s {server_cpu:.2} process_cpu_s {cpu:.2} wall_s {secs:.2}");
    println!("sink_requests_per_s {:.1}", requests as f64 / secs);
    println!("sink_docs_per_request {docs}");
    println!("sink_concurrency {concurrency}");
    println!("sink_filter_path {filtered}");
}
