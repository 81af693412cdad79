//! The live-cluster source: the documents of the indices a pattern names on a running
//! Elasticsearch or OpenSearch cluster. Each index is cut into `slices` work items (a sliced
//! read: `slice: {id, max}`, one item per slice).
//!
//! Clusters with points in time (Elasticsearch ≥ 7.10, OpenSearch ≥ 2.4) are read through a
//! point in time with `search_after`, sorted by `_shard_doc`; a document's position is its
//! `_shard_doc` value, so resuming is a `search_after` from the cursor (in a new point in time
//! after a restart: the index must not change while it is copied, as for any live read).
//! A page answered with a failed shard (`_shards.failed` > 0: 200, that shard's hits left
//! out, and perhaps from `hits.total` too) fails its item, which is read again, by either
//! reader.
//!
//! Older clusters (Elasticsearch 5.0–7.9, OpenSearch 1.x–2.3) are read by sliced scroll
//! sorted by `_doc` (the `scroll` module), resumed by count: see there. Elasticsearch
//! before 5.0 has no sliced scroll and is refused with that reason.

use std::collections::BTreeMap;

use bytes::Bytes;
use cluster::{Client, ClusterError, Method};
use coordination::{Cursor, Position, WorkItem};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::document::{Document, Op, Read, Skip};
use crate::error::SourceError;
use crate::source::{GroupTotals, Plan, Source, Totals};

/// Options of the cluster source.
#[derive(Debug, Clone)]
pub struct ClusterSourceOptions {
    /// Work items per index (slices of its point in time); 1: no slicing.
    pub slices: u32,
    /// Documents per search page.
    pub page_size: u32,
    /// How long the point in time stays open between pages.
    pub keep_alive: String,
}

impl Default for ClusterSourceOptions {
    fn default() -> Self {
        ClusterSourceOptions {
            slices: 4,
            page_size: 1000,
            keep_alive: "5m".into(),
        }
    }
}

mod resolve;
mod scroll;

pub use resolve::{stream_metadata, LeftOut, LiveStream};

/// How the cluster's documents are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reader {
    /// A point in time with `search_after`.
    Pit(PitApi),
    /// A sliced scroll (no point in time).
    Scroll,
}

/// Which point-in-time API the cluster has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PitApi {
    /// `POST /IDX/_pit`, id in `id`.
    Elasticsearch,
    /// `POST /IDX/_search/point_in_time`, id in `pit_id`.
    OpenSearch,
}

/// Documents of the indices of a live cluster.
pub struct ClusterSource {
    client: Client,
    reader: Reader,
    /// Elasticsearch ≤ 6: hits carry the mapping type, kept as the document's `doc_type`.
    typed: bool,
    /// Where (a URL without credentials) and what (the pattern), for identity and messages.
    location: String,
    pattern: String,
    indices: Vec<(String, u64)>,
    /// Backing index → its data stream, whose name its documents carry.
    stream_of: BTreeMap<String, std::sync::Arc<str>>,
    /// The data streams read, and what the pattern reached but leaves out.
    streams: Vec<LiveStream>,
    left_out: Vec<LeftOut>,
    version: cluster::ProductVersion,
    opts: ClusterSourceOptions,
    runtime: tokio::runtime::Handle,
    /// Test hook: a reader bug that forgets the hit with this id.
    #[cfg(test)]
    forget_id: Option<String>,
}

fn source_error(e: ClusterError, what: &str) -> SourceError {
    let m = format!("{what}: {e}");
    let error = if e.is_fatal() {
        SourceError::fatal(m)
    } else {
        SourceError::item(m)
    };
    error.caused_by(e)
}

#[derive(Deserialize)]
struct Page<'a> {
    #[serde(borrow)]
    hits: Hits<'a>,
    /// The point in time's id for the next page, where the cluster renews it.
    #[serde(default)]
    pit_id: Option<String>,
    #[serde(rename = "_shards", default)]
    shards: Option<Shards>,
}

/// The `_shards` header of a page: a shard that failed is answered 200 with the hits of
/// the other shards, and its own missing from the page (and, on the first page, from
/// `hits.total`, so the count cannot show them lost).
#[derive(Deserialize)]
struct Shards {
    #[serde(default)]
    failed: u64,
    #[serde(default)]
    total: u64,
    #[serde(default)]
    failures: Vec<Value>,
}

impl Shards {
    /// Why the page is incomplete, when a shard failed.
    fn failure(&self) -> Option<String> {
        if self.failed == 0 {
            return None;
        }
        let first = self.failures.first();
        let reason = first
            .and_then(|f| f.get("reason"))
            .map(|r| match (r.get("type"), r.get("reason")) {
                (Some(t), Some(why)) => format!(
                    "{}: {}",
                    t.as_str().unwrap_or("?"),
                    why.as_str().unwrap_or("?")
                ),
                _ => r.to_string(),
            })
            .unwrap_or_else(|| "no reason given".into());
        let shard = first
            .and_then(|f| f.get("shard"))
            .map_or_else(|| "?".into(), Value::to_string);
        Some(format!(
            "{} of {} shards failed (shard {shard}: {reason})",
            self.failed, self.total
        ))
    }
}

#[derive(Deserialize)]
struct Hits<'a> {
    #[serde(borrow)]
    hits: Vec<Hit<'a>>,
    /// With `track_total_hits: true`: the hits of the whole query (the slice), as
    /// `{"value", "relation"}` (read leniently: another shape is no count).
    #[serde(default)]
    total: Option<Value>,
}

#[derive(Deserialize)]
struct Hit<'a> {
    #[serde(rename = "_index")]
    index: String,
    #[serde(rename = "_id")]
    id: String,
    #[serde(rename = "_type", default)]
    doc_type: Option<String>,
    #[serde(rename = "_routing", default)]
    routing: Option<String>,
    #[serde(rename = "_source", borrow, default)]
    source: Option<&'a RawValue>,
    #[serde(default)]
    sort: Vec<Value>,
}

/// An index pattern as one path segment: encoded, but with its `*` and `,` kept (the
/// cluster expands them).
fn pattern_segment(pattern: &str) -> String {
    cluster::encode_segment(pattern)
        .replace("%2A", "*")
        .replace("%2C", ",")
}

/// Refuses the indices that hold several mapping types (created by Elasticsearch 5, read
/// on 5.x or 6.x): documents of two types may share an `_id`, and written into one target
/// index one of them would silently replace the other. The snapshot path keeps the types
/// apart (`rfs run --multi-type split`); the live source refuses such an index by name.
async fn refuse_multi_type(
    client: &Client,
    pattern: &str,
    indices: &[(String, u64)],
    what: &str,
) -> Result<(), SourceError> {
    let path = format!("/{}/_mapping", pattern_segment(pattern));
    let r = client
        .request(Method::GET, &path, None)
        .await
        .and_then(|r| r.error_for_status())
        .map_err(|e| source_error(e, &format!("{what}: reading the mapping types")))?;
    let all: Value = r
        .json()
        .map_err(|e| source_error(e, &format!("{what}: reading the mapping types")))?;
    let several: Vec<String> = indices
        .iter()
        .filter_map(|(index, _)| {
            let types: Vec<&str> = all
                .get(index)?
                .get("mappings")?
                .as_object()?
                .keys()
                .map(String::as_str)
                .filter(|t| *t != "_default_")
                .collect();
            (types.len() > 1).then(|| format!("{index} [{}]", types.join(", ")))
        })
        .collect();
    if several.is_empty() {
        return Ok(());
    }
    Err(SourceError::fatal(format!(
        "{what}: {} hold several mapping types: documents of two types may share an _id, and one target index would keep only one of them, so the live source does not read such an index. Copy it from a snapshot with `rfs run --multi-type split` (one index per type), or name only single-type indices",
        several.join("; ")
    )))
}

impl ClusterSource {
    /// Connects through `client` (auth, TLS and SigV4 as configured), checks the version
    /// and resolves the indices `pattern` names (the `resolve` module: every index named,
    /// data streams to their backing indices; what a wildcard reaches but is hidden,
    /// dot-named or closed is left out with a WARN). Call within a Tokio runtime.
    pub async fn open(
        client: Client,
        location: String,
        pattern: &str,
        opts: ClusterSourceOptions,
    ) -> Result<Self, SourceError> {
        let what = format!("{location}/{pattern}");
        let target = client.detect().await.map_err(|e| source_error(e, &what))?;
        let v = &target.version;
        let reader = if v.at_least_es(7, 10) {
            Reader::Pit(PitApi::Elasticsearch)
        } else if v.at_least_os(2, 4) {
            Reader::Pit(PitApi::OpenSearch)
        } else if v.is_os() || v.at_least_es(5, 0) {
            Reader::Scroll
        } else {
            return Err(SourceError::fatal(format!(
                "{what}: Elasticsearch {} has neither point-in-time search (7.10+) nor sliced scroll (5.0+): it cannot be read live; copy it from a snapshot",
                v.number()
            )));
        };
        let typed = v.es_before(7);
        let resolved = resolve::resolve(&client, v, pattern, &what).await?;
        let stream_of = resolved.stream_names();
        let indices = resolved.indices;
        if indices.is_empty() {
            let left: Vec<String> = resolved.left_out.iter().map(|l| l.index.clone()).collect();
            return Err(SourceError::fatal(if left.is_empty() {
                format!("{what}: no index matches")
            } else {
                format!(
                    "{what}: no index to read: the pattern reaches only indices left out ({}; see the WARN lines)",
                    left.join(", ")
                )
            }));
        }
        if typed {
            refuse_multi_type(&client, pattern, &indices, &what).await?;
        }
        Ok(ClusterSource {
            client,
            reader,
            typed,
            location,
            pattern: pattern.to_string(),
            indices,
            stream_of,
            streams: resolved.streams,
            left_out: resolved.left_out,
            version: *v,
            opts: ClusterSourceOptions {
                slices: opts.slices.max(1),
                page_size: opts.page_size.clamp(1, 10_000),
                keep_alive: opts.keep_alive,
            },
            runtime: tokio::runtime::Handle::current(),
            #[cfg(test)]
            forget_id: None,
        })
    }

    /// The indices read, with their document counts when listed.
    pub fn indices(&self) -> &[(String, u64)] {
        &self.indices
    }

    /// The data streams among them (their backing indices are read, their documents carry
    /// the stream's name), with the templates a target needs to create them.
    pub fn data_streams(&self) -> &[LiveStream] {
        &self.streams
    }

    /// The cluster's version (for converting the streams' templates).
    pub fn version(&self) -> &cluster::ProductVersion {
        &self.version
    }

    /// What the pattern reached but is not read, and why (each logged as a WARN at open).
    pub fn left_out(&self) -> &[LeftOut] {
        &self.left_out
    }

    async fn open_pit(&self, api: PitApi, index: &str) -> Result<String, SourceError> {
        let what = format!("{}/{index}: opening a point in time", self.location);
        let ix = cluster::encode_segment(index);
        let path = match api {
            PitApi::Elasticsearch => format!("/{ix}/_pit?keep_alive={}", self.opts.keep_alive),
            PitApi::OpenSearch => format!(
                "/{ix}/_search/point_in_time?keep_alive={}",
                self.opts.keep_alive
            ),
        };
        let r = self
            .client
            .request(Method::POST, &path, None)
            .await
            .and_then(|r| r.error_for_status())
            .map_err(|e| source_error(e, &what))?;
        let v: Value = r.json().map_err(|e| source_error(e, &what))?;
        let key = match api {
            PitApi::Elasticsearch => "id",
            PitApi::OpenSearch => "pit_id",
        };
        v.get(key)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| SourceError::item(format!("{what}: no `{key}` in the answer")))
    }

    async fn close_pit(&self, api: PitApi, id: &str) {
        let (path, body) = match api {
            PitApi::Elasticsearch => ("/_pit", json!({ "id": id })),
            PitApi::OpenSearch => ("/_search/point_in_time", json!({ "pit_id": [id] })),
        };
        if let Err(e) = self.client.request(Method::DELETE, path, Some(&body)).await {
            tracing::debug!("closing a point in time on {}: {e}", self.location);
        }
    }

    /// Reads the slice page by page. Only the requests run inside `block_on`: `emit`
    /// may block on the runtime itself (the pipeline waits for memory and for batches in
    /// flight), which must not happen within another `block_on`.
    fn read_pages(
        &self,
        api: PitApi,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        let index = &item.group;
        let where_ = format!("{}/{index} slice {}", self.location, item.part);
        let mut after = match after.as_ref().or(item.after.as_ref()) {
            None => None,
            Some(Position::Doc(d)) => Some(*d),
            Some(Position::Key(k)) => {
                return Err(SourceError::item(format!(
                    "{where_}: cursor {k:?} is not a _shard_doc value"
                )))
            }
        };
        let until = match &item.until {
            Some(Position::Doc(u)) => Some(*u),
            _ => None,
        };
        // Coverage: a read of the whole slice asks, with its first page, how many hits the
        // slice holds in the point in time (one count per slice), and gives exactly that
        // many. A read resumed after a cursor cannot be proven so: the count of the hits
        // after a `_shard_doc` value is not asked of the cluster (`search_after` is not a
        // query, and whether `hits.total` counts the hits before it differs by version).
        let mut expected: Option<u64> = None;
        let mut ask_total = after.is_none() && until.is_none();
        let mut given = 0u64;
        let mut pit = self.runtime.block_on(self.open_pit(api, index))?;
        let result = loop {
            let mut body = json!({
                "size": self.opts.page_size,
                "sort": [{"_shard_doc": "asc"}],
                "pit": {"id": pit, "keep_alive": self.opts.keep_alive},
                "track_total_hits": ask_total,
            });
            if self.opts.slices > 1 {
                body["slice"] = json!({"id": item.part, "max": self.opts.slices});
            }
            if let Some(a) = after {
                body["search_after"] = json!([a]);
            }
            let r = match self.runtime.block_on(async {
                self.client
                    .request(Method::POST, "/_search", Some(&body))
                    .await
                    .and_then(|r| r.error_for_status())
            }) {
                Ok(r) => r,
                Err(e) => break Err(source_error(e, &where_)),
            };
            let mut page: Page = match serde_json::from_slice(&r.body) {
                Ok(p) => p,
                Err(e) => {
                    break Err(SourceError::item(format!(
                        "{where_}: a search answer that is not a page of hits: {e}"
                    )))
                }
            };
            if let Some(id) = page.pit_id.take() {
                pit = id;
            }
            if let Some(why) = page.shards.as_ref().and_then(Shards::failure) {
                // The page lacks that shard's hits (and, on the first page, so may the
                // count): given as they are, documents would be missing with nothing to
                // count them. The item fails and is read again from its last checkpoint.
                break Err(SourceError::item(format!(
                    "{where_}: the point in time answered without some of its hits after {given} hits: {why}; the item is read again from its last checkpoint"
                )));
            }
            if ask_total {
                ask_total = false;
                // A count the cluster says is exact; else (an older answer shape) none.
                expected = page
                    .hits
                    .total
                    .as_ref()
                    .filter(|t| t.get("relation").and_then(Value::as_str) == Some("eq"))
                    .and_then(|t| t.get("value").and_then(Value::as_u64));
            }
            if page.hits.hits.is_empty() {
                if let Some(n) = expected.filter(|n| *n != given) {
                    break Err(SourceError::coverage(format!(
                        "{where_}: the point in time holds {n} hits for the slice, but {given} were given: hits were lost on the way; the item fails rather than end as done"
                    )));
                }
                break Ok(());
            }
            let mut stopped = false;
            let mut failed = None;
            for h in page.hits.hits {
                let Some(pos) = h.sort.first().and_then(Value::as_i64).map(|v| v as u64) else {
                    failed = Some(SourceError::item(format!(
                        "{where_}: hit {} has no _shard_doc sort value",
                        h.id
                    )));
                    break;
                };
                if after.is_some_and(|a| pos <= a) {
                    failed = Some(SourceError::item(format!(
                        "{where_}: sort values went back ({pos} after {after:?})"
                    )));
                    break;
                }
                after = Some(pos);
                if until.is_some_and(|u| pos >= u) {
                    stopped = true;
                    break;
                }
                #[cfg(test)]
                if self.forget_id.as_deref() == Some(h.id.as_str()) {
                    continue;
                }
                given += 1;
                let read = match h.source {
                    Some(s) => Read::Doc(Document {
                        position: Position::Doc(pos),
                        op: Op::Index,
                        index: h.index.as_str().into(),
                        id: h.id,
                        doc_type: None,
                        routing: h.routing,
                        source: Bytes::copy_from_slice(s.get().as_bytes()),
                    }),
                    None => Read::Skip(Skip {
                        position: Position::Doc(pos),
                        index: h.index.as_str().into(),
                        id: Some(h.id),
                        doc_type: None,
                        routing: h.routing,
                        reason: "no_source",
                        detail: format!("{where_}: the hit has no _source"),
                        source: None,
                    }),
                };
                if !emit(read) {
                    stopped = true;
                    break;
                }
            }
            if let Some(e) = failed {
                break Err(e);
            }
            if stopped {
                break Ok(());
            }
        };
        self.runtime.block_on(self.close_pit(api, &pit));
        result
    }
}

impl Source for ClusterSource {
    fn identity(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            ("kind".to_string(), "cluster".to_string()),
            (
                "cluster".to_string(),
                crate::job::identity_location(&self.location),
            ),
            ("indices".to_string(), self.pattern.clone()),
        ])
    }

    fn left_out(&self) -> Vec<String> {
        self.left_out
            .iter()
            .map(|l| format!("{}: {}", l.index, l.why))
            .collect()
    }

    fn plan(&self) -> Result<Plan, SourceError> {
        let mut plan = Plan::default();
        let mut totals = Totals::default();
        for (index, docs) in &self.indices {
            for part in 0..self.opts.slices {
                plan.items.push(WorkItem::whole(index.clone(), part));
            }
            totals.add(
                index,
                GroupTotals {
                    parts: self.opts.slices,
                    docs: *docs,
                    ..GroupTotals::default()
                },
            );
        }
        totals.items = plan.items.len();
        plan.totals = totals;
        Ok(plan)
    }

    fn read(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        // A backing index's documents carry their data stream's name.
        let mut renamed;
        let emit: &mut dyn FnMut(Read) -> bool = match self.stream_of.get(&item.group) {
            None => emit,
            Some(stream) => {
                renamed = |mut r: Read| {
                    match &mut r {
                        Read::Doc(d) => d.index = stream.clone(),
                        Read::Skip(s) => s.index = stream.clone(),
                    }
                    emit(r)
                };
                &mut renamed
            }
        };
        match self.reader {
            Reader::Pit(api) => self.read_pages(api, item, after, emit),
            Reader::Scroll => self.read_scroll(item, after, emit),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::server::{ServerConfig, TestServer};

    /// Every slice read from its start proves its hits against the point in time's count;
    /// a reader that forgets one hit fails its item instead of ending it as done.
    #[test]
    fn a_slice_read_whole_proves_its_hits_against_the_count() {
        whole_reads_prove_their_hits(ServerConfig::opensearch("2.11.0"), None);
    }

    /// The same by scroll (Elasticsearch 6.8), the documents keeping their mapping type.
    #[test]
    fn a_slice_read_whole_by_scroll_proves_its_hits_against_the_count() {
        whole_reads_prove_their_hits(ServerConfig::elasticsearch("6.8.23"), Some("doc"));
    }

    fn whole_reads_prove_their_hits(config: ServerConfig, doc_type: Option<&str>) {
        let server = TestServer::start(config);
        let mut body = String::new();
        for i in 0..150 {
            let t = doc_type.map_or(String::new(), |t| format!(",\"_type\":\"{t}\""));
            body.push_str(&format!(
                "{{\"index\":{{\"_index\":\"p\",\"_id\":\"{i}\"{t}}}}}\n{{\"n\":{i}}}\n"
            ));
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let mut source = rt.block_on(async {
            let client = Client::new(cluster::ClientConfig::new(server.url())).unwrap();
            let r = client
                .request_bytes(
                    Method::POST,
                    "/_bulk?refresh=true",
                    Bytes::from(body),
                    "application/x-ndjson",
                )
                .await
                .unwrap();
            assert!(r.is_success());
            ClusterSource::open(
                client,
                server.url(),
                "p",
                ClusterSourceOptions {
                    slices: 3,
                    page_size: 11,
                    keep_alive: "1m".into(),
                },
            )
            .await
            .unwrap()
        });
        let items = source.plan().unwrap().items;
        let read = |s: &ClusterSource, item: &WorkItem| {
            let mut ids = Vec::new();
            s.read(item, &None, &mut |r| {
                if let Read::Doc(d) = r {
                    assert_eq!(d.doc_type.as_deref(), doc_type);
                    ids.push(d.id);
                }
                true
            })
            .map(|()| ids)
        };
        let mut all = Vec::new();
        for item in &items {
            all.extend(read(&source, item).unwrap_or_else(|e| panic!("{e}")));
        }
        assert_eq!(all.len(), 150);
        // The lossy reader: the slice holding document 77 forgets it.
        source.forget_id = Some("77".into());
        let mut failed = 0;
        for item in &items {
            match read(&source, item) {
                Ok(ids) => assert!(!ids.contains(&"77".to_string())),
                Err(e) => {
                    failed += 1;
                    assert!(e.coverage, "{e}");
                    assert!(e.message.contains("hits were lost"), "{e}");
                    assert!(
                        e.message.contains(&format!("{}/p slice", server.url())),
                        "{e}"
                    );
                }
            }
        }
        assert_eq!(failed, 1);
        drop(rt);
    }
}
