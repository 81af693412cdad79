//! The stored-fields index: for every chunk, its first doc id and its offset in `.fdt`.
//!
//! Lucene 5.0–8.4 keep it in `.fdx` as blocks of up to 1024 chunks, each with a base,
//! an average and bit-packed zig-zag deltas. Lucene 8.5+ keep two DirectMonotonic
//! arrays in `.fdx`, described by metadata in `.fdm`. Both are decoded once on open into
//! plain arrays (a few bytes per chunk).

use crate::data_input::{DataInput, Endian};
use crate::error::{Error, Result};

use super::packed::{packed_get, packed_len};

/// Chunk boundaries: chunk `i` holds docs `docs[i]..docs[i + 1]` and spans
/// `.fdt[pointers[i]..pointers[i + 1]]`. Both arrays have one entry more than there are
/// chunks.
#[derive(Debug, Clone, Default)]
pub(crate) struct ChunkIndex {
    pub docs: Vec<u32>,
    pub pointers: Vec<u64>,
}

impl ChunkIndex {
    pub fn num_chunks(&self) -> usize {
        self.docs.len().saturating_sub(1)
    }

    /// The chunk holding `doc` (`doc < max_doc`).
    pub fn chunk_of(&self, doc: u32) -> usize {
        self.docs
            .partition_point(|&d| d <= doc)
            .saturating_sub(1)
            .min(self.num_chunks().saturating_sub(1))
    }

    /// Checks the arrays describe `max_doc` docs in chunks that lie within
    /// `first_chunk..data_end` of `.fdt`, in order.
    pub fn validate(
        &self,
        file: &str,
        max_doc: u32,
        first_chunk: u64,
        data_end: u64,
    ) -> Result<()> {
        let bad = |reason: String| Err(Error::corrupt(file, reason));
        if self.docs.len() != self.pointers.len() || self.docs.is_empty() {
            return bad("stored-fields index is empty".into());
        }
        let n = self.num_chunks();
        if self.docs[0] != 0 || self.docs[n] != max_doc {
            return bad(format!(
                "stored-fields index covers docs {}..{}, segment has {max_doc}",
                self.docs[0], self.docs[n]
            ));
        }
        if self.pointers[0] < first_chunk || self.pointers[n] > data_end {
            return bad(format!(
                "stored-fields index points to .fdt bytes {}..{}, chunks lie in {first_chunk}..{data_end}",
                self.pointers[0], self.pointers[n]
            ));
        }
        for i in 0..n {
            if self.docs[i] >= self.docs[i + 1] || self.pointers[i] >= self.pointers[i + 1] {
                return bad(format!(
                    "stored-fields index entry {i} is out of order (docs {}..{}, pointers {}..{})",
                    self.docs[i],
                    self.docs[i + 1],
                    self.pointers[i],
                    self.pointers[i + 1]
                ));
            }
        }
        Ok(())
    }
}

fn zigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// Decodes a legacy `.fdx` body (after its header): blocks of chunk doc bases and start
/// pointers, a 0 terminator, then `MaxPointer`. `max_chunks` bounds the chunk count
/// (the `.fdt` cannot hold more).
pub(crate) fn read_legacy(
    input: &mut DataInput<'_>,
    max_doc: u32,
    max_chunks: u64,
) -> Result<ChunkIndex> {
    let packed_version = input.read_vint()?;
    if !(1..=2).contains(&packed_version) {
        return Err(input.corrupt(format!("unsupported PackedInts version {packed_version}")));
    }
    let mut index = ChunkIndex::default();
    loop {
        let block_chunks = input.read_vint()?;
        if block_chunks == 0 {
            break;
        }
        if block_chunks < 0
            || index.docs.len() as u64 + block_chunks as u64 > max_chunks
            || block_chunks as u64 > input.remaining() as u64 * 8
        {
            return Err(input.corrupt(format!("index block of {block_chunks} chunks")));
        }
        let n = block_chunks as u64;
        let doc_base = input.read_vint()? as u32 as u64;
        let avg_docs = input.read_vint()? as u32 as u64;
        let bits_docs = input.read_vint()?;
        if !(0..=32).contains(&bits_docs) {
            return Err(input.corrupt(format!("bits per doc-base delta {bits_docs}")));
        }
        let doc_deltas = input.read_bytes(packed_len(n, bits_docs as u32) as usize)?;
        let start_pointer = input.read_vlong()? as u64;
        let avg_size = input.read_vlong()? as u64;
        let bits_ptrs = input.read_vint()?;
        if !(0..=64).contains(&bits_ptrs) {
            return Err(input.corrupt(format!("bits per start-pointer delta {bits_ptrs}")));
        }
        let ptr_deltas = input.read_bytes(packed_len(n, bits_ptrs as u32) as usize)?;
        for j in 0..n {
            let d = packed_get(doc_deltas, j, bits_docs as u32, Endian::Big);
            let doc = (doc_base as i64)
                .wrapping_add((avg_docs * j) as i64)
                .wrapping_add(zigzag(d));
            let p = packed_get(ptr_deltas, j, bits_ptrs as u32, Endian::Big);
            let ptr = (start_pointer as i64)
                .wrapping_add(avg_size.wrapping_mul(j) as i64)
                .wrapping_add(zigzag(p));
            if doc < 0 || doc > i64::from(max_doc) || ptr < 0 {
                return Err(input.corrupt(format!(
                    "index entry {} gives doc {doc}, pointer {ptr}",
                    index.docs.len()
                )));
            }
            index.docs.push(doc as u32);
            index.pointers.push(ptr as u64);
        }
    }
    let max_pointer = input.read_vlong()? as u64;
    index.docs.push(max_doc);
    index.pointers.push(max_pointer);
    Ok(index)
}

/// One block of a DirectMonotonic array's metadata.
struct MonotonicBlock {
    min: i64,
    avg: f32,
    offset: i64,
    bpv: u32,
}

/// Reads `FieldsIndexMeta` (from `.fdm`) and decodes both arrays from `fdx` (the whole
/// `.fdx` file). Returns the index and `MaxPointer`.
pub(crate) fn read_fields_index(
    meta: &mut DataInput<'_>,
    fdx_name: &str,
    fdx: &[u8],
    endian: Endian,
    max_doc: u32,
    max_chunks: u64,
) -> Result<ChunkIndex> {
    let meta_max_doc = meta.read_i32(endian)?;
    if meta_max_doc != max_doc as i32 {
        return Err(meta.corrupt(format!(
            "fields index covers {meta_max_doc} docs, segment has {max_doc}"
        )));
    }
    let block_shift = meta.read_i32(endian)?;
    if !(2..=22).contains(&block_shift) {
        return Err(meta.corrupt(format!("fields index block shift {block_shift}")));
    }
    let num_entries = meta.read_i32(endian)?;
    if num_entries < 1 || num_entries as u64 > max_chunks + 1 {
        return Err(meta.corrupt(format!("fields index with {num_entries} entries")));
    }
    let num_entries = num_entries as u64;
    let docs_start = meta.read_i64(endian)?;
    let docs_meta = read_monotonic_meta(meta, num_entries, block_shift as u32, endian)?;
    let docs_end = meta.read_i64(endian)?;
    let ptrs_meta = read_monotonic_meta(meta, num_entries, block_shift as u32, endian)?;
    let ptrs_end = meta.read_i64(endian)?;
    let max_pointer = meta.read_i64(endian)?;

    let data_end = fdx.len().saturating_sub(crate::codec_util::FOOTER_LEN) as i64;
    if !(0 <= docs_start && docs_start <= docs_end && docs_end <= ptrs_end && ptrs_end <= data_end)
    {
        return Err(meta.corrupt(format!(
            "fields index data ranges {docs_start}..{docs_end}..{ptrs_end} do not fit {fdx_name} ({} bytes)",
            fdx.len()
        )));
    }
    let docs_data = &fdx[docs_start as usize..docs_end as usize];
    let ptrs_data = &fdx[docs_end as usize..ptrs_end as usize];
    let docs = decode_monotonic(
        fdx_name,
        docs_data,
        &docs_meta,
        num_entries,
        block_shift as u32,
        endian,
    )?;
    let pointers = decode_monotonic(
        fdx_name,
        ptrs_data,
        &ptrs_meta,
        num_entries,
        block_shift as u32,
        endian,
    )?;
    let mut index = ChunkIndex {
        docs: Vec::with_capacity(docs.len()),
        pointers: Vec::with_capacity(pointers.len()),
    };
    for (d, p) in docs.into_iter().zip(pointers) {
        if d < 0 || d > i64::from(max_doc) || p < 0 {
            return Err(Error::corrupt(
                fdx_name,
                format!("fields index entry gives doc {d}, pointer {p}"),
            ));
        }
        index.docs.push(d as u32);
        index.pointers.push(p as u64);
    }
    if index.pointers.last() != Some(&(max_pointer as u64)) {
        return Err(meta.corrupt(format!(
            "fields index ends at .fdt offset {:?}, MaxPointer is {max_pointer}",
            index.pointers.last()
        )));
    }
    Ok(index)
}

fn read_monotonic_meta(
    meta: &mut DataInput<'_>,
    num_values: u64,
    block_shift: u32,
    endian: Endian,
) -> Result<Vec<MonotonicBlock>> {
    let blocks = num_values.div_ceil(1 << block_shift);
    let blocks = meta.check_count(blocks as i64, 21, "DirectMonotonic block")?;
    let mut out = Vec::with_capacity(blocks);
    for _ in 0..blocks {
        let min = meta.read_i64(endian)?;
        let avg = f32::from_bits(meta.read_i32(endian)? as u32);
        let offset = meta.read_i64(endian)?;
        let bpv = meta.read_u8()? as u32;
        if bpv > 64 {
            return Err(meta.corrupt(format!("DirectMonotonic bits per value {bpv}")));
        }
        out.push(MonotonicBlock {
            min,
            avg,
            offset,
            bpv,
        });
    }
    Ok(out)
}

fn decode_monotonic(
    file: &str,
    data: &[u8],
    blocks: &[MonotonicBlock],
    num_values: u64,
    block_shift: u32,
    endian: Endian,
) -> Result<Vec<i64>> {
    let mut out = Vec::with_capacity(num_values as usize);
    let per_block = 1u64 << block_shift;
    for (b, block) in blocks.iter().enumerate() {
        let first = b as u64 * per_block;
        let count = per_block.min(num_values - first);
        let bytes = packed_len(count, block.bpv);
        if block.offset < 0 || (block.offset as u64).saturating_add(bytes) > data.len() as u64 {
            return Err(Error::corrupt(
                file,
                format!(
                    "DirectMonotonic block {b} at offset {} needs {bytes} bytes, area has {}",
                    block.offset,
                    data.len()
                ),
            ));
        }
        let area = &data[block.offset as usize..];
        for r in 0..count {
            let delta = packed_get(area, r, block.bpv, endian);
            let v = block
                .min
                .wrapping_add((block.avg * r as f32) as i64)
                .wrapping_add(delta as i64);
            out.push(v);
        }
    }
    Ok(out)
}
