//! One work item through the pipeline: the source is read on a blocking thread and cut
//! into batches, a bounded channel carries them to the sender, which keeps up to K bulk
//! requests in flight. Acknowledged batches move the low-water mark; the mark is
//! checkpointed periodically; the control record and the early trigger are looked at
//! between batches, and in-flight batches always finish before the item is left.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::batcher::{Batch, BatchLimits, Batcher};
use crate::cursor::{Acked, LowWaterMark, Progress};
use crate::metrics::Metrics;
use crate::ports::{DocRange, DocumentSink, DocumentSource, SinkError, SinkOutcome, SourceError};

/// What the fleet's control record asks of every worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Control {
    #[default]
    Run,
    Pause,
    Stop,
}

/// The lease-holder side of an item while the pipeline runs it.
pub trait ItemLease: Send {
    /// Persists progress into the item, guarded by lease holder.
    fn checkpoint(
        &mut self,
        progress: Progress,
    ) -> impl Future<Output = Result<(), LeaseError>> + Send;
    /// Reads the fleet's control record.
    fn control(&mut self) -> impl Future<Output = Result<Control, LeaseError>> + Send;
}

#[derive(Debug, thiserror::Error)]
pub enum LeaseError {
    /// Another worker holds the item now: stop touching it.
    #[error("lease lost: {0}")]
    Lost(String),
    /// The store could not be reached or answered with an error; try again later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
}

/// Tuning of the pipeline.
#[derive(Debug, Clone)]
pub struct PipelineOptions {
    pub batch: BatchLimits,
    /// Bulk requests in flight.
    pub in_flight: usize,
    /// Batches read ahead of the sender.
    pub read_ahead: usize,
    pub checkpoint_every: Duration,
    pub control_every: Duration,
}

impl Default for PipelineOptions {
    fn default() -> Self {
        PipelineOptions {
            batch: BatchLimits::default(),
            in_flight: 4,
            read_ahead: 2,
            checkpoint_every: Duration::from_secs(10),
            control_every: Duration::from_secs(1),
        }
    }
}

/// Why the pipeline left an item.
#[derive(Debug)]
pub enum ItemEnd {
    /// Every document of the range is acknowledged or failed.
    Finished,
    /// The early trigger fired: hand the rest to a successor.
    Triggered,
    Paused,
    Stopped,
    /// The lease was taken over; the item is someone else's now.
    LeaseLost(String),
    /// The source or the sink failed; the cursor says how far it got.
    Failed(PipelineError),
}

#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    #[error("reading documents: {0}")]
    Source(#[from] SourceError),
    #[error("sending documents: {0}")]
    Sink(#[from] SinkError),
    #[error("internal error: {0}")]
    Internal(String),
}

/// How an item run ended and how far it got.
#[derive(Debug)]
pub struct ItemReport {
    pub end: ItemEnd,
    pub progress: Progress,
    /// Time from the start until the first batch was ready (shard opening and first reads):
    /// the "setup" share of a lease.
    pub first_batch_after: Option<Duration>,
}

type Sent = (u64, u64, u64, Result<SinkOutcome, SinkError>);

/// The part of an item to run now.
#[derive(Debug, Clone)]
pub struct ItemPlan {
    pub range: DocRange,
    /// The last doc id already acknowledged (the item's checkpoint); reading resumes after it.
    pub resume_cursor: Option<u64>,
    /// The early trigger: no batch is started after this instant.
    pub trigger: Instant,
}

/// Runs the plan's range from just after its resume cursor until it is finished, the
/// trigger instant passes, the control record says PAUSE or STOP, or an error happens.
pub async fn run_item<S, K, L>(
    source: Arc<S>,
    sink: Arc<K>,
    lease: &mut L,
    plan: ItemPlan,
    opts: &PipelineOptions,
    metrics: &Metrics,
) -> ItemReport
where
    S: DocumentSource,
    K: DocumentSink<Doc = S::Doc>,
    L: ItemLease,
{
    let ItemPlan {
        range: mut read_range,
        resume_cursor,
        trigger,
    } = plan;
    if let Some(c) = resume_cursor {
        read_range.from = read_range.from.max(c.saturating_add(1));
    }
    let (tx, mut rx) = mpsc::channel::<Result<Batch<S::Doc>, SourceError>>(opts.read_ahead.max(1));
    let halt = Arc::new(AtomicBool::new(false));
    let reader = {
        let halt = halt.clone();
        let limits = opts.batch;
        tokio::task::spawn_blocking(move || read_batches(&*source, &read_range, limits, &tx, &halt))
    };

    let mut mark = LowWaterMark::new(resume_cursor);
    let mut in_flight: JoinSet<Sent> = JoinSet::new();
    let mut next_seq = 0u64;
    let mut end: Option<ItemEnd> = None;
    let mut source_done = false;
    let mut last_checkpointed = mark.progress();
    let mut last_checkpoint_at = Instant::now();
    let mut ticker = tokio::time::interval(opts.control_every.min(opts.checkpoint_every));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    ticker.reset();
    let in_flight_max = opts.in_flight.max(1);
    let started = Instant::now();
    let mut first_batch_after = None;

    loop {
        if end.is_none() && source_done && in_flight.is_empty() {
            end = Some(ItemEnd::Finished);
        }
        if end.is_some() && in_flight.is_empty() {
            break;
        }
        let take = end.is_none() && !source_done && in_flight.len() < in_flight_max;
        tokio::select! {
            biased;
            Some(joined) = in_flight.join_next(), if !in_flight.is_empty() => {
                metrics.in_flight_requests.fetch_sub(1, Ordering::Relaxed);
                match joined {
                    Ok((seq, last_doc, bytes, Ok(outcome))) => {
                        metrics.docs_sent.fetch_add(outcome.indexed, Ordering::Relaxed);
                        metrics.docs_failed.fetch_add(outcome.failed, Ordering::Relaxed);
                        metrics.bytes_sent.fetch_add(bytes, Ordering::Relaxed);
                        metrics.source_bytes_sent.fetch_add(outcome.source_bytes, Ordering::Relaxed);
                        metrics.batches_sent.fetch_add(1, Ordering::Relaxed);
                        mark.ack(seq, Acked {
                            last_doc,
                            docs: outcome.indexed + outcome.failed,
                            bytes,
                            failed: outcome.failed,
                        });
                    }
                    Ok((_, _, _, Err(e))) => end = Some(ItemEnd::Failed(PipelineError::Sink(e))),
                    Err(join) => end = Some(ItemEnd::Failed(PipelineError::Internal(join.to_string()))),
                }
            }
            msg = rx.recv(), if take => match msg {
                None => source_done = true,
                Some(Err(e)) => end = Some(ItemEnd::Failed(PipelineError::Source(e))),
                Some(Ok(batch)) => {
                    first_batch_after.get_or_insert_with(|| started.elapsed());
                    if Instant::now() >= trigger {
                        // The batch is not sent; the cursor stays before it.
                        end = Some(ItemEnd::Triggered);
                    } else {
                        let seq = next_seq;
                        next_seq += 1;
                        let sink = sink.clone();
                        metrics.in_flight_requests.fetch_add(1, Ordering::Relaxed);
                        in_flight.spawn(async move {
                            let Batch { last_doc, bytes, docs, .. } = batch;
                            (seq, last_doc, bytes, sink.send(docs).await)
                        });
                    }
                }
            },
            _ = tokio::time::sleep_until(trigger), if end.is_none() => {
                end = Some(ItemEnd::Triggered);
            }
            _ = ticker.tick() => {
                if end.is_none() {
                    match lease.control().await {
                        Ok(Control::Run) => {}
                        Ok(Control::Pause) => end = Some(ItemEnd::Paused),
                        Ok(Control::Stop) => end = Some(ItemEnd::Stopped),
                        Err(LeaseError::Lost(e)) => end = Some(ItemEnd::LeaseLost(e)),
                        Err(e) => tracing::warn!("could not read the control record: {e}"),
                    }
                }
                let progress = mark.progress();
                if last_checkpoint_at.elapsed() >= opts.checkpoint_every && progress != last_checkpointed {
                    match lease.checkpoint(progress).await {
                        Ok(()) => {
                            last_checkpointed = progress;
                            last_checkpoint_at = Instant::now();
                        }
                        Err(LeaseError::Lost(e)) => end = Some(ItemEnd::LeaseLost(e)),
                        Err(e) => tracing::warn!("checkpoint failed, will retry: {e}"),
                    }
                }
            }
        }
    }
    halt.store(true, Ordering::Relaxed);
    drop(rx);
    if let Err(e) = reader.await {
        tracing::warn!("document reader thread ended abnormally: {e}");
    }
    ItemReport {
        end: end.unwrap_or(ItemEnd::Finished),
        progress: mark.progress(),
        first_batch_after,
    }
}

/// The reader thread: reads the source, batches its documents and sends them until the
/// end, an error, or the pipeline hangs up.
fn read_batches<S: DocumentSource>(
    source: &S,
    range: &DocRange,
    limits: BatchLimits,
    tx: &mpsc::Sender<Result<Batch<S::Doc>, SourceError>>,
    halt: &AtomicBool,
) {
    let mut batcher = Batcher::new(limits);
    let mut hung_up = false;
    let result = source.read(range, &mut |id, doc| {
        if halt.load(Ordering::Relaxed) {
            return false;
        }
        if let Some(batch) = batcher.push(id, doc) {
            if tx.blocking_send(Ok(batch)).is_err() {
                hung_up = true;
                return false;
            }
        }
        true
    });
    if hung_up || halt.load(Ordering::Relaxed) {
        return;
    }
    let last = match result {
        // A partial batch before an error is not sent: the cursor stays before it.
        Err(e) => Err(e),
        Ok(()) => match batcher.finish() {
            Some(batch) => Ok(batch),
            None => return,
        },
    };
    let _ = tx.blocking_send(last);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::BulkSized;
    use std::sync::Mutex;

    #[derive(Debug, Clone, PartialEq)]
    struct Doc {
        id: u64,
    }
    impl BulkSized for Doc {
        fn bulk_len(&self) -> usize {
            100
        }
    }

    /// Live docs: every id below `max_doc` not divisible by 3 (the rest are "deleted");
    /// an error at `fail_at` if set.
    struct Source {
        max_doc: u64,
        fail_at: Option<u64>,
    }
    impl DocumentSource for Source {
        type Doc = Doc;
        fn read(
            &self,
            range: &DocRange,
            emit: &mut dyn FnMut(u64, Doc) -> bool,
        ) -> Result<(), SourceError> {
            let end = range.to.unwrap_or(self.max_doc).min(self.max_doc);
            for i in (range.from..end).filter(|i| i % 3 != 0) {
                if Some(i) == self.fail_at {
                    return Err(SourceError(format!("corrupt doc {i}")));
                }
                if !emit(i, Doc { id: i }) {
                    break;
                }
            }
            Ok(())
        }
    }

    #[derive(Default)]
    struct Sink {
        received: Mutex<Vec<u64>>,
        /// Random delay per batch, up to this many ms.
        jitter_ms: u64,
        /// Fail the batch containing this id.
        fail_id: Option<u64>,
    }
    impl DocumentSink for Sink {
        type Doc = Doc;
        async fn send(&self, docs: Vec<Doc>) -> Result<SinkOutcome, SinkError> {
            if self.jitter_ms > 0 {
                let ms = rand::random::<u64>() % self.jitter_ms;
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
            if let Some(f) = self.fail_id {
                if docs.iter().any(|d| d.id == f) {
                    return Err(SinkError("target refused".into()));
                }
            }
            let n = docs.len() as u64;
            self.received
                .lock()
                .unwrap()
                .extend(docs.iter().map(|d| d.id));
            Ok(SinkOutcome {
                indexed: n,
                failed: 0,
                source_bytes: n * 100,
            })
        }
    }

    #[derive(Default)]
    struct Lease {
        checkpoints: Vec<Progress>,
        /// Control answers, in order; `Run` after the last.
        controls: Vec<Control>,
    }
    impl ItemLease for Lease {
        async fn checkpoint(&mut self, progress: Progress) -> Result<(), LeaseError> {
            self.checkpoints.push(progress);
            Ok(())
        }
        async fn control(&mut self) -> Result<Control, LeaseError> {
            Ok(if self.controls.is_empty() {
                Control::Run
            } else {
                self.controls.remove(0)
            })
        }
    }

    fn opts(in_flight: usize) -> PipelineOptions {
        PipelineOptions {
            batch: BatchLimits {
                max_docs: 7,
                max_bytes: 1 << 20,
            },
            in_flight,
            read_ahead: 2,
            checkpoint_every: Duration::from_millis(5),
            control_every: Duration::from_millis(5),
        }
    }

    fn range(from: u64, to: Option<u64>) -> DocRange {
        DocRange {
            index: "i".into(),
            shard: 0,
            from,
            to,
        }
    }

    fn live(from: u64, to: u64) -> Vec<u64> {
        (from..to).filter(|i| i % 3 != 0).collect()
    }

    async fn go(
        source: Source,
        sink: Arc<Sink>,
        lease: &mut Lease,
        r: DocRange,
        resume: Option<u64>,
        trigger: Instant,
        o: PipelineOptions,
    ) -> ItemReport {
        let m = Metrics::default();
        let plan = ItemPlan {
            range: r,
            resume_cursor: resume,
            trigger,
        };
        run_item(Arc::new(source), sink, lease, plan, &o, &m).await
    }

    fn far() -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_live_doc_once_and_the_cursor_on_the_last() {
        let sink = Arc::new(Sink {
            jitter_ms: 5,
            ..Sink::default()
        });
        let mut lease = Lease::default();
        let r = go(
            Source {
                max_doc: 500,
                fail_at: None,
            },
            sink.clone(),
            &mut lease,
            range(0, None),
            None,
            far(),
            opts(4),
        )
        .await;
        assert!(matches!(r.end, ItemEnd::Finished), "{:?}", r.end);
        let mut got = sink.received.lock().unwrap().clone();
        got.sort();
        assert_eq!(got, live(0, 500));
        assert_eq!(r.progress.cursor, Some(499));
        assert_eq!(r.progress.docs, live(0, 500).len() as u64);
        // Checkpoints never go backwards and never pass an unacknowledged doc.
        let cursors: Vec<_> = lease.checkpoints.iter().map(|p| p.cursor).collect();
        assert!(cursors.windows(2).all(|w| w[0] <= w[1]), "{cursors:?}");
    }

    #[tokio::test]
    async fn resumes_just_after_the_cursor_and_stops_at_the_range_end() {
        let sink = Arc::new(Sink::default());
        let mut lease = Lease::default();
        let r = go(
            Source {
                max_doc: 500,
                fail_at: None,
            },
            sink.clone(),
            &mut lease,
            range(100, Some(200)),
            Some(150),
            far(),
            opts(2),
        )
        .await;
        assert!(matches!(r.end, ItemEnd::Finished));
        let mut got = sink.received.lock().unwrap().clone();
        got.sort();
        assert_eq!(got, live(151, 200));
        assert_eq!(r.progress.cursor, Some(199));
    }

    #[tokio::test]
    async fn an_empty_range_finishes_without_moving_the_cursor() {
        let sink = Arc::new(Sink::default());
        let mut lease = Lease::default();
        let r = go(
            Source {
                max_doc: 500,
                fail_at: None,
            },
            sink.clone(),
            &mut lease,
            range(600, None),
            None,
            far(),
            opts(2),
        )
        .await;
        assert!(matches!(r.end, ItemEnd::Finished));
        assert_eq!(r.progress.cursor, None);
        assert!(sink.received.lock().unwrap().is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn trigger_drains_in_flight_batches_and_the_cursor_covers_exactly_what_was_sent() {
        let sink = Arc::new(Sink {
            jitter_ms: 20,
            ..Sink::default()
        });
        let mut lease = Lease::default();
        let trigger = Instant::now() + Duration::from_millis(60);
        let r = go(
            Source {
                max_doc: 100_000,
                fail_at: None,
            },
            sink.clone(),
            &mut lease,
            range(0, None),
            None,
            trigger,
            opts(3),
        )
        .await;
        assert!(matches!(r.end, ItemEnd::Triggered), "{:?}", r.end);
        let cursor = r.progress.cursor.expect("some batches were sent");
        let mut got = sink.received.lock().unwrap().clone();
        got.sort();
        assert_eq!(
            got,
            live(0, cursor + 1),
            "sent docs are exactly those up to the cursor"
        );
        assert_eq!(r.progress.docs, got.len() as u64);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pause_and_stop_finish_in_flight_batches() {
        for (control, want) in [(Control::Pause, "Paused"), (Control::Stop, "Stopped")] {
            let sink = Arc::new(Sink {
                jitter_ms: 10,
                ..Sink::default()
            });
            let mut lease = Lease {
                controls: vec![Control::Run, Control::Run, control],
                ..Lease::default()
            };
            let r = go(
                Source {
                    max_doc: 1_000_000,
                    fail_at: None,
                },
                sink.clone(),
                &mut lease,
                range(0, None),
                None,
                far(),
                opts(4),
            )
            .await;
            assert_eq!(format!("{:?}", r.end), want);
            let mut got = sink.received.lock().unwrap().clone();
            got.sort();
            let cursor = r.progress.cursor.unwrap_or(0);
            assert_eq!(got, live(0, cursor + 1));
            assert!(cursor < 999_999);
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_sink_error_stops_with_the_cursor_before_the_failed_batch() {
        let sink = Arc::new(Sink {
            jitter_ms: 3,
            fail_id: Some(301),
            ..Sink::default()
        });
        let mut lease = Lease::default();
        let r = go(
            Source {
                max_doc: 1000,
                fail_at: None,
            },
            sink.clone(),
            &mut lease,
            range(0, None),
            None,
            far(),
            opts(4),
        )
        .await;
        assert!(
            matches!(r.end, ItemEnd::Failed(PipelineError::Sink(_))),
            "{:?}",
            r.end
        );
        let cursor = r.progress.cursor.unwrap();
        assert!(cursor < 301, "cursor {cursor} passed the failed doc");
        let got: std::collections::BTreeSet<u64> =
            sink.received.lock().unwrap().iter().copied().collect();
        for id in live(0, cursor + 1) {
            assert!(
                got.contains(&id),
                "doc {id} before the cursor was not delivered"
            );
        }
    }

    #[tokio::test]
    async fn a_source_error_stops_with_the_cursor_before_the_bad_doc() {
        let sink = Arc::new(Sink::default());
        let mut lease = Lease::default();
        let r = go(
            Source {
                max_doc: 1000,
                fail_at: Some(500),
            },
            sink.clone(),
            &mut lease,
            range(0, None),
            None,
            far(),
            opts(2),
        )
        .await;
        assert!(
            matches!(r.end, ItemEnd::Failed(PipelineError::Source(_))),
            "{:?}",
            r.end
        );
        assert!(r.progress.cursor.unwrap() < 500);
    }
}
