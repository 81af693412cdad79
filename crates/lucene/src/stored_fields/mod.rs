//! Stored fields: the `.fdt` chunks and their index (`.fdx`, `.fdm`) of Lucene 5–10 and
//! of the Elasticsearch/OpenSearch zstd formats built on Lucene's container.
//!
//! The format is chosen from the `.fdt` header's codec name and version, never from the
//! codec name in `segments_N`. A [`StoredFieldsCursor`] decompresses each chunk once
//! into a reused buffer and hands every field to a visitor, strings and byte arrays as
//! slices of that buffer.
//!
//! A cursor made by [`StoredFieldsReader::verifying_cursor`] also computes the CRC-32 of
//! `.fdt` from the chunk bytes it reads anyway, in file order; [`StoredFieldsCursor::finish`]
//! reads what the walk did not (chunks of deleted documents, the trailer) and compares
//! the result with the footer. The file is read once, and the check costs one CRC-32
//! pass over compressed bytes.
//!
//! ```no_run
//! # fn demo(dir: &dyn lucene::Directory, id: &[u8; 16]) -> lucene::Result<()> {
//! use lucene::stored_fields::{StoredFieldsReader, StoredValue};
//! let reader = StoredFieldsReader::open(dir, "_0", id, 1000)?;
//! let mut cursor = reader.cursor();
//! for doc in 0..reader.max_doc() {
//!     cursor.visit(doc, &mut |field, value| {
//!         if let StoredValue::Binary(bytes) = value {
//!             println!("doc {doc} field {field}: {} bytes", bytes.len());
//!         }
//!         Ok(())
//!     })?;
//! }
//! # Ok(()) }
//! ```

mod chunk;
mod document;
mod fields_index;
mod format;
mod packed;
#[cfg(test)]
mod tests;

use bytes::Bytes;

use crate::codec_util::{self, FOOTER_LEN};
use crate::data_input::DataInput;
use crate::directory::{Directory, FileSlice};
use crate::error::{Error, Result};

pub use chunk::{BlockKind, RawBlock};
use chunk::{Chunk, MAX_CHUNK_SIZE};
use fields_index::ChunkIndex;
use format::{Container, StoredFieldsFormat};

/// One stored value, borrowed from the decompressed chunk where it is bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StoredValue<'a> {
    String(&'a str),
    Binary(&'a [u8]),
    Int(i32),
    Long(i64),
    Float(f32),
    Double(f64),
}

/// The stored fields of one segment: format, chunk index and the open `.fdt`.
#[derive(Debug)]
pub struct StoredFieldsReader {
    fdt: FileSlice,
    fdx: FileSlice,
    fdm: Option<FileSlice>,
    format: StoredFieldsFormat,
    format_name: String,
    chunk_size: u32,
    max_doc: u32,
    index: ChunkIndex,
    /// The CRC-32 the `.fdt` footer records (`None`: the file has no footer, Lucene 4.2–4.7).
    footer_crc: Option<u32>,
    /// `.fdt` bytes before the first chunk, when they were read on open.
    head: Option<Bytes>,
}

impl StoredFieldsReader {
    /// Opens the stored fields of `segment` in `dir` (the compound file's inner directory
    /// when the segment is compound). `segment_id` is the id from `segments_N`/`.si`;
    /// `max_doc` the segment's doc count. The container and compression are detected
    /// from the `.fdt` header; `.fdx`/`.fdm` are checked (footer and CRC) and decoded.
    pub fn open(
        dir: &dyn Directory,
        segment: &str,
        segment_id: &[u8; 16],
        max_doc: u32,
    ) -> Result<Self> {
        let fdt = dir.open_file(&format!("{segment}.fdt"))?;
        let fdt_name = fdt.name().to_string();
        let fdt_len = fdt.len();
        let head = fdt.read_bytes(0..fdt_len.min(512))?;
        let mut input = DataInput::new(&fdt_name, &head);
        let (codec, version) = codec_util::read_header(&mut input.clone())?;
        let format = if StoredFieldsFormat::is_lucene4_codec(codec) {
            codec_util::read_header(&mut input)?;
            StoredFieldsFormat::detect(&fdt_name, codec, version)?
        } else {
            // an unknown format is named as such before its header is parsed further
            StoredFieldsFormat::detect(&fdt_name, codec, version)?;
            let header = codec_util::read_index_header_any(&mut input)?;
            codec_util::check_id_suffix(&fdt_name, &header, segment_id, "")?;
            StoredFieldsFormat::detect(&fdt_name, header.codec, header.version)?
        };
        let footer_len = if format.has_footer() { FOOTER_LEN } else { 0 };
        let footer_crc = if format.has_footer() {
            Some(codec_util::check_footer(&fdt)?)
        } else {
            None
        };
        let format_name = format!("{} v{}", format.codec, format.version);
        let data_end = fdt_len
            .checked_sub(footer_len as u64)
            .ok_or_else(|| Error::truncated(fdt_name.as_str()))?;
        // Every chunk takes at least two bytes (doc base, token).
        let max_chunks = data_end / 2;

        let index_codec = format.index_codec();
        let fdx = dir.open_file(&format!("{segment}.fdx"))?;
        let fdx_bytes = fdx.read_all()?;
        if format.has_footer() {
            codec_util::verify_checksum_bytes(fdx.name(), &fdx_bytes)?;
        }
        let mut fdx_in = DataInput::new(fdx.name(), &fdx_bytes[..fdx_bytes.len() - footer_len]);

        let (chunk_size, first_chunk, index, fdm) = match format.container {
            Container::Lucene41 => {
                let chunk_size = read_chunk_size(&mut input)?;
                let packed_version = input.read_vint()?;
                if !(1..=2).contains(&packed_version) {
                    return Err(input.corrupt(format!("PackedInts version {packed_version}")));
                }
                let first_chunk = input.position() as u64;
                codec_util::check_header(
                    &mut fdx_in,
                    &index_codec,
                    format.version,
                    format.version,
                )?;
                let index = fields_index::read_legacy(&mut fdx_in, max_doc, max_chunks)?;
                if fdx_in.remaining() != 0 {
                    return Err(fdx_in.corrupt(format!(
                        "{} unexpected bytes after the index",
                        fdx_in.remaining()
                    )));
                }
                (chunk_size, first_chunk, index, None)
            }
            Container::Legacy | Container::OffHeapIndex => {
                let chunk_size = read_chunk_size(&mut input)?;
                let packed_version = input.read_vint()?;
                if !(1..=2).contains(&packed_version) {
                    return Err(input.corrupt(format!("PackedInts version {packed_version}")));
                }
                let first_chunk = input.position() as u64;
                if format.container == Container::Legacy {
                    codec_util::check_index_header(
                        &mut fdx_in,
                        &index_codec,
                        format.version,
                        format.version,
                        segment_id,
                        "",
                    )?;
                    let index = fields_index::read_legacy(&mut fdx_in, max_doc, max_chunks)?;
                    (chunk_size, first_chunk, index, None)
                } else {
                    let (index, fdm) = open_fields_index(
                        dir,
                        segment,
                        segment_id,
                        &format,
                        &index_codec,
                        0,
                        &fdx,
                        &fdx_bytes,
                        max_doc,
                        max_chunks,
                        |_| Ok(()),
                    )?;
                    (chunk_size, first_chunk, index, Some(fdm))
                }
            }
            Container::Meta | Container::Lucene90 => {
                let first_chunk = input.position() as u64;
                let mut chunk_size = 0;
                let (index, fdm) = open_fields_index(
                    dir,
                    segment,
                    segment_id,
                    &format,
                    &index_codec,
                    format.version,
                    &fdx,
                    &fdx_bytes,
                    max_doc,
                    max_chunks,
                    |meta| {
                        chunk_size = read_chunk_size(meta)?;
                        if format.container == Container::Meta {
                            let v = meta.read_vint()?;
                            if !(1..=2).contains(&v) {
                                return Err(meta.corrupt(format!("PackedInts version {v}")));
                            }
                        }
                        Ok(())
                    },
                )?;
                (chunk_size, first_chunk, index, Some(fdm))
            }
        };
        index.validate(&fdt_name, max_doc, first_chunk, data_end)?;
        let head = usize::try_from(index.pointers[0])
            .ok()
            .filter(|&n| n <= head.len())
            .map(|n| head.slice(..n));
        Ok(StoredFieldsReader {
            fdt,
            fdx,
            fdm,
            format,
            format_name,
            chunk_size,
            max_doc,
            index,
            footer_crc,
            head,
        })
    }

    /// The `.fdt` codec name and version, e.g. `Lucene90StoredFieldsFastData v1`.
    pub fn format(&self) -> &str {
        &self.format_name
    }

    /// `BEST_SPEED`, `BEST_COMPRESSION`, `ZSTD` or `ZSTD_NO_DICT`.
    pub fn mode(&self) -> &str {
        self.format.mode
    }

    /// Number of docs in the segment.
    pub fn max_doc(&self) -> u32 {
        self.max_doc
    }

    /// Number of chunks in `.fdt`.
    pub fn num_chunks(&self) -> usize {
        self.index.num_chunks()
    }

    /// Uncompressed chunk size the writer used.
    pub fn chunk_size(&self) -> u32 {
        self.chunk_size
    }

    /// A cursor that visits documents; each owns its decompression buffer.
    pub fn cursor(&self) -> StoredFieldsCursor<'_> {
        StoredFieldsCursor {
            reader: self,
            chunk_index: usize::MAX,
            chunk: Chunk::default(),
            raw: Bytes::new(),
            check: Check::Off,
        }
    }

    /// A cursor that also verifies the `.fdt` CRC-32 from the bytes it reads, for a walk
    /// that visits documents in increasing order from the start of the segment. Call
    /// [`StoredFieldsCursor::finish`] when the walk is over to complete the check.
    pub fn verifying_cursor(&self) -> StoredFieldsCursor<'_> {
        let mut c = self.cursor();
        c.check = Check::Running {
            hasher: crc32fast::Hasher::new(),
            next_chunk: 0,
        };
        c
    }

    /// The `.fdt` name (inside its compound file when compound), for messages.
    pub fn fdt_name(&self) -> &str {
        self.fdt.name()
    }

    /// Decompresses every chunk once, without decoding documents, and returns the
    /// preset-dictionary blocks (LZ4 or DEFLATE) as handed to the library, with the
    /// number of bytes all chunks decompress to. For decode-only benchmarks: the same
    /// blocks can then be decoded by the library alone.
    pub fn raw_blocks(&self) -> Result<(Vec<RawBlock>, u64)> {
        let mut cursor = self.cursor();
        cursor.chunk.record = Some(Vec::new());
        let mut total = 0u64;
        for i in 0..self.index.num_chunks() {
            cursor.load(self.index.docs[i])?;
            total += u64::from(*cursor.chunk.offsets.last().unwrap_or(&0));
        }
        Ok((cursor.chunk.record.take().unwrap_or_default(), total))
    }

    /// Verifies the full CRC-32 of `.fdt` (the other stored-fields files are read whole
    /// and checked on open), once per `verified` set: a file already in it is passed over,
    /// one that checks out is added. What [`crate::IndexReader`] walks call before the
    /// first document of a segment. Lucene 4.2–4.7 files carry no checksum: nothing to verify.
    pub fn verify_data(&self, verified: &VerifiedFiles) -> Result<()> {
        let Some(footer_crc) = self.footer_crc else {
            return Ok(());
        };
        let key = (self.fdt.name().to_string(), self.fdt.len(), footer_crc);
        if verified.contains(&key) {
            return Ok(());
        }
        codec_util::verify_checksum(&self.fdt)?;
        verified.insert(key);
        Ok(())
    }

    /// Verifies the full CRC-32 of `.fdt`, `.fdx` and `.fdm` (nothing for Lucene 4.2–4.7
    /// files, which carry no checksum).
    pub fn verify_checksums(&self) -> Result<()> {
        if !self.format.has_footer() {
            return Ok(());
        }
        codec_util::verify_checksum(&self.fdt)?;
        codec_util::verify_checksum(&self.fdx)?;
        if let Some(fdm) = &self.fdm {
            codec_util::verify_checksum(fdm)?;
        }
        Ok(())
    }
}

/// Files whose whole CRC-32 was found good, by (name, length, footer CRC): shared by the
/// readers of one run so a file read in several pieces (items of a split shard, retries,
/// resumes) is checked once per process. Only for files that cannot change while it
/// lives (snapshot blobs).
#[derive(Default)]
pub struct VerifiedFiles(std::sync::Mutex<std::collections::HashSet<(String, u64, u32)>>);

impl VerifiedFiles {
    fn contains(&self, key: &(String, u64, u32)) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(key)
    }

    fn insert(&self, key: (String, u64, u32)) {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(key);
    }

    /// Verifies the whole CRC-32 of `file` unless it is in the set already (same name,
    /// length and footer CRC); adds it when it checks out.
    pub fn verify_once(&self, file: &FileSlice) -> Result<()> {
        let footer_crc = codec_util::check_footer(file)?;
        let key = (file.name().to_string(), file.len(), footer_crc);
        if self.contains(&key) {
            return Ok(());
        }
        codec_util::verify_checksum(file)?;
        self.insert(key);
        Ok(())
    }

    /// Files found good so far.
    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for VerifiedFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "VerifiedFiles({} files)", self.len())
    }
}

/// Adds the `.fdt` bytes before the first chunk to `hasher`.
fn hash_head(reader: &StoredFieldsReader, hasher: &mut crc32fast::Hasher) -> Result<()> {
    match &reader.head {
        Some(head) => hasher.update(head),
        None => hasher.update(&reader.fdt.read_bytes(0..reader.index.pointers[0])?),
    }
    Ok(())
}

/// Adds `fdt[from..to]` to `hasher`, read in pieces through one buffer.
fn hash_range(fdt: &FileSlice, hasher: &mut crc32fast::Hasher, from: u64, to: u64) -> Result<()> {
    codec_util::hash_slice(fdt, from..to, hasher)
}

fn read_chunk_size(input: &mut DataInput<'_>) -> Result<u32> {
    let v = input.read_vint()?;
    if v < 1 || v as u32 > MAX_CHUNK_SIZE {
        return Err(input.corrupt(format!("stored-fields chunk size {v}")));
    }
    Ok(v as u32)
}

/// Opens `.fdm`, checks its header and CRC, lets `before` read what precedes the
/// FieldsIndexMeta, then decodes the index from `.fdx`.
#[allow(clippy::too_many_arguments)]
fn open_fields_index(
    dir: &dyn Directory,
    segment: &str,
    segment_id: &[u8; 16],
    format: &StoredFieldsFormat,
    index_codec: &str,
    meta_version: i32,
    fdx: &FileSlice,
    fdx_bytes: &[u8],
    max_doc: u32,
    max_chunks: u64,
    before: impl FnOnce(&mut DataInput<'_>) -> Result<()>,
) -> Result<(ChunkIndex, FileSlice)> {
    let fdm = dir.open_file(&format!("{segment}.fdm"))?;
    let fdm_bytes = fdm.read_all()?;
    codec_util::verify_checksum_bytes(fdm.name(), &fdm_bytes)?;
    let mut meta = DataInput::new(fdm.name(), &fdm_bytes[..fdm_bytes.len() - FOOTER_LEN]);
    codec_util::check_index_header(
        &mut meta,
        &format!("{index_codec}Meta"),
        meta_version,
        meta_version,
        segment_id,
        "",
    )?;
    let mut fdx_in = DataInput::new(fdx.name(), fdx_bytes);
    codec_util::check_index_header(
        &mut fdx_in,
        &format!("{index_codec}Idx"),
        0,
        0,
        segment_id,
        "",
    )?;
    before(&mut meta)?;
    let index = fields_index::read_fields_index(
        &mut meta,
        fdx.name(),
        fdx_bytes,
        format.endian(),
        max_doc,
        max_chunks,
    )?;
    Ok((index, fdm))
}

/// Visits documents of one segment, decompressing each chunk once.
#[derive(Debug)]
pub struct StoredFieldsCursor<'r> {
    reader: &'r StoredFieldsReader,
    /// Index of the chunk in `chunk`, `usize::MAX` when none is loaded.
    chunk_index: usize,
    chunk: Chunk,
    raw: Bytes,
    check: Check,
}

/// The running CRC-32 of a verifying cursor.
#[derive(Debug)]
enum Check {
    /// Not verifying.
    Off,
    /// Every byte of `.fdt` before chunk `next_chunk` has gone into `hasher` (the bytes
    /// before the first chunk are added when the first chunk is read).
    Running {
        hasher: crc32fast::Hasher,
        next_chunk: usize,
    },
    /// Verification was given up: the walk went back.
    Abandoned,
}

/// What [`StoredFieldsCursor::finish`] could check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verified {
    /// Every byte of `.fdt` was checked against its footer CRC-32.
    Whole,
    /// The cursor was not verifying, or visited documents out of order.
    No,
}

impl StoredFieldsCursor<'_> {
    /// Visits every stored field of `doc`. Visiting docs in increasing order
    /// decompresses each chunk once; any other order seeks through the index.
    pub fn visit<F>(&mut self, doc: u32, visitor: &mut F) -> Result<()>
    where
        F: FnMut(u32, StoredValue<'_>) -> Result<()> + ?Sized,
    {
        self.visit_in(doc, &mut |number, value, _| visitor(number, value))
    }

    /// As [`visit`](Self::visit), each value given with the decompressed chunk its bytes
    /// are a slice of (see [`decode`](Self::decode)).
    pub fn visit_in<F>(&mut self, doc: u32, visitor: &mut F) -> Result<()>
    where
        F: FnMut(u32, StoredValue<'_>, &Bytes) -> Result<()> + ?Sized,
    {
        let reader = self.reader;
        self.decode(doc)?;
        let chunk = &self.chunk;
        let k = (doc - chunk.doc_base) as usize;
        let num_fields = chunk.num_fields[k];
        if num_fields == 0 {
            return Ok(());
        }
        let decoded = &chunk.decoded;
        let data = &decoded[chunk.offsets[k] as usize..chunk.offsets[k + 1] as usize];
        let endian = reader.format.endian();
        let fixed = reader.format.fixed_width_numbers();
        let mut each = |number: u32, value: StoredValue<'_>| visitor(number, value, decoded);
        match document::visit_fields(data, num_fields, endian, fixed, &mut each) {
            Ok(r) => r,
            Err(e) => Err(document::doc_error(reader.fdt.name(), doc, e)),
        }
    }

    /// Decompresses the chunk holding `doc` unless it is the current one, and returns its
    /// decompressed bytes: the `Binary` values [`visit`](Self::visit) passes for `doc` are
    /// slices of them, so a caller that keeps a value can share it
    /// ([`Bytes::slice_ref`]) instead of copying it.
    pub fn decode(&mut self, doc: u32) -> Result<&Bytes> {
        let reader = self.reader;
        if doc >= reader.max_doc {
            return Err(Error::corrupt(
                reader.fdt.name(),
                format!("doc {doc} requested, segment has {} docs", reader.max_doc),
            ));
        }
        let chunk = &self.chunk;
        if self.chunk_index == usize::MAX
            || doc < chunk.doc_base
            || doc - chunk.doc_base >= chunk.num_docs
        {
            self.load(doc)?;
        }
        Ok(&self.chunk.decoded)
    }

    /// Number of stored fields of `doc` (0 for docs without stored fields).
    pub fn num_fields(&mut self, doc: u32) -> Result<u32> {
        let mut n = 0;
        self.visit(doc, &mut |_, _| {
            n += 1;
            Ok(())
        })?;
        Ok(n)
    }

    /// Ends a walk. A verifying cursor reads the chunks it has not (documents deleted at
    /// the end of the segment) and the trailer, and compares the CRC-32 of the whole file
    /// with its footer: a mismatch is [`Error::Checksum`] naming the file.
    pub fn finish(&mut self) -> Result<Verified> {
        let reader = self.reader;
        match std::mem::replace(&mut self.check, Check::Off) {
            Check::Running {
                mut hasher,
                next_chunk,
            } => {
                if next_chunk == 0 {
                    hash_head(reader, &mut hasher)?;
                }
                let Some(expected) = reader.footer_crc else {
                    return Ok(Verified::No);
                };
                let from = reader.index.pointers[next_chunk];
                hash_range(&reader.fdt, &mut hasher, from, reader.fdt.len() - 8)?;
                let actual = hasher.finalize();
                if actual != expected {
                    return Err(Error::Checksum {
                        file: reader.fdt.name().to_string(),
                        expected,
                        actual,
                    });
                }
                Ok(Verified::Whole)
            }
            Check::Off | Check::Abandoned => Ok(Verified::No),
        }
    }

    fn load(&mut self, doc: u32) -> Result<()> {
        let reader = self.reader;
        let index = &reader.index;
        let next = self.chunk_index.wrapping_add(1);
        let i =
            if next < index.num_chunks() && index.docs[next] <= doc && doc < index.docs[next + 1] {
                next
            } else {
                index.chunk_of(doc)
            };
        self.chunk_index = usize::MAX;
        let (start, end) = (index.pointers[i], index.pointers[i + 1]);
        self.raw = match &mut self.check {
            Check::Running { hasher, next_chunk } if *next_chunk <= i => {
                if *next_chunk == 0 {
                    hash_head(reader, hasher)?;
                }
                // Chunks skipped since the last one (all their documents deleted) are
                // hashed too, so the whole file is covered in order, each byte read once.
                hash_range(&reader.fdt, hasher, index.pointers[*next_chunk], start)?;
                let bytes = reader.fdt.read_bytes(start..end)?;
                hasher.update(&bytes);
                *next_chunk = i + 1;
                bytes
            }
            Check::Running { .. } => {
                tracing::debug!(
                    file = reader.fdt.name(),
                    chunk = i,
                    "stored fields read out of order: checksum not verified"
                );
                self.check = Check::Abandoned;
                reader.fdt.read_bytes(start..end)?
            }
            Check::Off | Check::Abandoned => reader.fdt.read_bytes(start..end)?,
        };
        self.chunk.load(
            reader.fdt.name(),
            &reader.format,
            reader.chunk_size,
            i,
            &self.raw,
            index.docs[i],
            index.docs[i + 1] - index.docs[i],
        )?;
        self.chunk_index = i;
        Ok(())
    }
}
