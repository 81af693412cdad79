//! What can go wrong reading blobs. Each message says where (the blob's path or URL, its
//! secrets masked) and what failed; the underlying error (I/O, the object store's client,
//! a JSON parser) is only returned by `source()`, never repeated in the message.

use std::error::Error as StdError;

/// A boxed underlying error.
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// Errors of the blob stores.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    /// A blob that should exist does not (or the bucket holding it does not).
    #[error("{blob}: not found")]
    NotFound { blob: String },
    /// The storage backend failed while doing `action` (I/O, HTTP, credentials).
    #[error("{blob}: {action} failed")]
    Backend {
        blob: String,
        /// What was being done: `read`, `list`, `length`, …
        action: &'static str,
        #[source]
        source: BoxError,
    },
    /// The storage refused the request's credentials (HTTP 401/403): `credentials` names
    /// where they came from, the source holds the refusal.
    #[error("{blob}: {action} refused: the storage does not accept the AWS credentials from {credentials}")]
    Refused {
        blob: String,
        action: &'static str,
        credentials: String,
        #[source]
        source: BoxError,
    },
    /// The bytes or the name of a blob are not what they must be.
    #[error("{blob}: corrupt: {reason}")]
    Corrupt { blob: String, reason: String },
    /// A repository location or option that cannot be used.
    #[error("{location}: {reason}")]
    Config {
        location: String,
        reason: String,
        #[source]
        source: Option<BoxError>,
    },
}

impl BlobError {
    pub(crate) fn corrupt(blob: impl Into<String>, reason: impl Into<String>) -> Self {
        BlobError::Corrupt {
            blob: blob.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn config(location: impl Into<String>, reason: impl Into<String>) -> Self {
        BlobError::Config {
            location: location.into(),
            reason: reason.into(),
            source: None,
        }
    }

    pub(crate) fn config_caused(
        location: impl Into<String>,
        reason: impl Into<String>,
        source: impl Into<BoxError>,
    ) -> Self {
        BlobError::Config {
            location: location.into(),
            reason: reason.into(),
            source: Some(source.into()),
        }
    }

    /// The blob or location this error is about.
    pub fn blob(&self) -> &str {
        match self {
            BlobError::NotFound { blob }
            | BlobError::Backend { blob, .. }
            | BlobError::Refused { blob, .. }
            | BlobError::Corrupt { blob, .. } => blob,
            BlobError::Config { location, .. } => location,
        }
    }
}

/// A Lucene file error of a local blob: a missing file is [`BlobError::NotFound`], any
/// other failure a read of it that failed.
impl From<lucene::DirectoryError> for BlobError {
    fn from(e: lucene::DirectoryError) -> Self {
        match e {
            lucene::DirectoryError::NotFound { file } => BlobError::NotFound { blob: file },
            other => BlobError::Backend {
                blob: other.file().to_string(),
                action: "read",
                source: Box::new(other),
            },
        }
    }
}

/// `e` and its causes in one line, `: `-separated, for a [`lucene::DirectoryError`]
/// message, which has no `source()` to hold them.
pub(crate) fn chain(e: &(dyn StdError + 'static)) -> String {
    let mut out = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        let text = cause.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        next = cause.source();
    }
    out
}

/// Result with [`BlobError`].
pub type Result<T> = std::result::Result<T, BlobError>;
