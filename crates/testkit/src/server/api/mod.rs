//! Listening, fault injection around each request, routing; the handlers live in one
//! module per API area.

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
    check_mappings, check_settings, flatten_settings, glob, merge, nest_settings, source_enabled,
    OpKind, SnapshotRecord, State, WriteOp, Written,
};
use super::version::Dialect;
use super::{Faults, Shared};

type Resp = Response<Full<Bytes>>;

mod admin;
mod aliases;
mod cluster;
mod documents;
mod indices;
mod raw_source;
mod resolve;
mod scroll;
mod search;
mod snapshots;
mod templates;

use admin::*;
use aliases::*;
use cluster::*;
use documents::*;
use indices::*;
use search::*;
use snapshots::*;
use templates::*;

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
    let body = raw_source::splice(serde_json::to_vec(v).unwrap_or_default());
    respond(shared, status, body)
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
    // Read now, not when the request came: a change holds the answers of requests under
    // way whose documents are stored after it.
    let now = shared.faults();
    if now.answer_delay_ms > 0 && (!now.bulk_only || is_bulk) {
        tokio::time::sleep(Duration::from_millis(now.answer_delay_ms)).await;
    }
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

/// A path segment or query part decoded (an escape that is not two hex digits is kept,
/// bytes that are not UTF-8 become U+FFFD). The test server decodes with the
/// `percent-encoding` crate, not the product's `redact::percent_decode`: it must not share
/// code with what it tests.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
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
            Some(f) => {
                let mut v = v;
                raw_source::parse_all(&mut v);
                f.apply(v)
            }
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
        [idx, "_pit"] if m == Method::POST && c.shared.dialect.es_pit() => open_pit(c, idx),
        ["_pit"] if m == Method::DELETE && c.shared.dialect.es_pit() => close_pit(c),
        [idx, "_search", "point_in_time"] if m == Method::POST && c.shared.dialect.os_pit() => {
            open_pit(c, idx)
        }
        ["_search", "point_in_time"] if m == Method::DELETE && c.shared.dialect.os_pit() => {
            close_pit(c)
        }
        ["_search", "scroll"] if get || m == Method::POST => scroll::next(c, None),
        ["_search", "scroll", id] if get || m == Method::POST => scroll::next(c, Some(id)),
        ["_search", "scroll"] if m == Method::DELETE => scroll::clear(c, None),
        ["_search", "scroll", ids] if m == Method::DELETE => scroll::clear(c, Some(ids)),
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
        ["_template", name] if m == Method::DELETE => {
            delete_template(c, TemplateKind::Legacy, name)
        }
        ["_component_template"] if get && composable => {
            get_composable(c, TemplateKind::Component, "*")
        }
        ["_component_template", name] if get && composable => {
            get_composable(c, TemplateKind::Component, name)
        }
        ["_component_template", name] if write && composable => put_component_template(c, name),
        ["_component_template", name] if m == Method::DELETE && composable => {
            delete_template(c, TemplateKind::Component, name)
        }
        ["_resolve", "index", expr] if get && c.shared.dialect.resolve_index() => {
            resolve::resolve_index(c, expr)
        }
        [name, "_rollover"] if m == Method::POST && c.shared.dialect.data_streams() => {
            resolve::rollover(c, name)
        }
        ["_data_stream", name] if m == Method::PUT && composable => {
            c.state().create_data_stream(name, &c.shared.dialect)?;
            c.ok(200, ack())
        }
        ["_data_stream", name] if get && composable => get_data_streams(c, name),
        ["_index_template"] if get && composable => get_composable(c, TemplateKind::Index, "*"),
        ["_index_template", name] if get && composable => {
            get_composable(c, TemplateKind::Index, name)
        }
        ["_index_template", name] if write && composable => put_index_template(c, name),
        ["_index_template", name] if m == Method::DELETE && composable => {
            delete_template(c, TemplateKind::Index, name)
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
