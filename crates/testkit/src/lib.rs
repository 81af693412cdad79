//! Test support for rfs:
//! - [`server`]: an in-process Elasticsearch/OpenSearch-API HTTP server (also the `testkit-server`
//!   binary) that keeps its documents for comparison and injects faults — 429 with `Retry-After`,
//!   5xx, latency, dropped connections, per-item bulk rejections, chosen ids failing with a mapping
//!   error, and going down and coming back.
//! - [`services`]: real PostgreSQL, Redis, `osmem-server`, `s3rver` and `dynalite` processes on
//!   loopback ports; [`dynamo_proxy`]: a fault-injecting proxy in front of a DynamoDB-API server.
//! - `dynamo_sdk` (feature `dynamo-sdk`): the AWS SDK reading DynamoDB back, independently of rfs.
//! - [`gate`]: a basic-auth gate in front of a server, for credential tests.
//! - [`fixtures`]: locating `shared/fixtures`, skipping outside CI and failing under `CI=true`.

pub mod dynamo_proxy;
#[cfg(feature = "dynamo-sdk")]
pub mod dynamo_sdk;
pub mod fixtures;
pub mod gate;
pub mod server;
pub mod services;
