//! A contention driver shared by the CI contention test and `rfs bench coordination`: N
//! concurrent workers race over M items, optionally with random failures, crashes and
//! hand-offs, while every lease is recorded as an interval for the double-grant oracle.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng;
use serde::{Deserialize, Serialize};

use crate::coordinator::{Acquired, Config, Coordinator, CrashPoint, HandOff, Progress};
use crate::position::Position;
use crate::record::WorkItem;
use crate::store::Store;
use crate::Error;

/// What the simulated workers do.
#[derive(Debug, Clone)]
pub struct ContentionConfig {
    pub workers: usize,
    /// Documents per item (items are `[0, docs_per_item)` ranges of distinct shards).
    pub docs_per_item: u64,
    /// Per acquisition: probability of `fail`, of a crash (lease dropped, new worker id),
    /// and of a hand-off at a random cursor (sometimes crashing inside it).
    pub fail_rate: f64,
    pub crash_rate: f64,
    pub hand_off_rate: f64,
    /// Every `poison_every`-th shard (0 = none) fails on every attempt, so it ends FAILED.
    pub poison_every: usize,
    /// Simulated work per lease (uniform in `0..=work`).
    pub work: Duration,
    pub protocol: Config,
}

impl ContentionConfig {
    /// Pure acquire → complete, for throughput figures.
    pub fn bench(workers: usize, protocol: Config) -> Self {
        ContentionConfig {
            workers,
            docs_per_item: 1000,
            fail_rate: 0.0,
            crash_rate: 0.0,
            hand_off_rate: 0.0,
            poison_every: 0,
            work: Duration::ZERO,
            protocol,
        }
    }
}

/// One lease as the oracle sees it: `[start, end)` on the store clock, where `start` is
/// read after the lease was granted and `end` is its expiry or the moment (read before
/// the write) its holder let go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Interval {
    pub item: String,
    pub worker: String,
    pub start: i64,
    pub end: i64,
}

/// What a run measured.
#[derive(Debug, Clone, Default)]
pub struct ContentionReport {
    pub acquisitions: usize,
    pub elapsed: Duration,
    /// Latency of every successful `acquire`, sorted.
    pub latencies: Vec<Duration>,
    pub intervals: Vec<Interval>,
    /// Guarded writes rejected because the lease had moved on (expected under crashes).
    pub leases_lost: usize,
    pub crashes: usize,
    pub failures: usize,
    pub hand_offs: usize,
}

impl ContentionReport {
    pub fn per_second(&self) -> f64 {
        self.acquisitions as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    /// Latency at quantile `q` (0.0–1.0).
    pub fn quantile(&self, q: f64) -> Duration {
        if self.latencies.is_empty() {
            return Duration::ZERO;
        }
        let i = ((self.latencies.len() as f64 - 1.0) * q).round() as usize;
        self.latencies[i.min(self.latencies.len() - 1)]
    }
}

/// Pairs of leases on the same item that overlap in time: must be empty.
pub fn double_grants(intervals: &[Interval]) -> Vec<(Interval, Interval)> {
    let mut by_item: HashMap<&str, Vec<&Interval>> = HashMap::new();
    // A lease that ended before its holder read the clock after the grant (the store's
    // answer came after the lease's end) covered no time in which the holder could act:
    // its real span, from the write to the expiry, lies before `start`. Such an empty
    // interval cannot overlap anything; sorted by `start` it would look as if it did.
    for iv in intervals.iter().filter(|iv| iv.end > iv.start) {
        by_item.entry(iv.item.as_str()).or_default().push(iv);
    }
    let mut out = Vec::new();
    for (_, mut ivs) in by_item {
        ivs.sort_by_key(|i| (i.start, i.end));
        let mut latest: Option<&Interval> = None;
        for iv in ivs {
            if let Some(prev) = latest {
                if iv.start < prev.end {
                    out.push((prev.clone(), iv.clone()));
                }
                if iv.end > prev.end {
                    latest = Some(iv);
                }
            } else {
                latest = Some(iv);
            }
        }
    }
    out
}

/// The items a contention run uses: `items` shards of index `bench`, `[0, docs_per_item)`.
pub fn contention_items(items: usize, docs_per_item: u64) -> Vec<WorkItem> {
    (0..items)
        .map(|i| WorkItem {
            group: "bench".into(),
            part: i as u32,
            after: None,
            until: Some(Position::Doc(docs_per_item)),
            extent: None,
        })
        .collect()
}

#[derive(Default)]
struct Shared {
    latencies: Vec<Duration>,
    intervals: Vec<Interval>,
    leases_lost: usize,
    crashes: usize,
    failures: usize,
    hand_offs: usize,
}

/// Run `cfg.workers` workers until no work is left (items must be set up already).
pub async fn run_contention(
    store: Arc<dyn Store>,
    cfg: &ContentionConfig,
) -> Result<ContentionReport, Error> {
    let shared = Arc::new(Mutex::new(Shared::default()));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..cfg.workers {
        let store = store.clone();
        let cfg = cfg.clone();
        let shared = shared.clone();
        tasks.push(tokio::spawn(
            async move { worker(store, cfg, shared).await },
        ));
    }
    let mut first_err = None;
    for t in tasks {
        match t.await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                first_err.get_or_insert(e);
            }
            Err(e) => {
                first_err.get_or_insert(Error::Invalid(format!("worker task failed: {e}")));
            }
        }
    }
    if let Some(e) = first_err {
        return Err(e);
    }
    let elapsed = start.elapsed();
    let mut s = std::mem::take(&mut *shared.lock().map_err(|_| poisoned())?);
    s.latencies.sort();
    Ok(ContentionReport {
        acquisitions: s.latencies.len(),
        elapsed,
        latencies: s.latencies,
        intervals: s.intervals,
        leases_lost: s.leases_lost,
        crashes: s.crashes,
        failures: s.failures,
        hand_offs: s.hand_offs,
    })
}

fn poisoned() -> Error {
    Error::Invalid("contention state lock poisoned".into())
}

async fn worker(
    store: Arc<dyn Store>,
    cfg: ContentionConfig,
    shared: Arc<Mutex<Shared>>,
) -> Result<(), Error> {
    let mut coord = Coordinator::new(store.clone(), cfg.protocol.clone());
    loop {
        let t = Instant::now();
        let lease = match coord.acquire().await? {
            Acquired::Lease(l) => l,
            Acquired::NoWorkLeft => return Ok(()),
            Acquired::AllLeasedElsewhere { wait, .. } => {
                tokio::time::sleep(wait.min(Duration::from_millis(20))).await;
                continue;
            }
        };
        let latency = t.elapsed();
        let start = store.now().await?;
        let mut iv = Interval {
            item: lease.id().to_string(),
            worker: coord.worker_id().to_string(),
            start,
            end: lease.expires_at_ms(),
        };
        let (roll, work, cursor_pick, crash_pick): (f64, u64, f64, u32) = {
            let mut rng = rand::thread_rng();
            (
                rng.gen(),
                rng.gen_range(0..=cfg.work.as_micros() as u64),
                rng.gen(),
                rng.gen_range(0..5),
            )
        };
        if work > 0 {
            tokio::time::sleep(Duration::from_micros(work)).await;
        }
        let item = lease.item();
        let to = item
            .until
            .as_ref()
            .and_then(Position::doc)
            .unwrap_or(cfg.docs_per_item);
        // The first doc number not acknowledged yet, and the item's first one.
        let first = |c: &Option<Position>| c.as_ref().and_then(Position::doc).map_or(0, |d| d + 1);
        let (item_first, resume) = (first(&item.after), first(lease.cursor()));
        let done = Progress {
            cursor: Some(Position::Doc(to - 1)),
            docs: to - item_first,
            covered: to - item_first,
            bytes: (to - item_first) * 100,
            ..Progress::default()
        };
        let mut lost = false;
        let mut crashed = false;
        let (mut failed, mut handed) = (false, false);
        // Every end of a lease except a crash is recorded before its write is issued.
        let end_now = |iv: &mut Interval, t: i64| iv.end = iv.end.min(t);
        let poison = cfg.poison_every > 0 && (item.part as usize).is_multiple_of(cfg.poison_every);
        if poison {
            end_now(&mut iv, store.now().await?);
            failed = true;
            lost = lease_lost(lease.fail("poisoned item").await)?;
        } else if roll < cfg.crash_rate {
            crashed = true;
            drop(lease);
        } else if roll < cfg.crash_rate + cfg.fail_rate {
            end_now(&mut iv, store.now().await?);
            failed = true;
            lost = lease_lost(lease.fail("simulated failure").await)?;
        } else if roll < cfg.crash_rate + cfg.fail_rate + cfg.hand_off_rate && to > resume + 1 {
            // Acknowledged up to `cursor`, somewhere before the item's last document.
            let cursor = resume + ((to - resume - 1) as f64 * cursor_pick) as u64;
            let p = Progress {
                cursor: Some(Position::Doc(cursor)),
                docs: cursor + 1 - item_first,
                covered: cursor + 1 - item_first,
                bytes: (cursor + 1 - item_first) * 100,
                ..Progress::default()
            };
            handed = true;
            if crash_pick == 0 {
                // Die somewhere inside the hand-off.
                let point = [
                    CrashPoint::BeforeRecordSuccessor,
                    CrashPoint::AfterRecordSuccessor,
                    CrashPoint::AfterCreateSuccessor,
                    CrashPoint::AfterCompleteParent,
                ][(cursor as usize) % 4];
                crashed = true;
                lost = lease_lost(lease.hand_off_crashing(&p, 0.05, point).await.map(|_| ()))?;
            } else {
                end_now(&mut iv, store.now().await?);
                lost = lease_lost(lease.hand_off(&p, 0.05).await.map(|h| {
                    debug_assert!(matches!(h, HandOff::Successor(_)));
                }))?;
            }
        } else {
            end_now(&mut iv, store.now().await?);
            lost = lease_lost(lease.complete(&done).await)?;
        }
        {
            let mut s = shared.lock().map_err(|_| poisoned())?;
            s.latencies.push(latency);
            s.intervals.push(iv);
            s.leases_lost += lost as usize;
            s.crashes += crashed as usize;
            s.failures += failed as usize;
            s.hand_offs += handed as usize;
        }
        if crashed {
            // A restarted process is a new worker.
            coord = Coordinator::new(store.clone(), cfg.protocol.clone());
        }
    }
}

/// `Ok(true)` when the write was refused because the lease moved on.
fn lease_lost(r: Result<impl Sized, Error>) -> Result<bool, Error> {
    match r {
        Ok(_) => Ok(false),
        Err(Error::LeaseLost { .. }) => Ok(true),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iv(item: &str, start: i64, end: i64) -> Interval {
        Interval {
            item: item.into(),
            worker: "w".into(),
            start,
            end,
        }
    }

    #[test]
    fn a_lease_that_ended_before_its_holder_knew_is_empty() {
        // Granted with an expiry of 145, answered at 323: another worker took the item
        // at 265 after that expiry.
        let ivs = [iv("a", 265, 417), iv("a", 323, 145)];
        assert!(double_grants(&ivs).is_empty());
        assert_eq!(
            double_grants(&[iv("a", 265, 417), iv("a", 323, 400)]).len(),
            1
        );
    }

    #[test]
    fn oracle_finds_overlaps_only() {
        let ok = [
            iv("a", 0, 10),
            iv("a", 10, 20),
            iv("b", 5, 15),
            iv("a", 25, 30),
        ];
        assert!(double_grants(&ok).is_empty());
        let bad = [iv("a", 0, 10), iv("a", 9, 20)];
        assert_eq!(double_grants(&bad).len(), 1);
        let nested = [iv("a", 0, 100), iv("a", 10, 20), iv("a", 30, 40)];
        assert_eq!(double_grants(&nested).len(), 2);
    }
}
