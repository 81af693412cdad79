//! A snapshot repository writer in the Elasticsearch 7.10 layout, for tests, benchmarks
//! and demos: wraps Lucene index directories (plus settings, mappings, aliases and
//! templates) as snapshots that [`crate::Repository`] — or Elasticsearch — can read.
//!
//! Options cover what real repositories rarely show: multi-part files (small part size),
//! `DFL\0`/`ZSTD\0` compressed metadata, and PARTIAL snapshots with failed shards; and
//! the layouts of newer versions: OpenSearch hashed shard paths ([`WriteOptions::
//! shard_path_type`], with `snapshot_shard_paths/` blobs and a bucket `base_path`),
//! Elasticsearch 8 repository data (`index_version`, repository and cluster uuids, data
//! streams with hidden backing indices, extra index-metadata keys) and OpenSearch
//! remote-store shallow copies ([`ShardSource::RemoteStore`]).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use lucene::Directory;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

use crate::envelope::{self, codec, EnvelopeCompression};
use crate::error::{Error, Result};
use crate::metadata::{FileInfo, TypeMapping};
use crate::repository::Snapshot;
use crate::shard_paths::{
    self, PathHashAlgorithm, ShardDirLocation, ShardPathType, ShardPathsName,
};
use crate::xcontent::{self, Binary};
use lucene::names::base36;

/// How to write the repository.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// Split files longer than this into `.partN` blobs (`None`: one blob per file).
    pub part_size: Option<u64>,
    /// Compression of every enveloped metadata blob.
    pub compression: EnvelopeCompression,
    /// Store `segments_N` and `.si` files inline as `v__` entries, as ES 7.x does.
    pub inline_metadata_files: bool,
    /// Seed of the generated UUIDs (same inputs and seed → same repository).
    pub seed: u64,
    /// Shard directory layout (OpenSearch 2.17+ `shard_path_type`); recorded per index in
    /// the repository data and, for the hashed layouts, in `snapshot_shard_paths/`.
    pub shard_path_type: ShardPathType,
    /// Write the `snapshot_shard_paths/` blobs of hashed layouts (OpenSearch does, but does
    /// not fail a snapshot when it cannot; `false` leaves the reader to compute the paths).
    pub record_shard_paths: bool,
    /// The repository's `base_path` inside a bucket: the destination directory is then
    /// the bucket root, the repository is written under `<dest>/<base_path>`, and
    /// HASHED_PREFIX shard directories under `<dest>/<hash>/<base_path>/…`.
    pub base_path: String,
    /// The separator between the fields of `snapshot_shard_paths/` blob names: `#` (what
    /// later OpenSearch releases write) or `.` (OpenSearch 2.17–2.18); see
    /// [`ShardPathsName`].
    pub shard_paths_separator: char,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            part_size: None,
            compression: EnvelopeCompression::None,
            inline_metadata_files: true,
            seed: 42,
            shard_path_type: ShardPathType::Fixed,
            record_shard_paths: true,
            base_path: String::new(),
            shard_paths_separator: '#',
        }
    }
}

/// Where a shard's data comes from.
#[derive(Debug, Clone)]
pub enum ShardSource {
    /// A Lucene index directory (its latest `segments_N` and every file it lists).
    Lucene(Arc<dyn Directory>),
    /// The shard failed: no data is written and the snapshot becomes PARTIAL.
    Failed { reason: String },
    /// An OpenSearch remote-store-backed shard snapshotted as a shallow copy: only a
    /// `shallow-snap-<uuid>.dat` naming the remote segment store, no files.
    RemoteStore { repository: String },
}

/// One index of a snapshot to write.
#[derive(Debug, Clone)]
pub struct IndexSpec {
    pub name: String,
    /// Flat settings; `index.number_of_shards` is set from `shards`.
    pub settings: Map<String, Value>,
    pub mappings: Vec<TypeMapping>,
    pub aliases: Map<String, Value>,
    pub shards: Vec<ShardSource>,
    /// Other top-level keys of the index metadata (`system`, Elasticsearch 8's
    /// `timestamp_range`, `mappings_updated_version`, …), written as given.
    pub extra: Map<String, Value>,
}

impl IndexSpec {
    /// An index of one shard from a local Lucene directory, with default settings.
    pub fn from_lucene_dir(name: &str, path: &Path) -> Result<IndexSpec> {
        let dir = lucene::FsDirectory::open(path)?;
        Ok(IndexSpec {
            name: name.to_string(),
            settings: Map::new(),
            mappings: vec![TypeMapping {
                doc_type: "_doc".into(),
                mapping: json!({"properties": {}}),
            }],
            aliases: Map::new(),
            shards: vec![ShardSource::Lucene(Arc::new(dir))],
            extra: Map::new(),
        })
    }
}

/// A data stream of a snapshot's global metadata.
#[derive(Debug, Clone)]
pub struct DataStreamSpec {
    pub name: String,
    pub timestamp_field: String,
    /// Backing index names (indices of the snapshot), oldest first.
    pub indices: Vec<String>,
}

/// One snapshot to write.
#[derive(Debug, Clone)]
pub struct SnapshotSpec {
    pub name: String,
    /// Version id of the "cluster" that took it (7100299 = 7.10.2).
    pub version_id: u32,
    pub indices: Vec<IndexSpec>,
    pub legacy_templates: BTreeMap<String, Value>,
    pub component_templates: BTreeMap<String, Value>,
    pub index_templates: BTreeMap<String, Value>,
    /// Data streams (global metadata `data_stream`, SnapshotInfo `data_streams`).
    pub data_streams: Vec<DataStreamSpec>,
    /// Elasticsearch 8.11+: the `IndexVersion` id written beside `version` in the
    /// repository data (whose `version` then reads "8.11.0").
    pub index_version: Option<u32>,
    /// Elasticsearch 8.15+ failure stores: data stream name → its failure-store indices
    /// (`.fs-…`, indices of the snapshot), written as the stream's `failure_indices`.
    pub failure_indices: BTreeMap<String, Vec<String>>,
}

impl SnapshotSpec {
    /// An empty snapshot of `name` taken by "7.10.2".
    pub fn new(name: &str) -> SnapshotSpec {
        SnapshotSpec {
            name: name.to_string(),
            version_id: 7_10_02_99,
            indices: Vec::new(),
            legacy_templates: BTreeMap::new(),
            component_templates: BTreeMap::new(),
            index_templates: BTreeMap::new(),
            data_streams: Vec::new(),
            index_version: None,
            failure_indices: BTreeMap::new(),
        }
    }

    /// Everything of an existing snapshot: metadata, templates and every shard (read in
    /// place from its repository). Shards that failed there stay failed.
    pub fn from_snapshot(snap: &Snapshot) -> Result<SnapshotSpec> {
        let global = snap.global_metadata()?;
        let mut spec = SnapshotSpec {
            name: snap.name().to_string(),
            version_id: snap.info().version_id.unwrap_or(7_10_02_99),
            indices: Vec::new(),
            legacy_templates: global.legacy_templates,
            component_templates: global.component_templates,
            index_templates: global.index_templates,
            data_streams: global
                .data_streams
                .values()
                .map(|d| DataStreamSpec {
                    name: d.name.clone(),
                    timestamp_field: d.timestamp_field.clone(),
                    indices: d.indices.clone(),
                })
                .collect(),
            index_version: None,
            failure_indices: global
                .data_streams
                .values()
                .filter(|d| !d.failure_indices.is_empty())
                .map(|d| (d.name.clone(), d.failure_indices.clone()))
                .collect(),
        };
        for name in snap.index_names() {
            let index = snap.index_as_stored(&name)?;
            let md = index.metadata();
            let mut shards = Vec::new();
            for s in 0..index.number_of_shards() {
                shards.push(match index.shard_failure(s) {
                    Some(reason) => ShardSource::Failed { reason },
                    None => ShardSource::Lucene(index.open_shard(s)?.directory().clone()),
                });
            }
            let mut extra = Map::new();
            if md.is_system() {
                extra.insert("system".into(), Value::Bool(true));
            }
            spec.indices.push(IndexSpec {
                name,
                settings: md.settings.clone(),
                mappings: md.mappings.clone(),
                aliases: md.aliases.clone(),
                shards,
                extra,
            });
        }
        Ok(spec)
    }
}

/// Snapshot name and files, for every snapshot of one shard.
type ShardHistory = Vec<(String, Vec<FileInfo>)>;

pub(crate) struct Ids(pub(crate) rand::rngs::StdRng);

impl Ids {
    pub(crate) fn uuid(&mut self) -> String {
        let b: [u8; 16] = self.0.gen();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    }
    pub(crate) fn blob_id(&mut self) -> String {
        let b: [u8; 15] = self.0.gen();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    }
}

pub(crate) fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Backend {
        blob: path.display().to_string(),
        message: e.to_string(),
    }
}

pub(crate) fn put(root: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let path = root.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io(parent, e))?;
    }
    std::fs::write(&path, bytes).map_err(|e| io(&path, e))
}

fn latest_commit(dir: &dyn Directory) -> Result<String> {
    dir.list_files()?
        .into_iter()
        .filter(|n| n.starts_with("segments_"))
        .max_by_key(|n| lucene::names::parse_base36(&n["segments_".len()..]).unwrap_or(0))
        .ok_or_else(|| Error::Config(format!("{dir:?}: no segments_N file (not a Lucene index)")))
}

/// What one shard's files became.
pub(crate) struct WrittenShard {
    pub(crate) files: Vec<FileInfo>,
    pub(crate) total: u64,
}

fn write_shard(
    root: &Path,
    shard_dir: &str,
    dir: &dyn Directory,
    opts: &WriteOptions,
    ids: &mut Ids,
) -> Result<WrittenShard> {
    write_shard_reusing(root, shard_dir, dir, opts, ids, &[])
}

/// Writes the blobs of `dir`'s latest commit, except files `existing` holds already (same
/// Lucene name, length and checksum), which are listed with their existing blob. `total`
/// counts the bytes of the files written.
pub(crate) fn write_shard_reusing(
    root: &Path,
    shard_dir: &str,
    dir: &dyn Directory,
    opts: &WriteOptions,
    ids: &mut Ids,
    existing: &[FileInfo],
) -> Result<WrittenShard> {
    let commit = latest_commit(dir)?;
    let mut names: Vec<String> = dir
        .list_files()?
        .into_iter()
        .filter(|n| !n.starts_with("segments") || *n == commit)
        .filter(|n| n != "write.lock" && !n.starts_with("pending_segments"))
        .collect();
    names.sort();
    let mut files = Vec::new();
    let mut total = 0;
    for name in names {
        let slice = dir.open_file(&name)?;
        let len = slice.len();
        if len < 16 {
            return Err(Error::corrupt(slice.name(), "shorter than a Lucene footer"));
        }
        let tail = slice.read_bytes(len - 8..len)?;
        let crc = u64::from_be_bytes(tail[..].try_into().expect("8 bytes"));
        let checksum = base36(crc);
        if let Some(held) = existing.iter().find(|f| {
            f.physical_name == name && f.length == len && f.checksum.as_deref() == Some(&checksum)
        }) {
            files.push(held.clone());
            continue;
        }
        let inline =
            opts.inline_metadata_files && (name.starts_with("segments_") || name.ends_with(".si"));
        let mut info = FileInfo {
            name: String::new(),
            physical_name: name.clone(),
            length: len,
            checksum: Some(checksum),
            part_size: Some(opts.part_size.unwrap_or(i64::MAX as u64)),
            written_by: Some("8.7.0".into()),
            meta_hash: None,
            writer_uuid: None,
        };
        if inline {
            info.name = format!("v__{}", ids.uuid());
            info.meta_hash = Some(Binary(slice.read_all()?.to_vec()));
        } else {
            info.name = format!("__{}", ids.uuid());
            let mut start = 0u64;
            for (blob, part_len) in info.parts() {
                let path = root.join(shard_dir).join(&blob);
                if let Some(p) = path.parent() {
                    std::fs::create_dir_all(p).map_err(|e| io(p, e))?;
                }
                let mut out = std::io::BufWriter::new(
                    std::fs::File::create(&path).map_err(|e| io(&path, e))?,
                );
                let mut pos = start;
                while pos < start + part_len {
                    let end = (pos + (8 << 20)).min(start + part_len);
                    out.write_all(&slice.read_bytes(pos..end)?)
                        .map_err(|e| io(&path, e))?;
                    pos = end;
                }
                out.flush().map_err(|e| io(&path, e))?;
                start += part_len;
            }
        }
        total += len;
        files.push(info);
    }
    Ok(WrittenShard { files, total })
}

pub(crate) fn seal(value: &Value, c: &str, opts: &WriteOptions) -> Vec<u8> {
    envelope::seal(c, &xcontent::to_smile(value), opts.compression)
}

/// Writes `snapshots` as a new repository in `dest` (which must be empty or absent). With
/// a [`WriteOptions::base_path`], `dest` is the bucket root and the repository is written
/// under `<dest>/<base_path>`.
pub fn write_repository(
    dest: &Path,
    snapshots: &[SnapshotSpec],
    opts: &WriteOptions,
) -> Result<()> {
    if dest.exists()
        && std::fs::read_dir(dest)
            .map_err(|e| io(dest, e))?
            .next()
            .is_some()
    {
        return Err(Error::Config(format!(
            "{}: not empty; the writer only creates new repositories",
            dest.display()
        )));
    }
    let base = opts.base_path.trim_matches('/');
    if base.split('/').any(|c| c == ".." || c == ".") {
        return Err(Error::Config(format!(
            "base path {base:?} is not a relative path"
        )));
    }
    let repo_root = if base.is_empty() {
        dest.to_path_buf()
    } else {
        dest.join(base)
    };
    std::fs::create_dir_all(&repo_root).map_err(|e| io(&repo_root, e))?;
    let mut ids = Ids(rand::rngs::StdRng::seed_from_u64(opts.seed));
    let cluster_uuid = ids.uuid();
    let repository_uuid = ids.uuid();
    // Per index name: repository id and index uuid, shared by every snapshot.
    let mut index_ids: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut repo_snapshots = Vec::new();
    let mut repo_indices: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    // Most shards each index had in any snapshot (for `snapshot_shard_paths/`).
    let mut shard_counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut identifiers = Map::new();
    // (index id, shard) → snapshot name → files
    let mut shard_history: BTreeMap<(String, usize), ShardHistory> = BTreeMap::new();
    let start_time = 1_700_000_000_000i64;
    // Where a shard directory is, as a path under `dest`.
    let shard_path = |index_id: &str, s: usize| -> String {
        match shard_paths::shard_dir(opts.shard_path_type, index_id, s as u32, base) {
            ShardDirLocation::InRepository(d) if base.is_empty() => d,
            ShardDirLocation::InRepository(d) => format!("{base}/{d}"),
            ShardDirLocation::InBucket(d) => d,
        }
    };

    for snap in snapshots {
        let uuid = ids.uuid();
        let mut failures = Vec::new();
        let mut total_shards = 0;
        let mut lookup = Map::new();
        let mut index_names = Vec::new();
        let mut shallow = false;
        for index in &snap.indices {
            let (index_id, index_uuid) = index_ids
                .entry(index.name.clone())
                .or_insert_with(|| (ids.uuid(), ids.uuid()))
                .clone();
            index_names.push(index.name.clone());
            let n = index.shards.len();
            if n == 0 {
                return Err(Error::Config(format!("index {} has no shards", index.name)));
            }
            let count = shard_counts.entry(index.name.clone()).or_insert(0);
            *count = (*count).max(n);
            let mut settings = index.settings.clone();
            settings.insert("index.number_of_shards".into(), json!(n.to_string()));
            settings
                .entry("index.number_of_replicas")
                .or_insert(json!("0"));
            settings.entry("index.uuid").or_insert(json!(index_uuid));
            settings
                .entry("index.version.created")
                .or_insert(json!(snap.version_id.to_string()));
            settings
                .entry("index.provided_name")
                .or_insert(json!(index.name));
            settings
                .entry("index.creation_date")
                .or_insert(json!(start_time.to_string()));
            let uuid_in_settings = settings["index.uuid"]
                .as_str()
                .unwrap_or(&index_uuid)
                .to_string();
            let mappings: Vec<Value> = index
                .mappings
                .iter()
                .map(|m| json!({ m.doc_type.clone(): m.mapping }))
                .collect();
            let mut inner = json!({
                "version": 1, "mapping_version": 1, "settings_version": 1, "aliases_version": 1,
                "routing_num_shards": n * 1024usize.div_ceil(n).next_power_of_two().max(1),
                "state": "open",
                "settings": settings,
                "mappings": mappings,
                "aliases": index.aliases,
                "primary_terms": vec![1; n],
                "in_sync_allocations": (0..n).map(|s| (s.to_string(), json!([]))).collect::<Map<_, _>>(),
                "rollover_info": {},
                "system": false,
            });
            if let Value::Object(o) = &mut inner {
                for (k, v) in &index.extra {
                    o.insert(k.clone(), v.clone());
                }
            }
            let md = json!({ index.name.clone(): inner });
            let ident = format!("{uuid_in_settings}-_na_-1-1-1");
            let blob_id = identifiers
                .get(&ident)
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| ids.blob_id());
            put(
                &repo_root,
                &format!("indices/{index_id}/meta-{blob_id}.dat"),
                &seal(&md, codec::INDEX_METADATA, opts),
            )?;
            identifiers.insert(ident.clone(), json!(blob_id));
            lookup.insert(index_id.clone(), json!(ident));
            repo_indices
                .entry(index.name.clone())
                .or_insert_with(|| (index_id.clone(), Vec::new()))
                .1
                .push(uuid.clone());

            for (s, source) in index.shards.iter().enumerate() {
                total_shards += 1;
                let shard_dir = shard_path(&index_id, s);
                match source {
                    ShardSource::Failed { reason } => failures.push(json!({
                        "index": index.name, "index_uuid": index_id, "shard_id": s,
                        "reason": reason, "node_id": "node-1", "status": "INTERNAL_SERVER_ERROR",
                    })),
                    ShardSource::RemoteStore { repository } => {
                        shallow = true;
                        let shallow_snap = json!({
                            "name": snap.name, "index_version": 0, "start_time": start_time,
                            "time": 1, "number_of_files": 0, "total_size": 0,
                            "index_uuid": uuid_in_settings, "remote_store_repository": repository,
                            "commit_generation": 3, "primary_term": 1,
                        });
                        put(
                            dest,
                            &format!("{shard_dir}/shallow-snap-{uuid}.dat"),
                            &seal(&shallow_snap, codec::SNAPSHOT, opts),
                        )?;
                    }
                    ShardSource::Lucene(dir) => {
                        let w = write_shard(dest, &shard_dir, dir.as_ref(), opts, &mut ids)?;
                        let shard_snap = ShardSnapshotOut {
                            name: &snap.name,
                            index_version: 0,
                            start_time,
                            time: 1,
                            number_of_files: w.files.len() as u64,
                            total_size: w.total,
                            files: &w.files,
                        };
                        put(
                            dest,
                            &format!("{shard_dir}/snap-{uuid}.dat"),
                            &envelope::seal(
                                codec::SNAPSHOT,
                                &xcontent::to_smile(&shard_snap),
                                opts.compression,
                            ),
                        )?;
                        shard_history
                            .entry((index_id.clone(), s))
                            .or_default()
                            .push((snap.name.clone(), w.files));
                    }
                }
            }
        }
        let state = if failures.is_empty() {
            "SUCCESS"
        } else {
            "PARTIAL"
        };
        let data_stream_names: Vec<&str> =
            snap.data_streams.iter().map(|d| d.name.as_str()).collect();
        let mut info = json!({"snapshot": {
            "name": snap.name, "uuid": uuid, "version_id": snap.version_id,
            "indices": index_names, "data_streams": data_stream_names, "include_global_state": true,
            "state": state, "metadata": null, "start_time": start_time, "end_time": start_time + 1000,
            "total_shards": total_shards, "successful_shards": total_shards - failures.len(),
            "failures": failures,
        }});
        if shallow {
            info["snapshot"]["remote_store_index_shallow_copy"] = json!(true);
        }
        put(
            &repo_root,
            &format!("snap-{uuid}.dat"),
            &seal(&info, codec::SNAPSHOT, opts),
        )?;
        let data_streams: Map<String, Value> = snap
            .data_streams
            .iter()
            .map(|d| {
                let refs = |names: &[String]| -> Vec<Value> {
                    names
                        .iter()
                        .map(|i| {
                            let uuid = index_ids.get(i).map(|(_, u)| u.clone()).unwrap_or_default();
                            json!({"index_name": i, "index_uuid": uuid})
                        })
                        .collect()
                };
                let mut ds = json!({"name": d.name, "timestamp_field": {"name": d.timestamp_field},
                       "indices": refs(&d.indices), "generation": d.indices.len(),
                       "hidden": false, "replicated": false, "system": false,
                       "allow_custom_routing": false});
                // Elasticsearch 8.15+: the failure store's indices beside the backing ones
                // (`failure_store`, `failure_indices` in DataStream.toXContent).
                if let Some(failures) = snap.failure_indices.get(&d.name) {
                    ds["failure_store"] = json!(true);
                    ds["failure_indices"] = json!(refs(failures));
                }
                (d.name.clone(), ds)
            })
            .collect();
        let global = json!({"meta-data": {
            "version": 1, "cluster_uuid": cluster_uuid, "cluster_uuid_committed": true,
            "templates": snap.legacy_templates,
            "index_template": {"index_template": snap.index_templates},
            "component_template": {"component_template": snap.component_templates},
            "data_stream": {"data_stream": data_streams, "data_stream_aliases": {}},
        }});
        put(
            &repo_root,
            &format!("meta-{uuid}.dat"),
            &seal(&global, codec::METADATA, opts),
        )?;
        let v = crate::IndexVersion::from_id(u64::from(snap.version_id))
            .map(crate::IndexVersion::release_floor)
            .unwrap_or(crate::metadata::ProductVersion::es(7, 10));
        let mut entry = json!({
            "name": snap.name, "uuid": uuid, "state": if failures.is_empty() { 1 } else { 3 },
            "index_metadata_lookup": lookup,
            "version": v.number(),
        });
        if let Some(iv) = snap.index_version {
            entry["version"] = json!("8.11.0");
            entry["index_version"] = json!(iv);
        }
        if v.at_least_es(7, 14) {
            entry["start_time_millis"] = json!(start_time);
            entry["end_time_millis"] = json!(start_time + 1000);
        }
        repo_snapshots.push(entry);
    }

    // Shard index-<gen> blobs, one per shard, listing every snapshot of the shard.
    let mut generations: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for ((index_id, s), history) in &shard_history {
        let gen = ids.uuid();
        let mut all: Vec<&FileInfo> = Vec::new();
        let mut snaps = Map::new();
        for (name, files) in history {
            for f in files {
                if !all.iter().any(|a| a.name == f.name) {
                    all.push(f);
                }
            }
            snaps.insert(
                name.clone(),
                json!({"files": files.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
                       "shard_state_id": format!("{}-{s}", ids.uuid())}),
            );
        }
        let out = ShardSnapshotsOut {
            files: all,
            snapshots: snaps,
        };
        put(
            dest,
            &format!("{}/index-{gen}", shard_path(index_id, *s)),
            &envelope::seal(
                codec::SNAPSHOTS,
                &xcontent::to_smile(&out),
                opts.compression,
            ),
        )?;
        let gens = generations.entry(index_id.clone()).or_default();
        if gens.len() <= *s {
            gens.resize(*s + 1, Value::Null);
        }
        gens[*s] = json!(gen);
    }

    let hashed = opts.shard_path_type != ShardPathType::Fixed;
    let mut indices = Map::new();
    for (name, (id, uuids)) in repo_indices {
        let gens = generations.remove(&id).unwrap_or_default();
        let mut entry = json!({"id": id, "snapshots": uuids, "shard_generations": gens});
        if hashed {
            entry["shard_path_type"] = json!(opts.shard_path_type.code());
            let n = shard_counts.get(&name).copied().unwrap_or(1);
            if opts.record_shard_paths {
                write_shard_paths(&repo_root, &id, &name, n, opts, base)?;
            }
        }
        indices.insert(name, entry);
    }
    let last = snapshots
        .last()
        .and_then(|s| crate::IndexVersion::from_id(u64::from(s.version_id)))
        .map(crate::IndexVersion::release_floor);
    let mut data = json!({
        "snapshots": repo_snapshots,
        "indices": indices,
        "min_version": "7.9.0",
        "index_metadata_identifiers": identifiers,
    });
    if let Some(v) = last.filter(|v| v.at_least_es(7, 12)) {
        data["min_version"] = json!(if v.major >= 8 { "7.12.0" } else { "7.9.0" });
        data["uuid"] = json!(repository_uuid);
        data["cluster_id"] = json!(cluster_uuid);
    }
    put(
        &repo_root,
        "index-0",
        &serde_json::to_vec(&data).expect("JSON"),
    )?;
    put(&repo_root, "index.latest", &0i64.to_be_bytes())?;
    Ok(())
}

/// `snapshot_shard_paths/<id>#<name>#<shards>#<type>#<hash>`: plain JSON naming every
/// shard directory relative to the bucket root, with a trailing `/`, as OpenSearch writes.
fn write_shard_paths(
    repo_root: &Path,
    index_id: &str,
    index_name: &str,
    shards: usize,
    opts: &WriteOptions,
    base: &str,
) -> Result<()> {
    let paths: Vec<String> = (0..shards)
        .map(|s| {
            let d = match shard_paths::shard_dir(opts.shard_path_type, index_id, s as u32, base) {
                ShardDirLocation::InRepository(d) if base.is_empty() => d,
                ShardDirLocation::InRepository(d) => format!("{base}/{d}"),
                ShardDirLocation::InBucket(d) => d,
            };
            format!("{d}/")
        })
        .collect();
    let name = ShardPathsName {
        index_id: index_id.to_string(),
        index_name: index_name.to_string(),
        shard_count: shards as u32,
        path_type: opts.shard_path_type,
        hash: PathHashAlgorithm::Fnv1aComposite1,
        listed: None,
    };
    let body = json!({
        "indexId": index_id, "indexName": index_name, "number_of_shards": shards,
        "shard_path_type": opts.shard_path_type.code(),
        "shard_path_hash_algorithm": PathHashAlgorithm::Fnv1aComposite1.code(),
        "paths": paths,
    });
    put(
        repo_root,
        &format!(
            "{}/{}",
            shard_paths::SHARD_PATHS_DIR,
            name.blob_name_with(opts.shard_paths_separator)
        ),
        &serde_json::to_vec(&body).expect("JSON"),
    )
}

#[derive(serde::Serialize)]
pub(crate) struct ShardSnapshotOut<'a> {
    pub(crate) name: &'a str,
    pub(crate) index_version: i64,
    pub(crate) start_time: i64,
    pub(crate) time: i64,
    pub(crate) number_of_files: u64,
    pub(crate) total_size: u64,
    pub(crate) files: &'a [FileInfo],
}

#[derive(serde::Serialize)]
pub(crate) struct ShardSnapshotsOut<'a> {
    pub(crate) files: Vec<&'a FileInfo>,
    pub(crate) snapshots: Map<String, Value>,
}

/// Writes into directory `dir` (created if absent) a Lucene commit holding no segments,
/// `segments_1` in the Lucene 8.6–10 format (format 10, written by 9.12.0): what a
/// searchable-snapshot (mounted) index leaves in a snapshot of it, since Elasticsearch
/// snapshots such a shard as an empty commit and keeps its data only in the snapshot it
/// was mounted from (`emptyIndexCommit` in
/// `x-pack/plugin/searchable-snapshots/src/main/java/org/elasticsearch/xpack/searchablesnapshots/SearchableSnapshotsUtils.java`,
/// elastic/elasticsearch). The layout (index header, version vints, created major,
/// version, counter, segment count, user data, CRC footer) is the one
/// `lucene::commit` reads.
pub fn write_empty_commit(dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let mut b = Vec::new();
    b.extend_from_slice(&0x3FD7_6C17u32.to_be_bytes());
    b.push(8);
    b.extend_from_slice(b"segments");
    b.extend_from_slice(&10i32.to_be_bytes());
    b.extend_from_slice(&[7u8; 16]); // commit id
    b.push(1);
    b.push(b'1'); // suffix: the generation in base 36
    b.extend_from_slice(&[9, 12, 0]); // Lucene 9.12.0
    b.push(9); // index created major
    b.extend_from_slice(&1i64.to_be_bytes()); // segment infos version
    b.push(0); // counter (vlong)
    b.extend_from_slice(&0i32.to_be_bytes()); // no segments
    b.push(0); // no user data
    b.extend_from_slice(&0xC028_93E8u32.to_be_bytes());
    b.extend_from_slice(&0i32.to_be_bytes());
    let crc = crc32fast::hash(&b);
    b.extend_from_slice(&u64::from(crc).to_be_bytes());
    let path = dir.join("segments_1");
    std::fs::write(&path, b).map_err(|e| io(&path, e))
}
