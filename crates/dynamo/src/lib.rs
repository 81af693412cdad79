//! DynamoDB, and nothing else: a client speaking the DynamoDB JSON protocol over HTTP,
//! signed with SigV4, built to write many items fast and to read them back.
//!
//! - [`value`]: attribute values (`S`, `N`, `B`, `BOOL`, `NULL`, `M`, `L`), their wire form,
//!   exact numbers, item sizes as DynamoDB counts them.
//! - [`item`]: a row given as one JSON object into an item (with column hints for binary
//!   and numeric columns), and the table's key.
//! - [`client`]: signed calls, answers classified, throttling / 5xx / lost connections
//!   retried with backoff and jitter; [`error`]: what a failure means.
//! - [`write`]: `BatchWriteItem` of 25 with `UnprocessedItems`, AIMD concurrency, refusals.
//! - [`table`]: `CreateTable` (on-demand), `DescribeTable`, waiting until ACTIVE;
//!   [`read`]: `GetItem`, `BatchGetItem`, parallel `Scan`, counts.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use dynamo::{BatchWriter, Client, ClientConfig, ColumnHints, WriteRequest};
//! let client = Client::new(ClientConfig::new("eu-west-1", sigv4::CredentialsProvider::shared()))?;
//! let table = client.describe_table("room_events").await?.expect("the table exists");
//! let item = dynamo::row_to_item(br#"{"id":"01J9","n":1.50}"#, &ColumnHints::new())?;
//! let writes = vec![WriteRequest::put(&item, &table.key)?];
//! let outcome = BatchWriter::new(client, "room_events", table.key).write(&writes).await?;
//! assert_eq!(outcome.written, 1);
//! # Ok(()) }
//! ```

pub mod client;
pub mod error;
pub mod item;
pub mod read;
pub mod table;
pub mod value;
pub mod write;

pub use client::{Client, ClientConfig, ClientStats};
pub use error::DynamoError;
pub use item::{
    row_to_item, ColumnHint, ColumnHints, ConvertError, KeyAttribute, KeySchema, KeyType,
};
pub use read::{Scan, ScanPage};
pub use table::TableDescription;
pub use value::{canonical_json, AttributeValue, Item, Number, WireError, MAX_ITEM_BYTES};
pub use write::{BatchWriter, WriteOutcome, WriteRefusal, WriteRequest, MAX_BATCH_WRITES};
