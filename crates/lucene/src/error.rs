//! The crate's error type. Every variant names the file (or blob, or compound entry) it
//! concerns, so a corrupt shard can be located from the message alone.

use crate::directory::DirectoryError;

/// Errors while reading a Lucene index.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The storage layer failed (missing file, out-of-bounds read, I/O, remote backend).
    #[error(transparent)]
    Directory(#[from] DirectoryError),
    /// The bytes do not follow the format.
    #[error("{file}: corrupt: {reason}")]
    Corrupt { file: String, reason: String },
    /// A well-formed file in a format (or format version) this reader does not handle.
    #[error("{file}: unsupported: {what}")]
    Unsupported { file: String, what: String },
    /// The CRC-32 in the footer does not match the file's bytes.
    #[error("{file}: checksum mismatch: footer says {expected:#010x}, bytes give {actual:#010x}")]
    Checksum {
        file: String,
        expected: u32,
        actual: u32,
    },
    /// The file ends before a value that should be there.
    #[error("{file}: truncated (unexpected end of file)")]
    Truncated { file: String },
}

impl Error {
    /// The file this error is about.
    pub fn file(&self) -> &str {
        match self {
            Error::Directory(e) => e.file(),
            Error::Corrupt { file, .. }
            | Error::Unsupported { file, .. }
            | Error::Checksum { file, .. }
            | Error::Truncated { file } => file,
        }
    }

    /// Whether reading the same bytes again can only fail the same way: a format this
    /// reader does not handle. Storage failures, truncation, corruption and checksum
    /// mismatches may come from a bad transfer and heal on a re-read.
    pub fn is_permanent(&self) -> bool {
        matches!(self, Error::Unsupported { .. })
    }

    /// Shorthand for [`Error::Corrupt`].
    pub fn corrupt(file: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::Corrupt {
            file: file.into(),
            reason: reason.into(),
        }
    }

    /// Shorthand for [`Error::Unsupported`].
    pub fn unsupported(file: impl Into<String>, what: impl Into<String>) -> Self {
        Error::Unsupported {
            file: file.into(),
            what: what.into(),
        }
    }

    /// Shorthand for [`Error::Truncated`].
    pub fn truncated(file: impl Into<String>) -> Self {
        Error::Truncated { file: file.into() }
    }
}

/// Result with the crate's [`Error`].
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_names_its_file() {
        let errs = [
            Error::Directory(DirectoryError::NotFound { file: "a".into() }),
            Error::corrupt("a", "x"),
            Error::unsupported("a", "y"),
            Error::Checksum {
                file: "a".into(),
                expected: 1,
                actual: 2,
            },
            Error::truncated("a"),
        ];
        for e in errs {
            assert_eq!(e.file(), "a");
            assert!(e.to_string().starts_with("a:"), "{e}");
        }
    }
}
