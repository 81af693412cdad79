//! Typed repository metadata: repository data (`index-N`), snapshot info, global
//! metadata (templates), index metadata, shard file lists. Settings and mappings stay
//! `serde_json::Value` so metadata migration can transform them.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::xcontent::{self, Binary};

/// State of a snapshot (repository data codes 0–4, or SnapshotInfo names).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum SnapshotState {
    InProgress,
    Success,
    Failed,
    Partial,
    Incompatible,
}

impl SnapshotState {
    /// From the numeric code of repository data.
    pub fn from_code(code: i64) -> Option<Self> {
        Some(match code {
            0 => Self::InProgress,
            1 => Self::Success,
            2 => Self::Failed,
            3 => Self::Partial,
            4 => Self::Incompatible,
            _ => return None,
        })
    }
    /// From the name used in SnapshotInfo.
    pub fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "IN_PROGRESS" => Self::InProgress,
            "SUCCESS" => Self::Success,
            "FAILED" => Self::Failed,
            "PARTIAL" => Self::Partial,
            "INCOMPATIBLE" => Self::Incompatible,
            _ => return None,
        })
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InProgress => "IN_PROGRESS",
            Self::Success => "SUCCESS",
            Self::Failed => "FAILED",
            Self::Partial => "PARTIAL",
            Self::Incompatible => "INCOMPATIBLE",
        }
    }
    /// Whether documents can be read from it (all shards, or all but the failed ones).
    pub fn is_restorable(self) -> bool {
        matches!(self, Self::Success | Self::Partial)
    }
}

impl fmt::Display for SnapshotState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

pub use product::{ProductVersion, TemplateKind};

use crate::index_version::IndexVersion;

/// One snapshot as listed in repository data.
#[derive(Debug, Clone, Serialize)]
pub struct SnapshotEntry {
    pub name: String,
    /// The snapshot UUID (the name itself for pre-5.0 repositories).
    pub uuid: String,
    pub state: Option<SnapshotState>,
    /// Version of the cluster that took it (7.6+).
    pub version: Option<String>,
    /// Repository index id → index-metadata identifier (7.9+).
    pub index_metadata_lookup: BTreeMap<String, String>,
    /// The `IndexVersion` id of the cluster that took it (Elasticsearch 8.11+, beside
    /// `version`; 8.9–8.10 write the id as `version` itself, read here).
    pub index_version: Option<i64>,
    /// Start and end in epoch milliseconds (Elasticsearch 7.14+).
    pub start_time_millis: Option<i64>,
    pub end_time_millis: Option<i64>,
}

/// One index as listed in repository data.
#[derive(Debug, Clone, Serialize)]
pub struct IndexEntry {
    /// The index name.
    pub name: String,
    /// The repository index id: the directory under `indices/`.
    pub id: String,
    /// UUIDs of the snapshots holding this index.
    pub snapshot_uuids: Vec<String>,
    /// Shard generations by shard number (7.6+); `None` = unknown, list the shard dir.
    pub shard_generations: Vec<Option<String>>,
    /// OpenSearch 2.17+ `shard_path_type` code (0 when absent): how the shard directories
    /// are laid out. See [`IndexEntry::shard_path_type`].
    pub shard_path_type_code: i64,
}

impl IndexEntry {
    /// The layout of this index's shard directories; an unknown code is an error naming
    /// the index.
    pub fn shard_path_type(&self) -> Result<crate::shard_paths::ShardPathType> {
        crate::shard_paths::ShardPathType::from_code(self.shard_path_type_code).ok_or_else(|| {
            Error::Unsupported {
                blob: format!("repository data, index {}", self.name),
                what: format!(
                    "shard_path_type {} (known: 0 FIXED, 1 HASHED_PREFIX, 2 HASHED_INFIX)",
                    self.shard_path_type_code
                ),
            }
        })
    }
}

/// The root `index-N` blob: which snapshots and indices the repository holds.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RepositoryData {
    /// `N` of the `index-N` blob read; -1 for an empty repository; `None` for a pre-5.0
    /// `index` blob.
    pub generation: Option<i64>,
    pub snapshots: Vec<SnapshotEntry>,
    /// By index name.
    pub indices: BTreeMap<String, IndexEntry>,
    /// Index-metadata identifier → metadata blob id (7.9+).
    pub index_metadata_identifiers: BTreeMap<String, String>,
    pub min_version: Option<String>,
    pub uuid: Option<String>,
    /// UUID of the last cluster that wrote the repository (Elasticsearch 7.12+).
    pub cluster_id: Option<String>,
}

fn str_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// `min_version` as text: a release string (`"7.12.0"`), or, as Elasticsearch 8.10+ may
/// write it, a numeric `IndexVersion` id, given as the earliest release that writes it
/// (elastic/elasticsearch `RepositoryData.java`, `snapshotsToXContent`, commit
/// `00eda34f0b61b0ef189b825eca5f011c4a159081`).
fn min_version_of(v: &Value) -> Option<String> {
    match v {
        Value::Number(n) => Some(match n.as_u64().and_then(IndexVersion::from_id) {
            Some(iv) => iv.release_floor().number(),
            None => n.to_string(),
        }),
        other => str_of(other),
    }
}

fn string_map(v: Option<&Value>) -> BTreeMap<String, String> {
    v.and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), str_of(v)?)))
                .collect()
        })
        .unwrap_or_default()
}

impl RepositoryData {
    /// Parses repository data (JSON; a `DFL\0` prefix is inflated first). Lenient: unknown
    /// keys are ignored and the legacy forms (bare snapshot names, `{name,uuid}` index
    /// snapshot entries, indices without ids) are accepted.
    pub fn parse(blob: &str, bytes: &[u8], generation: Option<i64>) -> Result<Self> {
        let (_, content) = crate::envelope::decompress(blob, bytes)?;
        let root = xcontent::decode_value(blob, &content)?;
        let root = root
            .as_object()
            .ok_or_else(|| Error::corrupt(blob, "repository data is not a JSON object"))?;
        let mut data = RepositoryData {
            generation,
            min_version: root.get("min_version").and_then(min_version_of),
            uuid: root.get("uuid").and_then(str_of),
            cluster_id: root.get("cluster_id").and_then(str_of),
            index_metadata_identifiers: string_map(root.get("index_metadata_identifiers")),
            ..Default::default()
        };
        for s in root
            .get("snapshots")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let entry = match s {
                Value::String(name) => SnapshotEntry {
                    name: name.clone(),
                    uuid: name.clone(),
                    state: None,
                    version: None,
                    index_metadata_lookup: BTreeMap::new(),
                    index_version: None,
                    start_time_millis: None,
                    end_time_millis: None,
                },
                Value::Object(o) => {
                    let name = o
                        .get("name")
                        .and_then(str_of)
                        .ok_or_else(|| Error::corrupt(blob, "snapshot entry without a name"))?;
                    SnapshotEntry {
                        uuid: o
                            .get("uuid")
                            .and_then(str_of)
                            .unwrap_or_else(|| name.clone()),
                        name,
                        state: o
                            .get("state")
                            .and_then(Value::as_i64)
                            .and_then(SnapshotState::from_code),
                        // 8.9–8.10 write `version` as the numeric IndexVersion id.
                        version: o.get("version").filter(|v| v.is_string()).and_then(str_of),
                        index_metadata_lookup: string_map(o.get("index_metadata_lookup")),
                        index_version: o
                            .get("index_version")
                            .or_else(|| o.get("version").filter(|v| v.is_number()))
                            .and_then(Value::as_i64),
                        start_time_millis: o.get("start_time_millis").and_then(Value::as_i64),
                        end_time_millis: o.get("end_time_millis").and_then(Value::as_i64),
                    }
                }
                other => {
                    return Err(Error::corrupt(
                        blob,
                        format!("snapshot entry is neither a name nor an object: {other}"),
                    ))
                }
            };
            data.snapshots.push(entry);
        }
        if let Some(indices) = root.get("indices").and_then(Value::as_object) {
            for (name, v) in indices {
                let id = v.get("id").and_then(str_of).unwrap_or_else(|| name.clone());
                let snapshot_uuids = v
                    .get("snapshots")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(|s| match s {
                        Value::String(u) => Some(u.clone()),
                        Value::Object(o) => {
                            o.get("uuid").or_else(|| o.get("name")).and_then(str_of)
                        }
                        _ => None,
                    })
                    .collect();
                let shard_generations = v
                    .get("shard_generations")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .map(|g| {
                        // Numeric generations in this array are unreliable; "_new" means
                        // no shard index blob yet: both mean "list the directory".
                        str_of(g).filter(|s| s != "_new" && !s.bytes().all(|b| b.is_ascii_digit()))
                    })
                    .collect();
                data.indices.insert(
                    name.clone(),
                    IndexEntry {
                        name: name.clone(),
                        id,
                        snapshot_uuids,
                        shard_generations,
                        shard_path_type_code: v
                            .get("shard_path_type")
                            .and_then(|c| c.as_i64().or_else(|| c.as_str()?.parse().ok()))
                            .unwrap_or(0),
                    },
                );
            }
        }
        Ok(data)
    }

    /// The snapshot named `name`.
    pub fn snapshot(&self, name: &str) -> Option<&SnapshotEntry> {
        self.snapshots.iter().find(|s| s.name == name)
    }

    /// Indices of the snapshot with `uuid`, by name, from the repository data.
    pub fn indices_of(&self, uuid: &str) -> Vec<&IndexEntry> {
        self.indices
            .values()
            .filter(|i| i.snapshot_uuids.iter().any(|u| u == uuid))
            .collect()
    }
}

/// A shard that failed when the snapshot was taken.
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq)]
pub struct ShardFailure {
    #[serde(default)]
    pub index: Option<String>,
    #[serde(default)]
    pub index_uuid: Option<String>,
    #[serde(default)]
    pub shard_id: Option<u32>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub node_id: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
}

/// Root `snap-<uuid>.dat`: one snapshot's state, indices and failures.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct SnapshotInfo {
    pub name: String,
    #[serde(default)]
    pub uuid: Option<String>,
    #[serde(default)]
    pub version_id: Option<u32>,
    /// Index names.
    #[serde(default)]
    pub indices: Vec<String>,
    #[serde(default)]
    pub data_streams: Vec<String>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
    #[serde(default)]
    pub include_global_state: Option<bool>,
    #[serde(default)]
    pub start_time: Option<i64>,
    #[serde(default)]
    pub end_time: Option<i64>,
    #[serde(default)]
    pub total_shards: Option<u32>,
    #[serde(default)]
    pub successful_shards: Option<u32>,
    #[serde(default)]
    pub failures: Vec<ShardFailure>,
    /// OpenSearch: remote-store-backed indices were snapshotted as shallow copies (their
    /// segments stay in the remote store).
    #[serde(default)]
    pub remote_store_index_shallow_copy: Option<bool>,
    /// OpenSearch shallow snapshot v2: the remote-store timestamp the snapshot pins
    /// (0 or absent otherwise).
    #[serde(default)]
    pub pinned_timestamp: Option<i64>,
}

#[derive(Deserialize)]
pub(crate) struct SnapshotInfoRoot {
    pub snapshot: SnapshotInfo,
}

impl SnapshotInfo {
    /// Version of the cluster that took the snapshot.
    pub fn version(&self) -> Option<ProductVersion> {
        self.index_version().map(IndexVersion::release_floor)
    }
    /// `version_id` as an index version (Elasticsearch 8.11+ writes an `IndexVersion` id).
    pub fn index_version(&self) -> Option<IndexVersion> {
        self.version_id
            .and_then(|id| IndexVersion::from_id(u64::from(id)))
    }
    /// Decoded state, if known.
    pub fn state(&self) -> Option<SnapshotState> {
        self.state.as_deref().and_then(SnapshotState::from_name)
    }
    /// The failure of shard `shard` of `index`, if it failed.
    pub fn shard_failure(&self, index: &str, shard: u32) -> Option<&ShardFailure> {
        self.failures
            .iter()
            .find(|f| f.index.as_deref() == Some(index) && f.shard_id == Some(shard))
    }
}

/// Root `meta-<uuid>.dat`: cluster-level metadata of a snapshot.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GlobalMetadata {
    /// Legacy templates by name: `{order, index_patterns | template, settings, mappings, aliases, version?}`.
    pub legacy_templates: BTreeMap<String, Value>,
    /// Component templates by name: `{template: {settings?, mappings?, aliases?}, version?, _meta?}`.
    pub component_templates: BTreeMap<String, Value>,
    /// Composable index templates by name: `{index_patterns, template?, composed_of, priority?, …}`.
    pub index_templates: BTreeMap<String, Value>,
    /// Persistent cluster settings, when present.
    pub persistent_settings: Option<Value>,
    /// Data streams (Elasticsearch 7.9+, OpenSearch 1.0+), by name.
    pub data_streams: BTreeMap<String, DataStream>,
    /// The whole `meta-data` object.
    pub raw: Map<String, Value>,
}

/// A data stream of the global metadata: its backing indices, oldest first (the last one
/// is the write index).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DataStream {
    pub name: String,
    /// The timestamp field (`@timestamp` unless configured otherwise).
    pub timestamp_field: String,
    /// Backing index names, oldest first.
    pub indices: Vec<String>,
    pub generation: Option<u64>,
    pub hidden: bool,
    pub system: bool,
    /// Elasticsearch `index_mode` of the stream (`time_series`, `logsdb`), when set.
    pub index_mode: Option<String>,
    /// Failure-store indices (`.fs-…`, Elasticsearch 8.15+ `failure_indices`, same shape
    /// as `indices`; elastic/elasticsearch `server/src/main/java/org/elasticsearch/cluster/
    /// metadata/DataStream.java`, `FAILURE_INDICES_FIELD`): documents whose ingestion
    /// failed, kept beside the backing indices.
    pub failure_indices: Vec<String>,
    /// The whole definition, for anything not lifted into a field.
    pub raw: Value,
}

impl DataStream {
    fn from_value(name: &str, v: &Value) -> DataStream {
        let names = |key: &str| -> Vec<String> {
            v.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|i| match i {
                    Value::String(n) => Some(n.clone()),
                    Value::Object(o) => o.get("index_name").and_then(str_of),
                    _ => None,
                })
                .collect()
        };
        let indices = names("indices");
        let failure_indices = names("failure_indices");
        let timestamp_field = match v.get("timestamp_field") {
            Some(Value::String(f)) => f.clone(),
            Some(Value::Object(o)) => o
                .get("name")
                .and_then(str_of)
                .unwrap_or_else(|| "@timestamp".into()),
            _ => "@timestamp".into(),
        };
        let flag = |k: &str| v.get(k).is_some_and(|b| b == true || b == "true");
        DataStream {
            name: v
                .get("name")
                .and_then(str_of)
                .unwrap_or_else(|| name.to_string()),
            timestamp_field,
            indices,
            generation: v.get("generation").and_then(Value::as_u64),
            hidden: flag("hidden"),
            system: flag("system"),
            index_mode: v.get("index_mode").and_then(str_of),
            failure_indices,
            raw: v.clone(),
        }
    }

    /// The index documents are written to: the newest backing index.
    pub fn write_index(&self) -> Option<&str> {
        self.indices.last().map(String::as_str)
    }
}

impl GlobalMetadata {
    pub(crate) fn from_value(blob: &str, v: Value) -> Result<Self> {
        let Value::Object(mut root) = v else {
            return Err(Error::corrupt(blob, "global metadata is not an object"));
        };
        let Some(Value::Object(md)) = root.remove("meta-data") else {
            return Err(Error::corrupt(
                blob,
                "global metadata has no \"meta-data\" object",
            ));
        };
        let map_of = |v: Option<&Value>| -> BTreeMap<String, Value> {
            v.and_then(Value::as_object)
                .map(|o| o.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default()
        };
        // Custom metadata is doubly nested: {"index_template":{"index_template":{...}}}.
        let nested = |key: &str| map_of(md.get(key).and_then(|v| v.get(key).or(Some(v))));
        // {"data_stream": {"data_stream": {name: {...}}, "data_stream_aliases": {...}}}
        let data_streams = nested("data_stream")
            .iter()
            .filter(|(_, v)| v.is_object())
            .map(|(name, v)| (name.clone(), DataStream::from_value(name, v)))
            .collect();
        Ok(GlobalMetadata {
            legacy_templates: map_of(md.get("templates")),
            component_templates: nested("component_template"),
            index_templates: nested("index_template"),
            persistent_settings: md.get("settings").cloned(),
            data_streams,
            raw: md,
        })
    }

    /// The data stream whose failure store `index` is, if any.
    pub fn failure_store_of(&self, index: &str) -> Option<&DataStream> {
        self.data_streams
            .values()
            .find(|d| d.failure_indices.iter().any(|i| i == index))
    }

    /// The data stream `index` backs, if any.
    pub fn data_stream_of(&self, index: &str) -> Option<&DataStream> {
        self.data_streams
            .values()
            .find(|d| d.indices.iter().any(|i| i == index))
    }

    /// Templates of one kind, by name.
    pub fn templates(&self, kind: TemplateKind) -> &BTreeMap<String, Value> {
        match kind {
            TemplateKind::Legacy => &self.legacy_templates,
            TemplateKind::Component => &self.component_templates,
            TemplateKind::Index => &self.index_templates,
        }
    }
}

/// One mapping of an index: its type name (`_doc`, or a custom type before 7.x) and the
/// type-less mapping body.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TypeMapping {
    pub doc_type: String,
    pub mapping: Value,
}

/// `indices/<id>/meta-*.dat`: one index's settings, mappings and aliases in a snapshot.
#[derive(Debug, Clone, Serialize)]
pub struct IndexMetadata {
    /// The index name.
    pub name: String,
    /// Flat settings (`"index.number_of_shards": "1"`), values as stored (strings).
    pub settings: Map<String, Value>,
    /// Mappings in stored order; several entries only for multi-type (≤ 6.x) indices.
    pub mappings: Vec<TypeMapping>,
    /// Alias name → definition (`{}` or `filter`, `index_routing`, `search_routing`, …).
    pub aliases: Map<String, Value>,
    pub number_of_shards: u32,
    pub routing_num_shards: Option<u32>,
    /// `open` or `close`.
    pub state: Option<String>,
    /// The whole inner object, for anything not lifted into a field.
    pub raw: Value,
}

/// Settings with nested objects flattened into dotted keys
/// (`{"index": {"number_of_shards": "1"}}` → `"index.number_of_shards": "1"`); a value
/// that is not an object is kept under the empty key.
pub fn flatten_settings(settings: &Value) -> Map<String, Value> {
    fn walk(prefix: &str, v: &Value, out: &mut Map<String, Value>) {
        match v {
            Value::Object(o) => {
                for (k, v) in o {
                    let key = if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    };
                    walk(&key, v, out);
                }
            }
            other => {
                out.insert(prefix.to_string(), other.clone());
            }
        }
    }
    let mut out = Map::new();
    walk("", settings, &mut out);
    out
}

/// `index.store.type` of a searchable-snapshot (mounted) index.
pub const MOUNTED_STORE_TYPE: &str = "snapshot";

/// The settings Elasticsearch adds when it mounts an index from a snapshot (besides the
/// `index.store.snapshot.*` ones): they make no sense on an ordinary index and are
/// removed when the index is created as one (`buildIndexSettings` in
/// `x-pack/plugin/searchable-snapshots/src/main/java/org/elasticsearch/xpack/searchablesnapshots/action/TransportMountSearchableSnapshotAction.java`,
/// elastic/elasticsearch commit `fb3ff2f33bf75efc6b755c10bf95465c5c12e7bb`; the data tier
/// preference is set by the same action from the mount's storage option).
pub const MOUNTED_INDEX_SETTINGS: &[&str] = &[
    "index.store.type",
    "index.recovery.type",
    "index.allocation.existing_shards_allocator",
    "index.routing.allocation.disk.watermark.ignore",
    "index.shard_limit.group",
    "index.routing.allocation.include._tier_preference",
];

/// Where the data of a searchable-snapshot (mounted) index is: Elasticsearch 7.10+
/// mounts an index of a snapshot as an index whose `index.store.type` is `snapshot`, and
/// since 7.11 a snapshot of such an index holds an empty commit only (elastic/
/// elasticsearch #66162, #68136), its documents staying in the snapshot it was mounted
/// from, named by these settings (`index.store.snapshot.*`; the keys in
/// `server/src/main/java/org/elasticsearch/snapshots/SearchableSnapshotsSettings.java`,
/// commit `09910273100b77a365b9246f245f84d1d1fd4b94`, and `SearchableSnapshots.java`;
/// `index_uuid` holds the repository's index id, the `indices/<id>` directory). ILM's
/// cold (`full_copy`) and frozen (`shared_cache`, `partial: true`) phases make them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MountedSnapshot {
    pub repository_name: Option<String>,
    /// Recorded from 7.12 on, when the repository had a uuid.
    pub repository_uuid: Option<String>,
    pub snapshot_name: Option<String>,
    pub snapshot_uuid: Option<String>,
    /// The index's name in that snapshot (recorded from 7.11 on).
    pub index_name: Option<String>,
    /// The repository index id of the index in that snapshot.
    pub index_id: Option<String>,
    /// A partially mounted (frozen tier, `shared_cache`) index.
    pub partial: bool,
}

impl fmt::Display for MountedSnapshot {
    /// `index logs-1 of snapshot daily-1 (uuid …) in repository found (uuid …)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let q = |v: &Option<String>| v.as_deref().unwrap_or("?").to_string();
        write!(
            f,
            "index {} (id {}) of snapshot {} (uuid {}) in repository {} (uuid {})",
            q(&self.index_name),
            q(&self.index_id),
            q(&self.snapshot_name),
            q(&self.snapshot_uuid),
            q(&self.repository_name),
            q(&self.repository_uuid),
        )
    }
}

impl IndexMetadata {
    pub(crate) fn from_value(blob: &str, v: Value) -> Result<Self> {
        let Value::Object(root) = v else {
            return Err(Error::corrupt(blob, "index metadata is not an object"));
        };
        let Some((name, inner)) = root.into_iter().next() else {
            return Err(Error::corrupt(blob, "index metadata is empty"));
        };
        let settings = inner
            .get("settings")
            .map(flatten_settings)
            .unwrap_or_default();
        let mut mappings = Vec::new();
        match inner.get("mappings") {
            Some(Value::Array(items)) => {
                for item in items {
                    mappings.extend(decode_mapping(blob, item)?);
                }
            }
            Some(Value::Object(o)) => {
                for (t, m) in o {
                    mappings.push(TypeMapping {
                        doc_type: t.clone(),
                        mapping: m.clone(),
                    });
                }
            }
            _ => {}
        }
        let aliases = inner
            .get("aliases")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let shards = settings
            .get("index.number_of_shards")
            .and_then(|v| str_of(v)?.parse::<u32>().ok())
            .ok_or_else(|| {
                Error::corrupt(blob, "index metadata has no valid index.number_of_shards")
            })?;
        if shards == 0 || shards > 100_000 {
            return Err(Error::corrupt(
                blob,
                format!("{shards} shards is impossible"),
            ));
        }
        Ok(IndexMetadata {
            name,
            number_of_shards: shards,
            routing_num_shards: inner
                .get("routing_num_shards")
                .and_then(Value::as_u64)
                .and_then(|n| u32::try_from(n).ok()),
            state: inner.get("state").and_then(str_of),
            settings,
            mappings,
            aliases,
            raw: inner,
        })
    }

    /// A setting's value as a string.
    pub fn setting(&self, key: &str) -> Option<String> {
        self.settings.get(key).and_then(str_of)
    }

    /// For a searchable-snapshot (mounted) index (`index.store.type: snapshot`), the
    /// snapshot that holds its data.
    pub fn mounted_snapshot(&self) -> Option<MountedSnapshot> {
        if self.setting("index.store.type").as_deref() != Some(MOUNTED_STORE_TYPE) {
            return None;
        }
        let get = |k: &str| self.setting(&format!("index.store.snapshot.{k}"));
        Some(MountedSnapshot {
            repository_name: get("repository_name"),
            repository_uuid: get("repository_uuid"),
            snapshot_name: get("snapshot_name"),
            snapshot_uuid: get("snapshot_uuid"),
            index_name: get("index_name"),
            index_id: get("index_uuid"),
            partial: match self.settings.get("index.store.snapshot.partial") {
                Some(Value::Bool(b)) => *b,
                Some(v) => str_of(v).is_some_and(|p| p == "true"),
                None => false,
            },
        })
    }

    /// The version id that created the index (`index.version.created`): compare it as an
    /// id ([`IndexVersion::on_or_after`]) for anything Elasticsearch keys on index versions.
    pub fn created_index_version(&self) -> Option<IndexVersion> {
        self.setting("index.version.created")
            .as_deref()
            .and_then(IndexVersion::parse)
    }

    /// The earliest release that can have created the index (`index.version.created`; for
    /// Elasticsearch 8.11+ ids the release line they belong to, see [`IndexVersion`]).
    pub fn created_version(&self) -> Option<ProductVersion> {
        self.created_index_version()
            .map(IndexVersion::release_floor)
    }

    /// Whether the index uses soft deletes: the stored setting, else on for indices
    /// created by 7.0+ (and by any OpenSearch).
    pub fn soft_deletes_enabled(&self) -> bool {
        match self.setting("index.soft_deletes.enabled").as_deref() {
            Some("true") => true,
            Some("false") => false,
            _ => self.created_version().is_some_and(|v| !v.es_before(7)),
        }
    }

    /// Mapping type names in stored order.
    pub fn mapping_types(&self) -> Vec<&str> {
        self.mappings.iter().map(|m| m.doc_type.as_str()).collect()
    }

    /// `index.mode` (Elasticsearch 8.x): `standard` when unset.
    pub fn index_mode(&self) -> IndexMode {
        match self.setting("index.mode") {
            None => IndexMode::Standard,
            Some(m) => IndexMode::parse(&m),
        }
    }

    /// How `_source` is kept: the `index.mapping.source.mode` setting (Elasticsearch
    /// 8.17+), else the mapping's `_source.mode` (8.4+) or `_source.enabled: false`, else
    /// the default of the index mode (synthetic for `time_series` and `logsdb`).
    ///
    /// Indices created from index version `SOURCE_MAPPER_MODE_ATTRIBUTE_NOOP` (9.x) on
    /// ignore `_source.mode` in their mappings: Elasticsearch keeps the parameter but
    /// gives it no effect (`SourceFieldMapper.PARSER` passes
    /// `indexVersionCreated().onOrAfter(SOURCE_MAPPER_MODE_ATTRIBUTE_NOOP)` to its builder,
    /// and `SourceFieldMapperTests` checks that `mode: synthetic`/`disabled` then leave
    /// `_source` stored; elastic/elasticsearch
    /// `server/src/main/java/org/elasticsearch/index/mapper/SourceFieldMapper.java`), so
    /// neither does this reader.
    pub fn source_mode(&self) -> SourceMode {
        if let Some(m) = self
            .setting("index.mapping.source.mode")
            .and_then(|m| SourceMode::parse(&m))
        {
            return m;
        }
        let mode_is_noop = self
            .created_index_version()
            .is_some_and(|v| v.on_or_after(IndexVersion::SOURCE_MAPPER_MODE_ATTRIBUTE_NOOP));
        for m in self.mappings.iter().filter(|_| !mode_is_noop) {
            let Some(src) = m.mapping.get("_source") else {
                continue;
            };
            if let Some(mode) = src
                .get("mode")
                .and_then(Value::as_str)
                .and_then(SourceMode::parse)
            {
                return mode;
            }
        }
        if self.source_disabled() {
            return SourceMode::Disabled;
        }
        match self.index_mode() {
            IndexMode::TimeSeries | IndexMode::Logsdb => SourceMode::Synthetic,
            _ => SourceMode::Stored,
        }
    }

    /// Whether the snapshot marks it a system index (`system: true`, 7.10+).
    pub fn is_system(&self) -> bool {
        self.raw
            .get("system")
            .is_some_and(|b| b == true || b == "true")
    }

    /// `index.hidden` (7.7+; data stream backing indices are hidden).
    pub fn is_hidden(&self) -> bool {
        self.setting("index.hidden").as_deref() == Some("true")
    }

    /// OpenSearch remote-store-backed index (`index.remote_store.enabled`): its segments
    /// live in the remote store, and a shallow-copy snapshot holds none of them.
    pub fn remote_store_enabled(&self) -> bool {
        self.setting("index.remote_store.enabled").as_deref() == Some("true")
    }

    /// Whether documents are stored without `_source` (synthetic or disabled, see
    /// [`IndexMetadata::source_mode`]): such an index needs `_source` rebuilt.
    pub fn source_not_stored(&self) -> bool {
        self.source_mode() != SourceMode::Stored
    }

    /// Where each field of a rebuilt `_source` comes from (the first mapping type with
    /// properties; several types are merged).
    pub fn source_plan(&self) -> crate::rebuild::SourcePlan {
        let mut props = Map::new();
        for m in &self.mappings {
            if let Some(p) = m.mapping.get("properties").and_then(Value::as_object) {
                for (k, v) in p {
                    props.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        crate::rebuild::SourcePlan::from_mapping(&serde_json::json!({ "properties": props }))
    }

    /// Whether any mapping disables `_source` (`"_source": {"enabled": false}`).
    pub fn source_disabled(&self) -> bool {
        self.mappings.iter().any(|m| {
            m.mapping
                .get("_source")
                .and_then(|s| s.get("enabled"))
                .is_some_and(|e| e == false || e == "false")
        })
    }
}

/// `index.mode` of an Elasticsearch 8.x index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum IndexMode {
    Standard,
    /// Time-series data stream index (8.7+): routing by dimensions, synthetic source.
    TimeSeries,
    /// Logs index (8.17+): sorted by host and time, synthetic source.
    Logsdb,
    /// Lookup index (8.18+): one shard, the right side of ES|QL lookup joins.
    Lookup,
    /// A value this reader does not know.
    Other(String),
}

impl IndexMode {
    pub fn parse(s: &str) -> IndexMode {
        match s {
            "standard" => IndexMode::Standard,
            "time_series" => IndexMode::TimeSeries,
            "logsdb" => IndexMode::Logsdb,
            "lookup" => IndexMode::Lookup,
            other => IndexMode::Other(other.to_string()),
        }
    }
}

/// How an index keeps `_source`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceMode {
    /// Stored as written (the default).
    Stored,
    /// Not stored: rebuilt from doc values and stored fields on read (Elasticsearch 8.4+).
    Synthetic,
    /// Not stored at all.
    Disabled,
}

impl SourceMode {
    pub fn parse(s: &str) -> Option<SourceMode> {
        match s.to_ascii_lowercase().as_str() {
            "stored" => Some(SourceMode::Stored),
            "synthetic" => Some(SourceMode::Synthetic),
            "disabled" => Some(SourceMode::Disabled),
            _ => None,
        }
    }
}

/// One element of `mappings`: `{"<type>": {...}}`, or compressed xcontent (base64 of
/// `DFL\0`+JSON/SMILE) in the binary form.
fn decode_mapping(blob: &str, item: &Value) -> Result<Vec<TypeMapping>> {
    let obj = match item {
        Value::Object(o) => o.clone(),
        Value::String(b64) => {
            let raw = base64::engine::general_purpose::STANDARD
                .decode(b64)
                .map_err(|e| Error::corrupt(blob, format!("binary mapping: {e}")))?;
            let (_, content) = crate::envelope::decompress(blob, &raw)?;
            match xcontent::decode_value(blob, &content)? {
                Value::Object(o) => o,
                _ => return Err(Error::corrupt(blob, "binary mapping is not an object")),
            }
        }
        _ => return Err(Error::corrupt(blob, "mapping entry is not an object")),
    };
    Ok(obj
        .into_iter()
        .map(|(doc_type, mapping)| TypeMapping { doc_type, mapping })
        .collect())
}

/// One Lucene file of a shard snapshot.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
pub struct FileInfo {
    /// Blob name in the shard directory: `__…`, or `v__…` for a virtual file.
    pub name: String,
    /// The Lucene file name.
    pub physical_name: String,
    pub length: u64,
    /// The Lucene footer CRC-32 in base 36.
    #[serde(default)]
    pub checksum: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part_size: Option<u64>,
    #[serde(default)]
    pub written_by: Option<String>,
    /// For `segments_N` and `.si` files: the whole file content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub meta_hash: Option<Binary>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub writer_uuid: Option<Binary>,
}

impl FileInfo {
    /// Whether the content lives only in `meta_hash` (no blob exists).
    pub fn is_virtual(&self) -> bool {
        self.name.starts_with("v__")
    }

    /// The blobs holding the file, with their lengths, in order.
    pub fn parts(&self) -> Vec<(String, u64)> {
        let part = self.part_size.filter(|&p| p > 0).unwrap_or(u64::MAX);
        if self.length <= part {
            return vec![(self.name.clone(), self.length)];
        }
        let n = self.length.div_ceil(part);
        (0..n)
            .map(|i| {
                let len = if i + 1 == n {
                    self.length - part * (n - 1)
                } else {
                    part
                };
                (format!("{}.part{i}", self.name), len)
            })
            .collect()
    }

    /// The checksum as a number, if it is a base-36 CRC.
    pub fn checksum_value(&self) -> Option<u64> {
        lucene::names::parse_base36(self.checksum.as_deref()?)
    }
}

/// Shard `snap-<uuid>.dat`: the complete file list of one shard in one snapshot.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct ShardSnapshot {
    /// The snapshot name.
    pub name: String,
    #[serde(default, alias = "index-version")]
    pub index_version: Option<i64>,
    #[serde(default)]
    pub start_time: Option<i64>,
    #[serde(default)]
    pub time: Option<i64>,
    /// Files uploaded by this snapshot (incremental).
    #[serde(default)]
    pub number_of_files: Option<u64>,
    /// Bytes uploaded by this snapshot (incremental).
    #[serde(default)]
    pub total_size: Option<u64>,
    #[serde(default)]
    pub files: Vec<FileInfo>,
}

impl ShardSnapshot {
    /// Total bytes of the shard's files (not the incremental `total_size`).
    pub fn size_in_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.length).sum()
    }
}

/// Shard `index-<gen>`: every file and every snapshot of a shard.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ShardSnapshots {
    #[serde(default)]
    pub files: Vec<FileInfo>,
    #[serde(default)]
    pub snapshots: BTreeMap<String, ShardSnapshotFiles>,
}

/// One snapshot in a shard `index-<gen>`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
pub struct ShardSnapshotFiles {
    #[serde(default)]
    pub files: Vec<String>,
    #[serde(default)]
    pub shard_state_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_split_like_elasticsearch() {
        let mut f = FileInfo {
            name: "__a".into(),
            physical_name: "_0.fdt".into(),
            length: 25,
            checksum: Some("1".into()),
            part_size: Some(10),
            written_by: None,
            meta_hash: None,
            writer_uuid: None,
        };
        assert_eq!(
            f.parts(),
            vec![
                ("__a.part0".into(), 10),
                ("__a.part1".into(), 10),
                ("__a.part2".into(), 5)
            ]
        );
        f.part_size = Some(i64::MAX as u64);
        assert_eq!(f.parts(), vec![("__a".into(), 25)]);
        f.part_size = Some(25);
        assert_eq!(f.parts(), vec![("__a".into(), 25)]);
        f.length = 0;
        assert_eq!(f.parts(), vec![("__a".into(), 0)]);
    }

    #[test]
    fn legacy_repository_data_forms() {
        let d = RepositoryData::parse(
            "index",
            br#"{"snapshots":["s1",{"name":"s2","uuid":"u2","state":3}],"indices":{"i":{"snapshots":[{"name":"s2","uuid":"u2"}],"shard_generations":["abc",null,"_new","7"]}}}"#,
            None,
        )
        .unwrap();
        assert_eq!(d.snapshots[0].uuid, "s1");
        assert_eq!(d.snapshots[1].state, Some(SnapshotState::Partial));
        assert_eq!(d.indices["i"].id, "i");
        assert_eq!(d.indices_of("u2").len(), 1);
        assert_eq!(
            d.indices["i"].shard_generations,
            vec![Some("abc".into()), None, None, None]
        );
    }
}
