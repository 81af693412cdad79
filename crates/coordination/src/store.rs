//! The `Store` trait — the few primitives the protocol needs — and `open_store`, which
//! picks a backend from a URL.

mod cluster;
mod generation;
mod memory;
mod postgres;
mod redis;
mod sqlite;

use std::sync::Arc;

use async_trait::async_trait;

use crate::latency::{Latencies, PoolStats};
use crate::record::{Record, RecordKind, Revision};
use crate::summary::ItemSummary;
use crate::Error;

pub use cluster::ClusterStore;
pub use generation::generation_url;
pub use memory::MemoryStore;
pub use postgres::PostgresStore;
pub use redis::RedisStore;
pub use sqlite::SqliteStore;

/// Shared state of the fleet. Every method is one atomic step on the store; the protocol in
/// [`crate::Coordinator`] is built from these alone.
#[async_trait]
pub trait Store: Send + Sync {
    /// Short backend name for logs and errors ("sqlite", "postgres", "redis", "cluster").
    fn backend(&self) -> &'static str;

    /// The store's clock, in milliseconds since the Unix epoch.
    async fn now(&self) -> Result<i64, Error>;

    /// Create `rec` if no record with its id exists. `None` when it already existed.
    async fn create(&self, rec: &Record) -> Result<Option<Revision>, Error>;

    /// Create every record whose id does not exist yet; returns how many were created.
    async fn create_many(&self, recs: &[Record]) -> Result<usize, Error>;

    /// Read a record and its current version (a realtime read: sees every acknowledged write).
    async fn get(&self, id: &str) -> Result<Option<(Record, Revision)>, Error>;

    /// Replace the record with id `rec.id` if its version is still `expected`. `None` on a
    /// conflict (someone else wrote first, or the record is gone).
    async fn update(&self, rec: &Record, expected: Revision) -> Result<Option<Revision>, Error>;

    /// Up to `limit` open work items whose lease ended at or before `now` (or was never
    /// taken). Items whose lease *expired* (expiry in 1..=now: a dead or stalled holder)
    /// come first, earliest expiry first, so a dead worker's item is taken again before
    /// fresh ones; then never-leased or released items (expiry 0) in random order, so that
    /// racing workers mostly pick different items. Each part is an index range on the
    /// backends built for fleets (O(log n + limit)), not a scan of the items.
    /// Versions may be stale on stores with near-realtime search: `update` settles it.
    async fn candidates(&self, now: i64, limit: usize) -> Result<Vec<(Record, Revision)>, Error>;

    /// The earliest lease expiry among open work items; `None` when no item is open.
    async fn earliest_open_expiry(&self) -> Result<Option<i64>, Error>;

    /// For backends with a connection pool: the wait for a connection and the time on it,
    /// per call, measured apart (a benchmark prints both). `None` elsewhere.
    fn pool_stats(&self) -> Option<PoolStats> {
        None
    }

    /// Latencies the server itself measured, per command (Redis' `INFO latencystats`);
    /// empty where the server keeps none.
    async fn server_latencies(&self) -> Result<Vec<(String, Latencies)>, Error> {
        Ok(Vec::new())
    }

    /// Every record of `kind` (for status and the keeper), in no particular order.
    async fn list(&self, kind: RecordKind) -> Result<Vec<Record>, Error>;

    /// The work items folded for status at store time `now`: totals per (group, state,
    /// leased) and the items leased now, FAILED or with reasons. This default reads every
    /// item; PostgreSQL (GROUP BY) and Redis (counters kept by every write) answer from
    /// aggregates, so status stays fast at fleet size.
    async fn item_summary(&self, now: i64) -> Result<ItemSummary, Error> {
        Ok(ItemSummary::fold(now, self.list(RecordKind::Item).await?))
    }

    /// Delete every record of this namespace (tests, benchmarks, starting over).
    async fn clear(&self) -> Result<(), Error>;
}

/// Open the store a URL names:
/// - `sqlite://PATH` (`sqlite:///abs/file.db`, `sqlite://relative.db`);
/// - `postgres://user:pw@host:port/db[?table=NAME][&pool=N]` (default table
///   `rfs_coordination`, 16 pooled connections per process);
/// - `redis://[user:pw@]host:port[/db][?prefix=NAME]` (keys `{NAME}:…`, default `rfs`);
/// - `memory://` — this process only (records are gone when it exits);
/// - `http(s)://[user:pw@]host:port[/index]` — an index on an Elasticsearch/OpenSearch
///   cluster (default `rfs_coordination`); `opensearch://` is an alias of `http://`.
pub async fn open_store(url: &str) -> Result<Arc<dyn Store>, Error> {
    open(url, true).await
}

/// Open the store a URL names only if it exists and holds rfs records — for commands that
/// only read it (`status`, the dashboard) or set its control record: a mistyped file, table,
/// prefix or index is an error ([`Error::Refused`]), and nothing is created.
pub async fn open_existing_store(url: &str) -> Result<Arc<dyn Store>, Error> {
    open(url, false).await
}

async fn open(url: &str, create: bool) -> Result<Arc<dyn Store>, Error> {
    let bad = |reason: &str| Error::BadUrl {
        url: redact(url),
        reason: reason.to_string(),
    };
    let (scheme, rest) = url
        .split_once("://")
        .ok_or_else(|| bad("expected SCHEME://…"))?;
    match scheme.to_ascii_lowercase().as_str() {
        "sqlite" => {
            if rest.is_empty() {
                return Err(bad("missing file path"));
            }
            Ok(Arc::new(if create {
                SqliteStore::open(rest).await?
            } else {
                SqliteStore::open_existing(rest).await?
            }))
        }
        "memory" if create => Ok(Arc::new(MemoryStore::new())),
        "memory" => Err(bad(
            "a memory:// store lives in one process: there is none to read",
        )),
        "postgres" | "postgresql" => Ok(Arc::new(if create {
            PostgresStore::open(url).await?
        } else {
            PostgresStore::open_existing(url).await?
        })),
        "redis" | "rediss" => Ok(Arc::new(if create {
            RedisStore::open(url).await?
        } else {
            RedisStore::open_existing(url).await?
        })),
        "http" | "https" | "opensearch" => {
            let url = if scheme.eq_ignore_ascii_case("opensearch") {
                format!("http://{rest}")
            } else {
                url.to_string()
            };
            Ok(Arc::new(if create {
                ClusterStore::open(&url).await?
            } else {
                ClusterStore::open_existing(&url).await?
            }))
        }
        _ => Err(bad(
            "unknown scheme; use sqlite://, postgres://, redis://, http:// or https://",
        )),
    }
}

/// The URL without its password, for messages.
pub(crate) fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if u.password().is_some() => {
            let _ = u.set_password(Some("***"));
            u.to_string()
        }
        _ => url.to_string(),
    }
}

/// True when a connection error says the server's certificate was not trusted (rustls'
/// "invalid peer certificate", OpenSSL's "certificate verify failed"): a retry cannot cure it.
pub(crate) fn is_certificate_error(text: &str) -> bool {
    text.contains("invalid peer certificate") || text.contains("certificate verify failed")
}

/// Remove query parameter `name` from `url`; returns the new URL and the value.
pub(crate) fn take_query_param(url: &str, name: &str) -> Result<(String, Option<String>), Error> {
    pgconn::take_param(url, name).map_err(|e| Error::BadUrl {
        url: redact(url),
        reason: e.to_string(),
    })
}

/// Checks a namespace name (table, key prefix): letters, digits and `_` only.
pub(crate) fn check_name(url: &str, name: &str) -> Result<(), Error> {
    if name.is_empty()
        || name.len() > 60
        || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(Error::BadUrl {
            url: redact(url),
            reason: format!("namespace {name:?} must be 1–60 letters, digits or '_'"),
        });
    }
    Ok(())
}

/// Local wall clock in milliseconds since the epoch.
pub(crate) fn system_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_param_is_taken_out() {
        let (u, v) =
            take_query_param("postgres://u:p@h:5/db?table=x&sslmode=disable", "table").unwrap();
        assert_eq!(u, "postgres://u:p@h:5/db?sslmode=disable");
        assert_eq!(v.as_deref(), Some("x"));
        let (u, v) = take_query_param("redis://h:1/0", "prefix").unwrap();
        assert_eq!(u, "redis://h:1/0");
        assert_eq!(v, None);
        assert!(redact("postgres://u:secret@h/db").contains("***"));
        assert!(check_name("x", "a-b").is_err());
        assert!(check_name("x", "ok_1").is_ok());
    }

    #[tokio::test]
    async fn bad_urls_are_rejected() {
        for url in ["nothing", "ftp://x", "sqlite://"] {
            assert!(matches!(open_store(url).await, Err(Error::BadUrl { .. })));
        }
    }
}
