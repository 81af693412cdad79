//! Column types every adapter shares: what a row's JSON value is beyond what JSON says.
//!
//! A source of rows (the table source) describes its columns with [`ColumnShapes`]; a sink
//! that builds typed items (DynamoDB: bytes → `B`, numbers → `N`) reads them. Both import
//! them from here, next to the port definitions, so that no adapter depends on another.

use std::collections::BTreeMap;

/// What a column's JSON value is, beyond what JSON says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnShape {
    String,
    /// A JSON number, written exactly (numeric keeps its digits).
    Number,
    Bool,
    /// A base64 string of bytes (bytea).
    Binary,
    /// An RFC 3339 UTC string (timestamps) or `YYYY-MM-DD` (dates).
    Time,
    /// Embedded JSON (json, jsonb): objects, arrays, scalars.
    Json,
}

/// Column name → shape, for sinks that map rows into typed items.
pub type ColumnShapes = BTreeMap<String, ColumnShape>;
