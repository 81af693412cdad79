//! What the JS-canonical writer (`javascript::canonical::write`, the text rfs sends node
//! for a document) costs, on documents shaped like `scripts/bench-e2e`'s of about 390 B
//! and 1 KB, in nanoseconds of CPU per document (median of the passes).
//!
//!     cargo run --release -p programs --example canonical_bench [DOCS] [PASSES]

use programs::javascript::canonical;

mod common;
use common::{cpu_ns, source};

fn main() {
    let mut args = std::env::args().skip(1);
    // 400,000 by default: the CPU clock moves in steps of about 4 ms.
    let n: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(400_000);
    let passes: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(7);
    for size in [390, 1000] {
        let docs: Vec<String> = (0..n).map(|i| source(i, size)).collect();
        let bytes: usize = docs.iter().map(String::len).sum();
        let mut out = Vec::new();
        let mut entries = canonical::Entries::default();
        let mut times = Vec::new();
        let (mut taken, mut written) = (0usize, 0usize);
        for _ in 0..passes {
            (taken, written) = (0, 0);
            let t = cpu_ns();
            for d in &docs {
                out.clear();
                entries.list.clear();
                entries.keys.clear();
                if canonical::write(d.as_bytes(), &mut out, &mut entries) {
                    taken += 1;
                    written += out.len() + entries.list.len();
                }
            }
            times.push((cpu_ns() - t) as f64);
        }
        times.sort_by(f64::total_cmp);
        let ns = times[times.len() / 2] / n as f64;
        println!(
            "~{size} B ({} B average): write {ns:.1} ns per document, {:.2} bytes/ns \
             ({taken} of {n} taken, {written} bytes and entries written)",
            bytes / n,
            (bytes / n) as f64 / ns,
        );
    }
}
