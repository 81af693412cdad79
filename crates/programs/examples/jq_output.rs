//! How long jq values take to become `_source` bytes: jaq's `Display` (through `fmt`, with a
//! lossy UTF-8 pass per string), jaq's byte writer, and `reshape::json_bytes` (what programs
//! use), on ~1 KB documents shaped like `scripts/bench-e2e`'s, interleaved.
//!
//!     cargo run --release -p programs --example jq_output [DOCS]

use std::time::Instant;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(100_000);
    let words = [
        "shard", "segment", "lucene", "stored", "field", "worker", "lease", "é☃",
    ];
    let vals: Vec<jaq_json::Val> = (0..n)
        .map(|i| {
            let mut body = String::new();
            let mut k = i;
            while body.len() < 800 {
                body.push_str(words[k % words.len()]);
                body.push(if k % 17 == 0 { '\n' } else { ' ' });
                k = k.wrapping_mul(31).wrapping_add(7);
            }
            let doc = serde_json::json!({
                "id": format!("d{i}"), "version": 1, "@timestamp": "2024-03-04T05:06:07Z",
                "price": (i % 100_000) as f64 / 100.0, "qty": i % 1000,
                "customer": {"name": "LEASE WORKER", "email": format!("w{i}@example.com")},
                "tags": ["shard", "lucene"], "body": body, "total": (i % 977) as f64 * 1.25,
            });
            programs::program::parse(doc.to_string().as_bytes()).expect("JSON")
        })
        .collect();
    let pp = jaq_json::write::Pp::default();
    let (mut display, mut bytes, mut own, mut len) = (0f64, 0f64, 0f64, 0usize);
    for _ in 0..3 {
        let t = Instant::now();
        for v in &vals {
            len += v.to_string().len();
        }
        display += t.elapsed().as_secs_f64();
        let t = Instant::now();
        for v in &vals {
            let mut buf = Vec::with_capacity(1100);
            jaq_json::write::write(&mut buf, &pp, 0, v).expect("write to a Vec");
            assert!(std::str::from_utf8(&buf).is_ok());
            len += buf.len();
        }
        bytes += t.elapsed().as_secs_f64();
        let t = Instant::now();
        for v in &vals {
            len += programs::reshape::json_bytes(v, 1100).len();
        }
        own += t.elapsed().as_secs_f64();
    }
    let mb = len as f64 / 3.0 / 1e6;
    println!(
        "docs={n} display_MBps={:.0} jaq_byte_writer_MBps={:.0} json_bytes_MBps={:.0} \
         json_bytes/display={:.2}",
        mb / display,
        mb / bytes,
        mb / own,
        display / own
    );
}
