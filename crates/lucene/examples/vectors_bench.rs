//! Vectors read per CPU-second: every live vector of every vector field of an index, read
//! `ROUNDS` times with the crate's vector reader, float vectors decoded into floats (compare
//! with `MakeVectors bench <dir> <rounds>`, Lucene's own `FloatVectorValues` /
//! `ByteVectorValues`; both print the same checksum; scripts/bench-vectors runs both).
//!
//!     cargo run --release -p lucene --example vectors_bench -- <index dir> [rounds]

use std::sync::Arc;

use lucene::{FsDirectory, IndexReader, OpenOptions};

/// User + system CPU time of this process, in seconds (Linux `/proc/self/stat`).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // fields 14 and 15 (utime, stime), counted from the state field (3) after ')'
    (ticks(11) + ticks(12)) / 100.0
}

fn main() -> lucene::Result<()> {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .expect("usage: vectors_bench <index dir> [rounds]");
    let rounds: u32 = args.next().and_then(|r| r.parse().ok()).unwrap_or(10);
    let opts = OpenOptions {
        verify_checksums: false,
        ..OpenOptions::default()
    };
    let reader = IndexReader::open(Arc::new(FsDirectory::open(&dir)?), &opts)?;
    let t0 = cpu_seconds();
    let (mut vectors, mut sum) = (0u64, 0i64);
    // each float vector decoded into one reused buffer, as Lucene reads into its own
    let mut floats: Vec<f32> = Vec::new();
    for _ in 0..rounds {
        for seg in reader.segments() {
            for field in seg.vectors()?.fields() {
                let mut c = field.cursor()?;
                for doc in 0..seg.max_doc() {
                    if !seg.is_live(doc) {
                        continue;
                    }
                    if let Some(v) = c.vector(doc)? {
                        // the checksum of MakeVectors bench: the first element's float
                        // bits, or its signed byte
                        let first = match v.encoding {
                            lucene::VectorEncoding::Float32 => {
                                floats.clear();
                                floats.extend(
                                    v.raw
                                        .chunks_exact(4)
                                        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
                                );
                                i64::from(floats.first().map_or(0, |f| f.to_bits() as i32))
                            }
                            lucene::VectorEncoding::Byte => i64::from(v.raw[0] as i8),
                        };
                        sum = sum.wrapping_add(first);
                        vectors += 1;
                    }
                }
            }
        }
    }
    let cpu = cpu_seconds() - t0;
    println!(
        "rust: {vectors} vectors in {cpu:.3} CPU-s = {:.0} vectors/CPU-s (checksum {sum})",
        vectors as f64 / cpu.max(1e-9)
    );
    Ok(())
}
