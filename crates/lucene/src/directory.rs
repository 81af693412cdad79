//! Where Lucene files come from: a [`Directory`] of named files, each opened as a
//! [`FileSlice`] — a cheap, clonable view of a byte range of some backing storage.
//!
//! Backing storage is anything that implements [`FileHandle`]: a local
//! file, an in-memory buffer, a blob in an object store, a range of another file
//! (compound files), or several blobs concatenated (multi-part snapshot files).
//! Readers decode from slices, so nothing is copied until it must be.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;

/// Errors of the storage layer. Every variant names the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum DirectoryError {
    #[error("{file}: not found")]
    NotFound { file: String },
    #[error("{file}: read of bytes {start}..{end} is outside the file (length {len})")]
    OutOfBounds {
        file: String,
        start: u64,
        end: u64,
        len: u64,
    },
    #[error("{file}")]
    Io {
        file: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: {message}")]
    Backend { file: String, message: String },
}

impl DirectoryError {
    /// The file this error is about.
    pub fn file(&self) -> &str {
        match self {
            DirectoryError::NotFound { file }
            | DirectoryError::OutOfBounds { file, .. }
            | DirectoryError::Io { file, .. }
            | DirectoryError::Backend { file, .. } => file,
        }
    }
}

/// Random-access, read-only bytes of one file. Implementations must be cheap to share
/// between threads; `read_bytes` may be called concurrently.
pub trait FileHandle: Send + Sync + fmt::Debug {
    /// Human-readable name used in error messages (a path, a blob name, `_0.cfs[_0.fdt]`).
    fn name(&self) -> &str;
    /// Length in bytes.
    fn len(&self) -> u64;
    /// Whether the file is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Bytes in `range` (relative to the start of this handle). Zero-copy where the
    /// backend allows it. A range outside `0..len()` (or reversed) is
    /// [`DirectoryError::OutOfBounds`] naming the file, checked before anything is read or
    /// allocated ([`check_range`]); [`FileSlice`] checks its ranges too.
    fn read_bytes(&self, range: Range<u64>) -> Result<Bytes, DirectoryError>;
    /// Copies the bytes at `start..start + buf.len()` into `buf`, for a caller that reads a
    /// file in pieces through one buffer of its own (checksums) rather than a fresh
    /// allocation per piece. Out of range as for `read_bytes`. This default copies from
    /// [`FileHandle::read_bytes`]; local files read straight into `buf`.
    fn read_into(&self, start: u64, buf: &mut [u8]) -> Result<(), DirectoryError> {
        let range = start..start.saturating_add(buf.len() as u64);
        check_range(self.name(), self.len(), &range)?;
        let bytes = self.read_bytes(range)?;
        if bytes.len() != buf.len() {
            return Err(DirectoryError::Backend {
                file: self.name().to_string(),
                message: format!(
                    "a read of {} bytes at {start} returned {}",
                    buf.len(),
                    bytes.len()
                ),
            });
        }
        buf.copy_from_slice(&bytes);
        Ok(())
    }
    /// A hint that `range` is about to be read sequentially (object stores may prefetch).
    fn will_need(&self, _range: Range<u64>) {}
}

/// `range` lies within a file of `len` bytes named `name` (and is not reversed); else
/// [`DirectoryError::OutOfBounds`] naming the file.
pub fn check_range(name: &str, len: u64, range: &Range<u64>) -> Result<(), DirectoryError> {
    if range.start > range.end || range.end > len {
        return Err(DirectoryError::OutOfBounds {
            file: name.to_string(),
            start: range.start,
            end: range.end,
            len,
        });
    }
    Ok(())
}

/// A view of `range` within a [`FileHandle`]. Cloning is cheap (an `Arc` and two integers).
#[derive(Clone)]
pub struct FileSlice {
    handle: Arc<dyn FileHandle>,
    start: u64,
    end: u64,
}

impl fmt::Debug for FileSlice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "FileSlice({} {}..{})",
            self.handle.name(),
            self.start,
            self.end
        )
    }
}

impl FileSlice {
    /// The whole of `handle`.
    pub fn new(handle: Arc<dyn FileHandle>) -> Self {
        let end = handle.len();
        FileSlice {
            handle,
            start: 0,
            end,
        }
    }

    /// A slice over bytes held in memory.
    pub fn from_bytes(name: impl Into<String>, bytes: impl Into<Bytes>) -> Self {
        FileSlice::new(Arc::new(MemoryFile {
            name: name.into(),
            bytes: bytes.into(),
        }))
    }

    /// Name of the underlying file, for error messages.
    pub fn name(&self) -> &str {
        self.handle.name()
    }

    /// Length of this slice in bytes.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Whether this slice is empty.
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// A sub-slice; `range` is relative to this slice and must lie within it.
    pub fn slice(&self, range: Range<u64>) -> Result<FileSlice, DirectoryError> {
        self.check(&range)?;
        Ok(FileSlice {
            handle: self.handle.clone(),
            start: self.start + range.start,
            end: self.start + range.end,
        })
    }

    /// Bytes of `range` (relative to this slice).
    pub fn read_bytes(&self, range: Range<u64>) -> Result<Bytes, DirectoryError> {
        self.check(&range)?;
        self.handle
            .read_bytes(self.start + range.start..self.start + range.end)
    }

    /// Copies the bytes at `start..start + buf.len()` (relative to this slice) into `buf`.
    pub fn read_into(&self, start: u64, buf: &mut [u8]) -> Result<(), DirectoryError> {
        let range = start..start.saturating_add(buf.len() as u64);
        self.check(&range)?;
        self.handle.read_into(self.start + start, buf)
    }

    /// All bytes of this slice. Zero-copy for memory backends.
    pub fn read_all(&self) -> Result<Bytes, DirectoryError> {
        self.read_bytes(0..self.len())
    }

    /// The same bytes under another name (used for files inside compound files, so that
    /// errors name `_0.cfs[_0.fdt]` rather than the container alone).
    pub fn renamed(&self, name: impl Into<String>) -> FileSlice {
        FileSlice::new(Arc::new(RenamedSlice {
            name: name.into(),
            inner: self.clone(),
        }))
    }

    /// Hint that `range` (relative to this slice) will be read sequentially soon.
    pub fn will_need(&self, range: Range<u64>) {
        if range.start <= range.end && range.end <= self.len() {
            self.handle
                .will_need(self.start + range.start..self.start + range.end);
        }
    }

    fn check(&self, range: &Range<u64>) -> Result<(), DirectoryError> {
        if range.start > range.end || range.end > self.len() {
            return Err(DirectoryError::OutOfBounds {
                file: self.handle.name().to_string(),
                start: range.start,
                end: range.end,
                len: self.len(),
            });
        }
        Ok(())
    }
}

/// A set of named files: a Lucene index directory, a compound file, a snapshot shard.
pub trait Directory: Send + Sync + fmt::Debug {
    /// Names of all files (no particular order).
    fn list_files(&self) -> Result<Vec<String>, DirectoryError>;
    /// Opens `name`; [`DirectoryError::NotFound`] if it does not exist.
    fn open_file(&self, name: &str) -> Result<FileSlice, DirectoryError>;
    /// Whether `name` exists.
    fn exists(&self, name: &str) -> Result<bool, DirectoryError> {
        match self.open_file(name) {
            Ok(_) => Ok(true),
            Err(DirectoryError::NotFound { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl<D: Directory + ?Sized> Directory for Arc<D> {
    fn list_files(&self) -> Result<Vec<String>, DirectoryError> {
        (**self).list_files()
    }
    fn open_file(&self, name: &str) -> Result<FileSlice, DirectoryError> {
        (**self).open_file(name)
    }
}

/// Bytes held in memory.
#[derive(Debug)]
pub struct MemoryFile {
    name: String,
    bytes: Bytes,
}

impl MemoryFile {
    pub fn new(name: impl Into<String>, bytes: impl Into<Bytes>) -> Self {
        MemoryFile {
            name: name.into(),
            bytes: bytes.into(),
        }
    }
}

impl FileHandle for MemoryFile {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read_bytes(&self, range: Range<u64>) -> Result<Bytes, DirectoryError> {
        check_range(&self.name, self.len(), &range)?;
        Ok(self.bytes.slice(range.start as usize..range.end as usize))
    }
}

/// A slice of another file, known under its own name.
#[derive(Debug)]
struct RenamedSlice {
    name: String,
    inner: FileSlice,
}

impl FileHandle for RenamedSlice {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.inner.len()
    }
    fn read_bytes(&self, range: Range<u64>) -> Result<Bytes, DirectoryError> {
        self.inner.read_bytes(range)
    }
    fn read_into(&self, start: u64, buf: &mut [u8]) -> Result<(), DirectoryError> {
        self.inner.read_into(start, buf)
    }
    fn will_need(&self, range: Range<u64>) {
        self.inner.will_need(range)
    }
}

/// A directory whose files are [`FileSlice`]s registered by name — used for compound
/// files, for tests, and by callers that assemble a directory from other sources.
#[derive(Debug, Default, Clone)]
pub struct SliceDirectory {
    files: BTreeMap<String, FileSlice>,
}

impl SliceDirectory {
    pub fn new() -> Self {
        Self::default()
    }
    /// Adds or replaces `name`.
    pub fn insert(&mut self, name: impl Into<String>, slice: FileSlice) {
        self.files.insert(name.into(), slice);
    }
}

impl Directory for SliceDirectory {
    fn list_files(&self) -> Result<Vec<String>, DirectoryError> {
        Ok(self.files.keys().cloned().collect())
    }
    fn open_file(&self, name: &str) -> Result<FileSlice, DirectoryError> {
        self.files
            .get(name)
            .cloned()
            .ok_or_else(|| DirectoryError::NotFound {
                file: name.to_string(),
            })
    }
}

/// A local directory; files are read with positioned reads ([`crate::LocalFile`]), so
/// memory does not grow with the size of the files scanned.
#[derive(Debug, Clone)]
pub struct FsDirectory {
    root: PathBuf,
}

impl FsDirectory {
    pub fn open(root: impl AsRef<Path>) -> Result<Self, DirectoryError> {
        let root = root.as_ref().to_path_buf();
        let meta = std::fs::metadata(&root).map_err(|source| DirectoryError::Io {
            file: root.display().to_string(),
            source,
        })?;
        if !meta.is_dir() {
            return Err(DirectoryError::Backend {
                file: root.display().to_string(),
                message: "not a directory".into(),
            });
        }
        Ok(FsDirectory { root })
    }

    pub fn path(&self) -> &Path {
        &self.root
    }
}

impl Directory for FsDirectory {
    fn list_files(&self) -> Result<Vec<String>, DirectoryError> {
        let io = |source| DirectoryError::Io {
            file: self.root.display().to_string(),
            source,
        };
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.root).map_err(io)? {
            let entry = entry.map_err(io)?;
            if entry.file_type().map_err(io)?.is_file() {
                if let Some(name) = entry.file_name().to_str() {
                    names.push(name.to_string());
                }
            }
        }
        Ok(names)
    }

    fn open_file(&self, name: &str) -> Result<FileSlice, DirectoryError> {
        let path = self.root.join(name);
        let display = path.display().to_string();
        let file = crate::local_file::LocalFile::open(&path, display)?;
        Ok(FileSlice::new(Arc::new(file)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_nest_and_check_bounds() {
        let f = FileSlice::from_bytes("mem", &b"0123456789"[..]);
        let s = f.slice(2..8).unwrap();
        assert_eq!(s.len(), 6);
        let t = s.slice(1..3).unwrap();
        assert_eq!(&t.read_all().unwrap()[..], b"34");
        let err = s.slice(4..9).unwrap_err();
        assert!(err.to_string().starts_with("mem:"), "{err}");
        let r = t.renamed("inner");
        assert_eq!(r.name(), "inner");
        assert_eq!(&r.read_bytes(1..2).unwrap()[..], b"4");
        assert_eq!(r.slice(3..3).unwrap_err().file(), "inner");
        let (hi, lo) = (5, 4);
        assert!(s.read_bytes(hi..lo).is_err());
    }

    #[test]
    fn fs_directory_reads_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a"), b"hello").unwrap();
        std::fs::write(dir.path().join("empty"), b"").unwrap();
        let d = FsDirectory::open(dir.path()).unwrap();
        let mut names = d.list_files().unwrap();
        names.sort();
        assert_eq!(names, vec!["a", "empty"]);
        assert_eq!(&d.open_file("a").unwrap().read_all().unwrap()[..], b"hello");
        assert!(d.open_file("empty").unwrap().is_empty());
        assert!(matches!(
            d.open_file("missing"),
            Err(DirectoryError::NotFound { .. })
        ));
    }
}
