//! The one reader of the store: every interval (or at once after a control change) it
//! reads the status, the work items and the failure logs, records a rate sample and
//! publishes the result for the HTTP handlers. However many pages are open, the store is
//! read once per interval. When the store cannot be read, the last good reading stays
//! and the error is published beside it.

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use coordination::{Coordinator, RecordKind};
use engine::phases::read_totals;
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::items;
use super::rates::{Point, Rates};
use crate::cmd::status::render_json;
use crate::failure_logs::FailureLogs;
use redact::Secrets;

/// Opens the store (one attempt; the sampler calls it again on its next round).
pub type Opener = Box<
    dyn Fn() -> Pin<Box<dyn Future<Output = anyhow::Result<Coordinator>> + Send>> + Send + Sync,
>;

/// Rate history kept for the chart.
const HORIZON_MS: i64 = 3_600_000;
/// Window of each rate: several checkpoints of every worker.
pub const WINDOW_MS: i64 = 30_000;
/// Points sent to the page for the chart.
const CHART_POINTS: usize = 720;
/// Items per list on the page.
const ITEMS_PER_LIST: usize = 200;
/// Failure-log entries kept.
const NEWEST_FAILURES: usize = 50;

/// What the handlers serve, all of it already scrubbed of secrets.
#[derive(Debug, Default)]
pub struct Reading {
    /// `rfs status --json` of the last good reading.
    pub status: Option<Value>,
    pub items: Option<Value>,
    /// `{"by_type": {...}, "newest": [...]}`.
    pub failures: Option<Value>,
    pub rates: Vec<Point>,
    /// Local clock (ms since the epoch) of the last good reading.
    pub read_at_ms: Option<i64>,
    pub reads: u64,
    /// Why the last reading failed, and since when readings fail.
    pub error: Option<(String, i64)>,
}

/// State shared by the sampler and the HTTP handlers.
pub struct DashboardState {
    pub reading: RwLock<Reading>,
    /// The open store, for control requests; `None` while it cannot be opened.
    pub coord: RwLock<Option<Coordinator>>,
    /// Wakes the sampler before its interval ends (after a control change).
    pub wake: Notify,
    pub secrets: Secrets,
    pub interval: Duration,
}

pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Reads the store every `shared.interval` until the process ends.
pub async fn run(shared: Arc<DashboardState>, open: Opener, failure_logs: Vec<PathBuf>) {
    let mut logs = Some(FailureLogs::new(&failure_logs, NEWEST_FAILURES));
    let mut rates = Rates::new(HORIZON_MS, WINDOW_MS, 20_000);
    let limit = (shared.interval * 3).max(Duration::from_secs(10));
    loop {
        let coord = shared.coord.read().map(|c| c.clone()).unwrap_or(None);
        let coord = match coord {
            Some(c) => Ok(c),
            None => match tokio::time::timeout(limit, open()).await {
                Ok(Ok(c)) => {
                    if let Ok(mut slot) = shared.coord.write() {
                        *slot = Some(c.clone());
                    }
                    Ok(c)
                }
                Ok(Err(e)) => Err(format!("{e:#}")),
                Err(_) => Err(format!(
                    "no answer within {}s while opening the store",
                    limit.as_secs()
                )),
            },
        };
        let outcome = match coord {
            Ok(c) => match tokio::time::timeout(limit, read(&c, &mut rates)).await {
                Ok(Ok(r)) => Ok(r),
                Ok(Err(e)) => Err(format!("{e:#}")),
                Err(_) => Err(format!(
                    "no answer within {}s while reading the store",
                    limit.as_secs()
                )),
            },
            Err(e) => Err(e),
        };
        // The failure logs are local files: read them whatever the store does.
        let failures = match logs.take() {
            Some(mut l) => {
                let (l, v) = tokio::task::spawn_blocking(move || {
                    l.refresh();
                    let v = json!({"by_type": l.by_type(), "newest": l.newest()});
                    (l, v)
                })
                .await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
                logs = Some(l);
                Some(v)
            }
            None => None,
        };
        publish(&shared, outcome, failures, &rates);
        tokio::select! {
            _ = tokio::time::sleep(shared.interval) => {}
            _ = shared.wake.notified() => {}
        }
    }
}

/// One good reading: (status JSON without failure counts, items view).
struct Read {
    status: coordination::Status,
    totals: Option<engine::Totals>,
    items: Value,
}

async fn read(coord: &Coordinator, rates: &mut Rates) -> anyhow::Result<Read> {
    let status = coord.status().await?;
    let totals = read_totals(coord).await?;
    let records = coord.store().list(RecordKind::Item).await?;
    let items = items::view(&records, status.store_now, ITEMS_PER_LIST);
    rates.push(status.store_now, status.docs_done, status.bytes_done);
    Ok(Read {
        status,
        totals,
        items,
    })
}

fn publish(
    shared: &DashboardState,
    outcome: Result<Read, String>,
    failures: Option<Value>,
    rates: &Rates,
) {
    let now = now_ms();
    let Ok(mut r) = shared.reading.write() else {
        return;
    };
    if let Some(mut f) = failures {
        shared.secrets.scrub_value(&mut f);
        r.failures = Some(f);
    }
    match outcome {
        Ok(read) => {
            let by_type = r
                .failures
                .as_ref()
                .and_then(|f| serde_json::from_value(f["by_type"].clone()).ok())
                .unwrap_or_default();
            let mut status = render_json(
                &read.status,
                read.totals.as_ref(),
                rates.current(),
                &by_type,
            );
            shared.secrets.scrub_value(&mut status);
            let mut items = read.items;
            shared.secrets.scrub_value(&mut items);
            r.status = Some(status);
            r.items = Some(items);
            r.rates = rates.series(CHART_POINTS);
            r.read_at_ms = Some(now);
            r.reads += 1;
            r.error = None;
        }
        Err(message) => {
            let message = shared.secrets.scrub(&message);
            tracing::warn!("dashboard: cannot read the coordination store: {message}");
            let since = r.error.as_ref().map_or(now, |e| e.1);
            r.error = Some((message, since));
            // Open the store again next round: the connection may be what broke.
            if let Ok(mut c) = shared.coord.write() {
                *c = None;
            }
        }
    }
}
