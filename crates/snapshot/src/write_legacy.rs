//! The repository writer for the pre-5.0 layouts (docs/specs/es-legacy.md), for tests: the
//! Elasticsearch 1.x layout (plain JSON `snapshot-<name>`, `metadata-<name>`, per-index and
//! per-shard `snapshot-<name>`) and the 2.x one (enveloped SMILE `snap-<name>.dat`,
//! `meta-<name>.dat`, shard `index-<N>`), both with a root `index` blob listing snapshot
//! names and `__<base 36 counter>` data blobs. Indices are named by their names (no ids),
//! snapshots by their names (no uuids).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use serde_json::{json, Map, Value};

use crate::envelope::{self, codec};
use crate::error::{Error, Result};
use crate::metadata::FileInfo;
use crate::write::{io, put, ShardSnapshotOut, ShardSnapshotsOut, ShardSource, SnapshotSpec};
use crate::xcontent;
use lucene::codec_util::FOOTER_MAGIC;
use lucene::names::base36;
use lucene::Directory;

/// Which pre-5.0 layout to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LegacyLayout {
    /// Elasticsearch 1.x: every metadata blob is plain JSON.
    Es1,
    /// Elasticsearch 2.x: metadata blobs are enveloped SMILE (codec header and footer).
    Es2,
}

impl LegacyLayout {
    /// The version id of the cluster that "took" the snapshot, when the spec keeps the
    /// default: 1.7.6 or 2.4.6.
    pub fn default_version_id(self) -> u32 {
        match self {
            LegacyLayout::Es1 => 1_07_06_99,
            LegacyLayout::Es2 => 2_04_06_99,
        }
    }
}

/// Writes `snapshots` as a new pre-5.0 repository in `dest` (empty or absent). A spec
/// whose `version_id` is the writer's default (7.10.2) is written as taken by
/// [`LegacyLayout::default_version_id`]. Shards must be Lucene directories (no failed or
/// remote-store shards: those did not exist in this form before 5.0). Data files are
/// stored whole, one `__N` blob each.
pub fn write_legacy_repository(
    dest: &Path,
    snapshots: &[SnapshotSpec],
    layout: LegacyLayout,
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
    let start_time = 1_400_000_000_000i64;
    // Next data blob number per shard directory (ES counts per shard, in base 36).
    let mut counters: BTreeMap<String, u64> = BTreeMap::new();
    // Shard directory → (snapshot name, files), for the 2.x `index-N`.
    let mut history: BTreeMap<String, Vec<(String, Vec<FileInfo>)>> = BTreeMap::new();
    let mut names = Vec::new();
    for snap in snapshots {
        let version_id = if snap.version_id == 7_10_02_99 {
            layout.default_version_id()
        } else {
            snap.version_id
        };
        names.push(snap.name.clone());
        let mut total_shards = 0;
        let mut index_names = Vec::new();
        for index in &snap.indices {
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
            settings
                .entry("index.version.created")
                .or_insert(json!(version_id.to_string()));
            settings
                .entry("index.creation_date")
                .or_insert(json!(start_time.to_string()));
            let mappings: Vec<Value> = index
                .mappings
                .iter()
                .map(|m| json!({ m.doc_type.clone(): m.mapping }))
                .collect();
            let md = json!({ index.name.clone(): {
                "version": 1, "state": "open", "settings": settings,
                "mappings": mappings, "aliases": index.aliases,
            }});
            let (blob, bytes) = match layout {
                LegacyLayout::Es1 => (
                    format!("indices/{}/snapshot-{}", index.name, snap.name),
                    to_json(&md),
                ),
                LegacyLayout::Es2 => (
                    format!("indices/{}/meta-{}.dat", index.name, snap.name),
                    seal(&md, codec::INDEX_METADATA),
                ),
            };
            put(dest, &blob, &bytes)?;

            for (s, source) in index.shards.iter().enumerate() {
                total_shards += 1;
                let ShardSource::Lucene(dir) = source else {
                    return Err(Error::Config(format!(
                        "index {} shard {s}: the pre-5.0 writer takes Lucene directories only",
                        index.name
                    )));
                };
                let shard_dir = format!("indices/{}/{s}", index.name);
                let counter = counters.entry(shard_dir.clone()).or_insert(0);
                let (files, total) = write_files(dest, &shard_dir, dir.as_ref(), counter)?;
                let out = ShardSnapshotOut {
                    name: &snap.name,
                    index_version: 1,
                    start_time,
                    time: 1,
                    number_of_files: files.len() as u64,
                    total_size: total,
                    files: &files,
                };
                let value = serde_json::to_value(&out)
                    .map_err(|e| Error::Config(format!("shard snapshot: {e}")))?;
                let (blob, bytes) = match layout {
                    LegacyLayout::Es1 => (format!("snapshot-{}", snap.name), to_json(&value)),
                    LegacyLayout::Es2 => (
                        format!("snap-{}.dat", snap.name),
                        seal(&value, codec::SNAPSHOT),
                    ),
                };
                put(dest, &format!("{shard_dir}/{blob}"), &bytes)?;
                history
                    .entry(shard_dir)
                    .or_default()
                    .push((snap.name.clone(), files));
            }
        }
        let info = json!({"snapshot": {
            "name": snap.name, "version_id": version_id, "indices": index_names,
            "state": "SUCCESS", "start_time": start_time, "end_time": start_time + 1000,
            "total_shards": total_shards, "successful_shards": total_shards, "failures": [],
        }});
        let global = json!({"meta-data": {
            "version": 1, "uuid": "_na_", "settings": {},
            "templates": snap.legacy_templates,
        }});
        match layout {
            LegacyLayout::Es1 => {
                put(dest, &format!("snapshot-{}", snap.name), &to_json(&info))?;
                put(dest, &format!("metadata-{}", snap.name), &to_json(&global))?;
            }
            LegacyLayout::Es2 => {
                put(
                    dest,
                    &format!("snap-{}.dat", snap.name),
                    &seal(&info, codec::SNAPSHOT),
                )?;
                put(
                    dest,
                    &format!("meta-{}.dat", snap.name),
                    &seal(&global, codec::METADATA),
                )?;
            }
        }
    }
    if layout == LegacyLayout::Es2 {
        // The shard's list of every snapshot of it: `index-0` (ES 2.x numbers them).
        for (shard_dir, snaps) in &history {
            let mut all: Vec<&FileInfo> = Vec::new();
            let mut listed = Map::new();
            for (name, files) in snaps {
                for f in files {
                    if !all.iter().any(|a| a.name == f.name) {
                        all.push(f);
                    }
                }
                listed.insert(
                    name.clone(),
                    json!({"files": files.iter().map(|f| f.name.clone()).collect::<Vec<_>>()}),
                );
            }
            let out = ShardSnapshotsOut {
                files: all,
                snapshots: listed,
            };
            put(
                dest,
                &format!("{shard_dir}/index-0"),
                &envelope::seal(
                    codec::SNAPSHOTS,
                    &xcontent::to_smile(&out),
                    envelope::EnvelopeCompression::None,
                ),
            )?;
        }
    }
    put(dest, "index", &to_json(&json!({ "snapshots": names })))?;
    Ok(())
}

fn to_json(v: &Value) -> Vec<u8> {
    serde_json::to_vec(v).expect("JSON values serialize")
}

fn seal(v: &Value, c: &str) -> Vec<u8> {
    envelope::seal(
        c,
        &xcontent::to_smile(v),
        envelope::EnvelopeCompression::None,
    )
}

/// Copies the files of `dir`'s latest commit into `__N` blobs of `shard_dir`. A file with
/// a Lucene footer is listed with its CRC-32 in base 36; one without (Lucene before 4.8)
/// without a checksum. Returns the files and their total length.
fn write_files(
    root: &Path,
    shard_dir: &str,
    dir: &dyn Directory,
    counter: &mut u64,
) -> Result<(Vec<FileInfo>, u64)> {
    let lucene_err = |source| Error::Lucene {
        context: shard_dir.to_string(),
        source,
    };
    let (commit, _) = lucene::commit::latest_commit_file(dir).map_err(lucene_err)?;
    let commit_info = lucene::commit::read_latest_commit(dir).map_err(lucene_err)?;
    let written_by = if commit_info.is_lucene4() {
        "4.10.4"
    } else {
        "5.5.2"
    };
    let mut names: Vec<String> = dir
        .list_files()?
        .into_iter()
        .filter(|n| !n.starts_with("segments") || *n == commit)
        .filter(|n| n != "write.lock")
        .collect();
    names.sort();
    let mut files = Vec::new();
    let mut total = 0;
    for name in names {
        let slice = dir.open_file(&name)?;
        let bytes = slice.read_all()?;
        let len = bytes.len();
        let checksum =
            (len >= 16 && bytes[len - 16..len - 12] == FOOTER_MAGIC.to_be_bytes()).then(|| {
                base36(u64::from_be_bytes(
                    bytes[len - 8..].try_into().expect("8 bytes"),
                ))
            });
        let blob = format!("__{}", base36(*counter));
        *counter += 1;
        let path = root.join(shard_dir).join(&blob);
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p).map_err(|e| io(p, e))?;
        }
        let mut out = std::fs::File::create(&path).map_err(|e| io(&path, e))?;
        out.write_all(&bytes).map_err(|e| io(&path, e))?;
        total += len as u64;
        files.push(FileInfo {
            name: blob,
            physical_name: name,
            length: len as u64,
            checksum,
            part_size: None,
            written_by: Some(written_by.to_string()),
            meta_hash: None,
            writer_uuid: None,
        });
    }
    Ok((files, total))
}
