//! How calls to a remote service are paced, shared by the project's clients (the
//! OpenSearch `_bulk` sender, the DynamoDB client):
//!
//! - [`RetryPolicy`]: bounded exponential backoff with jitter, and `Retry-After`; its
//!   [`RetryPolicy::waits`] drive `backon` retries (the table reader, the store calls).
//! - [`AimdLimiter`]: how many requests may be in flight, halved on throttling and grown
//!   back slowly (additive increase, multiplicative decrease).
//! - [`RateLimiter`]: units (documents, bytes) per second with one second of burst.
//!
//! ```
//! # async fn demo() {
//! let limiter = pacing::AimdLimiter::new(8);
//! let policy = pacing::RetryPolicy::default();
//! let permit = limiter.acquire().await;
//! // … send; on a throttling answer:
//! permit.throttled();
//! tokio::time::sleep(policy.delay(1, None)).await;
//! # }
//! ```

mod limiter;
mod retry;

pub use limiter::{AimdLimiter, Permit, RateLimiter};
pub use retry::{parse_retry_after, RetryPolicy, Sometimes, Waits};
