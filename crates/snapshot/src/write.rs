//! A snapshot repository writer in the Elasticsearch 7.10 layout, for tests, benchmarks
//! and demos: wraps Lucene index directories (plus settings, mappings, aliases and
//! templates) as snapshots that [`crate::Repository`] — or Elasticsearch — can read.
//!
//! Options cover what real repositories rarely show: multi-part files (small part size),
//! `DFL\0`/`ZSTD\0` compressed metadata, and PARTIAL snapshots with failed shards.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use lucene::Directory;
use rand::{Rng, SeedableRng};
use serde_json::{json, Map, Value};

use crate::envelope::{self, codec, Compression};
use crate::error::{Error, Result};
use crate::metadata::{FileInfo, TypeMapping};
use crate::repository::Snapshot;
use crate::xcontent::{self, Binary};
use lucene::names::base36;

/// How to write the repository.
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// Split files longer than this into `.partN` blobs (`None`: one blob per file).
    pub part_size: Option<u64>,
    /// Compression of every enveloped metadata blob.
    pub compression: Compression,
    /// Store `segments_N` and `.si` files inline as `v__` entries, as ES 7.x does.
    pub inline_metadata_files: bool,
    /// Seed of the generated UUIDs (same inputs and seed → same repository).
    pub seed: u64,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            part_size: None,
            compression: Compression::None,
            inline_metadata_files: true,
            seed: 42,
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
        })
    }
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
        };
        for name in snap.index_names() {
            let index = snap.index(&name)?;
            let md = index.metadata();
            let mut shards = Vec::new();
            for s in 0..index.number_of_shards() {
                shards.push(match index.shard_failure(s) {
                    Some(reason) => ShardSource::Failed { reason },
                    None => ShardSource::Lucene(index.open_shard(s)?.directory().clone()),
                });
            }
            spec.indices.push(IndexSpec {
                name,
                settings: md.settings.clone(),
                mappings: md.mappings.clone(),
                aliases: md.aliases.clone(),
                shards,
            });
        }
        Ok(spec)
    }
}

/// Snapshot name and files, for every snapshot of one shard.
type ShardHistory = Vec<(String, Vec<FileInfo>)>;

struct Ids(rand::rngs::StdRng);

impl Ids {
    fn uuid(&mut self) -> String {
        let b: [u8; 16] = self.0.gen();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    }
    fn blob_id(&mut self) -> String {
        let b: [u8; 15] = self.0.gen();
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    }
}

fn io(path: &Path, e: std::io::Error) -> Error {
    Error::Backend {
        blob: path.display().to_string(),
        message: e.to_string(),
    }
}

fn put(root: &Path, name: &str, bytes: &[u8]) -> Result<()> {
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
struct WrittenShard {
    files: Vec<FileInfo>,
    total: u64,
}

fn write_shard(
    root: &Path,
    shard_dir: &str,
    dir: &dyn Directory,
    opts: &WriteOptions,
    ids: &mut Ids,
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
        let inline =
            opts.inline_metadata_files && (name.starts_with("segments_") || name.ends_with(".si"));
        let mut info = FileInfo {
            name: String::new(),
            physical_name: name.clone(),
            length: len,
            checksum: Some(base36(crc)),
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

fn seal(value: &Value, c: &str, opts: &WriteOptions) -> Vec<u8> {
    envelope::seal(c, &xcontent::to_smile(value), opts.compression)
}

/// Writes `snapshots` as a new repository in `dest` (which must be empty or absent).
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
    std::fs::create_dir_all(dest).map_err(|e| io(dest, e))?;
    let mut ids = Ids(rand::rngs::StdRng::seed_from_u64(opts.seed));
    let cluster_uuid = ids.uuid();
    // Per index name: repository id and index uuid, shared by every snapshot.
    let mut index_ids: BTreeMap<String, (String, String)> = BTreeMap::new();
    let mut repo_snapshots = Vec::new();
    let mut repo_indices: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    let mut identifiers = Map::new();
    // (index id, shard) → snapshot name → files
    let mut shard_history: BTreeMap<(String, usize), ShardHistory> = BTreeMap::new();
    let start_time = 1_700_000_000_000i64;

    for snap in snapshots {
        let uuid = ids.uuid();
        let mut failures = Vec::new();
        let mut total_shards = 0;
        let mut lookup = Map::new();
        let mut index_names = Vec::new();
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
            let md = json!({ index.name.clone(): {
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
            }});
            let ident = format!("{uuid_in_settings}-_na_-1-1-1");
            let blob_id = identifiers
                .get(&ident)
                .and_then(Value::as_str)
                .map(str::to_string)
                .unwrap_or_else(|| ids.blob_id());
            put(
                dest,
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
                let shard_dir = format!("indices/{index_id}/{s}");
                match source {
                    ShardSource::Failed { reason } => failures.push(json!({
                        "index": index.name, "index_uuid": index_id, "shard_id": s,
                        "reason": reason, "node_id": "node-1", "status": "INTERNAL_SERVER_ERROR",
                    })),
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
        let info = json!({"snapshot": {
            "name": snap.name, "uuid": uuid, "version_id": snap.version_id,
            "indices": index_names, "data_streams": [], "include_global_state": true,
            "state": state, "metadata": null, "start_time": start_time, "end_time": start_time + 1000,
            "total_shards": total_shards, "successful_shards": total_shards - failures.len(),
            "failures": failures,
        }});
        put(
            dest,
            &format!("snap-{uuid}.dat"),
            &seal(&info, codec::SNAPSHOT, opts),
        )?;
        let global = json!({"meta-data": {
            "version": 1, "cluster_uuid": cluster_uuid, "cluster_uuid_committed": true,
            "templates": snap.legacy_templates,
            "index_template": {"index_template": snap.index_templates},
            "component_template": {"component_template": snap.component_templates},
        }});
        put(
            dest,
            &format!("meta-{uuid}.dat"),
            &seal(&global, codec::METADATA, opts),
        )?;
        let v = crate::metadata::Version::from_id(snap.version_id);
        repo_snapshots.push(json!({
            "name": snap.name, "uuid": uuid, "state": if failures.is_empty() { 1 } else { 3 },
            "index_metadata_lookup": lookup,
            "version": format!("{}.{}.{}", v.major, v.minor, v.revision),
        }));
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
            &format!("indices/{index_id}/{s}/index-{gen}"),
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

    let indices: Map<String, Value> = repo_indices
        .into_iter()
        .map(|(name, (id, uuids))| {
            let gens = generations.remove(&id).unwrap_or_default();
            (
                name,
                json!({"id": id, "snapshots": uuids, "shard_generations": gens}),
            )
        })
        .collect();
    let data = json!({
        "snapshots": repo_snapshots,
        "indices": indices,
        "min_version": "7.9.0",
        "index_metadata_identifiers": identifiers,
    });
    put(dest, "index-0", &serde_json::to_vec(&data).expect("JSON"))?;
    put(dest, "index.latest", &0i64.to_be_bytes())?;
    Ok(())
}

#[derive(serde::Serialize)]
struct ShardSnapshotOut<'a> {
    name: &'a str,
    index_version: i64,
    start_time: i64,
    time: i64,
    number_of_files: u64,
    total_size: u64,
    files: &'a [FileInfo],
}

#[derive(serde::Serialize)]
struct ShardSnapshotsOut<'a> {
    files: Vec<&'a FileInfo>,
    snapshots: Map<String, Value>,
}
