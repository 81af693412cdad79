//! The rate over time: a ring of (store time, documents done, bytes done) samples that
//! the page server takes every few seconds, and rates derived from it. Workers checkpoint
//! every few seconds, so the store's totals move in steps; a rate is taken over a window
//! of a few checkpoints ending at a sample, which smooths the steps out.

use std::collections::VecDeque;

/// One reading of the store's totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sample {
    /// Store clock, ms since the epoch.
    t: i64,
    docs: u64,
    bytes: u64,
}

/// One point of the chart: time (ms), documents per second, bytes per second.
pub type Point = (i64, f64, f64);

/// Samples over the last `horizon` (plus one window), oldest first.
#[derive(Debug)]
pub struct Rates {
    samples: VecDeque<Sample>,
    horizon_ms: i64,
    window_ms: i64,
    max_samples: usize,
}

impl Rates {
    /// Keeps `horizon_ms` of history; rates over `window_ms`; never more than
    /// `max_samples` samples (the oldest go first).
    pub fn new(horizon_ms: i64, window_ms: i64, max_samples: usize) -> Self {
        Rates {
            samples: VecDeque::new(),
            horizon_ms,
            window_ms: window_ms.max(1),
            max_samples: max_samples.max(2),
        }
    }

    /// Records the totals read at store time `t`. A sample not later than the last one is
    /// ignored; totals that went down (the store was cleared, a new migration began) start
    /// the history over.
    pub fn push(&mut self, t: i64, docs: u64, bytes: u64) {
        if let Some(last) = self.samples.back() {
            if t <= last.t {
                return;
            }
            if docs < last.docs || bytes < last.bytes {
                self.samples.clear();
            }
        }
        self.samples.push_back(Sample { t, docs, bytes });
        let oldest = t - self.horizon_ms - self.window_ms;
        while self.samples.len() > self.max_samples
            || self.samples.front().is_some_and(|s| s.t < oldest)
        {
            self.samples.pop_front();
        }
    }

    /// (documents/s, bytes/s) over the window ending at the newest sample; `None` until
    /// two samples at least a second apart exist.
    pub fn current(&self) -> Option<(f64, f64)> {
        let last = *self.samples.back()?;
        let first = self
            .samples
            .iter()
            .find(|s| s.t >= last.t - self.window_ms)
            .copied()?;
        rate(first, last)
    }

    /// The chart over the horizon: at most `max_points` points, evenly spread over the
    /// samples, each the rate over the window ending at that sample.
    pub fn series(&self, max_points: usize) -> Vec<Point> {
        let Some(last) = self.samples.back() else {
            return Vec::new();
        };
        let start = last.t - self.horizon_ms;
        let n = self.samples.len();
        let mut out = Vec::new();
        let mut lo = 0;
        let step = n.div_ceil(max_points.max(1)).max(1);
        // Walk from the newest so that the newest sample is always a point.
        let mut idx: Vec<usize> = (0..n).rev().step_by(step).collect();
        idx.reverse();
        for i in idx {
            let s = self.samples[i];
            if s.t < start {
                continue;
            }
            while self.samples[lo].t < s.t - self.window_ms {
                lo += 1;
            }
            if let Some((d, b)) = rate(self.samples[lo], s) {
                out.push((s.t, d, b));
            }
        }
        out
    }
}

fn rate(a: Sample, b: Sample) -> Option<(f64, f64)> {
    let ms = b.t - a.t;
    if ms < 1000 {
        return None;
    }
    let secs = ms as f64 / 1000.0;
    Some((
        b.docs.saturating_sub(a.docs) as f64 / secs,
        b.bytes.saturating_sub(a.bytes) as f64 / secs,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_over_the_window_ending_at_the_newest_sample() {
        let mut r = Rates::new(3_600_000, 10_000, 10_000);
        assert_eq!(r.current(), None);
        r.push(0, 0, 0);
        r.push(500, 0, 0);
        // Half a second is too short to call a rate.
        assert_eq!(r.current(), None);
        // 100 docs/s for 20 s, with checkpoints only every 5 s.
        for t in (2000..=20_000).step_by(2000) {
            let at = t - t % 5000;
            r.push(t, at as u64 / 10, at as u64);
        }
        // Window [10 s, 20 s]: 1000 → 2000 docs.
        assert_eq!(r.current(), Some((100.0, 1000.0)));
    }

    #[test]
    fn history_is_bounded_and_restarts_when_totals_go_down() {
        let mut r = Rates::new(60_000, 10_000, 20);
        for t in 0..100 {
            r.push(t * 1000, t as u64, 0);
        }
        assert_eq!(r.samples.len(), 20);
        r.push(100_000, 0, 0);
        assert_eq!(r.samples.len(), 1);
        // Stale or repeated times are ignored.
        r.push(99_000, 5, 0);
        r.push(100_000, 5, 0);
        assert_eq!(r.samples.len(), 1);
        let mut r = Rates::new(60_000, 10_000, 1000);
        for t in 0..200 {
            r.push(t * 1000, t as u64, 0);
        }
        // One hour (here a minute) plus one window.
        assert_eq!(r.samples.front().unwrap().t, 199_000 - 70_000);
    }

    #[test]
    fn series_is_thinned_and_ends_at_the_newest_sample() {
        let mut r = Rates::new(3_600_000, 30_000, 10_000);
        for t in 0..=1800 {
            r.push(t * 2000, t as u64 * 20, t as u64 * 2000);
        }
        let s = r.series(100);
        assert!(s.len() <= 100 && s.len() >= 90, "{}", s.len());
        assert_eq!(s.last().unwrap().0, 3_600_000);
        for (t, d, b) in &s {
            assert!(*t >= 0);
            assert!((d - 10.0).abs() < 1e-9, "{d}");
            assert!((b - 1000.0).abs() < 1e-9, "{b}");
        }
    }
}
