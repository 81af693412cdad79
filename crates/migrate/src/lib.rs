//! The migration engine: one [`Job`] moves documents from a [`Source`] through a
//! [`Transform`] into a [`Sink`], with any number of identical processes sharing the work
//! through the coordination store.
//!
//! - [`source`], [`transform`], [`sink`]: the ports. A source plans partitions and reads
//!   one after a cursor; the transform names targets; a sink frames, batches and delivers.
//!   [`columns`] holds the column shapes a row source gives and a typed sink reads.
//!   [`sources`] and [`sinks`] hold the implementations (snapshot, table; `_bulk`,
//!   files, DynamoDB).
//! - [`pipeline`]: one work item from reader thread to acknowledged batches, with the
//!   low-water-mark cursor, checkpoints, the memory budget and the failure log.
//! - [`worker`]: leases items until none is left; [`job`]: phases, items phase, N item
//!   workers plus the keeper, the report.
//! - [`program`]: jq programs; [`reshape`]: a document program composed with the naming
//!   transform (filter, explode, rename fields, route); [`javascript`] and
//!   [`jmespath_program`] and [`transformer_config`]: the reference tool's JavaScript and
//!   JMESPath transforms and their config.
//! - [`metadata`]: templates and indices, with the mapping conversions between versions;
//!   [`vectors`]: the vector values the transform rewrites; [`verify`]: the one verifier,
//!   any source against any sink's target through the [`lookup`] port.
//! - [`wildcard`]: the `*`/`?` name patterns every command and the metadata plan match.

pub mod budget;
pub mod columns;
pub mod connectors;
pub mod coverage;
pub mod document;
pub mod error;
pub mod failure_log;
pub mod field_edits;
pub mod fleet_limit;
pub mod javascript;
pub mod jmespath_program;
pub mod job;
pub mod lookup;
pub mod low_water;
pub mod metadata;
pub mod metrics;
pub mod naming;
pub mod phases;
pub mod pipeline;
pub mod program;
pub mod reshape;
pub mod sink;
pub mod sinks;
pub mod source;
pub mod sources;
pub mod transform;
pub mod transformer_config;
pub mod vectors;
pub mod verify;
pub mod wildcard;
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
pub use transform::{Naming, RenameError, Transform};
pub use worker::{WorkerExit, WorkerOptions};
