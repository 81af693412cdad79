//! Export throughput: reads every live document of every index of a snapshot on one
//! thread and prints `_source` MB/s (one figure per line).
//!
//! ```text
//! cargo run --release -p snapshot --example export_throughput -- REPO SNAPSHOT [--verify]
//! ```

use std::time::Instant;

use snapshot::{Repository, ShardReader};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        return Err("usage: export_throughput REPO SNAPSHOT".into());
    }
    let store = snapshot::open_blob_store(&args[0], &Default::default())?;
    let repo = Repository::open(store)?;
    let snap = repo.snapshot(&args[1])?;
    let (mut docs, mut bytes) = (0u64, 0u64);
    let started = Instant::now();
    let cpu_start = cpu_seconds();
    for name in snap.index_names() {
        let index = snap.index(&name)?;
        for s in 0..index.number_of_shards() {
            let shard = index.open_shard(s)?;
            let reader = ShardReader::open(&shard)?;
            let mut it = reader.documents(0..reader.max_doc())?;
            for d in it.by_ref() {
                let d = d?;
                bytes += d.source.len() as u64;
                docs += 1;
            }
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu_start;
    println!("documents {docs}");
    println!("source_mb {:.1}", bytes as f64 / 1e6);
    println!("seconds {secs:.2}");
    println!("cpu_seconds {cpu:.2}");
    println!("source_mb_per_s {:.1}", bytes as f64 / 1e6 / secs);
    println!(
        "source_mb_per_cpu_s {:.1}",
        bytes as f64 / 1e6 / cpu.max(1e-9)
    );
    println!("docs_per_s {:.0}", docs as f64 / secs);
    Ok(())
}

/// User + system CPU time of this process (Linux `/proc/self/stat`), 0 elsewhere.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    let Some(rest) = stat.rsplit_once(')').map(|(_, r)| r) else {
        return 0.0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0
}
