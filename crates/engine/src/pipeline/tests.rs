//! The pipeline against an in-memory source and sink: every document is delivered,
//! refused or skipped exactly once, the cursor never passes an unacknowledged document,
//! and every end (trigger, pause, stop, shutdown, errors) leaves a cursor that is exact.

use super::*;
use std::collections::BTreeSet;
use std::sync::Mutex;

use bytes::Bytes;

use crate::document::{Document, Op};
use crate::error::{SinkError, SourceError};
use crate::sink::{Delivered, Refusal, SinkWriter};
use crate::source::Plan;
use crate::transform::Unroutable;

/// Live docs: every id below `max_doc` not divisible by 3 (the rest are "deleted"). Ids
/// divisible by 7 are skips (no `_source`); ids divisible by 11 have mapping type "lost"
/// (no route); an error at `fail_at` if set.
struct Src {
    max_doc: u64,
    fail_at: Option<u64>,
}

fn is_live(i: u64) -> bool {
    !i.is_multiple_of(3)
}

impl Source for Src {
    fn identity(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Result<Plan, SourceError> {
        Ok(Plan::default())
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
            .unwrap_or(self.max_doc)
            .min(self.max_doc);
        for i in (first..end).filter(|i| is_live(*i)) {
            if Some(i) == self.fail_at {
                return Err(SourceError::item(format!("corrupt doc {i}")));
            }
            let read = if i.is_multiple_of(7) {
                Read::Skip(Skip {
                    position: Position::Doc(i),
                    index: "i".into(),
                    id: Some(i.to_string()),
                    doc_type: None,
                    routing: None,
                    reason: "no_source",
                    detail: "no _source".into(),
                    source: None,
                })
            } else {
                Read::Doc(Document {
                    position: Position::Doc(i),
                    op: Op::Index,
                    index: "i".into(),
                    id: i.to_string(),
                    doc_type: Some(if i.is_multiple_of(11) { "lost" } else { "t" }.into()),
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

/// Routes type "t" to index "out"; anything else has no route.
struct Tr;
impl Transform for Tr {
    fn apply(&self, doc: &mut Document) -> Result<(), Unroutable> {
        if doc.doc_type.as_deref() != Some("t") {
            return Err(Unroutable {
                reason: "no_route",
                detail: "type lost".into(),
            });
        }
        doc.index = "out".into();
        Ok(())
    }
}

#[derive(Default)]
struct Snk {
    received: Mutex<Vec<u64>>,
    /// Random delay per batch, up to this many ms.
    jitter_ms: u64,
    /// Fail the batch containing this id (once, or always).
    fail_id: Option<u64>,
    fatal: bool,
    /// Refuse documents whose id is divisible by this.
    refuse_every: Option<u64>,
    /// Never answer a batch holding an id at or past this (a hanging target).
    hang_from: Option<u64>,
    /// A lossy target: documents whose id is divisible by this are neither delivered nor
    /// refused (and not counted).
    lose_every: Option<u64>,
    /// A target that writes without ids (a resent document is stored twice).
    idless: bool,
    /// With `hang_from`: the hanging batch is stored before its answer never comes.
    store_then_hang: bool,
    /// Every document handed to `send`, stored or not.
    sent: Mutex<Vec<u64>>,
    /// The item's records as the lease wrote them: each batch is checked against the
    /// last one when it is sent (`unrecorded` says which were sent beyond it).
    records: Option<Arc<Mutex<Vec<Progress>>>>,
    unrecorded: Mutex<Vec<String>>,
}

struct W {
    batch: Vec<u64>,
    max_docs: usize,
}

impl SinkWriter for W {
    type Batch = Vec<u64>;
    fn push(&mut self, doc: Document) -> Result<Option<Vec<u64>>, Box<Refusal>> {
        let id: u64 = doc.id.parse().unwrap();
        if id.is_multiple_of(13) {
            return Err(Box::new(Refusal {
                index: doc.index,
                id: doc.id,
                doc_type: None,
                routing: None,
                delete: false,
                error_type: "document_too_large".into(),
                reason: "too big".into(),
                status: 0,
                attempts: 0,
                source: doc.source,
            }));
        }
        self.batch.push(id);
        Ok((self.batch.len() >= self.max_docs).then(|| std::mem::take(&mut self.batch)))
    }
    fn finish(&mut self) -> Option<Vec<u64>> {
        (!self.batch.is_empty()).then(|| std::mem::take(&mut self.batch))
    }
    fn size(batch: &Vec<u64>) -> usize {
        batch.len() * 100
    }
}

impl Sink for Snk {
    type Writer = W;
    fn writer(&self) -> W {
        W {
            batch: Vec::new(),
            max_docs: 7,
        }
    }
    async fn send(&self, docs: Vec<u64>) -> Result<Delivered, SinkError> {
        {
            let mut sent = self.sent.lock().unwrap();
            sent.extend(&docs);
            if let Some(records) = &self.records {
                let records = records.lock().unwrap();
                let last = records.last().cloned().unwrap_or_default();
                let cursor = last.cursor.as_ref().and_then(Position::doc);
                let beyond = sent
                    .iter()
                    .filter(|d| cursor.is_none_or(|c| **d > c))
                    .count() as u64;
                if beyond > last.sent_ahead {
                    self.unrecorded.lock().unwrap().push(format!(
                        "{beyond} documents sent beyond {cursor:?}, the item records {}",
                        last.sent_ahead
                    ));
                }
            }
        }
        if self.hang_from.is_some_and(|h| docs.iter().any(|d| *d >= h)) {
            if self.store_then_hang {
                self.received.lock().unwrap().extend(&docs);
            }
            std::future::pending::<()>().await;
        }
        if self.jitter_ms > 0 {
            let ms = rand::random::<u64>() % self.jitter_ms;
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        if let Some(f) = self.fail_id {
            if docs.contains(&f) {
                return Err(if self.fatal {
                    SinkError::fatal("401 unauthorized")
                } else {
                    SinkError::item("target refused")
                });
            }
        }
        let (refused, ok): (Vec<u64>, Vec<u64>) = docs
            .iter()
            .filter(|d| self.lose_every.is_none_or(|l| *d % l != 0))
            .partition(|d| self.refuse_every.is_some_and(|r| *d % r == 0));
        self.received.lock().unwrap().extend(&ok);
        Ok(Delivered {
            possible_duplicates: 0,
            pressure: Vec::new(),
            delivered: ok.len() as u64,
            bytes: docs.len() as u64 * 100,
            source_bytes: docs.len() as u64 * 10,
            refused: refused
                .into_iter()
                .map(|d| Refusal {
                    index: "out".into(),
                    id: d.to_string(),
                    doc_type: None,
                    routing: None,
                    delete: false,
                    error_type: "mapper_parsing_exception".into(),
                    reason: "bad field".into(),
                    status: 400,
                    attempts: 1,
                    source: Bytes::new(),
                })
                .collect(),
        })
    }
    fn identity(&self) -> String {
        "memory".into()
    }
    fn resends_duplicate(&self) -> bool {
        self.idless
    }
}

#[derive(Default)]
struct Lease {
    checkpoints: Vec<Progress>,
    /// Control answers, in order; `Run` after the last.
    controls: Vec<Control>,
    /// Heartbeat: renew this often; each renewal ends the lease `lease_len` later.
    renew_every: Option<Duration>,
    lease_len: Duration,
    /// What a renewal answers: `None` succeeds, otherwise this error.
    renew_fails: Option<fn() -> LeaseError>,
    renewals: usize,
    deadline: Option<Instant>,
    /// The checkpoints again, where a sink can see them.
    shared: Option<Arc<Mutex<Vec<Progress>>>>,
}

impl ItemLease for Lease {
    async fn checkpoint(&mut self, progress: &Progress) -> Result<(), LeaseError> {
        self.checkpoints.push(progress.clone());
        if let Some(s) = &self.shared {
            s.lock().unwrap().push(progress.clone());
        }
        Ok(())
    }
    async fn control(&mut self) -> Result<Control, LeaseError> {
        Ok(if self.controls.is_empty() {
            Control::Run
        } else {
            self.controls.remove(0)
        })
    }
    fn renew_every(&self) -> Option<Duration> {
        self.renew_every
    }
    async fn renew(&mut self) -> Result<(), LeaseError> {
        if let Some(e) = self.renew_fails {
            return Err(e());
        }
        self.renewals += 1;
        self.deadline = Some(Instant::now() + self.lease_len);
        Ok(())
    }
    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
}

fn opts(in_flight: usize) -> PipelineOptions {
    PipelineOptions {
        read_ahead: 2,
        in_flight,
        checkpoint_every: Duration::from_millis(5),
        control_every: Duration::from_millis(5),
        skips_per_chunk: 5,
        stop_grace: Duration::from_secs(20),
    }
}

fn item(after: Option<u64>, until: Option<u64>) -> WorkItem {
    WorkItem {
        group: "i".into(),
        part: 0,
        after: after.map(Position::Doc),
        until: until.map(Position::Doc),
        extent: None,
    }
}

/// What each live doc in `from..to` becomes: delivered, refused (by the writer or the
/// target), or skipped (by the source or the transform).
#[derive(Debug, Default, PartialEq, Eq)]
struct Fates {
    delivered: Vec<u64>,
    refused: u64,
    skipped: u64,
}

fn fates(from: u64, to: u64, refuse_every: Option<u64>) -> Fates {
    let mut f = Fates::default();
    for i in (from..to).filter(|i| is_live(*i)) {
        if i.is_multiple_of(7) || i.is_multiple_of(11) {
            f.skipped += 1;
        } else if i.is_multiple_of(13) || refuse_every.is_some_and(|r| i % r == 0) {
            f.refused += 1;
        } else {
            f.delivered.push(i);
        }
    }
    f
}

struct Run {
    report: ItemReport,
    lease: Lease,
    log: Vec<FailureRecord>,
}

#[allow(clippy::too_many_arguments)]
async fn go(
    src: impl Source,
    sink: Arc<Snk>,
    lease: Lease,
    it: WorkItem,
    base: Progress,
    trigger: Instant,
    o: PipelineOptions,
    shutdown: Option<watch::Receiver<bool>>,
) -> Run {
    let deadline = trigger + Duration::from_secs(3600);
    go_until(src, sink, lease, it, base, (trigger, deadline), o, shutdown).await
}

/// [`go`] with the lease's end given too: `times` is (trigger, deadline).
#[allow(clippy::too_many_arguments)]
async fn go_until(
    src: impl Source,
    sink: Arc<Snk>,
    lease: Lease,
    it: WorkItem,
    base: Progress,
    (trigger, deadline): (Instant, Instant),
    o: PipelineOptions,
    shutdown: Option<watch::Receiver<bool>>,
) -> Run {
    go_with(
        src,
        sink,
        lease,
        it,
        base,
        (trigger, deadline),
        o,
        shutdown,
        None,
    )
    .await
}

/// [`go_until`] with another transform than [`Tr`].
#[allow(clippy::too_many_arguments)]
async fn go_with(
    src: impl Source,
    sink: Arc<Snk>,
    mut lease: Lease,
    it: WorkItem,
    base: Progress,
    (trigger, deadline): (Instant, Instant),
    o: PipelineOptions,
    shutdown: Option<watch::Receiver<bool>>,
    transform: Option<Arc<dyn Transform>>,
) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("failures.jsonl");
    let (_tx, rx) = watch::channel(false);
    let shared = WorkerShared {
        metrics: Metrics::new(),
        failures: Arc::new(FailureLog::open(&path).unwrap()),
        budget: Budget::new(1 << 20),
        shutdown: shutdown.unwrap_or(rx),
        fleet: None,
    };
    let plan = ItemPlan {
        item: it,
        base,
        trigger,
        deadline,
    };
    let report = run_item(
        Arc::new(src),
        transform.unwrap_or_else(|| Arc::new(Tr)),
        sink,
        &mut lease,
        plan,
        &o,
        &shared,
    )
    .await;
    let log = FailureLog::read(&path).unwrap();
    Run { report, lease, log }
}

fn far() -> Instant {
    Instant::now() + Duration::from_secs(3600)
}

fn received(sink: &Snk) -> Vec<u64> {
    let mut got = sink.received.lock().unwrap().clone();
    got.sort();
    got
}

/// The counts of a report match the fates of every live doc up to its cursor, and the
/// failure log holds exactly the refused and skipped ones.
fn check_accounting(run: &Run, sink: &Snk, from: u64, refuse_every: Option<u64>) {
    let p = &run.report.progress;
    let to = p
        .cursor
        .as_ref()
        .and_then(Position::doc)
        .map_or(from, |c| c + 1);
    let want = fates(from, to, refuse_every);
    assert_eq!(
        received(sink),
        want.delivered,
        "delivered docs are exactly those up to the cursor"
    );
    assert_eq!(p.docs, want.delivered.len() as u64);
    assert_eq!(p.refused, want.refused);
    assert_eq!(p.skipped, want.skipped);
    assert_eq!(p.reasons.values().sum::<u64>(), want.refused + want.skipped);
    assert_eq!(
        run.log.len() as u64,
        want.refused + want.skipped,
        "one failure record each"
    );
    let skipped_in_log = run.log.iter().filter(|r| r.stage != Stage::Target).count() as u64;
    assert_eq!(skipped_in_log, want.skipped);
    for r in run.log.iter().filter(|r| r.stage != Stage::Target) {
        let pos = r.position.as_ref().and_then(Position::doc).unwrap();
        assert!(pos < to, "a skip past the cursor was logged: {r:?}");
        assert_eq!(r.group.as_deref(), Some("i"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_live_doc_is_delivered_refused_or_skipped_once() {
    let sink = Arc::new(Snk {
        jitter_ms: 5,
        refuse_every: Some(17),
        ..Snk::default()
    });
    let r = go(
        Src {
            max_doc: 500,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(None, None),
        Progress::default(),
        far(),
        opts(4),
        None,
    )
    .await;
    assert!(
        matches!(r.report.end, ItemEnd::Finished),
        "{:?}",
        r.report.end
    );
    assert_eq!(r.report.progress.cursor, Some(Position::Doc(499)));
    check_accounting(&r, &sink, 0, Some(17));
    let p = &r.report.progress;
    assert!(p.reasons["skipped:no_source"] > 0);
    assert!(p.reasons["skipped:no_route"] > 0);
    assert!(p.reasons["refused:document_too_large"] > 0);
    assert!(p.reasons["refused:mapper_parsing_exception"] > 0);
    // A target that overwrites: nothing recorded beyond the cursor, nothing counted twice.
    assert!(r.lease.checkpoints.iter().all(|p| p.sent_ahead == 0));
    assert_eq!(p.possible_duplicates(), 0);
    // Checkpoints never go backwards.
    let cursors: Vec<_> = r
        .lease
        .checkpoints
        .iter()
        .map(|p| p.cursor.clone())
        .collect();
    assert!(cursors.windows(2).all(|w| w[0] <= w[1]), "{cursors:?}");
}

#[tokio::test]
async fn resumes_just_after_the_cursor_adds_to_the_counts_and_stops_at_the_item_end() {
    let sink = Arc::new(Snk::default());
    let base = Progress {
        cursor: Some(Position::Doc(150)),
        docs: 40,
        refused: 2,
        skipped: 3,
        reasons: [("skipped:no_source".to_string(), 3)].into(),
        ..Progress::default()
    };
    let r = go(
        Src {
            max_doc: 500,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(Some(99), Some(200)),
        base,
        far(),
        opts(2),
        None,
    )
    .await;
    assert!(matches!(r.report.end, ItemEnd::Finished));
    let want = fates(151, 200, None);
    assert_eq!(received(&sink), want.delivered);
    let p = &r.report.progress;
    assert_eq!(p.cursor, Some(Position::Doc(199)));
    assert_eq!(p.docs, 40 + want.delivered.len() as u64);
    assert_eq!(p.skipped, 3 + want.skipped);
    assert_eq!(p.refused, 2 + want.refused);
}

#[tokio::test]
async fn an_empty_range_finishes_without_moving_the_cursor() {
    let sink = Arc::new(Snk::default());
    let r = go(
        Src {
            max_doc: 500,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(Some(599), None),
        Progress {
            cursor: Some(Position::Doc(599)),
            ..Progress::default()
        },
        far(),
        opts(2),
        None,
    )
    .await;
    assert!(matches!(r.report.end, ItemEnd::Finished));
    assert_eq!(r.report.progress.cursor, Some(Position::Doc(599)));
    assert!(sink.received.lock().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trigger_drains_in_flight_batches_and_the_cursor_covers_exactly_what_was_sent() {
    let sink = Arc::new(Snk {
        jitter_ms: 20,
        ..Snk::default()
    });
    let trigger = Instant::now() + Duration::from_millis(60);
    let r = go(
        Src {
            max_doc: 100_000,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(None, None),
        Progress::default(),
        trigger,
        opts(3),
        None,
    )
    .await;
    assert!(
        matches!(r.report.end, ItemEnd::Triggered),
        "{:?}",
        r.report.end
    );
    assert!(r.report.progress.cursor.is_some(), "some batches were sent");
    check_accounting(&r, &sink, 0, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pause_stop_and_shutdown_finish_in_flight_batches() {
    for (control, want) in [(Control::Pause, "Paused"), (Control::Stop, "Stopped")] {
        let sink = Arc::new(Snk {
            jitter_ms: 10,
            ..Snk::default()
        });
        let lease = Lease {
            controls: vec![Control::Run, Control::Run, control],
            ..Lease::default()
        };
        let r = go(
            Src {
                max_doc: 1_000_000,
                fail_at: None,
            },
            sink.clone(),
            lease,
            item(None, None),
            Progress::default(),
            far(),
            opts(4),
            None,
        )
        .await;
        assert_eq!(format!("{:?}", r.report.end), want);
        check_accounting(&r, &sink, 0, None);
    }
    // SIGTERM: the process's shutdown signal.
    let sink = Arc::new(Snk {
        jitter_ms: 10,
        ..Snk::default()
    });
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let _ = tx.send(true);
        tokio::time::sleep(Duration::from_secs(60)).await;
    });
    let r = go(
        Src {
            max_doc: 1_000_000,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(None, None),
        Progress::default(),
        far(),
        opts(4),
        Some(rx),
    )
    .await;
    assert!(
        matches!(r.report.end, ItemEnd::Stopped),
        "{:?}",
        r.report.end
    );
    check_accounting(&r, &sink, 0, None);
}

/// A target that never answers from document 70 on (`idless`: one that makes up ids),
/// and a lease that ends 100 ms in (its deadline 200 ms later): the run, the sink and the
/// deadline.
async fn lease_ends_with_batches_unanswered(idless: bool) -> (Run, Arc<Snk>, Instant) {
    let sink = Arc::new(Snk {
        idless,
        hang_from: Some(70),
        ..Snk::default()
    });
    let trigger = Instant::now() + Duration::from_millis(100);
    let deadline = trigger + Duration::from_millis(200);
    let r = go_until(
        Src {
            max_doc: 1_000_000,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(None, None),
        Progress::default(),
        (trigger, deadline),
        opts(4),
        None,
    )
    .await;
    (r, sink, deadline)
}

/// A target that never answers and no shutdown: the batches in flight are abandoned when
/// the lease ends, so no write for the item can land after another worker may hold it (or
/// after a paused fleet shows no lease), and the cursor stays before them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_still_in_flight_when_the_lease_ends_are_abandoned() {
    let (r, sink, deadline) = lease_ends_with_batches_unanswered(false).await;
    assert!(Instant::now() >= deadline, "ended before the lease did");
    assert!(
        matches!(r.report.end, ItemEnd::Triggered),
        "{:?}",
        r.report.end
    );
    let cursor = r.report.progress.cursor.as_ref().and_then(Position::doc);
    assert!(cursor.is_some_and(|c| (50..70).contains(&c)), "{cursor:?}");
    check_accounting(&r, &sink, 0, None);
}

/// A target that never answers: on shutdown the batches in flight are abandoned after the
/// grace period, and the item stops with the cursor before them (bounded, not hanging).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_abandons_batches_that_never_return_after_the_grace() {
    let sink = Arc::new(Snk {
        hang_from: Some(70),
        ..Snk::default()
    });
    let (tx, rx) = watch::channel(false);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let _ = tx.send(true);
        tokio::time::sleep(Duration::from_secs(60)).await;
    });
    let started = std::time::Instant::now();
    let r = go(
        Src {
            max_doc: 1_000_000,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(None, None),
        Progress::default(),
        far(),
        PipelineOptions {
            stop_grace: Duration::from_millis(300),
            ..opts(4)
        },
        Some(rx),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    assert!(
        matches!(r.report.end, ItemEnd::Stopped),
        "{:?}",
        r.report.end
    );
    // The cursor stays before the first batch that never returned.
    let cursor = r.report.progress.cursor.as_ref().and_then(Position::doc);
    assert!(cursor.is_some_and(|c| (50..70).contains(&c)), "{cursor:?}");
    check_accounting(&r, &sink, 0, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_error_stops_with_the_cursor_before_the_failed_batch() {
    for fatal in [false, true] {
        let sink = Arc::new(Snk {
            jitter_ms: 3,
            fail_id: Some(302),
            fatal,
            ..Snk::default()
        });
        let r = go(
            Src {
                max_doc: 1000,
                fail_at: None,
            },
            sink.clone(),
            Lease::default(),
            item(None, None),
            Progress::default(),
            far(),
            opts(4),
            None,
        )
        .await;
        let ItemEnd::Failed(e) = &r.report.end else {
            panic!("{:?}", r.report.end)
        };
        assert_eq!(
            e.severity,
            if fatal {
                Severity::Fatal
            } else {
                Severity::Item
            }
        );
        let cursor = r
            .report
            .progress
            .cursor
            .as_ref()
            .and_then(Position::doc)
            .unwrap();
        assert!(cursor < 302, "cursor {cursor} passed the failed doc");
        let got: BTreeSet<u64> = sink.received.lock().unwrap().iter().copied().collect();
        for id in fates(0, cursor + 1, None).delivered {
            assert!(
                got.contains(&id),
                "doc {id} before the cursor was not delivered"
            );
        }
    }
}

#[tokio::test]
async fn a_source_error_stops_with_the_cursor_before_the_bad_doc() {
    let sink = Arc::new(Snk::default());
    let r = go(
        Src {
            max_doc: 1000,
            fail_at: Some(500),
        },
        sink.clone(),
        Lease::default(),
        item(None, None),
        Progress::default(),
        far(),
        opts(2),
        None,
    )
    .await;
    let ItemEnd::Failed(e) = &r.report.end else {
        panic!("{:?}", r.report.end)
    };
    assert_eq!(e.severity, Severity::Item);
    assert!(e.message.contains("corrupt doc 500"), "{e}");
    let cursor = r
        .report
        .progress
        .cursor
        .as_ref()
        .and_then(Position::doc)
        .unwrap();
    assert!(cursor < 500);
    check_accounting(&r, &sink, 0, None);
}

/// Reads like [`Src`] up to `at`, then panics (a reader bug).
struct PanicSrc {
    at: u64,
}

impl Source for PanicSrc {
    fn identity(&self) -> BTreeMap<String, String> {
        BTreeMap::new()
    }
    fn plan(&self) -> Result<Plan, SourceError> {
        Ok(Plan::default())
    }
    fn read(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        let at = self.at;
        let mut before = |read: Read| {
            if read.position().doc() == Some(at) {
                panic!("reader bug at doc {at}");
            }
            emit(read)
        };
        Src {
            max_doc: 1000,
            fail_at: None,
        }
        .read(item, after, &mut before)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_reader_fails_the_item_instead_of_finishing_it() {
    let sink = Arc::new(Snk::default());
    let r = go(
        PanicSrc { at: 500 },
        sink.clone(),
        Lease::default(),
        item(None, None),
        Progress::default(),
        far(),
        opts(2),
        None,
    )
    .await;
    let ItemEnd::Failed(e) = &r.report.end else {
        panic!(
            "a reader that panicked ended the item as {:?}",
            r.report.end
        )
    };
    assert_eq!(e.severity, Severity::Item);
    assert!(e.message.contains("reader bug at doc 500"), "{e}");
    let cursor = r
        .report
        .progress
        .cursor
        .as_ref()
        .and_then(Position::doc)
        .unwrap();
    assert!(cursor < 500, "{cursor}");
    assert!(received(&sink).iter().all(|d| *d < 500));
}

fn heartbeat_lease(lease_ms: u64, renew_fails: Option<fn() -> LeaseError>) -> Lease {
    Lease {
        renew_every: Some(Duration::from_millis(lease_ms / 4)),
        lease_len: Duration::from_millis(lease_ms),
        renew_fails,
        ..Lease::default()
    }
}

/// With a heartbeat, each renewal moves the lease's end: the item runs on, past the end
/// of its first lease, until its trigger.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewals_keep_the_item_going_past_its_first_lease() {
    let sink = Arc::new(Snk::default());
    let start = Instant::now();
    let trigger = start + Duration::from_millis(800);
    let first_deadline = start + Duration::from_millis(200);
    let r = go_until(
        Src {
            max_doc: 100_000_000,
            fail_at: None,
        },
        sink.clone(),
        heartbeat_lease(200, None),
        item(None, None),
        Progress::default(),
        (trigger, first_deadline),
        opts(4),
        None,
    )
    .await;
    assert!(Instant::now() >= trigger, "ended before the trigger");
    assert!(
        matches!(r.report.end, ItemEnd::Triggered),
        "{:?}",
        r.report.end
    );
    assert!(r.lease.renewals >= 6, "{} renewals", r.lease.renewals);
    check_accounting(&r, &sink, 0, None);
}

/// A store that does not answer renewals: the worker stops at the lease's end (no new
/// batch after it, those in flight abandoned), whatever the trigger says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_that_cannot_be_renewed_stops_the_item_at_its_end() {
    let sink = Arc::new(Snk {
        hang_from: Some(5_000),
        ..Snk::default()
    });
    let start = Instant::now();
    let deadline = start + Duration::from_millis(300);
    let r = go_until(
        Src {
            max_doc: 100_000_000,
            fail_at: None,
        },
        sink.clone(),
        heartbeat_lease(300, Some(|| LeaseError::Unavailable("store down".into()))),
        item(None, None),
        Progress::default(),
        (far(), deadline),
        opts(4),
        None,
    )
    .await;
    let ended = Instant::now();
    assert!(ended >= deadline, "ended before the lease did");
    assert!(
        ended < deadline + Duration::from_millis(250),
        "still running {:?} after the lease ended",
        ended - deadline
    );
    assert!(
        matches!(r.report.end, ItemEnd::Triggered),
        "{:?}",
        r.report.end
    );
    check_accounting(&r, &sink, 0, None);
}

/// A renewal that finds another holder ends the item at once: batches in flight are
/// abandoned without waiting for the lease's end.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_renewal_that_finds_another_holder_abandons_the_item_at_once() {
    let sink = Arc::new(Snk {
        hang_from: Some(70),
        ..Snk::default()
    });
    let start = Instant::now();
    let r = go_until(
        Src {
            max_doc: 1_000_000,
            fail_at: None,
        },
        sink.clone(),
        heartbeat_lease(400, Some(|| LeaseError::Lost("taken by w2".into()))),
        item(None, None),
        Progress::default(),
        (far(), far()),
        opts(4),
        None,
    )
    .await;
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "took {:?}",
        start.elapsed()
    );
    assert!(
        matches!(r.report.end, ItemEnd::LeaseLost(_)),
        "{:?}",
        r.report.end
    );
    check_accounting(&r, &sink, 0, None);
}

/// A reshaping transform: ids divisible by 5 are filtered (reason `five`), even ids explode
/// into three outputs `10i+1..=10i+3`, odd ones become `10i`.
struct Fan;
impl Transform for Fan {
    fn apply(&self, _: &mut Document) -> Result<(), Unroutable> {
        unreachable!("the pipeline calls apply_all when a transform reshapes")
    }
    fn reshapes(&self) -> bool {
        true
    }
    fn apply_all(&self, doc: Document, out: &mut Vec<Document>) -> Result<Shaped, Box<Skip>> {
        let i: u64 = doc.id.parse().unwrap();
        if i.is_multiple_of(5) {
            return Ok(Shaped::Filtered("five".into()));
        }
        for id in fan_ids(i) {
            out.push(Document {
                id: id.to_string(),
                index: "out".into(),
                ..doc.clone()
            });
        }
        Ok(Shaped::Docs)
    }
}

fn fan_ids(i: u64) -> Vec<u64> {
    if i.is_multiple_of(2) {
        vec![10 * i + 1, 10 * i + 2, 10 * i + 3]
    } else {
        vec![10 * i]
    }
}

/// [`Fan`] run a batch at a time (up to 6 inputs, cut by the source's skips), failing
/// inputs divisible by 17 (`transform_error`); the sizes of the batches it was given.
#[derive(Default)]
struct BatchFan {
    batches: Mutex<Vec<usize>>,
}
impl Transform for BatchFan {
    fn apply(&self, _: &mut Document) -> Result<(), Unroutable> {
        unreachable!("the pipeline calls apply_batch when a transform batches")
    }
    fn reshapes(&self) -> bool {
        true
    }
    fn batch_size(&self) -> usize {
        6
    }
    fn apply_all(&self, _: Document, _: &mut Vec<Document>) -> Result<Shaped, Box<Skip>> {
        unreachable!("the pipeline calls apply_batch when a transform batches")
    }
    fn apply_batch(&self, docs: Vec<Document>) -> Vec<Batched> {
        self.batches.lock().unwrap().push(docs.len());
        docs.into_iter()
            .map(|doc| {
                let mut outputs = Vec::new();
                let outcome = if doc.id.parse::<u64>().unwrap().is_multiple_of(17) {
                    Err(Box::new(Skip::of(
                        doc,
                        "transform_error",
                        "seventeen".into(),
                    )))
                } else {
                    Fan.apply_all(doc, &mut outputs)
                };
                Batched { outcome, outputs }
            })
            .collect()
    }
}

/// What [`Fan`] makes of the live inputs in `from..to`: outputs delivered, refused by the
/// writer (id divisible by 13), inputs filtered, inputs skipped by the source (and, with
/// `fails` as [`BatchFan`] does, by the transform).
fn fan_fates(from: u64, to: u64) -> (Vec<u64>, u64, u64, u64) {
    fan_fates_of(from, to, false)
}

fn fan_fates_of(from: u64, to: u64, fails: bool) -> (Vec<u64>, u64, u64, u64) {
    let (mut delivered, mut refused, mut filtered, mut skipped) = (Vec::new(), 0, 0, 0);
    for i in (from..to).filter(|i| is_live(*i)) {
        if i.is_multiple_of(7) || (fails && i.is_multiple_of(17)) {
            skipped += 1;
        } else if i.is_multiple_of(5) {
            filtered += 1;
        } else {
            for id in fan_ids(i) {
                if id.is_multiple_of(13) {
                    refused += 1;
                } else {
                    delivered.push(id);
                }
            }
        }
    }
    delivered.sort();
    (delivered, refused, filtered, skipped)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reshaping_transform_filters_and_explodes_with_exact_counts() {
    let sink = Arc::new(Snk {
        jitter_ms: 3,
        ..Snk::default()
    });
    let src = Src {
        max_doc: 400,
        fail_at: None,
    };
    let r = go_with(
        src,
        sink.clone(),
        Lease::default(),
        item(None, None),
        Progress::default(),
        (far(), far()),
        opts(3),
        None,
        Some(Arc::new(Fan)),
    )
    .await;
    assert!(
        matches!(r.report.end, ItemEnd::Finished),
        "{:?}",
        r.report.end
    );
    let (delivered, refused, filtered, skipped) = fan_fates(0, 400);
    assert_eq!(received(&sink), delivered);
    let p = &r.report.progress;
    // 399 is a multiple of 3: not live; 398 is the last input.
    assert_eq!(p.cursor, Some(Position::Doc(398)));
    assert_eq!(p.docs, delivered.len() as u64);
    assert_eq!((p.refused, p.skipped), (refused, skipped));
    assert_eq!(p.reasons["filtered:five"], filtered);
    assert!(filtered > 0 && refused > 0);
    // Filtered documents are counted, not failures: no failure record for them.
    assert_eq!(r.log.len() as u64, refused + skipped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batching_transform_filters_explodes_and_fails_with_exact_counts() {
    let sink = Arc::new(Snk {
        jitter_ms: 3,
        ..Snk::default()
    });
    let fan = Arc::new(BatchFan::default());
    let r = go_with(
        Src {
            max_doc: 400,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(None, None),
        Progress::default(),
        (far(), far()),
        opts(3),
        None,
        Some(fan.clone()),
    )
    .await;
    assert!(
        matches!(r.report.end, ItemEnd::Finished),
        "{:?}",
        r.report.end
    );
    let (delivered, refused, filtered, skipped) = fan_fates_of(0, 400, true);
    assert_eq!(received(&sink), delivered);
    let p = &r.report.progress;
    assert_eq!(p.cursor, Some(Position::Doc(398)));
    assert_eq!(p.docs, delivered.len() as u64);
    assert_eq!((p.refused, p.skipped), (refused, skipped));
    assert_eq!(p.reasons["filtered:five"], filtered);
    assert_eq!(
        p.reasons["skipped:transform_error"], 14,
        "multiples of 17 but those of 3 or 7"
    );
    assert_eq!(r.log.len() as u64, refused + skipped);
    // Whole batches, cut short by the source's skips and the item's end.
    let batches = fan.batches.lock().unwrap().clone();
    assert!(batches.iter().all(|n| (1..=6).contains(n)), "{batches:?}");
    assert!(
        batches.iter().filter(|n| **n == 6).count() > 10,
        "{batches:?}"
    );
    let inputs = (0..400u64).filter(|i| is_live(*i) && !i.is_multiple_of(7));
    assert_eq!(batches.iter().sum::<usize>(), inputs.count());
}

/// A batching transform that loses the last input of the batch holding document 100.
struct ShortBatch;
impl Transform for ShortBatch {
    fn apply(&self, _: &mut Document) -> Result<(), Unroutable> {
        unreachable!("the pipeline calls apply_batch when a transform batches")
    }
    fn reshapes(&self) -> bool {
        true
    }
    fn batch_size(&self) -> usize {
        6
    }
    fn apply_batch(&self, docs: Vec<Document>) -> Vec<Batched> {
        let short = docs.iter().any(|d| d.id == "100");
        let mut answers: Vec<Batched> = docs
            .into_iter()
            .map(|doc| Batched {
                outcome: Ok(Shaped::Docs),
                outputs: vec![doc],
            })
            .collect();
        if short {
            answers.pop();
        }
        answers
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_not_answered_input_by_input_fails_the_item_before_it() {
    let sink = Arc::new(Snk::default());
    let r = go_with(
        Src {
            max_doc: 400,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(None, None),
        Progress::default(),
        (far(), far()),
        opts(3),
        None,
        Some(Arc::new(ShortBatch)),
    )
    .await;
    let ItemEnd::Failed(e) = &r.report.end else {
        panic!("{:?}", r.report.end)
    };
    assert!(e.message.contains("answered 5 of a batch of 6"), "{e}");
    // Nothing of that batch (nor after it) is taken as done.
    let cursor = r.report.progress.cursor.as_ref().and_then(Position::doc);
    assert!(cursor.is_none_or(|c| c < 100), "{cursor:?}");
    assert!(received(&sink).iter().all(|id| *id < 100));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outputs_of_one_input_are_acknowledged_together_and_resume_loses_none() {
    resume_loses_none(|| Arc::new(Fan), false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batching_transform_stopped_anywhere_resumes_losing_none() {
    resume_loses_none(|| Arc::new(BatchFan::default()), true).await;
}

async fn resume_loses_none(transform: fn() -> Arc<dyn Transform>, fails: bool) {
    // Batches of 7 cut through the three outputs of even inputs; stop at a random time,
    // then resume from the cursor: every output is sent, and the cursor never covers an
    // input whose outputs were not all acknowledged.
    for round in 0..4u64 {
        let sink = Arc::new(Snk {
            jitter_ms: 10,
            ..Snk::default()
        });
        let trigger = Instant::now() + Duration::from_millis(20 + 15 * round);
        let r = go_with(
            Src {
                max_doc: 50_000,
                fail_at: None,
            },
            sink.clone(),
            Lease::default(),
            item(None, Some(3000)),
            Progress::default(),
            (trigger, far()),
            opts(3),
            None,
            Some(transform()),
        )
        .await;
        let cursor = r.report.progress.cursor.clone();
        let to = cursor.as_ref().and_then(Position::doc).map_or(0, |c| c + 1);
        let (covered, _, _, _) = fan_fates_of(0, to, fails);
        let got = received(&sink);
        let got_set: BTreeSet<u64> = got.iter().copied().collect();
        for id in &covered {
            assert!(
                got_set.contains(id),
                "round {round}: output {id} covered by the cursor but not delivered"
            );
        }
        // Anything beyond is the first outputs of the single input after the cursor.
        let extra: BTreeSet<u64> = got_set
            .iter()
            .filter(|id| **id / 10 >= to)
            .map(|id| *id / 10)
            .collect();
        assert!(
            extra.len() <= 1,
            "round {round}: outputs past the cursor from {extra:?}"
        );
        assert_eq!(
            r.report.progress.docs,
            got.len() as u64,
            "every acknowledged output is counted"
        );
        let p = &r.report.progress;
        let filtered: u64 = p
            .reasons
            .iter()
            .filter(|(k, _)| k.starts_with("filtered:"))
            .map(|(_, n)| n)
            .sum();
        assert_eq!(
            p.covered,
            p.docs + p.refused + p.skipped + filtered,
            "round {round}: what the item covers moves with its counts, even cut inside an input"
        );
        // Resume from the cursor: the rest arrives.
        let r2 = go_with(
            Src {
                max_doc: 50_000,
                fail_at: None,
            },
            sink.clone(),
            Lease::default(),
            item(None, Some(3000)),
            r.report.progress.clone(),
            (far(), far()),
            opts(3),
            None,
            Some(transform()),
        )
        .await;
        assert!(matches!(r2.report.end, ItemEnd::Finished));
        let all: BTreeSet<u64> = received(&sink).into_iter().collect();
        let (want, _, _, _) = fan_fates_of(0, 3000, fails);
        assert_eq!(
            all,
            want.into_iter().collect::<BTreeSet<u64>>(),
            "round {round}"
        );
    }
}

/// The item's equation is checked where the item ends, and per batch where the sink
/// answers: a loss anywhere fails the item, never a run that ends well.
fn accounting_failure(end: &ItemEnd) -> &PipelineError {
    match end {
        ItemEnd::Failed(e) if e.stage == "accounting" => {
            assert_eq!(e.severity, Severity::Item, "{e}");
            e
        }
        other => panic!("expected an accounting failure, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sink_that_loses_documents_fails_the_item_before_the_cursor_passes_them() {
    // 1000 % 3 != 0 (live), not a multiple of 7, 11 or 13: framed and sent; lost.
    let sink = Arc::new(Snk {
        jitter_ms: 3,
        lose_every: Some(1000),
        ..Snk::default()
    });
    let r = go(
        Src {
            max_doc: 3000,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(None, None),
        Progress::default(),
        far(),
        opts(3),
        None,
    )
    .await;
    let e = accounting_failure(&r.report.end);
    assert!(e.message.contains("item i__0__0"), "{e}");
    assert!(e.message.contains("1 unaccounted for"), "{e}");
    // The batch holding 1000 is never acknowledged: the cursor stays before it, and the
    // counts hold exactly what reached the target up to there.
    let cursor = r.report.progress.cursor.as_ref().and_then(Position::doc);
    assert!(cursor.is_some_and(|c| c < 1000), "{cursor:?}");
    let to = cursor.unwrap() + 1;
    let want = fates(0, to, None);
    let got: Vec<u64> = received(&sink).into_iter().filter(|d| *d < to).collect();
    assert_eq!(got, want.delivered);
    let p = &r.report.progress;
    assert_eq!(
        (p.docs, p.refused, p.skipped),
        (want.delivered.len() as u64, want.refused, want.skipped)
    );
}

#[tokio::test]
async fn a_sink_that_claims_more_than_it_was_given_fails_the_item() {
    struct Boasting(Snk);
    impl Sink for Boasting {
        type Writer = W;
        fn writer(&self) -> W {
            self.0.writer()
        }
        async fn send(&self, docs: Vec<u64>) -> Result<Delivered, SinkError> {
            let mut d = self.0.send(docs).await?;
            d.delivered += 1;
            Ok(d)
        }
        fn identity(&self) -> String {
            "boasting".into()
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let (_tx, rx) = watch::channel(false);
    let shared = WorkerShared {
        metrics: Metrics::new(),
        failures: Arc::new(FailureLog::open(dir.path().join("f.jsonl")).unwrap()),
        budget: Budget::new(1 << 20),
        shutdown: rx,
        fleet: None,
    };
    let report = run_item(
        Arc::new(Src {
            max_doc: 100,
            fail_at: None,
        }),
        Arc::new(Tr),
        Arc::new(Boasting(Snk::default())),
        &mut Lease::default(),
        ItemPlan {
            item: item(None, None),
            base: Progress::default(),
            trigger: far(),
            deadline: far(),
        },
        &opts(1),
        &shared,
    )
    .await;
    let e = accounting_failure(&report.end);
    assert!(e.message.contains("1 too many"), "{e}");
    assert_eq!(report.progress, Progress::default(), "nothing is counted");
}

/// A document program that yields nothing for ids divisible by 5 without saying it
/// filtered them (a broken transform): those inputs vanish.
struct Hole;
impl Transform for Hole {
    fn apply(&self, _: &mut Document) -> Result<(), Unroutable> {
        unreachable!("the pipeline calls apply_all when a transform reshapes")
    }
    fn reshapes(&self) -> bool {
        true
    }
    fn apply_all(&self, mut doc: Document, out: &mut Vec<Document>) -> Result<Shaped, Box<Skip>> {
        let i: u64 = doc.id.parse().unwrap();
        if !i.is_multiple_of(5) {
            doc.index = "out".into();
            out.push(doc);
        }
        Ok(Shaped::Docs)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn inputs_that_vanish_in_the_transform_fail_the_item_at_its_end_and_rewind_it() {
    let sink = Arc::new(Snk::default());
    let base = Progress {
        cursor: Some(Position::Doc(99)),
        docs: 40,
        skipped: 3,
        reasons: [("skipped:no_source".to_string(), 3)].into(),
        ..Progress::default()
    };
    let r = go_with(
        Src {
            max_doc: 400,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(None, None),
        base.clone(),
        (far(), far()),
        opts(2),
        None,
        Some(Arc::new(Hole)),
    )
    .await;
    let e = accounting_failure(&r.report.end);
    // Live inputs in 100..400 that are multiples of 5 (and not skips) vanish.
    let inputs = (100..400u64).filter(|i| is_live(*i)).count();
    let skipped = (100..400u64)
        .filter(|i| is_live(*i) && i.is_multiple_of(7))
        .count();
    let sent = |i: &u64| is_live(*i) && !i.is_multiple_of(7);
    let lost = (100..400u64)
        .filter(|i| sent(i) && i.is_multiple_of(5))
        .count();
    assert!(
        e.message
            .contains(&format!("handed over {inputs} documents and skips")),
        "{e}"
    );
    let refused = (100..400u64)
        .filter(|i| sent(i) && !i.is_multiple_of(5) && i.is_multiple_of(13))
        .count();
    let delivered = inputs - lost - refused - skipped;
    assert!(
        e.message.contains(&format!(
            "but {delivered} were delivered, {refused} refused, {skipped} skipped and 0 filtered ({})",
            inputs - lost
        )),
        "{e}"
    );
    // The retry starts where this run did: it does not find the item done.
    assert_eq!(r.report.progress, base);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explode_and_filter_keep_the_equation_exact_across_a_resume() {
    // Every run that reaches the item's end passes the check, whatever the cut: the
    // outputs of an input split over two batches, a trigger between them, a resume.
    let sink = Arc::new(Snk {
        jitter_ms: 2,
        ..Snk::default()
    });
    let trigger = Instant::now() + Duration::from_millis(30);
    let r = go_with(
        Src {
            max_doc: 50_000,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(None, Some(2000)),
        Progress::default(),
        (trigger, far()),
        opts(3),
        None,
        Some(Arc::new(Fan)),
    )
    .await;
    assert!(
        matches!(r.report.end, ItemEnd::Triggered | ItemEnd::Finished),
        "{:?}",
        r.report.end
    );
    let r2 = go_with(
        Src {
            max_doc: 50_000,
            fail_at: None,
        },
        sink.clone(),
        Lease::default(),
        item(None, Some(2000)),
        r.report.progress.clone(),
        (far(), far()),
        opts(3),
        None,
        Some(Arc::new(Fan)),
    )
    .await;
    assert!(
        matches!(r2.report.end, ItemEnd::Finished),
        "{:?}",
        r2.report.end
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_whose_coverage_check_fails_takes_nothing_of_its_read_as_done() {
    // The source reads its whole range, then finds that what it gave does not add up to
    // what the range holds: the item fails, and the retry starts where this read did
    // (were the cursor left at the end, the retry would find nothing left and finish).
    struct Uncovered(Src);
    impl Source for Uncovered {
        fn identity(&self) -> BTreeMap<String, String> {
            BTreeMap::new()
        }
        fn plan(&self) -> Result<Plan, SourceError> {
            Ok(Plan::default())
        }
        fn read(
            &self,
            item: &WorkItem,
            after: &Cursor,
            emit: &mut dyn FnMut(Read) -> bool,
        ) -> Result<(), SourceError> {
            self.0.read(item, after, emit)?;
            Err(SourceError::coverage("the range holds one more document"))
        }
    }
    let sink = Arc::new(Snk::default());
    let base = Progress {
        cursor: Some(Position::Doc(49)),
        docs: 20,
        ..Progress::default()
    };
    let r = go(
        Uncovered(Src {
            max_doc: 5000,
            fail_at: None,
        }),
        sink.clone(),
        Lease::default(),
        item(None, None),
        base.clone(),
        far(),
        opts(2),
        None,
    )
    .await;
    match &r.report.end {
        ItemEnd::Failed(e) => {
            assert_eq!(e.severity, Severity::Item);
            assert!(e.message.contains("one more document"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(
        !received(&sink).is_empty(),
        "batches went out before the end"
    );
    assert_eq!(r.report.progress, base);
}

/// Runs the item until `after`, then drops the run as a SIGKILL would: the lease's
/// records are what the store holds.
async fn killed_after(
    sink: Arc<Snk>,
    lease: &mut Lease,
    base: Progress,
    o: PipelineOptions,
    after: Duration,
) {
    let dir = tempfile::tempdir().unwrap();
    let (_tx, rx) = watch::channel(false);
    let shared = WorkerShared {
        metrics: Metrics::new(),
        failures: Arc::new(FailureLog::open(dir.path().join("f.jsonl")).unwrap()),
        budget: Budget::new(1 << 20),
        shutdown: rx,
        fleet: None,
    };
    let plan = ItemPlan {
        item: item(None, None),
        base,
        trigger: far(),
        deadline: far(),
    };
    let run = run_item(
        Arc::new(Src {
            max_doc: 500,
            fail_at: None,
        }),
        Arc::new(Tr),
        sink,
        lease,
        plan,
        &o,
        &shared,
    );
    assert!(
        tokio::time::timeout(after, run).await.is_err(),
        "the run ended before it was killed"
    );
}

/// An id-less target: before a batch goes out, the item records how many documents may be
/// beyond its cursor; a worker killed with batches stored but unacknowledged leaves them
/// recorded, and the worker that goes on from the cursor counts them as possible
/// duplicates — at least the duplicates the target holds, at most what was in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idless_target_counts_what_a_killed_worker_had_in_flight_as_possible_duplicates() {
    let records = Arc::new(Mutex::new(Vec::new()));
    let first = Arc::new(Snk {
        idless: true,
        hang_from: Some(70),
        store_then_hang: true,
        records: Some(records.clone()),
        ..Snk::default()
    });
    let mut lease = Lease {
        shared: Some(records.clone()),
        ..Lease::default()
    };
    // Periodic checkpoints far apart: the records are those written before sending.
    let o = PipelineOptions {
        checkpoint_every: Duration::from_secs(3600),
        ..opts(3)
    };
    killed_after(
        first.clone(),
        &mut lease,
        Progress::default(),
        o.clone(),
        Duration::from_millis(500),
    )
    .await;
    assert_eq!(
        first.unrecorded.lock().unwrap().clone(),
        Vec::<String>::new()
    );
    let stored = lease
        .checkpoints
        .last()
        .cloned()
        .expect("records before sending");
    let cursor = stored.cursor.as_ref().and_then(Position::doc).unwrap();
    assert!((50..70).contains(&cursor), "{cursor}");
    // Three batches in flight, every one stored on the target, none acknowledged.
    let in_flight: Vec<u64> = first
        .sent
        .lock()
        .unwrap()
        .iter()
        .copied()
        .filter(|d| *d > cursor)
        .collect();
    assert_eq!(in_flight.len(), 3 * 7, "{in_flight:?}");
    assert_eq!(stored.sent_ahead, in_flight.len() as u64);
    assert_eq!(stored.possible_duplicates(), 0);

    // The next holder goes on from the record.
    let second = Arc::new(Snk {
        idless: true,
        ..Snk::default()
    });
    let r = go(
        Src {
            max_doc: 500,
            fail_at: None,
        },
        second.clone(),
        Lease::default(),
        item(None, None),
        stored.clone(),
        far(),
        o,
        None,
    )
    .await;
    assert!(
        matches!(r.report.end, ItemEnd::Finished),
        "{:?}",
        r.report.end
    );
    let p = &r.report.progress;
    assert_eq!(p.possible_duplicates(), stored.sent_ahead);
    assert_eq!(p.sent_ahead, 0, "all acknowledged");
    // Said in the store before anything else is sent, the mark cleared.
    let said = &r.lease.checkpoints[0];
    assert_eq!(
        (said.possible_duplicates(), said.sent_ahead, &said.cursor),
        (stored.sent_ahead, 0, &stored.cursor)
    );
    // The duplicates on the target: stored by both; exactly the batches in flight here.
    let before: BTreeSet<u64> = received(&first).into_iter().collect();
    let mut twice: Vec<u64> = received(&second)
        .into_iter()
        .filter(|d| before.contains(d))
        .collect();
    assert!(!twice.is_empty());
    assert!(twice.len() as u64 <= p.possible_duplicates());
    // The same documents; the batches in flight may have been sent in another order.
    twice.sort_unstable();
    let mut in_flight = in_flight;
    in_flight.sort_unstable();
    assert_eq!(twice, in_flight);
    // Nothing lost: the two runs together hold every live document that is delivered.
    let mut all: BTreeSet<u64> = before;
    all.extend(received(&second));
    assert_eq!(
        all.into_iter().collect::<Vec<_>>(),
        fates(0, 500, None).delivered
    );
}

/// An id-less target whose batches never come back before the lease ends: they are
/// abandoned, and the successor (a new item from the cursor) sends them again, so they
/// are counted on this item at the hand-off, the mark cleared.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_abandoned_at_the_lease_end_count_as_possible_duplicates_for_the_successor() {
    let (r, sink, _) = lease_ends_with_batches_unanswered(true).await;
    assert!(
        matches!(r.report.end, ItemEnd::Triggered),
        "{:?}",
        r.report.end
    );
    let p = &r.report.progress;
    let cursor = p.cursor.as_ref().and_then(Position::doc).unwrap();
    let beyond = sink
        .sent
        .lock()
        .unwrap()
        .iter()
        .filter(|d| **d > cursor)
        .count() as u64;
    assert_eq!(beyond, 4 * 7, "four batches abandoned");
    assert_eq!((p.sent_ahead, p.possible_duplicates()), (0, beyond));
    // The last record before the end said they were out.
    assert!(r.lease.checkpoints.iter().any(|c| c.sent_ahead == beyond));
}
