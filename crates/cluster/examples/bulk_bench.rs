//! Bulk-sender throughput to a loopback sink that accepts everything, in MB/s of `_source`
//! per CPU second of the sending process (gzip off and on).
//!
//! `cargo run --release -p cluster --example bulk_bench -- --docs 1000000 --doc-size 1000`
//!
//! The sink runs in a child process (this program with `--sink`) so its CPU time is not
//! counted; it answers `GET /` as OpenSearch 2.11.0 and every `_bulk` with one `201` item
//! per action line, echoing the ids as Elasticsearch does with `filter_path`.

use std::convert::Infallible;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use cluster::{BulkDoc, BulkOptions, BulkSender, Client, ClientConfig, RequestCompression};
use futures::StreamExt;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};

struct Args {
    docs: usize,
    doc_size: usize,
    batch: usize,
    in_flight: usize,
    gzip: Vec<bool>,
}

/// What is wrong with the command line.
#[derive(Debug, thiserror::Error)]
enum ArgsError {
    #[error("{flag} needs a value")]
    MissingValue { flag: String },
    #[error("{flag}")]
    NotANumber {
        flag: String,
        #[source]
        source: std::num::ParseIntError,
    },
    #[error("--gzip off|on|both, not {0}")]
    Gzip(String),
    #[error("unknown flag {0}")]
    UnknownFlag(String),
}

fn parse_args() -> Result<Option<Args>, ArgsError> {
    let mut a = Args {
        docs: 1_000_000,
        doc_size: 1000,
        batch: 1000,
        in_flight: 4,
        gzip: vec![false, true],
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--sink" {
            return Ok(None);
        }
        let mut value = || {
            it.next()
                .ok_or_else(|| ArgsError::MissingValue { flag: flag.clone() })
        };
        let num = |v: String| {
            v.parse::<usize>().map_err(|source| ArgsError::NotANumber {
                flag: flag.clone(),
                source,
            })
        };
        match flag.as_str() {
            "--docs" => a.docs = num(value()?)?,
            "--doc-size" => a.doc_size = num(value()?)?,
            "--batch" => a.batch = num(value()?)?,
            "--in-flight" => a.in_flight = num(value()?)?,
            "--gzip" => {
                a.gzip = match value()?.as_str() {
                    "off" => vec![false],
                    "on" => vec![true],
                    "both" => vec![false, true],
                    v => return Err(ArgsError::Gzip(v.to_string())),
                }
            }
            _ => return Err(ArgsError::UnknownFlag(flag)),
        }
    }
    Ok(Some(a))
}

/// User + system CPU time of this process (`who = RUSAGE_SELF`) or its finished children.
fn cpu_time(who: libc::c_int) -> Duration {
    // SAFETY: getrusage only writes into the zeroed struct we own.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn main() {
    let args = match parse_args() {
        Ok(Some(a)) => a,
        Ok(None) => return sink(),
        Err(e) => {
            match std::error::Error::source(&e) {
                Some(cause) => eprintln!("bulk_bench: {e}: {cause}"),
                None => eprintln!("bulk_bench: {e}"),
            }
            std::process::exit(2);
        }
    };
    let mut child = Command::new(std::env::current_exe().expect("own path"))
        .arg("--sink")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the sink");
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let port: u16 = line.trim().parse().expect("sink port");

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let sources = make_sources(args.doc_size);
    let index: Arc<str> = Arc::from("bench");
    println!(
        "bulk_bench: {} docs of ~{} B, {} docs/request, {} requests in flight, sink in a child process",
        args.docs, args.doc_size, args.batch, args.in_flight
    );
    for &gzip in &args.gzip {
        let batches: Vec<Vec<BulkDoc>> = (0..args.docs)
            .collect::<Vec<_>>()
            .chunks(args.batch)
            .map(|c| {
                c.iter()
                    .map(|&i| {
                        BulkDoc::new(
                            index.clone(),
                            format!("doc-{i}"),
                            sources[i % sources.len()].clone(),
                        )
                    })
                    .collect()
            })
            .collect();
        let bytes: u64 = batches
            .iter()
            .flatten()
            .map(|d| d.source.len() as u64)
            .sum();
        let (wall, cpu, out) = rt.block_on(async {
            let mut cfg = ClientConfig::new(format!("http://127.0.0.1:{port}"));
            cfg.compression = if gzip {
                RequestCompression::On
            } else {
                RequestCompression::Off
            };
            let client = Client::connect(cfg).await.unwrap();
            let opts = BulkOptions {
                max_in_flight: args.in_flight,
                ..BulkOptions::default()
            };
            let sender = BulkSender::new(client, opts).unwrap();
            let cpu0 = cpu_time(libc::RUSAGE_SELF);
            let t0 = Instant::now();
            let mut total = cluster::BulkResult::default();
            let mut results = futures::stream::iter(batches)
                .map(|b| sender.send(b))
                .buffer_unordered(args.in_flight);
            while let Some(r) = results.next().await {
                let r = r.expect("bulk send");
                total.indexed += r.indexed;
                total.requests += r.requests;
            }
            (t0.elapsed(), cpu_time(libc::RUSAGE_SELF) - cpu0, total)
        });
        assert_eq!(out.indexed, args.docs as u64);
        let mb = bytes as f64 / 1e6;
        println!(
            "gzip {:<3}  {:>8.1} MB source  wall {:>6.2} s  {:>7.1} MB/s  sender CPU {:>6.2} s  {:>7.1} MB/s per core  ({} requests)",
            if gzip { "on" } else { "off" },
            mb,
            wall.as_secs_f64(),
            mb / wall.as_secs_f64(),
            cpu.as_secs_f64(),
            mb / cpu.as_secs_f64(),
            out.requests
        );
    }
    drop(child.stdin.take());
    let mut rest = String::new();
    out.read_to_string(&mut rest).unwrap();
    child.wait().unwrap();
    println!(
        "sink CPU {:.2} s (not counted above)",
        cpu_time(libc::RUSAGE_CHILDREN).as_secs_f64()
    );
}

/// 1024 different JSON documents of about `size` bytes.
fn make_sources(size: usize) -> Vec<Bytes> {
    let words = [
        "alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
    ];
    (0..1024u64)
        .map(|k| {
            let mut s = format!(
                "{{\"k\":{k},\"ts\":\"2024-05-{:02}T10:{:02}:00Z\",\"user\":\"u{}\",\"msg\":\"",
                k % 28 + 1,
                k % 60,
                k * 7919 % 10007
            );
            let mut x = k.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
            while s.len() + 2 < size {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                s.push_str(words[(x % 10) as usize]);
                s.push(' ');
            }
            s.push_str("\"}");
            Bytes::from(s)
        })
        .collect()
}

fn sink() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap().port());
        std::io::stdout().flush().unwrap();
        // Exit when the parent closes our stdin.
        std::thread::spawn(|| {
            let _ = std::io::stdin().read_to_end(&mut Vec::new());
            std::process::exit(0);
        });
        loop {
            let (tcp, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let io = hyper_util::rt::TokioIo::new(tcp);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, hyper::service::service_fn(handle))
                    .await;
            });
        }
    });
}

async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_string();
    let gz = req
        .headers()
        .get("content-encoding")
        .is_some_and(|v| v == "gzip");
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let reply = if path == "/_bulk" {
        let body = if gz {
            let mut out = Vec::with_capacity(body.len() * 4);
            flate2::read::MultiGzDecoder::new(&body[..])
                .read_to_end(&mut out)
                .unwrap();
            Bytes::from(out)
        } else {
            body
        };
        let mut r = Vec::with_capacity(body.len() / 20);
        r.extend_from_slice(b"{\"took\":1,\"errors\":false,\"items\":[");
        let mut first = true;
        for action in body
            .split(|&b| b == b'\n')
            .step_by(2)
            .filter(|l| !l.is_empty())
        {
            let id = action
                .windows(7)
                .position(|w| w == b"\"_id\":\"")
                .map(|p| {
                    let rest = &action[p + 7..];
                    &rest[..rest.iter().position(|&b| b == b'"').unwrap_or(rest.len())]
                })
                .unwrap_or(b"");
            if !first {
                r.push(b',');
            }
            first = false;
            r.extend_from_slice(b"{\"index\":{\"_id\":\"");
            r.extend_from_slice(id);
            r.extend_from_slice(b"\",\"status\":201}}");
        }
        r.extend_from_slice(b"]}");
        Bytes::from(r)
    } else if path == "/" {
        Bytes::from_static(
            br#"{"name":"sink","version":{"distribution":"opensearch","number":"2.11.0"}}"#,
        )
    } else {
        Bytes::from_static(b"{}")
    };
    Ok(Response::builder()
        .header("content-type", "application/json")
        .body(Full::new(reply))
        .unwrap())
}
