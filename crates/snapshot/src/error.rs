//! Errors of the snapshot crate. Every variant that concerns stored bytes names the blob.

/// Errors reading a snapshot repository.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A blob that should exist does not.
    #[error("{blob}: not found")]
    NotFound { blob: String },
    /// The storage backend failed (I/O, HTTP, credentials).
    #[error("{blob}: {message}")]
    Backend { blob: String, message: String },
    /// The bytes of a blob are not what the format requires.
    #[error("{blob}: corrupt: {reason}")]
    Corrupt { blob: String, reason: String },
    /// The blob uses a format or feature this reader does not support.
    #[error("{blob}: unsupported: {what}")]
    Unsupported { blob: String, what: String },
    /// Nothing at the location looks like a snapshot repository (no `index-N`,
    /// `index.latest` or pre-5.0 `index` blob): a wrong path, or a repository no snapshot
    /// was ever written to.
    #[error(
        "{location}: not a snapshot repository (no index-N, index.latest or index blob in it)"
    )]
    NotARepository { location: String },
    /// No snapshot of that name in the repository data.
    #[error("snapshot {0:?} is not in the repository")]
    NoSuchSnapshot(String),
    /// The index is not part of the snapshot.
    #[error("index {index:?} is not in snapshot {snapshot:?}")]
    NoSuchIndex { snapshot: String, index: String },
    /// The shard failed when the snapshot was taken (PARTIAL snapshot); it holds no data.
    #[error("shard {shard} of index {index:?} failed in snapshot {snapshot:?}: {reason}")]
    FailedShard {
        snapshot: String,
        index: String,
        shard: u32,
        reason: String,
    },
    /// The shard is a shallow copy of a remote-store-backed index (OpenSearch): its
    /// segments are in the remote store, not in this repository.
    #[error("index {index:?} shard {shard} in snapshot {snapshot:?} is a shallow copy of a remote-store-backed index: its segment files are in the remote store{}, not in this snapshot repository, so its documents cannot be read from the repository (take a snapshot into a repository without remote_store_index_shallow_copy, or restore it on OpenSearch first)", remote.as_deref().map(|r| format!(" {r:?}")).unwrap_or_default())]
    RemoteStoreShard {
        snapshot: String,
        index: String,
        shard: u32,
        /// The remote segment store repository, when recorded.
        remote: Option<String>,
    },
    /// A searchable-snapshot (mounted) index whose data cannot be found: the snapshot
    /// holds only empty commits for it, its documents are in the snapshot it was mounted
    /// from, which this repository does not hold (or not readably).
    #[error("index {index:?} of snapshot {snapshot:?} is a searchable-snapshot (mounted) index: this snapshot holds none of its documents, they are in {from}, and {reason}; restore that snapshot's index (or take a snapshot of a fully restored copy) instead")]
    MountedIndex {
        snapshot: String,
        index: String,
        /// Where its data is (the `index.store.snapshot.*` settings).
        from: String,
        reason: String,
    },
    /// A repository location or option that cannot be used.
    #[error("{0}")]
    Config(String),
    /// A blob store failed (a missing blob is [`Error::NotFound`]).
    #[error(transparent)]
    Blob(blobstore::BlobError),
    /// An error of the Lucene reader (names the Lucene file).
    #[error("{context}")]
    Lucene {
        context: String,
        #[source]
        source: lucene::Error,
    },
}

impl Error {
    /// Whether a retry can only fail the same way: a format or feature the reader does
    /// not support, a shard that failed in the snapshot or whose segments are elsewhere.
    /// Storage and network failures, missing blobs, corruption and checksum mismatches
    /// may heal (a bad transfer, a blob still being written) and are worth a retry.
    pub fn is_permanent(&self) -> bool {
        match self {
            Error::Unsupported { .. }
            | Error::FailedShard { .. }
            | Error::RemoteStoreShard { .. }
            | Error::MountedIndex { .. } => true,
            Error::Lucene { source, .. } => source.is_permanent(),
            Error::NotFound { .. }
            | Error::Backend { .. }
            | Error::Corrupt { .. }
            | Error::NotARepository { .. }
            | Error::NoSuchSnapshot(_)
            | Error::NoSuchIndex { .. }
            | Error::Config(_)
            | Error::Blob(_) => false,
        }
    }

    pub(crate) fn corrupt(blob: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Corrupt {
            blob: blob.into(),
            reason: reason.into(),
        }
    }
}

impl From<lucene::DirectoryError> for Error {
    fn from(e: lucene::DirectoryError) -> Self {
        match e {
            lucene::DirectoryError::NotFound { file } => Error::NotFound { blob: file },
            lucene::DirectoryError::Io { file, source } => Error::Backend {
                blob: file,
                message: source.to_string(),
            },
            lucene::DirectoryError::Backend { file, message } => Error::Backend {
                blob: file,
                message,
            },
            lucene::DirectoryError::OutOfBounds {
                file,
                start,
                end,
                len,
            } => Error::Backend {
                blob: file,
                message: format!("read of bytes {start}..{end} is outside the file (length {len})"),
            },
        }
    }
}

/// A blob store's error: a missing blob stays [`Error::NotFound`] (callers tell a missing
/// blob apart by it), a corrupt one [`Error::Corrupt`]; the others keep their cause.
impl From<blobstore::BlobError> for Error {
    fn from(e: blobstore::BlobError) -> Self {
        match e {
            blobstore::BlobError::NotFound { blob } => Error::NotFound { blob },
            blobstore::BlobError::Corrupt { blob, reason } => Error::Corrupt { blob, reason },
            other => Error::Blob(other),
        }
    }
}

/// Result with the crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
