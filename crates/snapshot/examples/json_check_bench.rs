//! Speed of the `_source` JSON check on real documents: loads every `_source` of a
//! snapshot into memory, then times, per CPU-second of this thread (from
//! `/proc/thread-self/schedstat`, so a loaded machine does not skew it), the scanner
//! `snapshot::json::check_value`, `serde_json` validating the same bytes (`IgnoredAny`),
//! `std::str::from_utf8`, and the line-break search it replaced; each over all sources
//! (from memory) and over the first thousand repeatedly (from cache).
//!
//! ```text
//! cargo run --release -p snapshot --example json_check_bench -- REPO SNAPSHOT [PASSES]
//! ```

use snapshot::{Repository, ShardReader};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 2 {
        return Err("usage: json_check_bench REPO SNAPSHOT [PASSES]".into());
    }
    let passes: usize = args.get(2).map_or(Ok(3), |p| p.parse())?;
    let store = snapshot::open_blob_store(&args[0], &Default::default())?;
    let repo = Repository::open(store)?;
    let snap = repo.snapshot(&args[1])?;
    let mut sources = Vec::new();
    for name in snap.index_names() {
        let index = snap.index(&name)?;
        for s in 0..index.number_of_shards() {
            let reader = ShardReader::open(&index.open_shard(s)?)?;
            for d in reader.documents(0..reader.max_doc())? {
                sources.push(d?.source);
            }
        }
    }
    let bytes: usize = sources.iter().map(|s| s.len()).sum();
    println!("documents {}", sources.len());
    println!("source_mb {:.1}", bytes as f64 / 1e6);
    println!(
        "avg_source_bytes {:.0}",
        bytes as f64 / sources.len().max(1) as f64
    );
    // All sources once per pass (read from memory, as a cold scan would), and the first
    // 1,000 again and again (in cache, as in the pipeline, where a source is checked
    // right after its chunk was decompressed).
    let hot: Vec<&[u8]> = sources.iter().take(1000).map(|s| &s[..]).collect();
    let hot_bytes: usize = hot.iter().map(|s| s.len()).sum();
    let rounds = (bytes / hot_bytes.max(1)).max(1);
    let run = |name: &str, f: &dyn Fn(&[u8]) -> bool| {
        let (mut best, mut best_hot) = (0f64, 0f64);
        for _ in 0..passes {
            let t0 = thread_cpu_ns();
            let mut ok = 0usize;
            for s in &sources {
                ok += usize::from(f(s));
            }
            let secs = (thread_cpu_ns() - t0) as f64 / 1e9;
            assert_eq!(ok, sources.len(), "{name}: a source was rejected");
            best = best.max(bytes as f64 / 1e9 / secs);
            let t0 = thread_cpu_ns();
            let mut ok = 0usize;
            for _ in 0..rounds {
                for s in &hot {
                    ok += usize::from(f(s));
                }
            }
            let secs = (thread_cpu_ns() - t0) as f64 / 1e9;
            assert_eq!(ok, hot.len() * rounds, "{name}: a source was rejected");
            best_hot = best_hot.max((hot_bytes * rounds) as f64 / 1e9 / secs);
        }
        println!("{name}_gb_per_cpu_s {best:.2} (in cache {best_hot:.2})");
    };
    run("check_value", &|s| snapshot::json::check_value(s).is_ok());
    run("serde_json_ignored_any", &|s| {
        serde_json::from_slice::<serde::de::IgnoredAny>(s).is_ok()
    });
    run("str_from_utf8", &|s| std::str::from_utf8(s).is_ok());
    run("line_break_search", &|s| {
        !s.iter().any(|&b| b == b'\n' || b == b'\r')
    });
    Ok(())
}

/// CPU time of this thread in nanoseconds (Linux `/proc/thread-self/schedstat`).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}
