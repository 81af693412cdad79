//! Adds a snapshot to an existing repository in the Elasticsearch 7.10 layout, as
//! Elasticsearch does: a Lucene file the shard already holds (same name, length and
//! checksum, in the shard's `index-<gen>`) is referenced, not stored again; only new files
//! become blobs. Each touched shard gets a new `index-<gen>` listing every snapshot of it,
//! the repository data gets generation N+1 (`index-(N+1)`, `index.latest`), and the
//! superseded `index-N` and shard generations are removed afterwards.
//!
//! An index that the repository already holds keeps its repository id and (unless the
//! spec sets `index.uuid`) its index uuid: it is the same index, snapshotted again.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use rand::SeedableRng;
use serde_json::{json, Map, Value};

use crate::blob::{BlobStore, LocalStore};
use crate::envelope::{self, codec};
use crate::error::{Error, Result};
use crate::metadata::ShardSnapshots;
use crate::repository::Repository;
use crate::write::{
    put, seal, write_shard_reusing, Ids, ShardSnapshotOut, ShardSnapshotsOut, ShardSource,
    SnapshotSpec, WriteOptions,
};
use crate::xcontent;

/// `index.creation_date` of every index (as [`crate::write::write_repository`] writes it):
/// metadata that did not change stays byte-for-byte the same, and is shared.
const CREATION_DATE: i64 = 1_700_000_000_000;

/// What [`append_snapshot`] stored.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Appended {
    /// The new repository generation.
    pub generation: i64,
    /// Lucene files written as new blobs, and their bytes.
    pub files_written: u64,
    pub bytes_written: u64,
    /// Lucene files the repository held already (referenced, not copied).
    pub files_reused: u64,
    pub bytes_reused: u64,
}

/// Adds `snap` to the repository in `dest` (written by [`crate::write::write_repository`]
/// or by Elasticsearch 7.6+), storing only the Lucene files it does not hold yet.
pub fn append_snapshot(dest: &Path, snap: &SnapshotSpec, opts: &WriteOptions) -> Result<Appended> {
    let store: Arc<dyn BlobStore> = Arc::new(LocalStore::open(dest)?);
    let repo = Repository::open(store.clone())?;
    let generation = match repo.data().generation {
        Some(g) if g >= 0 => g,
        _ => {
            return Err(Error::Config(format!(
                "{}: no repository data (index-N) to append to; write a new repository instead",
                dest.display()
            )))
        }
    };
    let data_blob = format!("index-{generation}");
    let mut data: Value = serde_json::from_slice(&store.read(&data_blob)?)
        .map_err(|e| Error::corrupt(&data_blob, format!("not JSON: {e}")))?;
    if repo.data().snapshot(&snap.name).is_some() {
        return Err(Error::Config(format!(
            "{}: snapshot {:?} exists already",
            dest.display(),
            snap.name
        )));
    }
    let mut ids = Ids(rand::rngs::StdRng::seed_from_u64(
        opts.seed ^ (generation as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
    ));
    let uuid = ids.uuid();
    let start_time = 1_700_000_000_000i64 + (generation + 1) * 3_600_000;
    let mut out = Appended {
        generation: generation + 1,
        ..Appended::default()
    };
    let mut identifiers: Map<String, Value> = data
        .get("index_metadata_identifiers")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut lookup = Map::new();
    let mut failures = Vec::new();
    let mut total_shards = 0usize;
    let mut stale_generations: Vec<String> = Vec::new();
    let mut index_updates: BTreeMap<String, (String, Vec<Value>)> = BTreeMap::new();

    for index in &snap.indices {
        let known = repo.data().indices.get(&index.name);
        let index_id = known.map_or_else(|| ids.uuid(), |e| e.id.clone());
        let n = index.shards.len();
        if n == 0 {
            return Err(Error::Config(format!("index {} has no shards", index.name)));
        }
        // The same index keeps its uuid: read it from the latest snapshot holding it.
        let index_uuid = match index.settings.get("index.uuid").and_then(Value::as_str) {
            Some(u) => u.to_string(),
            None => match known_index_uuid(&repo, &index.name)? {
                Some(u) => u,
                None => ids.uuid(),
            },
        };
        let md = index_metadata(index, n, &index_uuid, snap.version_id, CREATION_DATE);
        let ident_base = format!("{index_uuid}-_na_");
        let ident = metadata_identifier(&store, &index_id, &identifiers, &ident_base, &md)?;
        if !identifiers.contains_key(&ident) {
            let blob_id = ids.blob_id();
            put(
                dest,
                &format!("indices/{index_id}/meta-{blob_id}.dat"),
                &seal(&md, codec::INDEX_METADATA, opts),
            )?;
            identifiers.insert(ident.clone(), json!(blob_id));
        }
        lookup.insert(index_id.clone(), json!(ident));

        let mut generations = Vec::with_capacity(n);
        for (s, source) in index.shards.iter().enumerate() {
            total_shards += 1;
            let shard_dir = format!("indices/{index_id}/{s}");
            // What the shard holds already: its current index-<gen>.
            let old_gen = known
                .and_then(|e| e.shard_generations.get(s).cloned().flatten())
                .filter(|g| g != "_new");
            let mut history = match &old_gen {
                Some(g) => {
                    let blob = format!("{shard_dir}/index-{g}");
                    let bytes = store.read(&blob)?;
                    let env = envelope::open(&blob, &bytes, codec::SNAPSHOTS)?;
                    xcontent::decode::<ShardSnapshots>(&blob, &env.content)?
                }
                None => ShardSnapshots::default(),
            };
            match source {
                ShardSource::RemoteStore { .. } => {
                    return Err(Error::Unsupported {
                        blob: shard_dir,
                        what:
                            "appending a remote-store shallow copy (write it with write_repository)"
                                .into(),
                    });
                }
                ShardSource::Failed { reason } => {
                    failures.push(json!({
                        "index": index.name, "index_uuid": index_id, "shard_id": s,
                        "reason": reason, "node_id": "node-1", "status": "INTERNAL_SERVER_ERROR",
                    }));
                    generations.push(old_gen.map_or(Value::Null, Value::String));
                    continue;
                }
                ShardSource::Lucene(dir) => {
                    let w = write_shard_reusing(
                        dest,
                        &shard_dir,
                        dir.as_ref(),
                        opts,
                        &mut ids,
                        &history.files,
                    )?;
                    let mut uploaded = 0u64;
                    for f in &w.files {
                        if history.files.iter().any(|h| h.name == f.name) {
                            out.files_reused += 1;
                            out.bytes_reused += f.length;
                        } else {
                            uploaded += 1;
                            out.files_written += 1;
                            out.bytes_written += f.length;
                        }
                    }
                    let shard_snap = ShardSnapshotOut {
                        name: &snap.name,
                        index_version: 0,
                        start_time,
                        time: 1,
                        number_of_files: uploaded,
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
                    for f in &w.files {
                        if !history.files.iter().any(|h| h.name == f.name) {
                            history.files.push(f.clone());
                        }
                    }
                    history.snapshots.insert(
                        snap.name.clone(),
                        crate::metadata::ShardSnapshotFiles {
                            files: w.files.iter().map(|f| f.name.clone()).collect(),
                            shard_state_id: Some(format!("{}-{s}", ids.uuid())),
                        },
                    );
                }
            }
            let gen = ids.uuid();
            let snapshots: Map<String, Value> = history
                .snapshots
                .iter()
                .map(|(k, v)| (k.clone(), serde_json::to_value(v).expect("JSON")))
                .collect();
            let all = ShardSnapshotsOut {
                files: history.files.iter().collect(),
                snapshots,
            };
            put(
                dest,
                &format!("{shard_dir}/index-{gen}"),
                &envelope::seal(
                    codec::SNAPSHOTS,
                    &xcontent::to_smile(&all),
                    opts.compression,
                ),
            )?;
            if let Some(g) = old_gen {
                stale_generations.push(format!("{shard_dir}/index-{g}"));
            }
            generations.push(json!(gen));
        }
        index_updates.insert(index.name.clone(), (index_id, generations));
    }

    let state = if failures.is_empty() {
        "SUCCESS"
    } else {
        "PARTIAL"
    };
    let index_names: Vec<&str> = snap.indices.iter().map(|i| i.name.as_str()).collect();
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
        "version": generation + 2, "cluster_uuid": ids.uuid(), "cluster_uuid_committed": true,
        "templates": snap.legacy_templates,
        "index_template": {"index_template": snap.index_templates},
        "component_template": {"component_template": snap.component_templates},
    }});
    put(
        dest,
        &format!("meta-{uuid}.dat"),
        &seal(&global, codec::METADATA, opts),
    )?;

    // Repository data N+1: the new snapshot, its indices, their shard generations.
    let v = crate::IndexVersion::from_id(u64::from(snap.version_id))
        .map(crate::IndexVersion::release_floor)
        .unwrap_or(crate::metadata::ProductVersion::es(7, 10));
    let root = data
        .as_object_mut()
        .ok_or_else(|| Error::corrupt(&data_blob, "not a JSON object"))?;
    let snapshots = root
        .entry("snapshots")
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .ok_or_else(|| Error::corrupt(&data_blob, "\"snapshots\" is not an array"))?;
    snapshots.push(json!({
        "name": snap.name, "uuid": uuid, "state": if failures.is_empty() { 1 } else { 3 },
        "index_metadata_lookup": lookup,
        "version": v.number(),
    }));
    let indices = root
        .entry("indices")
        .or_insert_with(|| json!({}))
        .as_object_mut()
        .ok_or_else(|| Error::corrupt(&data_blob, "\"indices\" is not an object"))?;
    for (name, (id, gens)) in index_updates {
        let entry = indices
            .entry(name)
            .or_insert_with(|| json!({"id": id, "snapshots": [], "shard_generations": []}));
        let e = entry
            .as_object_mut()
            .ok_or_else(|| Error::corrupt(&data_blob, "an index entry is not an object"))?;
        if let Some(list) = e.get_mut("snapshots").and_then(Value::as_array_mut) {
            list.push(json!(uuid));
        }
        e.insert("shard_generations".into(), Value::Array(gens));
    }
    root.insert(
        "index_metadata_identifiers".into(),
        Value::Object(identifiers),
    );
    root.entry("min_version").or_insert(json!("7.9.0"));
    put(
        dest,
        &format!("index-{}", generation + 1),
        &serde_json::to_vec(&data).expect("JSON"),
    )?;
    put(dest, "index.latest", &(generation + 1).to_be_bytes())?;
    // As Elasticsearch 7.x: the superseded generations go once the new one is written.
    for blob in std::iter::once(data_blob).chain(stale_generations) {
        let path = dest.join(&blob);
        std::fs::remove_file(&path).map_err(|e| crate::write::io(&path, e))?;
    }
    Ok(out)
}

/// The index uuid of `name` in the newest snapshot that holds it.
fn known_index_uuid(repo: &Repository, name: &str) -> Result<Option<String>> {
    for entry in repo.snapshots().iter().rev() {
        let snap = repo.snapshot(&entry.name)?;
        if !snap.index_names().iter().any(|n| n == name) {
            continue;
        }
        let index = snap.index(name)?;
        if let Some(u) = index
            .metadata()
            .settings
            .get("index.uuid")
            .and_then(Value::as_str)
        {
            return Ok(Some(u.to_string()));
        }
    }
    Ok(None)
}

/// An index-metadata identifier for `md`: an existing one whose blob holds the same
/// metadata (shared, as Elasticsearch shares unchanged metadata), else a new one with the
/// next settings version.
fn metadata_identifier(
    store: &Arc<dyn BlobStore>,
    index_id: &str,
    identifiers: &Map<String, Value>,
    base: &str,
    md: &Value,
) -> Result<String> {
    let mut version = 1;
    loop {
        let ident = format!("{base}-{version}-1-1");
        let Some(blob_id) = identifiers.get(&ident).and_then(Value::as_str) else {
            return Ok(ident);
        };
        let blob = format!("indices/{index_id}/meta-{blob_id}.dat");
        if store.exists(&blob)? {
            let bytes = store.read(&blob)?;
            let env = envelope::open(&blob, &bytes, codec::INDEX_METADATA)?;
            if xcontent::decode_value(&blob, &env.content)? == *md {
                return Ok(ident);
            }
        }
        version += 1;
    }
}

/// IndexMetadata of `index` in the layout [`crate::write::write_repository`] writes.
fn index_metadata(
    index: &crate::write::IndexSpec,
    n: usize,
    index_uuid: &str,
    version_id: u32,
    creation: i64,
) -> Value {
    let mut settings = index.settings.clone();
    settings.insert("index.number_of_shards".into(), json!(n.to_string()));
    settings
        .entry("index.number_of_replicas")
        .or_insert(json!("0"));
    settings.entry("index.uuid").or_insert(json!(index_uuid));
    settings
        .entry("index.version.created")
        .or_insert(json!(version_id.to_string()));
    settings
        .entry("index.provided_name")
        .or_insert(json!(index.name));
    settings
        .entry("index.creation_date")
        .or_insert(json!(creation.to_string()));
    let mappings: Vec<Value> = index
        .mappings
        .iter()
        .map(|m| json!({ m.doc_type.clone(): m.mapping }))
        .collect();
    json!({ index.name.clone(): {
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
    }})
}
