//! Errors that stop a metadata migration as a whole (one item's failure is reported in
//! its [`MetadataItem`](super::MetadataItem) instead).

/// Why metadata migration could not run.
#[derive(Debug, thiserror::Error)]
pub enum MetadataError {
    /// An option is malformed (e.g. an allowlist regex).
    #[error("metadata options: {0}")]
    Options(String),
    /// The target could not be asked what exists, or its version is unknown.
    #[error("target: {0}")]
    Target(String),
    /// The snapshot's metadata could not be read.
    #[error("snapshot: {0}")]
    Source(String),
}
