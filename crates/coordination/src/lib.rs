//! Work coordination for a leaderless fleet of workers: work items, leases with
//! exponential backoff, successor items with a progress cursor, a control record and
//! phase records — one protocol over a small `Store` trait with several backends.
//!
//! The store is the only shared state. [`open_store`] picks a backend from a URL
//! (`sqlite://`, `postgres://`, `redis://`, `http(s)://` for an index on an
//! Elasticsearch/OpenSearch cluster); [`Coordinator`] runs the protocol for one worker.
//!
//! ```no_run
//! # async fn worker() -> Result<(), coordination::Error> {
//! use coordination::{open_store, Acquired, Config, Coordinator, HandOff, Position, WorkItem};
//!
//! let store = open_store("sqlite:///tmp/rfs-coordination.db").await?;
//! let coord = Coordinator::new(store, Config::default());
//! // Any worker may run setup; it only creates what is missing.
//! coord.setup(&[WorkItem::whole("logs", 0), WorkItem::whole("logs", 1)]).await?;
//! loop {
//!     let mut lease = match coord.acquire().await? {
//!         Acquired::Lease(lease) => lease,
//!         Acquired::NoWorkLeft => break,
//!         Acquired::AllLeasedElsewhere { wait, .. } => {
//!             tokio::time::sleep(wait.min(std::time::Duration::from_secs(5))).await;
//!             continue;
//!         }
//!     };
//!     let item = lease.item(); // group, part, after, until
//!     let mut done = lease.progress(); // the last acknowledged position and the counts
//!     // ... send the documents after `done.cursor`, checkpoint now and then:
//!     done.cursor = Some(Position::Doc(999));
//!     done.docs += 1000;
//!     lease.checkpoint(&done).await?;
//!     if std::time::Instant::now() >= lease.early_trigger() {
//!         // Out of time: record a successor after the cursor and move on.
//!         let _: HandOff = lease.hand_off(&done, 0.05).await?;
//!         continue;
//!     }
//!     lease.complete(&done).await?;
//!     let _ = item;
//! }
//! # Ok(()) }
//! ```
//!
//! Also: [`Coordinator::claim_identity`] (one store, one migration: a worker of another
//! one is refused), [`Coordinator::control`]/[`Coordinator::set_control`] (RUN / PAUSE / STOP),
//! [`Coordinator::wait_phase`]/[`Coordinator::complete_phase`] (one worker does a phase,
//! the others wait), [`Coordinator::keeper_step`] (one keeper summarises and marks the
//! migration finished) and [`Coordinator::status`].

pub mod accounting;
#[cfg(feature = "contention")]
pub mod contention;
mod control;
mod coordinator;
mod error;
mod fleet_rate;
mod identity;
mod keeper;
mod latency;
mod phase;
mod position;
mod record;
mod status;
mod store;
mod summary;

pub use control::Control;
pub use coordinator::{
    early_trigger_after, successor_exponent, Acquired, Config, Coordinator, CrashPoint, HandOff,
    ItemFate, Lease, Progress, WorkerId,
};
pub use error::Error;
pub use fleet_rate::{FleetGrant, FLEET_WINDOW_MS};
pub use identity::{identity_display, Identity};
pub use keeper::KeeperStep;
pub use latency::{Latencies, PoolStats};
pub use phase::PhaseClaim;
pub use position::{cursor_display, Cursor, Position};
pub use record::{
    item_id, Record, RecordKind, RecordState, Revision, WorkItem, POSSIBLE_DUPLICATES,
};
pub use status::{Failure, GroupProgress, ItemCounts, LeaseStatus, PhaseStatus, Status};
pub use store::{
    generation_url, open_existing_store, open_store, ClusterStore, MemoryStore, PostgresStore,
    RedisStore, SqliteStore, Store,
};
pub use summary::{is_leased, is_listed, ItemSummary, StateTotals};
