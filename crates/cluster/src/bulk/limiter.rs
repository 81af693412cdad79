//! Flow control shared by concurrent bulk calls: an AIMD concurrency limit that halves on
//! throttling and grows back by about one request per round trip, and token-bucket rate limits.

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use tokio::sync::Notify;

pub(crate) struct AimdLimiter {
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

pub(crate) struct Permit<'a> {
    limiter: &'a AimdLimiter,
    epoch: u64,
}

impl AimdLimiter {
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
pub(crate) struct RateLimiter {
    per_sec: f64,
    next: Mutex<Instant>,
}

impl RateLimiter {
    pub fn new(per_sec: f64) -> RateLimiter {
        RateLimiter {
            per_sec: per_sec.max(f64::MIN_POSITIVE),
            next: Mutex::new(Instant::now()),
        }
    }

    /// Wait until `amount` units may pass.
    pub async fn acquire(&self, amount: f64) {
        let wait = {
            let mut next = self.next.lock().expect("rate lock");
            let now = Instant::now();
            let floor = now.checked_sub(Duration::from_secs(1)).unwrap_or(now);
            let start = (*next).max(floor);
            *next = start + Duration::from_secs_f64(amount / self.per_sec);
            start.saturating_duration_since(now)
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
}
