//! Reads every doc value of a Lucene index single-threaded and prints throughput, in the
//! same `key=value` form as the Java `ReadDocValues` tool (`tests/java/ReadDocValues.java`).
//!
//! usage: doc_values_bench INDEX_DIR [--passes N] [--by-field]
//!
//! Per segment, per field with doc values (by name), every doc id `0..maxDoc` is read in
//! order, deleted or not, as Lucene's doc-values iterators do (they visit every document
//! with a value, ignoring live docs). Per pass: `docs` (documents with a value, summed over
//! fields), `values` (numbers and terms), `bytes` (8 per number, the length of each binary
//! or term), and `checksum`: the wrapping sum of every number and of Java's
//! `Arrays.hashCode` of every binary or term, so that the Java tool computes the same.
//! Then values/s and MB/s by wall clock and `cpuMB/s` by this process's CPU time (from
//! `/proc/self/stat`; on a shared, loaded machine it is the figure that shows what one
//! core does). The index is opened (and its small files verified) before the clock starts;
//! opening the fields is timed. `--by-field` adds, after each pass, one `field=` line per
//! field name (summed over segments) with its type, values, bytes and read time.

use std::sync::Arc;
use std::time::Instant;

use std::collections::BTreeMap;

use lucene::{DocValue, DocValuesType, FsDirectory, IndexReader, OpenOptions};

/// Per field name: type, values, bytes, seconds.
type ByField = BTreeMap<String, (DocValuesType, u64, u64, f64)>;

#[derive(Default)]
struct Counts {
    docs: u64,
    values: u64,
    bytes: u64,
    checksum: i64,
}

/// Java's `Arrays.hashCode(byte[])`.
fn java_hash(b: &[u8]) -> i32 {
    b.iter().fold(1i32, |h, &x| {
        h.wrapping_mul(31).wrapping_add(i32::from(x as i8))
    })
}

fn read_all(
    reader: &IndexReader,
    by_field: &mut ByField,
) -> Result<Counts, Box<dyn std::error::Error>> {
    let mut c = Counts::default();
    let mut value = DocValue::default();
    for seg in reader.segments() {
        let mut dv = seg.doc_values();
        let mut names: Vec<&str> = seg
            .field_infos()
            .iter()
            .filter(|f| f.doc_values_type != DocValuesType::None)
            .map(|f| f.name.as_str())
            .collect();
        names.sort_unstable();
        for name in names {
            let (t, values0, bytes0) = (Instant::now(), c.values, c.bytes);
            let Some(mut field) = dv.field(name)? else {
                continue;
            };
            for doc in 0..seg.max_doc() {
                if !field.read(doc, &mut value)? {
                    continue;
                }
                c.docs += 1;
                for &n in &value.numbers {
                    c.values += 1;
                    c.bytes += 8;
                    c.checksum = c.checksum.wrapping_add(n);
                }
                for b in &value.bytes {
                    c.values += 1;
                    c.bytes += b.len() as u64;
                    c.checksum = c.checksum.wrapping_add(i64::from(java_hash(b)));
                }
            }
            let e =
                by_field
                    .entry(name.to_string())
                    .or_insert((field.doc_values_type(), 0, 0, 0.0));
            e.1 += c.values - values0;
            e.2 += c.bytes - bytes0;
            e.3 += t.elapsed().as_secs_f64();
        }
    }
    Ok(c)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let mut dir = None;
    let mut passes = 3u32;
    let mut show_fields = false;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--passes" => {
                passes = args.next().ok_or("--passes needs a value")?.parse()?;
                if passes == 0 {
                    return Err("--passes must be at least 1".into());
                }
            }
            "--by-field" => show_fields = true,
            _ if dir.is_none() => dir = Some(a),
            _ => return Err(format!("unexpected argument {a}").into()),
        }
    }
    let dir = dir.ok_or("usage: doc_values_bench INDEX_DIR [--passes N] [--by-field]")?;
    for pass in 1..=passes {
        let t0 = Instant::now();
        let reader =
            IndexReader::open(Arc::new(FsDirectory::open(&dir)?), &OpenOptions::default())?;
        let t1 = Instant::now();
        let cpu0 = cpu_seconds();
        let mut by_field = ByField::new();
        let c = read_all(&reader, &mut by_field)?;
        let secs = t1.elapsed().as_secs_f64();
        let cpu = cpu_seconds().zip(cpu0).map(|(b, a)| b - a);
        let cpu_mbs = cpu
            .filter(|c| *c > 0.0)
            .map(|s| format!("{:.1}", c.bytes as f64 / 1e6 / s))
            .unwrap_or_else(|| "-".into());
        println!(
            "pass={pass} access=rust segments={} maxDoc={} values={} docs={} bytes={} checksum={} \
             openMs={:.1} readS={secs:.3} values/s={:.0} MB/s={:.1} cpuS={:.2} cpuMB/s={cpu_mbs}",
            reader.segments().len(),
            reader.max_doc(),
            c.values,
            c.docs,
            c.bytes,
            c.checksum,
            (t1 - t0).as_secs_f64() * 1e3,
            c.values as f64 / secs,
            c.bytes as f64 / 1e6 / secs,
            cpu.unwrap_or(f64::NAN),
        );
        for (name, (t, values, bytes, secs)) in by_field.iter().filter(|_| show_fields) {
            println!(
                "  field={name} type={t:?} values={values} bytes={bytes} readS={secs:.3} values/s={:.0} MB/s={:.1}",
                *values as f64 / secs,
                *bytes as f64 / 1e6 / secs
            );
        }
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
