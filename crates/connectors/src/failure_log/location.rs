//! Where a failure log is: a local file (`failures.jsonl`), or an object-store prefix
//! (`s3://bucket/failures/`, `gs://…`, `az://…`) holding the parts every worker of a fleet
//! wrote (`WRITER/NNNNNNNNNN.ndjson.gz`, see [`engine::failure_log`]). A pod's disk goes
//! with the pod; a prefix outlives it, and `rfs redrive`, `rfs verify` and `rfs status`
//! read the whole prefix.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use blobstore::{BlobError, BlobStore, BlobStoreOptions};
use bytes::Bytes;
use engine::failure_log::{
    decode_part, FailureLog, FailureLogError, FailureRecord, PartStore, PART_SUFFIX,
};

/// A part larger than this (compressed) is refused unread: no part the engine writes
/// comes near it (one batch's records).
pub const MAX_PART_BYTES: u64 = 256 << 20;
/// A part that inflates to more than this is refused.
pub const MAX_PART_TEXT: u64 = 2 << 30;

/// A failure log's location, as `--failure-log` gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FailureLogAt {
    /// One JSON-lines file.
    File(PathBuf),
    /// An object-store prefix of parts (the URL as given, query included).
    Parts(String),
}

impl FailureLogAt {
    /// A path, `file://PATH`, or an object-store URL (a scheme `blobstore` reads other
    /// than `file`).
    pub fn parse(given: &Path) -> FailureLogAt {
        let text = given.to_string_lossy();
        if let Some(path) = text.strip_prefix("file://") {
            return FailureLogAt::File(PathBuf::from(path));
        }
        match text.split_once("://") {
            Some((scheme, _)) if is_object_scheme(scheme) => FailureLogAt::Parts(text.into_owned()),
            _ => FailureLogAt::File(given.to_path_buf()),
        }
    }

    /// For messages: the path, or the prefix without its query or userinfo.
    pub fn shown(&self) -> String {
        match self {
            FailureLogAt::File(p) => p.display().to_string(),
            FailureLogAt::Parts(url) => {
                let bare = url.split_once('?').map_or(url.as_str(), |(u, _)| u);
                redact::url(bare)
            }
        }
    }

    /// Where `rfs redrive` records what remains of this log by default: the file with
    /// `.remaining` added, or the prefix with `-remaining` added (beside it, not in it: a
    /// later read of this prefix does not take in the remaining log).
    pub fn remaining(&self) -> FailureLogAt {
        match self {
            FailureLogAt::File(p) => {
                let mut p = p.clone().into_os_string();
                p.push(".remaining");
                FailureLogAt::File(PathBuf::from(p))
            }
            FailureLogAt::Parts(url) => {
                let (bare, query) = url
                    .split_once('?')
                    .map_or((url.as_str(), None), |(u, q)| (u, Some(q)));
                let bare = bare.trim_end_matches('/');
                // `s3://bucket` alone: a directory in it (a read of the bucket's parts
                // goes two levels deep, `WRITER/PART`, so it does not take these in).
                let bucket_only = bare
                    .split_once("://")
                    .is_some_and(|(_, r)| !r.contains('/'));
                let mut out = if bucket_only {
                    format!("{bare}/rfs-remaining/")
                } else {
                    format!("{bare}-remaining/")
                };
                if let Some(q) = query {
                    out.push('?');
                    out.push_str(q);
                }
                FailureLogAt::Parts(out)
            }
        }
    }

    /// Opens the log for writing: the file for appending, or this process's parts under
    /// the prefix in the directory `writer` (unique per process).
    pub fn open_writer(&self, writer: &str) -> Result<FailureLog, FailureLogError> {
        match self {
            FailureLogAt::File(p) => FailureLog::open(p),
            FailureLogAt::Parts(url) => {
                let store = self.store(url)?;
                Ok(FailureLog::to_parts(Arc::new(BlobParts { store }), writer))
            }
        }
    }

    /// The object store of a prefix (`None` for a file).
    pub fn open_store(&self) -> Result<Option<Arc<dyn BlobStore>>, FailureLogError> {
        match self {
            FailureLogAt::File(_) => Ok(None),
            FailureLogAt::Parts(url) => self.store(url).map(Some),
        }
    }

    /// The object store at `url` (this location's), errors naming [`Self::shown`].
    fn store(&self, url: &str) -> Result<Arc<dyn BlobStore>, FailureLogError> {
        blobstore::open_blob_store(url, &BlobStoreOptions::default())
            .map_err(|e| blob_error(self.shown(), e))
    }

    /// Every record of the log: the file's lines, or every part of every writer under
    /// the prefix (writers by name, each writer's parts in the order written). A file
    /// or prefix that does not exist holds no records.
    pub fn read(&self) -> Result<Vec<FailureRecord>, FailureLogError> {
        match self {
            FailureLogAt::File(p) => FailureLog::read(p),
            FailureLogAt::Parts(url) => {
                let store = self.store(url)?;
                let mut out = Vec::new();
                for part in list_parts(store.as_ref())? {
                    out.extend(read_part(store.as_ref(), &part)?);
                }
                Ok(out)
            }
        }
    }
}

/// Whether `scheme` names an object store (not a local file).
fn is_object_scheme(scheme: &str) -> bool {
    !scheme.is_empty() && scheme != "file" && blobstore::SCHEMES.contains(&scheme)
}

/// One part under a prefix: `WRITER/NNNNNNNNNN.ndjson.gz` and its length.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Part {
    pub name: String,
    pub len: u64,
}

/// The parts under a prefix, writers by name, parts in the order written.
pub fn list_parts(store: &dyn BlobStore) -> Result<Vec<Part>, FailureLogError> {
    let err = |e| blob_error(store.location(), e);
    let mut out = Vec::new();
    for writer in store.list_dirs("").map_err(err)? {
        for blob in store.list(&writer, "").map_err(err)? {
            if blob.name.ends_with(PART_SUFFIX) {
                out.push(Part {
                    name: format!("{writer}/{}", blob.name),
                    len: blob.len,
                });
            }
        }
    }
    Ok(out)
}

/// The records of one part.
pub fn read_part(
    store: &dyn BlobStore,
    part: &Part,
) -> Result<Vec<FailureRecord>, FailureLogError> {
    let shown = format!("{}/{}", store.location().trim_end_matches('/'), part.name);
    if part.len > MAX_PART_BYTES {
        return Err(FailureLogError {
            location: shown,
            source: std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "{} bytes: larger than any part rfs writes ({MAX_PART_BYTES} at most)",
                    part.len
                ),
            ),
        });
    }
    let bytes = store
        .read(&part.name)
        .map_err(|e| blob_error(shown.clone(), e))?;
    decode_part(&shown, &bytes, MAX_PART_TEXT)
}

fn blob_error(location: String, e: BlobError) -> FailureLogError {
    FailureLogError {
        location,
        source: std::io::Error::other(e),
    }
}

/// A blob store as the place of a failure log's parts.
#[derive(Debug)]
struct BlobParts {
    store: Arc<dyn BlobStore>,
}

impl PartStore for BlobParts {
    fn location(&self) -> String {
        format!("{}/", self.store.location().trim_end_matches('/'))
    }

    fn put(&self, name: &str, bytes: Vec<u8>) -> std::io::Result<()> {
        self.store
            .put(name, Bytes::from(bytes))
            .map_err(std::io::Error::other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_files_unless_an_object_store_is_named() {
        let p = |s: &str| FailureLogAt::parse(Path::new(s));
        assert_eq!(
            p("failures.jsonl"),
            FailureLogAt::File("failures.jsonl".into())
        );
        assert_eq!(
            p("file:///tmp/f.jsonl"),
            FailureLogAt::File("/tmp/f.jsonl".into())
        );
        assert_eq!(
            p("s3://bucket/failures/"),
            FailureLogAt::Parts("s3://bucket/failures/".into())
        );
        assert_eq!(p("gs://b/x"), FailureLogAt::Parts("gs://b/x".into()));
        assert_eq!(p("az://c/x"), FailureLogAt::Parts("az://c/x".into()));
        // Not a scheme the blob stores know: a (strange) file name, as before.
        assert_eq!(p("ftp://x/y"), FailureLogAt::File("ftp://x/y".into()));
        // Never the query (it may hold a key) or userinfo in messages.
        let shown = p("s3://key:secret@bucket/f/?endpoint=http://h&secret_access_key=s").shown();
        assert!(!shown.contains("secret"), "{shown}");
        assert!(shown.contains("bucket/f/"), "{shown}");
    }

    #[test]
    fn the_remaining_log_is_beside_the_log() {
        let r = |s: &str| FailureLogAt::parse(Path::new(s)).remaining();
        assert_eq!(r("f.jsonl"), FailureLogAt::File("f.jsonl.remaining".into()));
        assert_eq!(
            r("s3://b/failures/?endpoint=http://h:1"),
            FailureLogAt::Parts("s3://b/failures-remaining/?endpoint=http://h:1".into())
        );
        assert_eq!(
            r("s3://b/a/f"),
            FailureLogAt::Parts("s3://b/a/f-remaining/".into())
        );
        assert_eq!(
            r("s3://b/"),
            FailureLogAt::Parts("s3://b/rfs-remaining/".into())
        );
        assert_eq!(
            r("s3://b"),
            FailureLogAt::Parts("s3://b/rfs-remaining/".into())
        );
    }

    #[test]
    fn a_local_directory_cannot_hold_parts() {
        let dir = tempfile::tempdir().unwrap();
        let store = blobstore::open_blob_store(
            &dir.path().display().to_string(),
            &BlobStoreOptions::default(),
        )
        .unwrap();
        let e = BlobParts { store }
            .put("w/1.ndjson.gz", vec![1])
            .unwrap_err();
        assert!(e.to_string().contains("read-only"), "{e}");
    }
}
