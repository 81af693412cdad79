//! The block decompressors behind Lucene's stored-fields chunks: LZ4 (Lucene's plain
//! and preset-dictionary modes), raw DEFLATE (plain and preset dictionary) and zstd
//! (Elasticsearch's and OpenSearch's stored-fields codecs).
//!
//! They decompress into caller-owned buffers so a reader can reuse one buffer for every
//! chunk. Errors carry no file name; the stored-fields reader adds it.

pub mod deflate;
pub mod lz4;
pub mod zstd;

pub use deflate::Inflater;
pub use zstd::ZstdDecoder;

/// Why a compressed block could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecompressError {
    /// The input ended before the requested output was produced.
    #[error("compressed data is truncated")]
    Truncated,
    /// The input is not a valid stream of the expected kind.
    #[error("invalid compressed data: {0}")]
    Invalid(&'static str),
    /// The stream decoded to a different number of bytes than the chunk header declares.
    #[error("decompressed {actual} bytes, expected {expected}")]
    Length { expected: usize, actual: usize },
    /// An error reported by a decompression library.
    #[error("{0}")]
    Library(String),
}
