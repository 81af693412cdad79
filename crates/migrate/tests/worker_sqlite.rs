//! The worker loop over the real coordination protocol on a SQLite store, with an
//! in-memory source and sink: several workers share split shards, leases so short that
//! the early trigger fires and successors take over, and workers that "crash" (their task
//! is aborted, the lease left to expire). Every live document must reach the sink, every
//! item must end complete, and a paused fleet must not send.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coordination::{Config, Coordinator, WorkItem};
use migrate::ports::{BulkSized, SinkError, SourceError};
use migrate::{
    BatchLimits, DocRange, DocumentSink, DocumentSource, Metrics, PipelineOptions, SinkOutcome,
    WorkerExit, WorkerOptions,
};

const SHARDS: u32 = 3;
const MAX_DOC: u64 = 3000;

#[derive(Debug)]
struct Doc {
    index: String,
    shard: u32,
    id: u64,
}
impl BulkSized for Doc {
    fn bulk_len(&self) -> usize {
        200
    }
}

/// Every doc id not divisible by 5 is live.
struct Source;
impl DocumentSource for Source {
    type Doc = Doc;
    fn read(
        &self,
        range: &DocRange,
        emit: &mut dyn FnMut(u64, Doc) -> bool,
    ) -> Result<(), SourceError> {
        let end = range.to.unwrap_or(MAX_DOC).min(MAX_DOC);
        for i in (range.from..end).filter(|i| i % 5 != 0) {
            if !emit(
                i,
                Doc {
                    index: range.index.clone(),
                    shard: range.shard,
                    id: i,
                },
            ) {
                break;
            }
        }
        Ok(())
    }
}

/// Documents the sink refuses for good (as a target refuses a mapping conflict).
fn refused(id: u64) -> bool {
    id % 97 == 3
}

#[derive(Default)]
struct Sink {
    got: Mutex<Vec<(String, u32, u64)>>,
}
impl DocumentSink for Sink {
    type Doc = Doc;
    async fn send(&self, docs: Vec<Doc>) -> Result<SinkOutcome, SinkError> {
        tokio::time::sleep(Duration::from_millis(30)).await;
        let n = docs.len() as u64;
        let failed = docs.iter().filter(|d| refused(d.id)).count() as u64;
        self.got.lock().unwrap().extend(
            docs.into_iter()
                .filter(|d| !refused(d.id))
                .map(|d| (d.index, d.shard, d.id)),
        );
        Ok(SinkOutcome {
            indexed: n - failed,
            failed,
            source_bytes: n * 100,
        })
    }
}

fn config() -> Config {
    Config {
        initial_lease: Duration::from_millis(600),
        max_attempts: 50,
        poll_interval: Duration::from_millis(50),
        ..Config::default()
    }
}

fn options() -> WorkerOptions {
    WorkerOptions {
        pipeline: PipelineOptions {
            batch: BatchLimits {
                max_docs: 25,
                max_bytes: 1 << 20,
            },
            in_flight: 3,
            read_ahead: 2,
            checkpoint_every: Duration::from_millis(50),
            control_every: Duration::from_millis(20),
        },
        wait_for_leases: true,
        poll: Duration::from_millis(50),
        max_items: None,
    }
}

async fn coordinator(url: &str) -> Coordinator {
    Coordinator::new(coordination::open_store(url).await.unwrap(), config())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn workers_with_crashes_and_hand_offs_deliver_every_document() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("state.db").display());
    let setup = coordinator(&url).await;
    // Shard 0 is split in two ranges; shards 1 and 2 are whole.
    let mut items = vec![
        WorkItem {
            index: "ix".into(),
            shard: 0,
            from_doc: 0,
            to_doc: Some(1500),
        },
        WorkItem {
            index: "ix".into(),
            shard: 0,
            from_doc: 1500,
            to_doc: None,
        },
    ];
    items.extend((1..SHARDS).map(|s| WorkItem::shard("ix", s)));
    setup.setup(&items).await.unwrap();

    let source = Arc::new(Source);
    let sink = Arc::new(Sink::default());
    let metrics = Arc::new(Metrics::default());
    let spawn = |url: String| {
        let (source, sink, metrics) = (source.clone(), sink.clone(), metrics.clone());
        tokio::spawn(async move {
            let coord = coordinator(&url).await;
            migrate::run_worker(&coord, source, sink, &options(), &metrics).await
        })
    };
    let mut workers: Vec<_> = (0..4).map(|_| spawn(url.clone())).collect();
    // Crash a worker every 250 ms for a while, start a fresh one in its place.
    for round in 0..8 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let i = round % workers.len();
        workers[i].abort();
        workers[i] = spawn(url.clone());
    }
    for w in workers {
        let exit = tokio::time::timeout(Duration::from_secs(120), w)
            .await
            .expect("workers finish")
            .unwrap()
            .unwrap();
        assert_eq!(exit, WorkerExit::NoWorkLeft);
    }
    let got: BTreeSet<(String, u32, u64)> = sink.got.lock().unwrap().iter().cloned().collect();
    let live: Vec<(String, u32, u64)> = (0..SHARDS)
        .flat_map(|s| {
            (0..MAX_DOC)
                .filter(|i| i % 5 != 0)
                .map(move |i| ("ix".to_string(), s, i))
        })
        .collect();
    let want: BTreeSet<(String, u32, u64)> =
        live.iter().filter(|d| !refused(d.2)).cloned().collect();
    assert_eq!(got.len(), want.len(), "documents delivered");
    assert_eq!(got, want);
    let status = setup.status().await.unwrap();
    assert_eq!(status.items.failed, 0);
    // The counts in the store are exact despite crashes and re-sends: every live document
    // once, the refused ones among them.
    let refused_live = live.iter().filter(|d| refused(d.2)).count() as u64;
    assert!(refused_live > 0);
    assert_eq!(status.docs_done, live.len() as u64);
    assert_eq!(status.docs_failed, refused_live);
    assert_eq!(status.per_index["ix"].docs_failed, refused_live);
    assert_eq!(status.items.open(), 0);
    assert!(
        status.items.total > items.len(),
        "short leases should have produced successors: {:?}",
        status.items
    );
    assert!(
        metrics
            .items_handed_off
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_fleet_sends_nothing_and_stop_ends_the_worker() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("state.db").display());
    let control = coordinator(&url).await;
    control.setup(&[WorkItem::shard("ix", 0)]).await.unwrap();
    let source = Arc::new(Source);
    let sink = Arc::new(Sink::default());
    let metrics = Arc::new(Metrics::default());
    let worker = {
        let (source, sink, metrics, url) =
            (source.clone(), sink.clone(), metrics.clone(), url.clone());
        tokio::spawn(async move {
            let coord = Coordinator::new(
                coordination::open_store(&url).await.unwrap(),
                Config {
                    initial_lease: Duration::from_secs(60),
                    ..config()
                },
            );
            migrate::run_worker(&coord, source, sink, &options(), &metrics).await
        })
    };
    tokio::time::sleep(Duration::from_millis(150)).await;
    control
        .set_control(coordination::Control::Pause)
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = sink.got.lock().unwrap().len();
    assert!(before > 0, "the worker sent before the pause");
    let st = control.status().await.unwrap();
    assert_eq!(st.items.leased, 0, "a paused worker releases its lease");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        sink.got.lock().unwrap().len(),
        before,
        "nothing sent while paused"
    );
    control
        .set_control(coordination::Control::Stop)
        .await
        .unwrap();
    let exit = tokio::time::timeout(Duration::from_secs(10), worker)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(exit, WorkerExit::Stopped);
    // Resume after a stop: a new worker finishes from the checkpoint, sending nothing twice
    // beyond the batches in flight at the checkpoint (here: none, the pause drained them).
    control
        .set_control(coordination::Control::Run)
        .await
        .unwrap();
    let coord = coordinator(&url).await;
    let exit = migrate::run_worker(&coord, source, sink.clone(), &options(), &metrics)
        .await
        .unwrap();
    assert_eq!(exit, WorkerExit::NoWorkLeft);
    let got = sink.got.lock().unwrap().clone();
    let distinct: BTreeSet<_> = got.iter().cloned().collect();
    let delivered = (0..MAX_DOC).filter(|i| i % 5 != 0 && !refused(*i)).count();
    assert_eq!(distinct.len(), delivered);
    assert_eq!(
        got.len(),
        distinct.len(),
        "the resumed worker started exactly after the checkpoint"
    );
}
