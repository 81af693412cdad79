//! Throughput of the DynamoDB sink against a tight loop of raw 25-item `BatchWriteItem`
//! calls with the same concurrency, to the same server (`dynalite`, started here), in one run.
//!
//!   cargo run --release -p migrate --example dynamo_bench [ROWS] [CONCURRENCY]
//!
//! - raw: the request bodies are built before the clock starts; C tasks send them as fast
//!   as the server answers (signed with the same SigV4 signer, over the same HTTP client
//!   library). This is what the wire and the server allow.
//! - sink: rows as the table source gives them (one JSON object of ~300 B each, with column
//!   hints) → a reader thread frames them with the sink's writer → batches of 250, four in
//!   flight as the pipeline keeps them → `DynamoSink::send` with at most C requests in
//!   flight. Conversion, framing, key checks and retries all count.
//!
//! MB/s are MB of row JSON (what the source read). Each measurement starts a fresh server,
//! warms it up, and writes a fresh table; `ROUNDS` (default 2) pairs are run and the best
//! of each kind compared. "client CPU" is what this process spent (framing, HTTP, signing).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use connectors::dynamodb::{BatchLimits, DynamoSink, DynamoSinkOptions, DynamoUrl};
use coordination::Position;
use dynamo::{ColumnHint, ColumnHints, KeyAttribute, KeySchema, KeyType, WriteRequest};
use engine::{Document, Op, Sink, SinkWriter};
use futures::StreamExt;
use sigv4::{AwsCredentials, Signer};

fn credentials() -> AwsCredentials {
    AwsCredentials {
        access_key_id: "AKIDBENCH".into(),
        secret_access_key: "bench-secret".into(),
        session_token: None,
    }
}

fn hints() -> ColumnHints {
    [
        ("id", ColumnHint::String),
        ("room_id", ColumnHint::String),
        ("seq", ColumnHint::Number),
        ("amount", ColumnHint::Number),
        ("payload", ColumnHint::Binary),
        ("at", ColumnHint::Time),
        ("data", ColumnHint::Json),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect()
}

/// Row `i` as the table source renders it: about 300 bytes of JSON.
fn row(i: u64) -> String {
    format!(
        r#"{{"id":"01J9ZK{i:020}","room_id":"0b6f3c1e-8a5e-4f0e-9d43-{r:012x}","seq":{i},"amount":{a}.{c:02},"ok":{ok},"payload":"AAECAwQFBgcICQoLDA0ODxAREhM=","at":"2024-10-20T13:45:07.{ms:03}Z","data":{{"kind":"message","text":"hello from row {i}","tags":["a","b"],"n":{n}}}}}"#,
        r = i % 1000,
        a = i * 7,
        c = i % 100,
        ok = i.is_multiple_of(2),
        ms = i % 1000,
        n = i % 13,
    )
}

fn key() -> KeySchema {
    KeySchema {
        partition: KeyAttribute {
            name: "id".into(),
            key_type: KeyType::S,
        },
        sort: None,
    }
}

async fn create(client: &dynamo::Client, table: &str) {
    client
        .create_table(table, &key())
        .await
        .expect("create table");
    client
        .wait_active(table, Duration::from_secs(60))
        .await
        .expect("table active");
}

/// Raw 25-item calls with `concurrency` in flight; returns the elapsed time.
async fn raw(endpoint: &str, table: &str, rows: &[String], concurrency: usize) -> Duration {
    let hints = hints();
    let mut bodies = Vec::new();
    for chunk in rows.chunks(25) {
        let mut body = format!(r#"{{"RequestItems":{{"{table}":["#).into_bytes();
        for (n, r) in chunk.iter().enumerate() {
            let item = dynamo::row_to_item(r.as_bytes(), &hints).expect("row");
            if n > 0 {
                body.push(b',');
            }
            body.extend_from_slice(WriteRequest::put(&item, &key()).expect("key").body());
        }
        body.extend_from_slice(b"]}}");
        bodies.push(Bytes::from(body));
    }
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency * 2)
        .build()
        .expect("HTTP client");
    let url = reqwest::Url::parse(endpoint).expect("endpoint");
    let host = format!(
        "{}:{}",
        url.host_str().unwrap_or(""),
        url.port().unwrap_or(80)
    );
    let signer = Signer {
        credentials: credentials(),
        region: "us-east-1".into(),
        service: "dynamodb",
    };
    let next = AtomicUsize::new(0);
    let start = Instant::now();
    futures::future::join_all((0..concurrency).map(|_| async {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(body) = bodies.get(i) else { break };
            let mut req = http
                .post(url.clone())
                .header("content-type", "application/x-amz-json-1.0")
                .header("x-amz-target", "DynamoDB_20120810.BatchWriteItem");
            for (k, v) in signer.headers(SystemTime::now(), "POST", &host, ("/", ""), body) {
                req = req.header(k, v);
            }
            let resp = req.body(body.clone()).send().await.expect("send");
            let status = resp.status();
            let answer = resp.bytes().await.expect("answer");
            assert!(
                status.is_success() && answer.starts_with(br#"{"UnprocessedItems":{}"#),
                "raw call: {status} {}",
                String::from_utf8_lossy(&answer)
            );
        }
    }))
    .await;
    start.elapsed()
}

/// The sink as the pipeline drives it; returns the elapsed time.
async fn sink(endpoint: &str, table: &str, rows: &[String], concurrency: usize) -> Duration {
    let url = DynamoUrl::parse(&format!(
        "dynamodb://{table}?region=us-east-1&endpoint={endpoint}"
    ))
    .expect("url");
    let sink = Arc::new(
        DynamoSink::connect(
            &url,
            DynamoSinkOptions {
                create_table: true,
                key_column: Some("id".into()),
                hints: hints(),
                credentials: Some(credentials()),
                max_in_flight: concurrency,
                batch: BatchLimits::dynamo(),
                ..DynamoSinkOptions::default()
            },
        )
        .await
        .expect("sink"),
    );
    let docs: Vec<Document> = rows
        .iter()
        .enumerate()
        .map(|(i, r)| Document {
            position: Position::Doc(i as u64),
            op: Op::Index,
            index: "room_events".into(),
            id: format!("01J9ZK{i:020}"),
            doc_type: None,
            routing: None,
            source: Bytes::from(r.clone()),
        })
        .collect();
    let start = Instant::now();
    let (tx, rx) = tokio::sync::mpsc::channel(2);
    let mut writer = sink.writer();
    let reader = std::thread::spawn(move || {
        for d in docs {
            match writer.push(d) {
                Ok(Some(b)) => {
                    if tx.blocking_send(b).is_err() {
                        return;
                    }
                }
                Ok(None) => {}
                Err(r) => panic!("refused: {r:?}"),
            }
        }
        if let Some(b) = writer.finish() {
            let _ = tx.blocking_send(b);
        }
    });
    let delivered: u64 = tokio_stream(rx)
        .map(|b| {
            let sink = Arc::clone(&sink);
            async move { sink.send(b).await.expect("send").delivered }
        })
        .buffer_unordered(4)
        .fold(0, |a, n| async move { a + n })
        .await;
    let took = start.elapsed();
    reader.join().expect("reader");
    assert_eq!(delivered, rows.len() as u64);
    let stats = sink.client().stats();
    if stats.retries > 0 {
        println!(
            "  (sink retries: {}, throttled: {})",
            stats.retries, stats.throttled
        );
    }
    took
}

fn tokio_stream<T: Send + 'static>(
    mut rx: tokio::sync::mpsc::Receiver<T>,
) -> impl futures::Stream<Item = T> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

/// CPU seconds (user + system) this process has used.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // fields after the command name in parentheses: utime is the 12th, stime the 13th
    let rest = stat.rsplit(')').next().unwrap_or("");
    let f: Vec<f64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0.0))
        .collect();
    let ticks = f.get(11).unwrap_or(&0.0) + f.get(12).unwrap_or(&0.0);
    ticks / 100.0
}

#[derive(Clone, Copy)]
enum Kind {
    Raw,
    Sink,
}

/// One measurement on a fresh server (so no run pays for another's data): warm-up, then
/// the rows; returns (wall, CPU seconds of this process).
async fn measure(kind: Kind, rows: &[String], concurrency: usize) -> (Duration, f64) {
    let Some(server) = testkit::services::Dynalite::start("dynamo_bench") else {
        eprintln!("dynalite not found: run scripts/install-test-deps");
        std::process::exit(1);
    };
    let endpoint = server.endpoint();
    let client = dynamo::Client::new(dynamo::ClientConfig {
        endpoint: Some(endpoint.clone()),
        ..dynamo::ClientConfig::new("us-east-1", credentials())
    })
    .expect("client");
    // warm the server up (JIT, allocations) on a table of its own
    create(&client, "warmup").await;
    raw(
        &endpoint,
        "warmup",
        &rows[..rows.len().min(5000)],
        concurrency,
    )
    .await;
    let cpu = cpu_seconds();
    let took = match kind {
        Kind::Raw => {
            create(&client, "measured").await;
            raw(&endpoint, "measured", rows, concurrency).await
        }
        Kind::Sink => sink(&endpoint, "measured", rows, concurrency).await,
    };
    let cpu = cpu_seconds() - cpu;
    let n = client.count_items("measured", 4).await.expect("count");
    assert_eq!(n, rows.len() as u64, "every row written");
    (took, cpu)
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let rows_n: u64 = args.next().map_or(60_000, |a| a.parse().expect("ROWS"));
    let concurrency: usize = args.next().map_or(8, |a| a.parse().expect("CONCURRENCY"));
    let rounds: usize = std::env::var("ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(2);
    let rows: Vec<String> = (0..rows_n).map(row).collect();
    let mb = rows.iter().map(|r| r.len()).sum::<usize>() as f64 / 1e6;
    println!(
        "dynalite: {rows_n} rows, {:.0} B per row, {mb:.1} MB of row JSON, {concurrency} requests in flight, \
         {rounds} rounds of raw then sink (a fresh server each)",
        mb * 1e6 / rows_n as f64
    );
    let line = |name: &str, (t, cpu): (Duration, f64)| {
        let s = t.as_secs_f64();
        println!(
            "{name:<9} {:>9.0} items/s  {:>6.2} MB/s  ({s:.2} s, client CPU {cpu:.2} s)",
            rows_n as f64 / s,
            mb / s
        );
    };
    let slowest = (Duration::MAX, f64::NAN);
    let (mut best_raw, mut best_sink) = (slowest, slowest);
    for round in 1..=rounds {
        for kind in [Kind::Raw, Kind::Sink] {
            let m = measure(kind, &rows, concurrency).await;
            match kind {
                Kind::Raw => {
                    line(&format!("raw  #{round}"), m);
                    if m.0 < best_raw.0 {
                        best_raw = m;
                    }
                }
                Kind::Sink => {
                    line(&format!("sink #{round}"), m);
                    if m.0 < best_sink.0 {
                        best_sink = m;
                    }
                }
            }
        }
    }
    line("raw best", best_raw);
    line("sink best", best_sink);
    println!(
        "sink/raw {:.1} % (best of each)",
        100.0 * best_raw.0.as_secs_f64() / best_sink.0.as_secs_f64()
    );
}
