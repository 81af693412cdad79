//! Throughput of DynamoDB writes four ways, with the same concurrency, to the same kind of
//! server, in one run: rfs's own client against the official AWS SDK for Rust
//! (`aws-sdk-dynamodb`), and the DynamoDB sink against both.
//!
//!   cargo run --release -p connectors --example dynamo_bench [ROWS] [CONCURRENCY]
//!   ROUNDS=2 SERVERS=dynalite,moto MOTO_ROWS=ROWS   (the defaults)
//!
//! Every kind writes the same rows as 25-item `BatchWriteItem` calls with C calls in flight;
//! writes a server leaves in `UnprocessedItems` are sent again (after 50 ms, doubling).
//!
//! - own-raw: the request bodies are built before the clock starts; C tasks send them with
//!   the sigv4 crate's signer over reqwest and check the answer. What the wire and the
//!   server allow.
//! - own: the 25-item batches as `dynamo::Item`s built before the clock; per call each item
//!   is framed (`WriteRequest::put`) and the batch sent by `dynamo::BatchWriter` (signing,
//!   AIMD limit, answer parsed, unprocessed writes retried): the own client as the sink
//!   uses it.
//! - sdk: the same batches as the SDK's typed `WriteRequest`s built before the clock; per
//!   call `Client::batch_write_item` (which serializes, signs with `aws-sigv4`, sends over
//!   its hyper client and parses the answer). The SDK's counterpart of `own`.
//! - sink: rows as the table source gives them (one JSON object of ~300 B each, with column
//!   hints) → a reader thread frames them with the sink's writer → batches of 250, four in
//!   flight as the pipeline keeps them → `DynamoSink::send` with at most C requests in
//!   flight. Conversion, framing, key checks and retries all count.
//!
//! Servers: `dynalite` (in memory, one Node.js thread) and `moto_server`'s DynamoDB (the
//! emulator the AWS credential-chain tests use; Python). MB/s are MB of row JSON (what the
//! source read). Each measurement starts a fresh server, warms it up, and writes a fresh
//! table; `ROUNDS` rounds of every kind are run and the best of each kind compared. "client
//! CPU" is what this process spent (user + system: framing, HTTP, signing, parsing), also
//! given per 100,000 items: it depends less on a loaded machine than the rates do.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use aws_sdk_dynamodb::types::{AttributeValue as Av, PutRequest, WriteRequest as SdkWrite};
use bytes::Bytes;
use connectors::dynamodb::{BatchLimits, DynamoSink, DynamoSinkOptions, DynamoUrl};
use coordination::Position;
use dynamo::{
    AttributeValue, BatchWriter, ColumnHint, ColumnHints, Item, KeyAttribute, KeySchema, KeyType,
    WriteRequest,
};
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

/// The rows as items, in batches of 25 (as every kind sends them).
fn batches(rows: &[String]) -> Vec<Vec<Item>> {
    let hints = hints();
    rows.chunks(25)
        .map(|chunk| {
            chunk
                .iter()
                .map(|r| dynamo::row_to_item(r.as_bytes(), &hints).expect("row"))
                .collect()
        })
        .collect()
}

/// Time to wait before sending unprocessed writes again: 50 ms, doubling, at most 2 s.
fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(50 << attempt.min(6)).min(Duration::from_secs(2))
}

/// Writes sent again because a server left them unprocessed, by all kinds of this process.
static RESENT: AtomicU64 = AtomicU64::new(0);

/// The unprocessed writes of a `BatchWriteItem` answer, as the `RequestItems` of the next
/// request (`None`: all were written). The fast path is dynalite's answer, byte for byte.
fn unprocessed_body(answer: &[u8]) -> Option<Bytes> {
    if answer.starts_with(br#"{"UnprocessedItems":{}"#) {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(answer)
        .unwrap_or_else(|e| panic!("answer not JSON: {e}: {}", String::from_utf8_lossy(answer)));
    let left = v.get("UnprocessedItems")?.as_object()?;
    let n: usize = left
        .values()
        .map(|w| w.as_array().map_or(0, Vec::len))
        .sum();
    if n == 0 {
        return None;
    }
    RESENT.fetch_add(n as u64, Ordering::Relaxed);
    let body = serde_json::json!({ "RequestItems": left });
    Some(Bytes::from(serde_json::to_vec(&body).expect("JSON")))
}

/// own-raw: bodies built before the clock, sent with the sigv4 signer over reqwest.
async fn own_raw(
    endpoint: &str,
    table: &str,
    batches: &[Vec<Item>],
    concurrency: usize,
) -> Duration {
    let mut bodies = Vec::new();
    for batch in batches {
        let mut body = format!(r#"{{"RequestItems":{{"{table}":["#).into_bytes();
        for (n, item) in batch.iter().enumerate() {
            if n > 0 {
                body.push(b',');
            }
            body.extend_from_slice(WriteRequest::put(item, &key()).expect("key").body());
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
            let mut body = body.clone();
            let mut attempt = 0;
            loop {
                let mut req = http
                    .post(url.clone())
                    .header("content-type", "application/x-amz-json-1.0")
                    .header("x-amz-target", "DynamoDB_20120810.BatchWriteItem");
                for (k, v) in signer.headers(SystemTime::now(), "POST", &host, ("/", ""), &body) {
                    req = req.header(k, v);
                }
                let resp = req.body(body.clone()).send().await.expect("send");
                let status = resp.status();
                let answer = resp.bytes().await.expect("answer");
                assert!(
                    status.is_success(),
                    "raw call: {status} {}",
                    String::from_utf8_lossy(&answer)
                );
                match unprocessed_body(&answer) {
                    None => break,
                    Some(left) => {
                        tokio::time::sleep(backoff(attempt)).await;
                        attempt += 1;
                        body = left;
                    }
                }
            }
        }
    }))
    .await;
    start.elapsed()
}

/// own: items framed per call and sent by the own client's `BatchWriter`.
async fn own(endpoint: &str, table: &str, batches: &[Vec<Item>], concurrency: usize) -> Duration {
    let client = dynamo::Client::new(dynamo::ClientConfig {
        endpoint: Some(endpoint.to_string()),
        max_in_flight: concurrency,
        ..dynamo::ClientConfig::new("us-east-1", credentials())
    })
    .expect("client");
    let writer = BatchWriter::new(client.clone(), table, key());
    let next = AtomicUsize::new(0);
    let start = Instant::now();
    futures::future::join_all((0..concurrency).map(|_| async {
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(batch) = batches.get(i) else { break };
            let writes: Vec<WriteRequest> = batch
                .iter()
                .map(|item| WriteRequest::put(item, &key()).expect("key"))
                .collect();
            let outcome = writer.write(&writes).await.expect("own client write");
            assert!(outcome.refused.is_empty(), "refused: {:?}", outcome.refused);
            RESENT.fetch_add(outcome.unprocessed, Ordering::Relaxed);
        }
    }))
    .await;
    start.elapsed()
}

/// An item of the own client as the SDK's typed value.
fn to_sdk(v: &AttributeValue) -> Av {
    match v {
        AttributeValue::S(s) => Av::S(s.clone()),
        AttributeValue::N(n) => Av::N(n.clone()),
        AttributeValue::B(b) => Av::B(aws_sdk_dynamodb::primitives::Blob::new(b.clone())),
        AttributeValue::Bool(b) => Av::Bool(*b),
        AttributeValue::Null => Av::Null(true),
        AttributeValue::M(m) => Av::M(m.iter().map(|(k, v)| (k.clone(), to_sdk(v))).collect()),
        AttributeValue::L(l) => Av::L(l.iter().map(to_sdk).collect()),
    }
}

/// sdk: the SDK's typed batches built before the clock, sent by `batch_write_item`.
async fn sdk(endpoint: &str, table: &str, batches: &[Vec<Item>], concurrency: usize) -> Duration {
    let client = testkit::dynamo_sdk::client(endpoint).await;
    let typed: Vec<Vec<SdkWrite>> = batches
        .iter()
        .map(|batch| {
            batch
                .iter()
                .map(|item| {
                    let item: HashMap<String, Av> =
                        item.iter().map(|(k, v)| (k.clone(), to_sdk(v))).collect();
                    SdkWrite::builder()
                        .put_request(
                            PutRequest::builder()
                                .set_item(Some(item))
                                .build()
                                .expect("put"),
                        )
                        .build()
                })
                .collect()
        })
        .collect();
    let queue = Mutex::new(typed.into_iter());
    let start = Instant::now();
    futures::future::join_all((0..concurrency).map(|_| async {
        loop {
            let Some(batch) = queue.lock().expect("queue").next() else {
                break;
            };
            let mut items = HashMap::from([(table.to_string(), batch)]);
            let mut attempt = 0;
            loop {
                let out = client
                    .batch_write_item()
                    .set_request_items(Some(items))
                    .send()
                    .await
                    .unwrap_or_else(|e| {
                        panic!(
                            "SDK call: {}",
                            aws_sdk_dynamodb::error::DisplayErrorContext(e)
                        )
                    });
                match out.unprocessed_items {
                    Some(left) if left.values().any(|w| !w.is_empty()) => {
                        let n: usize = left.values().map(Vec::len).sum();
                        RESENT.fetch_add(n as u64, Ordering::Relaxed);
                        tokio::time::sleep(backoff(attempt)).await;
                        attempt += 1;
                        items = left;
                    }
                    _ => break,
                }
            }
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
    RESENT.fetch_add(stats.unprocessed, Ordering::Relaxed);
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

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    OwnRaw,
    Own,
    Sdk,
    Sink,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::OwnRaw, Kind::Own, Kind::Sdk, Kind::Sink];

    fn name(self) -> &'static str {
        match self {
            Kind::OwnRaw => "own-raw",
            Kind::Own => "own",
            Kind::Sdk => "sdk",
            Kind::Sink => "sink",
        }
    }
}

/// A fresh DynamoDB-API server of one kind.
enum Server {
    Dynalite(testkit::services::Dynalite),
    Moto(testkit::services::Moto),
}

impl Server {
    fn start(name: &str) -> Server {
        let started = match name {
            "dynalite" => testkit::services::Dynalite::start("dynamo_bench").map(Server::Dynalite),
            "moto" => testkit::services::Moto::start("dynamo_bench", None).map(Server::Moto),
            other => {
                eprintln!("unknown server {other:?} in SERVERS (dynalite, moto)");
                std::process::exit(2);
            }
        };
        started.unwrap_or_else(|| {
            eprintln!("{name} not found: run scripts/install-test-deps");
            std::process::exit(1);
        })
    }

    fn endpoint(&self) -> String {
        match self {
            Server::Dynalite(s) => s.endpoint(),
            Server::Moto(s) => s.endpoint(),
        }
    }
}

/// One measurement on a fresh server (so no run pays for another's data): warm-up, then
/// the rows; returns (wall, CPU seconds of this process).
async fn measure(
    server: &str,
    kind: Kind,
    rows: &[String],
    batches: &[Vec<Item>],
    concurrency: usize,
) -> (Duration, f64) {
    let server = Server::start(server);
    let endpoint = server.endpoint();
    let client = dynamo::Client::new(dynamo::ClientConfig {
        endpoint: Some(endpoint.clone()),
        ..dynamo::ClientConfig::new("us-east-1", credentials())
    })
    .expect("client");
    // warm the server up (JIT, allocations) on a table of its own
    create(&client, "warmup").await;
    own_raw(
        &endpoint,
        "warmup",
        &batches[..batches.len().min(200)],
        concurrency,
    )
    .await;
    if kind != Kind::Sink {
        create(&client, "measured").await;
    }
    let cpu = cpu_seconds();
    let took = match kind {
        Kind::OwnRaw => own_raw(&endpoint, "measured", batches, concurrency).await,
        Kind::Own => own(&endpoint, "measured", batches, concurrency).await,
        Kind::Sdk => sdk(&endpoint, "measured", batches, concurrency).await,
        Kind::Sink => sink(&endpoint, "measured", rows, concurrency).await,
    };
    let cpu = cpu_seconds() - cpu;
    let n = client.count_items("measured", 4).await.expect("count");
    assert_eq!(n, rows.len() as u64, "every row written");
    drop(server);
    (took, cpu)
}

#[tokio::main]
async fn main() {
    let mut args = std::env::args().skip(1);
    let rows_n: u64 = args.next().map_or(60_000, |a| a.parse().expect("ROWS"));
    let concurrency: usize = args.next().map_or(8, |a| a.parse().expect("CONCURRENCY"));
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let rounds: usize = env("ROUNDS").map_or(2, |r| r.parse().expect("ROUNDS"));
    let moto_rows: u64 = env("MOTO_ROWS").map_or(rows_n, |r| r.parse().expect("MOTO_ROWS"));
    let servers = env("SERVERS").unwrap_or_else(|| "dynalite,moto".into());
    for server in servers.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let n = if server == "moto" { moto_rows } else { rows_n };
        run(server, n, concurrency, rounds).await;
    }
}

/// `rounds` rounds of every kind against fresh `server`s, then the best of each.
async fn run(server: &str, rows_n: u64, concurrency: usize, rounds: usize) {
    let rows: Vec<String> = (0..rows_n).map(row).collect();
    let batches = batches(&rows);
    let mb = rows.iter().map(|r| r.len()).sum::<usize>() as f64 / 1e6;
    println!(
        "{server}: {rows_n} rows, {:.0} B per row, {mb:.1} MB of row JSON, {concurrency} requests in flight, \
         {rounds} rounds of own-raw, own, sdk, sink (a fresh server each)",
        mb * 1e6 / rows_n as f64
    );
    let line = |name: &str, (t, cpu): (Duration, f64)| {
        let s = t.as_secs_f64();
        println!(
            "{name:<24} {:>8.0} items/s {:>6.2} MB/s  {s:>7.2} s  client CPU {cpu:>6.2} s = {:>5.2} s per 100k items",
            rows_n as f64 / s,
            mb / s,
            cpu * 1e5 / rows_n as f64,
        );
    };
    let mut best: Vec<(Kind, (Duration, f64))> = Vec::new();
    for round in 1..=rounds {
        for kind in Kind::ALL {
            let resent = RESENT.load(Ordering::Relaxed);
            let m = measure(server, kind, &rows, &batches, concurrency).await;
            line(&format!("{server} {} #{round}", kind.name()), m);
            let resent = RESENT.load(Ordering::Relaxed) - resent;
            if resent > 0 {
                println!("  ({resent} writes left unprocessed and sent again)");
            }
            match best.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, b)) if m.0 < b.0 => *b = m,
                Some(_) => {}
                None => best.push((kind, m)),
            }
        }
    }
    for (kind, m) in &best {
        line(&format!("best {server} {}", kind.name()), *m);
    }
    let get = |k: Kind| {
        best.iter()
            .find(|(b, _)| *b == k)
            .map(|(_, m)| *m)
            .expect("measured")
    };
    let rate = |m: (Duration, f64)| rows_n as f64 / m.0.as_secs_f64();
    for (a, b) in [
        (Kind::Sdk, Kind::Own),
        (Kind::Sdk, Kind::OwnRaw),
        (Kind::Sink, Kind::OwnRaw),
        (Kind::Sink, Kind::Sdk),
    ] {
        let (ma, mb) = (get(a), get(b));
        println!(
            "{server} {}/{}: {:.1} % of the items/s, {:.0} % of the client CPU per item",
            a.name(),
            b.name(),
            100.0 * rate(ma) / rate(mb),
            100.0 * ma.1 / mb.1,
        );
    }
}
