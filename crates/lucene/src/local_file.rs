//! A local file read with positioned reads (`pread`) into fresh buffers.
//!
//! Memory-mapping a shard file would make every page the reader has touched count towards
//! the process's resident set until the whole file is unmapped: a 50 GB shard scanned from
//! start to end would look like a 50 GB process. Positioned reads copy each requested range
//! (a stored-fields chunk, a footer, a bitset) into a buffer that is freed as soon as the
//! reader is done with it, so memory stays bounded by what the reader holds, whatever the
//! size of the file. The copy costs about as much as the page faults it replaces.

use std::fs::File;
use std::ops::Range;
use std::os::unix::fs::FileExt;
use std::path::Path;

use bytes::Bytes;

use crate::directory::{DirectoryError, FileHandle};

/// An open local file; cheap to share between threads (`pread` has no file position).
#[derive(Debug)]
pub struct LocalFile {
    name: String,
    file: File,
    len: u64,
}

impl LocalFile {
    /// Opens `path`; `name` is used in error messages.
    pub fn open(path: &Path, name: impl Into<String>) -> Result<LocalFile, DirectoryError> {
        let name = name.into();
        let file = File::open(path).map_err(|source| match source.kind() {
            std::io::ErrorKind::NotFound => DirectoryError::NotFound { file: name.clone() },
            _ => DirectoryError::Io {
                file: name.clone(),
                source,
            },
        })?;
        let meta = file.metadata().map_err(|source| DirectoryError::Io {
            file: name.clone(),
            source,
        })?;
        if !meta.is_file() {
            return Err(DirectoryError::NotFound { file: name });
        }
        advise(&file, 0, 0, Advice::Sequential);
        Ok(LocalFile {
            name,
            file,
            len: meta.len(),
        })
    }
}

impl FileHandle for LocalFile {
    fn name(&self) -> &str {
        &self.name
    }

    fn len(&self) -> u64 {
        self.len
    }

    fn read_bytes(&self, range: Range<u64>) -> Result<Bytes, DirectoryError> {
        if range.start > range.end || range.end > self.len {
            return Err(DirectoryError::OutOfBounds {
                file: self.name.clone(),
                start: range.start,
                end: range.end,
                len: self.len,
            });
        }
        // The length is bounded by the file's length, checked just above.
        let mut buf = vec![0u8; (range.end - range.start) as usize];
        self.read_into(range.start, &mut buf)?;
        Ok(Bytes::from(buf))
    }

    fn read_into(&self, start: u64, buf: &mut [u8]) -> Result<(), DirectoryError> {
        let end = start.saturating_add(buf.len() as u64);
        if end > self.len {
            return Err(DirectoryError::OutOfBounds {
                file: self.name.clone(),
                start,
                end,
                len: self.len,
            });
        }
        self.file
            .read_exact_at(buf, start)
            .map_err(|source| match source.kind() {
                // The file was shorter than when it was opened.
                std::io::ErrorKind::UnexpectedEof => DirectoryError::Backend {
                    file: self.name.clone(),
                    message: format!(
                        "file ended before byte {end} (it was {} bytes when opened; truncated since?)",
                        self.len
                    ),
                },
                _ => DirectoryError::Io {
                    file: self.name.clone(),
                    source,
                },
            })
    }

    fn will_need(&self, range: Range<u64>) {
        advise(
            &self.file,
            range.start,
            range.end.saturating_sub(range.start),
            Advice::WillNeed,
        );
    }
}

enum Advice {
    Sequential,
    WillNeed,
}

/// Read-ahead hints to the kernel; they change speed only, so failures are ignored.
#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
fn advise(file: &File, offset: u64, len: u64, advice: Advice) {
    let advice = match advice {
        Advice::Sequential => rustix::fs::Advice::Sequential,
        Advice::WillNeed => rustix::fs::Advice::WillNeed,
    };
    let len = std::num::NonZeroU64::new(len);
    let _ = rustix::fs::fadvise(file, offset, len, advice);
}

#[cfg(not(any(target_os = "linux", target_os = "android", target_os = "freebsd")))]
fn advise(_file: &File, _offset: u64, _len: u64, _advice: Advice) {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_ranges_and_names_the_file_in_errors() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"0123456789").unwrap();
        let f = LocalFile::open(&path, "f-name").unwrap();
        assert_eq!(f.len(), 10);
        assert_eq!(&f.read_bytes(2..5).unwrap()[..], b"234");
        assert_eq!(&f.read_bytes(10..10).unwrap()[..], b"");
        f.will_need(0..10);
        let e = f.read_bytes(5..11).unwrap_err();
        assert_eq!(e.file(), "f-name");
        // Truncated after opening: an error naming the file, not a short read.
        std::fs::write(&path, b"01").unwrap();
        let e = f.read_bytes(0..8).unwrap_err();
        assert!(e.to_string().starts_with("f-name:"), "{e}");
        assert!(matches!(
            LocalFile::open(&dir.path().join("missing"), "m"),
            Err(DirectoryError::NotFound { .. })
        ));
        assert!(LocalFile::open(dir.path(), "a dir").is_err());
    }
}
