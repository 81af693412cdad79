//! The job over the real coordination protocol on a SQLite store, with an in-memory
//! source and sink: several processes (each with several item workers) share split
//! shards, leases so short that the early trigger fires and successors take over, and
//! processes that "crash" (their task is aborted, the leases left to expire). Every live
//! document must be delivered, refused or skipped exactly once in the store's counts, every
//! item must end complete, and a paused fleet must not send.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use coordination::{Config, Cursor, Position, WorkItem};
use engine::{
    Delivered, Document, FailureLog, Job, JobEnd, JobOptions, Op, PipelineOptions, Plan, Read,
    Refusal, Sink, SinkError, SinkWriter, Skip, Source, SourceError, Totals, WorkerOptions,
};

/// Every document to its own index, unchanged.
struct Unchanged;

impl engine::Transform for Unchanged {
    fn apply(&self, _: &mut Document) -> Result<(), engine::transform::Unroutable> {
        Ok(())
    }
}

const SHARDS: u32 = 3;
const MAX_DOC: u64 = 6000;

fn live(i: u64) -> bool {
    !i.is_multiple_of(5)
}
/// Live documents without `_source`: skipped by the source.
fn no_source(i: u64) -> bool {
    i % 7 == 1
}
/// Documents the sink refuses for good (as a target refuses a mapping conflict).
fn refused(id: u64) -> bool {
    id % 97 == 3
}

struct Src;
impl Source for Src {
    fn identity(&self) -> BTreeMap<String, String> {
        [("kind".to_string(), "memory".to_string())].into()
    }
    fn plan(&self) -> Result<Plan, SourceError> {
        // Shard 0 is split in two ranges; shards 1 and 2 are whole.
        let mut items = vec![
            WorkItem {
                group: "ix".into(),
                part: 0,
                after: None,
                until: Some(Position::Doc(3000)),
                extent: None,
            },
            WorkItem {
                group: "ix".into(),
                part: 0,
                after: Some(Position::Doc(2999)),
                until: None,
                extent: None,
            },
        ];
        items.extend((1..SHARDS).map(|s| WorkItem::whole("ix", s)));
        let totals = Totals {
            docs: u64::from(SHARDS) * (0..MAX_DOC).filter(|i| live(*i)).count() as u64,
            ..Totals::default()
        };
        Ok(Plan { items, totals })
    }
    fn read(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        let first = after.as_ref().and_then(Position::doc).map_or(0, |d| d + 1);
        let end = item
            .until
            .as_ref()
            .and_then(Position::doc)
            .unwrap_or(MAX_DOC)
            .min(MAX_DOC);
        for i in (first..end).filter(|i| live(*i)) {
            let id = format!("{}-{i}", item.part);
            let read = if no_source(i) {
                Read::Skip(Skip {
                    position: Position::Doc(i),
                    index: "ix".into(),
                    id: Some(id),
                    doc_type: None,
                    routing: None,
                    reason: "no_source",
                    detail: "source disabled".into(),
                    source: None,
                })
            } else {
                Read::Doc(Document {
                    position: Position::Doc(i),
                    op: Op::Index,
                    index: "ix".into(),
                    id,
                    doc_type: None,
                    routing: None,
                    source: Bytes::from(format!("{{\"n\":{i}}}")),
                })
            };
            if !emit(read) {
                break;
            }
        }
        Ok(())
    }
}

#[derive(Default)]
struct Snk {
    got: Mutex<Vec<String>>,
}
struct W(Vec<Document>);
impl SinkWriter for W {
    type Batch = Vec<Document>;
    fn push(&mut self, doc: Document) -> Result<Option<Vec<Document>>, Box<Refusal>> {
        self.0.push(doc);
        Ok((self.0.len() >= 25).then(|| std::mem::take(&mut self.0)))
    }
    fn finish(&mut self) -> Option<Vec<Document>> {
        (!self.0.is_empty()).then(|| std::mem::take(&mut self.0))
    }
    fn size(b: &Vec<Document>) -> usize {
        b.len() * 200
    }
}
impl Sink for Snk {
    type Writer = W;
    fn writer(&self) -> W {
        W(Vec::new())
    }
    async fn send(&self, docs: Vec<Document>) -> Result<Delivered, SinkError> {
        tokio::time::sleep(Duration::from_millis(40)).await;
        let (bad, good): (Vec<Document>, Vec<Document>) = docs.into_iter().partition(|d| {
            let n: u64 = d.id.split('-').nth(1).unwrap().parse().unwrap();
            refused(n)
        });
        let delivered = good.len() as u64;
        self.got
            .lock()
            .unwrap()
            .extend(good.into_iter().map(|d| d.id));
        Ok(Delivered {
            possible_duplicates: 0,
            pressure: Vec::new(),
            delivered,
            bytes: delivered * 100,
            source_bytes: delivered * 10,
            refused: bad
                .into_iter()
                .map(|d| Refusal {
                    index: d.index,
                    id: d.id,
                    doc_type: None,
                    routing: None,
                    delete: false,
                    error_type: "mapper_parsing_exception".into(),
                    reason: "bad field".into(),
                    status: 400,
                    attempts: 1,
                    source: d.source,
                })
                .collect(),
        })
    }
    fn identity(&self) -> String {
        "memory".into()
    }
}

fn options(parallel: usize, lease: Duration) -> JobOptions {
    JobOptions {
        parallel,
        worker: WorkerOptions {
            pipeline: PipelineOptions {
                read_ahead: 2,
                in_flight: 3,
                checkpoint_every: Duration::from_millis(50),
                control_every: Duration::from_millis(20),
                skips_per_chunk: 100,
                stop_grace: Duration::from_secs(20),
            },
            wait_for_leases: true,
            poll: Duration::from_millis(50),
            max_items: None,
            failed_item_pause: Duration::from_millis(500),
        },
        coordination: Config {
            initial_lease: lease,
            max_attempts: 50,
            poll_interval: Duration::from_millis(50),
            keeper_lease: Duration::from_secs(2),
            ..Config::default()
        },
        memory_budget: 1 << 20,
        migration: None,
        fleet_limits: Default::default(),
    }
}

struct Env {
    _dir: tempfile::TempDir,
    url: String,
    log: std::path::PathBuf,
}

fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    Env {
        url: format!("sqlite://{}", dir.path().join("state.db").display()),
        log: dir.path().join("failures.jsonl"),
        _dir: dir,
    }
}

async fn job(e: &Env, sink: Arc<Snk>, opts: JobOptions) -> Job<Src, Snk> {
    job_at(&e.url, &e.log, sink, opts).await
}

async fn job_at(
    url: &str,
    log: &std::path::Path,
    sink: Arc<Snk>,
    opts: JobOptions,
) -> Job<Src, Snk> {
    Job::new(
        Arc::new(Src),
        Arc::new(Unchanged),
        sink,
        coordination::open_store(url).await.unwrap(),
        Arc::new(FailureLog::open(log).unwrap()),
        opts,
    )
}

fn all_live() -> Vec<(u32, u64)> {
    (0..SHARDS)
        .flat_map(|s| (0..MAX_DOC).filter(|i| live(*i)).map(move |i| (s, i)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn processes_with_crashes_and_hand_offs_account_for_every_document() {
    let e = env();
    let sink = Arc::new(Snk::default());
    let spawn = |sink: Arc<Snk>| {
        let (url, log) = (e.url.clone(), e.log.clone());
        tokio::spawn(async move {
            job_at(&url, &log, sink, options(2, Duration::from_millis(400)))
                .await
                .run()
                .await
        })
    };
    let mut procs: Vec<_> = (0..3).map(|_| spawn(sink.clone())).collect();
    // Crash a process every 250 ms for a while, start a fresh one in its place.
    for round in 0..8 {
        tokio::time::sleep(Duration::from_millis(250)).await;
        let i = round % procs.len();
        procs[i].abort();
        procs[i] = spawn(sink.clone());
    }
    let mut finished = 0;
    for p in procs {
        let report = tokio::time::timeout(Duration::from_secs(180), p)
            .await
            .expect("processes finish")
            .unwrap()
            .unwrap();
        assert_eq!(report.end, JobEnd::Finished);
        let status = report.status.expect("a finished job has the final status");
        let all = all_live();
        let skipped = all.iter().filter(|(_, i)| no_source(*i)).count() as u64;
        let refused_n = all
            .iter()
            .filter(|(_, i)| !no_source(*i) && refused(*i))
            .count() as u64;
        assert!(skipped > 0 && refused_n > 0);
        // Exact despite crashes and re-sends: each live document once, in one of three fates.
        assert_eq!(
            status.docs_done + status.docs_refused + status.docs_skipped,
            all.len() as u64
        );
        assert_eq!(status.docs_skipped, skipped);
        assert_eq!(status.docs_refused, refused_n);
        assert_eq!(status.reasons["skipped:no_source"], skipped);
        assert_eq!(
            status.reasons["refused:mapper_parsing_exception"],
            refused_n
        );
        assert_eq!(status.items.failed, 0);
        assert_eq!(status.items.open(), 0);
        assert!(
            status.items.total > 4,
            "short leases should have produced successors: {:?} {:?}",
            status.items,
            report.delivered
        );
        finished += 1;
    }
    assert_eq!(finished, 3);
    let got: BTreeSet<String> = sink.got.lock().unwrap().iter().cloned().collect();
    let want: BTreeSet<String> = all_live()
        .into_iter()
        .filter(|(_, i)| !no_source(*i) && !refused(*i))
        .map(|(s, i)| format!("{s}-{i}"))
        .collect();
    assert_eq!(got, want, "every deliverable document reached the sink");
    // The failure log names every refused and skipped document (re-sends may repeat one).
    let logged: BTreeSet<String> = FailureLog::read(&e.log)
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    let want_logged: BTreeSet<String> = all_live()
        .into_iter()
        .filter(|(_, i)| no_source(*i) || refused(*i))
        .map(|(s, i)| format!("{s}-{i}"))
        .collect();
    assert_eq!(logged, want_logged);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_fleet_sends_nothing_and_stop_ends_the_job() {
    let e = env();
    let sink = Arc::new(Snk::default());
    let control = coordination::Coordinator::new(
        coordination::open_store(&e.url).await.unwrap(),
        Config::default(),
    );
    let first = {
        let j = job(&e, sink.clone(), options(1, Duration::from_secs(60))).await;
        tokio::spawn(j.run())
    };
    tokio::time::sleep(Duration::from_millis(400)).await;
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
    let report = tokio::time::timeout(Duration::from_secs(10), first)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(report.end, JobEnd::Stopped);
    // Resume after a stop: a new process finishes from the checkpoints, sending nothing
    // twice (the pause drained the batches in flight).
    control
        .set_control(coordination::Control::Run)
        .await
        .unwrap();
    let report = job(&e, sink.clone(), options(3, Duration::from_secs(60)))
        .await
        .run()
        .await
        .unwrap();
    assert_eq!(report.end, JobEnd::Finished);
    let got = sink.got.lock().unwrap().clone();
    let distinct: BTreeSet<_> = got.iter().cloned().collect();
    let deliverable = all_live()
        .iter()
        .filter(|(_, i)| !no_source(*i) && !refused(*i))
        .count();
    assert_eq!(distinct.len(), deliverable);
    assert_eq!(
        got.len(),
        distinct.len(),
        "the resumed process started exactly after the checkpoints"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fatal_sink_error_stops_the_process_without_spending_attempts() {
    struct Refusing;
    impl Sink for Refusing {
        type Writer = W;
        fn writer(&self) -> W {
            W(Vec::new())
        }
        async fn send(&self, _: Vec<Document>) -> Result<Delivered, SinkError> {
            Err(SinkError::fatal(
                "POST /_bulk: HTTP 401: credentials refused",
            ))
        }
        fn identity(&self) -> String {
            "refusing".into()
        }
    }
    let e = env();
    let j = Job::new(
        Arc::new(Src),
        Arc::new(Unchanged),
        Arc::new(Refusing),
        coordination::open_store(&e.url).await.unwrap(),
        Arc::new(FailureLog::open(&e.log).unwrap()),
        options(2, Duration::from_secs(60)),
    );
    let err = tokio::time::timeout(Duration::from_secs(30), j.run())
        .await
        .expect("a fatal error ends the job at once")
        .unwrap_err();
    assert!(err.to_string().contains("401"), "{err}");
    let control = coordination::Coordinator::new(
        coordination::open_store(&e.url).await.unwrap(),
        Config::default(),
    );
    let st = control.status().await.unwrap();
    assert_eq!(st.items.failed, 0);
    assert_eq!(st.items.leased, 0, "leases are given back");
    for it in control
        .store()
        .list(coordination::RecordKind::Item)
        .await
        .unwrap()
    {
        assert!(
            it.last_error.is_none(),
            "no attempt was recorded as failed: {it:?}"
        );
    }
}
