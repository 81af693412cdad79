//! Sinks: where documents go ([`engine::sink::Sink`] implementations): `_bulk` into a
//! cluster, files, DynamoDB.

pub mod bulk;
pub mod dynamo;
pub mod files;
