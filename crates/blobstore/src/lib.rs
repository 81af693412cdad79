//! Blob stores: read-only access to the blobs of a snapshot repository (or of any tree of
//! files, such as JSON-lines exports) wherever they are — a local directory
//! ([`LocalStore`]) or an object store, S3, GCS or Azure ([`ObjectStoreBlobs`]) — behind
//! one synchronous trait, [`BlobStore`], whose file handles are Lucene's
//! [`lucene::FileHandle`] so that the Lucene reader scans remote blobs in place.
//! [`open_blob_store`] turns a location (`/path`, `file://`, `s3://bucket/base`,
//! `gs://…`, `az://…`) and [`BlobStoreOptions`] into a store; [`SCHEMES`] lists the
//! schemes it accepts. Errors are [`BlobError`]s naming the blob.
//!
//! ```no_run
//! # fn main() -> Result<(), blobstore::BlobError> {
//! let store = blobstore::open_blob_store("s3://bucket/repo?region=eu-west-1", &Default::default())?;
//! for blob in store.list("", "index-")? {
//!     println!("{} {} bytes", blob.name, blob.len);
//! }
//! # Ok(()) }
//! ```

mod aws;
pub mod blob;
pub mod error;
pub mod object;
pub mod open;

pub use blob::{BlobMeta, BlobStore, LocalStore};
pub use error::{BlobError, Result};
pub use object::ObjectStoreBlobs;
pub use open::{open_blob_store, BlobStoreOptions, SCHEMES};
