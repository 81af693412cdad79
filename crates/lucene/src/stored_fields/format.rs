//! Which stored-fields format a segment uses, decided from the `.fdt` header alone.

use crate::data_input::Endian;
use crate::error::{Error, Result};

/// How chunks and their index are laid out on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Container {
    /// Lucene 4.2–4.10 (`Lucene41StoredFieldsData` v1/v2): plain headers, the doc count
    /// unshifted in the chunk header, chunks of at least twice the chunk size sliced,
    /// numbers fixed-width; v2 adds footers (docs/specs/lucene4.md).
    Lucene41,
    /// Lucene 5.0–8.4 (`.fdt` v0/v1): chunk size in `.fdt`, legacy block index in `.fdx`.
    Legacy,
    /// Lucene 8.5–8.6 (`.fdt` v2): as `Legacy`, but a DirectMonotonic index in
    /// `.fdx`/`.fdm` (`Lucene85FieldsIndex`).
    OffHeapIndex,
    /// Lucene 8.7–8.11 (`Lucene87StoredFields*`, v3/v4): chunk size and index metadata in
    /// `.fdm`, big-endian.
    Meta,
    /// Lucene 9/10 (`Lucene90StoredFields*` and the Elasticsearch/OpenSearch formats on
    /// the same container), little-endian.
    Lucene90,
}

/// How each chunk's payload is compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChunkCompression {
    /// LZ4 blocks, no dictionary (Lucene 5–8.6 `FAST`).
    Lz4,
    /// Raw DEFLATE with a length prefix (Lucene 5–8.6 `HIGH_COMPRESSION`).
    Deflate,
    /// A zlib stream (header, DEFLATE, Adler-32) with a length prefix (Lucene 4.x
    /// `HIGH_COMPRESSION`).
    Zlib,
    /// LZ4 with a preset dictionary (Lucene 8.7+ `BEST_SPEED`).
    Lz4Dict,
    /// Raw DEFLATE with a preset dictionary (Lucene 8.7+ `BEST_COMPRESSION`).
    DeflateDict,
    /// One zstd frame (Elasticsearch `ZstdStoredFields814`).
    ZstdFrame,
    /// zstd frames with a raw-content dictionary (OpenSearch `CustomStoredFieldsZstd`).
    ZstdDict,
    /// zstd frames in sub-blocks without dictionary (OpenSearch `CustomStoredFieldsZstdNoDict`).
    ZstdNoDict,
}

/// Everything the reader needs to know about a `.fdt` format.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StoredFieldsFormat {
    pub codec: String,
    pub version: i32,
    pub container: Container,
    pub compression: ChunkCompression,
    pub mode: &'static str,
}

impl StoredFieldsFormat {
    /// Identifies the format from the `.fdt` header's codec name and version.
    pub fn detect(file: &str, codec: &str, version: i32) -> Result<StoredFieldsFormat> {
        use ChunkCompression::*;
        let (container, compression, mode, min, max) = match codec {
            "Lucene41StoredFieldsData" => {
                if version == 0 {
                    return Err(Error::unsupported(
                        file,
                        "Lucene41StoredFieldsData format version 0 (Lucene 4.1; supported: 1..=2, Lucene 4.2–4.10)",
                    ));
                }
                (Container::Lucene41, Lz4, "BEST_SPEED", 1, 2)
            }
            // Lucene 4.x's test framework codec with the same container in
            // HIGH_COMPRESSION mode (no Elasticsearch release wrote it).
            "HighCompressionCompressingStoredFieldsData" => {
                (Container::Lucene41, Zlib, "HIGH_COMPRESSION", 1, 2)
            }
            "Lucene50StoredFieldsFastData" => (
                if version >= 2 {
                    Container::OffHeapIndex
                } else {
                    Container::Legacy
                },
                Lz4,
                "BEST_SPEED",
                0,
                2,
            ),
            "Lucene50StoredFieldsHighData" => (
                if version >= 2 {
                    Container::OffHeapIndex
                } else {
                    Container::Legacy
                },
                Deflate,
                "BEST_COMPRESSION",
                0,
                2,
            ),
            "Lucene87StoredFieldsFastData" => (Container::Meta, Lz4Dict, "BEST_SPEED", 3, 4),
            "Lucene87StoredFieldsHighData" => {
                (Container::Meta, DeflateDict, "BEST_COMPRESSION", 3, 4)
            }
            "Lucene90StoredFieldsFastData" => (Container::Lucene90, Lz4Dict, "BEST_SPEED", 1, 1),
            "Lucene90StoredFieldsHighData" => {
                (Container::Lucene90, DeflateDict, "BEST_COMPRESSION", 1, 1)
            }
            "ZstdStoredFields814" => (Container::Lucene90, ZstdFrame, "ZSTD", 1, 1),
            "CustomStoredFieldsZstd" => (Container::Lucene90, ZstdDict, "ZSTD", 1, 1),
            "CustomStoredFieldsZstdNoDict" => {
                (Container::Lucene90, ZstdNoDict, "ZSTD_NO_DICT", 1, 1)
            }
            other if other.starts_with("QatStoredFields") => {
                return Err(Error::unsupported(
                    file,
                    format!("stored-fields codec {other} (Intel QAT hardware compression)"),
                ))
            }
            other => {
                return Err(Error::unsupported(
                    file,
                    format!("stored-fields codec {other:?} version {version}"),
                ))
            }
        };
        if version < min || version > max {
            return Err(Error::unsupported(
                file,
                format!("{codec} format version {version} (supported: {min}..={max})"),
            ));
        }
        Ok(StoredFieldsFormat {
            codec: codec.to_string(),
            version,
            container,
            compression,
            mode,
        })
    }

    /// Whether `codec` (a `.fdt` header's codec name) is a Lucene 4.x format, whose files
    /// have plain headers without a segment id.
    pub fn is_lucene4_codec(codec: &str) -> bool {
        matches!(
            codec,
            "Lucene41StoredFieldsData" | "HighCompressionCompressingStoredFieldsData"
        )
    }

    /// Whether the files have plain headers (no segment id) and, before v2, no footer.
    pub fn lucene4(&self) -> bool {
        self.container == Container::Lucene41
    }

    /// Whether the `.fdt`/`.fdx` end with a CodecUtil footer.
    pub fn has_footer(&self) -> bool {
        self.container != Container::Lucene41 || self.version >= 2
    }

    /// Whether numbers are stored fixed-width (Lucene 4.x) rather than in the compact
    /// encodings of Lucene 5+.
    pub fn fixed_width_numbers(&self) -> bool {
        self.container == Container::Lucene41
    }

    /// Byte order of fixed-width values in every file of this format.
    pub fn endian(&self) -> Endian {
        match self.container {
            Container::Lucene90 => Endian::Little,
            _ => Endian::Big,
        }
    }

    /// Bits of the chunk token below the doc count (sliced, and dirty from v4 on).
    pub fn token_shift(&self) -> u32 {
        match self.container {
            Container::Lucene41 => 0,
            Container::Lucene90 => 2,
            Container::Meta if self.version >= 4 => 2,
            _ => 1,
        }
    }

    /// Whether chunk headers use `PackedInts` (Lucene ≤ 8) rather than `StoredFieldsInts`.
    pub fn packed_ints(&self) -> bool {
        self.container != Container::Lucene90
    }

    /// Codec name of the `.fdx`/`.fdm` index files, without the `Idx`/`Meta` suffix.
    pub fn index_codec(&self) -> String {
        match self.container {
            Container::Legacy | Container::Lucene41 => {
                format!("{}Index", self.codec.trim_end_matches("Data"))
            }
            Container::OffHeapIndex | Container::Meta => "Lucene85FieldsIndex".to_string(),
            Container::Lucene90 => "Lucene90FieldsIndex".to_string(),
        }
    }
}
