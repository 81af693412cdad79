//! Sinks: where documents go ([`crate::sink::Sink`] implementations): `_bulk` into a
//! cluster, files, DynamoDB.

pub mod bulk;
pub mod dynamo;
pub mod files;
