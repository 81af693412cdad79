//! An index on an Elasticsearch/OpenSearch cluster as the store, using only what every
//! version since ES 6.7 (and `osmem-server`) offers: `op_type=create`,
//! `if_seq_no`/`if_primary_term`, `_search` with bool/term/range queries, realtime GET,
//! `_bulk` creates and `_refresh` — no scripts. The clock is estimated from the HTTP `Date`
//! header of every response (see [`DateClock`]). Requests go through [`cluster::Client`],
//! so every authentication mode of a target works for the store too (basic, API key,
//! SigV4, a private CA, mutual TLS).

use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use cluster::{ClientConfig, Method, RetryPolicy};
use rand::Rng;
use serde_json::{json, Value};

use super::{is_certificate_error, redact, system_now_ms, Store};
use crate::record::{Record, RecordKind, Revision};
use crate::Error;

const BACKEND: &str = "cluster";
const DEFAULT_INDEX: &str = "rfs_coordination";

/// Coordination records as documents of one index.
pub struct ClusterStore {
    client: cluster::Client,
    index: String,
    /// `Some("doc")` on ES 6 (typed endpoints), `None` elsewhere (`_doc`).
    doc_type: Option<&'static str>,
    clock: DateClock,
}

/// Server clock estimate from `Date` headers (1 s resolution). Each response bounds the
/// offset between server and local clock: the server's time lay in `[D, D + 1 s)` and
/// somewhere between our send and receive times. Intersecting the bounds of many responses
/// narrows the offset to about one round trip.
#[derive(Debug)]
pub struct DateClock {
    bounds: Mutex<Option<(i64, i64)>>,
    /// Last time handed out: the estimate never runs backwards.
    last: std::sync::atomic::AtomicI64,
}

impl DateClock {
    fn new() -> Self {
        DateClock {
            bounds: Mutex::new(None),
            last: std::sync::atomic::AtomicI64::new(0),
        }
    }

    /// Fold one response in: sent/received local ms, `Date` in seconds since the epoch.
    fn observe(&self, sent: i64, received: i64, date_secs: i64) {
        let lo = date_secs * 1000 - received;
        let hi = date_secs * 1000 + 999 - sent;
        if let Ok(mut b) = self.bounds.lock() {
            *b = match *b {
                Some((l, h)) if lo.max(l) <= hi.min(h) => Some((lo.max(l), hi.min(h))),
                // No overlap: a clock was stepped. Start again from this response.
                _ => Some((lo, hi)),
            };
        }
    }

    /// Offset interval `(low, high)` in ms (server − local), once a response was seen.
    pub fn bounds(&self) -> Option<(i64, i64)> {
        self.bounds.lock().ok().and_then(|b| *b)
    }

    fn now(&self) -> Option<i64> {
        let t = self.bounds().map(|(l, h)| system_now_ms() + (l + h) / 2)?;
        let prev = self.last.fetch_max(t, std::sync::atomic::Ordering::SeqCst);
        Some(t.max(prev))
    }
}

fn is_success(status: u16) -> bool {
    (200..300).contains(&status)
}

fn err(e: impl std::fmt::Display) -> Error {
    Error::store(BACKEND, e)
}

/// A failed request: an untrusted certificate or an unreadable TLS file is not worth a
/// retry (the client already gave up on it), the rest (refused or dropped connections,
/// timeouts, retries exhausted) is.
fn client_err(e: cluster::ClusterError) -> Error {
    let permanent = match &e {
        cluster::ClusterError::Transport { reason, .. } => is_certificate_error(reason),
        cluster::ClusterError::TlsFile { .. } => true,
        _ => false,
    };
    if permanent {
        Error::refused(BACKEND, e.to_string())
    } else {
        err(e)
    }
}

fn seq_version(v: &Value) -> Option<Revision> {
    Some(Revision {
        seq: v.get("_seq_no")?.as_i64()?,
        term: v.get("_primary_term")?.as_i64()?,
    })
}

fn source_doc(rec: &Record) -> Value {
    json!({
        "id": rec.id,
        "kind": rec.kind.as_str(),
        "state": rec.state.as_str(),
        "expiry": rec.expiry,
        "rnd": rand::thread_rng().gen::<f64>(),
        "rec": rec,
    })
}

fn hit_record(hit: &Value) -> Result<(Record, Revision), Error> {
    let id = hit.get("_id").and_then(Value::as_str).unwrap_or("?");
    let rec = hit
        .get("_source")
        .and_then(|s| s.get("rec"))
        .cloned()
        .ok_or_else(|| Error::Corrupt {
            id: id.to_string(),
            reason: "document has no `rec` field".into(),
        })?;
    let version = seq_version(hit).ok_or_else(|| Error::Corrupt {
        id: id.to_string(),
        reason: "response lacks _seq_no/_primary_term".into(),
    })?;
    Ok((Record::from_value(id, rec)?, version))
}

fn hits(body: &Value) -> Vec<Value> {
    body.pointer("/hits/hits")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Percent-encode one path segment.
fn seg(s: &str) -> String {
    url::form_urlencoded::byte_serialize(s.as_bytes())
        .collect::<String>()
        .replace('+', "%20")
}

impl ClusterStore {
    /// Connect to `http(s)://[user:pw@]host:port[/prefix…]/[index]` (basic auth from the
    /// URL's user info) and create the index if needed.
    pub async fn open(url: &str) -> Result<Self, Error> {
        let (config, index) = Self::config_from_url(url)?;
        Self::open_with(config, &index).await
    }

    /// Connect only if the index exists: nothing is created.
    pub async fn open_existing(url: &str) -> Result<Self, Error> {
        let (config, index) = Self::config_from_url(url)?;
        Self::open_existing_with(config, &index).await
    }

    /// The client configuration (base URL and basic auth) and the index of a store URL.
    pub fn config_from_url(url: &str) -> Result<(ClientConfig, String), Error> {
        let bad = |reason: String| Error::BadUrl {
            url: redact(url),
            reason,
        };
        let u = url::Url::parse(url).map_err(|e| bad(e.to_string()))?;
        let host = u.host_str().ok_or_else(|| bad("missing host".into()))?;
        let mut segments: Vec<String> = u
            .path_segments()
            .map(|s| s.filter(|x| !x.is_empty()).map(str::to_string).collect())
            .unwrap_or_default();
        let index = segments.pop().unwrap_or_else(|| DEFAULT_INDEX.to_string());
        let mut base = format!("{}://{}", u.scheme(), host);
        if let Some(port) = u.port() {
            base.push_str(&format!(":{port}"));
        }
        for s in &segments {
            base.push('/');
            base.push_str(s);
        }
        let mut config = ClientConfig::new(base);
        if !u.username().is_empty() {
            let dec = |s: &str| redact::percent_decode(s).into_owned();
            config.auth = cluster::Auth::Basic {
                username: dec(u.username()),
                password: dec(u.password().unwrap_or("")),
            };
        }
        Ok((config, index))
    }

    /// Open the store in `index` on the cluster `config` reaches (any authentication a
    /// target can use), and create the index if needed. The store's own retry policy
    /// replaces the configuration's: a few quick tries, as the coordinator retries too.
    pub async fn open_with(config: ClientConfig, index: &str) -> Result<Self, Error> {
        Self::open_in(config, index, true).await
    }

    /// [`ClusterStore::open_with`] only if the index exists: nothing is created.
    pub async fn open_existing_with(config: ClientConfig, index: &str) -> Result<Self, Error> {
        Self::open_in(config, index, false).await
    }

    async fn open_in(mut config: ClientConfig, index: &str, create: bool) -> Result<Self, Error> {
        if index.is_empty()
            || index.starts_with(['_', '-', '+'])
            || index != index.to_lowercase()
            || index.contains(['/', '\\', '*', '?', '"', '<', '>', '|', ' ', ',', '#'])
        {
            return Err(Error::BadUrl {
                url: config.urls.first().map(|u| redact(u)).unwrap_or_default(),
                reason: format!("{index:?} is not a valid index name"),
            });
        }
        config.retry = RetryPolicy {
            max_attempts: 5,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(2),
            max_retry_after: Duration::from_secs(10),
        };
        config.request_timeout = config.request_timeout.min(Duration::from_secs(30));
        config.compression = cluster::RequestCompression::Off;
        let client = cluster::Client::new(config).map_err(client_err)?;
        let mut store = ClusterStore {
            client,
            index: index.to_string(),
            doc_type: None,
            clock: DateClock::new(),
        };
        // `GET /` through the store's own path, so its `Date` starts the clock.
        let (status, root) = store.send(Method::GET, "/", None).await?;
        if !is_success(status) {
            return Err(Error::refused(
                BACKEND,
                format!("GET / answered {status}: {root}"),
            ));
        }
        let target = cluster::Target::from_root(&root).ok_or_else(|| {
            err(format!(
                "GET / did not say which product and version answers: {root}"
            ))
        })?;
        if target.version.is_es() {
            if target.version.major < 6 {
                return Err(err(format!(
                    "Elasticsearch {} lacks if_seq_no/if_primary_term; use ES 6.7 or later, or another store",
                    target.version
                )));
            }
            if target.version.major == 6 {
                store.doc_type = Some("doc");
            }
        }
        if create {
            store.create_index().await?;
        } else {
            let (status, _) = store
                .send(Method::HEAD, &format!("/{}", store.index), None)
                .await?;
            if status == 404 {
                return Err(Error::refused(
                    BACKEND,
                    format!(
                        "no index {} on the cluster (nothing was created; a worker creates it)",
                        store.index
                    ),
                ));
            }
        }
        store.calibrate().await;
        Ok(store)
    }

    async fn create_index(&self) -> Result<(), Error> {
        let props = json!({
            "id": {"type": "keyword"},
            "kind": {"type": "keyword"},
            "state": {"type": "keyword"},
            "expiry": {"type": "long"},
            "rnd": {"type": "double"},
            "rec": {"type": "object", "enabled": false},
        });
        let mappings = match self.doc_type {
            Some(t) => json!({ t: {"dynamic": false, "properties": props} }),
            None => json!({"dynamic": false, "properties": props}),
        };
        let body = json!({
            "settings": {"number_of_shards": 1, "auto_expand_replicas": "0-1"},
            "mappings": mappings,
        });
        let (status, resp) = self
            .send(Method::PUT, &format!("/{}", self.index), Some(body))
            .await?;
        let exists = resp.pointer("/error/type").and_then(Value::as_str)
            == Some("resource_already_exists_exception");
        if is_success(status) || exists {
            Ok(())
        } else {
            Err(err(format!(
                "creating index {}: {status}: {resp}",
                self.index
            )))
        }
    }

    /// Make requests until the `Date` header ticks over, which pins the offset to about one
    /// round trip (at most ~1.1 s).
    async fn calibrate(&self) {
        let start = std::time::Instant::now();
        let mut first = None;
        while start.elapsed() < Duration::from_millis(1100) {
            let Ok(resp) = self.client.request(Method::GET, "/", None).await else {
                return;
            };
            let Some(date) = resp.date else { return };
            self.observe(&resp, system_now_ms(), system_now_ms());
            match first {
                None => first = Some(date),
                Some(f) if f != date => break,
                _ => {}
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Feeds the clock with a response's `Date`, received between `sent` and `received`.
    fn observe(&self, resp: &cluster::Response, sent: i64, received: i64) {
        if let Some(d) = resp
            .date
            .and_then(|d| d.duration_since(std::time::UNIX_EPOCH).ok())
        {
            self.clock.observe(sent, received, d.as_secs() as i64);
        }
    }

    /// Send a request (a JSON body, or NDJSON for `_bulk`), feed the clock, return the
    /// status and JSON body. 429 and 5xx that outlast the client's retries are errors.
    async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<(u16, Value), Error> {
        let sent = system_now_ms();
        let resp = self
            .client
            .request(method.clone(), path, body.as_ref())
            .await
            .map_err(client_err)?;
        self.answer(resp, sent, &method, path)
    }

    async fn send_ndjson(&self, path: &str, body: String) -> Result<(u16, Value), Error> {
        let sent = system_now_ms();
        let resp = self
            .client
            .request_bytes(
                Method::POST,
                path,
                bytes::Bytes::from(body),
                "application/x-ndjson",
            )
            .await
            .map_err(client_err)?;
        self.answer(resp, sent, &Method::POST, path)
    }

    fn answer(
        &self,
        resp: cluster::Response,
        sent: i64,
        method: &Method,
        path: &str,
    ) -> Result<(u16, Value), Error> {
        // With retries inside the client, `sent` may precede the answering attempt: the
        // bounds stay true, only wider.
        self.observe(&resp, sent, system_now_ms());
        let status = resp.status;
        let text = || String::from_utf8_lossy(&resp.body[..resp.body.len().min(500)]).into_owned();
        if status >= 500 || status == 429 {
            return Err(err(format!("{method} {path}: {status}: {}", text())));
        }
        if status == 401 || status == 403 {
            return Err(Error::refused(
                BACKEND,
                format!("{method} {path}: {status}: {}", text()),
            ));
        }
        let v = if resp.body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&resp.body).map_err(|e| {
                err(format!(
                    "{method} {path}: {status}: response is not JSON ({e})"
                ))
            })?
        };
        Ok((status, v))
    }

    fn doc_path(&self, id: &str) -> String {
        format!(
            "/{}/{}/{}",
            self.index,
            self.doc_type.unwrap_or("_doc"),
            seg(id)
        )
    }

    async fn refresh(&self) -> Result<(), Error> {
        let (status, body) = self
            .send(Method::POST, &format!("/{}/_refresh", self.index), None)
            .await?;
        if !is_success(status) {
            return Err(err(format!("refresh: {status}: {body}")));
        }
        Ok(())
    }

    async fn search(&self, body: Value) -> Result<Value, Error> {
        let (status, resp) = self
            .send(
                Method::POST,
                &format!("/{}/_search", self.index),
                Some(body),
            )
            .await?;
        if !is_success(status) {
            return Err(err(format!("search: {status}: {resp}")));
        }
        Ok(resp)
    }

    async fn candidate_pass(
        &self,
        now: i64,
        limit: usize,
    ) -> Result<Vec<(Record, Revision)>, Error> {
        let pivot: f64 = rand::thread_rng().gen();
        // Expired leases first (earliest first): a dead holder's item before fresh ones.
        let expired = json!({
            "size": limit,
            "seq_no_primary_term": true,
            "query": {"bool": {"filter": [
                {"term": {"kind": "item"}},
                {"term": {"state": "open"}},
                {"range": {"expiry": {"gt": 0, "lte": now}}},
            ]}},
            "sort": [{"expiry": "asc"}],
        });
        let mut out: Vec<(Record, Revision)> = hits(&self.search(expired).await?)
            .iter()
            .map(hit_record)
            .collect::<Result<_, _>>()?;
        // Then fresh items (expiry 0) from a random point of the `rnd` order.
        let fresh = |rnd: Value, size: usize| {
            json!({
                "size": size,
                "seq_no_primary_term": true,
                "query": {"bool": {"filter": [
                    {"term": {"kind": "item"}},
                    {"term": {"state": "open"}},
                    {"term": {"expiry": 0}},
                    {"range": {"rnd": rnd}},
                ]}},
                "sort": [{"rnd": "asc"}],
            })
        };
        for rnd in [json!({"gte": pivot}), json!({"lt": pivot})] {
            if out.len() >= limit {
                break;
            }
            for h in hits(&self.search(fresh(rnd, limit - out.len())).await?) {
                out.push(hit_record(&h)?);
            }
        }
        Ok(out)
    }
}

#[async_trait]
impl Store for ClusterStore {
    fn backend(&self) -> &'static str {
        BACKEND
    }

    async fn now(&self) -> Result<i64, Error> {
        if let Some(t) = self.clock.now() {
            return Ok(t);
        }
        self.send(Method::GET, "/", None).await?;
        self.clock
            .now()
            .ok_or_else(|| err("the cluster sends no usable Date header"))
    }

    async fn create(&self, rec: &Record) -> Result<Option<Revision>, Error> {
        let path = format!("{}?op_type=create", self.doc_path(&rec.id));
        let (status, resp) = self.send(Method::PUT, &path, Some(source_doc(rec))).await?;
        match status {
            409 => Ok(None),
            s if is_success(s) => {
                Ok(Some(seq_version(&resp).ok_or_else(|| {
                    err(format!("create {}: no _seq_no in {resp}", rec.id))
                })?))
            }
            s => Err(err(format!("create {}: {s}: {resp}", rec.id))),
        }
    }

    async fn create_many(&self, recs: &[Record]) -> Result<usize, Error> {
        let mut created = 0;
        for chunk in recs.chunks(500) {
            let mut body = String::new();
            for r in chunk {
                let action = match self.doc_type {
                    Some(t) => json!({"create": {"_id": r.id, "_type": t}}),
                    None => json!({"create": {"_id": r.id}}),
                };
                body.push_str(&action.to_string());
                body.push('\n');
                body.push_str(&source_doc(r).to_string());
                body.push('\n');
            }
            let path = format!("/{}/_bulk", self.index);
            let (status, resp) = self.send_ndjson(&path, body).await?;
            if !is_success(status) {
                return Err(err(format!("bulk create: {status}: {resp}")));
            }
            let items = resp
                .get("items")
                .and_then(Value::as_array)
                .ok_or_else(|| err(format!("bulk create: no items in {resp}")))?;
            if items.len() != chunk.len() {
                return Err(err(format!(
                    "bulk create: {} results for {} documents",
                    items.len(),
                    chunk.len()
                )));
            }
            for item in items {
                let st = item.pointer("/create/status").and_then(Value::as_u64);
                match st {
                    Some(200..=201) => created += 1,
                    Some(409) => {}
                    _ => return Err(err(format!("bulk create failed: {item}"))),
                }
            }
        }
        Ok(created)
    }

    async fn get(&self, id: &str) -> Result<Option<(Record, Revision)>, Error> {
        let (status, resp) = self.send(Method::GET, &self.doc_path(id), None).await?;
        if resp.get("found").and_then(Value::as_bool) == Some(false) {
            return Ok(None);
        }
        if !is_success(status) {
            return Err(err(format!("get {id}: {status}: {resp}")));
        }
        hit_record(&resp).map(Some)
    }

    async fn update(&self, rec: &Record, expected: Revision) -> Result<Option<Revision>, Error> {
        let path = format!(
            "{}?if_seq_no={}&if_primary_term={}",
            self.doc_path(&rec.id),
            expected.seq,
            expected.term
        );
        let (status, resp) = self.send(Method::PUT, &path, Some(source_doc(rec))).await?;
        match status {
            409 => Ok(None),
            s if is_success(s) => {
                Ok(Some(seq_version(&resp).ok_or_else(|| {
                    err(format!("update {}: no _seq_no in {resp}", rec.id))
                })?))
            }
            s => Err(err(format!("update {}: {s}: {resp}", rec.id))),
        }
    }

    async fn candidates(&self, now: i64, limit: usize) -> Result<Vec<(Record, Revision)>, Error> {
        let out = self.candidate_pass(now, limit).await?;
        if !out.is_empty() {
            return Ok(out);
        }
        // Search is near-realtime: make recent writes (new successors) visible, then ask again.
        self.refresh().await?;
        self.candidate_pass(now, limit).await
    }

    async fn earliest_open_expiry(&self) -> Result<Option<i64>, Error> {
        self.refresh().await?;
        let resp = self
            .search(json!({
                "size": 1,
                "query": {"bool": {"filter": [
                    {"term": {"kind": "item"}},
                    {"term": {"state": "open"}},
                ]}},
                "sort": [{"expiry": "asc"}],
            }))
            .await?;
        Ok(hits(&resp)
            .first()
            .and_then(|h| h.pointer("/_source/expiry"))
            .and_then(Value::as_i64))
    }

    async fn list(&self, kind: RecordKind) -> Result<Vec<Record>, Error> {
        self.refresh().await?;
        let mut out = Vec::new();
        let mut after: Option<Value> = None;
        loop {
            let mut body = json!({
                "size": 1000,
                "seq_no_primary_term": true,
                "query": {"bool": {"filter": [{"term": {"kind": kind.as_str()}}]}},
                "sort": [{"id": "asc"}],
            });
            if let Some(a) = &after {
                body["search_after"] = a.clone();
            }
            let page = hits(&self.search(body).await?);
            if page.is_empty() {
                break;
            }
            after = page.last().and_then(|h| h.get("sort")).cloned();
            for h in &page {
                out.push(hit_record(h)?.0);
            }
            if page.len() < 1000 || after.is_none() {
                break;
            }
        }
        Ok(out)
    }

    async fn clear(&self) -> Result<(), Error> {
        let (status, resp) = self
            .send(Method::DELETE, &format!("/{}", self.index), None)
            .await?;
        if !is_success(status) && status != 404 {
            return Err(err(format!(
                "delete index {}: {status}: {resp}",
                self.index
            )));
        }
        self.create_index().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_clock_narrows_to_the_round_trip() {
        let c = DateClock::new();
        // Server 250 ms ahead of us; responses take 2 ms.
        for local in (0..5000).step_by(37) {
            let local = 1_700_000_000_000 + local;
            let server = local + 1 + 250;
            c.observe(local, local + 2, server / 1000);
        }
        let (lo, hi) = c.bounds().unwrap();
        assert!(lo <= 250 && 250 <= hi, "{lo}..{hi}");
        assert!(hi - lo <= 40, "{lo}..{hi}");
    }
}
