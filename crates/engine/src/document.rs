//! The neutral document that travels from a source through the transform to a sink.

use std::sync::Arc;

use bytes::Bytes;
use coordination::Position;

/// What the sink does with a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Op {
    /// Write it (create or overwrite by id).
    #[default]
    Index,
    /// Remove the document with this id (a delta between snapshots).
    Delete,
    /// Write it only if its id is absent; one already there counts as delivered (data
    /// streams take only `create`).
    Create,
}

/// One document, as a source reads it and as the transform hands it to the sink.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// Where it sits in its partition; the pipeline's cursor moves over it.
    pub position: Position,
    pub op: Op,
    /// The source index or table when read; the target index after the transform.
    pub index: Arc<str>,
    pub id: String,
    /// The mapping type of ES ≤ 6 sources (the transform may route by it).
    pub doc_type: Option<Arc<str>>,
    pub routing: Option<String>,
    /// One JSON value on one line; empty for a delete.
    pub source: Bytes,
}

/// A document the source or the transform could not deliver, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Skip {
    pub position: Position,
    /// The source index or table.
    pub index: Arc<str>,
    pub id: Option<String>,
    pub doc_type: Option<Arc<str>>,
    pub routing: Option<String>,
    /// A short reason key (`no_source`, `bad_source`, `bad_id`, `no_route`, `bad_row`).
    pub reason: &'static str,
    /// What exactly was wrong, for the failure log.
    pub detail: String,
    /// The raw `_source` or row, when there is one (written to the failure log when it
    /// keeps sources).
    pub source: Option<Bytes>,
}

impl Skip {
    /// A skip of `doc`, keeping what the failure log needs to find it again.
    pub fn of(doc: Document, reason: &'static str, detail: String) -> Skip {
        Skip {
            position: doc.position,
            index: doc.index,
            id: Some(doc.id),
            doc_type: doc.doc_type,
            routing: doc.routing,
            reason,
            detail,
            source: (!doc.source.is_empty()).then_some(doc.source),
        }
    }
}

/// What a source hands to the pipeline, in position order.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    Doc(Document),
    Skip(Skip),
}

impl Read {
    pub fn position(&self) -> &Position {
        match self {
            Read::Doc(d) => &d.position,
            Read::Skip(s) => &s.position,
        }
    }
}
