//! The live-cluster source: the documents of the indices a pattern names on a running
//! Elasticsearch or OpenSearch cluster. Each index is cut into `slices` work items (a sliced
//! read: `slice: {id, max}`, one item per slice).
//!
//! The plan records each item's extent (`WorkItem::extent`, an [`Extent`]): how it is read
//! (point in time or scroll), which slice of how many, and for a point in time the one the
//! plan opened for the index. A worker reads the extent and never recomputes it from its
//! own flags: `--slices` given to a worker of an existing migration is ignored with a WARN
//! (the plan's value wins). Items planned by an older rfs have no extent: they are read as
//! that rfs read them (slices from the flags, a bare `_shard_doc` cursor), with a WARN.
//!
//! Clusters that can slice a point in time and sort on `_shard_doc` (Elasticsearch ≥ 7.15,
//! OpenSearch ≥ 3.3) are read through a point in time (the `pit` module: one per index,
//! shared by its slices, resumed inside it or proved by digest in a new one, each slice's
//! hits held against a count under the same point in time). Others (Elasticsearch
//! 5.0–7.14, OpenSearch 1.x–3.2) are read by sliced scroll sorted by `_doc` (the `scroll`
//! module), resumed by count and digest. A page with a failed shard or `timed_out: true`
//! fails its item, which is read again, by either reader. Elasticsearch before 5.0 has no
//! sliced scroll and is refused with that reason. See docs/live-source.md.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use bytes::Bytes;
use cluster::{Client, ClusterError, Method};
use coordination::{Cursor, Position, WorkItem};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use engine::document::{Document, Op, Read, Skip};
use engine::error::SourceError;
use engine::source::{GroupTotals, Plan, Source, TotalCount, Totals};

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

mod pit;
mod resolve;
mod scroll;

pub use resolve::{stream_metadata, LeftOut, LiveStream};

/// What the plan records of an item (`WorkItem::extent`): everything that decides which
/// documents it covers, so that no worker recomputes it from its own flags.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Extent {
    /// How the item is read.
    reader: ReaderKind,
    /// The slice: `slice` of `slices` (`slices` 1: the whole index, no `slice` sent).
    slice: u32,
    slices: u32,
    /// A point-in-time read: the point in time the plan opened for the index, shared by
    /// its slices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pit: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum ReaderKind {
    Pit,
    Scroll,
}

/// How the cluster's documents are paged through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Paging {
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
    reader: Paging,
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
    /// The cluster's point-in-time API, where it has one (for items planned by an older
    /// rfs, which read every such cluster through a point in time).
    pit_api: Option<PitApi>,
    /// Per plan's point in time, the slices read to their end in this process.
    ended_slices: Mutex<BTreeMap<String, BTreeSet<u32>>>,
    /// WARNs said once per process.
    warned_slices: AtomicBool,
    warned_legacy: AtomicBool,
    runtime: tokio::runtime::Handle,
    /// Test hook: a reader bug that forgets the hit with this id.
    #[cfg(test)]
    forget_id: Option<String>,
}

/// `e` (which holds no cause of its own and says everything: method, URL, answer) at
/// `what`, in the message, not also as the source.
fn source_error(e: ClusterError, what: &str) -> SourceError {
    let m = format!("{what}: {e}");
    if e.is_fatal() {
        SourceError::fatal(m)
    } else {
        SourceError::item(m)
    }
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
    /// A shard ran out of the search timeout: its hits are missing, `_shards.failed` 0.
    #[serde(default)]
    timed_out: bool,
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
        let pit_api = if v.at_least_es(7, 10) {
            Some(PitApi::Elasticsearch)
        } else if v.at_least_os(2, 4) {
            Some(PitApi::OpenSearch)
        } else {
            None
        };
        // A point in time is read only where it can be sliced and sorted on `_shard_doc`:
        // Elasticsearch 7.15 (slicing, elastic/elasticsearch#74457; `_shard_doc` from 7.12,
        // #66093), OpenSearch 3.3. Elsewhere slices of one view need a scroll.
        let reader = if v.at_least_es(7, 15) {
            Paging::Pit(PitApi::Elasticsearch)
        } else if v.at_least_os(3, 3) {
            Paging::Pit(PitApi::OpenSearch)
        } else if v.is_os() || v.at_least_es(5, 0) {
            Paging::Scroll
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
            pit_api,
            ended_slices: Mutex::new(BTreeMap::new()),
            warned_slices: AtomicBool::new(false),
            warned_legacy: AtomicBool::new(false),
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

    /// The definitions (settings, mappings, aliases) of the indices read, with the
    /// cluster's version, as metadata migration takes a snapshot's. A data stream's
    /// backing indices are left out: the `_bulk` sink creates the streams themselves.
    pub async fn index_metadata(&self) -> Result<metadata::SourceMetadata, SourceError> {
        let backing: BTreeSet<&str> = self
            .streams
            .iter()
            .flat_map(|s| s.backing.iter().map(String::as_str))
            .collect();
        let names: Vec<String> = self
            .indices
            .iter()
            .map(|(i, _)| i.clone())
            .filter(|i| !backing.contains(i.as_str()))
            .collect();
        let what = format!("{} (index definitions)", self.location);
        Ok(metadata::SourceMetadata {
            version: Some(self.version),
            indices: resolve::index_definitions(&self.client, &names, &what).await?,
            ..Default::default()
        })
    }

    /// What the pattern reached but is not read, and why (each logged as a WARN at open).
    pub fn left_out(&self) -> &[LeftOut] {
        &self.left_out
    }

    /// The index's document count now (`GET /IDX/_count`): the total of a plan read by
    /// scroll, whose views are taken later, so an estimate.
    fn count_now(&self, index: &str) -> Result<u64, SourceError> {
        let what = format!("{}/{index}: counting its documents", self.location);
        let path = format!("/{}/_count", cluster::encode_segment(index));
        let v: Value = self
            .runtime
            .block_on(self.client.request(Method::GET, &path, None))
            .and_then(|r| r.error_for_status())
            .and_then(|r| r.json())
            .map_err(|e| source_error(e, &what))?;
        v.get("count")
            .and_then(Value::as_u64)
            .ok_or_else(|| SourceError::item(format!("{what}: no `count` in the answer")))
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

    /// Reads an item planned by an older rfs (no extent) as that rfs did: slice `part` of
    /// `--slices`, resumed by a bare `_shard_doc` in a new point in time. Only for such
    /// items (see [`ClusterSource::read`]). Only the requests run inside `block_on`:
    /// `emit` may block on the runtime itself (the pipeline waits for memory and for
    /// batches in flight), which must not happen within another `block_on`.
    fn read_pages_legacy(
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
                engine::job::identity_location(&self.location),
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
        for (index, _listed) in &self.indices {
            // The index's own total, by a route apart from the reads: the count under the
            // point in time the slices read (exact: documents written later are in neither),
            // else a count at plan time (an estimate: the scroll's view is taken later).
            let (reader, pit, docs, count) = match self.reader {
                Paging::Pit(api) => {
                    let pit = self.runtime.block_on(self.open_pit(api, index))?;
                    let n = self.count_in_pit(index, &pit)?;
                    (ReaderKind::Pit, Some(pit), n, TotalCount::Exact)
                }
                Paging::Scroll => (
                    ReaderKind::Scroll,
                    None,
                    self.count_now(index)?,
                    TotalCount::Estimated,
                ),
            };
            for part in 0..self.opts.slices {
                let extent = Extent {
                    reader,
                    slice: part,
                    slices: self.opts.slices,
                    pit: pit.clone(),
                };
                let extent = serde_json::to_value(&extent).map_err(|e| {
                    SourceError::fatal(format!("{}/{index}: the item's extent: {e}", self.location))
                })?;
                plan.items
                    .push(WorkItem::whole(index.clone(), part).with_extent(extent));
            }
            totals.add(
                index,
                GroupTotals {
                    parts: self.opts.slices,
                    docs,
                    count: Some(count),
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
        let where_ = || format!("{}/{} slice {}", self.location, item.group, item.part);
        let Some(value) = &item.extent else {
            return self.read_legacy(item, after, emit);
        };
        let extent: Extent = serde_json::from_value(value.clone()).map_err(|e| {
            SourceError::permanent(format!(
                "{}: the plan's extent {value} is not a slice of a live cluster: {e}",
                where_()
            ))
        })?;
        if extent.slices != self.opts.slices && !self.warned_slices.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "{}: --slices {} differs from the plan of this migration, which cut {} into {} slices: the plan's value wins (to cut the indices anew, start a new migration in another --store)",
                self.location,
                self.opts.slices,
                item.group,
                extent.slices
            );
        }
        match (extent.reader, self.pit_api) {
            (ReaderKind::Scroll, _) => {
                self.read_scroll(item, (extent.slice, extent.slices), after, emit)
            }
            (ReaderKind::Pit, Some(api)) => self.read_pit(api, item, &extent, after, emit),
            (ReaderKind::Pit, None) => Err(SourceError::permanent(format!(
                "{}: the plan reads this item through a point in time, which the cluster (now) does not have",
                where_()
            ))),
        }
    }
}

impl ClusterSource {
    /// An item without extent, planned by an older rfs: read as it read it.
    fn read_legacy(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        if !self.warned_legacy.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                "{}/{}: work items planned by an older rfs (no extent recorded): read as slice N of --slices {} and resumed as that rfs did; this migration's plan cannot be checked, so the same --slices must be given to every worker",
                self.location,
                item.group,
                self.opts.slices
            );
        }
        match self.pit_api {
            Some(api) => self.read_pages_legacy(api, item, after, emit),
            None => self.read_scroll(item, (item.part, self.opts.slices), after, emit),
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
        whole_reads_prove_their_hits(ServerConfig::opensearch("3.3.0"), None);
    }

    /// The same by scroll (Elasticsearch 6.8), the documents keeping their mapping type.
    #[test]
    fn a_slice_read_whole_by_scroll_proves_its_hits_against_the_count() {
        whole_reads_prove_their_hits(ServerConfig::elasticsearch("6.8.23"), Some("doc"));
    }

    /// A runtime and a source over `server`'s index `p` of 150 documents.
    fn source_of(
        server: &TestServer,
        doc_type: Option<&str>,
        slices: u32,
    ) -> (tokio::runtime::Runtime, ClusterSource) {
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
        let source = rt.block_on(async {
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
                    slices,
                    page_size: 11,
                    keep_alive: "1m".into(),
                },
            )
            .await
            .unwrap()
        });
        (rt, source)
    }

    /// Reads `item` from `after`, giving up after `stop_after` hits: the ids and the last
    /// position given.
    fn read_some(
        s: &ClusterSource,
        item: &WorkItem,
        after: &Cursor,
        stop_after: usize,
    ) -> Result<(Vec<String>, Cursor), SourceError> {
        let mut ids = Vec::new();
        let mut last = None;
        s.read(item, after, &mut |r| {
            if let Read::Doc(d) = r {
                ids.push(d.id);
                last = Some(d.position);
            }
            ids.len() < stop_after
        })
        .map(|()| (ids, last))
    }

    fn delete(rt: &tokio::runtime::Runtime, server: &TestServer, path: &str, body: Option<Value>) {
        rt.block_on(async {
            let client = Client::new(cluster::ClientConfig::new(server.url())).unwrap();
            let r = client
                .request(Method::DELETE, path, body.as_ref())
                .await
                .unwrap();
            assert!(r.is_success(), "{path}: {}", r.status);
        });
    }

    /// Case 5 of issue #36: a read resumed after a cursor also ends by holding what it
    /// walked (passed and given) against the slice's count under the same point in time;
    /// a reader that forgets a hit after the resume fails its item. (Before, only reads of
    /// a whole slice were counted.)
    #[test]
    fn a_resumed_read_proves_its_hits_against_the_count() {
        let server = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
        let (rt, mut source) = source_of(&server, None, 2);
        let items = source.plan().unwrap().items;
        let (all, _) = read_some(&source, &items[0], &None, usize::MAX).unwrap();
        assert!(all.len() > 50, "{}", all.len());
        let (first, cursor) = read_some(&source, &items[0], &None, 20).unwrap();
        assert_eq!(first[..], all[..20]);
        // The whole resumed rest, as a reader that works.
        let (rest, _) = read_some(&source, &items[0], &cursor, usize::MAX).unwrap();
        assert_eq!(rest[..], all[20..]);
        // A reader that forgets a hit after the cursor.
        source.forget_id = Some(all[40].clone());
        let e = read_some(&source, &items[0], &cursor, usize::MAX).unwrap_err();
        assert!(e.coverage, "{e}");
        assert!(e.message.contains("hits were lost"), "{e}");
        drop(rt);
    }

    /// Case 2 of issue #36: a resume continues in the point in time of the plan, where a
    /// document deleted since keeps its place and no later one moves; when that point in
    /// time is gone, the read starts over in a new one and passes over the hits given,
    /// proved by their digest: the same documents (nothing changed) continue; a deleted
    /// one fails the item instead of losing the document after the cursor.
    #[test]
    fn a_resume_continues_in_the_plan_point_in_time_or_proves_where_it_is() {
        let server = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
        let (rt, source) = source_of(&server, None, 1);
        let items = source.plan().unwrap().items;
        let (all, _) = read_some(&source, &items[0], &None, usize::MAX).unwrap();
        assert_eq!(all.len(), 150);
        // (The whole read closed the plan's point in time, the only slice having ended;
        // a new plan opens another.)
        let items = source.plan().unwrap().items;
        let (first, cursor) = read_some(&source, &items[0], &None, 30).unwrap();
        assert_eq!(first[..], all[..30]);
        // A document already given is deleted: the plan's point in time still holds it.
        delete(
            &rt,
            &server,
            &format!("/p/_doc/{}?refresh=true", all[0]),
            None,
        );
        let (rest, _) = read_some(&source, &items[0], &cursor, usize::MAX).unwrap();
        assert_eq!(rest[..], all[30..]);
        // Nothing changed since the cursor, the plan's point in time is gone: proved and
        // continued in a new one.
        let server = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
        let (rt, source) = source_of(&server, None, 1);
        let items = source.plan().unwrap().items;
        let (first, cursor) = read_some(&source, &items[0], &None, 30).unwrap();
        let pit = items[0].extent.as_ref().unwrap()["pit"].clone();
        delete(&rt, &server, "/_pit", Some(json!({ "id": pit })));
        let (rest, _) = read_some(&source, &items[0], &cursor, usize::MAX).unwrap();
        let mut both = first.clone();
        both.extend(rest);
        assert_eq!(both.len(), 150);
        assert_eq!(both.iter().collect::<BTreeSet<_>>().len(), 150);
        // Gone again, and a document given deleted: the new view cannot be proved.
        let items = source.plan().unwrap().items;
        let (first, cursor) = read_some(&source, &items[0], &None, 30).unwrap();
        let pit = items[0].extent.as_ref().unwrap()["pit"].clone();
        delete(&rt, &server, "/_pit", Some(json!({ "id": pit })));
        delete(
            &rt,
            &server,
            &format!("/p/_doc/{}?refresh=true", first[3]),
            None,
        );
        let e = read_some(&source, &items[0], &cursor, usize::MAX).unwrap_err();
        assert!(!e.coverage, "{e}");
        assert!(e.message.contains("the index changed since"), "{e}");
        drop(rt);
    }

    /// Items planned by an older rfs (no extent) are read as it read them: slice `part`
    /// of the worker's `--slices`.
    #[test]
    fn items_without_extent_are_read_as_before() {
        let server = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
        let (rt, source) = source_of(&server, None, 3);
        let mut all = BTreeSet::new();
        for part in 0..3 {
            let item = WorkItem::whole("p", part);
            let (ids, _) = read_some(&source, &item, &None, usize::MAX).unwrap();
            all.extend(ids);
        }
        assert_eq!(all.len(), 150);
        drop(rt);
    }

    /// The plan records each item's extent; a worker with other `--slices` reads the
    /// plan's.
    #[test]
    fn the_plan_records_each_extent_and_a_worker_reads_it() {
        let server = TestServer::start(ServerConfig::elasticsearch("8.11.3"));
        let (rt, planner) = source_of(&server, None, 3);
        let items = planner.plan().unwrap().items;
        let e: Extent = serde_json::from_value(items[2].extent.clone().unwrap()).unwrap();
        assert_eq!((e.reader, e.slice, e.slices), (ReaderKind::Pit, 2, 3));
        assert!(e.pit.is_some());
        let worker = rt.block_on(async {
            let client = Client::new(cluster::ClientConfig::new(server.url())).unwrap();
            ClusterSource::open(
                client,
                server.url(),
                "p",
                ClusterSourceOptions {
                    slices: 16,
                    page_size: 11,
                    keep_alive: "1m".into(),
                },
            )
            .await
            .unwrap()
        });
        let mut all = BTreeSet::new();
        for item in &items {
            let (ids, _) = read_some(&worker, item, &None, usize::MAX).unwrap();
            all.extend(ids);
        }
        assert_eq!(all.len(), 150);
        // Every slice ended: the plan's point in time is closed.
        assert_eq!(server.open_search_contexts(), 0);
        drop(rt);
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
