//! Listening, fault injection around each request, routing, and the API handlers.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, CONTENT_ENCODING, CONTENT_TYPE, RETRY_AFTER};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{json, Map, Value};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::oneshot;

use super::bulk::{self, apply_one, mapping_failure};
use super::error::EsError;
use super::filter::FilterPath;
use super::query::{self, Query, SortKey};
use super::state::{
    check_mappings, check_settings, flatten_settings, glob, merge, nest_settings, OpKind,
    SnapshotRecord, State, WriteOp, Written,
};
use super::version::Dialect;
use super::{Faults, Shared};

type Resp = Response<Full<Bytes>>;

/// Returned to hyper to close a connection without answering.
#[derive(Debug)]
pub(crate) struct Dropped;

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection dropped by fault injection")
    }
}

impl std::error::Error for Dropped {}

/// Accept loops for the main and admin listeners until `stop` fires.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    main: std::net::TcpListener,
    admin: std::net::TcpListener,
    mut stop: oneshot::Receiver<()>,
) {
    let addr = match main.local_addr() {
        Ok(a) => a,
        Err(e) => {
            tracing::error!("testkit server: no local address: {e}");
            return;
        }
    };
    let (Ok(main), Ok(admin)) = (TcpListener::from_std(main), TcpListener::from_std(admin)) else {
        tracing::error!("testkit server: cannot register listeners");
        return;
    };
    let admin_shared = Arc::clone(&shared);
    let admin_task = tokio::spawn(async move {
        loop {
            if let Ok((sock, _)) = admin.accept().await {
                tokio::spawn(connection(Arc::clone(&admin_shared), sock, true));
            }
        }
    });
    let mut listener = Some(main);
    let mut down_rx = shared.down.subscribe();
    loop {
        let down = *down_rx.borrow_and_update();
        if down {
            listener = None;
        } else if listener.is_none() {
            listener = rebind(addr).await;
        }
        tokio::select! {
            _ = &mut stop => break,
            changed = down_rx.changed() => {
                if changed.is_err() {
                    break;
                }
            }
            accepted = accept(listener.as_ref()) => {
                if let Ok((sock, _)) = accepted {
                    tokio::spawn(connection(Arc::clone(&shared), sock, false));
                }
            }
        }
    }
    admin_task.abort();
}

async fn accept(l: Option<&TcpListener>) -> std::io::Result<(TcpStream, SocketAddr)> {
    match l {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

async fn rebind(addr: SocketAddr) -> Option<TcpListener> {
    for _ in 0..200 {
        match TcpListener::bind(addr).await {
            Ok(l) => return Some(l),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
    tracing::error!("testkit server: cannot listen on {addr} again after coming up");
    None
}

async fn connection(shared: Arc<Shared>, sock: TcpStream, admin: bool) {
    let _ = sock.set_nodelay(true);
    let io = TokioIo::new(sock);
    let sh = Arc::clone(&shared);
    let svc = hyper::service::service_fn(move |req| handle(Arc::clone(&sh), req, admin));
    let conn = hyper::server::conn::http1::Builder::new()
        .keep_alive(true)
        .serve_connection(io, svc);
    if admin {
        let _ = conn.await;
        return;
    }
    let mut down_rx = shared.down.subscribe();
    tokio::select! {
        _ = conn => {}
        // dropping the connection closes the socket
        _ = down_rx.wait_for(|d| *d) => {}
    }
}

fn respond(shared: &Shared, status: u16, body: Vec<u8>) -> Resp {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=UTF-8"),
    );
    if shared.dialect.product_header() {
        r.headers_mut().insert(
            "x-elastic-product",
            HeaderValue::from_static("Elasticsearch"),
        );
    }
    r
}

fn json_resp(shared: &Shared, status: u16, v: &Value) -> Resp {
    respond(shared, status, serde_json::to_vec(v).unwrap_or_default())
}

fn error_resp(shared: &Shared, e: &EsError) -> Resp {
    json_resp(shared, e.status, &e.body())
}

async fn handle(shared: Arc<Shared>, req: Request<Incoming>, admin: bool) -> Result<Resp, Dropped> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let path_q = req
        .uri()
        .path_and_query()
        .map_or_else(|| path.clone(), |p| p.as_str().to_string());
    let query = parse_query(req.uri().query().unwrap_or(""));
    if path == "/_testkit" || path.starts_with("/_testkit/") {
        let body = read_body(&shared, req).await.unwrap_or_default();
        return Ok(admin_handle(&shared, &method, &path, &body));
    }
    if admin {
        let e = EsError::new(404, "not_found", "the admin port serves only /_testkit/…");
        return Ok(error_resp(&shared, &e));
    }
    if *shared.down.borrow() {
        shared.record(method.as_str(), &path_q, 0, Some("down"));
        return Err(Dropped);
    }
    shared.counters.requests.fetch_add(1, Ordering::Relaxed);
    let is_bulk = path.ends_with("/_bulk");
    let gzip = req
        .headers()
        .get(CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("gzip"));
    // read the whole body first: answering while the client still sends makes it see a reset
    let body = match read_body(&shared, req).await {
        Ok(b) => b,
        Err(e) => {
            shared.record(method.as_str(), &path_q, e.status, None);
            return Ok(error_resp(&shared, &e));
        }
    };
    let body = if gzip {
        let c = &shared.counters;
        c.gzip_requests.fetch_add(1, Ordering::Relaxed);
        if is_bulk {
            c.gzip_bulk_requests.fetch_add(1, Ordering::Relaxed);
        }
        match gunzip(&body, shared.config.max_content_length) {
            Ok(b) => {
                c.gzip_decoded_bytes
                    .fetch_add(b.len() as u64, Ordering::Relaxed);
                b
            }
            Err(e) => {
                shared.record(method.as_str(), &path_q, e.status, None);
                return Ok(error_resp(&shared, &e));
            }
        }
    } else {
        body
    };
    let faults = shared.faults();
    let mut drop_after = false;
    if !faults.bulk_only || is_bulk {
        let delay = faults
            .latency_ms
            .saturating_add(shared.jitter(faults.latency_jitter_ms));
        if delay > 0 {
            tokio::time::sleep(Duration::from_millis(delay)).await;
        }
        if shared.roll_below(faults.drop_connection) {
            if is_bulk && shared.roll() < 0.5 {
                drop_after = true;
            } else {
                shared.record(method.as_str(), &path_q, 0, Some("drop-before"));
                return Err(Dropped);
            }
        } else if shared.roll_below(faults.reject_429) {
            let e = EsError::new(
                429,
                "es_rejected_execution_exception",
                "rejected execution of coordinating operation (testkit fault injection)",
            );
            let mut r = error_resp(&shared, &e);
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(faults.retry_after_secs));
            shared.record(method.as_str(), &path_q, 429, Some("429"));
            return Ok(r);
        } else if shared.roll_below(faults.error_500) {
            let e = EsError::new(
                500,
                "exception",
                "internal failure (testkit fault injection)",
            );
            shared.record(method.as_str(), &path_q, 500, Some("500"));
            return Ok(error_resp(&shared, &e));
        } else if shared.roll_below(faults.error_503) {
            let e = EsError::new(
                503,
                "unavailable_shards_exception",
                "primary shard is not active (testkit fault injection)",
            );
            shared.record(method.as_str(), &path_q, 503, Some("503"));
            return Ok(error_resp(&shared, &e));
        }
    }
    let ctx = Ctx {
        shared: &shared,
        method: &method,
        query: &query,
        body,
        faults: &faults,
    };
    let segs: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let resp = match route(&ctx, &segs).await {
        Ok(r) => r,
        Err(e) => error_resp(&shared, &e),
    };
    if drop_after {
        shared.record(method.as_str(), &path_q, 0, Some("drop-after"));
        return Err(Dropped);
    }
    shared.record(method.as_str(), &path_q, resp.status().as_u16(), None);
    if method == Method::HEAD {
        let (parts, _) = resp.into_parts();
        return Ok(Response::from_parts(parts, Full::new(Bytes::new())));
    }
    Ok(resp)
}

async fn read_body(shared: &Shared, req: Request<Incoming>) -> Result<Bytes, EsError> {
    let limit = shared.config.max_content_length;
    match Limited::new(req.into_body(), limit).collect().await {
        Ok(c) => {
            let b = c.to_bytes();
            shared
                .counters
                .body_bytes
                .fetch_add(b.len() as u64, Ordering::Relaxed);
            Ok(b)
        }
        Err(e) => Err(EsError::new(
            413,
            "content_too_long_exception",
            format!("request body is larger than the limit of [{limit}] bytes or unreadable: {e}"),
        )),
    }
}

fn gunzip(body: &[u8], limit: usize) -> Result<Bytes, EsError> {
    let mut out = Vec::with_capacity(body.len().saturating_mul(4).min(limit));
    let mut d = flate2::read::MultiGzDecoder::new(body).take(limit as u64 + 1);
    d.read_to_end(&mut out).map_err(|e| {
        EsError::new(
            400,
            "parse_exception",
            format!("cannot decompress the gzip request body: {e}"),
        )
    })?;
    if out.len() > limit {
        return Err(EsError::new(
            413,
            "content_too_long_exception",
            format!("decompressed request body is larger than the limit of [{limit}] bytes"),
        ));
    }
    Ok(Bytes::from(out))
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = std::str::from_utf8(&b[i + 1..i + 3]).ok();
            if let Some(v) = hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn parse_query(q: &str) -> BTreeMap<String, String> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (
                percent_decode(&k.replace('+', " ")),
                percent_decode(&v.replace('+', " ")),
            )
        })
        .collect()
}

struct Ctx<'a> {
    shared: &'a Arc<Shared>,
    method: &'a Method,
    query: &'a BTreeMap<String, String>,
    body: Bytes,
    faults: &'a Faults,
}

impl Ctx<'_> {
    fn q(&self, k: &str) -> Option<&str> {
        self.query.get(k).map(String::as_str)
    }

    fn flag(&self, k: &str) -> Option<bool> {
        self.q(k).map(|v| v.is_empty() || v == "true")
    }

    fn json(&self) -> Result<Value, EsError> {
        if self.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&self.body)
            .map_err(|e| EsError::parse(format!("request body is not valid JSON: {e}")))
    }

    /// A JSON answer, through `filter_path` when the request has one (error answers are never
    /// filtered, as with the real servers).
    fn ok(&self, status: u16, v: Value) -> Result<Resp, EsError> {
        let v = match self.filter_path() {
            Some(f) => f.apply(v),
            None => v,
        };
        Ok(json_resp(self.shared, status, &v))
    }

    fn filter_path(&self) -> Option<FilterPath> {
        self.q("filter_path").and_then(FilterPath::parse)
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.state()
    }

    fn include_type_name(&self) -> Option<bool> {
        self.flag("include_type_name")
    }
}

fn no_handler(method: &Method, segs: &[&str]) -> EsError {
    EsError::new(
        400,
        "no_handler_found",
        format!(
            "no handler found for uri [/{}] and method [{method}]",
            segs.join("/")
        ),
    )
}

fn ack() -> Value {
    json!({"acknowledged": true})
}

async fn route(c: &Ctx<'_>, segs: &[&str]) -> Result<Resp, EsError> {
    let m = c.method.clone();
    let get = m == Method::GET || m == Method::HEAD;
    let write = m == Method::PUT || m == Method::POST;
    let composable = c.shared.dialect.composable_templates();
    match segs {
        [] if get => c.ok(200, root(c.shared)),
        ["_bulk"] if write => do_bulk(c, None, None),
        ["_search"] if get || m == Method::POST => search(c, "_all", None),
        ["_count"] if get || m == Method::POST => count(c, "_all", None),
        ["_mget"] if get || m == Method::POST => mget(c, None, None),
        ["_refresh"] if get || m == Method::POST => refresh(c, "_all"),
        ["_cluster", "health", ..] if get => health(c),
        ["_cluster", "settings"] if get => get_cluster_settings(c),
        ["_cluster", "settings"] if m == Method::PUT => put_cluster_settings(c),
        ["_cat", "indices", rest @ ..] if get => cat_indices(c, rest.first().copied()),
        ["_alias"] | ["_aliases"] if get => get_aliases(c, "_all", None),
        ["_alias", name] | ["_aliases", name] if get => get_aliases(c, "_all", Some(name)),
        ["_aliases"] if m == Method::POST => alias_actions(c),
        ["_mapping"] if get => get_mappings(c, "_all"),
        ["_settings"] if get => get_settings(c, "_all"),
        ["_template"] if get => get_legacy_templates(c, "*"),
        ["_template", name] if get => get_legacy_templates(c, name),
        ["_template", name] if write => put_legacy_template(c, name),
        ["_template", name] if m == Method::DELETE => delete_template(c, Kind::Legacy, name),
        ["_component_template"] if get && composable => get_composable(c, Kind::Component, "*"),
        ["_component_template", name] if get && composable => {
            get_composable(c, Kind::Component, name)
        }
        ["_component_template", name] if write && composable => put_component_template(c, name),
        ["_component_template", name] if m == Method::DELETE && composable => {
            delete_template(c, Kind::Component, name)
        }
        ["_data_stream", name] if m == Method::PUT && composable => {
            c.state().create_data_stream(name, &c.shared.dialect)?;
            c.ok(200, ack())
        }
        ["_data_stream", name] if get && composable => get_data_streams(c, name),
        ["_index_template"] if get && composable => get_composable(c, Kind::Index, "*"),
        ["_index_template", name] if get && composable => get_composable(c, Kind::Index, name),
        ["_index_template", name] if write && composable => put_index_template(c, name),
        ["_index_template", name] if m == Method::DELETE && composable => {
            delete_template(c, Kind::Index, name)
        }
        ["_snapshot"] if get => get_repositories(c, "*"),
        ["_snapshot", "_status"] if get => snapshot_status(c, None, None),
        ["_snapshot", repo] if get => get_repositories(c, repo),
        ["_snapshot", repo] if write => put_repository(c, repo),
        ["_snapshot", repo] if m == Method::DELETE => delete_repository(c, repo),
        ["_snapshot", repo, "_status"] if get => snapshot_status(c, Some(repo), None),
        ["_snapshot", repo, snap] if write => create_snapshot(c, repo, snap).await,
        ["_snapshot", repo, snap] if get => get_snapshots(c, repo, snap),
        ["_snapshot", repo, snap] if m == Method::DELETE => delete_snapshot(c, repo, snap),
        ["_snapshot", repo, snap, "_status"] if get => snapshot_status(c, Some(repo), Some(snap)),
        [idx] if !idx.starts_with('_') => match m {
            Method::PUT => create_index(c, idx),
            Method::GET | Method::HEAD => get_index(c, idx),
            Method::DELETE => delete_index(c, idx),
            _ => Err(no_handler(&m, segs)),
        },
        [idx, "_bulk"] if write => do_bulk(c, Some(idx), None),
        [idx, "_search"] if get || m == Method::POST => search(c, idx, None),
        [idx, "_count"] if get || m == Method::POST => count(c, idx, None),
        [idx, "_mget"] if get || m == Method::POST => mget(c, Some(idx), None),
        [idx, "_refresh"] if get || m == Method::POST => refresh(c, idx),
        [idx, "_mapping", ..] if get => get_mappings(c, idx),
        [idx, "_mapping"] if write => put_mapping(c, idx, None),
        [idx, "_mapping", t] if write => put_mapping(c, idx, Some(t)),
        [idx, "_settings", ..] if get => get_settings(c, idx),
        [idx, "_settings"] if write => put_settings(c, idx),
        [idx, "_alias"] | [idx, "_aliases"] if get => get_aliases(c, idx, None),
        [idx, "_alias", name] | [idx, "_aliases", name] if get => get_aliases(c, idx, Some(name)),
        [idx, "_alias", name] | [idx, "_aliases", name] if write => put_alias(c, idx, name),
        [idx, "_alias", name] | [idx, "_aliases", name] if m == Method::DELETE => {
            delete_alias(c, idx, name)
        }
        // typed search and count (ES ≤ 7): only indices whose mapping type is listed
        [idx, t, "_search"] if (get || m == Method::POST) && typed_search(c, t) => {
            search(c, idx, Some(t))
        }
        [idx, t, "_count"] if (get || m == Method::POST) && typed_search(c, t) => {
            count(c, idx, Some(t))
        }
        [idx, t, "_mget"] if (get || m == Method::POST) && typed_search(c, t) => {
            mget(c, Some(idx), Some(t))
        }
        [idx, "_doc"] if m == Method::POST => write_doc(c, idx, None, "", DocOp::Index),
        [idx, "_doc", id] => doc_endpoint(c, idx, None, id, segs),
        [idx, "_create", id] if write => write_doc(c, idx, None, id, DocOp::Create),
        [idx, "_update", id] if m == Method::POST => write_doc(c, idx, None, id, DocOp::Update),
        [idx, "_source", id] if get => get_doc(c, idx, None, id, true),
        // ES 6 style typed reads: `_all` stands for whatever type the index has
        [idx, "_all", id] if get && typed_ok(c) => get_doc(c, idx, None, id, false),
        [idx, "_all", id, "_source"] if get && typed_ok(c) => get_doc(c, idx, None, id, true),
        [idx, t, id, "_source"] if get && !t.starts_with('_') && typed_ok(c) => {
            get_doc(c, idx, Some(t), id, true)
        }
        [idx, t] if m == Method::POST && !t.starts_with('_') && typed_ok(c) => {
            write_doc(c, idx, Some(t), "", DocOp::Index)
        }
        [idx, t, "_bulk"] if write && typed_ok(c) => do_bulk(c, Some(idx), Some(t)),
        [idx, t, "_mapping"] if write && typed_ok(c) => put_mapping(c, idx, Some(t)),
        [idx, t, id] if !t.starts_with('_') && typed_ok(c) => {
            doc_endpoint(c, idx, Some(t), id, segs)
        }
        [idx, t, id, "_update"] if m == Method::POST && typed_ok(c) => {
            write_doc(c, idx, Some(t), id, DocOp::Update)
        }
        [idx, t, id, "_create"] if write && typed_ok(c) => {
            write_doc(c, idx, Some(t), id, DocOp::Create)
        }
        _ => Err(no_handler(&m, segs)),
    }
}

fn typed_ok(c: &Ctx<'_>) -> bool {
    c.shared.dialect.accepts_types()
}

/// `/{index}/{type}/_search` for a type name (or `_doc`, `_all`) on a dialect with types.
fn typed_search(c: &Ctx<'_>, t: &str) -> bool {
    typed_ok(c) && (!t.starts_with('_') || t == "_doc" || t == "_all")
}

fn root(shared: &Shared) -> Value {
    let d = &shared.dialect;
    let mut version = Map::new();
    if d.distribution == super::Distribution::OpenSearch {
        version.insert("distribution".into(), json!("opensearch"));
    }
    version.insert("number".into(), json!(d.number));
    if d.distribution == super::Distribution::Elasticsearch {
        version.insert("build_flavor".into(), json!("default"));
    }
    version.insert("build_type".into(), json!("tar"));
    version.insert(
        "build_hash".into(),
        json!("0000000000000000000000000000000000000000"),
    );
    version.insert("build_date".into(), json!("2024-01-01T00:00:00.000000Z"));
    version.insert("build_snapshot".into(), json!(false));
    version.insert("lucene_version".into(), json!(d.lucene_version()));
    version.insert(
        "minimum_wire_compatibility_version".into(),
        json!(d.minimum_wire_compatibility()),
    );
    version.insert(
        "minimum_index_compatibility_version".into(),
        json!(d.minimum_wire_compatibility()),
    );
    json!({
        "name": "testkit-node-0",
        "cluster_name": shared.config.cluster_name,
        "cluster_uuid": "testkit-cluster-uuid-0000",
        "version": Value::Object(version),
        "tagline": d.tagline(),
    })
}

// ---------- bulk and documents ----------

fn do_bulk(c: &Ctx<'_>, idx: Option<&str>, t: Option<&str>) -> Result<Resp, EsError> {
    c.shared
        .counters
        .bulk_requests
        .fetch_add(1, Ordering::Relaxed);
    let filter = c.filter_path();
    // an include-only filter is applied while the response is written (the fast path clients
    // use); one with exclusions goes through the general filter
    let (direct, general) = match filter {
        Some(f) if f.include_only() => (Some(f), None),
        other => (None, other),
    };
    let out = bulk::bulk(c.shared, idx, t, c.body.clone(), c.faults, direct.as_ref())?;
    if let Some(f) = general {
        let v: Value = serde_json::from_slice(&out)
            .map_err(|e| EsError::new(500, "exception", format!("bulk response: {e}")))?;
        return Ok(json_resp(c.shared, 200, &f.apply(v)));
    }
    Ok(respond(c.shared, 200, out))
}

#[derive(Clone, Copy, PartialEq)]
enum DocOp {
    Index,
    Create,
    Update,
    Delete,
}

fn doc_endpoint(
    c: &Ctx<'_>,
    idx: &str,
    t: Option<&str>,
    id: &str,
    segs: &[&str],
) -> Result<Resp, EsError> {
    match *c.method {
        Method::GET | Method::HEAD => get_doc(c, idx, t, id, false),
        Method::PUT | Method::POST => {
            let create = c.q("op_type") == Some("create");
            write_doc(
                c,
                idx,
                t,
                id,
                if create { DocOp::Create } else { DocOp::Index },
            )
        }
        Method::DELETE => write_doc(c, idx, t, id, DocOp::Delete),
        _ => Err(no_handler(c.method, segs)),
    }
}

fn parse_i64(c: &Ctx<'_>, k: &str) -> Result<Option<i64>, EsError> {
    c.q(k)
        .map(|v| {
            v.parse::<i64>()
                .map_err(|_| EsError::bad_request(format!("cannot parse [{k}]: [{v}]")))
        })
        .transpose()
}

fn write_doc(
    c: &Ctx<'_>,
    idx: &str,
    t: Option<&str>,
    id: &str,
    op: DocOp,
) -> Result<Resp, EsError> {
    let d = &c.shared.dialect;
    let type_name = match t {
        Some(t) => Some(t.to_string()),
        None if d.typed() => Some("_doc".to_string()),
        None => None,
    };
    let kind = match op {
        DocOp::Index => OpKind::Index,
        DocOp::Create => OpKind::Create,
        DocOp::Delete => OpKind::Delete,
        DocOp::Update => {
            let v = c.json()?;
            if v.get("script").is_some() {
                return Err(EsError::bad_request(
                    "scripted updates are not supported by the testkit server",
                ));
            }
            OpKind::Update {
                doc: v.get("doc").cloned(),
                upsert: v.get("upsert").cloned(),
                doc_as_upsert: v.get("doc_as_upsert").and_then(Value::as_bool) == Some(true),
                detect_noop: v.get("detect_noop").and_then(Value::as_bool) != Some(false),
            }
        }
    };
    if matches!(op, DocOp::Index | DocOp::Create | DocOp::Update)
        && c.faults.failing_ids.contains(id)
    {
        return Err(mapping_failure(id));
    }
    let mut source = Bytes::new();
    if matches!(op, DocOp::Index | DocOp::Create) {
        let trimmed = c.body.clone();
        let is_object = serde_json::from_slice::<&serde_json::value::RawValue>(&trimmed)
            .map(|r| r.get().starts_with('{'))
            .unwrap_or(false);
        if !is_object {
            return Err(EsError::new(
                400,
                "mapper_parsing_exception",
                "failed to parse: the document source must be a JSON object",
            ));
        }
        source = trimmed;
    }
    let external_gte = match c.q("version_type") {
        None | Some("internal") | Some("external") => false,
        Some("external_gte") => true,
        Some(other) => {
            return Err(EsError::bad_request(format!(
                "No version type match [{other}]"
            )))
        }
    };
    let version = if c.q("version_type").is_some() {
        parse_i64(c, "version")?
    } else {
        None
    };
    let wop = WriteOp {
        kind,
        id: id.to_string(),
        type_name: type_name.clone(),
        source,
        routing: c.q("routing").map(str::to_string),
        if_seq_no: parse_i64(c, "if_seq_no")?,
        if_primary_term: parse_i64(c, "if_primary_term")?,
        version,
        external_gte,
    };
    let mut index = idx.to_string();
    let (written, id) = {
        let mut st = c.state();
        let mut wop = wop;
        if wop.id.is_empty() {
            wop.id = st.next_auto_id();
        }
        let id = wop.id.clone();
        (apply_one(c.shared, &mut st, &mut index, wop)?, id)
    };
    c.ok(
        written.status,
        write_result(c, &index, type_name.as_deref(), &id, &written),
    )
}

fn write_result(c: &Ctx<'_>, index: &str, t: Option<&str>, id: &str, w: &Written) -> Value {
    let mut m = Map::new();
    m.insert("_index".into(), json!(index));
    if c.shared.dialect.accepts_types() {
        m.insert("_type".into(), json!(t.unwrap_or("_doc")));
    }
    m.insert("_id".into(), json!(id));
    m.insert("_version".into(), json!(w.version));
    m.insert("result".into(), json!(w.result));
    let shards = if w.result == "noop" {
        json!({"total": 0, "successful": 0, "failed": 0})
    } else {
        json!({"total": 2, "successful": 1, "failed": 0})
    };
    m.insert("_shards".into(), shards);
    m.insert("_seq_no".into(), json!(w.seq_no));
    m.insert("_primary_term".into(), json!(w.primary_term));
    Value::Object(m)
}

fn source_value(b: &Bytes) -> Value {
    serde_json::from_slice(b).unwrap_or(Value::Null)
}

/// The body of a GET for one document, and whether it was found. With `want_type`, a document
/// of an index whose mapping type differs is not found (as with typed GETs on ES ≤ 7).
fn doc_json(
    c: &Ctx<'_>,
    st: &State,
    idx: &str,
    want_type: Option<&str>,
    id: &str,
) -> Result<(Value, bool), EsError> {
    let targets = st.resolve(idx, false)?;
    if targets.len() != 1 {
        return Err(EsError::bad_request(format!(
            "alias [{idx}] has more than one index associated with it, can't execute a single index op"
        )));
    }
    let name = &targets[0];
    let index = &st.indices[name];
    let mut m = Map::new();
    m.insert("_index".into(), json!(name));
    let index_type = index.type_name.as_deref().unwrap_or("_doc");
    let type_matches = want_type.is_none_or(|t| t == index_type);
    if c.shared.dialect.accepts_types() {
        m.insert("_type".into(), json!(want_type.unwrap_or(index_type)));
    }
    m.insert("_id".into(), json!(id));
    match index.docs.get(id).filter(|_| type_matches) {
        Some(d) => {
            m.insert("_version".into(), json!(d.version));
            m.insert("_seq_no".into(), json!(d.seq_no));
            m.insert("_primary_term".into(), json!(d.primary_term));
            if let Some(r) = &d.routing {
                m.insert("_routing".into(), json!(r));
            }
            m.insert("found".into(), json!(true));
            m.insert("_source".into(), source_value(&d.source));
            Ok((Value::Object(m), true))
        }
        None => {
            m.insert("found".into(), json!(false));
            Ok((Value::Object(m), false))
        }
    }
}

fn get_doc(
    c: &Ctx<'_>,
    idx: &str,
    t: Option<&str>,
    id: &str,
    source_only: bool,
) -> Result<Resp, EsError> {
    let st = c.state();
    let (v, found) = doc_json(c, &st, idx, t, id)?;
    let status = if found { 200 } else { 404 };
    if source_only {
        if !found {
            return Err(EsError::new(
                404,
                "resource_not_found_exception",
                format!("Document not found [{idx}]/[{id}]"),
            ));
        }
        return c.ok(200, v["_source"].clone());
    }
    c.ok(status, v)
}

/// `_mget` by `docs` or `ids`; `t` (typed paths, ES ≤ 7) or a doc's `_type` restricts the
/// mapping type, `_all` meaning any.
fn mget(c: &Ctx<'_>, idx: Option<&str>, t: Option<&str>) -> Result<Resp, EsError> {
    let body = c.json()?;
    let id_of = |v: &Value| match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let mut wanted: Vec<(String, Option<String>, String)> = Vec::new();
    if let Some(docs) = body.get("docs").and_then(Value::as_array) {
        for (n, d) in docs.iter().enumerate() {
            let index = d
                .get("_index")
                .and_then(Value::as_str)
                .or(idx)
                .ok_or_else(|| validation(&format!("index is missing for doc {n}")))?;
            let id = d
                .get("_id")
                .map(id_of)
                .ok_or_else(|| validation(&format!("id is missing for doc {n}")))?;
            let doc_type = d.get("_type").and_then(Value::as_str).or(t);
            wanted.push((index.to_string(), doc_type.map(str::to_string), id));
        }
    } else if let Some(ids) = body.get("ids").and_then(Value::as_array) {
        let index = idx.ok_or_else(|| validation("index is missing for doc 0"))?;
        for id in ids {
            wanted.push((index.to_string(), t.map(str::to_string), id_of(id)));
        }
    } else {
        return Err(validation("no documents to get"));
    }
    let st = c.state();
    let docs: Vec<Value> = wanted
        .iter()
        .map(|(i, doc_type, id)| {
            let doc_type = doc_type.as_deref().filter(|t| *t != "_all");
            match doc_json(c, &st, i, doc_type, id) {
                Ok((v, _)) => v,
                Err(e) => json!({"_index": i, "_id": id, "error": e.cause()}),
            }
        })
        .collect();
    c.ok(200, json!({ "docs": docs }))
}

fn validation(msg: &str) -> EsError {
    EsError::new(
        400,
        "action_request_validation_exception",
        format!("Validation Failed: 1: {msg};"),
    )
}

// ---------- search ----------

const SEARCH_KEYS: &[&str] = &[
    "query",
    "size",
    "from",
    "sort",
    "seq_no_primary_term",
    "track_total_hits",
    "_source",
    "version",
    "timeout",
    "search_after",
    "stored_fields",
    "track_scores",
    "explain",
];

struct Hit<'a> {
    index: &'a str,
    id: &'a str,
    doc: &'a super::state::Doc,
    source: Value,
    sort: Vec<Option<Value>>,
}

fn shards_header() -> Value {
    json!({"total": 1, "successful": 1, "skipped": 0, "failed": 0})
}

fn matching<'a>(st: &'a State, targets: &'a [String], q: &Query, keys: &[SortKey]) -> Vec<Hit<'a>> {
    let mut hits = Vec::new();
    for name in targets {
        let Some(index) = st.indices.get(name) else {
            continue;
        };
        for (id, doc) in &index.docs {
            let source = source_value(&doc.source);
            if q.matches(id, &source) {
                let sort = keys
                    .iter()
                    .map(|k| query::sort_value(id, &source, k, doc.seq_no))
                    .collect();
                hits.push(Hit {
                    index: name,
                    id,
                    doc,
                    source,
                    sort,
                });
            }
        }
    }
    hits
}

/// Concrete indices of `idx` whose mapping type is in the comma-separated `types` (`_all` or
/// none: every index).
fn search_targets(
    c: &Ctx<'_>,
    st: &State,
    idx: &str,
    types: Option<&str>,
) -> Result<Vec<String>, EsError> {
    let mut targets = st.resolve(idx, c.flag("ignore_unavailable").unwrap_or(false))?;
    if let Some(types) = types.filter(|t| *t != "_all") {
        targets.retain(|n| {
            let t = st
                .indices
                .get(n)
                .and_then(|i| i.type_name.as_deref())
                .unwrap_or("_doc");
            types.split(',').any(|x| x == t)
        });
    }
    Ok(targets)
}

fn search(c: &Ctx<'_>, idx: &str, types: Option<&str>) -> Result<Resp, EsError> {
    let body = c.json()?;
    if let Some(m) = body.as_object() {
        for k in m.keys() {
            if !SEARCH_KEYS.contains(&k.as_str()) {
                return Err(EsError::parse(format!(
                    "Unknown key [{k}] in the search body (not supported by the testkit server)"
                )));
            }
        }
    }
    let q = match body.get("query") {
        Some(v) => Query::parse(v)?,
        None => Query::All,
    };
    let num = |k: &str, dflt: i64| -> Result<i64, EsError> {
        if let Some(v) = c.q(k) {
            return v
                .parse()
                .map_err(|_| EsError::bad_request(format!("cannot parse [{k}]")));
        }
        Ok(body.get(k).and_then(Value::as_i64).unwrap_or(dflt))
    };
    let size = num("size", 10)?.max(0) as usize;
    let from = num("from", 0)?.max(0) as usize;
    if from + size > 10_000 {
        return Err(EsError::new(
            400,
            "illegal_argument_exception",
            format!("Result window is too large, from + size must be less than or equal to: [10000] but was [{}].", from + size),
        ));
    }
    let keys = match body.get("sort") {
        Some(s) => query::parse_sort(s)?,
        None => Vec::new(),
    };
    let sorted = !keys.is_empty();
    let seq_no = c.flag("seq_no_primary_term").unwrap_or(false)
        || body.get("seq_no_primary_term").and_then(Value::as_bool) == Some(true);
    let with_version = body.get("version").and_then(Value::as_bool) == Some(true);
    let with_source = !matches!(body.get("_source"), Some(Value::Bool(false)));
    let st = c.state();
    let targets = search_targets(c, &st, idx, types)?;
    let mut hits = matching(&st, &targets, &q, &keys);
    if sorted {
        hits.sort_by(|a, b| query::order(&a.sort, &b.sort, &keys));
    }
    if let Some(after) = body.get("search_after").and_then(Value::as_array) {
        let after: Vec<Option<Value>> = after.iter().cloned().map(Some).collect();
        hits.retain(|h| query::order(&h.sort, &after, &keys) == std::cmp::Ordering::Greater);
    }
    let total = hits.len();
    let page: Vec<Value> = hits
        .iter()
        .skip(from)
        .take(size)
        .map(|h| {
            let mut m = Map::new();
            m.insert("_index".into(), json!(h.index));
            if c.shared.dialect.accepts_types() {
                let t = st.indices[h.index].type_name.as_deref().unwrap_or("_doc");
                m.insert("_type".into(), json!(t));
            }
            m.insert("_id".into(), json!(h.id));
            if with_version {
                m.insert("_version".into(), json!(h.doc.version));
            }
            if seq_no {
                m.insert("_seq_no".into(), json!(h.doc.seq_no));
                m.insert("_primary_term".into(), json!(h.doc.primary_term));
            }
            m.insert(
                "_score".into(),
                if sorted { Value::Null } else { json!(1.0) },
            );
            if let Some(r) = &h.doc.routing {
                m.insert("_routing".into(), json!(r));
            }
            if with_source {
                m.insert("_source".into(), h.source.clone());
            }
            if sorted {
                m.insert(
                    "sort".into(),
                    Value::Array(
                        h.sort
                            .iter()
                            .map(|v| v.clone().unwrap_or(Value::Null))
                            .collect(),
                    ),
                );
            }
            Value::Object(m)
        })
        .collect();
    let mut hits_obj = Map::new();
    if c.shared.dialect.typed() {
        hits_obj.insert("total".into(), json!(total));
    } else {
        let track = body.get("track_total_hits").cloned().or_else(|| {
            c.q("track_total_hits")
                .map(|v| v.parse().unwrap_or(json!(v)))
        });
        match track {
            Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => {
                hits_obj.insert("total".into(), json!({"value": total, "relation": "eq"}));
            }
            other => {
                let limit = other.and_then(|v| v.as_u64()).unwrap_or(10_000) as usize;
                let (value, rel) = if total > limit {
                    (limit, "gte")
                } else {
                    (total, "eq")
                };
                hits_obj.insert("total".into(), json!({"value": value, "relation": rel}));
            }
        }
    }
    hits_obj.insert(
        "max_score".into(),
        if sorted || total == 0 {
            Value::Null
        } else {
            json!(1.0)
        },
    );
    hits_obj.insert("hits".into(), Value::Array(page));
    c.ok(
        200,
        json!({
            "took": 1,
            "timed_out": false,
            "_shards": shards_header(),
            "hits": Value::Object(hits_obj),
        }),
    )
}

fn count(c: &Ctx<'_>, idx: &str, types: Option<&str>) -> Result<Resp, EsError> {
    let body = c.json()?;
    let q = match body.get("query") {
        Some(v) => Query::parse(v)?,
        None => Query::All,
    };
    let st = c.state();
    let targets = search_targets(c, &st, idx, types)?;
    let mut n: u64 = matching(&st, &targets, &q, &[]).len() as u64;
    if matches!(q, Query::All) {
        n += targets
            .iter()
            .filter_map(|t| st.indices.get(t))
            .map(|i| i.discarded)
            .sum::<u64>();
    }
    c.ok(200, json!({"count": n, "_shards": shards_header()}))
}

fn refresh(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let n = c
        .state()
        .resolve(idx, c.flag("ignore_unavailable").unwrap_or(false))?
        .len();
    c.ok(
        200,
        json!({"_shards": {"total": n * 2, "successful": n, "failed": 0}}),
    )
}

fn health(c: &Ctx<'_>) -> Result<Resp, EsError> {
    let n = c.state().indices.len();
    c.ok(
        200,
        json!({
            "cluster_name": c.shared.config.cluster_name,
            "status": "green",
            "timed_out": false,
            "number_of_nodes": 1,
            "number_of_data_nodes": 1,
            "active_primary_shards": n,
            "active_shards": n,
            "relocating_shards": 0,
            "initializing_shards": 0,
            "unassigned_shards": 0,
            "delayed_unassigned_shards": 0,
            "number_of_pending_tasks": 0,
            "number_of_in_flight_fetch": 0,
            "task_max_waiting_in_queue_millis": 0,
            "active_shards_percent_as_number": 100.0
        }),
    )
}

/// Cluster-level defaults reported by `GET _cluster/settings?include_defaults=true`.
fn cluster_defaults(c: &Ctx<'_>) -> BTreeMap<String, Value> {
    let cfg = &c.shared.config;
    let size = |b: usize| {
        let units = [(1usize << 30, "gb"), (1 << 20, "mb"), (1 << 10, "kb")];
        units
            .iter()
            .find(|(u, _)| b >= *u && b.is_multiple_of(*u))
            .map_or_else(|| format!("{b}b"), |(u, s)| format!("{}{s}", b / u))
    };
    [
        ("cluster.name", cfg.cluster_name.clone()),
        ("http.compression", cfg.http_compression.to_string()),
        ("http.compression_level", "3".to_string()),
        ("http.max_content_length", size(cfg.max_content_length)),
        ("cluster.max_shards_per_node", "1000".to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), Value::String(v)))
    .collect()
}

fn cluster_settings_json(c: &Ctx<'_>, flat: &BTreeMap<String, Value>) -> Value {
    if c.flag("flat_settings") == Some(true) {
        Value::Object(flat.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    } else {
        nest_settings(flat)
    }
}

fn get_cluster_settings(c: &Ctx<'_>) -> Result<Resp, EsError> {
    let st = c.state();
    let mut out = Map::new();
    out.insert(
        "persistent".into(),
        cluster_settings_json(c, &st.persistent_settings),
    );
    out.insert(
        "transient".into(),
        cluster_settings_json(c, &st.transient_settings),
    );
    if c.flag("include_defaults") == Some(true) {
        let mut defaults = cluster_defaults(c);
        defaults.retain(|k, _| {
            !st.persistent_settings.contains_key(k) && !st.transient_settings.contains_key(k)
        });
        out.insert("defaults".into(), cluster_settings_json(c, &defaults));
    }
    c.ok(200, Value::Object(out))
}

/// Node-level settings that `PUT _cluster/settings` refuses.
fn static_cluster_setting(k: &str) -> bool {
    ["http.", "transport.", "path.", "node.", "network."]
        .iter()
        .any(|p| k.starts_with(p))
        || k == "cluster.name"
}

fn put_cluster_settings(c: &Ctx<'_>) -> Result<Resp, EsError> {
    let body = c.json()?;
    let Some(m) = body.as_object() else {
        return Err(validation("no settings to update"));
    };
    let mut updates = Vec::new();
    for (k, v) in m {
        if k != "persistent" && k != "transient" {
            return Err(EsError::parse(format!(
                "request body contains unknown key [{k}]"
            )));
        }
        // `null` values remove keys: keep them as nulls for the update
        let mut flat = BTreeMap::new();
        collect_cluster_updates("", v, &mut flat)?;
        if let Some(bad) = flat.keys().find(|k| static_cluster_setting(k)) {
            return Err(EsError::bad_request(format!(
                "{k} setting [{bad}], not dynamically updateable"
            )));
        }
        updates.push((k.clone(), flat));
    }
    if updates.iter().all(|(_, f)| f.is_empty()) {
        return Err(validation("no settings to update"));
    }
    let mut st = c.state();
    let mut out = Map::new();
    out.insert("acknowledged".into(), json!(true));
    out.insert("persistent".into(), json!({}));
    out.insert("transient".into(), json!({}));
    for (scope, flat) in updates {
        let target = if scope == "persistent" {
            &mut st.persistent_settings
        } else {
            &mut st.transient_settings
        };
        let mut applied = BTreeMap::new();
        for (k, v) in flat {
            if v.is_null() {
                target.remove(&k);
            } else {
                target.insert(k.clone(), v.clone());
                applied.insert(k, v);
            }
        }
        out.insert(scope, cluster_settings_json(c, &applied));
    }
    c.ok(200, Value::Object(out))
}

/// Flattens one `persistent`/`transient` object, keeping `null` leaves (they remove a key).
fn collect_cluster_updates(
    prefix: &str,
    v: &Value,
    out: &mut BTreeMap<String, Value>,
) -> Result<(), EsError> {
    match v {
        Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                collect_cluster_updates(&key, v, out)?;
            }
        }
        _ if prefix.is_empty() => {
            return Err(EsError::new(
                400,
                "settings_exception",
                "Failed to load settings: expected an object",
            ))
        }
        Value::Null => {
            out.insert(prefix.to_string(), Value::Null);
        }
        Value::String(s) => {
            out.insert(prefix.to_string(), Value::String(s.clone()));
        }
        Value::Array(a) => {
            let items = a
                .iter()
                .map(|x| match x {
                    Value::String(s) => Value::String(s.clone()),
                    other => Value::String(other.to_string()),
                })
                .collect();
            out.insert(prefix.to_string(), Value::Array(items));
        }
        other => {
            out.insert(prefix.to_string(), Value::String(other.to_string()));
        }
    }
    Ok(())
}

fn cat_indices(c: &Ctx<'_>, idx: Option<&str>) -> Result<Resp, EsError> {
    let st = c.state();
    let targets = st.resolve(idx.unwrap_or("_all"), false)?;
    let rows: Vec<Value> = targets
        .iter()
        .map(|n| {
            let i = &st.indices[n];
            let setting = |k: &str| i.settings.get(k).and_then(Value::as_str).unwrap_or("1").to_string();
            json!({
                "health": "green", "status": "open", "index": n, "uuid": i.uuid,
                "pri": setting("index.number_of_shards"), "rep": setting("index.number_of_replicas"),
                "docs.count": i.doc_count().to_string(), "docs.deleted": "0",
            })
        })
        .collect();
    if c.q("format") == Some("json") {
        return c.ok(200, Value::Array(rows));
    }
    let mut text = String::new();
    for r in rows {
        text.push_str(&format!(
            "green open {} {} {} {} {} 0\n",
            r["index"].as_str().unwrap_or(""),
            r["uuid"].as_str().unwrap_or(""),
            r["pri"].as_str().unwrap_or(""),
            r["rep"].as_str().unwrap_or(""),
            r["docs.count"].as_str().unwrap_or("")
        ));
    }
    let mut resp = respond(c.shared, 200, text.into_bytes());
    resp.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=UTF-8"),
    );
    Ok(resp)
}

// ---------- indices ----------

fn get_data_streams(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let st = c.state();
    let streams: Vec<Value> = st
        .data_streams
        .iter()
        .filter(|(n, _)| name.split(',').any(|p| glob(p, n)))
        .map(|(n, ds)| {
            let indices: Vec<Value> = ds
                .indices
                .iter()
                .map(|i| json!({"index_name": i, "index_uuid": st.indices.get(i).map(|x| x.uuid.clone())}))
                .collect();
            json!({"name": n, "timestamp_field": {"name": ds.timestamp_field}, "indices": indices,
                   "generation": ds.indices.len(), "status": "GREEN", "template": ds.template})
        })
        .collect();
    if streams.is_empty() && !name.contains('*') {
        return Err(EsError::new(
            404,
            "index_not_found_exception",
            format!("no such index [{name}]"),
        ));
    }
    c.ok(200, json!({"data_streams": streams}))
}

fn create_index(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    c.state()
        .create_index(idx, &body, &c.shared.dialect, c.include_type_name())?;
    c.ok(
        200,
        json!({"acknowledged": true, "shards_acknowledged": true, "index": idx}),
    )
}

fn settings_json(c: &Ctx<'_>, flat: &BTreeMap<String, Value>) -> Value {
    if c.flag("flat_settings") == Some(true) {
        Value::Object(flat.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    } else {
        nest_settings(flat)
    }
}

fn aliases_json(a: &BTreeMap<String, Value>) -> Value {
    Value::Object(a.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

fn get_index(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let st = c.state();
    let targets = st.resolve(idx, false)?;
    let mut out = Map::new();
    for n in &targets {
        let i = &st.indices[n];
        out.insert(
            n.clone(),
            json!({
                "aliases": aliases_json(&i.aliases),
                "mappings": i.mappings,
                "settings": settings_json(c, &i.settings),
            }),
        );
    }
    if targets.is_empty() && !idx.contains('*') && idx != "_all" {
        return Err(EsError::index_not_found(idx));
    }
    c.ok(200, Value::Object(out))
}

fn delete_index(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let mut st = c.state();
    let mut targets = Vec::new();
    for part in idx.split(',') {
        if part.contains('*') || part == "_all" {
            targets.extend(st.resolve(part, true)?);
        } else if st.indices.contains_key(part) {
            targets.push(part.to_string());
        } else {
            return Err(EsError::index_not_found(part));
        }
    }
    for t in targets {
        st.indices.remove(&t);
    }
    c.ok(200, ack())
}

fn get_mappings(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let st = c.state();
    let out: Map<String, Value> = st
        .resolve(idx, false)?
        .into_iter()
        .map(|n| {
            let m = st.indices[&n].mappings.clone();
            (n, json!({ "mappings": m }))
        })
        .collect();
    c.ok(200, Value::Object(out))
}

fn put_mapping(c: &Ctx<'_>, idx: &str, t: Option<&str>) -> Result<Resp, EsError> {
    let body = c.json()?;
    let d = &c.shared.dialect;
    let mut st = c.state();
    let targets = st.resolve(idx, false)?;
    for n in &targets {
        let index = st.indices.get_mut(n).expect("resolved");
        let body = match (d.typed(), t) {
            (true, Some(t)) if body.get(t).is_none() => json!({ t: body }),
            (true, None) => match &index.type_name {
                Some(t) if body.get(t).is_none() => json!({ t: body }),
                _ => body.clone(),
            },
            _ => body.clone(),
        };
        let mut merged = index.mappings.clone();
        merge(&mut merged, &body);
        let (checked, type_name) = check_mappings(n, &merged, d, None)?;
        index.mappings = checked;
        if type_name.is_some() {
            index.type_name = type_name;
        }
    }
    c.ok(200, ack())
}

fn get_settings(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let st = c.state();
    let out: Map<String, Value> = st
        .resolve(idx, false)?
        .into_iter()
        .map(|n| {
            let s = settings_json(c, &st.indices[&n].settings);
            (n, json!({ "settings": s }))
        })
        .collect();
    c.ok(200, Value::Object(out))
}

fn put_settings(c: &Ctx<'_>, idx: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    let flat = flatten_settings(body.get("settings").unwrap_or(&body))?;
    check_settings(&flat, &c.shared.dialect)?;
    let static_keys: Vec<&String> = flat
        .keys()
        .filter(|k| {
            [
                "index.number_of_shards",
                "index.codec",
                "index.number_of_routing_shards",
            ]
            .contains(&k.as_str())
        })
        .collect();
    if !static_keys.is_empty() {
        return Err(EsError::bad_request(format!(
            "Can't update non dynamic settings [{static_keys:?}] for open indices"
        )));
    }
    let mut st = c.state();
    for n in st.resolve(idx, false)? {
        st.indices
            .get_mut(&n)
            .expect("resolved")
            .settings
            .extend(flat.clone());
    }
    c.ok(200, ack())
}

// ---------- aliases ----------

fn get_aliases(c: &Ctx<'_>, idx: &str, name: Option<&str>) -> Result<Resp, EsError> {
    let st = c.state();
    let targets = st.resolve(idx, false)?;
    let mut out = Map::new();
    for n in targets {
        let i = &st.indices[&n];
        let selected: BTreeMap<String, Value> = i
            .aliases
            .iter()
            .filter(|(a, _)| name.is_none_or(|p| p.split(',').any(|p| glob(p, a))))
            .map(|(a, v)| (a.clone(), v.clone()))
            .collect();
        if name.is_some() && selected.is_empty() {
            continue;
        }
        out.insert(n, json!({ "aliases": aliases_json(&selected) }));
    }
    if let Some(name) = name {
        if out.is_empty() {
            return c.ok(
                404,
                json!({"error": format!("alias [{name}] missing"), "status": 404}),
            );
        }
    }
    c.ok(200, Value::Object(out))
}

fn alias_body(v: &Value) -> Value {
    let mut m = Map::new();
    for k in [
        "filter",
        "routing",
        "index_routing",
        "search_routing",
        "is_write_index",
        "is_hidden",
    ] {
        if let Some(x) = v.get(k) {
            m.insert(k.to_string(), x.clone());
        }
    }
    if let Some(r) = m.remove("routing") {
        m.insert("index_routing".into(), r.clone());
        m.insert("search_routing".into(), r);
    }
    Value::Object(m)
}

fn names(v: &Value, one: &str, many: &str) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(s) = v.get(one).and_then(Value::as_str) {
        out.push(s.to_string());
    }
    if let Some(a) = v.get(many).and_then(Value::as_array) {
        out.extend(a.iter().filter_map(Value::as_str).map(str::to_string));
    }
    out
}

fn alias_actions(c: &Ctx<'_>) -> Result<Resp, EsError> {
    let body = c.json()?;
    let actions = body
        .get("actions")
        .and_then(Value::as_array)
        .ok_or_else(|| validation("no actions specified"))?;
    let mut st = c.state();
    for a in actions {
        let (kind, spec) = a
            .as_object()
            .and_then(|m| m.iter().next())
            .ok_or_else(|| EsError::parse("malformed alias action"))?;
        let mut indices = Vec::new();
        for i in names(spec, "index", "indices") {
            indices.extend(st.resolve(&i, false)?);
        }
        match kind.as_str() {
            "add" => {
                for alias in names(spec, "alias", "aliases") {
                    for i in &indices {
                        st.indices
                            .get_mut(i)
                            .expect("resolved")
                            .aliases
                            .insert(alias.clone(), alias_body(spec));
                    }
                }
            }
            "remove" => {
                for alias in names(spec, "alias", "aliases") {
                    let mut found = false;
                    for i in &indices {
                        found |= st
                            .indices
                            .get_mut(i)
                            .expect("resolved")
                            .aliases
                            .remove(&alias)
                            .is_some();
                    }
                    if !found {
                        return Err(EsError::new(
                            404,
                            "aliases_not_found_exception",
                            format!("aliases [{alias}] missing"),
                        ));
                    }
                }
            }
            "remove_index" => {
                for i in indices {
                    st.indices.remove(&i);
                }
            }
            other => return Err(EsError::parse(format!("unknown alias action [{other}]"))),
        }
    }
    c.ok(200, ack())
}

fn put_alias(c: &Ctx<'_>, idx: &str, name: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    let mut st = c.state();
    for i in st.resolve(idx, false)? {
        st.indices
            .get_mut(&i)
            .expect("resolved")
            .aliases
            .insert(name.to_string(), alias_body(&body));
    }
    c.ok(200, ack())
}

fn delete_alias(c: &Ctx<'_>, idx: &str, name: &str) -> Result<Resp, EsError> {
    let mut st = c.state();
    let mut found = false;
    for i in st.resolve(idx, false)? {
        found |= st
            .indices
            .get_mut(&i)
            .expect("resolved")
            .aliases
            .remove(name)
            .is_some();
    }
    if !found {
        return Err(EsError::new(
            404,
            "aliases_not_found_exception",
            format!("aliases [{name}] missing"),
        ));
    }
    c.ok(200, ack())
}

// ---------- templates ----------

#[derive(Clone, Copy)]
enum Kind {
    Legacy,
    Component,
    Index,
}

fn table(st: &mut State, k: Kind) -> &mut BTreeMap<String, Value> {
    match k {
        Kind::Legacy => &mut st.legacy_templates,
        Kind::Component => &mut st.component_templates,
        Kind::Index => &mut st.index_templates,
    }
}

fn select<'a>(t: &'a BTreeMap<String, Value>, name: &str) -> Vec<(&'a String, &'a Value)> {
    t.iter()
        .filter(|(n, _)| name.split(',').any(|p| glob(p, n)))
        .collect()
}

fn normalized_settings(v: Option<&Value>, d: &Dialect) -> Result<Value, EsError> {
    let flat = flatten_settings(v.unwrap_or(&Value::Null))?;
    check_settings(&flat, d)?;
    Ok(nest_settings(&flat))
}

fn put_legacy_template(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    let d = &c.shared.dialect;
    let patterns = match body.get("index_patterns").or_else(|| body.get("template")) {
        Some(Value::String(s)) => vec![Value::String(s.clone())],
        Some(Value::Array(a)) => a.clone(),
        _ => return Err(validation("index patterns are missing")),
    };
    let mut t = Map::new();
    t.insert(
        "order".into(),
        json!(body.get("order").and_then(Value::as_i64).unwrap_or(0)),
    );
    if let Some(v) = body.get("version") {
        t.insert("version".into(), v.clone());
    }
    t.insert("index_patterns".into(), Value::Array(patterns));
    t.insert(
        "settings".into(),
        normalized_settings(body.get("settings"), d)?,
    );
    let mappings = match body.get("mappings") {
        Some(m) => check_mappings(name, m, d, c.include_type_name())?.0,
        None => json!({}),
    };
    t.insert("mappings".into(), mappings);
    t.insert(
        "aliases".into(),
        body.get("aliases").cloned().unwrap_or(json!({})),
    );
    let mut st = c.state();
    if c.flag("create") == Some(true) && st.legacy_templates.contains_key(name) {
        return Err(EsError::bad_request(format!(
            "index_template [{name}] already exists"
        )));
    }
    st.legacy_templates
        .insert(name.to_string(), Value::Object(t));
    c.ok(200, ack())
}

fn get_legacy_templates(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let st = c.state();
    let out: Map<String, Value> = select(&st.legacy_templates, name)
        .into_iter()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    let status = if out.is_empty() && !name.contains('*') {
        404
    } else {
        200
    };
    c.ok(status, Value::Object(out))
}

fn checked_template_part(c: &Ctx<'_>, name: &str, body: &Value) -> Result<Value, EsError> {
    let mut body = body.clone();
    if let Some(tpl) = body.get_mut("template") {
        if !tpl.is_object() {
            return Err(EsError::parse("[template] must be an object"));
        }
        if tpl.get("settings").is_some() {
            tpl["settings"] = normalized_settings(tpl.get("settings"), &c.shared.dialect)?;
        }
        if let Some(m) = tpl.get("mappings") {
            tpl["mappings"] = check_mappings(name, m, &c.shared.dialect, None)?.0;
        }
    }
    Ok(body)
}

fn put_component_template(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    if !body.get("template").is_some_and(Value::is_object) {
        return Err(validation("template is missing"));
    }
    let body = checked_template_part(c, name, &body)?;
    let mut st = c.state();
    if c.flag("create") == Some(true) && st.component_templates.contains_key(name) {
        return Err(EsError::bad_request(format!(
            "component template [{name}] already exists"
        )));
    }
    st.component_templates.insert(name.to_string(), body);
    c.ok(200, ack())
}

fn put_index_template(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    if body.get("index_patterns").is_none() {
        return Err(validation("index patterns are missing"));
    }
    let body = checked_template_part(c, name, &body)?;
    let mut st = c.state();
    let missing: Vec<String> = body
        .get("composed_of")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|n| !st.component_templates.contains_key(*n))
        .map(str::to_string)
        .collect();
    if !missing.is_empty() {
        return Err(EsError::new(
            400,
            "invalid_index_template_exception",
            format!(
                "index_template [{name}] invalid, cause [index template [{name}] specifies component templates {missing:?} that do not exist]"
            ),
        ));
    }
    if c.flag("create") == Some(true) && st.index_templates.contains_key(name) {
        return Err(EsError::bad_request(format!(
            "index template [{name}] already exists"
        )));
    }
    st.index_templates.insert(name.to_string(), body);
    c.ok(200, ack())
}

fn get_composable(c: &Ctx<'_>, k: Kind, name: &str) -> Result<Resp, EsError> {
    let mut st = c.state();
    let (list_key, item_key, what) = match k {
        Kind::Component => (
            "component_templates",
            "component_template",
            "component template",
        ),
        _ => ("index_templates", "index_template", "index template"),
    };
    let items: Vec<Value> = select(table(&mut st, k), name)
        .into_iter()
        .map(|(n, v)| json!({"name": n, item_key: v}))
        .collect();
    if items.is_empty() && !name.contains('*') {
        return Err(EsError::new(
            404,
            "resource_not_found_exception",
            format!("{what} matching [{name}] not found"),
        ));
    }
    c.ok(200, json!({ list_key: items }))
}

fn delete_template(c: &Ctx<'_>, k: Kind, name: &str) -> Result<Resp, EsError> {
    let mut st = c.state();
    if let Kind::Component = k {
        let users: Vec<String> = st
            .index_templates
            .iter()
            .filter(|(_, t)| {
                t.get("composed_of")
                    .and_then(Value::as_array)
                    .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(name)))
            })
            .map(|(n, _)| n.clone())
            .collect();
        if !users.is_empty() {
            return Err(EsError::bad_request(format!(
                "component templates [{name}] cannot be removed as they are still in use by index templates {users:?}"
            )));
        }
    }
    if table(&mut st, k).remove(name).is_none() {
        let kind = match k {
            Kind::Legacy => "index_template_missing_exception",
            _ => "resource_not_found_exception",
        };
        return Err(EsError::new(
            404,
            kind,
            format!("index_template [{name}] missing"),
        ));
    }
    c.ok(200, ack())
}

// ---------- snapshots ----------

fn repo_missing(repo: &str) -> EsError {
    EsError::new(
        404,
        "repository_missing_exception",
        format!("[{repo}] missing"),
    )
}

fn put_repository(c: &Ctx<'_>, repo: &str) -> Result<Resp, EsError> {
    let body = c.json()?;
    let kind = body.get("type").and_then(Value::as_str).unwrap_or("");
    if kind != "fs" {
        return Err(EsError::new(
            500,
            "repository_exception",
            format!(
                "[{repo}] repository type [{kind}] does not exist (the testkit server supports fs)"
            ),
        ));
    }
    let location = body
        .pointer("/settings/location")
        .and_then(Value::as_str)
        .ok_or_else(|| {
            EsError::new(
                500,
                "repository_exception",
                format!("[{repo}] missing location"),
            )
        })?;
    std::fs::create_dir_all(location).map_err(|e| {
        EsError::new(
            500,
            "repository_verification_exception",
            format!("[{repo}] cannot create location [{location}]: {e}"),
        )
    })?;
    let settings = body.get("settings").cloned().unwrap_or(json!({}));
    let settings = Value::Object(
        settings
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| {
                (
                    k.clone(),
                    match v {
                        Value::String(s) => Value::String(s.clone()),
                        other => Value::String(other.to_string()),
                    },
                )
            })
            .collect(),
    );
    c.state().repositories.insert(
        repo.to_string(),
        json!({"type": "fs", "settings": settings}),
    );
    c.ok(200, ack())
}

fn get_repositories(c: &Ctx<'_>, name: &str) -> Result<Resp, EsError> {
    let st = c.state();
    let out: Map<String, Value> = select(&st.repositories, name)
        .into_iter()
        .map(|(n, v)| (n.clone(), v.clone()))
        .collect();
    if out.is_empty() && !name.contains('*') && name != "_all" {
        return Err(repo_missing(name));
    }
    c.ok(200, Value::Object(out))
}

fn delete_repository(c: &Ctx<'_>, repo: &str) -> Result<Resp, EsError> {
    if c.state().repositories.remove(repo).is_none() {
        return Err(repo_missing(repo));
    }
    c.ok(200, ack())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Index names in a repository's latest `index-N` (plain JSON in ES ≥ 5); empty if unreadable.
fn repository_indices(root: &Path) -> Vec<String> {
    let generation = std::fs::read(root.join("index.latest"))
        .ok()
        .filter(|b| b.len() == 8)
        .map(|b| i64::from_be_bytes(b.try_into().unwrap_or([0; 8])));
    let Some(generation) = generation else {
        return Vec::new();
    };
    let Ok(bytes) = std::fs::read(root.join(format!("index-{generation}"))) else {
        return Vec::new();
    };
    serde_json::from_slice::<Value>(&bytes)
        .ok()
        .and_then(|v| {
            v.get("indices")
                .and_then(Value::as_object)
                .map(|m| m.keys().cloned().collect())
        })
        .unwrap_or_default()
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for e in std::fs::read_dir(from)? {
        let e = e?;
        let target = to.join(e.file_name());
        if e.file_type()?.is_dir() {
            copy_tree(&e.path(), &target)?;
        } else {
            std::fs::copy(e.path(), &target)?;
        }
    }
    Ok(())
}

async fn create_snapshot(c: &Ctx<'_>, repo: &str, snap: &str) -> Result<Resp, EsError> {
    let location = {
        let st = c.state();
        let r = st
            .repositories
            .get(repo)
            .ok_or_else(|| repo_missing(repo))?;
        if st
            .snapshots
            .contains_key(&(repo.to_string(), snap.to_string()))
        {
            return Err(EsError::new(
                400,
                "invalid_snapshot_name_exception",
                format!("[{repo}:{snap}] Invalid snapshot name [{snap}], snapshot with the same name already exists"),
            ));
        }
        PathBuf::from(r["settings"]["location"].as_str().unwrap_or_default())
    };
    let source = c.shared.config.snapshot_source.clone().ok_or_else(|| {
        EsError::new(
            500,
            "snapshot_creation_exception",
            format!("[{repo}:{snap}] the testkit server was started without a snapshot_source"),
        )
    })?;
    let wait = c.flag("wait_for_completion").unwrap_or(false);
    let indices = repository_indices(&source);
    let record = SnapshotRecord {
        uuid: c.state().next_uuid(),
        indices,
        start_ms: now_ms(),
        end_ms: None,
        failure: None,
    };
    let key = (repo.to_string(), snap.to_string());
    c.state().snapshots.insert(key.clone(), record);
    let shared = Arc::clone(c.shared);
    let delay = shared.config.snapshot_duration;
    let job = async move {
        let copied = tokio::task::spawn_blocking(move || copy_tree(&source, &location)).await;
        if !wait {
            tokio::time::sleep(delay).await;
        }
        let mut st = shared.state();
        if let Some(r) = st.snapshots.get_mut(&key) {
            r.end_ms = Some(now_ms());
            match copied {
                Ok(Ok(())) => {}
                Ok(Err(e)) => r.failure = Some(format!("copying the repository failed: {e}")),
                Err(e) => r.failure = Some(format!("copy task failed: {e}")),
            }
        }
    };
    if wait {
        job.await;
        let st = c.state();
        match st.snapshots.get(&(repo.to_string(), snap.to_string())) {
            Some(r) => c.ok(200, json!({ "snapshot": snapshot_info(c, repo, snap, r) })),
            None => Err(EsError::new(
                404,
                "snapshot_missing_exception",
                format!("[{repo}:{snap}] was deleted while it was being created"),
            )),
        }
    } else {
        tokio::spawn(job);
        c.ok(200, json!({"accepted": true}))
    }
}

fn snapshot_state(r: &SnapshotRecord) -> &'static str {
    match (&r.failure, r.end_ms) {
        (Some(_), _) => "FAILED",
        (None, Some(_)) => "SUCCESS",
        (None, None) => "IN_PROGRESS",
    }
}

fn snapshot_info(c: &Ctx<'_>, repo: &str, snap: &str, r: &SnapshotRecord) -> Value {
    let n = r.indices.len();
    let done = r.end_ms.is_some() && r.failure.is_none();
    let mut v = json!({
        "snapshot": snap,
        "uuid": r.uuid,
        "repository": repo,
        "version_id": c.shared.dialect.version_id(),
        "version": c.shared.dialect.number,
        "indices": r.indices,
        "data_streams": [],
        "include_global_state": true,
        "state": snapshot_state(r),
        "start_time_in_millis": r.start_ms,
        "failures": r.failure.iter().collect::<Vec<_>>(),
        "shards": {"total": n, "failed": if r.failure.is_some() { n } else { 0 }, "successful": if done { n } else { 0 }},
    });
    if let Some(end) = r.end_ms {
        v["end_time_in_millis"] = json!(end);
        v["duration_in_millis"] = json!(end - r.start_ms);
    }
    v
}

fn get_snapshots(c: &Ctx<'_>, repo: &str, snap: &str) -> Result<Resp, EsError> {
    let st = c.state();
    if !st.repositories.contains_key(repo) {
        return Err(repo_missing(repo));
    }
    let list: Vec<Value> = st
        .snapshots
        .iter()
        .filter(|((r, s), _)| r == repo && (snap == "_all" || snap.split(',').any(|p| glob(p, s))))
        .map(|((r, s), rec)| snapshot_info(c, r, s, rec))
        .collect();
    if list.is_empty() && snap != "_all" && !snap.contains('*') {
        return Err(EsError::new(
            404,
            "snapshot_missing_exception",
            format!("[{repo}:{snap}] is missing"),
        ));
    }
    c.ok(200, json!({ "snapshots": list }))
}

fn delete_snapshot(c: &Ctx<'_>, repo: &str, snap: &str) -> Result<Resp, EsError> {
    let mut st = c.state();
    if st
        .snapshots
        .remove(&(repo.to_string(), snap.to_string()))
        .is_none()
    {
        return Err(EsError::new(
            404,
            "snapshot_missing_exception",
            format!("[{repo}:{snap}] is missing"),
        ));
    }
    c.ok(200, ack())
}

fn snapshot_status(c: &Ctx<'_>, repo: Option<&str>, snap: Option<&str>) -> Result<Resp, EsError> {
    let st = c.state();
    if let Some(repo) = repo {
        if !st.repositories.contains_key(repo) {
            return Err(repo_missing(repo));
        }
    }
    let list: Vec<Value> = st
        .snapshots
        .iter()
        .filter(|((r, s), rec)| {
            repo.is_none_or(|x| x == r)
                && match snap {
                    Some(x) => x.split(',').any(|p| p == s),
                    None => rec.end_ms.is_none(),
                }
        })
        .map(|((r, s), rec)| {
            let n = rec.indices.len();
            let done = usize::from(rec.end_ms.is_some() && rec.failure.is_none()) * n;
            json!({
                "snapshot": s,
                "repository": r,
                "uuid": rec.uuid,
                "state": snapshot_state(rec),
                "include_global_state": true,
                "shards_stats": {"initializing": 0, "started": n - done, "finalizing": 0, "done": done, "failed": 0, "total": n},
                "stats": {"start_time_in_millis": rec.start_ms, "time_in_millis": rec.end_ms.map_or(0, |e| e - rec.start_ms)},
                "indices": rec.indices.iter().map(|i| (i.clone(), json!({}))).collect::<Map<String, Value>>(),
            })
        })
        .collect();
    if let (Some(repo), Some(snap)) = (repo, snap) {
        if list.is_empty() {
            return Err(EsError::new(
                404,
                "snapshot_missing_exception",
                format!("[{repo}:{snap}] is missing"),
            ));
        }
    }
    c.ok(200, json!({ "snapshots": list }))
}

// ---------- admin ----------

fn admin_handle(shared: &Arc<Shared>, method: &Method, path: &str, body: &[u8]) -> Resp {
    let ok = |v: Value| json_resp(shared, 200, &v);
    let bad = |msg: String| json_resp(shared, 400, &json!({"error": msg, "status": 400}));
    match (method.clone(), path.trim_end_matches('/')) {
        (Method::GET, "/_testkit/faults") => {
            ok(serde_json::to_value(shared.faults()).unwrap_or_default())
        }
        (Method::POST | Method::PUT, "/_testkit/faults") => {
            match serde_json::from_slice::<Faults>(body) {
                Ok(f) => {
                    shared.set_faults(f.clone());
                    ok(serde_json::to_value(f).unwrap_or_default())
                }
                Err(e) => bad(format!("bad faults JSON: {e}")),
            }
        }
        (Method::POST | Method::PUT, "/_testkit/down") => {
            let v: Value = serde_json::from_slice(body).unwrap_or(json!({"down": true}));
            let down = v.get("down").and_then(Value::as_bool).unwrap_or(true);
            let secs = v.get("seconds").and_then(Value::as_f64);
            shared.set_down(down, secs);
            ok(json!({"down": down}))
        }
        (Method::POST | Method::PUT, "/_testkit/up") => {
            shared.set_down(false, None);
            ok(json!({"down": false}))
        }
        (Method::GET, "/_testkit/down") => ok(json!({"down": *shared.down.borrow()})),
        (Method::GET, "/_testkit/requests") => {
            ok(serde_json::to_value(super::lock(&shared.log).clone()).unwrap_or_default())
        }
        (Method::GET, "/_testkit/stats") => {
            let mut v = serde_json::to_value(shared.stats()).unwrap_or_default();
            v["uptime_ms"] = json!(shared.started.elapsed().as_millis() as u64);
            ok(v)
        }
        (Method::GET, "/_testkit/documents") => {
            let st = shared.state();
            let counts: Map<String, Value> = st
                .indices
                .iter()
                .map(|(n, i)| (n.clone(), json!(i.doc_count())))
                .collect();
            ok(Value::Object(counts))
        }
        _ => json_resp(
            shared,
            404,
            &json!({"error": format!("unknown admin endpoint {method} {path}"), "status": 404}),
        ),
    }
}
