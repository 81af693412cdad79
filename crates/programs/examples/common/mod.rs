//! What the examples share: documents shaped like `scripts/bench-e2e`'s (the fixture tools'
//! `MakeIndex`), and a thread's CPU clock.

const WORDS: &[&str] = &[
    "alpha", "bravo", "charlie", "delta", "echo", "shard", "segment", "lucene", "stored", "field",
    "worker", "lease", "customer", "order", "invoice", "payment", "product",
];

/// A source of about `target` bytes, with the fields of `MakeIndex`'s.
pub fn source(i: usize, target: usize) -> String {
    let mut k = i.wrapping_mul(2_654_435_761);
    let mut next = |n: usize| {
        k = k
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (k >> 33) % n
    };
    let mut s = format!(
        "{{\"id\":\"doc-{i:08}\",\"version\":1,\"@timestamp\":\"2024-{:02}-{:02}T{:02}:{:02}:{:02}Z\",\
         \"price\":{},\"qty\":{},\"customer\":{{\"name\":\"{} {}\",\"email\":\"{}{}@example.com\"}},\
         \"tags\":[\"{}\",\"{}\"],\"body\":\"",
        1 + next(12),
        1 + next(28),
        next(24),
        next(60),
        next(60),
        next(100_000) as f64 / 100.0,
        next(1000),
        WORDS[next(WORDS.len())],
        WORDS[next(WORDS.len())],
        WORDS[next(WORDS.len())],
        next(10_000),
        WORDS[next(WORDS.len())],
        WORDS[next(WORDS.len())],
    );
    while s.len() < target.saturating_sub(2) {
        s.push_str(WORDS[next(WORDS.len())]);
        s.push(' ');
    }
    s.push_str("\"}");
    s
}

/// Nanoseconds this thread has run on a CPU (the first field of Linux's schedstat), so a
/// busy machine's waits do not count.
pub fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .expect("/proc/thread-self/schedstat")
}
