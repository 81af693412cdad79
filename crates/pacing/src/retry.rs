//! Bounded exponential backoff with jitter, and `Retry-After`.

use std::time::{Duration, SystemTime};

use rand::Rng;

/// How often and how patiently a failed call is repeated.
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included (1 = never retry).
    pub max_attempts: u32,
    /// Wait before the second attempt; doubles after each failure.
    pub initial_backoff: Duration,
    /// Upper bound of the exponential wait.
    pub max_backoff: Duration,
    /// Upper bound on a server's `Retry-After`.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    /// 8 attempts, 0.5 s doubling to 30 s (about 2 minutes of patience), for control calls.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 8,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(300),
        }
    }
}

impl RetryPolicy {
    /// 15 attempts, 1 s doubling to 60 s (about 11 minutes), for bulk documents.
    pub fn bulk_default() -> Self {
        RetryPolicy {
            max_attempts: 15,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            max_retry_after: Duration::from_secs(300),
        }
    }

    /// Never retry.
    pub fn none() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// Wait after failed attempt number `attempt` (1-based): the exponential step with
    /// "equal jitter" (between half and all of it), but never less than `retry_after`
    /// (itself capped by `max_retry_after`).
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Duration {
        let exp = attempt.saturating_sub(1).min(30);
        let step = self
            .initial_backoff
            .saturating_mul(1u32 << exp)
            .min(self.max_backoff);
        let half = step / 2;
        let jitter = if half.is_zero() {
            Duration::ZERO
        } else {
            rand::thread_rng().gen_range(Duration::ZERO..=half)
        };
        let backoff = half + jitter;
        match retry_after {
            Some(ra) => backoff.max(ra.min(self.max_retry_after)),
            None => backoff,
        }
    }
}

impl RetryPolicy {
    /// The waits between attempts, `max_attempts - 1` of them, each a [`RetryPolicy::delay`]
    /// with its jitter. An iterator of durations is a `backon` backoff, so a call is retried
    /// with the policy as `call.retry(policy.waits()).when(is_transient)`: one policy for
    /// the project's retries, whoever drives them.
    pub fn waits(&self) -> Waits {
        Waits {
            policy: self.clone(),
            attempt: 0,
        }
    }
}

/// The waits of a [`RetryPolicy`], from [`RetryPolicy::waits`].
#[derive(Debug, Clone)]
pub struct Waits {
    policy: RetryPolicy,
    /// Failed attempts so far.
    attempt: u32,
}

impl Iterator for Waits {
    type Item = Duration;

    fn next(&mut self) -> Option<Duration> {
        if self.attempt.saturating_add(1) >= self.policy.max_attempts {
            return None;
        }
        self.attempt += 1;
        Some(self.policy.delay(self.attempt, None))
    }
}

/// A warning said at most once per `every`: long waits are worth a line at the default
/// level, but not one per attempt.
#[derive(Debug)]
pub struct Sometimes {
    every: Duration,
    last: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Sometimes {
    pub fn new(every: Duration) -> Self {
        Sometimes {
            every,
            last: std::sync::Mutex::new(None),
        }
    }

    /// True (and remembered) when nothing was said for `every`.
    pub fn due(&self) -> bool {
        let now = std::time::Instant::now();
        let mut last = self.last.lock().unwrap_or_else(|p| p.into_inner());
        let due = last.is_none_or(|t| now.duration_since(t) >= self.every);
        if due {
            *last = Some(now);
        }
        due
    }
}

/// Parse a `Retry-After` value: delta seconds or an HTTP date.
pub fn parse_retry_after(value: &str) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Ok(secs) = value.parse::<f64>() {
        if secs.is_finite() && secs >= 0.0 {
            return Some(Duration::from_secs_f64(secs.min(86_400.0)));
        }
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(SystemTime::now()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_is_bounded_and_honours_retry_after() {
        let p = RetryPolicy {
            max_attempts: 10,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(1),
            max_retry_after: Duration::from_secs(5),
        };
        for _ in 0..200 {
            let d1 = p.delay(1, None);
            assert!(
                d1 >= Duration::from_millis(50) && d1 <= Duration::from_millis(100),
                "{d1:?}"
            );
            let d3 = p.delay(3, None);
            assert!(
                d3 >= Duration::from_millis(200) && d3 <= Duration::from_millis(400),
                "{d3:?}"
            );
            let d9 = p.delay(40, None);
            assert!(
                d9 >= Duration::from_millis(500) && d9 <= Duration::from_secs(1),
                "{d9:?}"
            );
            assert!(p.delay(1, Some(Duration::from_secs(2))) >= Duration::from_secs(2));
            assert_eq!(
                p.delay(1, Some(Duration::from_secs(60))),
                Duration::from_secs(5)
            );
        }
    }

    #[test]
    fn waits_are_one_fewer_than_attempts_and_jittered() {
        let p = RetryPolicy {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(100),
            max_backoff: Duration::from_millis(250),
            max_retry_after: Duration::from_secs(5),
        };
        let seen: Vec<Vec<Duration>> = (0..50).map(|_| p.waits().collect()).collect();
        for w in &seen {
            assert_eq!(w.len(), 3, "{w:?}");
            assert!(w[0] >= Duration::from_millis(50) && w[0] <= Duration::from_millis(100));
            assert!(w[1] >= Duration::from_millis(100) && w[1] <= Duration::from_millis(200));
            assert!(w[2] >= Duration::from_millis(125) && w[2] <= Duration::from_millis(250));
        }
        assert!(
            seen.iter().any(|w| w != &seen[0]),
            "no jitter: {:?}",
            seen[0]
        );
        assert_eq!(RetryPolicy::none().waits().count(), 0);
    }

    #[test]
    fn parses_retry_after() {
        assert_eq!(parse_retry_after("3"), Some(Duration::from_secs(3)));
        assert_eq!(parse_retry_after(" 0 "), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("0.5"), Some(Duration::from_millis(500)));
        let future = SystemTime::now() + Duration::from_secs(30);
        let d = parse_retry_after(&httpdate::fmt_http_date(future)).unwrap();
        assert!(
            d > Duration::from_secs(25) && d <= Duration::from_secs(30),
            "{d:?}"
        );
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }
}
