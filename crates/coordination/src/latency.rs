//! A lock-free latency histogram (buckets 2^(1/8) apart from 1 µs to ~70 min), for what
//! a store measures of itself: the wait for a pooled connection apart from the time on it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

const STEPS_PER_DOUBLING: f64 = 8.0;
const BUCKETS: usize = 256;

/// Counts of durations in logarithmic buckets.
pub struct Histogram {
    buckets: Box<[AtomicU64]>,
    max_us: AtomicU64,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: (0..BUCKETS).map(|_| AtomicU64::new(0)).collect(),
            max_us: AtomicU64::new(0),
        }
    }
}

/// Quantiles read from a [`Histogram`] (each the upper edge of its bucket: at most 9 % high).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Latencies {
    pub count: u64,
    pub p50: Duration,
    pub p99: Duration,
    pub max: Duration,
}

fn bucket_of(us: u64) -> usize {
    if us <= 1 {
        return 0;
    }
    (((us as f64).log2() * STEPS_PER_DOUBLING).ceil() as usize).min(BUCKETS - 1)
}

fn upper_edge(bucket: usize) -> Duration {
    Duration::from_micros(2f64.powf(bucket as f64 / STEPS_PER_DOUBLING).round() as u64)
}

impl Histogram {
    pub fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        self.buckets[bucket_of(us)].fetch_add(1, Ordering::Relaxed);
        self.max_us.fetch_max(us, Ordering::Relaxed);
    }

    pub fn read(&self) -> Latencies {
        let counts: Vec<u64> = self
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        let count: u64 = counts.iter().sum();
        let max = Duration::from_micros(self.max_us.load(Ordering::Relaxed));
        let quantile = |q: f64| {
            if count == 0 {
                return Duration::ZERO;
            }
            let rank = ((count as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (i, n) in counts.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    return upper_edge(i).min(max);
                }
            }
            max
        };
        Latencies {
            count,
            p50: quantile(0.5),
            p99: quantile(0.99),
            max,
        }
    }
}

/// What a store with a connection pool measures of its calls.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct PoolStats {
    /// Connections in the pool (at most).
    pub size: usize,
    /// Waiting for a connection: queueing in this process, not work of the store.
    pub wait: Latencies,
    /// On the connection: the store's work and the network.
    pub call: Latencies,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_within_a_bucket() {
        let h = Histogram::default();
        for ms in 1..=100u64 {
            h.record(Duration::from_millis(ms));
        }
        let l = h.read();
        assert_eq!(l.count, 100);
        assert_eq!(l.max, Duration::from_millis(100));
        let near = |d: Duration, want: f64| {
            let got = d.as_secs_f64() * 1000.0;
            assert!(got >= want && got <= want * 1.1, "{got} vs {want}");
        };
        near(l.p50, 50.0);
        near(l.p99, 99.0);
        assert_eq!(Histogram::default().read(), Latencies::default());
    }
}
