//! Every sink's lookup: what `rfs verify` asks a target through the [`Lookup`] port.
//! [`mget::MgetLookup`]: a cluster (`_mget`, `_count` after a refresh, and what can still
//! be compared on an index without `_source`); [`files::FileLookup`]: the file sink's
//! JSON-lines and `_bulk` files; [`dynamo::DynamoLookup`]: `BatchGetItem` and a `Scan`
//! count.

mod dates;
pub mod doc_values;
pub mod dynamo;
pub mod files;
mod id_scroll;
pub mod mget;

pub use engine::lookup::*;
