//! Test support: an Elasticsearch/OpenSearch-API HTTP server with fault injection that
//! keeps its documents for comparison, and helpers to locate and rewrite fixtures.

pub mod fixtures;
pub mod services;
