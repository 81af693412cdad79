//! A fault-injecting HTTP proxy in front of a DynamoDB-API server (such as
//! [`crate::services::Dynalite`]): requests are forwarded unchanged, except that at the
//! configured rates it answers `ThrottlingException` or
//! `ProvisionedThroughputExceededException` (400), `InternalServerError` (500), leaves part
//! of a `BatchWriteItem` unprocessed (forwards some writes and returns the others in
//! `UnprocessedItems`), closes the connection before forwarding, or forwards and then closes
//! the connection without answering. It counts what it did.
//!
//! It does not check signatures (the server behind it may; dynalite does not): a request
//! whose body it changes is forwarded with its original headers.
//!
//! ```no_run
//! use testkit::dynamo_proxy::{DynamoFaultProxy, DynamoFaults};
//! let Some(dynalite) = testkit::services::Dynalite::start("my_test") else { return };
//! let proxy = DynamoFaultProxy::start(
//!     dynalite.port(),
//!     DynamoFaults { throttling: 0.2, ..DynamoFaults::batch_writes() },
//!     7,
//! );
//! let endpoint = proxy.endpoint(); // give this to the client under test
//! // … then check proxy.counts().throttling > 0
//! ```

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;

/// Faults to inject; each rate is a probability per request in `[0, 1]`, tried in the
/// order of the fields (at most one fault per request).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DynamoFaults {
    /// Connection closed before the request is forwarded.
    pub drop_before: f64,
    /// 400 `ThrottlingException`.
    pub throttling: f64,
    /// 400 `ProvisionedThroughputExceededException`.
    pub provisioned: f64,
    /// 500 `InternalServerError`.
    pub server_error: f64,
    /// `BatchWriteItem` only: each write is left unprocessed with even odds (at least one);
    /// the others are forwarded.
    pub unprocessed: f64,
    /// Forwarded (and applied), then the connection is closed without an answer.
    pub drop_after: f64,
    /// Every request answered with this status, error type and message, and never
    /// forwarded (for permanent errors: credentials refused, …).
    pub reject: Option<(u16, String, String)>,
    /// Operations (`BatchWriteItem`, `DescribeTable`, …) the faults apply to; empty: all.
    pub operations: Vec<String>,
}

impl DynamoFaults {
    /// No fault yet, applying only to `BatchWriteItem`.
    pub fn batch_writes() -> DynamoFaults {
        DynamoFaults {
            operations: vec!["BatchWriteItem".into()],
            ..DynamoFaults::default()
        }
    }
}

/// What the proxy did since it started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DynamoFaultCounts {
    /// Requests received, per operation.
    pub requests: BTreeMap<String, u64>,
    /// Requests forwarded to the server (whole or in part).
    pub forwarded: u64,
    pub dropped_before: u64,
    pub throttling: u64,
    pub provisioned: u64,
    pub server_error: u64,
    /// `BatchWriteItem` answers with injected `UnprocessedItems`.
    pub unprocessed_answers: u64,
    /// Writes returned unprocessed in them.
    pub unprocessed_writes: u64,
    pub dropped_after: u64,
    pub rejected: u64,
    /// Writes (`PutRequest`/`DeleteRequest`) forwarded in `BatchWriteItem` requests.
    pub writes_forwarded: u64,
}

impl DynamoFaultCounts {
    /// Requests of one operation.
    pub fn requests_of(&self, operation: &str) -> u64 {
        self.requests.get(operation).copied().unwrap_or(0)
    }

    /// Faults injected, of any kind.
    pub fn faults(&self) -> u64 {
        self.dropped_before
            + self.throttling
            + self.provisioned
            + self.server_error
            + self.unprocessed_answers
            + self.dropped_after
            + self.rejected
    }
}

struct Shared {
    upstream: SocketAddr,
    faults: Mutex<DynamoFaults>,
    rng: Mutex<StdRng>,
    counts: Mutex<DynamoFaultCounts>,
    stop: AtomicBool,
}

/// The proxy: listens on a loopback port until dropped.
pub struct DynamoFaultProxy {
    addr: SocketAddr,
    shared: Arc<Shared>,
    accept: Option<JoinHandle<()>>,
}

/// Longest request head and body read (a `BatchWriteItem` is at most 16 MB).
const MAX_HEAD: usize = 64 << 10;
const MAX_BODY: usize = 32 << 20;

impl DynamoFaultProxy {
    /// Starts a proxy to the server on `127.0.0.1:upstream_port`; `seed` makes the faults
    /// reproducible.
    pub fn start(upstream_port: u16, faults: DynamoFaults, seed: u64) -> DynamoFaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the DynamoDB fault proxy");
        let addr = listener
            .local_addr()
            .expect("local_addr of a bound listener");
        let shared = Arc::new(Shared {
            upstream: SocketAddr::from(([127, 0, 0, 1], upstream_port)),
            faults: Mutex::new(faults),
            rng: Mutex::new(StdRng::seed_from_u64(seed)),
            counts: Mutex::new(DynamoFaultCounts::default()),
            stop: AtomicBool::new(false),
        });
        let sh = Arc::clone(&shared);
        let accept = std::thread::Builder::new()
            .name("dynamo-fault-proxy".into())
            .spawn(move || {
                for conn in listener.incoming() {
                    if sh.stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(conn) = conn else { continue };
                    let sh = Arc::clone(&sh);
                    let _ = std::thread::Builder::new()
                        .name("dynamo-fault-proxy-conn".into())
                        .spawn(move || serve(&sh, conn));
                }
            })
            .expect("spawn the DynamoDB fault proxy");
        DynamoFaultProxy {
            addr,
            shared,
            accept: Some(accept),
        }
    }

    /// `http://127.0.0.1:PORT`
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// Replaces the faults (requests already being handled keep theirs).
    pub fn set_faults(&self, faults: DynamoFaults) {
        *self.shared.faults.lock().expect("faults lock") = faults;
    }

    pub fn counts(&self) -> DynamoFaultCounts {
        self.shared.counts.lock().expect("counts lock").clone()
    }
}

impl Drop for DynamoFaultProxy {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.accept.take() {
            let _ = t.join();
        }
    }
}

struct Request {
    head: Vec<(String, String)>,
    body: Vec<u8>,
    close: bool,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.head
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// Reads one request; `None` at the end of the connection or on a malformed request.
fn read_request(r: &mut BufReader<TcpStream>) -> Option<Request> {
    let mut line = String::new();
    let mut head_bytes = 0;
    if r.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let http10 = line.trim_end().ends_with("HTTP/1.0");
    let mut head = Vec::new();
    loop {
        let mut l = String::new();
        let n = r.read_line(&mut l).ok()?;
        head_bytes += n;
        if n == 0 || head_bytes > MAX_HEAD {
            return None;
        }
        let l = l.trim_end();
        if l.is_empty() {
            break;
        }
        let (k, v) = l.split_once(':')?;
        head.push((k.trim().to_string(), v.trim().to_string()));
    }
    let mut req = Request {
        head,
        body: Vec::new(),
        close: http10,
    };
    let len: usize = req
        .header("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    if len > MAX_BODY {
        return None;
    }
    req.close |= req
        .header("connection")
        .is_some_and(|c| c.eq_ignore_ascii_case("close"));
    req.body = vec![0; len];
    r.read_exact(&mut req.body).ok()?;
    Some(req)
}

fn respond(
    w: &mut TcpStream,
    status: u16,
    body: &[u8],
    request_id: Option<&str>,
) -> std::io::Result<()> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        500 => "Internal Server Error",
        _ => "Error",
    };
    let mut head = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/x-amz-json-1.0\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(id) = request_id {
        head.push_str(&format!("x-amzn-RequestId: {id}\r\n"));
    }
    head.push_str("\r\n");
    w.write_all(head.as_bytes())?;
    w.write_all(body)?;
    w.flush()
}

fn error_body(error_type: &str, message: &str) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "__type": format!("com.amazonaws.dynamodb.v20120810#{error_type}"),
        "message": message,
    }))
    .unwrap_or_default()
}

/// Sends `req` (with `body`) to the server and returns its status and body.
fn forward(upstream: SocketAddr, req: &Request, body: &[u8]) -> std::io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect_timeout(&upstream, Duration::from_secs(5))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    let mut head = String::from("POST / HTTP/1.1\r\n");
    for (k, v) in &req.head {
        if k.eq_ignore_ascii_case("content-length") || k.eq_ignore_ascii_case("connection") {
            continue;
        }
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    ));
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut r = BufReader::new(s);
    let mut status_line = String::new();
    r.read_line(&mut status_line)?;
    let bad = || std::io::Error::new(std::io::ErrorKind::InvalidData, "not an HTTP answer");
    let status: u16 = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(bad)?;
    let mut len: Option<usize> = None;
    loop {
        let mut l = String::new();
        if r.read_line(&mut l)? == 0 {
            return Err(bad());
        }
        let l = l.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            if k.trim().eq_ignore_ascii_case("content-length") {
                len = v.trim().parse().ok();
            }
        }
    }
    let mut out = Vec::new();
    match len {
        Some(n) if n <= MAX_BODY => {
            out.resize(n, 0);
            r.read_exact(&mut out)?;
        }
        Some(_) => return Err(bad()),
        None => {
            r.take(MAX_BODY as u64).read_to_end(&mut out)?;
        }
    }
    Ok((status, out))
}

enum Fault {
    None,
    DropBefore,
    Answer(u16, &'static str, &'static str),
    Unprocessed,
    DropAfter,
    Reject(u16, String, String),
}

fn pick(sh: &Shared, operation: &str) -> Fault {
    let faults = sh.faults.lock().expect("faults lock").clone();
    if !faults.operations.is_empty() && !faults.operations.iter().any(|o| o == operation) {
        return Fault::None;
    }
    if let Some((status, t, m)) = faults.reject {
        return Fault::Reject(status, t, m);
    }
    let mut rng = sh.rng.lock().expect("rng lock");
    let mut hit = |p: f64| p > 0.0 && rng.gen_bool(p.min(1.0));
    if hit(faults.drop_before) {
        Fault::DropBefore
    } else if hit(faults.throttling) {
        Fault::Answer(
            400,
            "ThrottlingException",
            "Rate of requests exceeds the allowed throughput.",
        )
    } else if hit(faults.provisioned) {
        Fault::Answer(
            400,
            "ProvisionedThroughputExceededException",
            "The level of configured provisioned throughput for the table was exceeded.",
        )
    } else if hit(faults.server_error) {
        Fault::Answer(500, "InternalServerError", "Internal server error")
    } else if operation == "BatchWriteItem" && hit(faults.unprocessed) {
        Fault::Unprocessed
    } else if hit(faults.drop_after) {
        Fault::DropAfter
    } else {
        Fault::None
    }
}

fn count(sh: &Shared, f: impl FnOnce(&mut DynamoFaultCounts)) {
    f(&mut sh.counts.lock().expect("counts lock"));
}

/// Writes in a `BatchWriteItem` body.
fn writes_in(body: &Value) -> u64 {
    body.get("RequestItems")
        .and_then(Value::as_object)
        .map_or(0, |t| {
            t.values()
                .filter_map(Value::as_array)
                .map(|l| l.len() as u64)
                .sum()
        })
}

fn serve(sh: &Shared, conn: TcpStream) {
    let _ = conn.set_read_timeout(Some(Duration::from_secs(120)));
    let Ok(mut w) = conn.try_clone() else { return };
    let mut r = BufReader::new(conn);
    while let Some(req) = read_request(&mut r) {
        if sh.stop.load(Ordering::SeqCst) {
            break;
        }
        let operation = req
            .header("x-amz-target")
            .and_then(|t| t.rsplit('.').next())
            .unwrap_or("")
            .to_string();
        count(sh, |c| {
            *c.requests.entry(operation.clone()).or_default() += 1
        });
        let ok = match pick(sh, &operation) {
            Fault::DropBefore => {
                count(sh, |c| c.dropped_before += 1);
                break;
            }
            Fault::Reject(status, t, m) => {
                count(sh, |c| c.rejected += 1);
                respond(&mut w, status, &error_body(&t, &m), None)
            }
            Fault::Answer(status, t, m) => {
                count(sh, |c| match t {
                    "ThrottlingException" => c.throttling += 1,
                    "ProvisionedThroughputExceededException" => c.provisioned += 1,
                    _ => c.server_error += 1,
                });
                respond(&mut w, status, &error_body(t, m), None)
            }
            Fault::Unprocessed => match partial_batch(sh, &req) {
                Some((status, body)) => respond(&mut w, status, &body, None),
                None => {
                    let _ = w.shutdown(Shutdown::Both);
                    break;
                }
            },
            fault @ (Fault::None | Fault::DropAfter) => {
                let writes = if operation == "BatchWriteItem" {
                    serde_json::from_slice::<Value>(&req.body).map_or(0, |v| writes_in(&v))
                } else {
                    0
                };
                match forward(sh.upstream, &req, &req.body) {
                    Ok((status, body)) => {
                        count(sh, |c| {
                            c.forwarded += 1;
                            if status == 200 {
                                c.writes_forwarded += writes;
                            }
                        });
                        if matches!(fault, Fault::DropAfter) {
                            count(sh, |c| c.dropped_after += 1);
                            let _ = w.shutdown(Shutdown::Both);
                            break;
                        }
                        respond(&mut w, status, &body, None)
                    }
                    Err(_) => {
                        // the server is gone: the client sees a lost connection
                        let _ = w.shutdown(Shutdown::Both);
                        break;
                    }
                }
            }
        };
        if ok.is_err() || req.close {
            break;
        }
    }
    let _ = w.shutdown(Shutdown::Both);
}

/// Forwards part of a `BatchWriteItem` and answers with the rest as `UnprocessedItems`.
/// `None`: the server could not be reached.
fn partial_batch(sh: &Shared, req: &Request) -> Option<(u16, Vec<u8>)> {
    let Ok(mut body) = serde_json::from_slice::<Value>(&req.body) else {
        return forward(sh.upstream, req, &req.body).ok();
    };
    let mut withheld = serde_json::Map::new();
    let mut withheld_n = 0u64;
    {
        let mut rng = sh.rng.lock().expect("rng lock");
        if let Some(tables) = body.get_mut("RequestItems").and_then(Value::as_object_mut) {
            for (table, list) in tables.iter_mut() {
                let Some(writes) = list.as_array_mut() else {
                    continue;
                };
                let mut keep = Vec::new();
                let mut held = Vec::new();
                for w in writes.drain(..) {
                    if rng.gen_bool(0.5) {
                        held.push(w);
                    } else {
                        keep.push(w);
                    }
                }
                if held.is_empty() && !keep.is_empty() {
                    held.push(keep.remove(rng.gen_range(0..keep.len())));
                }
                withheld_n += held.len() as u64;
                *writes = keep;
                if !held.is_empty() {
                    withheld.insert(table.clone(), Value::Array(held));
                }
            }
            tables.retain(|_, l| l.as_array().is_some_and(|l| !l.is_empty()));
        }
    }
    count(sh, |c| {
        c.unprocessed_answers += 1;
        c.unprocessed_writes += withheld_n;
    });
    let forwarded_writes = writes_in(&body);
    let mut answer = serde_json::json!({ "UnprocessedItems": {} });
    if forwarded_writes > 0 {
        let sent = serde_json::to_vec(&body).unwrap_or_default();
        let (status, upstream) = forward(sh.upstream, req, &sent).ok()?;
        count(sh, |c| {
            c.forwarded += 1;
            if status == 200 {
                c.writes_forwarded += forwarded_writes;
            }
        });
        if status != 200 {
            return Some((status, upstream));
        }
        if let Ok(v) = serde_json::from_slice::<Value>(&upstream) {
            answer = v;
        }
    }
    let unprocessed = answer.as_object_mut().map(|o| {
        o.entry("UnprocessedItems")
            .or_insert_with(|| serde_json::json!({}))
    });
    if let Some(Value::Object(u)) = unprocessed {
        for (table, held) in withheld {
            match u.get_mut(&table).and_then(Value::as_array_mut) {
                Some(list) => list.extend(held.as_array().cloned().unwrap_or_default()),
                None => {
                    u.insert(table, held);
                }
            }
        }
    }
    Some((200, serde_json::to_vec(&answer).unwrap_or_default()))
}
