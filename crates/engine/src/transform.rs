//! The transform port between source and sink: turns each source document into zero or
//! more target documents (naming its index, keeping its routing, reshaping it). A document
//! that cannot be transformed is a skip with a reason, never a warning. The transforms
//! themselves (type routes, renames, programs) live in the `programs` crate.

use crate::document::{Document, Skip};

/// Why the transform could not route a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unroutable {
    pub reason: &'static str,
    pub detail: String,
}

/// What the transform made of one document (see [`Transform::apply_all`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shaped {
    /// The documents to send were pushed (one, or several sharing the input's position).
    Docs,
    /// Left out on purpose (a program yielded nothing): counted as `filtered:<reason>`,
    /// never delivered, not a failure.
    Filtered(String),
}

/// Turns a source document into a target document.
pub trait Transform: Send + Sync + 'static {
    fn apply(&self, doc: &mut Document) -> Result<(), Unroutable>;

    /// `true` when [`Transform::apply_all`] may yield other than exactly one document (a
    /// program): otherwise the pipeline calls [`Transform::apply`], its fast path.
    fn reshapes(&self) -> bool {
        false
    }

    /// A digest of the document program this transform runs, if any: part of the
    /// migration's identity (see [`crate::job::with_program`]).
    fn program_identity(&self) -> Option<String> {
        None
    }

    /// Turns one document into zero or more, pushed onto `out`; a document that cannot be
    /// transformed is a skip (`no_route`, `transform_error`).
    fn apply_all(&self, doc: Document, out: &mut Vec<Document>) -> Result<Shaped, Box<Skip>> {
        let mut doc = doc;
        match self.apply(&mut doc) {
            Ok(()) => {
                out.push(doc);
                Ok(Shaped::Docs)
            }
            Err(u) => Err(Box::new(Skip::of(doc, u.reason, u.detail))),
        }
    }
}
