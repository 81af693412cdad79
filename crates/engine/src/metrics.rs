//! Process-wide counters of a worker, exposed in the Prometheus text format on
//! `--metrics-addr` by [`serve`].

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Counters and gauges of one worker process.
#[derive(Debug, Default)]
pub struct Metrics {
    pub docs_sent: AtomicU64,
    pub bytes_sent: AtomicU64,
    pub source_bytes_sent: AtomicU64,
    /// Documents the target (or the sink's limits) refused for good.
    pub docs_refused: AtomicU64,
    /// Documents the source or the transform could not deliver.
    pub docs_skipped: AtomicU64,
    /// Documents a transform program left out on purpose (not failures).
    pub docs_filtered: AtomicU64,
    /// Documents of a target that writes without ids, sent again by this process after
    /// taking over an item (or left to a successor): at most that many duplicates.
    pub possible_duplicates: AtomicU64,
    pub batches_sent: AtomicU64,
    pub items_completed: AtomicU64,
    pub items_handed_off: AtomicU64,
    /// Heartbeat renewals of item leases.
    pub lease_renewals: AtomicU64,
    pub in_flight_batches: AtomicI64,
    /// Unix time (seconds) at which the most recently taken lease expires; 0 when none is held.
    pub lease_expiry_seconds: AtomicI64,
    /// Work items this process holds a lease on now.
    pub leases_held: AtomicI64,
    /// Following a live source (the follower of the fleet; zero elsewhere): changes
    /// applied by this process, and its last view of the lag.
    pub follow_changes: AtomicU64,
    pub follow_lag_bytes: AtomicI64,
    pub follow_retained_bytes: AtomicI64,
    pub follow_behind_seconds: AtomicI64,
    /// Counters sinks keep of their own (throttling, retries), read when rendered.
    sinks: std::sync::Mutex<Vec<SinkCounters>>,
}

/// A sink's own counters: `(name, help, value)` each, rendered with a `sink` label.
#[derive(Clone)]
pub struct SinkCounters {
    /// What the sink writes to (no secrets), the label's value.
    pub sink: String,
    pub read: Arc<dyn Fn() -> Vec<(&'static str, &'static str, u64)> + Send + Sync>,
}

impl std::fmt::Debug for SinkCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SinkCounters")
            .field("sink", &self.sink)
            .finish_non_exhaustive()
    }
}

/// A Prometheus label value: backslash, quote and line breaks escaped.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Adds a sink's own counters to what [`Metrics::render`] shows.
    pub fn add_sink_counters(&self, counters: SinkCounters) {
        if let Ok(mut s) = self.sinks.lock() {
            s.push(counters);
        }
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let counters = [
            (
                "rfs_documents_sent_total",
                "Documents acknowledged by the target.",
                self.docs_sent.load(Relaxed),
            ),
            (
                "rfs_bytes_sent_total",
                "Bulk body bytes of acknowledged documents.",
                self.bytes_sent.load(Relaxed),
            ),
            (
                "rfs_source_bytes_sent_total",
                "_source bytes of acknowledged documents.",
                self.source_bytes_sent.load(Relaxed),
            ),
            (
                "rfs_documents_refused_total",
                "Documents the target refused for good (in the failure log).",
                self.docs_refused.load(Relaxed),
            ),
            (
                "rfs_documents_skipped_total",
                "Documents the source or transform could not deliver (in the failure log).",
                self.docs_skipped.load(Relaxed),
            ),
            (
                "rfs_documents_filtered_total",
                "Documents a transform program left out on purpose (not failures).",
                self.docs_filtered.load(Relaxed),
            ),
            (
                "rfs_documents_possible_duplicates_total",
                "Documents sent again to a target that writes without ids (after a takeover): at most that many stored twice; rfs verify --server-generated-ids counts them exactly.",
                self.possible_duplicates.load(Relaxed),
            ),
            (
                "rfs_batches_sent_total",
                "Bulk batches completed.",
                self.batches_sent.load(Relaxed),
            ),
            (
                "rfs_items_completed_total",
                "Work items completed by this worker.",
                self.items_completed.load(Relaxed),
            ),
            (
                "rfs_items_handed_off_total",
                "Work items handed to a successor.",
                self.items_handed_off.load(Relaxed),
            ),
            (
                "rfs_lease_renewals_total",
                "Heartbeat renewals of work-item leases.",
                self.lease_renewals.load(Relaxed),
            ),
            (
                "rfs_follow_changes_total",
                "Changes of a followed source applied by this process.",
                self.follow_changes.load(Relaxed),
            ),
        ];
        for (name, help, value) in counters {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}"
            );
        }
        let gauges = [
            (
                "rfs_in_flight_batches",
                "Batches in flight.",
                self.in_flight_batches.load(Relaxed),
            ),
            (
                "rfs_leases_held",
                "Work items this process holds a lease on.",
                self.leases_held.load(Relaxed),
            ),
            (
                "rfs_lease_expiry_seconds",
                "Unix time at which the current lease expires (0: no lease).",
                self.lease_expiry_seconds.load(Relaxed),
            ),
            (
                "rfs_follow_lag_bytes",
                "Bytes of the source's log (PostgreSQL WAL) not applied yet, as the follower last saw it.",
                self.follow_lag_bytes.load(Relaxed),
            ),
            (
                "rfs_follow_retained_bytes",
                "Bytes of log the source keeps for the follower (an abandoned slot fills the source's disk).",
                self.follow_retained_bytes.load(Relaxed),
            ),
            (
                "rfs_follow_behind_seconds",
                "Seconds between the newest change applied and now while changes wait (0: caught up).",
                self.follow_behind_seconds.load(Relaxed),
            ),
        ];
        for (name, help, value) in gauges {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {value}"
            );
        }
        let sinks = self.sinks.lock().map(|s| s.clone()).unwrap_or_default();
        // Counter name → (help, one labelled value per sink).
        type Family<'a> = (&'a str, Vec<(String, u64)>);
        let mut by_name: std::collections::BTreeMap<&str, Family> =
            std::collections::BTreeMap::new();
        for s in &sinks {
            for (name, help, value) in (s.read)() {
                by_name
                    .entry(name)
                    .or_insert((help, Vec::new()))
                    .1
                    .push((label(&s.sink), value));
            }
        }
        for (name, (help, values)) in by_name {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
            for (sink, value) in values {
                let _ = writeln!(out, "{name}{{sink=\"{sink}\"}} {value}");
            }
        }
        out
    }
}

/// Serves `metrics` over HTTP on `addr` (any path) until the task is dropped.
pub async fn serve(addr: SocketAddr, metrics: Arc<Metrics>) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    tracing::info!("metrics on http://{}/metrics", listener.local_addr()?);
    loop {
        let (mut conn, _) = listener.accept().await?;
        let metrics = metrics.clone();
        tokio::spawn(async move {
            // Read the request head (we answer every path the same way).
            let mut buf = [0u8; 4096];
            let mut seen = Vec::new();
            while !seen.windows(4).any(|w| w == b"\r\n\r\n") && seen.len() < 16 * 1024 {
                match conn.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => seen.extend_from_slice(&buf[..n]),
                }
            }
            let body = metrics.render();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain; version=0.0.4\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(head.as_bytes()).await;
            let _ = conn.write_all(body.as_bytes()).await;
            let _ = conn.shutdown().await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn serves_the_text_format() {
        let m = Metrics::new();
        m.docs_sent.store(42, Relaxed);
        m.in_flight_batches.store(3, Relaxed);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        drop(listener);
        let server = tokio::spawn(serve(addr, m.clone()));
        let mut conn = loop {
            match tokio::net::TcpStream::connect(addr).await {
                Ok(c) => break c,
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
            }
        };
        conn.write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut text = String::new();
        conn.read_to_string(&mut text).await.unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK"), "{text}");
        assert!(text.contains("\nrfs_documents_sent_total 42\n"), "{text}");
        assert!(text.contains("\nrfs_in_flight_batches 3\n"), "{text}");
        m.add_sink_counters(SinkCounters {
            sink: "dynamodb://t\"x".into(),
            read: Arc::new(|| vec![("rfs_sink_throttled_total", "Throttled.", 7)]),
        });
        let r = m.render();
        assert!(
            r.contains("# TYPE rfs_sink_throttled_total counter\nrfs_sink_throttled_total{sink=\"dynamodb://t\\\"x\"} 7\n"),
            "{r}"
        );
        server.abort();
    }
}
