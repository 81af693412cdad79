//! Elasticsearch/OpenSearch snapshot repositories, read in place (local disk or object
//! stores): repository data, snapshot and index metadata, shards as Lucene directories,
//! and Elasticsearch documents (`_id`, `_source`, `_routing`, `_type`) decoded from them.
//!
//! ```no_run
//! # fn main() -> Result<(), snapshot::Error> {
//! let store = snapshot::open_blob_store("s3://bucket/repo?region=eu-west-1", &Default::default())?;
//! let repo = snapshot::Repository::open(store)?;
//! let snap = repo.snapshot("nightly")?;
//! let index = snap.index("logs-2024")?;
//! let shard = index.open_shard(0)?;                  // a lucene::Directory over the blobs
//! let reader = snapshot::ShardReader::open(&shard)?;
//! for doc in reader.documents(0..reader.max_doc())? {
//!     let doc = doc?;                                // EsDocument: id, routing, JSON source
//!     println!("{} {}", doc.id, String::from_utf8_lossy(&doc.source));
//! }
//! # Ok(()) }
//! ```

#[cfg(feature = "test-util")]
pub mod append;
pub mod delta;
pub mod document;
pub mod envelope;
pub mod error;
pub mod ignored_source;
pub mod index_version;
pub mod json;
mod lzf;
pub mod metadata;
pub mod reader;
pub mod rebuild;
pub mod repository;
pub mod shard;
pub mod shard_paths;
pub mod vectors;
#[cfg(feature = "test-util")]
pub mod write;
#[cfg(feature = "test-util")]
pub mod write_legacy;
pub mod xcontent;

/// The blob stores live in the `blobstore` crate; these re-exports keep the paths callers
/// use. `StoreOptions` is the old name of [`BlobStoreOptions`].
pub use blobstore::{
    blob, open_blob_store, BlobError, BlobMeta, BlobStore, BlobStoreOptions,
    BlobStoreOptions as StoreOptions, LocalStore, ObjectStoreBlobs, SCHEMES,
};
pub use delta::{DeleteKeys, DeltaStats, ShardDelta};
pub use document::EsDocument;
pub use error::{Error, Result};
pub use index_version::IndexVersion;
pub use lucene::VerifiedFiles;
pub use metadata::{
    DataStream, FileInfo, GlobalMetadata, IndexMetadata, IndexMode, MountedSnapshot,
    ProductVersion, RepositoryData, ShardFailure, ShardSnapshot, SnapshotInfo, SnapshotState,
    SourceMode, TemplateKind, TypeMapping,
};
pub use reader::{
    DocKey, ReadOptions, RebuildMode, RebuildOptions, ShardReader, ShardStats, SkipReason,
    SkippedDocument, Step,
};
pub use rebuild::SourcePlan;
pub use repository::{Repository, RepositoryLayout, Shard, Snapshot, SnapshotIndex};
pub use shard::ShardDirectory;
pub use shard_paths::ShardPathType;
