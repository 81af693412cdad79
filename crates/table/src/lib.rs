//! Reading a PostgreSQL table for a migration; knows PostgreSQL and nothing of the engine.
//!
//! - [`name`]: `schema.table` and column names, always quoted when put into SQL.
//! - [`schema`]: the table's columns and their [`ColumnKind`]s, and the key column.
//! - [`value`]: one row rendered as one JSON object (see the mapping there).
//! - [`slots`]: cutting the key range into slots, by time (`time:1h` for ULID, UUIDv7 and
//!   timestamp keys) or by key quantiles (`--slots N`).
//! - [`reader`]: [`Table`], the connection pool and the keyset pages
//!   (`WHERE key > $after AND key <= $until ORDER BY key LIMIT n`) in read-only statements
//!   with a statement timeout, retried with backoff and jitter on connection loss and
//!   timeouts.
//! - [`follow`]: the table's changes after its backfill (a logical replication slot read
//!   with [`pgoutput`]), and the changed rows as they are now.

pub mod error;
pub mod follow;
pub mod name;
pub mod pgoutput;
pub mod reader;
pub mod schema;
pub mod slots;
pub mod value;

pub use error::TableError;
pub use name::{TableName, TableNameError};
pub use reader::{Page, SlotProof, SlotRead, SnapshotCount, Table, TableOptions};
pub use schema::{Column, ColumnKind, Schema};
pub use slots::{Bounds, Slot, SlotRule, SlotRuleError};
