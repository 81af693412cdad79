//! Flow control shared by concurrent calls to one service: an AIMD concurrency limit that
//! halves on throttling and grows back by about one request per round trip, and rate limits.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use tokio::sync::Notify;

/// How many requests may be in flight: halved on throttling (once per burst), grown by
/// about one per round trip of successes, never above the maximum nor below one.
pub struct AimdLimiter {
    state: Mutex<AimdState>,
    notify: Notify,
    max: usize,
}

struct AimdState {
    limit: f64,
    in_flight: usize,
    /// Bumped on each decrease; a throttle seen by a request started in an older epoch
    /// was already answered, so one burst of 429s halves the limit only once.
    epoch: u64,
}

/// One request in flight; dropping it frees the slot.
pub struct Permit<'a> {
    limiter: &'a AimdLimiter,
    epoch: u64,
}

impl AimdLimiter {
    /// At most `max` (at least 1) in flight, starting at `max`.
    pub fn new(max: usize) -> AimdLimiter {
        let max = max.max(1);
        AimdLimiter {
            state: Mutex::new(AimdState {
                limit: max as f64,
                in_flight: 0,
                epoch: 0,
            }),
            notify: Notify::new(),
            max,
        }
    }

    /// Waits for a free slot.
    pub async fn acquire(&self) -> Permit<'_> {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let mut s = self.state.lock().expect("limiter lock");
                if s.in_flight < (s.limit as usize).max(1) {
                    s.in_flight += 1;
                    return Permit {
                        limiter: self,
                        epoch: s.epoch,
                    };
                }
            }
            notified.await;
        }
    }

    /// The current limit (fractional: it grows by 1/limit per success).
    pub fn limit(&self) -> f64 {
        self.state.lock().expect("limiter lock").limit
    }

    fn success(&self) {
        let mut s = self.state.lock().expect("limiter lock");
        let before = s.limit as usize;
        s.limit = (s.limit + 1.0 / s.limit).min(self.max as f64);
        if s.limit as usize > before {
            self.notify.notify_waiters();
        }
    }

    fn throttled(&self, epoch: u64) {
        let mut s = self.state.lock().expect("limiter lock");
        if epoch == s.epoch {
            s.limit = (s.limit / 2.0).max(1.0);
            s.epoch += 1;
        }
    }
}

impl Permit<'_> {
    /// The request was throttled (429 or rejected items): halve the limit.
    pub fn throttled(&self) {
        self.limiter.throttled(self.epoch);
    }

    /// The request went through without throttling: grow the limit a little.
    pub fn succeeded(&self) {
        self.limiter.success();
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        self.limiter.state.lock().expect("limiter lock").in_flight -= 1;
        self.limiter.notify.notify_waiters();
    }
}

/// A rate in units per second with up to one second of burst (virtual scheduling).
///
/// Any rate is safe here, whatever the command line let through: a rate that is not a
/// positive number (0, negative, NaN) is taken as [`RateLimiter::MIN_PER_SEC`], an
/// infinite one as no limit, and no single acquisition waits longer than
/// [`RateLimiter::MAX_WAIT`] — never an invalid `Duration`.
pub struct RateLimiter {
    per_sec: f64,
    next: Mutex<Instant>,
}

impl RateLimiter {
    /// The slowest rate: one unit every 1000 seconds.
    pub const MIN_PER_SEC: f64 = 1e-3;
    /// The longest one acquisition may be made to wait.
    pub const MAX_WAIT: Duration = Duration::from_secs(3600);

    pub fn new(per_sec: f64) -> RateLimiter {
        let per_sec = if per_sec >= Self::MIN_PER_SEC {
            per_sec // +inf included: no wait
        } else {
            Self::MIN_PER_SEC // 0, negative, NaN, tiny
        };
        RateLimiter {
            per_sec,
            next: Mutex::new(Instant::now()),
        }
    }

    /// How long `amount` units take at this rate, within `0..=MAX_WAIT`.
    fn cost(&self, amount: f64) -> Duration {
        let secs = amount / self.per_sec;
        if secs.is_nan() || secs <= 0.0 {
            return Duration::ZERO;
        }
        Duration::try_from_secs_f64(secs).map_or(Self::MAX_WAIT, |d| d.min(Self::MAX_WAIT))
    }

    /// Wait until `amount` units may pass.
    pub async fn acquire(&self, amount: f64) {
        let wait = {
            // A panic elsewhere while holding the lock leaves a valid Instant behind.
            let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
            let now = Instant::now();
            let floor = now.checked_sub(Duration::from_secs(1)).unwrap_or(now);
            let start = (*next).max(floor);
            *next = start.checked_add(self.cost(amount)).unwrap_or(start);
            start.saturating_duration_since(now).min(Self::MAX_WAIT)
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[tokio::test]
    async fn halves_once_per_burst_and_grows_back_slowly() {
        let l = AimdLimiter::new(8);
        assert_eq!(l.limit(), 8.0);
        let permits: Vec<_> = futures::future::join_all((0..8).map(|_| l.acquire())).await;
        for p in &permits {
            p.throttled();
        }
        assert_eq!(
            l.limit(),
            4.0,
            "a burst of throttles from one epoch halves once"
        );
        drop(permits);
        let p = l.acquire().await;
        p.throttled();
        drop(p);
        assert_eq!(l.limit(), 2.0);
        for _ in 0..3 {
            let p = l.acquire().await;
            p.succeeded();
        }
        assert!(l.limit() > 3.0 && l.limit() < 4.0, "{}", l.limit());
        for _ in 0..100 {
            l.acquire().await.succeeded();
        }
        assert_eq!(l.limit(), 8.0, "bounded by the maximum");
        for _ in 0..20 {
            l.acquire().await.throttled();
        }
        assert_eq!(l.limit(), 1.0, "never below one");
    }

    #[tokio::test]
    async fn bounds_requests_in_flight() {
        let l = Arc::new(AimdLimiter::new(3));
        let active = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let peak = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..20)
            .map(|_| {
                let (l, active, peak) = (l.clone(), active.clone(), peak.clone());
                tokio::spawn(async move {
                    let _p = l.acquire().await;
                    let now = active.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                    peak.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    active.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
        assert_eq!(peak.load(std::sync::atomic::Ordering::SeqCst), 3);
    }

    #[tokio::test(start_paused = true)]
    async fn rate_limits_after_a_one_second_burst() {
        let r = RateLimiter::new(100.0);
        let start = tokio::time::Instant::now();
        for _ in 0..10 {
            r.acquire(50.0).await; // 500 units at 100/s
        }
        let took = start.elapsed();
        assert!(
            took >= Duration::from_secs(3) && took <= Duration::from_secs(5),
            "{took:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn any_rate_gives_a_valid_bounded_wait() {
        for rate in [
            0.0,
            -1.0,
            f64::NAN,
            f64::MIN_POSITIVE,
            1e-300,
            RateLimiter::MIN_PER_SEC,
            1.0,
            1e15,
            f64::MAX,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            let r = RateLimiter::new(rate);
            for amount in [0.0, 1.0, 8e6, f64::MAX, f64::INFINITY, f64::NAN, -5.0] {
                let cost = r.cost(amount);
                assert!(cost <= RateLimiter::MAX_WAIT, "{rate} {amount}: {cost:?}");
            }
            // Three acquisitions: the first passes within the burst, the others wait at
            // most MAX_WAIT each (the paused clock makes this instant).
            let start = tokio::time::Instant::now();
            for _ in 0..3 {
                r.acquire(1e9).await;
            }
            assert!(
                start.elapsed() <= RateLimiter::MAX_WAIT * 3,
                "{rate}: {:?}",
                start.elapsed()
            );
        }
        assert_eq!(RateLimiter::new(f64::INFINITY).cost(1e12), Duration::ZERO);
        assert_eq!(
            RateLimiter::new(0.0).cost(1.0),
            Duration::from_secs(1000),
            "0 is taken as the slowest rate"
        );
    }
}
