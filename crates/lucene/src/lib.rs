//! A read-only reader of Lucene 5–10 indexes, limited to what a migration needs: commits
//! and segments, compound files, field infos, live docs, soft deletes and stored fields.
//!
//! It knows nothing about Elasticsearch: it hands every stored field of every live
//! document to a visitor. Files come from a [`Directory`] — local, in memory, or a
//! snapshot repository — and are read in place through [`FileSlice`]s.

pub mod codec_util;
pub mod compress;
pub mod data_input;
pub mod directory;
pub mod error;
pub mod stored_fields;

pub use directory::{
    Directory, DirectoryError, FileHandle, FileSlice, FsDirectory, MemoryFile, SliceDirectory,
};
pub use data_input::{DataInput, Endian};
pub use error::{Error, Result};
pub use stored_fields::{StoredFieldsReader, StoredValue};
