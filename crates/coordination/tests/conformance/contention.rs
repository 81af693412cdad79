//! 64 workers race over 2 000 items with random failures, crashes (also inside hand-offs)
//! and hand-offs. The oracle: no two leases on one item overlap in time, and every item
//! chain ends complete or FAILED, covering its range without orphans.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use coordination::contention::{
    contention_items, double_grants, run_contention, ContentionConfig, Interval,
};
use coordination::{open_store, Coordinator, Record, RecordKind, RecordState, Store};

use crate::suite::{config, Factory};

const WORKERS: usize = 64;
const ITEMS: usize = 2000;
const DOCS: u64 = 1000;
/// Every 100th shard always fails: 20 chains must end FAILED.
const POISON_EVERY: usize = 100;

fn contention_config(workers: usize, lease_ms: u64) -> ContentionConfig {
    let mut protocol = config(lease_ms);
    protocol.max_attempts = 5;
    ContentionConfig {
        workers,
        docs_per_item: DOCS,
        fail_rate: 0.05,
        crash_rate: 0.03,
        hand_off_rate: 0.25,
        poison_every: POISON_EVERY,
        work: Duration::from_millis(2),
        protocol,
    }
}

/// `items` work items (2 000 on fast stores) and `lease_ms` leases, so crashed leases
/// expire quickly but healthy ones rarely do.
pub async fn run(backend: &str, f: &Factory, items: usize, lease_ms: u64) {
    let store = f(format!("contention_{}", std::process::id())).await;
    let cfg = contention_config(WORKERS, lease_ms);
    Coordinator::new(store.clone(), cfg.protocol.clone())
        .setup(&contention_items(items, DOCS))
        .await
        .unwrap();
    let report = run_contention(store.clone(), &cfg).await.unwrap();
    eprintln!(
        "{backend}: {} acquisitions in {:?} ({:.0}/s), p50 {:?}, p99 {:?}; {} crashes, {} failures, {} hand-offs, {} leases lost",
        report.acquisitions,
        report.elapsed,
        report.per_second(),
        report.quantile(0.5),
        report.quantile(0.99),
        report.crashes,
        report.failures,
        report.hand_offs,
        report.leases_lost
    );
    assert!(report.crashes > 0 && report.failures > 0 && report.hand_offs > 0);
    check(&store, &report.intervals, items).await;
}

/// The oracle and the end state.
async fn check(store: &Arc<dyn Store>, intervals: &[Interval], chains: usize) {
    let doubles = double_grants(intervals);
    assert!(
        doubles.is_empty(),
        "double grants: {:#?}",
        &doubles[..doubles.len().min(5)]
    );
    // Fault-injecting stores may still refuse this read: retry transient errors, as the
    // coordinator does for every store call.
    let mut attempt = 0;
    let items = loop {
        match store.list(RecordKind::Item).await {
            Ok(items) => break items,
            Err(e) if e.is_transient() && attempt < 20 => {
                attempt += 1;
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            Err(e) => panic!("listing the items: {e}"),
        }
    };
    let by_id: HashMap<&str, &Record> = items.iter().map(|r| (r.id.as_str(), r)).collect();
    let mut reached = 0;
    let mut failed = 0;
    for shard in 0..chains as u32 {
        let mut cur = by_id[coordination::item_id("bench", shard, &None).as_str()];
        reached += 1;
        loop {
            match (cur.state, cur.successors.as_slice()) {
                (RecordState::Failed, successors) => {
                    failed += 1;
                    assert!(cur.last_error.as_deref().unwrap_or("").contains("gave up"));
                    // An item can fail after it recorded its successor (its holder died
                    // inside the hand-off, and every later attempt failed): a FAILED item
                    // ends the run non-zero; its successor, if it was created, goes on.
                    match successors.first().and_then(|s| by_id.get(s.as_str())) {
                        Some(next) => {
                            assert_eq!(next.after, cur.cursor);
                            cur = next;
                            reached += 1;
                        }
                        None => break,
                    }
                }
                (RecordState::Done, _) if (shard as usize).is_multiple_of(POISON_EVERY) => {
                    panic!("poisoned item completed: {cur:?}")
                }
                (RecordState::Done, []) => {
                    assert_eq!(
                        cur.cursor,
                        Some(coordination::Position::Doc(DOCS - 1)),
                        "{} ends at the last document",
                        cur.id
                    );
                    break;
                }
                (RecordState::Done, [s]) => {
                    let next = by_id
                        .get(s.as_str())
                        .unwrap_or_else(|| panic!("{} names missing successor {s}", cur.id));
                    assert_eq!(next.after, cur.cursor);
                    assert!(next.after > cur.after);
                    cur = next;
                    reached += 1;
                }
                _ => panic!("item not finished: {cur:?}"),
            }
        }
    }
    assert_eq!(reached, items.len(), "every item belongs to one chain");
    assert!(
        failed >= chains.div_ceil(POISON_EVERY),
        "poisoned chains end FAILED ({failed})"
    );
    eprintln!("{} items in {chains} chains, {failed} FAILED", items.len());
}

const CHILD_DB: &str = "RFS_COORD_CONTENTION_DB";
const CHILD_OUT: &str = "RFS_COORD_CONTENTION_OUT";
const PROCESSES: usize = 4;

pub async fn run_processes() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shared.db");
    let url = format!("sqlite://{}", db.display());
    let store = open_store(&url).await.unwrap();
    let cfg = contention_config(WORKERS / PROCESSES, 400);
    Coordinator::new(store.clone(), cfg.protocol.clone())
        .setup(&contention_items(ITEMS, DOCS))
        .await
        .unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut children = Vec::new();
    for i in 0..PROCESSES {
        let out = dir.path().join(format!("intervals-{i}.json"));
        let child = tokio::process::Command::new(&exe)
            .args(["--exact", "contention_sqlite_child", "--nocapture"])
            .env(CHILD_DB, &url)
            .env(CHILD_OUT, &out)
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        children.push((child, out));
    }
    let mut intervals = Vec::new();
    for (mut child, out) in children {
        let status = child.wait().await.unwrap();
        assert!(status.success(), "child process failed: {status}");
        let text = std::fs::read_to_string(&out).unwrap();
        let mine: Vec<Interval> = serde_json::from_str(&text).unwrap();
        assert!(!mine.is_empty(), "every process did some work");
        intervals.extend(mine);
    }
    eprintln!("sqlite, {PROCESSES} processes: {} leases", intervals.len());
    check(&store, &intervals, ITEMS).await;
}

pub async fn child() {
    let (Ok(url), Ok(out)) = (std::env::var(CHILD_DB), std::env::var(CHILD_OUT)) else {
        return;
    };
    let store = open_store(&url).await.unwrap();
    let cfg = contention_config(WORKERS / PROCESSES, 400);
    let report = run_contention(store, &cfg).await.unwrap();
    std::fs::write(&out, serde_json::to_string(&report.intervals).unwrap()).unwrap();
}
