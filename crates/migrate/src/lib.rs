//! The migration itself: phases guarded by the coordination store, metadata migration,
//! and the document pipeline from snapshot shard to bulk requests with checkpoints.
//!
//! The pipeline ([`pipeline::run_item`]) is written against two small ports
//! ([`ports::DocumentSource`], [`ports::DocumentSink`]) and a lease port
//! ([`pipeline::ItemLease`]); [`adapters`] connect them to the `snapshot`, `cluster` and
//! `coordination` crates. [`worker`] leases items until none is left; [`phases`] runs a
//! whole migration, each phase done once by whichever worker gets there first.

pub mod adapters;
pub mod batcher;
pub mod cursor;
pub mod metadata;
pub mod metrics;
pub mod naming;
pub mod phases;
pub mod pipeline;
pub mod ports;
pub mod verify;
pub mod worker;

pub use batcher::BatchLimits;
pub use cursor::Progress;
pub use metrics::Metrics;
pub use pipeline::{
    run_item, Control, ItemEnd, ItemLease, ItemPlan, ItemReport, LeaseError, PipelineOptions,
};
pub use ports::{DocRange, DocumentSink, DocumentSource, SinkOutcome};
pub use worker::{run_worker, WorkerExit, WorkerOptions};
