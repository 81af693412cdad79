//! A shard of a snapshot as a [`lucene::Directory`], read in place: every Lucene file maps
//! to its blob, to its ordered `.partN` blobs as one virtual file, or to the inline bytes
//! of a `v__` entry. Nothing is copied to local disk.
//!
//! Each file is checked when first opened: its length against the shard metadata, and the
//! CRC-32 in its Lucene footer against the metadata's base-36 checksum.
//! [`ShardDirectory::verify_all`] additionally recomputes every file's CRC-32.

use std::collections::BTreeMap;
use std::fmt;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use bytes::{Bytes, BytesMut};
use lucene::codec_util::{verify_checksum, FOOTER_MAGIC};
use lucene::names::base36;
use lucene::{Directory, DirectoryError, FileHandle, FileSlice, MemoryFile};

use crate::blob::{join, BlobStore};
use crate::error::{Error, Result};
use crate::metadata::FileInfo;

/// Bytes of shard files read from repositories by this process (inline `v__` files
/// excluded): what a migration or a delta costs in repository reads.
static BYTES_READ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Bytes of shard files this process has read from repositories so far.
pub fn bytes_read() -> u64 {
    BYTES_READ.load(std::sync::atomic::Ordering::Relaxed)
}

/// One Lucene file assembled from one or more blobs.
struct ShardFile {
    name: String,
    len: u64,
    /// (offset of the part in the file, part)
    parts: Vec<(u64, Arc<dyn FileHandle>)>,
}

impl fmt::Debug for ShardFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ShardFile({}, {} parts)", self.name, self.parts.len())
    }
}

impl FileHandle for ShardFile {
    fn name(&self) -> &str {
        &self.name
    }
    fn len(&self) -> u64 {
        self.len
    }
    fn read_into(&self, start: u64, buf: &mut [u8]) -> std::result::Result<(), DirectoryError> {
        let end = start.saturating_add(buf.len() as u64);
        BYTES_READ.fetch_add(buf.len() as u64, std::sync::atomic::Ordering::Relaxed);
        // Each part holding some of the range copies its share straight into `buf`.
        let first = self
            .parts
            .partition_point(|(off, _)| *off <= start)
            .saturating_sub(1);
        let mut pos = start;
        for (off, part) in self.parts.iter().skip(first) {
            if pos >= end {
                break;
            }
            let part_end = end.min(off + part.len());
            if part_end <= pos || pos < *off {
                continue;
            }
            let at = (pos - start) as usize;
            let n = (part_end - pos) as usize;
            part.read_into(pos - off, &mut buf[at..at + n])?;
            pos = part_end;
        }
        if pos != end {
            return Err(DirectoryError::OutOfBounds {
                file: self.name.clone(),
                start,
                end,
                len: self.len,
            });
        }
        Ok(())
    }
    fn read_bytes(&self, range: Range<u64>) -> std::result::Result<Bytes, DirectoryError> {
        // Before the buffer below is sized by it.
        lucene::directory::check_range(&self.name, self.len, &range)?;
        BYTES_READ.fetch_add(
            range.end.saturating_sub(range.start),
            std::sync::atomic::Ordering::Relaxed,
        );
        if self.parts.len() == 1 {
            return self.parts[0].1.read_bytes(range);
        }
        // The part holding range.start; then copy across parts when the range spans them.
        let first = self
            .parts
            .partition_point(|(off, _)| *off <= range.start)
            .saturating_sub(1);
        let (off, part) = &self.parts[first];
        if range.end <= off + part.len() {
            return part.read_bytes(range.start - off..range.end - off);
        }
        let mut out = BytesMut::with_capacity((range.end - range.start) as usize);
        let mut pos = range.start;
        for (off, part) in &self.parts[first..] {
            if pos >= range.end {
                break;
            }
            let end = range.end.min(off + part.len());
            if end <= pos {
                continue;
            }
            out.extend_from_slice(&part.read_bytes(pos - off..end - off)?);
            pos = end;
        }
        if pos != range.end {
            return Err(DirectoryError::OutOfBounds {
                file: self.name.clone(),
                start: range.start,
                end: range.end,
                len: self.len,
            });
        }
        Ok(out.freeze())
    }
    fn will_need(&self, range: Range<u64>) {
        for (off, part) in &self.parts {
            let end = off + part.len();
            if range.start < end && range.end > *off {
                part.will_need(range.start.max(*off) - off..range.end.min(end) - off);
            }
        }
    }
}

struct Entry {
    info: FileInfo,
    opened: Mutex<Option<FileSlice>>,
}

/// The Lucene files of one shard in one snapshot.
pub struct ShardDirectory {
    store: Arc<dyn BlobStore>,
    /// Shard directory in the repository: `indices/<id>/<shard>`.
    dir: String,
    files: BTreeMap<String, Entry>,
}

impl fmt::Debug for ShardDirectory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ShardDirectory({}/{}, {} files)",
            self.store.location(),
            self.dir,
            self.files.len()
        )
    }
}

impl ShardDirectory {
    /// A directory over `files` (from the shard's `snap-*.dat`), whose blobs live in
    /// `dir` of `store`.
    pub fn new(store: Arc<dyn BlobStore>, dir: impl Into<String>, files: &[FileInfo]) -> Self {
        ShardDirectory {
            store,
            dir: dir.into(),
            files: files
                .iter()
                .map(|f| {
                    (
                        f.physical_name.clone(),
                        Entry {
                            info: f.clone(),
                            opened: Mutex::new(None),
                        },
                    )
                })
                .collect(),
        }
    }

    /// The metadata of every file.
    pub fn file_infos(&self) -> impl Iterator<Item = &FileInfo> {
        self.files.values().map(|e| &e.info)
    }

    fn blob_display(&self, blob: &str) -> String {
        format!(
            "{}/{}",
            self.store.location().trim_end_matches('/'),
            join(&self.dir, blob)
        )
    }

    fn assemble(&self, info: &FileInfo) -> Result<FileSlice> {
        let display = format!("{} ({})", self.blob_display(&info.name), info.physical_name);
        if info.is_virtual() {
            let bytes = info
                .meta_hash
                .as_ref()
                .map(|b| Bytes::from(b.0.clone()))
                .ok_or_else(|| Error::corrupt(&display, "virtual file without inline content"))?;
            if bytes.len() as u64 != info.length {
                return Err(Error::corrupt(
                    &display,
                    format!(
                        "inline content is {} bytes, metadata says {}",
                        bytes.len(),
                        info.length
                    ),
                ));
            }
            return Ok(FileSlice::new(Arc::new(MemoryFile::new(display, bytes))));
        }
        let mut parts = Vec::new();
        let mut offset = 0u64;
        for (blob, len) in info.parts() {
            let handle = self.store.open(&join(&self.dir, &blob), len)?;
            if handle.len() != len {
                return Err(Error::corrupt(
                    self.blob_display(&blob),
                    format!(
                        "blob is {} bytes, shard metadata says {len} ({})",
                        handle.len(),
                        info.physical_name
                    ),
                ));
            }
            parts.push((offset, handle));
            offset += len;
        }
        Ok(FileSlice::new(Arc::new(ShardFile {
            name: display,
            len: info.length,
            parts,
        })))
    }

    /// Checks the footer of `slice` against `info`: magic, and the stored CRC equal to the
    /// metadata checksum. Files without a footer (pre-Lucene-4.8) are not checked.
    fn check_footer(slice: &FileSlice, info: &FileInfo) -> Result<()> {
        let Some(expected) = info.checksum_value() else {
            return Ok(());
        };
        if slice.len() < 16 {
            return Ok(());
        }
        let footer = slice.read_bytes(slice.len() - 16..slice.len())?;
        let magic = u32::from_be_bytes(footer[0..4].try_into().expect("4 bytes"));
        if magic != FOOTER_MAGIC {
            return Ok(());
        }
        let stored = u64::from_be_bytes(footer[8..16].try_into().expect("8 bytes"));
        if stored != expected {
            return Err(Error::corrupt(
                slice.name(),
                format!(
                    "footer checksum {} does not match the snapshot's {}",
                    base36(stored),
                    info.checksum.as_deref().unwrap_or("")
                ),
            ));
        }
        Ok(())
    }

    fn open_entry(&self, entry: &Entry) -> Result<FileSlice> {
        let mut g = entry.opened.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = g.as_ref() {
            return Ok(s.clone());
        }
        let slice = self.assemble(&entry.info)?;
        Self::check_footer(&slice, &entry.info)?;
        *g = Some(slice.clone());
        Ok(slice)
    }

    /// Recomputes the CRC-32 of every file with a footer and compares it with the footer
    /// and the metadata. Reads every byte of the shard.
    pub fn verify_all(&self) -> Result<()> {
        for entry in self.files.values() {
            let slice = self.open_entry(entry)?;
            if slice.len() < 16 || entry.info.checksum_value().is_none() {
                continue;
            }
            let footer = slice.read_bytes(slice.len() - 16..slice.len())?;
            if u32::from_be_bytes(footer[0..4].try_into().expect("4 bytes")) != FOOTER_MAGIC {
                continue;
            }
            verify_checksum(&slice).map_err(|source| Error::Lucene {
                context: "CRC-32 check".into(),
                source,
            })?;
        }
        Ok(())
    }
}

impl Directory for ShardDirectory {
    fn list_files(&self) -> std::result::Result<Vec<String>, DirectoryError> {
        Ok(self.files.keys().cloned().collect())
    }

    fn open_file(&self, name: &str) -> std::result::Result<FileSlice, DirectoryError> {
        let entry = self
            .files
            .get(name)
            .ok_or_else(|| DirectoryError::NotFound {
                file: format!("{}/{} ({name})", self.store.location(), self.dir),
            })?;
        self.open_entry(entry).map_err(|e| match e {
            Error::NotFound { blob } => DirectoryError::NotFound { file: blob },
            other => DirectoryError::Backend {
                file: name.to_string(),
                message: redact::chain(&other),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::LocalStore;
    use crate::xcontent::Binary;

    fn lucene_file(body: &[u8]) -> Vec<u8> {
        let mut f = body.to_vec();
        f.extend_from_slice(&FOOTER_MAGIC.to_be_bytes());
        f.extend_from_slice(&[0; 4]);
        let crc = crc32fast::hash(&f);
        f.extend_from_slice(&u64::from(crc).to_be_bytes());
        f
    }

    #[test]
    fn multi_part_and_virtual_files_read_as_one() {
        let dir = tempfile::tempdir().unwrap();
        let shard = dir.path().join("indices/i/0");
        std::fs::create_dir_all(&shard).unwrap();
        let content = lucene_file(&(0..100u8).collect::<Vec<_>>());
        let crc = u64::from_be_bytes(content[content.len() - 8..].try_into().unwrap());
        for (i, chunk) in content.chunks(30).enumerate() {
            std::fs::write(shard.join(format!("__f.part{i}")), chunk).unwrap();
        }
        let seg = lucene_file(b"segments");
        let seg_crc = u64::from_be_bytes(seg[seg.len() - 8..].try_into().unwrap());
        let files = vec![
            FileInfo {
                name: "__f".into(),
                physical_name: "_0.fdt".into(),
                length: content.len() as u64,
                checksum: Some(base36(crc)),
                part_size: Some(30),
                written_by: Some("8.7.0".into()),
                meta_hash: None,
                writer_uuid: None,
            },
            FileInfo {
                name: "v__x".into(),
                physical_name: "segments_1".into(),
                length: seg.len() as u64,
                checksum: Some(base36(seg_crc)),
                part_size: None,
                written_by: Some("8.7.0".into()),
                meta_hash: Some(Binary(seg.clone())),
                writer_uuid: None,
            },
        ];
        let store: Arc<dyn BlobStore> = Arc::new(LocalStore::open(dir.path()).unwrap());
        let d = ShardDirectory::new(store.clone(), "indices/i/0", &files);
        let f = d.open_file("_0.fdt").unwrap();
        assert_eq!(&f.read_all().unwrap()[..], &content[..]);
        assert_eq!(&f.read_bytes(25..65).unwrap()[..], &content[25..65]);
        assert_eq!(&f.read_bytes(30..60).unwrap()[..], &content[30..60]);
        // Into a caller's buffer (checksums): within a part, across parts, whole.
        for (at, n) in [(3, 20), (25, 40), (30, 30), (0, content.len())] {
            let mut buf = vec![0u8; n];
            f.read_into(at as u64, &mut buf).unwrap();
            assert_eq!(&buf[..], &content[at..at + n], "{at}+{n}");
        }
        let mut over = vec![0u8; 10];
        assert!(f.read_into(content.len() as u64 - 5, &mut over).is_err());
        assert_eq!(
            &d.open_file("segments_1").unwrap().read_all().unwrap()[..],
            &seg[..]
        );
        d.verify_all().unwrap();
        assert!(matches!(
            d.open_file("nope"),
            Err(DirectoryError::NotFound { .. })
        ));

        // A wrong checksum in the metadata is caught at open, naming the blob.
        let mut bad = files.clone();
        bad[0].checksum = Some("zz".into());
        let d = ShardDirectory::new(store.clone(), "indices/i/0", &bad);
        let err = redact::chain(&d.open_file("_0.fdt").unwrap_err());
        assert!(
            err.contains("indices/i/0/__f") && err.contains("checksum"),
            "{err}"
        );

        // A flipped byte inside a part is caught by verify_all, naming the file.
        let mut part1 = std::fs::read(shard.join("__f.part1")).unwrap();
        part1[3] ^= 0x40;
        std::fs::write(shard.join("__f.part1"), part1).unwrap();
        let d = ShardDirectory::new(store, "indices/i/0", &files);
        let err = redact::chain(&d.verify_all().unwrap_err());
        assert!(err.contains("__f") && err.contains("CRC"), "{err}");
    }
}
