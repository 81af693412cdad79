//! An in-process HTTP server speaking the Elasticsearch/OpenSearch API subset rfs uses, keeping
//! its documents in memory for comparison, with run-time fault injection.
//!
//! It runs on its own tokio runtime on a background thread, so sync and async tests can use it:
//!
//! ```no_run
//! use testkit::server::{Faults, ServerConfig, TestServer};
//! let server = TestServer::start(ServerConfig::elasticsearch("7.10.2"));
//! server.set_faults(Faults { reject_429: 0.3, ..Faults::default() });
//! // … point the code under test at server.url() …
//! assert_eq!(server.doc_count("idx"), 0);
//! ```
//!
//! Admin endpoints (never faulted, not logged, also served on [`TestServer::admin_url`], which
//! stays up while the main port is down): `GET|POST /_testkit/faults` (a [`Faults`] JSON; unknown
//! fields are rejected), `POST /_testkit/down` (`{"down": true, "seconds": 2.5}` — `seconds` brings
//! it back up by itself), `POST /_testkit/up`, `GET /_testkit/down`, `GET /_testkit/requests`
//! (the [`RequestRecord`] log), `GET /_testkit/stats` ([`Stats`]), `GET /_testkit/documents`
//! (index → document count).
//!
//! Not supported (a clear 400, never a silent wrong answer): scripts, aggregations, query types
//! other than those in the search module, non-`fs` repositories. `_source` filtering returns the
//! whole source; an index whose mapping disables `_source` returns none (as OpenSearch), its
//! documents still counted and searchable. `docvalue_fields` answers keyword, whole-number,
//! boolean, float, double, date (`format: epoch_millis` too) and ip fields (the doc_values
//! module). All reads are realtime (`_refresh` is accepted and does nothing). `filter_path`
//! is applied to successful answers as the real servers do (a flat settings key is one name).
//! `GET _cluster/settings` reports `http.compression` from [`ServerConfig::http_compression`];
//! gzip request bodies are always accepted and counted in [`Stats`].
//! [`ServerConfig::serverless`] plays an OpenSearch Serverless collection (ids refused in
//! time-series and vector-search collections, see [`CollectionType`]).
//! Points in time (ES ≥ 7.10, OpenSearch ≥ 2.4) and scroll (`_search?scroll=`,
//! `/_search/scroll`, sliced by a stable hash of `_id`) hold the documents as they were when
//! opened and expire after their keep-alive ([`Faults::expire_scrolls`] expires scrolls early).

mod api;
mod bulk;
mod doc_values;
mod error;
mod fields;
mod filter;
mod query;
mod state;
mod version;

pub use version::VersionError;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::{oneshot, watch};

pub use version::{CollectionType, Distribution};

use state::State;
use version::Dialect;

/// How a [`TestServer`] starts.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Product reported by `GET /` (default OpenSearch).
    pub distribution: Distribution,
    /// Version number reported by `GET /` and the dialect spoken (default `2.11.0`).
    pub version: String,
    /// Address to listen on (default `127.0.0.1:0`, a free port).
    pub listen: SocketAddr,
    /// Worker threads of the server's runtime (default 2).
    pub threads: usize,
    /// Seed of the fault-injection random generator (default: from the OS).
    pub seed: Option<u64>,
    /// Faults active from the start.
    pub faults: Faults,
    /// Accept index/create operations and count them without keeping the documents (a sink for
    /// throughput benchmarks). `doc_count` then counts accepted operations.
    pub discard_documents: bool,
    /// Repository directory copied into a registered `fs` repository's location when a snapshot is
    /// created there.
    pub snapshot_source: Option<PathBuf>,
    /// How long a snapshot started with `wait_for_completion=false` reports `IN_PROGRESS`.
    pub snapshot_duration: Duration,
    /// Largest accepted request body, after gzip decoding (default 100 MiB, like Elasticsearch).
    pub max_content_length: usize,
    /// Create a missing index on the first document written to it (default true).
    pub auto_create_index: bool,
    /// `cluster_name` reported (default `testkit`).
    pub cluster_name: String,
    /// `http.compression` reported in the defaults of `GET _cluster/settings?include_defaults`
    /// (the cue clients use to gzip request bodies). The real servers default to true; this one
    /// defaults to false so that clients in automatic mode send plain bodies unless a test asks.
    /// gzip request bodies are accepted either way, as the real servers do.
    pub http_compression: bool,
    /// Play an OpenSearch Serverless collection of this type (default none): in time-series
    /// and vector-search collections index/create requests naming a document id are refused
    /// per item, as [`CollectionType`] describes, and ids are generated by the server.
    pub serverless: Option<CollectionType>,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            distribution: Distribution::OpenSearch,
            version: "2.11.0".into(),
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            threads: 2,
            seed: None,
            faults: Faults::default(),
            discard_documents: false,
            snapshot_source: None,
            snapshot_duration: Duration::from_millis(300),
            max_content_length: 100 * 1024 * 1024,
            auto_create_index: true,
            cluster_name: "testkit".into(),
            http_compression: false,
            serverless: None,
        }
    }
}

impl ServerConfig {
    /// Elasticsearch at `version` (e.g. `6.8.23`, `7.10.2`, `8.15.0`).
    pub fn elasticsearch(version: &str) -> ServerConfig {
        ServerConfig {
            distribution: Distribution::Elasticsearch,
            version: version.into(),
            ..ServerConfig::default()
        }
    }

    /// OpenSearch at `version` (e.g. `1.3.20`, `2.11.0`, `3.1.0`).
    pub fn opensearch(version: &str) -> ServerConfig {
        ServerConfig {
            distribution: Distribution::OpenSearch,
            version: version.into(),
            ..ServerConfig::default()
        }
    }
}

/// Faults to inject, changeable while the server runs. Probabilities are in `[0, 1]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Faults {
    /// Whole request answered 429 `es_rejected_execution_exception` with `Retry-After`.
    pub reject_429: f64,
    /// Value of `Retry-After` on those 429s, in seconds.
    pub retry_after_secs: u64,
    /// Whole request answered 500.
    pub error_500: f64,
    /// Whole request answered 503.
    pub error_503: f64,
    /// Each `_bulk` item answered 429 `es_rejected_execution_exception` (not applied).
    pub bulk_item_429: f64,
    /// Each `_bulk` item answered 503 `unavailable_shards_exception` (not applied).
    pub bulk_item_503: f64,
    /// Added latency before each request is handled.
    pub latency_ms: u64,
    /// Extra random latency, uniform in `[0, latency_jitter_ms]`.
    pub latency_jitter_ms: u64,
    /// Added latency after a request is handled, before it is answered: a `_bulk`'s
    /// documents are on the server while the client still waits (a target slow to answer).
    /// Read when the answer is due, so it holds every request handled after it is set.
    pub answer_delay_ms: u64,
    /// Connection closed without a response. For `_bulk`, before or after the request is
    /// applied (even odds).
    pub drop_connection: f64,
    /// Document ids whose index/create/update always fails with a 400 `mapper_parsing_exception`.
    pub failing_ids: BTreeSet<String>,
    /// Restrict the whole-request faults (429, 5xx, drops, latency) to `_bulk` requests.
    pub bulk_only: bool,
    /// Indices with a write block (`index.blocks.write`): each `_bulk` item on them is
    /// answered 403 `cluster_block_exception` and not applied.
    pub write_blocked: BTreeSet<String>,
    /// The next N scroll continuations (`/_search/scroll`) that name a live scroll context
    /// find it expired, as when its keep-alive ran out between two pages: the context is
    /// dropped and the request answered 404 `search_context_missing_exception`. Counts down
    /// as it is used (`GET /_testkit/faults` shows what is left).
    pub expire_scrolls: u64,
    /// The next N searches that open a scroll lose a shard, as a real cluster answers when
    /// one shard of the index fails: 200, `_shards.failed: 1` with its reason in
    /// `_shards.failures`, and the documents of that shard (about one in five, by `_id`)
    /// absent from the scroll and from `hits.total`. Counts down as it is used.
    pub scroll_shard_failures: u64,
    /// The next N pages (searches of `size` ≠ 0) of a point in time lose a shard the same way: each such
    /// page is answered 200 with `_shards.failed: 1` and its reason, and the documents of
    /// that shard (the same one in five, by `_id`) absent from the page and from
    /// `hits.total`. Counts down as it is used.
    pub pit_shard_failures: u64,
    /// The next N pages (searches of `size` ≠ 0) of a point in time time out on a shard, as a cluster with
    /// a search timeout (`search.default_search_timeout` or the request's `timeout`)
    /// answers: 200, `timed_out: true` and `_shards.failed: 0`, the documents that shard
    /// had not reached (the same one in five, by `_id`) absent from the page and from
    /// `hits.total`. Counts down as it is used.
    pub timed_out_pages: u64,
}

/// One request the server answered (or dropped).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// HTTP method.
    pub method: String,
    /// Path with query string.
    pub path: String,
    /// Status sent; 0 when the connection was dropped instead.
    pub status: u16,
    /// The fault injected, if any (`"429"`, `"500"`, `"503"`, `"drop-before"`, `"drop-after"`, `"down"`).
    pub fault: Option<String>,
}

impl RequestRecord {
    /// Whether the request could change data (not GET/HEAD, and not a read-only POST such as
    /// `_search`, `_count`, `_mget`, `_refresh`).
    pub fn is_write(&self) -> bool {
        if self.method == "GET" || self.method == "HEAD" {
            return false;
        }
        let path = self.path.split('?').next().unwrap_or("");
        if path.starts_with("/_search/scroll") {
            return false;
        }
        let read_only = [
            "_search",
            "_count",
            "_mget",
            "_refresh",
            "_msearch",
            "_field_caps",
            "_status",
        ];
        !path
            .rsplit('/')
            .next()
            .is_some_and(|last| read_only.contains(&last))
    }
}

/// Counters since the server started.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct Stats {
    /// Requests received (admin endpoints excluded).
    pub requests: u64,
    /// `_bulk` requests received.
    pub bulk_requests: u64,
    /// `_bulk` items received.
    pub bulk_items: u64,
    /// Request body bytes received (as sent, before gzip decoding).
    pub body_bytes: u64,
    /// Bytes of document lines (index/create sources, update bodies) received in `_bulk`.
    pub source_bytes: u64,
    /// Requests whose body came with `Content-Encoding: gzip`.
    pub gzip_requests: u64,
    /// `_bulk` requests whose body came with `Content-Encoding: gzip`.
    pub gzip_bulk_requests: u64,
    /// Body bytes of the gzip requests after decoding (`body_bytes` counts them as sent).
    pub gzip_decoded_bytes: u64,
}

/// Index metadata as a test reads it back.
#[derive(Clone, Debug, PartialEq)]
pub struct IndexInfo {
    /// Flat settings (`index.number_of_shards` → `"1"`), internal ones included.
    pub settings: BTreeMap<String, Value>,
    /// Mappings as stored (typed for ES 6).
    pub mappings: Value,
    /// Alias name → alias body.
    pub aliases: BTreeMap<String, Value>,
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    bulk_requests: AtomicU64,
    bulk_items: AtomicU64,
    body_bytes: AtomicU64,
    source_bytes: AtomicU64,
    gzip_requests: AtomicU64,
    gzip_bulk_requests: AtomicU64,
    gzip_decoded_bytes: AtomicU64,
}

/// What the connection tasks share.
pub(crate) struct Shared {
    config: ServerConfig,
    dialect: Dialect,
    state: Mutex<State>,
    faults: RwLock<Faults>,
    rng: Mutex<StdRng>,
    down: watch::Sender<bool>,
    log: Mutex<Vec<RequestRecord>>,
    counters: Counters,
    started: Instant,
    down_generation: AtomicU64,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // a panicking test thread must not poison the server for the rest of the test
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    fn faults(&self) -> Faults {
        self.faults
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Uses one of [`Faults::expire_scrolls`], if any is left.
    fn take_scroll_expiry(&self) -> bool {
        let mut f = self.faults.write().unwrap_or_else(|e| e.into_inner());
        if f.expire_scrolls == 0 {
            return false;
        }
        f.expire_scrolls -= 1;
        true
    }

    /// Uses one of [`Faults::scroll_shard_failures`], if any is left.
    fn take_scroll_shard_failure(&self) -> bool {
        let mut f = self.faults.write().unwrap_or_else(|e| e.into_inner());
        if f.scroll_shard_failures == 0 {
            return false;
        }
        f.scroll_shard_failures -= 1;
        true
    }

    /// Uses one of [`Faults::pit_shard_failures`], if any is left.
    fn take_pit_shard_failure(&self) -> bool {
        let mut f = self.faults.write().unwrap_or_else(|e| e.into_inner());
        if f.pit_shard_failures == 0 {
            return false;
        }
        f.pit_shard_failures -= 1;
        true
    }

    /// Uses one of [`Faults::timed_out_pages`], if any is left.
    fn take_timed_out_page(&self) -> bool {
        let mut f = self.faults.write().unwrap_or_else(|e| e.into_inner());
        if f.timed_out_pages == 0 {
            return false;
        }
        f.timed_out_pages -= 1;
        true
    }

    fn set_faults(&self, f: Faults) {
        *self.faults.write().unwrap_or_else(|e| e.into_inner()) = f;
    }

    /// A uniform draw in `[0, 1)`.
    fn roll(&self) -> f64 {
        lock(&self.rng).gen::<f64>()
    }

    fn roll_below(&self, p: f64) -> bool {
        p > 0.0 && self.roll() < p
    }

    fn jitter(&self, max_ms: u64) -> u64 {
        if max_ms == 0 {
            0
        } else {
            lock(&self.rng).gen_range(0..=max_ms)
        }
    }

    fn record(&self, method: &str, path: &str, status: u16, fault: Option<&str>) {
        lock(&self.log).push(RequestRecord {
            method: method.to_string(),
            path: path.to_string(),
            status,
            fault: fault.map(str::to_string),
        });
    }

    /// Goes down (or up); `for_secs` schedules coming back up.
    fn set_down(self: &Arc<Self>, down: bool, for_secs: Option<f64>) {
        let generation = self.down_generation.fetch_add(1, Ordering::SeqCst) + 1;
        self.down.send_replace(down);
        if let (true, Some(secs)) = (down, for_secs) {
            let me = Arc::clone(self);
            std::thread::spawn(move || {
                // seconds too large for a Duration mean "until told otherwise"
                let d = Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(Duration::MAX);
                std::thread::sleep(d);
                // only if nobody changed the switch in the meantime
                if me.down_generation.load(Ordering::SeqCst) == generation {
                    me.down.send_replace(false);
                }
            });
        }
    }

    fn stats(&self) -> Stats {
        let c = &self.counters;
        Stats {
            requests: c.requests.load(Ordering::Relaxed),
            bulk_requests: c.bulk_requests.load(Ordering::Relaxed),
            bulk_items: c.bulk_items.load(Ordering::Relaxed),
            body_bytes: c.body_bytes.load(Ordering::Relaxed),
            source_bytes: c.source_bytes.load(Ordering::Relaxed),
            gzip_requests: c.gzip_requests.load(Ordering::Relaxed),
            gzip_bulk_requests: c.gzip_bulk_requests.load(Ordering::Relaxed),
            gzip_decoded_bytes: c.gzip_decoded_bytes.load(Ordering::Relaxed),
        }
    }
}

/// Errors starting a [`TestServer`].
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The version number cannot be parsed.
    #[error("bad server version: {0}")]
    Version(#[from] version::VersionError),
    /// A listener could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The cause.
        source: std::io::Error,
    },
    /// The runtime could not be built.
    #[error("cannot start the server runtime: {0}")]
    Runtime(std::io::Error),
}

/// A running Elasticsearch/OpenSearch-API test server; stopped on drop.
pub struct TestServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    admin_addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl TestServer {
    /// Starts a server; panics if it cannot (use [`TestServer::try_start`] to handle that).
    pub fn start(config: ServerConfig) -> TestServer {
        TestServer::try_start(config).unwrap_or_else(|e| panic!("testkit server: {e}"))
    }

    /// Starts a server.
    pub fn try_start(config: ServerConfig) -> Result<TestServer, StartError> {
        let dialect = Dialect::new(config.distribution, &config.version)?;
        let bind = |addr: SocketAddr| {
            let l = std::net::TcpListener::bind(addr)
                .map_err(|source| StartError::Bind { addr, source })?;
            l.set_nonblocking(true)
                .map_err(|source| StartError::Bind { addr, source })?;
            Ok::<_, StartError>(l)
        };
        let listener = bind(config.listen)?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: config.listen,
            source,
        })?;
        let admin = bind(SocketAddr::new(config.listen.ip(), 0))?;
        let admin_addr = admin.local_addr().map_err(|source| StartError::Bind {
            addr: config.listen,
            source,
        })?;
        let rng = match config.seed {
            Some(s) => StdRng::seed_from_u64(s),
            None => StdRng::from_entropy(),
        };
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads.max(1))
            .thread_name("testkit-server")
            .enable_all()
            .build()
            .map_err(StartError::Runtime)?;
        let (down, _) = watch::channel(false);
        let shared = Arc::new(Shared {
            faults: RwLock::new(config.faults.clone()),
            config,
            dialect,
            state: Mutex::new(State::default()),
            rng: Mutex::new(rng),
            down,
            log: Mutex::new(Vec::new()),
            counters: Counters::default(),
            started: Instant::now(),
            down_generation: AtomicU64::new(0),
        });
        let (stop_tx, stop_rx) = oneshot::channel();
        let sh = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("testkit-server-main".into())
            .spawn(move || {
                runtime.block_on(api::serve(sh, listener, admin, stop_rx));
                runtime.shutdown_timeout(Duration::from_millis(200));
            })
            .map_err(StartError::Runtime)?;
        Ok(TestServer {
            shared,
            addr,
            admin_addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The listening address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The admin endpoint's base URL (serves only `/_testkit/…`, never down, never faulted).
    pub fn admin_url(&self) -> String {
        format!("http://{}", self.admin_addr)
    }

    /// Stops the server and waits for its thread.
    pub fn shutdown(mut self) {
        self.stop_now();
    }

    fn stop_now(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    /// Replaces the active faults.
    pub fn set_faults(&self, faults: Faults) {
        self.shared.set_faults(faults);
    }

    /// The active faults.
    pub fn faults(&self) -> Faults {
        self.shared.faults()
    }

    /// Goes down (listener closed: connections refused; open connections closed) or comes back
    /// up on the same port.
    pub fn set_down(&self, down: bool) {
        self.shared.set_down(down, None);
    }

    /// Whether the server is down.
    pub fn is_down(&self) -> bool {
        *self.shared.down.borrow()
    }

    /// Documents of an index: id → source (empty if the index does not exist).
    pub fn documents(&self, index: &str) -> BTreeMap<String, Value> {
        let st = self.shared.state();
        st.indices
            .get(index)
            .map(|i| {
                i.docs
                    .iter()
                    .map(|(id, d)| {
                        let v = serde_json::from_slice(&d.source).unwrap_or(Value::Null);
                        (id.clone(), v)
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Source bytes of one document exactly as received.
    pub fn document_bytes(&self, index: &str, id: &str) -> Option<Bytes> {
        let st = self.shared.state();
        st.indices
            .get(index)
            .and_then(|i| i.docs.get(id))
            .map(|d| d.source.clone())
    }

    /// Number of documents in an index (with `discard_documents`, accepted index/create operations).
    pub fn doc_count(&self, index: &str) -> u64 {
        self.shared
            .state()
            .indices
            .get(index)
            .map_or(0, |i| i.doc_count())
    }

    /// Documents over all indices (with `discard_documents`, accepted index/create operations).
    pub fn total_doc_count(&self) -> u64 {
        self.shared
            .state()
            .indices
            .values()
            .map(|i| i.doc_count())
            .sum()
    }

    /// Names of all indices, sorted.
    pub fn index_names(&self) -> Vec<String> {
        self.shared.state().indices.keys().cloned().collect()
    }

    /// Data streams by name, each with its backing indices (oldest first).
    pub fn data_streams(&self) -> BTreeMap<String, Vec<String>> {
        self.shared
            .state()
            .data_streams
            .iter()
            .map(|(n, d)| (n.clone(), d.indices.clone()))
            .collect()
    }

    /// Settings, mappings and aliases of an index.
    pub fn index(&self, name: &str) -> Option<IndexInfo> {
        let st = self.shared.state();
        st.indices.get(name).map(|i| IndexInfo {
            settings: i.settings.clone(),
            mappings: i.mappings.clone(),
            aliases: i.aliases.clone(),
        })
    }

    /// Legacy (`_template`) templates: name → body as stored.
    pub fn legacy_templates(&self) -> BTreeMap<String, Value> {
        self.shared.state().legacy_templates.clone()
    }

    /// Component templates: name → body as stored.
    pub fn component_templates(&self) -> BTreeMap<String, Value> {
        self.shared.state().component_templates.clone()
    }

    /// Composable index templates: name → body as stored.
    pub fn index_templates(&self) -> BTreeMap<String, Value> {
        self.shared.state().index_templates.clone()
    }

    /// Requests answered so far (admin endpoints excluded), in order.
    pub fn requests(&self) -> Vec<RequestRecord> {
        lock(&self.shared.log).clone()
    }

    /// Points in time and scroll contexts open now (expired ones not counted).
    pub fn open_search_contexts(&self) -> usize {
        let st = self.shared.state();
        let now = Instant::now();
        st.pits.values().filter(|p| p.expires > now).count()
            + st.scrolls.values().filter(|s| s.expires > now).count()
    }

    /// Ends every point in time and scroll context now, as their keep-alive running out
    /// (or a node holding them restarting) does: later searches of them answer 404.
    /// Returns how many were open.
    pub fn expire_search_contexts(&self) -> usize {
        let mut st = self.shared.state();
        let n = st.pits.len() + st.scrolls.len();
        st.pits.clear();
        st.scrolls.clear();
        n
    }

    /// Requests that could have changed data (see [`RequestRecord::is_write`]).
    pub fn write_requests(&self) -> Vec<RequestRecord> {
        self.requests()
            .into_iter()
            .filter(RequestRecord::is_write)
            .collect()
    }

    /// Forgets the request log.
    pub fn clear_requests(&self) {
        lock(&self.shared.log).clear();
    }

    /// Counters since start.
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop_now();
    }
}
