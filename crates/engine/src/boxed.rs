//! Sources and sinks chosen at run time: [`BoxedSource`] and [`BoxedSink`] wrap any
//! implementation behind one type, so a command builds one `Job<BoxedSource, BoxedSink>`
//! whatever the URLs name. A sink's batch travels as a [`BoxedBatch`] (its size taken when
//! it was cut) and is unwrapped by the sink that framed it: one downcast per batch.

use std::any::Any;
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use coordination::{Cursor, WorkItem};

use crate::document::{Document, Read};
use crate::error::{SinkError, SourceError};
use crate::metrics::SinkCounters;
use crate::sink::{Delivered, Refusal, Sink, SinkWriter};
use crate::source::{Plan, Source};

/// Any source.
#[derive(Clone)]
pub struct BoxedSource(Arc<dyn Source>, Arc<dyn Any + Send + Sync>);

impl BoxedSource {
    pub fn new<S: Source>(source: Arc<S>) -> Self {
        BoxedSource(source.clone(), source)
    }

    /// The source inside, when it is an `S` (for what only one kind of source can tell,
    /// such as a table's schema).
    pub fn downcast<S: Source>(&self) -> Option<Arc<S>> {
        self.1.clone().downcast::<S>().ok()
    }
}

impl Source for BoxedSource {
    fn identity(&self) -> BTreeMap<String, String> {
        self.0.identity()
    }

    fn plan(&self) -> Result<Plan, SourceError> {
        self.0.plan()
    }

    fn read(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
    ) -> Result<(), SourceError> {
        self.0.read(item, after, emit)
    }

    fn exact_totals(&self) -> bool {
        self.0.exact_totals()
    }

    fn left_out(&self) -> Vec<String> {
        self.0.left_out()
    }

    fn change_feed(&self) -> Option<Arc<dyn crate::follow::ChangeFeed>> {
        self.0.change_feed()
    }

    fn read_counting_nested(
        &self,
        item: &WorkItem,
        after: &Cursor,
        emit: &mut dyn FnMut(Read) -> bool,
        nested: &mut u64,
    ) -> Result<(), SourceError> {
        self.0.read_counting_nested(item, after, emit, nested)
    }
}

/// A batch of any sink, with its size in memory.
pub struct BoxedBatch {
    batch: Box<dyn Any + Send>,
    size: usize,
}

impl BoxedBatch {
    fn of<W: SinkWriter>(batch: W::Batch) -> Self {
        BoxedBatch {
            size: W::size(&batch),
            batch: Box::new(batch),
        }
    }
}

/// A writer of any sink.
pub struct BoxedWriter(Box<dyn ErasedWriter>);

trait ErasedWriter: Send {
    fn push(&mut self, doc: Document) -> Result<Option<BoxedBatch>, Box<Refusal>>;
    fn finish(&mut self) -> Option<BoxedBatch>;
}

impl<W: SinkWriter> ErasedWriter for W {
    fn push(&mut self, doc: Document) -> Result<Option<BoxedBatch>, Box<Refusal>> {
        Ok(SinkWriter::push(self, doc)?.map(BoxedBatch::of::<W>))
    }

    fn finish(&mut self) -> Option<BoxedBatch> {
        SinkWriter::finish(self).map(BoxedBatch::of::<W>)
    }
}

impl SinkWriter for BoxedWriter {
    type Batch = BoxedBatch;

    fn push(&mut self, doc: Document) -> Result<Option<BoxedBatch>, Box<Refusal>> {
        self.0.push(doc)
    }

    fn finish(&mut self) -> Option<BoxedBatch> {
        self.0.finish()
    }

    fn size(batch: &BoxedBatch) -> usize {
        batch.size
    }
}

type SendFuture<'a> = Pin<Box<dyn Future<Output = Result<Delivered, SinkError>> + Send + 'a>>;

trait ErasedSink: Send + Sync {
    fn writer(&self) -> BoxedWriter;
    fn send(&self, batch: BoxedBatch) -> SendFuture<'_>;
    fn identity(&self) -> String;
    fn counters(&self) -> Option<SinkCounters>;
    fn prepare(&self, groups: &[String]) -> Result<(), SinkError>;
    fn follow_claimed(&self, claim: u64) -> Result<(), SinkError>;
    fn resends_duplicate(&self) -> bool;
    fn as_any(&self) -> &dyn Any;
}

impl<K: Sink> ErasedSink for K {
    fn writer(&self) -> BoxedWriter {
        BoxedWriter(Box::new(Sink::writer(self)))
    }

    fn send(&self, batch: BoxedBatch) -> SendFuture<'_> {
        match batch.batch.downcast::<<K::Writer as SinkWriter>::Batch>() {
            Ok(b) => Box::pin(Sink::send(self, *b)),
            // Only this sink's writers make its batches; a stray one is a bug, reported
            // as a fatal error rather than a panic.
            Err(_) => Box::pin(std::future::ready(Err(SinkError::fatal(format!(
                "{}: a batch framed by another sink was sent here",
                Sink::identity(self)
            ))))),
        }
    }

    fn identity(&self) -> String {
        Sink::identity(self)
    }

    fn counters(&self) -> Option<SinkCounters> {
        Sink::counters(self)
    }

    fn prepare(&self, groups: &[String]) -> Result<(), SinkError> {
        Sink::prepare(self, groups)
    }

    fn follow_claimed(&self, claim: u64) -> Result<(), SinkError> {
        Sink::follow_claimed(self, claim)
    }

    fn resends_duplicate(&self) -> bool {
        Sink::resends_duplicate(self)
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Any sink.
#[derive(Clone)]
pub struct BoxedSink(Arc<dyn ErasedSink>);

impl BoxedSink {
    pub fn new<K: Sink>(sink: K) -> Self {
        BoxedSink(Arc::new(sink))
    }

    /// The sink inside, when it is a `K` (for what only one kind of sink can tell, such as
    /// the files written).
    pub fn downcast_ref<K: Sink>(&self) -> Option<&K> {
        self.0.as_any().downcast_ref::<K>()
    }
}

impl Sink for BoxedSink {
    type Writer = BoxedWriter;

    fn writer(&self) -> BoxedWriter {
        self.0.writer()
    }

    fn send(&self, batch: BoxedBatch) -> impl Future<Output = Result<Delivered, SinkError>> + Send {
        self.0.send(batch)
    }

    fn identity(&self) -> String {
        self.0.identity()
    }

    fn counters(&self) -> Option<SinkCounters> {
        self.0.counters()
    }

    fn prepare(&self, groups: &[String]) -> Result<(), SinkError> {
        self.0.prepare(groups)
    }

    fn follow_claimed(&self, claim: u64) -> Result<(), SinkError> {
        self.0.follow_claimed(claim)
    }

    fn resends_duplicate(&self) -> bool {
        self.0.resends_duplicate()
    }
}
