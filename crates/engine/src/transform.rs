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

/// What the transform made of one input of a batch (see [`Transform::apply_batch`]): its
/// outcome, and with [`Shaped::Docs`] its outputs in order.
#[derive(Debug)]
pub struct Batched {
    pub outcome: Result<Shaped, Box<Skip>>,
    pub outputs: Vec<Document>,
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

    /// How many documents the pipeline hands to [`Transform::apply_batch`] at once (for a
    /// transform that [reshapes](Transform::reshapes)); 1: one at a time through
    /// [`Transform::apply_all`].
    fn batch_size(&self) -> usize {
        1
    }

    /// [`Transform::apply_all`] of each of `docs`: one [`Batched`] per input, in order. A
    /// transform that runs a whole batch in one go (a program behind a process boundary)
    /// says how each input fared, as if it had been given alone.
    fn apply_batch(&self, docs: Vec<Document>) -> Vec<Batched> {
        docs.into_iter()
            .map(|d| {
                let mut outputs = Vec::new();
                let outcome = self.apply_all(d, &mut outputs);
                Batched { outcome, outputs }
            })
            .collect()
    }
}
