//! Reads every live document of a Lucene index single-threaded and prints throughput,
//! in the same `key=value` form as the Java `ReadIndex` tool of `shared/tools/lucene-fixtures`.
//!
//! usage: read_bench INDEX_DIR [--soft-deletes-field NAME] [--passes N] [--no-verify-checksums]
//!
//! Checksums are checked as the files are read (the reader's default); the last flag turns
//! that off, to measure what the check costs.
//!
//! Per pass: live docs visited, docs with `_source`, the sum of CRC-32 of every `_source`
//! (comparable with the writer's `expectedSourceCrcSum`), MB of `_source`, docs/s and MB/s,
//! by wall clock and by this process's CPU time (`cpuMB/s`, from `/proc/self/stat`; on a
//! shared, loaded machine it is the figure that shows what one core does).

use std::sync::Arc;
use std::time::Instant;

use lucene::{FieldInfo, FsDirectory, IndexReader, OpenOptions, StoredValue};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut dir = None;
    let mut soft = None;
    let mut passes = 3;
    let mut verify = true;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--soft-deletes-field" => soft = args.next(),
            "--no-verify-checksums" => verify = false,
            "--passes" => passes = args.next().ok_or("--passes needs a value")?.parse()?,
            _ if dir.is_none() => dir = Some(a),
            _ => return Err(format!("unexpected argument {a}").into()),
        }
    }
    let dir = dir.ok_or("usage: read_bench INDEX_DIR [--soft-deletes-field NAME] [--passes N]")?;
    for pass in 1..=passes {
        let t0 = Instant::now();
        let opts = OpenOptions {
            soft_deletes_field: soft.clone(),
            verify_checksums: verify,
            verified: None,
        };
        let reader = IndexReader::open(Arc::new(FsDirectory::open(&dir)?), &opts)?;
        let t1 = Instant::now();
        let cpu0 = cpu_seconds();
        let (mut live, mut with_source, mut bytes, mut crc_sum) = (0u64, 0u64, 0u64, 0u64);
        let mut docs = reader.documents(0..reader.max_doc())?;
        let mut visitor = |field: &FieldInfo, value: StoredValue<'_>| {
            if let StoredValue::Binary(b) = value {
                if field.name == "_source" {
                    bytes += b.len() as u64;
                    crc_sum += u64::from(crc32fast::hash(b));
                    with_source += 1;
                }
            }
            Ok(())
        };
        while docs.next(&mut visitor)?.is_some() {
            live += 1;
        }
        let secs = t1.elapsed().as_secs_f64();
        let cpu = cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
        let cpu_mbs = cpu
            .filter(|c| *c > 0.0)
            .map(|c| format!("{:.1}", bytes as f64 / 1e6 / c))
            .unwrap_or_else(|| "-".into());
        println!(
            "pass={pass} access=rust verify={verify} segments={} maxDoc={} live={live} withSource={with_source} \
             sourceCrcSum={crc_sum} sourceMB={:.1} openMs={:.1} readS={secs:.3} docs/s={:.0} sourceMB/s={:.1} cpuS={:.2} cpuMB/s={cpu_mbs}",
            reader.segments().len(),
            reader.max_doc(),
            bytes as f64 / 1e6,
            (t1 - t0).as_secs_f64() * 1e3,
            live as f64 / secs,
            bytes as f64 / 1e6 / secs,
            cpu.unwrap_or(f64::NAN),
        );
    }
    Ok(())
}

/// User + system CPU time of this process, from `/proc/self/stat` (Linux; clock ticks
/// of 1/100 s). `None` elsewhere.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}
