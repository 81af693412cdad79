//! The migration engine: one [`Job`] moves documents from a [`Source`] through a
//! [`Transform`] into a [`Sink`], with any number of identical processes sharing the work
//! through the coordination store. It knows the ports, never a concrete source or sink.
//!
//! - [`source`], [`transform`], [`sink`]: the ports. A source plans partitions and reads
//!   one after a cursor; the transform names targets; a sink frames, batches and delivers.
//!   [`columns`] holds the column shapes a row source gives and a typed sink reads;
//!   [`boxed`] holds the boxed forms a command runs whatever the URLs name.
//! - [`pipeline`]: one work item from reader thread to acknowledged batches, with the
//!   low-water-mark cursor, checkpoints, the memory budget and the failure log.
//! - [`worker`]: leases items until none is left; [`job`]: phases, items phase, N item
//!   workers plus the keeper, the report.
//! - [`lookup`]: the port through which verify asks a sink's target what it holds, with
//!   the exact values and sorted ids every lookup compares with.

pub mod boxed;
pub mod budget;
pub mod columns;
pub mod coverage;
pub mod document;
pub mod error;
pub mod failure_log;
pub mod fleet_limit;
pub mod follow;
pub mod generations;
pub mod job;
pub mod lookup;
pub mod low_water;
pub mod metrics;
pub mod phases;
pub mod pipeline;
pub mod sink;
pub mod source;
pub mod transform;
pub mod worker;

pub use coordination::Control;
pub use document::{Document, Op, Read, Skip};
pub use error::{Cause, Severity, SinkError, SourceError};
pub use failure_log::{FailureLog, FailureRecord, Stage};
pub use fleet_limit::FleetLimits;
pub use job::{Job, JobEnd, JobError, JobOptions, JobReport};
pub use metrics::Metrics;
pub use pipeline::PipelineOptions;
pub use sink::{BatchLimits, Delivered, Refusal, Sink, SinkWriter};
pub use source::{DeltaTotals, GroupTotals, Plan, Source, TotalCount, Totals};
pub use transform::Transform;
pub use worker::{WorkerExit, WorkerOptions};
