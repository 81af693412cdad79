//! The lookup port: how verify asks a sink's target what it holds. Given a batch of
//! documents of one target index (id, routing, the JSON the migration sent), a lookup says
//! which the target holds and, when asked to compare, what each holds — in the form the
//! target keeps it, with [`Lookup::expected`] giving that form from a document (DynamoDB
//! converts as its sink does). Per target index it gives a count where the target can tell.
//!
//! Implementations live with their sinks in the `connectors` crate: `_mget` on a cluster
//! (`_count` after a refresh, and what can still be compared on an index without
//! `_source`), the file sink's JSON-lines and `_bulk` files, DynamoDB (`BatchGetItem`, a
//! `Scan` count). The connector registry opens one from a sink URL (`open_lookup`).
//! [`exact`] and [`ids`] are what every lookup compares with: values as the target keeps
//! them, and the sorted ids of an index.

pub mod exact;
pub mod ids;
pub mod vectors;

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;

use exact::{Exact, ExactError};
use ids::IdRuns;
use serde::Serialize;

/// What verify could compare on one target index.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub enum Compared {
    /// The target returns `_source`: sampled documents compared JSON-equal.
    #[default]
    #[serde(rename = "documents")]
    Documents,
    /// The target's mapping disables `_source`: it returns none, so the count and the
    /// sampled ids (each found) are all verify can compare.
    #[serde(rename = "count and ids only")]
    CountAndIds,
    /// No `_source` on the target: the count, the sampled ids, and the doc values of the
    /// mapping's keyword, whole-number, boolean, date, float, double and ip fields.
    #[serde(rename = "count, ids and doc values")]
    CountIdsAndDocValues,
}

/// A lookup could not ask its target, or the answer made no sense; names the target.
#[derive(Debug, thiserror::Error)]
pub enum LookupError {
    #[error("{target}")]
    Cluster {
        target: String,
        #[source]
        source: Box<cluster::ClusterError>,
    },
    #[error("{target}")]
    Dynamo {
        target: String,
        #[source]
        source: Box<::dynamo::DynamoError>,
    },
    #[error("{path}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} line {line}: {why}")]
    File {
        path: String,
        line: usize,
        why: String,
    },
    #[error("{target}: {why}")]
    Answer { target: String, why: String },
    #[error("a temporary file of ids")]
    Spill(#[source] std::io::Error),
}

/// Why a document has no form to compare with what the target holds (reported as its
/// difference).
#[derive(Debug, thiserror::Error)]
pub enum ExpectedError {
    #[error("the document's JSON does not parse")]
    Json(#[source] ExactError),
    #[error("the document cannot be an item ({kind})", kind = .0.error_type)]
    Item(#[source] ::dynamo::ConvertError),
    #[error("no item key ({kind})", kind = .0.error_type)]
    Key(#[source] ::dynamo::ConvertError),
}

/// One document to look up: as the migration sent it to the target index asked.
#[derive(Debug, Clone)]
pub struct Wanted {
    pub id: String,
    pub routing: Option<String>,
    /// The `_source` sent (JSON).
    pub source: Bytes,
}

/// What the target holds for one [`Wanted`].
#[derive(Debug, Clone, PartialEq)]
pub enum Held {
    /// Not there.
    Absent,
    /// There; its content was not asked for (or the target keeps none to return).
    Present,
    /// There, holding this (in the form [`Lookup::expected`] gives), numbers exact.
    Holds(Exact),
    /// There, and the lookup compared it itself (an index without `_source`: doc values):
    /// different, the detail names what.
    Differs(String),
    /// There, without `_source`: the doc values of this field differ from the document's.
    DocValuesDiffer(String),
}

/// What can be compared on one target index that exists.
#[derive(Debug, Clone, Default)]
pub struct Keeps {
    pub compared: Compared,
    /// The fields compared through doc values (an index without `_source`).
    pub doc_value_fields: Vec<String>,
    /// Fields of a comparable type whose doc values are not compared, with why (a date
    /// format not understood): for them, count and ids only.
    pub doc_values_left_out: Vec<String>,
    /// Vector fields of the target's mapping, compared by float32 bits / bytes.
    pub vector_fields: Vec<vectors::VectorPath>,
}

pub type LookupFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, LookupError>> + Send + 'a>>;

/// Where verify looks documents up.
pub trait Lookup: Send + Sync {
    /// Gets `index` ready to be asked (a cluster: refreshed, its mapping read); `None`
    /// when it does not exist on the target.
    fn prepare<'a>(&'a self, index: &'a str) -> LookupFuture<'a, Option<Keeps>>;

    /// What the target holds for each of `docs` (the answer in their order); with
    /// `content` false only whether each is there is needed.
    fn fetch<'a>(
        &'a self,
        index: &'a str,
        docs: &'a [Wanted],
        content: bool,
    ) -> LookupFuture<'a, Vec<Held>>;

    /// What the target should hold for `doc` sent to `index`, to compare with a
    /// [`Held::Holds`]: by default its `_source`, read exactly (no number through a
    /// float: see [`engine::lookup::exact`]).
    fn expected(&self, _index: &str, doc: &Wanted) -> Result<Exact, ExpectedError> {
        Exact::parse(&doc.source).map_err(ExpectedError::Json)
    }

    /// Every id `index` holds on the target, ids only (no content), pushed into `into`;
    /// `false` when this target cannot list its ids. An index that does not exist holds
    /// none.
    fn list_ids<'a>(&'a self, _index: &'a str, _into: &'a mut IdRuns) -> LookupFuture<'a, bool> {
        Box::pin(async move { Ok(false) })
    }

    /// Every document `index` holds on the target, its `_source` (JSON) handed to `each`,
    /// for a verify by content (a target that generated the ids: nothing to look up by);
    /// `false` when this target cannot list its documents. An index that does not exist
    /// holds none.
    fn each_source<'a>(
        &'a self,
        _index: &'a str,
        _each: &'a mut (dyn FnMut(&[u8]) + Send),
    ) -> LookupFuture<'a, bool> {
        Box::pin(async move { Ok(false) })
    }

    /// Documents `index` holds on the target; `None`: the target cannot tell.
    fn count<'a>(&'a self, index: &'a str) -> LookupFuture<'a, Option<u64>>;

    /// What the target is, for messages (no secrets).
    fn describe(&self) -> String;
}

/// The first field that differs between what was expected and what the target holds
/// (exactly: numbers by decimal value, key order irrelevant), for the report; `None` when
/// they are equal.
pub fn first_difference(expected: &Exact, held: &Exact) -> Option<String> {
    exact::difference(expected, held)
}
