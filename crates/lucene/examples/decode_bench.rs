//! Decode-only benchmark: is the reader as fast as a decompression library alone?
//!
//! For an index written with a preset-dictionary mode (Lucene 8.7+ `BEST_SPEED`, LZ4, or
//! `BEST_COMPRESSION`, DEFLATE), it collects every compressed block of every chunk, then
//! times, per CPU-second of this thread (`/proc/thread-self/schedstat`):
//! - `library`: a library alone decoding the same blocks from memory (`lz4_flex` with the
//!   dictionary — the reader has its own LZ4 decoder, `lucene::compress::lz4`, so for LZ4
//!   this is a yardstick, which the reader can beat; libdeflate on each block behind a
//!   stored block holding its dictionary, the streams built before the clock starts —
//!   libdeflate takes no preset dictionary, see `lucene::compress::deflate`), and
//! - `reader`: the whole reader visiting every live document (reading the files,
//!   parsing chunk headers, decompressing, decoding fields).
//!
//! Both are given as MB of decompressed chunk bytes per CPU-second, and their ratio. For
//! DEFLATE blocks, `zlib_rs` is zlib-rs inflate (through `flate2`) on the same blocks with
//! the dictionary set, for comparison: what the reader used before libdeflate.
//!
//! usage: decode_bench INDEX_DIR [--soft-deletes-field NAME] [--passes N]

use std::sync::Arc;

use lucene::stored_fields::{BlockKind, RawBlock};
use lucene::{FieldInfo, FsDirectory, IndexReader, OpenOptions, StoredValue};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (mut dir, mut soft, mut passes) = (None, None, 3usize);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--soft-deletes-field" => soft = args.next(),
            "--passes" => passes = args.next().ok_or("--passes N")?.parse()?,
            _ if dir.is_none() => dir = Some(a),
            _ => return Err(format!("unexpected argument {a}").into()),
        }
    }
    let dir = dir.ok_or("usage: decode_bench INDEX_DIR [--soft-deletes-field NAME]")?;
    let opts = OpenOptions {
        soft_deletes_field: soft,
        verify_checksums: true,
        verified: None,
    };
    let reader = IndexReader::open(Arc::new(FsDirectory::open(&dir)?), &opts)?;
    let mut blocks: Vec<RawBlock> = Vec::new();
    let mut chunk_bytes = 0u64;
    for seg in reader.segments() {
        if let Some(sf) = seg.stored_fields() {
            let (b, total) = sf.raw_blocks()?;
            blocks.extend(b);
            chunk_bytes += total;
        }
    }
    let block_bytes: u64 = blocks.iter().map(|b| b.out_len as u64).sum();
    let kind = blocks
        .first()
        .map(|b| b.kind)
        .ok_or("no preset-dictionary blocks")?;
    println!("blocks {} kind {kind:?}", blocks.len());
    println!("chunk_mb {:.1}", chunk_bytes as f64 / 1e6);
    println!("block_mb {:.1}", block_bytes as f64 / 1e6);

    let mut out = vec![0u8; blocks.iter().map(|b| b.out_len).max().unwrap_or(0)];
    // DEFLATE blocks as libdeflate is given them: a stored block with the dictionary's
    // last 32 KiB, then the block's stream
    let prefixed: Vec<(usize, Vec<u8>)> = blocks
        .iter()
        .filter(|b| b.kind == BlockKind::Deflate)
        .map(|b| {
            let keep = b.dict.len().min(32 * 1024);
            let mut v = Vec::with_capacity(5 + keep + b.src.len());
            if keep > 0 {
                v.push(0);
                v.extend_from_slice(&(keep as u16).to_le_bytes());
                v.extend_from_slice(&(!(keep as u16)).to_le_bytes());
                v.extend_from_slice(&b.dict[b.dict.len() - keep..]);
            }
            v.extend_from_slice(&b.src);
            (keep, v)
        })
        .collect();
    let mut wide = vec![
        0u8;
        blocks
            .iter()
            .map(|b| b.out_len + b.dict.len().min(32 * 1024))
            .max()
            .unwrap_or(0)
    ];
    let mut libdeflate = libdeflater::Decompressor::new();
    let mut inflate = flate2::Decompress::new(false);
    let mut best_lib = 0f64;
    let mut best_zlib_rs = 0f64;
    let mut best_reader = 0f64;
    for pass in 1..=passes {
        let t0 = thread_cpu_ns();
        let mut deflated = prefixed.iter();
        for b in &blocks {
            let out = &mut out[..b.out_len];
            match b.kind {
                BlockKind::Lz4 => {
                    let n = lz4_flex::block::decompress_into_with_dict(&b.src, out, &b.dict)?;
                    assert_eq!(n, b.out_len);
                }
                BlockKind::Deflate => {
                    let (keep, src) = deflated.next().ok_or("block count")?;
                    let want = keep + b.out_len;
                    let n = libdeflate.deflate_decompress(src, &mut wide[..want])?;
                    assert_eq!(n, want);
                }
            }
        }
        let lib = block_bytes as f64 / 1e6 / ((thread_cpu_ns() - t0) as f64 / 1e9);
        let mut zlib_rs = 0f64;
        if kind == BlockKind::Deflate {
            let t0 = thread_cpu_ns();
            for b in &blocks {
                inflate.reset(false);
                if !b.dict.is_empty() {
                    inflate.set_dictionary(&b.dict)?;
                }
                let out = &mut out[..b.out_len];
                inflate.decompress(&b.src, out, flate2::FlushDecompress::Finish)?;
                assert_eq!(inflate.total_out() as usize, b.out_len);
            }
            zlib_rs = block_bytes as f64 / 1e6 / ((thread_cpu_ns() - t0) as f64 / 1e9);
        }

        let t0 = thread_cpu_ns();
        let mut source = 0u64;
        let mut docs = reader.documents(0..reader.max_doc())?;
        let mut visitor = |f: &FieldInfo, v: StoredValue<'_>| {
            if let ("_source", StoredValue::Binary(b)) = (f.name.as_str(), v) {
                source += b.len() as u64;
            }
            Ok(())
        };
        while docs.next(&mut visitor)?.is_some() {}
        let whole = chunk_bytes as f64 / 1e6 / ((thread_cpu_ns() - t0) as f64 / 1e9);
        println!(
            "pass={pass} library_MB_per_cpu_s={lib:.1} reader_MB_per_cpu_s={whole:.1} reader/library={:.2} zlib_rs_MB_per_cpu_s={zlib_rs:.1} live_source_mb={:.1}",
            whole / lib,
            source as f64 / 1e6
        );
        best_lib = best_lib.max(lib);
        best_reader = best_reader.max(whole);
        best_zlib_rs = best_zlib_rs.max(zlib_rs);
    }
    println!(
        "best library_MB_per_cpu_s={best_lib:.1} reader_MB_per_cpu_s={best_reader:.1} reader/library={:.2} zlib_rs_MB_per_cpu_s={best_zlib_rs:.1}",
        best_reader / best_lib
    );
    Ok(())
}

/// CPU time of this thread in nanoseconds (Linux `/proc/thread-self/schedstat`).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
