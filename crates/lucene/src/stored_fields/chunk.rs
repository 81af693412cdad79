//! One chunk of `.fdt`: its header (first doc, doc count, per-doc field counts and byte
//! lengths) and its payload, decompressed once into a buffer reused for every chunk.

use std::ops::Range;

use bytes::{Bytes, BytesMut};

use crate::compress::{lz4, DecompressError, Inflater, ZstdDecoder};
use crate::data_input::Endian;
use crate::error::{Error, Result};

use super::format::{ChunkCompression, StoredFieldsFormat};
use super::packed::{packed_get, packed_len};

/// Largest chunk size accepted from a file (Lucene's largest default is 480 KiB).
pub(crate) const MAX_CHUNK_SIZE: u32 = 16 << 20;
/// Largest doc count accepted in one chunk (Lucene's largest default is 4096).
pub(crate) const MAX_CHUNK_DOCS: u32 = 1 << 17;

/// A decoded chunk. Buffers are kept between chunks; nothing is allocated per chunk
/// once they have grown to the largest chunk seen.
#[derive(Debug, Default)]
pub(crate) struct Chunk {
    pub doc_base: u32,
    pub num_docs: u32,
    /// Stored-field count of each doc.
    pub num_fields: Vec<u32>,
    /// Doc `k` is `data[offsets[k]..offsets[k + 1]]`.
    pub offsets: Vec<u32>,
    /// The buffer being decoded into: the decompressed payload, followed by
    /// `lz4::SLACK` scratch bytes. Empty between loads (it is then [`Chunk::decoded`]).
    data: BytesMut,
    /// The last chunk loaded (`data` frozen): documents are slices of it, and values
    /// handed out as [`Bytes`] share it instead of being copied. Its buffer is taken back
    /// for the next chunk when nothing else holds it any more.
    pub decoded: Bytes,
    decoders: Decoders,
    lengths: Vec<u32>,
    /// Preset-dictionary DEFLATE blocks of one compressor output: where each one's
    /// compressed bytes are in the chunk, and where its output goes.
    deflate_blocks: Vec<(Range<usize>, Range<usize>)>,
    /// When set, every preset-dictionary block decoded is also copied here.
    pub record: Option<Vec<RawBlock>>,
    /// What a preset-dictionary LZ4 block's output window covered before the dictionary
    /// was copied there (see [`Chunk::decompress`]).
    lz4_window: Vec<u8>,
}

/// One compressed block with its dictionary, as handed to the decompression library.
#[derive(Debug, Clone)]
pub struct RawBlock {
    pub kind: BlockKind,
    pub src: Vec<u8>,
    pub dict: Vec<u8>,
    pub out_len: usize,
}

/// The library a [`RawBlock`] is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    /// LZ4 block, preset dictionary (Lucene 8.7+ `BEST_SPEED`).
    Lz4,
    /// Raw DEFLATE, preset dictionary (Lucene 8.7+ `BEST_COMPRESSION`).
    Deflate,
}

#[derive(Debug, Default)]
struct Decoders {
    inflater: Option<Inflater>,
    zstd: Option<ZstdDecoder>,
}

/// A cursor over the chunk bytes; errors name the `.fdt` and the chunk.
struct Input<'a> {
    file: &'a str,
    chunk: usize,
    data: &'a [u8],
    pos: usize,
}

impl<'a> Input<'a> {
    fn corrupt(&self, reason: impl std::fmt::Display) -> Error {
        Error::corrupt(
            self.file,
            format!(
                "chunk {} (offset {} in chunk): {reason}",
                self.chunk, self.pos
            ),
        )
    }

    fn byte(&mut self) -> Result<u8> {
        let b = *self
            .data
            .get(self.pos)
            .ok_or_else(|| self.corrupt("chunk ends early"))?;
        self.pos += 1;
        Ok(b)
    }

    fn vint(&mut self) -> Result<u32> {
        let mut v = 0u32;
        for shift in (0..35).step_by(7) {
            let b = self.byte()?;
            if shift == 28 && b & 0xF0 != 0 {
                return Err(self.corrupt("invalid vInt"));
            }
            v |= u32::from(b & 0x7F) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(self.corrupt("invalid vInt"))
    }

    /// A vInt used as a length or count: non-negative.
    fn vlen(&mut self) -> Result<usize> {
        let v = self.vint()?;
        if v > i32::MAX as u32 {
            return Err(self.corrupt(format!("negative length {}", v as i32)));
        }
        Ok(v as usize)
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.data.len() - self.pos {
            return Err(self.corrupt(format!(
                "{n} bytes declared, {} left in the chunk",
                self.data.len() - self.pos
            )));
        }
        let s = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    fn rest(&self) -> &'a [u8] {
        &self.data[self.pos..]
    }
}

impl Chunk {
    /// Decodes chunk number `index` from its bytes (`raw`, exactly the chunk's span in
    /// `.fdt`) and checks it holds `expected_docs` docs starting at `expected_base`.
    #[allow(clippy::too_many_arguments)]
    pub fn load(
        &mut self,
        file: &str,
        format: &StoredFieldsFormat,
        chunk_size: u32,
        index: usize,
        raw: &[u8],
        expected_base: u32,
        expected_docs: u32,
    ) -> Result<()> {
        // Invalidate first so a failed load never leaves a half-decoded chunk behind.
        self.num_docs = 0;
        // Reuse the last chunk's buffer unless values handed out still hold it (after a
        // failed load, `data` still holds its own buffer).
        let last = std::mem::take(&mut self.decoded);
        if self.data.capacity() == 0 {
            if let Ok(buf) = last.try_into_mut() {
                self.data = buf;
            }
        }
        let mut input = Input {
            file,
            chunk: index,
            data: raw,
            pos: 0,
        };
        let doc_base = input.vint()?;
        let token = input.vint()?;
        let num_docs = token >> format.token_shift();
        // Lucene 4.x has no sliced bit: a chunk is sliced when it holds at least twice the
        // chunk size (decided below, once the lengths are known).
        let mut sliced = !format.lucene4() && token & 1 != 0;
        if doc_base != expected_base || num_docs != expected_docs {
            return Err(input.corrupt(format!(
                "header says docs {doc_base}+{num_docs}, index says {expected_base}+{expected_docs}"
            )));
        }
        if num_docs == 0 || num_docs > MAX_CHUNK_DOCS {
            return Err(input.corrupt(format!("{num_docs} docs in one chunk")));
        }
        let n = num_docs as usize;
        self.num_fields.clear();
        self.lengths.clear();
        if n == 1 {
            let f = input.vint()?;
            let l = input.vint()?;
            self.num_fields.push(f);
            self.lengths.push(l);
        } else if format.packed_ints() {
            read_packed_ints(&mut input, n, &mut self.num_fields)?;
            read_packed_ints(&mut input, n, &mut self.lengths)?;
        } else {
            read_stored_fields_ints(&mut input, n, &mut self.num_fields)?;
            read_stored_fields_ints(&mut input, n, &mut self.lengths)?;
        }
        self.offsets.clear();
        self.offsets.push(0);
        let mut total = 0u64;
        for k in 0..n {
            let (len, fields) = (self.lengths[k], self.num_fields[k]);
            if (len == 0) != (fields == 0) {
                return Err(input.corrupt(format!(
                    "doc {} has {fields} stored fields in {len} bytes",
                    doc_base as u64 + k as u64
                )));
            }
            total += u64::from(len);
            if total > u32::MAX as u64 - lz4::SLACK as u64 {
                return Err(input.corrupt("chunk decompresses to more than 4 GiB"));
            }
            self.offsets.push(total as u32);
        }
        let total = total as usize;
        if format.lucene4() {
            sliced = total as u64 >= 2 * u64::from(chunk_size);
        }
        // Bound the allocation by what the chunk can hold: writers flush an unsliced chunk
        // before it reaches twice the chunk size (allow 4×, or what its compressed bytes
        // could expand to at DEFLATE's maximum ratio); a sliced one is decoded slice by
        // slice, each at most one chunk size.
        let payload = input.rest().len() as u64;
        if !sliced && total as u64 > (4 * u64::from(chunk_size)).max(payload * 1032) {
            return Err(input.corrupt(format!(
                "unsliced chunk of {total} bytes, chunk size is {chunk_size}"
            )));
        }
        if total > 0 {
            if sliced {
                let mut start = 0;
                while start < total {
                    let len = (chunk_size as usize).min(total - start);
                    if input.rest().is_empty() {
                        return Err(input.corrupt("sliced chunk ends early"));
                    }
                    self.ensure_capacity(start + len);
                    self.decompress(format, &mut input, start, len)?;
                    start += len;
                }
            } else {
                self.ensure_capacity(total);
                self.decompress(format, &mut input, 0, total)?;
            }
        }
        self.doc_base = doc_base;
        self.num_docs = num_docs;
        self.decoded = std::mem::take(&mut self.data).freeze();
        Ok(())
    }

    fn ensure_capacity(&mut self, len: usize) {
        let need = len + lz4::SLACK;
        if self.data.len() < need {
            self.data.resize(need, 0);
        }
    }

    /// Decompresses one compressor output from `input` into `data[start..start + len]`.
    fn decompress(
        &mut self,
        format: &StoredFieldsFormat,
        input: &mut Input<'_>,
        start: usize,
        len: usize,
    ) -> Result<()> {
        let wrap = |input: &Input<'_>, e: DecompressError| input.corrupt(e);
        match format.compression {
            ChunkCompression::Lz4 => {
                let used = lz4::decompress(
                    input.rest(),
                    &mut self.data,
                    start..start,
                    start..start + len,
                )
                .map_err(|e| wrap(input, e))?;
                input.pos += used;
            }
            ChunkCompression::Deflate => {
                let clen = input.vlen()?;
                let src = input.bytes(clen)?;
                let inflater = self.decoders.inflater.get_or_insert_with(Inflater::new);
                inflater
                    .inflate(src, &mut self.data[start..start + len])
                    .map_err(|e| wrap(input, e))?;
            }
            ChunkCompression::Zlib => {
                let clen = input.vlen()?;
                let src = input.bytes(clen)?;
                let inflater = self.decoders.inflater.get_or_insert_with(Inflater::new);
                inflater
                    .inflate_zlib(src, &mut self.data[start..start + len])
                    .map_err(|e| wrap(input, e))?;
            }
            ChunkCompression::Lz4Dict => {
                let dict_len = input.vlen()?;
                let block_len = input.vlen()?;
                let dict_clen = input.vlen()?;
                check_dict_layout(input, len, dict_len, block_len)?;
                let num_blocks = (len - dict_len).div_ceil(block_len.max(1));
                // Compressed block lengths (a vInt each) follow the dictionary's.
                let lens_start = input.pos;
                for _ in 0..num_blocks {
                    input.vlen()?;
                }
                let mut lens = Input {
                    file: input.file,
                    chunk: input.chunk,
                    data: input.data,
                    pos: lens_start,
                };
                let dict_src = input.bytes(dict_clen)?;
                let dict = start..start + dict_len;
                // An empty dictionary is still written as one (empty) LZ4 sequence.
                if dict_len > 0 {
                    lz4::decompress_block(dict_src, &mut self.data, start..start, dict.clone())
                        .map_err(|e| wrap(input, e))?;
                    if let Some(r) = &mut self.record {
                        r.push(RawBlock {
                            kind: BlockKind::Lz4,
                            src: dict_src.to_vec(),
                            dict: Vec::new(),
                            out_len: dict_len,
                        });
                    }
                }
                // Every block sees only the dictionary as history. The decoder is fastest
                // when the dictionary directly precedes the block's output, so for each
                // block after the first the `dict_len` bytes before it (the previous
                // blocks' tail) are set aside, the dictionary is copied there, and they
                // are put back once the block is decoded: 3 × `dict_len` bytes moved per
                // block, against a copy per match reaching into a distant dictionary.
                // (On an error the chunk is given up: nothing needs putting back.)
                let mut saved = std::mem::take(&mut self.lz4_window);
                let mut out = dict.end;
                let end = start + len;
                while out < end {
                    let clen = lens.vlen()?;
                    let src = input.bytes(clen)?;
                    let n = block_len.min(end - out);
                    let window = out - dict_len..out;
                    let moved = out > dict.end;
                    if moved {
                        saved.clear();
                        saved.extend_from_slice(&self.data[window.clone()]);
                        self.data.copy_within(dict.clone(), window.start);
                    }
                    lz4::decompress_block(src, &mut self.data, window.clone(), out..out + n)
                        .map_err(|e| wrap(input, e))?;
                    if moved {
                        self.data[window].copy_from_slice(&saved);
                    }
                    if let Some(r) = &mut self.record {
                        r.push(RawBlock {
                            kind: BlockKind::Lz4,
                            src: src.to_vec(),
                            dict: self.data[dict.clone()].to_vec(),
                            out_len: n,
                        });
                    }
                    out += n;
                }
                self.lz4_window = saved;
            }
            ChunkCompression::DeflateDict => self.deflate_dict(input, start, len)?,
            ChunkCompression::ZstdDict => {
                let dict_len = input.vlen()?;
                let block_len = input.vlen()?;
                check_dict_layout(input, len, dict_len, block_len)?;
                let end = start + len;
                let dict_end = start + dict_len;
                // The dictionary: compressed length, then its bytes (none when empty).
                let clen = input.vlen()?;
                let src = input.bytes(clen)?;
                if dict_len > 0 {
                    self.zstd_block(src, start..start, start..dict_end)
                        .map_err(|e| wrap(input, e))?;
                }
                let mut out = dict_end;
                while out < end {
                    let clen = input.vlen()?;
                    let src = input.bytes(clen)?;
                    let n = block_len.min(end - out);
                    self.zstd_block(src, start..dict_end, out..out + n)
                        .map_err(|e| wrap(input, e))?;
                    out += n;
                }
            }
            ChunkCompression::ZstdFrame => {
                let clen = input.vlen()?;
                let src = input.bytes(clen)?;
                self.zstd_block(src, start..start, start..start + len)
                    .map_err(|e| wrap(input, e))?;
            }
            ChunkCompression::ZstdNoDict => {
                let block_len = input.vlen()?;
                if block_len == 0 {
                    return Err(input.corrupt("zstd block length 0"));
                }
                let end = start + len;
                let mut out = start;
                while out < end {
                    let clen = input.vlen()?;
                    if clen == 0 {
                        return Err(input.corrupt("zstd payload ends early"));
                    }
                    let src = input.bytes(clen)?;
                    let n = block_len.min(end - out);
                    self.zstd_block(src, out..out, out..out + n)
                        .map_err(|e| wrap(input, e))?;
                    out += n;
                }
            }
        }
        Ok(())
    }

    /// Lucene 8.7+ `BEST_COMPRESSION`: the dictionary (raw DEFLATE of the first
    /// `dict_len` bytes), then blocks of `block_len` bytes, each raw DEFLATE with the
    /// dictionary preset, into `data[start..start + len]`. The blocks are decoded last to
    /// first: each is inflated behind a copy of the dictionary written just before its
    /// place ([`Inflater::inflate_with_dict`]), which lands on the block before it (not
    /// decoded yet) or, for the first block, on the dictionary itself. The dictionary is
    /// copied into the inflater once per chunk, not once per block.
    fn deflate_dict(&mut self, input: &mut Input<'_>, start: usize, len: usize) -> Result<()> {
        let dict_len = input.vlen()?;
        let block_len = input.vlen()?;
        check_dict_layout(input, len, dict_len, block_len)?;
        let end = start + len;
        let dict = start..start + dict_len;
        let clen = input.vlen()?;
        let src = input.bytes(clen)?;
        let inflater = self.decoders.inflater.get_or_insert_with(Inflater::new);
        if dict_len > 0 {
            inflater
                .inflate(src, &mut self.data[dict.clone()])
                .map_err(|e| input.corrupt(e))?;
            if let Some(r) = &mut self.record {
                r.push(RawBlock {
                    kind: BlockKind::Deflate,
                    src: src.to_vec(),
                    dict: Vec::new(),
                    out_len: dict_len,
                });
            }
        }
        self.deflate_blocks.clear();
        let mut out = dict.end;
        while out < end {
            let clen = input.vlen()?;
            let at = input.pos;
            input.bytes(clen)?;
            let n = block_len.min(end - out);
            self.deflate_blocks.push((at..at + clen, out..out + n));
            out += n;
        }
        inflater.set_dictionary(&self.data[dict.clone()]);
        for (src, out) in self.deflate_blocks.iter().rev() {
            let bytes = &input.data[src.clone()];
            inflater
                .inflate_after_dictionary(bytes, &mut self.data, out.clone())
                .map_err(|e| {
                    Input {
                        pos: src.start,
                        ..*input
                    }
                    .corrupt(e)
                })?;
            if let Some(r) = &mut self.record {
                r.push(RawBlock {
                    kind: BlockKind::Deflate,
                    src: bytes.to_vec(),
                    dict: self.data[dict.clone()].to_vec(),
                    out_len: out.len(),
                });
            }
        }
        Ok(())
    }

    /// Decompresses one zstd block into `data[dst]` with `data[dict]` as its dictionary
    /// (`dict` precedes `dst`).
    fn zstd_block(
        &mut self,
        src: &[u8],
        dict: Range<usize>,
        dst: Range<usize>,
    ) -> std::result::Result<(), DecompressError> {
        let (head, tail) = self.data.split_at_mut(dst.start);
        let dict = &head[dict];
        let out = &mut tail[..dst.end - dst.start];
        let dec = match &mut self.decoders.zstd {
            Some(d) => d,
            none => none.insert(ZstdDecoder::new()?),
        };
        dec.decompress(src, dict, out)
    }
}

fn check_dict_layout(
    input: &Input<'_>,
    len: usize,
    dict_len: usize,
    block_len: usize,
) -> Result<()> {
    if dict_len > len {
        return Err(input.corrupt(format!(
            "dictionary of {dict_len} bytes in a {len}-byte block"
        )));
    }
    if block_len == 0 && dict_len < len {
        return Err(input.corrupt("block length 0"));
    }
    // Each block costs at least one byte of input: no more blocks than bytes left.
    if dict_len < len && (len - dict_len).div_ceil(block_len) > input.rest().len() {
        return Err(input.corrupt(format!(
            "{} blocks of {block_len} bytes cannot fit in {} bytes",
            (len - dict_len).div_ceil(block_len),
            input.rest().len()
        )));
    }
    Ok(())
}

/// Lucene ≤ 8 chunk-header ints: `bpv` vInt; 0 ⇒ one vInt for all; else a big-endian
/// PackedInts stream.
fn read_packed_ints(input: &mut Input<'_>, n: usize, out: &mut Vec<u32>) -> Result<()> {
    let bpv = input.vint()?;
    if bpv == 0 {
        let v = input.vint()?;
        out.resize(n, v);
        return Ok(());
    }
    if bpv > 32 {
        return Err(input.corrupt(format!("{bpv} bits per value")));
    }
    let bytes = input.bytes(packed_len(n as u64, bpv) as usize)?;
    out.extend((0..n as u64).map(|i| packed_get(bytes, i, bpv, Endian::Big) as u32));
    Ok(())
}

/// Lucene 9+ `StoredFieldsInts`: a `bpv` byte (0, 8, 16, 32); groups of 128 values
/// interleaved in little-endian 64-bit words, then the tail one value per unit.
fn read_stored_fields_ints(input: &mut Input<'_>, n: usize, out: &mut Vec<u32>) -> Result<()> {
    let bpv = input.byte()?;
    match bpv {
        0 => {
            let v = input.vint()?;
            out.resize(n, v);
            return Ok(());
        }
        8 | 16 | 32 => {}
        _ => return Err(input.corrupt(format!("StoredFieldsInts with {bpv} bits per value"))),
    }
    let bpv = bpv as usize;
    let full = n / 128 * 128;
    let bytes = input.bytes(full * bpv / 8 + (n - full) * bpv / 8)?;
    out.resize(n, 0);
    let per_word = 64 / bpv;
    let stride = 128 / per_word;
    let mask = if bpv == 32 {
        u32::MAX as u64
    } else {
        (1u64 << bpv) - 1
    };
    let words_per_group = 128 * bpv / 64;
    for g in 0..full / 128 {
        let group = &bytes[g * words_per_group * 8..(g + 1) * words_per_group * 8];
        for (i, w) in group.chunks_exact(8).enumerate() {
            let w = u64::from_le_bytes(w.try_into().expect("8-byte chunk"));
            for m in 0..per_word {
                let v = (w >> (64 - bpv * (m + 1))) & mask;
                out[g * 128 + i + stride * m] = v as u32;
            }
        }
    }
    let tail = &bytes[full * bpv / 8..];
    for (k, v) in out[full..].iter_mut().enumerate() {
        *v = match bpv {
            8 => u32::from(tail[k]),
            16 => u32::from(u16::from_le_bytes([tail[2 * k], tail[2 * k + 1]])),
            _ => u32::from_le_bytes(tail[4 * k..4 * k + 4].try_into().expect("4 bytes")),
        };
    }
    Ok(())
}
