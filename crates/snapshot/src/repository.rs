//! A snapshot repository: finding the latest repository data, and resolving snapshots,
//! their global metadata, index metadata and shard file lists.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::blob::{join, BlobStore};
use crate::envelope::{self, codec};
use crate::error::{Error, Result};
use crate::lzf;
use crate::metadata::{
    GlobalMetadata, IndexEntry, IndexMetadata, MountedSnapshot, ProductVersion, RepositoryData,
    ShardSnapshot, ShardSnapshots, SnapshotEntry, SnapshotInfo, SnapshotInfoRoot, SnapshotState,
};
use crate::shard::ShardDirectory;
use crate::shard_paths::{self, ShardDirLocation, ShardPathType, ShardPathsName};
use crate::xcontent;

struct Inner {
    store: Arc<dyn BlobStore>,
    data: RepositoryData,
    warnings: Vec<String>,
    /// The bucket without the base path, opened on first use (HASHED_PREFIX shards).
    bucket_root: OnceLock<Arc<dyn BlobStore>>,
    /// `snapshot_shard_paths/` blob names by index id, listed on first use.
    recorded_paths: OnceLock<BTreeMap<String, Vec<ShardPathsName>>>,
}

/// The generation `index.latest` names: 8 bytes, big-endian, not negative.
fn read_latest(store: &dyn BlobStore) -> Result<i64> {
    let b = store.read("index.latest")?;
    let arr: [u8; 8] = b[..]
        .try_into()
        .map_err(|_| Error::corrupt("index.latest", format!("{} bytes, expected 8", b.len())))?;
    let n = i64::from_be_bytes(arr);
    if n < 0 {
        return Err(Error::corrupt(
            "index.latest",
            format!("names generation {n}, below 0"),
        ));
    }
    Ok(n)
}

/// The newest major whose repositories this reader knows: a repository whose
/// `min_version` (the oldest release able to read it; Elasticsearch writes `7.9.0`,
/// `7.12.0`, … as it adds format features) names a later major uses a format written
/// after this reader, and is refused rather than misread.
pub const NEWEST_KNOWN_MAJOR: u32 = 9;

/// Refuses repository data whose `min_version` is newer than this reader knows; an
/// unreadable one is left alone (older writers put other text there).
fn check_min_version(data: &RepositoryData) -> Result<()> {
    let Some(min) = data.min_version.as_deref() else {
        return Ok(());
    };
    let parsed = ProductVersion::parse(product::Distribution::Elasticsearch, min);
    if let Some(v) = parsed.filter(|v| v.major > NEWEST_KNOWN_MAJOR) {
        let blob = data
            .generation
            .map_or_else(|| "index".to_string(), |g| format!("index-{g}"));
        return Err(Error::Unsupported {
            blob,
            what: format!(
                "min_version {min}: the repository can only be read by {} or later, a format newer than this reader knows (up to {NEWEST_KNOWN_MAJOR}.x)",
                v.number()
            ),
        });
    }
    Ok(())
}

/// An opened repository. Cheap to clone.
#[derive(Clone)]
pub struct Repository {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Repository {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Repository({})", self.inner.store.location())
    }
}

impl Repository {
    /// Reads the latest repository data: the highest `index-N` found by listing, else
    /// `index.latest`, else a pre-5.0 `index` blob. An `index.latest` that is unreadable
    /// or disagrees with the listing is a warning naming it ([`Repository::warnings`],
    /// also logged); one that is all there is must be right. A location with none of
    /// these is [`Error::NotARepository`].
    pub fn open(store: Arc<dyn BlobStore>) -> Result<Repository> {
        let listed = store.list("", "index-")?;
        let listed_generation = listed
            .iter()
            .filter_map(|b| b.name.strip_prefix("index-")?.parse::<i64>().ok())
            .filter(|n| *n >= 0)
            .max();
        let mut warnings = Vec::new();
        let latest = if store.exists("index.latest")? {
            Some(read_latest(store.as_ref()))
        } else {
            None
        };
        let generation = match (listed_generation, latest) {
            (Some(n), Some(Ok(l))) if l == n => Some(n),
            (Some(n), Some(Ok(l))) => {
                warnings.push(format!(
                    "index.latest names generation {l} but the newest index-N blob is index-{n}; reading index-{n}"
                ));
                Some(n)
            }
            (Some(n), Some(Err(e))) => {
                warnings.push(format!("{e}; reading index-{n} found by listing"));
                Some(n)
            }
            (Some(n), None) => Some(n),
            (None, Some(Ok(l))) => {
                if !store.exists(&format!("index-{l}"))? {
                    return Err(Error::corrupt(
                        "index.latest",
                        format!("names generation {l} but index-{l} does not exist"),
                    ));
                }
                Some(l)
            }
            (None, Some(Err(e))) => return Err(e),
            (None, None) => None,
        };
        for w in &warnings {
            tracing::warn!("repository {}: {w}", store.location());
        }
        let data = match generation {
            Some(n) => {
                let name = format!("index-{n}");
                let bytes = store.read(&name)?;
                RepositoryData::parse(&name, &bytes, Some(n))?
            }
            None if store.exists("index")? => {
                let bytes = store.read("index")?;
                let bytes = lzf::maybe_decompress("index", &bytes)?;
                RepositoryData::parse("index", &bytes, None)?
            }
            None => {
                return Err(Error::NotARepository {
                    location: store.location(),
                })
            }
        };
        check_min_version(&data)?;
        Ok(Repository {
            inner: Arc::new(Inner {
                store,
                data,
                warnings,
                bucket_root: OnceLock::new(),
                recorded_paths: OnceLock::new(),
            }),
        })
    }

    /// What was odd but not fatal when the repository was opened (an `index.latest` that
    /// is corrupt or disagrees with the listing), each naming the blob.
    pub fn warnings(&self) -> &[String] {
        &self.inner.warnings
    }

    /// The store holding blobs outside the repository's base path (the bucket root).
    fn bucket_root(&self) -> Result<Arc<dyn BlobStore>> {
        if let Some(s) = self.inner.bucket_root.get() {
            return Ok(s.clone());
        }
        let root = self.inner.store.bucket_root()?;
        Ok(self.inner.bucket_root.get_or_init(|| root).clone())
    }

    /// The `snapshot_shard_paths/` blobs of index id `index_id` (OpenSearch 2.17+), most
    /// shards first.
    fn recorded_paths(&self, index_id: &str) -> Result<Vec<ShardPathsName>> {
        if self.inner.recorded_paths.get().is_none() {
            let mut by_id: BTreeMap<String, Vec<ShardPathsName>> = BTreeMap::new();
            for b in self.inner.store.list(shard_paths::SHARD_PATHS_DIR, "")? {
                if let Some(n) = ShardPathsName::parse(&b.name) {
                    by_id.entry(n.index_id.clone()).or_default().push(n);
                }
            }
            for v in by_id.values_mut() {
                v.sort_by_key(|n| std::cmp::Reverse(n.shard_count));
            }
            let _ = self.inner.recorded_paths.set(by_id);
        }
        Ok(self
            .inner
            .recorded_paths
            .get()
            .and_then(|m| m.get(index_id))
            .cloned()
            .unwrap_or_default())
    }

    /// The blob store.
    pub fn store(&self) -> &Arc<dyn BlobStore> {
        &self.inner.store
    }

    /// Where the repository is.
    pub fn location(&self) -> String {
        self.inner.store.location()
    }

    /// The repository data.
    pub fn data(&self) -> &RepositoryData {
        &self.inner.data
    }

    /// The snapshots listed in the repository data (the only ones that exist).
    pub fn snapshots(&self) -> &[SnapshotEntry] {
        &self.inner.data.snapshots
    }

    /// Opens snapshot `name`: reads its SnapshotInfo.
    pub fn snapshot(&self, name: &str) -> Result<Snapshot> {
        let entry = self
            .inner
            .data
            .snapshot(name)
            .ok_or_else(|| Error::NoSuchSnapshot(name.to_string()))?
            .clone();
        let (info, layout) = self.read_snapshot_info(&entry)?;
        Ok(Snapshot {
            repo: self.clone(),
            entry,
            info,
            layout,
        })
    }

    fn read_snapshot_info(
        &self,
        entry: &SnapshotEntry,
    ) -> Result<(SnapshotInfo, RepositoryLayout)> {
        let store = &self.inner.store;
        let blob = format!("snap-{}.dat", entry.uuid);
        if !store.exists(&blob)? {
            // ES 1.x: plain or LZF JSON `snapshot-<name>`.
            let legacy = format!("snapshot-{}", entry.name);
            if store.exists(&legacy)? {
                let bytes = lzf::maybe_decompress(&legacy, &store.read(&legacy)?)?;
                let root: SnapshotInfoRoot = xcontent::decode(&legacy, &bytes)?;
                return Ok((root.snapshot, RepositoryLayout::Es1));
            }
        }
        let bytes = store.read(&blob)?;
        let env = envelope::open(&blob, &bytes, codec::SNAPSHOT)?;
        let root: SnapshotInfoRoot = xcontent::decode(&blob, &env.content)?;
        let layout = if self.inner.data.generation.is_none() {
            RepositoryLayout::Es2
        } else {
            RepositoryLayout::Modern
        };
        Ok((root.snapshot, layout))
    }

    /// Reads an enveloped metadata blob (or the ES 1.x JSON fallback) as a JSON value.
    fn read_value(&self, blob: &str, codec: &str, legacy: Option<&str>) -> Result<Value> {
        let store = &self.inner.store;
        if let Some(legacy) = legacy {
            if !store.exists(blob)? && store.exists(legacy)? {
                let bytes = lzf::maybe_decompress(legacy, &store.read(legacy)?)?;
                return xcontent::decode_value(legacy, &bytes);
            }
        }
        let bytes = store.read(blob)?;
        let env = envelope::open(blob, &bytes, codec)?;
        xcontent::decode_value(blob, &env.content)
    }
}

/// How a snapshot's blobs are laid out, by the Elasticsearch versions that wrote them
/// (docs/specs/es-legacy.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RepositoryLayout {
    /// Elasticsearch 1.x: an `index` blob listing snapshots, JSON `snapshot-<name>`,
    /// `metadata-<name>` and per-index and per-shard `snapshot-<name>` blobs.
    Es1,
    /// Elasticsearch 2.x: the `index` blob, enveloped `snap-<name>.dat` / `meta-<name>.dat`.
    Es2,
    /// Elasticsearch 5.0+ and OpenSearch: `index-N`, blobs named by uuids.
    Modern,
}

impl RepositoryLayout {
    /// Which versions write this layout, for reports.
    pub fn family(self) -> &'static str {
        match self {
            RepositoryLayout::Es1 => "Elasticsearch 1.x layout",
            RepositoryLayout::Es2 => "Elasticsearch 2.x layout",
            RepositoryLayout::Modern => "Elasticsearch 5+/OpenSearch layout",
        }
    }
}

/// One snapshot of a repository, with its SnapshotInfo. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Snapshot {
    repo: Repository,
    entry: SnapshotEntry,
    info: SnapshotInfo,
    layout: RepositoryLayout,
}

impl Snapshot {
    pub fn name(&self) -> &str {
        &self.entry.name
    }
    pub fn uuid(&self) -> &str {
        &self.entry.uuid
    }
    /// The repository holding this snapshot.
    pub fn repository(&self) -> &Repository {
        &self.repo
    }
    /// The SnapshotInfo (`snap-<uuid>.dat`).
    pub fn info(&self) -> &SnapshotInfo {
        &self.info
    }
    /// The layout of the snapshot's blobs (Elasticsearch 1.x, 2.x or later).
    pub fn layout(&self) -> RepositoryLayout {
        self.layout
    }
    /// The state from SnapshotInfo, else from repository data.
    pub fn state(&self) -> Option<SnapshotState> {
        self.info.state().or(self.entry.state)
    }
    /// The version id of the cluster that took the snapshot: SnapshotInfo's `version_id`,
    /// else repository data's `index_version` (Elasticsearch 8.11+, whose `version` is
    /// then only an `8.11.0` marker).
    pub fn index_version(&self) -> Option<crate::IndexVersion> {
        self.info.index_version().or_else(|| {
            self.entry
                .index_version
                .and_then(|id| u64::try_from(id).ok())
                .and_then(crate::IndexVersion::from_id)
        })
    }
    /// Version of the cluster that took the snapshot.
    pub fn version(&self) -> Option<ProductVersion> {
        self.index_version()
            .map(crate::IndexVersion::release_floor)
            // Repository data records the number alone (OpenSearch writes its
            // Elasticsearch-compatible one there).
            .or_else(|| {
                let number = self.entry.version.as_deref()?;
                ProductVersion::parse(product::Distribution::Elasticsearch, number)
            })
    }

    /// Index names, from SnapshotInfo (authoritative), else from repository data.
    pub fn index_names(&self) -> Vec<String> {
        if !self.info.indices.is_empty() {
            let mut v = self.info.indices.clone();
            v.sort();
            return v;
        }
        self.repo
            .data()
            .indices_of(&self.entry.uuid)
            .into_iter()
            .map(|i| i.name.clone())
            .collect()
    }

    /// Cluster-level metadata: templates, persistent settings, customs.
    pub fn global_metadata(&self) -> Result<GlobalMetadata> {
        let blob = format!("meta-{}.dat", self.entry.uuid);
        let legacy = format!("metadata-{}", self.entry.name);
        let v = self
            .repo
            .read_value(&blob, codec::METADATA, Some(&legacy))?;
        GlobalMetadata::from_value(&blob, v)
    }

    fn index_entry(&self, name: &str) -> Result<IndexEntry> {
        if let Some(e) = self.repo.data().indices.get(name) {
            return Ok(e.clone());
        }
        if self.info.indices.iter().any(|i| i == name) {
            // Pre-5.0: the index id is its name.
            return Ok(IndexEntry {
                name: name.to_string(),
                id: name.to_string(),
                snapshot_uuids: vec![self.entry.uuid.clone()],
                shard_generations: Vec::new(),
                shard_path_type_code: 0,
            });
        }
        Err(Error::NoSuchIndex {
            snapshot: self.entry.name.clone(),
            index: name.to_string(),
        })
    }

    /// Opens index `name` of this snapshot: reads its IndexMetadata. A searchable-snapshot
    /// (mounted) index, whose shards this snapshot holds only as empty commits, is read
    /// from the snapshot it was mounted from when this repository holds it (its name and
    /// metadata stay the mounted index's; [`SnapshotIndex::mounted`] says where the data
    /// comes from); otherwise it is an [`Error::MountedIndex`] naming both, never an
    /// index of 0 documents.
    pub fn index(&self, name: &str) -> Result<SnapshotIndex> {
        let index = self.index_as_stored(name)?;
        match index.metadata.mounted_snapshot() {
            Some(mounted) => self.resolve_mounted(index, mounted),
            None => Ok(index),
        }
    }

    /// The data of mounted index `index`: the index of the snapshot its
    /// `index.store.snapshot.*` settings name, in this repository (same repository uuid
    /// when both record one; the snapshot by uuid, the index by repository index id, else
    /// by name).
    fn resolve_mounted(
        &self,
        index: SnapshotIndex,
        mounted: MountedSnapshot,
    ) -> Result<SnapshotIndex> {
        let refuse = |reason: String| Error::MountedIndex {
            snapshot: self.entry.name.clone(),
            index: index.metadata.name.clone(),
            from: mounted.to_string(),
            reason,
        };
        let data = self.repo.data();
        match (&mounted.repository_uuid, &data.uuid) {
            (Some(wanted), Some(ours)) if wanted != ours => {
                return Err(refuse(format!(
                    "that repository is not this one (whose uuid is {ours})"
                )))
            }
            (Some(_), None) => {
                return Err(refuse(
                    "this repository records no uuid, so it cannot be the one the index was mounted from"
                        .into(),
                ))
            }
            _ => {}
        }
        let source = data
            .snapshots
            .iter()
            .find(|s| match &mounted.snapshot_uuid {
                Some(uuid) => &s.uuid == uuid,
                None => mounted.snapshot_name.as_deref() == Some(s.name.as_str()),
            });
        let Some(source) = source else {
            return Err(refuse("this repository does not hold that snapshot".into()));
        };
        if source.uuid == self.entry.uuid {
            return Err(refuse("it names the snapshot it is in".into()));
        }
        let source = self.repo.snapshot(&source.name)?;
        let source_name = mounted
            .index_id
            .as_ref()
            .and_then(|id| data.indices.values().find(|e| &e.id == id))
            .map(|e| e.name.clone())
            .or_else(|| mounted.index_name.clone());
        let Some(source_name) = source_name else {
            return Err(refuse(
                "the index id it names is not in this repository".into(),
            ));
        };
        let from = source
            .index_as_stored(&source_name)
            .map_err(|e| refuse(format!("that index cannot be read: {e}")))?;
        if from.metadata.mounted_snapshot().is_some() {
            return Err(refuse("that index is itself a mounted index".into()));
        }
        if from.metadata.number_of_shards != index.metadata.number_of_shards {
            return Err(refuse(format!(
                "that index has {} shards, the mounted index {}",
                from.metadata.number_of_shards, index.metadata.number_of_shards
            )));
        }
        tracing::info!(
            snapshot = %self.entry.name, index = %index.metadata.name,
            "searchable-snapshot (mounted) index: its documents are read from {mounted}"
        );
        Ok(SnapshotIndex {
            snapshot: from.snapshot,
            entry: from.entry,
            metadata: index.metadata,
            mounted: Some(mounted),
        })
    }

    /// Opens index `name` as this snapshot stores it, without following a mounted index
    /// to the snapshot holding its data.
    pub fn index_as_stored(&self, name: &str) -> Result<SnapshotIndex> {
        if !self.info.indices.is_empty() && !self.info.indices.iter().any(|i| i == name) {
            return Err(Error::NoSuchIndex {
                snapshot: self.entry.name.clone(),
                index: name.to_string(),
            });
        }
        let entry = self.index_entry(name)?;
        let data = self.repo.data();
        let blob_id = self
            .entry
            .index_metadata_lookup
            .get(&entry.id)
            .and_then(|ident| data.index_metadata_identifiers.get(ident))
            .cloned()
            .unwrap_or_else(|| self.entry.uuid.clone());
        let blob = join(
            &format!("indices/{}", entry.id),
            &format!("meta-{blob_id}.dat"),
        );
        let legacy = format!("indices/{}/snapshot-{}", entry.id, self.entry.name);
        let v = self
            .repo
            .read_value(&blob, codec::INDEX_METADATA, Some(&legacy))?;
        let mut metadata = IndexMetadata::from_value(&blob, v)?;
        // The repository data's key is the name to use.
        metadata.name = name.to_string();
        Ok(SnapshotIndex {
            snapshot: self.clone(),
            entry,
            metadata,
            mounted: None,
        })
    }
}

/// One index of a snapshot, with its metadata. Cheap to clone.
#[derive(Clone, Debug)]
pub struct SnapshotIndex {
    /// The snapshot and repository entry holding the shards (for a mounted index, those of
    /// the snapshot it was mounted from).
    snapshot: Snapshot,
    entry: IndexEntry,
    metadata: IndexMetadata,
    mounted: Option<MountedSnapshot>,
}

impl SnapshotIndex {
    /// The index name (a mounted index's own name, also when its shards are read from
    /// the snapshot it was mounted from).
    pub fn name(&self) -> &str {
        &self.metadata.name
    }
    /// For a searchable-snapshot (mounted) index, the snapshot its shards are read from
    /// ([`SnapshotIndex::snapshot`] is then that snapshot).
    pub fn mounted(&self) -> Option<&MountedSnapshot> {
        self.mounted.as_ref()
    }
    /// The repository index id (directory under `indices/`).
    pub fn id(&self) -> &str {
        &self.entry.id
    }
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }
    pub fn metadata(&self) -> &IndexMetadata {
        &self.metadata
    }
    pub fn number_of_shards(&self) -> u32 {
        self.metadata.number_of_shards
    }

    /// How the shard directories of this index are laid out (OpenSearch 2.17+ may hash
    /// them); an unknown layout is an error naming the index.
    pub fn shard_path_type(&self) -> Result<ShardPathType> {
        self.entry.shard_path_type()
    }

    /// Directory of shard `shard` as computed from the layout, relative to the store
    /// that holds it (the repository, or the bucket root for HASHED_PREFIX shards of a
    /// repository with a base path). For messages; [`SnapshotIndex::shard_location`]
    /// also honours the paths OpenSearch recorded.
    pub fn shard_dir(&self, shard: u32) -> String {
        let ty = self.entry.shard_path_type().unwrap_or_default();
        let base = self.snapshot.repo.store().base_path().to_string();
        match shard_paths::shard_dir(ty, &self.entry.id, shard, &base) {
            ShardDirLocation::InRepository(d) | ShardDirLocation::InBucket(d) => d,
        }
    }

    /// The store and directory holding the blobs of shard `shard`: `indices/<id>/<shard>`,
    /// or for OpenSearch hashed layouts the path recorded in `snapshot_shard_paths/`,
    /// else the one computed from the hash.
    pub fn shard_location(&self, shard: u32) -> Result<(Arc<dyn BlobStore>, String)> {
        let repo = &self.snapshot.repo;
        let store = repo.store().clone();
        let ty = self.entry.shard_path_type()?;
        if ty == ShardPathType::Fixed {
            return Ok((store, format!("indices/{}/{}", self.entry.id, shard)));
        }
        let base = store.base_path().to_string();
        let mut location = shard_paths::shard_dir(ty, &self.entry.id, shard, &base);
        for name in repo.recorded_paths(&self.entry.id)? {
            if name.shard_count <= shard {
                continue;
            }
            let blob = join(shard_paths::SHARD_PATHS_DIR, &name.blob_name_as_listed());
            let paths =
                shard_paths::parse_recorded_paths(&blob, &store.read(&blob)?, &self.entry.id)?;
            if let Some(p) = paths.get(shard as usize) {
                let recorded = shard_paths::locate_recorded(p, &base);
                if recorded != location {
                    tracing::debug!(
                        index = %self.entry.name, shard,
                        "using the shard path recorded in {blob} ({recorded:?}) rather than the computed {location:?}"
                    );
                }
                location = recorded;
                break;
            }
        }
        match location {
            ShardDirLocation::InRepository(d) => Ok((store, d)),
            ShardDirLocation::InBucket(d) => Ok((repo.bucket_root()?, d)),
        }
    }

    /// Why shard `shard` has no data in this snapshot, if it failed.
    pub fn shard_failure(&self, shard: u32) -> Option<String> {
        self.snapshot
            .info
            .shard_failure(&self.entry.name, shard)
            .map(|f| {
                f.reason
                    .clone()
                    .unwrap_or_else(|| "no reason recorded".into())
            })
    }

    /// The shard's file list (`snap-<uuid>.dat` in the shard directory). A shard that
    /// failed in a PARTIAL snapshot gives [`Error::FailedShard`].
    pub fn shard_snapshot(&self, shard: u32) -> Result<ShardSnapshot> {
        if shard >= self.metadata.number_of_shards {
            return Err(Error::Config(format!(
                "index {:?} has {} shards, no shard {shard}",
                self.entry.name, self.metadata.number_of_shards
            )));
        }
        if let Some(reason) = self.shard_failure(shard) {
            return Err(Error::FailedShard {
                snapshot: self.snapshot.entry.name.clone(),
                index: self.entry.name.clone(),
                shard,
                reason,
            });
        }
        let (store, dir) = self.shard_location(shard)?;
        let blob = join(&dir, &format!("snap-{}.dat", self.snapshot.entry.uuid));
        if !store.exists(&blob)? {
            let legacy = join(&dir, &format!("snapshot-{}", self.snapshot.entry.name));
            if store.exists(&legacy)? {
                let bytes = lzf::maybe_decompress(&legacy, &store.read(&legacy)?)?;
                return xcontent::decode(&legacy, &bytes);
            }
            self.check_not_remote_store(&*store, &dir, shard)?;
        }
        let bytes = store.read(&blob)?;
        let env = envelope::open(&blob, &bytes, codec::SNAPSHOT)?;
        xcontent::decode(&blob, &env.content)
    }

    /// When the shard's `snap-<uuid>.dat` is missing: a remote-store shallow copy
    /// (`shallow-snap-<uuid>.dat`, or a shallow snapshot v2 of a remote-store index) is a
    /// [`Error::RemoteStoreShard`] naming the index, not a missing blob.
    fn check_not_remote_store(&self, store: &dyn BlobStore, dir: &str, shard: u32) -> Result<()> {
        let uuid = &self.snapshot.entry.uuid;
        let shallow = join(dir, &format!("shallow-snap-{uuid}.dat"));
        let info = &self.snapshot.info;
        let v2 = info.pinned_timestamp.unwrap_or(0) > 0 && self.metadata.remote_store_enabled();
        let remote = if store.exists(&shallow)? {
            let bytes = store.read(&shallow)?;
            envelope::open(&shallow, &bytes, codec::SNAPSHOT)
                .ok()
                .and_then(|env| xcontent::decode_value(&shallow, &env.content).ok())
                .and_then(|v| {
                    v.get("remote_store_repository")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
        } else if v2
            || info.remote_store_index_shallow_copy == Some(true)
                && self.metadata.remote_store_enabled()
        {
            self.metadata
                .setting("index.remote_store.segment.repository")
        } else {
            return Ok(());
        };
        Err(Error::RemoteStoreShard {
            snapshot: self.snapshot.entry.name.clone(),
            index: self.entry.name.clone(),
            shard,
            remote,
        })
    }

    /// The shard's `index-<gen>` (every snapshot of the shard): the generation from
    /// repository data, else the highest numeric `index-N` in the shard directory.
    pub fn shard_snapshots(&self, shard: u32) -> Result<Option<ShardSnapshots>> {
        let (store, dir) = self.shard_location(shard)?;
        let gen = match self
            .entry
            .shard_generations
            .get(shard as usize)
            .cloned()
            .flatten()
        {
            Some(g) => Some(g),
            None => store
                .list(&dir, "index-")?
                .iter()
                .filter_map(|b| b.name.strip_prefix("index-")?.parse::<u64>().ok())
                .max()
                .map(|n| n.to_string()),
        };
        let Some(gen) = gen else { return Ok(None) };
        let blob = join(&dir, &format!("index-{gen}"));
        let bytes = store.read(&blob)?;
        let env = envelope::open(&blob, &bytes, codec::SNAPSHOTS)?;
        xcontent::decode(&blob, &env.content).map(Some)
    }

    /// Opens shard `shard` as a Lucene directory over its blobs (nothing is copied).
    pub fn open_shard(&self, shard: u32) -> Result<Shard> {
        let snap = self.shard_snapshot(shard)?;
        let (store, dir) = self.shard_location(shard)?;
        let dir = ShardDirectory::new(store, dir, &snap.files);
        Ok(Shard {
            index: self.clone(),
            shard,
            files: snap,
            directory: Arc::new(dir),
        })
    }
}

/// One shard of an index of a snapshot, opened as a Lucene directory.
#[derive(Clone, Debug)]
pub struct Shard {
    index: SnapshotIndex,
    shard: u32,
    files: ShardSnapshot,
    directory: Arc<ShardDirectory>,
}

impl Shard {
    pub fn index(&self) -> &SnapshotIndex {
        &self.index
    }
    pub fn shard_number(&self) -> u32 {
        self.shard
    }
    /// The shard's file list.
    pub fn files(&self) -> &ShardSnapshot {
        &self.files
    }
    /// The shard as a Lucene directory.
    pub fn directory(&self) -> &Arc<ShardDirectory> {
        &self.directory
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::LocalStore;

    /// A copy of the demo repository (index-0, index.latest = 0, one snapshot).
    fn demo_copy() -> tempfile::TempDir {
        fn copy(from: &std::path::Path, to: &std::path::Path) {
            std::fs::create_dir_all(to).unwrap();
            for e in std::fs::read_dir(from).unwrap() {
                let e = e.unwrap();
                let dest = to.join(e.file_name());
                if e.file_type().unwrap().is_dir() {
                    copy(&e.path(), &dest);
                } else {
                    std::fs::copy(e.path(), dest).unwrap();
                }
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let demo = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../demo/repository");
        copy(&demo, dir.path());
        dir
    }

    fn open(dir: &std::path::Path) -> Result<Repository> {
        Repository::open(Arc::new(LocalStore::open(dir).unwrap()))
    }

    #[test]
    fn an_empty_directory_is_not_a_repository() {
        let dir = tempfile::tempdir().unwrap();
        let e = open(dir.path()).unwrap_err();
        assert!(matches!(e, Error::NotARepository { .. }), "{e}");
        assert!(e.to_string().contains("not a snapshot repository"), "{e}");
    }

    #[test]
    fn a_broken_index_latest_is_a_warning_naming_it_or_an_error() {
        let dir = demo_copy();
        let latest = dir.path().join("index.latest");
        let clean = open(dir.path()).unwrap();
        assert!(clean.warnings().is_empty(), "{:?}", clean.warnings());

        // Corrupt, with index-0 listed: read index-0 and say so.
        std::fs::write(&latest, b"xyz").unwrap();
        let repo = open(dir.path()).unwrap();
        assert_eq!(repo.data().generation, Some(0));
        assert_eq!(repo.warnings().len(), 1, "{:?}", repo.warnings());
        assert!(
            repo.warnings()[0].contains("index.latest"),
            "{:?}",
            repo.warnings()
        );
        assert!(
            repo.warnings()[0].contains("index-0"),
            "{:?}",
            repo.warnings()
        );

        // Disagreeing with the listing.
        std::fs::write(&latest, 5i64.to_be_bytes()).unwrap();
        let repo = open(dir.path()).unwrap();
        assert!(
            repo.warnings()[0].contains("generation 5") && repo.warnings()[0].contains("index-0"),
            "{:?}",
            repo.warnings()
        );

        // The only pointer, and broken: an error naming it.
        std::fs::rename(dir.path().join("index-0"), dir.path().join("moved")).unwrap();
        let e = open(dir.path()).unwrap_err();
        assert!(e.to_string().contains("index.latest"), "{e}");
        assert!(e.to_string().contains("index-5 does not exist"), "{e}");
        std::fs::write(&latest, b"xyz").unwrap();
        let e = open(dir.path()).unwrap_err();
        assert!(
            e.to_string().contains("index.latest") && e.to_string().contains("3 bytes"),
            "{e}"
        );
        std::fs::write(&latest, (-2i64).to_be_bytes()).unwrap();
        let e = open(dir.path()).unwrap_err();
        assert!(e.to_string().contains("below 0"), "{e}");
    }
}
