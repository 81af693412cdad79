//! Where repository blobs come from: the [`BlobStore`] trait and its local-filesystem
//! backend. Object stores (S3, GCS, Azure) are in [`crate::object`].
//!
//! The trait is synchronous: the Lucene reader runs on blocking threads, and object-store
//! backends bridge to their own async runtime.

use std::fmt;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use lucene::{FileHandle, LocalFile};

use crate::error::{BlobError, Result};

/// One entry of a listing: the blob name relative to the listed directory, and its length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobMeta {
    pub name: String,
    pub len: u64,
}

/// Access to the blobs of one repository, read-only but for [`BlobStore::put`] (object
/// stores only, for logs written beside a run). Blob names are `/`-separated paths
/// relative to the repository root (`indices/<id>/0/__abc`).
pub trait BlobStore: Send + Sync + fmt::Debug {
    /// Where the repository is, for messages (`/path/to/repo`, `s3://bucket/base`).
    fn location(&self) -> String;
    /// Blobs directly inside directory `dir` (`""` for the root) whose names start with
    /// `name_prefix`. Sub-directories are not listed.
    fn list(&self, dir: &str, name_prefix: &str) -> Result<Vec<BlobMeta>>;
    /// The names of the sub-directories directly inside `dir` (an object store's common
    /// prefixes under `dir/`), sorted. A local directory's symbolic links are not followed,
    /// and an entry whose name is not UTF-8 is an error naming the directory.
    fn list_dirs(&self, dir: &str) -> Result<Vec<String>>;
    /// Length of a blob; [`BlobError::NotFound`] if it does not exist.
    fn len(&self, name: &str) -> Result<u64>;
    /// The whole blob.
    fn read(&self, name: &str) -> Result<Bytes>;
    /// Bytes `range` of a blob.
    fn read_range(&self, name: &str, range: Range<u64>) -> Result<Bytes>;
    /// A random-access handle over a blob of known length, for the Lucene reader. Object
    /// stores read ahead in large windows so that sequential scans make few requests.
    fn open(&self, name: &str, len: u64) -> Result<Arc<dyn FileHandle>>;
    /// The repository's key prefix inside its bucket or container (the `base_path` of an
    /// S3/GCS/Azure repository); `""` for a local directory or a bucket root.
    fn base_path(&self) -> &str {
        ""
    }
    /// The same bucket or container without the base path, for blobs a repository keeps
    /// outside it (OpenSearch's HASHED_PREFIX shard paths). A store without a base path
    /// is its own root.
    fn bucket_root(&self) -> Result<Arc<dyn BlobStore>> {
        Err(BlobError::config(
            self.location(),
            "blobs outside the repository directory cannot be read from this store",
        ))
    }
    /// Writes one whole blob (replacing any of that name); returns once it is stored.
    /// Only object stores can: a local directory refuses, naming itself.
    fn put(&self, name: &str, bytes: Bytes) -> Result<()> {
        let _ = (name, bytes);
        Err(BlobError::config(
            self.location(),
            "this store is read-only here: blobs are written only to object stores",
        ))
    }
    /// Whether a blob exists.
    fn exists(&self, name: &str) -> Result<bool> {
        match self.len(name) {
            Ok(_) => Ok(true),
            Err(BlobError::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Joins a directory and a name with `/` (either may be empty).
pub fn join(dir: &str, name: &str) -> String {
    match (dir.is_empty(), name.is_empty()) {
        (true, _) => name.to_string(),
        (_, true) => dir.to_string(),
        _ => format!("{}/{}", dir.trim_end_matches('/'), name),
    }
}

/// A repository on a local (or mounted) filesystem: the `location` of an `fs` repository.
/// Blobs are read with positioned reads ([`LocalFile`]): nothing is staged, and memory does
/// not grow with the size of the shard files scanned.
#[derive(Debug, Clone)]
pub struct LocalStore {
    root: PathBuf,
    /// For a repository inside a local copy of a bucket: its base path and the bucket root.
    bucket: Option<(String, PathBuf)>,
}

impl LocalStore {
    /// A store rooted at `root`, which must be a directory.
    pub fn open(root: impl AsRef<Path>) -> Result<Self> {
        let root = root.as_ref().to_path_buf();
        match std::fs::metadata(&root) {
            Ok(m) if m.is_dir() => Ok(LocalStore { root, bucket: None }),
            Ok(_) => Err(BlobError::config(
                root.display().to_string(),
                "not a directory (a repository location is a directory)",
            )),
            Err(e) => Err(BlobError::config_caused(
                root.display().to_string(),
                "cannot open the directory",
                e,
            )),
        }
    }

    /// A repository at `<bucket>/<base_path>` in a local copy of an S3/GCS/Azure bucket:
    /// blobs OpenSearch keeps outside the base path (HASHED_PREFIX shard directories) are
    /// read from `bucket`.
    pub fn open_in_bucket(bucket: impl AsRef<Path>, base_path: &str) -> Result<Self> {
        let bucket = bucket.as_ref().to_path_buf();
        let base = base_path.trim_matches('/').to_string();
        if base.split('/').any(|c| c == ".." || c == ".") {
            return Err(BlobError::config(
                bucket.display().to_string(),
                format!("base path {base:?} is not a relative path"),
            ));
        }
        let mut store = LocalStore::open(bucket.join(&base))?;
        if !base.is_empty() {
            store.bucket = Some((base, bucket));
        }
        Ok(store)
    }

    /// The repository directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn path(&self, name: &str) -> Result<PathBuf> {
        // Blob names come from repository metadata: refuse anything that could leave the root.
        if name.split('/').any(|c| c == ".." || c == ".") || name.starts_with('/') {
            return Err(BlobError::corrupt(name, "blob name is not a relative path"));
        }
        Ok(self.root.join(name))
    }

    /// The entries of directory `dir`; `None` when it does not exist.
    fn entries(&self, dir: &str) -> Result<Option<std::fs::ReadDir>> {
        match std::fs::read_dir(self.path(dir)?) {
            Ok(e) => Ok(Some(e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.io_error(dir, "list", e)),
        }
    }

    fn io_error(&self, name: &str, action: &'static str, e: io::Error) -> BlobError {
        let blob = self.root.join(name).display().to_string();
        if e.kind() == io::ErrorKind::NotFound {
            BlobError::NotFound { blob }
        } else {
            BlobError::Backend {
                blob,
                action,
                source: Box::new(e),
            }
        }
    }

    fn file(&self, name: &str) -> Result<LocalFile> {
        let path = self.path(name)?;
        Ok(LocalFile::open(&path, path.display().to_string())?)
    }
}

impl BlobStore for LocalStore {
    fn location(&self) -> String {
        self.root.display().to_string()
    }

    fn base_path(&self) -> &str {
        self.bucket.as_ref().map_or("", |(b, _)| b.as_str())
    }

    fn bucket_root(&self) -> Result<Arc<dyn BlobStore>> {
        match &self.bucket {
            None => Ok(Arc::new(self.clone())),
            Some((_, root)) => Ok(Arc::new(LocalStore::open(root)?)),
        }
    }

    fn list(&self, dir: &str, name_prefix: &str) -> Result<Vec<BlobMeta>> {
        let Some(entries) = self.entries(dir)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| self.io_error(dir, "list", e))?;
            let Some(name) = entry.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if !name.starts_with(name_prefix) {
                continue;
            }
            let meta = entry
                .metadata()
                .map_err(|e| self.io_error(dir, "list", e))?;
            if meta.is_file() {
                out.push(BlobMeta {
                    name,
                    len: meta.len(),
                });
            }
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn list_dirs(&self, dir: &str) -> Result<Vec<String>> {
        let Some(entries) = self.entries(dir)? else {
            return Ok(Vec::new());
        };
        let mut out = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| self.io_error(dir, "list", e))?;
            // A name that is not UTF-8 cannot be named as a blob (`list` passes over such
            // files): an error here, so that a walk of the tree cannot miss it unsaid.
            let name = entry.file_name().into_string().map_err(|name| {
                self.io_error(
                    dir,
                    "list",
                    io::Error::new(
                        io::ErrorKind::InvalidData,
                        format!("a name that is not UTF-8: {name:?}"),
                    ),
                )
            })?;
            // `file_type` does not follow a symbolic link: no cycles, nothing outside.
            if entry
                .file_type()
                .map_err(|e| self.io_error(dir, "list", e))?
                .is_dir()
            {
                out.push(name);
            }
        }
        out.sort();
        Ok(out)
    }

    fn len(&self, name: &str) -> Result<u64> {
        let meta =
            std::fs::metadata(self.path(name)?).map_err(|e| self.io_error(name, "length", e))?;
        if !meta.is_file() {
            return Err(BlobError::NotFound {
                blob: self.root.join(name).display().to_string(),
            });
        }
        Ok(meta.len())
    }

    fn read(&self, name: &str) -> Result<Bytes> {
        let file = self.file(name)?;
        Ok(file.read_bytes(0..file.len())?)
    }

    fn read_range(&self, name: &str, range: Range<u64>) -> Result<Bytes> {
        let file = self.file(name)?;
        if range.start > range.end || range.end > file.len() {
            return Err(BlobError::corrupt(
                file.name(),
                format!(
                    "read of bytes {}..{} is outside the blob (length {})",
                    range.start,
                    range.end,
                    file.len()
                ),
            ));
        }
        Ok(file.read_bytes(range)?)
    }

    fn open(&self, name: &str, _len: u64) -> Result<Arc<dyn FileHandle>> {
        Ok(Arc::new(self.file(name)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_store_lists_reads_and_refuses_escapes() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("indices/a/0")).unwrap();
        std::fs::write(dir.path().join("index-1"), b"{}").unwrap();
        std::fs::write(dir.path().join("index-10"), b"{ }").unwrap();
        std::fs::write(dir.path().join("index.latest"), [0u8; 8]).unwrap();
        std::fs::write(dir.path().join("indices/a/0/__x"), b"0123456789").unwrap();
        let s = LocalStore::open(dir.path()).unwrap();
        let names: Vec<_> = s
            .list("", "index-")
            .unwrap()
            .into_iter()
            .map(|b| (b.name, b.len))
            .collect();
        assert_eq!(names, vec![("index-1".into(), 2), ("index-10".into(), 3)]);
        assert!(
            s.list("indices", "").unwrap().is_empty(),
            "dirs are not blobs"
        );
        assert_eq!(s.list("nope", "").unwrap(), vec![]);
        assert_eq!(&s.read_range("indices/a/0/__x", 2..5).unwrap()[..], b"234");
        assert!(s.read_range("indices/a/0/__x", 2..50).is_err());
        assert_eq!(s.len("indices/a/0/__x").unwrap(), 10);
        assert!(matches!(s.len("missing"), Err(BlobError::NotFound { .. })));
        assert!(s.read("../etc/passwd").is_err());
        let h = s.open("indices/a/0/__x", 10).unwrap();
        assert_eq!(&h.read_bytes(8..10).unwrap()[..], b"89");
    }
}
