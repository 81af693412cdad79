//! A read-only reader of Lucene 4.2–10 indexes, limited to what a migration needs: commits
//! and segments, compound files, field infos, live docs, soft deletes, stored fields and
//! doc values (forward per field, or a NUMERIC field's values by doc id such as `_seq_no`)
//! and vectors (each document's original vector, [`vectors`]).
//!
//! It knows nothing about Elasticsearch: it hands every stored field of every live
//! document to a visitor. Files come from a [`Directory`] — local, in memory, or a
//! snapshot repository — and are read in place through [`FileSlice`]s.
//!
//! ```no_run
//! use std::sync::Arc;
//! use lucene::{FieldInfo, FsDirectory, IndexReader, OpenOptions, StoredValue};
//!
//! # fn main() -> lucene::Result<()> {
//! let dir = Arc::new(FsDirectory::open("/path/to/shard/index")?);
//! let reader = IndexReader::open(dir, &OpenOptions::elasticsearch())?;
//! let mut docs = reader.documents(0..reader.max_doc())?;
//! while let Some(doc) = docs.next(&mut |field: &FieldInfo, value: StoredValue<'_>| {
//!     if let ("_source", StoredValue::Binary(src)) = (field.name.as_str(), value) {
//!         println!("{} bytes of _source", src.len());
//!     }
//!     Ok(())
//! })? {
//!     let _ = doc; // the shard-global doc id: a resumable cursor
//! }
//! # Ok(()) }
//! ```

pub mod codec_util;
pub mod commit;
pub mod compound;
pub mod compress;
#[cfg(feature = "test-util")]
pub mod contract;
pub mod data_input;
pub mod directory;
pub mod doc_set;
pub mod doc_values;
pub mod error;
pub mod field_infos;
pub mod live_docs;
pub mod local_file;
pub mod names;
mod reader;
pub mod segment_info;
pub mod stored_fields;
pub mod vectors;
pub mod version;

pub use commit::{CommitInfo, SegmentCommitInfo};
pub use data_input::{DataInput, Endian};
pub use directory::{
    Directory, DirectoryError, FileHandle, FileSlice, FsDirectory, MemoryFile, SliceDirectory,
};
pub use doc_set::{DocSet, Selection};
pub use doc_values::{read_numeric_values, DocValue, DocValuesReader, FieldValues, NumericValues};
pub use error::{Error, Result};
pub use field_infos::{DocValuesType, FieldInfo, FieldInfos, VectorEncoding};
pub use local_file::LocalFile;
pub use reader::{Documents, IndexReader, OpenOptions, SegmentReader, StoredFieldVisitor};
pub use segment_info::SegmentInfo;
pub use stored_fields::{StoredFieldsReader, StoredValue, Verified, VerifiedFiles};
pub use version::LuceneVersion;
